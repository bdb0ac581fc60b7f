/* What every OpenCL algorithm file uses: error mapping, the 1-D launch,
 * the kernels_cl/ sources, the kernel cache, and the plan and run shared
 * by the algorithms with tunable configurations. */
#include "backends/opencl/cl_internal.h"
#include "backends/opencl/cl_sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pdnn__cl_error_name(cl_int e)
{
    switch (e) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE: return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
    case CL_INVALID_CONTEXT: return "CL_INVALID_CONTEXT";
    case CL_INVALID_COMMAND_QUEUE: return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_PROGRAM_EXECUTABLE: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    case CL_INVALID_BUILD_OPTIONS: return "CL_INVALID_BUILD_OPTIONS";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "an unknown OpenCL error";
    }
}

pdnn_status pdnn__cl_fail(const char *call, cl_int err)
{
    pdnn_status st = (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                      err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE)
                         ? PDNN_ERR_OUT_OF_MEMORY
                         : PDNN_ERR_BACKEND;
    return pdnn__error(st, "OpenCL: %s failed with %s (%d)", call, pdnn__cl_error_name(err), (int)err);
}

int64_t pdnn__cl_balanced_items(const cl_dev *d) { return 8 * (int64_t)(d->cu > 0 ? d->cu : 1); }

size_t pdnn__cl_wg_cap(const cl_dev *d, cl_kernel k, size_t want)
{
    size_t wg = 0;
    if (clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) != CL_SUCCESS)
        wg = 1;
    while (want > 1 && (want > wg || want > d->max_wg))
        want /= 2;
    return want;
}

pdnn_status pdnn__cl_launch(cl_dev *d, cl_kernel k, const char *name, int64_t total)
{
    const size_t local = pdnn__cl_wg_cap(d, k, 64);
    size_t global = ((size_t)total + local - 1) / local * local;
    cl_int err = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "clEnqueueNDRangeKernel(%s)", name);
        return pdnn__cl_fail(call, err);
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn__cl_launch_checked(cl_dev *d, cl_kernel k, const char *name, cl_int err, int64_t total)
{
    if (err != CL_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "clSetKernelArg(%s)", name);
        return pdnn__cl_fail(call, err);
    }
    return total > 0 ? pdnn__cl_launch(d, k, name, total) : PDNN_SUCCESS;
}

/* ---- sources ------------------------------------------------------------- */

/* Reads dir/name into a malloc'd string. */
static pdnn_status read_override(const char *dir, const char *name, char **out, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return pdnn__error(PDNN_ERR_NOT_FOUND, "OpenCL: POLYDNN_KERNEL_DIR is set but %s cannot be opened", path);
    char *buf = NULL;
    size_t used = 0, cap = 0;
    for (;;) {
        if (used + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "OpenCL: out of host memory reading %s", path);
            }
            buf = grown;
        }
        size_t got = fread(buf + used, 1, 4096, f);
        used += got;
        if (got < 4096)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return pdnn__error(PDNN_ERR_IO, "OpenCL: reading %s failed", path);
    }
    buf[used] = '\0';
    *out = buf;
    *len = used;
    return PDNN_SUCCESS;
}

/* The embedded source `file`, or its copy in POLYDNN_KERNEL_DIR, which
 * wins (kernel development without rebuilding the library); *owned is
 * what to free. */
static pdnn_status source_of(const char *file, const char **text, size_t *len, char **owned)
{
    *owned = NULL;
    const char *dir = getenv("POLYDNN_KERNEL_DIR");
    if (dir && *dir) {
        pdnn_status st = read_override(dir, file, owned, len);
        *text = *owned;
        return st;
    }
    for (size_t i = 0; i < pdnn__cl_source_count; i++)
        if (strcmp(pdnn__cl_sources[i].name, file) == 0) {
            *text = pdnn__cl_sources[i].text;
            *len = pdnn__cl_sources[i].len;
            return PDNN_SUCCESS;
        }
    return pdnn__error(PDNN_ERR_INTERNAL, "OpenCL: %s is not among the embedded kernels", file);
}

/* Every program built from source in this process, for the test hook
 * below: a kernel that builds with a non-empty log (a warning) is a bug. */
static pthread_mutex_t built_lock = PTHREAD_MUTEX_INITIALIZER;
static pdnn__cl_build_record built[PDNN__CL_MAX_BUILDS];
static int n_built;

int pdnn__opencl_builds(const pdnn__cl_build_record **out)
{
    pthread_mutex_lock(&built_lock);
    const int n = n_built;
    pthread_mutex_unlock(&built_lock);
    *out = built;
    return n;
}

/* The build log of a program that built: empty for a warning-free kernel.
 * It goes to stderr only with POLYDNN_DEBUG=1 (a failed build's log is in
 * the error instead), so a user's terminal stays quiet. */
/* prog's build log for d, malloc'd, never NULL unless out of memory. Its
 * size is asked first: a buffer shorter than the log gets nothing at all
 * (CL_INVALID_VALUE), which would read as a clean build. */
static char *build_log(cl_dev *d, cl_program prog)
{
    size_t size = 0;
    clGetProgramBuildInfo(prog, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
    char *log = calloc(1, size + 1);
    if (log && clGetProgramBuildInfo(prog, d->id, CL_PROGRAM_BUILD_LOG, size, log, NULL) == CL_SUCCESS)
        return log;
    free(log);
    return strdup("(the build log could not be read)");
}

static void note_build_log(cl_dev *d, cl_program prog, const char *what, const char *opts)
{
    char *log = build_log(d, prog);
    if (!log)
        return;
    size_t n = strlen(log);
    while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' ' || log[n - 1] == '\r'))
        log[--n] = '\0';
    pthread_mutex_lock(&built_lock);
    if (n_built < PDNN__CL_MAX_BUILDS) {
        pdnn__cl_build_record *r = &built[n_built++];
        snprintf(r->file, sizeof r->file, "%s", what);
        snprintf(r->opts, sizeof r->opts, "%s", opts);
        snprintf(r->log, sizeof r->log, "%s", log);
    }
    pthread_mutex_unlock(&built_lock);
    if (n > 0)
        pdnn__debug("OpenCL: the build log of %s with '%s':\n%.900s", what, opts, log);
    free(log);
}

/* PoCL's compiler refusing the device's own CPU ("unknown target CPU
 * 'skylake-avx512'") after another LLVM (TensorFlow's) was loaded in the
 * process before PoCL (issue 47: after TensorFlow had run convolutions).
 * The error names the cause and the order that works, and is kept: every
 * later build from source on d returns it at once, rather than running
 * the compiler again to fail the same way. */
static void note_refused_cpu(cl_dev *d, const char *log)
{
    const char *at = log ? strstr(log, "unknown target CPU") : NULL;
    if (!at || !pdnn__cl_foreign_llvm() || d->compiler_refused)
        return;
    char said[96], buf[640];
    snprintf(said, sizeof said, "%s", at);
    said[strcspn(said, "\r\n")] = '\0';
    snprintf(buf, sizeof buf,
             "OpenCL: the device's kernel compiler (PoCL's LLVM) failed with \"%s\" (its own CPU) in a process where "
             "another LLVM (TensorFlow's?) was loaded before PoCL; later builds on this device fail with this "
             "error. Load polydnn's OpenCL devices before that library: in Python, import polydnn and call "
             "polydnn.devices() before importing tensorflow (or set POCL_LLVM_CPU_NAME to a CPU PoCL's LLVM knows)",
             said);
    d->compiler_refused = strdup(buf);
}

static pdnn_status from_source(cl_dev *d, const char *const *texts, const size_t *lens, cl_uint n, const char *opts,
                               const char *what, cl_program *out)
{
    if (d->compiler_refused)
        return pdnn__error(PDNN_ERR_BACKEND, "%s (building %s with '%s')", d->compiler_refused, what, opts);
    cl_int err = CL_SUCCESS;
    cl_program prog = clCreateProgramWithSource(d->ctx, n, (const char **)texts, lens, &err);
    if (!prog) {
        char call[160];
        snprintf(call, sizeof call, "clCreateProgramWithSource(%s)", what);
        return pdnn__cl_fail(call, err);
    }
    err = clBuildProgram(prog, 1, &d->id, opts, NULL, NULL);
    if (err != CL_SUCCESS) {
        char *log = build_log(d, prog);
        clReleaseProgram(prog);
        note_refused_cpu(d, log);
        if (d->compiler_refused) {
            free(log);
            return pdnn__error(PDNN_ERR_BACKEND, "%s (building %s with '%s')", d->compiler_refused, what, opts);
        }
        const char *dir = getenv("POLYDNN_KERNEL_DIR");
        pdnn__error(PDNN_ERR_BACKEND, "OpenCL: building %s with '%s' failed with %s%s:\n%s", what, opts,
                    pdnn__cl_error_name(err), dir && *dir ? " (sources from POLYDNN_KERNEL_DIR)" : "",
                    log ? log : "(no build log: out of host memory)");
        free(log);
        return PDNN_ERR_BACKEND;
    }
    note_build_log(d, prog, what, opts);
    *out = prog;
    return PDNN_SUCCESS;
}

/* The source that file is built after, in one program (OpenCL C has no
 * include path for embedded sources). That one may have its own, so a
 * program is a chain, outermost first: prelude.cl (16-lane built-ins,
 * index helpers) for every program, then conv2d_tile.cl (the tile
 * macros) for the register-tiled convolutions. */
const char *pdnn__cl_prelude_of(const char *file)
{
    if (strcmp(file, "prelude.cl") == 0)
        return NULL;
    return strcmp(file, "conv2d_gemm_1x1.cl") == 0 || strcmp(file, "conv2d_implicit_gemm.cl") == 0
               ? "conv2d_tile.cl"
               : "prelude.cl";
}

/* The most sources a program is built from: file and its preludes. */
#define MAX_SOURCES 3

static void free_sources(char **owned, cl_uint n)
{
    for (cl_uint i = 0; i < n; i++)
        free(owned[i]);
}

/* Builds file with opts for d: from the on-disk cache where it has a
 * valid binary (*loaded: the file's slot), else from source (then queued
 * for the cache). rebuild: the slot of a cached binary found bad, to
 * build from source and store again. */
static pdnn_status build(cl_dev *d, const char *file, const char *opts, pdnn__cl_cache_slot *rebuild,
                         cl_program *out, pdnn__cl_cache_slot **loaded)
{
    *loaded = NULL;
    /* file's chain of preludes, outermost first in texts. */
    const char *names[MAX_SOURCES];
    cl_uint n = 0;
    for (const char *f = file; f; f = pdnn__cl_prelude_of(f)) {
        if (n == MAX_SOURCES) {
            pdnn__cl_program_cache_slot_free(rebuild);
            return pdnn__error(PDNN_ERR_INTERNAL, "OpenCL: %s has more than %d sources", file, MAX_SOURCES);
        }
        names[n++] = f;
    }
    pdnn_status st = PDNN_SUCCESS;
    const char *texts[MAX_SOURCES] = {NULL};
    size_t lens[MAX_SOURCES] = {0};
    char *owned[MAX_SOURCES] = {NULL};
    for (cl_uint i = 0; i < n && st == PDNN_SUCCESS; i++)
        st = source_of(names[n - 1 - i], &texts[i], &lens[i], &owned[i]);
    if (st != PDNN_SUCCESS) {
        free_sources(owned, n);
        pdnn__cl_program_cache_slot_free(rebuild);
        return st;
    }
    char full[256];
    snprintf(full, sizeof full, "-cl-std=CL1.2 %s", opts);
    pdnn__cl_cache_slot *slot = rebuild;
    cl_program prog = rebuild ? NULL : pdnn__cl_program_cache_find(d, texts, lens, n, full, file, &slot);
    if (prog) {
        *loaded = slot;
    } else {
        st = from_source(d, texts, lens, n, full, file, &prog);
        pdnn__cl_program_cache_add(d, slot, st == PDNN_SUCCESS ? prog : NULL);
    }
    free_sources(owned, n);
    if (st == PDNN_SUCCESS)
        *out = prog;
    return st;
}

/* ---- the kernel cache ------------------------------------------------------ */

/* Long enough for every file, option string and kernel name of
 * kernels_cl/; longer ones are refused, not truncated. */
#define FILE_LEN 48
#define OPTS_LEN 96
#define NAME_LEN 48

typedef struct kernel_entry {
    struct kernel_entry *next;
    cl_kernel kernel;
    char name[NAME_LEN];
} kernel_entry;

struct pdnn__cl_program_entry {
    pdnn__cl_program_entry *next;
    cl_program program;
    kernel_entry *kernels;
    pdnn__cl_cache_slot *cached; /* program came from this file of the on-disk cache */
    /* A cached program replaced by its rebuild, with the kernels made from
     * it: a caller may still hold one, so they live until teardown. */
    cl_program retired;
    kernel_entry *retired_kernels;
    char file[FILE_LEN], opts[OPTS_LEN];
};

/* clCreateKernel failed on a program loaded from the on-disk cache: the
 * file passed every check (header, key, checksum, the driver's build) yet
 * is not this source's program, e.g. another program's binary under this
 * key. Without this every later use failed the same way, in every process.
 * Deletes the file, rebuilds p from source (stored again at teardown). */
static pdnn_status rebuild_from_source(cl_dev *d, pdnn__cl_program_entry *p, const char *kernel, cl_int err)
{
    pdnn__cl_cache_slot *slot = p->cached;
    p->cached = NULL;
    char why[160];
    snprintf(why, sizeof why, "clCreateKernel(%s) failed with %s", kernel, pdnn__cl_error_name(err));
    pdnn__cl_program_cache_drop(slot, why);
    cl_program fresh = NULL;
    pdnn__cl_cache_slot *unused = NULL;
    pdnn_status st = build(d, p->file, p->opts, slot, &fresh, &unused);
    if (st != PDNN_SUCCESS)
        return st;
    p->retired = p->program;
    p->retired_kernels = p->kernels;
    p->kernels = NULL;
    p->program = fresh;
    return PDNN_SUCCESS;
}

static void release_kernels(kernel_entry *k)
{
    while (k) {
        kernel_entry *next = k->next;
        clReleaseKernel(k->kernel);
        free(k);
        k = next;
    }
}

pdnn_status pdnn__cl_kernel(cl_dev *d, const char *file, const char *opts, const char *kernel, cl_kernel *out)
{
    if (!opts)
        opts = "";
    if (strlen(file) >= FILE_LEN || strlen(opts) >= OPTS_LEN || strlen(kernel) >= NAME_LEN)
        return pdnn__error(PDNN_ERR_INTERNAL, "OpenCL: kernel cache key too long (%s, '%s', %s)", file, opts,
                           kernel);
    pdnn__cl_program_entry *p = d->programs;
    while (p && (strcmp(p->file, file) != 0 || strcmp(p->opts, opts) != 0))
        p = p->next;
    if (!p) {
        p = calloc(1, sizeof *p);
        if (!p)
            return pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "OpenCL: out of host memory");
        pdnn_status st = build(d, file, opts, NULL, &p->program, &p->cached);
        if (st != PDNN_SUCCESS) {
            free(p);
            return st;
        }
        snprintf(p->file, sizeof p->file, "%s", file);
        snprintf(p->opts, sizeof p->opts, "%s", opts);
        p->next = d->programs;
        d->programs = p;
    }
    for (kernel_entry *k = p->kernels; k; k = k->next)
        if (strcmp(k->name, kernel) == 0) {
            *out = k->kernel;
            return PDNN_SUCCESS;
        }
    kernel_entry *k = calloc(1, sizeof *k);
    if (!k)
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    cl_int err = CL_SUCCESS;
    k->kernel = clCreateKernel(p->program, kernel, &err);
    if (!k->kernel && p->cached) {
        pdnn_status st = rebuild_from_source(d, p, kernel, err);
        if (st != PDNN_SUCCESS) {
            free(k);
            return st;
        }
        k->kernel = clCreateKernel(p->program, kernel, &err);
    }
    if (!k->kernel) {
        free(k);
        char call[96];
        snprintf(call, sizeof call, "clCreateKernel(%s)", kernel);
        return pdnn__cl_fail(call, err);
    }
    snprintf(k->name, sizeof k->name, "%s", kernel);
    /* tests/oclgrind_kernels.sh reads these to find kernels no case ran. */
    pdnn__debug("OpenCL: kernel %s of %s created", kernel, file);
    k->next = p->kernels;
    p->kernels = k;
    *out = k->kernel;
    return PDNN_SUCCESS;
}

void pdnn__cl_kernels_release(cl_dev *d)
{
    pdnn__cl_program_cache_flush(d);
    while (d->programs) {
        pdnn__cl_program_entry *p = d->programs;
        d->programs = p->next;
        release_kernels(p->kernels);
        release_kernels(p->retired_kernels);
        clReleaseProgram(p->program);
        if (p->retired)
            clReleaseProgram(p->retired);
        pdnn__cl_program_cache_slot_free(p->cached);
        free(p);
    }
}

/* ---- convolutions in int indices ------------------------------------------ */

const char *pdnn__cl_conv_int_why(const pdnn__conv2d_call *c)
{
    const int64_t lim = INT32_MAX / 4, cpg = c->groups > 0 ? c->c / c->groups : c->c;
    if (c->n > lim || c->h > lim || c->w > lim || c->c > lim || c->k > lim || c->p > lim || c->q > lim || c->r > lim ||
        c->s > lim || (c->p > 0 && c->q > lim / c->p) || c->p * c->stride_h > lim || c->q * c->stride_w > lim ||
        c->r * c->dil_h > lim || c->s * c->dil_w > lim || c->pad_top > lim || c->pad_left > lim ||
        (c->r * c->s > 0 && cpg > lim / (c->r * c->s)) ||
        (c->p * c->q > 0 && c->n > INT64_MAX / 8 / (c->p * c->q)))
        return "the tensor is too large for its int indices";
    return NULL;
}

/* ---- tunable algorithms ----------------------------------------------------- */

int pdnn__cl_default_config(const cl_dev *d, const pdnn__cl_tunable *t, const char *variant)
{
    return pdnn__cl_default_index(&d->cls, t->kernel, variant);
}

int pdnn__cl_plan_tunable(const pdnn__cl_tunable *t, void *dev, const pdnn__op_call *call, int dflt,
                          pdnn__plan *plan)
{
    if (dflt < 0 || !t->applies(dev, call, dflt)) {
        dflt = -1;
        for (int j = 0; dflt < 0 && j < t->algo->n_configs; j++)
            if (t->applies(dev, call, j))
                dflt = j;
    }
    const int i = pdnn__plan_pick_config(dev, call, t->algo, t->kernel, t->applies, dflt, plan);
    if (i < 0)
        return -1;
    plan->supported = 1;
    size_t ws = t->workspace(dev, call, i);
    for (int j = 0; plan->search && j < t->algo->n_configs; j++) /* the search runs them all */
        if (t->applies(dev, call, j) && t->workspace(dev, call, j) > ws)
            ws = t->workspace(dev, call, j);
    plan->workspace = ws;
    if (!plan->search && t->packed && call->op == PDNN__OP_CONV2D_FWD && call->u.conv2d.w_const) {
        plan->wpack = t->packed(dev, call, i);
        plan->workspace -= plan->wpack;
    }
    return i;
}

pdnn_status pdnn__cl_run_tunable(const pdnn__cl_tunable *t, void *dev, const pdnn__op_call *call,
                                 const pdnn__plan *plan, pdnn__buf ws, pdnn__run_report *rep)
{
    cl_dev *d = dev;
    pdnn__run_report r;
    memset(&r, 0, sizeof r);
    int i = plan->config;
    pthread_mutex_lock(&d->lock);
    if (plan->search) {
        /* Every configuration reduces in the same order, so each must
         * match the default to rounding; plan sized ws for all of them. */
        const pdnn__config_search s = {.dev = dev,
                                       .call = call,
                                       .algo = t->algo,
                                       .kernel = t->kernel,
                                       .dflt = plan->config,
                                       .usable = t->applies,
                                       .run_config = t->run_config,
                                       /* its read and synchronize take no lock */
                                       .backend = &pdnn__opencl_backend,
                                       .ws = ws};
        i = pdnn__search_configs(&s, &r);
    }
    /* Once more after a search, so that y holds the winner's output. */
    pdnn_status st = t->run_config(dev, call, i, ws);
    pthread_mutex_unlock(&d->lock);
    if (st == PDNN_SUCCESS && rep) {
        r.config = i;
        t->algo->config_name(i, r.config_name, sizeof r.config_name);
        *rep = r;
    }
    return st;
}
