/* The OpenCL backend's device glue: every platform's devices, one context
 * and in-order queue per device, memory, synchronisation, the peak hook,
 * the vtable and the algorithm tables. The kernels and their launches live
 * in the cl_*.c files (cl_internal.h says which). */
#define _GNU_SOURCE /* RTLD_DEEPBIND, RTLD_DEFAULT */
#include "backends/opencl/cl_internal.h"
#ifdef PDNN_HAVE_CLBLAST
#include <clblast_c.h> /* CLBlastClearCache */
#endif

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

static void info_string(cl_device_id d, cl_device_info what, char *buf, size_t len)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(d, what, len, buf, NULL) != CL_SUCCESS)
        snprintf(buf, len, "unknown");
    buf[len - 1] = '\0';
}

static void dev_free(cl_dev *d)
{
    if (!d)
        return;
    pdnn__cl_kernels_release(d);
    pdnn__cl_wg_tables_release(d);
#ifdef PDNN_HAVE_CLBLAST
    /* CLBlast keeps its programs in a process-wide cache, released by its
     * static destructor at exit: after the context was, which under
     * Oclgrind freed the program's memory twice ("corrupted double-linked
     * list" at exit after an im2col_gemm conv). Its programs go with the
     * context instead; the cache refills on the next call. */
    CLBlastClearCache();
#endif
    if (d->queue)
        clReleaseCommandQueue(d->queue);
    if (d->ctx)
        clReleaseContext(d->ctx);
    pthread_mutex_destroy(&d->lock);
    free(d->compiler_refused);
    free(d);
}

static pdnn_status dev_open(cl_device_id id, cl_dev **out)
{
    cl_dev *d = calloc(1, sizeof *d);
    if (!d)
        return pdnn__host_oom("OpenCL", "a device's state", sizeof *d);
    if (pthread_mutex_init(&d->lock, NULL) != 0) {
        free(d);
        return pdnn__error(PDNN_ERR_INTERNAL, "OpenCL: pthread_mutex_init failed");
    }
    d->id = id;
    cl_int err;
    d->ctx = clCreateContext(NULL, 1, &id, NULL, NULL, &err);
    if (!d->ctx) {
        dev_free(d);
        return pdnn__cl_fail("clCreateContext", err);
    }
    d->queue = clCreateCommandQueue(d->ctx, id, 0, &err);
    if (!d->queue) {
        dev_free(d);
        return pdnn__cl_fail("clCreateCommandQueue", err);
    }
    if (clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_wg, &d->max_wg, NULL) !=
        CL_SUCCESS)
        d->max_wg = 64;
    if (clGetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof d->local_mem, &d->local_mem, NULL) != CL_SUCCESS)
        d->local_mem = 0;
    char vendor[128], name[128], driver[96];
    info_string(id, CL_DEVICE_VENDOR, vendor, sizeof vendor);
    info_string(id, CL_DEVICE_NAME, name, sizeof name);
    info_string(id, CL_DRIVER_VERSION, driver, sizeof driver);
    snprintf(d->program_key, sizeof d->program_key, "%s|%s|%s", vendor, name, driver);
    for (char *t = d->program_key; *t; t++)
        if (*t == '\t' || *t == '\n' || *t == '\r')
            *t = ' ';
    cl_device_type type = 0;
    clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    d->type = type;
    cl_uint cu = 0, vw = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL) != CL_SUCCESS || cu == 0)
        cu = 1;
    if (clGetDeviceInfo(id, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof vw, &vw, NULL) != CL_SUCCESS)
        vw = 0;
    d->cu = cu;
    d->vec_float = vw;
    pdnn__cl_device_class_of(vendor, type, vw, &d->cls);
    pdnn__debug("OpenCL: %s takes the device table's row '%s'%s%s", name,
                d->cls.row ? d->cls.row->name : d->cls.generic->name, d->cls.row ? " over " : "",
                d->cls.row ? d->cls.generic->name : "");
    *out = d;
    return PDNN_SUCCESS;
}

/* ---- ICDs next to another LLVM ---------------------------------------- */

/* Opens one ICD library (a name or path, as an .icd file gives it) with
 * RTLD_DEEPBIND; the handle is kept, so the ICD loader's own dlopen later
 * finds the library already loaded and bound. */
static void deepbind_icd(const char *lib)
{
    if (!*lib)
        return;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    pdnn__debug("OpenCL: %s %s with RTLD_DEEPBIND", h ? "loaded" : "could not load", lib);
}

static void deepbind_icd_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512] = "";
    if (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        deepbind_icd(line);
    }
    fclose(f);
}

/* An ICD built on LLVM (PoCL) crashes in its constructors when another
 * LLVM's symbols are already global in the process: TensorFlow's
 * libtensorflow_framework exports its own, and libclang-cpp then
 * registers its options in TensorFlow's tables (SIGSEGV in
 * llvm::cl::Option::addArgument). So when LLVM's symbols are visible
 * before the ICD loader first runs, the ICDs it would load (the same
 * list: OCL_ICD_FILENAMES, else the .icd files of OCL_ICD_VENDORS or
 * /etc/OpenCL/vendors) are loaded first with RTLD_DEEPBIND, which makes
 * each prefer its own dependencies' symbols. Not under ASan, which
 * refuses RTLD_DEEPBIND. */
static int foreign_llvm;

int pdnn__cl_foreign_llvm(void) { return foreign_llvm; }

static void bind_icds_to_their_own_llvm(void)
{
    static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;
    static int done;
    pthread_mutex_lock(&once_lock);
    if (done || !dlsym(RTLD_DEFAULT, "_ZN4llvm2cl6Option11addArgumentEv") || dlsym(RTLD_DEFAULT, "__asan_init")) {
        done = 1;
        pthread_mutex_unlock(&once_lock);
        return;
    }
    done = 1;
    foreign_llvm = 1;
    pdnn__debug("OpenCL: another LLVM is loaded in this process (TensorFlow?); binding the ICDs to their own");
    const char *names = getenv("OCL_ICD_FILENAMES");
    if (names && *names) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", names);
        for (char *save = NULL, *lib = strtok_r(buf, ":", &save); lib; lib = strtok_r(NULL, ":", &save))
            deepbind_icd(lib);
    } else {
        const char *dir = getenv("OCL_ICD_VENDORS");
        if (!dir || !*dir)
            dir = "/etc/OpenCL/vendors";
        DIR *dp = opendir(dir);
        for (struct dirent *e = dp ? readdir(dp) : NULL; e; e = readdir(dp)) {
            const size_t len = strlen(e->d_name);
            if (len > 4 && strcmp(e->d_name + len - 4, ".icd") == 0) {
                char path[1024];
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                deepbind_icd_file(path);
            }
        }
        if (dp)
            closedir(dp);
    }
    pthread_mutex_unlock(&once_lock);
}

/* ---- PoCL's worker threads -------------------------------------------- */

/* PoCL's CPU device runs work-groups on one worker thread per CPU and
 * leaves them unpinned. Linux then at times runs two workers on one core
 * while the other has none, for long stretches: a whole process ran
 * ResNet-50, SqueezeNet or MobileNetV2 at batch 1 up to 1.45x slower
 * than the next (bench/results-onnx-models.md). PoCL pins worker i to
 * CPU i when POCL_AFFINITY=1, which it reads as it starts its workers, so
 * polydnn sets it before the ICD loader first runs. Not when the user set
 * it (POCL_AFFINITY=0 keeps the workers unpinned) or set
 * POCL_MAX_PTHREAD_COUNT, and not when this process may not run on every
 * CPU 0..n-1 (taskset, an MPI rank's binding, a container's cpuset):
 * pinning would override that binding, or fail. Run once (pthread_once),
 * before any OpenCL call of polydnn's. */
static void pin_pocl_workers_once(void)
{
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    int all = !getenv("POCL_AFFINITY") && !getenv("POCL_MAX_PTHREAD_COUNT") && ncpu >= 2 &&
              ncpu <= CPU_SETSIZE && sched_getaffinity(0, sizeof allowed, &allowed) == 0;
    for (long i = 0; all && i < ncpu; i++)
        all = CPU_ISSET((int)i, &allowed);
    if (all && setenv("POCL_AFFINITY", "1", 0) == 0)
        pdnn__debug("OpenCL: POCL_AFFINITY=1: PoCL's worker threads run one per CPU, pinned");
}

static void pin_pocl_workers(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, pin_pocl_workers_once);
}

static pdnn_status cl_enumerate(void ***devs, pdnn__device_props **props, int *n, const char **why)
{
    bind_icds_to_their_own_llvm();
    pin_pocl_workers();
    *devs = NULL;
    *props = NULL;
    *n = 0;
    *why = NULL;
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == -1001 || (err == CL_SUCCESS && np == 0)) {
        *why = "no OpenCL platform is installed (on Debian: apt-get install pocl-opencl-icd, or a GPU vendor's ICD)";
        return PDNN_SUCCESS;
    }
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clGetPlatformIDs", err);
    cl_platform_id *plats = malloc(sizeof *plats * np);
    if (!plats)
        return pdnn__host_oom("OpenCL", "the platform list", sizeof *plats * np);
    err = clGetPlatformIDs(np, plats, NULL);
    if (err != CL_SUCCESS) {
        free(plats);
        return pdnn__cl_fail("clGetPlatformIDs", err);
    }
    cl_device_id ids[64];
    cl_uint nid = 0;
    for (cl_uint p = 0; p < np && nid < 64; p++) {
        cl_uint got = 0;
        err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64 - nid, ids + nid, &got);
        if (err == CL_SUCCESS)
            nid += got < 64 - nid ? got : 64 - nid;
        /* A platform without devices (CL_DEVICE_NOT_FOUND) is skipped. */
    }
    free(plats);
    if (nid == 0) {
        *why = "the OpenCL platforms report no devices";
        return PDNN_SUCCESS;
    }
    void **handles = calloc(nid, sizeof *handles);
    pdnn__device_props *pr = calloc(nid, sizeof *pr);
    if (!handles || !pr) {
        free(handles);
        free(pr);
        return pdnn__host_oom("OpenCL", "the device table", nid * (sizeof *handles + sizeof *pr));
    }
    int count = 0;
    for (cl_uint i = 0; i < nid; i++) {
        cl_device_type type = 0;
        cl_ulong mem = 0, maxalloc = 0;
        cl_uint cu = 0, align_bits = 0;
        cl_bool avail = CL_FALSE;
        clGetDeviceInfo(ids[i], CL_DEVICE_AVAILABLE, sizeof avail, &avail, NULL);
        if (!avail)
            continue;
        clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
        clGetDeviceInfo(ids[i], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
        clGetDeviceInfo(ids[i], CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof maxalloc, &maxalloc, NULL);
        clGetDeviceInfo(ids[i], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
        clGetDeviceInfo(ids[i], CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
        cl_dev *d = NULL;
        pdnn_status st = dev_open(ids[i], &d);
        if (st != PDNN_SUCCESS) {
            for (int j = 0; j < count; j++)
                dev_free(handles[j]);
            free(handles);
            free(pr);
            return st;
        }
        pdnn__device_props *q = &pr[count];
        q->kind = (type & CL_DEVICE_TYPE_GPU) ? PDNN__KIND_GPU
                  : (type & CL_DEVICE_TYPE_CPU) ? PDNN__KIND_CPU
                                                : PDNN__KIND_ACCELERATOR;
        info_string(ids[i], CL_DEVICE_VENDOR, q->vendor, sizeof q->vendor);
        info_string(ids[i], CL_DEVICE_NAME, q->name, sizeof q->name);
        info_string(ids[i], CL_DRIVER_VERSION, q->driver_version, sizeof q->driver_version);
        q->memory_bytes = mem;
        q->max_alloc_bytes = maxalloc;
        q->base_align = align_bits / 8;
        q->compute_units = (int)cu;
        q->dlpack_type = 4; /* kDLOpenCL; the id is the position among available devices */
        q->dlpack_id = count;
        handles[count++] = d;
    }
    *devs = handles;
    *props = pr;
    *n = count;
    if (count == 0)
        *why = "no OpenCL device is available";
    return PDNN_SUCCESS;
}

static void cl_close(void *dev) { dev_free(dev); }

/* ---- memory ------------------------------------------------------------ */

/* On a CPU device (PoCL) a region is host memory, and the activations of
 * a network are tens of MiB: with 4 KiB pages their sweeps miss the TLB.
 * Regions of 2 MiB and more are therefore mapped here, 2 MiB-aligned and
 * advised to use transparent huge pages (Debian's default is madvise),
 * and handed over with CL_MEM_USE_HOST_PTR, which PoCL uses in place; the
 * mapping goes when OpenCL destroys the buffer. NULL: not such a device
 * or size, or any step failed (the caller falls back to clCreateBuffer). */
#define HUGE_PAGE ((size_t)2 << 20)

typedef struct host_map {
    void *base;
    size_t len;
} host_map;

static void CL_CALLBACK unmap_region(cl_mem m, void *user)
{
    (void)m;
    host_map *h = user;
    munmap(h->base, h->len);
    free(h);
}

static cl_mem huge_page_buffer(const cl_dev *d, size_t bytes)
{
    if (!pdnn__cl_is_cpu(d) || bytes < HUGE_PAGE || bytes > SIZE_MAX - 2 * HUGE_PAGE)
        return NULL;
    const size_t span = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    host_map *h = malloc(sizeof *h);
    if (!h)
        return NULL;
    h->len = span + HUGE_PAGE; /* room to align the start */
    h->base = mmap(NULL, h->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (h->base == MAP_FAILED) {
        free(h);
        return NULL;
    }
    char *p = (char *)(((uintptr_t)h->base + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    (void)madvise(p, span, MADV_HUGEPAGE); /* advice: without it the pages are small */
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, p, &err);
    if (m && clSetMemObjectDestructorCallback(m, unmap_region, h) == CL_SUCCESS)
        return m;
    if (m)
        clReleaseMemObject(m);
    munmap(h->base, h->len);
    free(h);
    return NULL;
}

/* PoCL's CPU devices allocate a buffer's memory when they first use it,
 * and abort (an assertion, `p->mem_ptr != NULL`) when that fails: under an
 * address-space limit (ulimit -v) a reservation that took the last of the
 * space killed the process at its first kernel. So on a CPU device a
 * region is taken only while it and CPU_HEADROOM more (PoCL's own
 * buffers, its compiler, thread stacks) can still be mapped; else it is
 * refused as out of memory, and the allocator backs off or warns. */
#define CPU_HEADROOM ((size_t)512 << 20)

static int cpu_room_for(size_t bytes)
{
    if (bytes > SIZE_MAX - CPU_HEADROOM)
        return 0;
    void *p = mmap(NULL, bytes + CPU_HEADROOM, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    munmap(p, bytes + CPU_HEADROOM);
    return 1;
}

static pdnn_status cl_region_alloc(void *dev, size_t bytes, void **region)
{
    cl_dev *d = dev;
    cl_int err = CL_SUCCESS;
    if (pdnn__cl_is_cpu(d) && !cpu_room_for(bytes)) {
        char b[32], h[32];
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY,
                           "OpenCL: a region of %zu bytes (%s) and %s for the driver do not fit in the process's "
                           "address space (ulimit -v)",
                           bytes, pdnn__format_bytes(bytes, b, sizeof b),
                           pdnn__format_bytes(CPU_HEADROOM, h, sizeof h));
    }
    cl_mem m = huge_page_buffer(d, bytes);
    if (!m)
        m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!m) {
        char b[32];
        return pdnn__error(pdnn__cl_fail("clCreateBuffer", err),
                           "OpenCL: clCreateBuffer of a region of %zu bytes (%s) failed with %s (%d)", bytes,
                           pdnn__format_bytes(bytes, b, sizeof b), pdnn__cl_error_name(err), (int)err);
    }
    *region = m;
    return PDNN_SUCCESS;
}

static void cl_region_free(void *dev, void *region)
{
    (void)dev;
    clReleaseMemObject((cl_mem)region);
}

static pdnn_status cl_write(void *dev, pdnn__buf dst, const void *src, size_t bytes)
{
    cl_dev *d = dev;
    cl_int err = clEnqueueWriteBuffer(d->queue, (cl_mem)dst.region, CL_TRUE, dst.offset, bytes, src,
                                      0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueWriteBuffer", err);
}

static pdnn_status cl_read(void *dev, pdnn__buf src, void *dst, size_t bytes)
{
    cl_dev *d = dev;
    cl_int err = clEnqueueReadBuffer(d->queue, (cl_mem)src.region, CL_TRUE, src.offset, bytes, dst,
                                     0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueReadBuffer", err);
}

static pdnn_status cl_copy(void *dev, pdnn__buf dst, pdnn__buf src, size_t bytes)
{
    cl_dev *d = dev;
    cl_int err = clEnqueueCopyBuffer(d->queue, (cl_mem)src.region, (cl_mem)dst.region, src.offset,
                                     dst.offset, bytes, 0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueCopyBuffer", err);
}

static pdnn_status cl_sync(void *dev)
{
    cl_dev *d = dev;
    cl_int err = clFinish(d->queue);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clFinish", err);
}

/* ---- the algorithm tables ------------------------------------------------- */

/* Each algorithm is a file of its own (cl_<name>.c); adding one is its
 * kernel, its file and a line here. The ranks, set in each file with the
 * measurements behind them, order AUTO's untuned choice: depthwise 10,
 * wg_gemm 15 (GPU-class devices), gemm_1x1 20, implicit_gemm 30, winograd 40,
 * tiled 50, im2col_gemm 60,
 * direct 100; each plan also says where AUTO passes over it. */
extern const pdnn__algo pdnn__cl_algo_direct, pdnn__cl_algo_tiled, pdnn__cl_algo_winograd, pdnn__cl_algo_depthwise,
    pdnn__cl_algo_gemm_1x1, pdnn__cl_algo_implicit_gemm, pdnn__cl_algo_wg_gemm;
#ifdef PDNN_HAVE_CLBLAST
extern const pdnn__algo pdnn__cl_algo_im2col_gemm;
#endif
extern const pdnn__algo pdnn__cl_algo_depthwise_wg; /* cl_depthwise_wg.c: GPU-class, rank 9 */
extern const pdnn__algo pdnn__cl_algo_pool_direct, pdnn__cl_algo_pool_fast, pdnn__cl_algo_pool_rows,
    pdnn__cl_algo_pool_flat, pdnn__cl_algo_pool_global;

static const pdnn__algo *const cl_conv_algos[] = {
    &pdnn__cl_algo_direct,
    &pdnn__cl_algo_tiled,
#ifdef PDNN_HAVE_CLBLAST
    &pdnn__cl_algo_im2col_gemm,
#endif
    &pdnn__cl_algo_winograd,
    &pdnn__cl_algo_depthwise,
    &pdnn__cl_algo_gemm_1x1,
    &pdnn__cl_algo_implicit_gemm,
    &pdnn__cl_algo_wg_gemm,
    &pdnn__cl_algo_depthwise_wg,
    NULL,
};

extern const pdnn__algo pdnn__cl_algo_bwd_data_direct, pdnn__cl_algo_bwd_filter_direct, pdnn__cl_algo_bwd_filter_split,
    pdnn__cl_algo_bwd_bias_direct, pdnn__cl_algo_pool_bwd_direct, pdnn__cl_algo_pool_bwd_window,
    pdnn__cl_algo_pool_bwd_argmax, pdnn__cl_algo_pool_bwd_plane;
extern const pdnn__algo pdnn__cl_algo_bwd_data_fwd, pdnn__cl_algo_bwd_filter_fwd, pdnn__cl_algo_bwd_filter_rows,
    pdnn__cl_algo_bwd_data_igemm, pdnn__cl_algo_bwd_filter_gemm;
extern const pdnn__algo pdnn__cl_algo_bwd_data_im2col, pdnn__cl_algo_bwd_filter_im2col;
static const pdnn__algo *const cl_conv_bwd_data_algos[] = {&pdnn__cl_algo_bwd_data_fwd, &pdnn__cl_algo_bwd_data_igemm,
#ifdef PDNN_HAVE_CLBLAST
                                                           &pdnn__cl_algo_bwd_data_im2col,
#endif
                                                           &pdnn__cl_algo_bwd_data_direct, NULL};
static const pdnn__algo *const cl_conv_bwd_filter_algos[] = {&pdnn__cl_algo_bwd_filter_rows, &pdnn__cl_algo_bwd_filter_fwd,
                                                             &pdnn__cl_algo_bwd_filter_direct,
                                                             &pdnn__cl_algo_bwd_filter_split,
#ifdef PDNN_HAVE_CLBLAST
                                                             &pdnn__cl_algo_bwd_filter_im2col,
#endif
                                                             &pdnn__cl_algo_bwd_filter_gemm, NULL};
static const pdnn__algo *const cl_conv_bwd_bias_algos[] = {&pdnn__cl_algo_bwd_bias_direct, NULL};
static const pdnn__algo *const cl_pool_bwd_algos[] = {&pdnn__cl_algo_pool_bwd_window, &pdnn__cl_algo_pool_bwd_argmax,
                                                      &pdnn__cl_algo_pool_bwd_plane, &pdnn__cl_algo_pool_bwd_direct,
                                                      NULL};
/* batch normalization (cl_bn.c) */
extern const pdnn__algo pdnn__cl_algo_bn_fwd_train, pdnn__cl_algo_bn_fwd_infer, pdnn__cl_algo_bn_bwd;
static const pdnn__algo *const cl_bn_fwd_train_algos[] = {&pdnn__cl_algo_bn_fwd_train, NULL};
static const pdnn__algo *const cl_bn_fwd_infer_algos[] = {&pdnn__cl_algo_bn_fwd_infer, NULL};
static const pdnn__algo *const cl_bn_bwd_algos[] = {&pdnn__cl_algo_bn_bwd, NULL};
/* The training ops (cl_train.c). */
extern const pdnn__algo pdnn__cl_algo_relu_bwd_direct, pdnn__cl_algo_softmax_xent_direct, pdnn__cl_algo_optimizer_direct;
static const pdnn__algo *const cl_relu_bwd_algos[] = {&pdnn__cl_algo_relu_bwd_direct, NULL};
static const pdnn__algo *const cl_softmax_xent_algos[] = {&pdnn__cl_algo_softmax_xent_direct, NULL};
static const pdnn__algo *const cl_optimizer_algos[] = {&pdnn__cl_algo_optimizer_direct, NULL};
extern const pdnn__algo pdnn__cl_algo_scale_direct;
extern const pdnn__algo pdnn__cl_algo_activation_direct, pdnn__cl_algo_transform_direct;
static const pdnn__algo *const cl_transform_algos[] = {&pdnn__cl_algo_transform_direct, NULL};
extern const pdnn__algo pdnn__cl_algo_binary_direct, pdnn__cl_algo_pad_direct;
static const pdnn__algo *const cl_binary_algos[] = {&pdnn__cl_algo_binary_direct, NULL};
static const pdnn__algo *const cl_pad_algos[] = {&pdnn__cl_algo_pad_direct, NULL};
/* the N-d math ops (cl_nd_math.c) */
extern const pdnn__algo pdnn__cl_algo_transpose_direct, pdnn__cl_algo_transpose_tiled, pdnn__cl_algo_softmax_direct,
    pdnn__cl_algo_softmax_group, pdnn__cl_algo_layer_norm_direct, pdnn__cl_algo_layer_norm_group,
    pdnn__cl_algo_reduce_direct;
static const pdnn__algo *const cl_transpose_algos[] = {&pdnn__cl_algo_transpose_tiled, &pdnn__cl_algo_transpose_direct,
                                                       NULL};
static const pdnn__algo *const cl_softmax_algos[] = {&pdnn__cl_algo_softmax_group, &pdnn__cl_algo_softmax_direct,
                                                     NULL};
static const pdnn__algo *const cl_layer_norm_algos[] = {&pdnn__cl_algo_layer_norm_group,
                                                        &pdnn__cl_algo_layer_norm_direct, NULL};
extern const pdnn__algo pdnn__cl_algo_layer_norm_bwd_direct; /* cl_nd_grad.c */
static const pdnn__algo *const cl_layer_norm_bwd_algos[] = {&pdnn__cl_algo_layer_norm_bwd_direct, NULL};
static const pdnn__algo *const cl_reduce_algos[] = {&pdnn__cl_algo_reduce_direct, NULL};
extern const pdnn__algo pdnn__cl_algo_index_direct, pdnn__cl_algo_where_direct; /* cl_index.c */
static const pdnn__algo *const cl_index_algos[] = {&pdnn__cl_algo_index_direct, NULL};
static const pdnn__algo *const cl_where_algos[] = {&pdnn__cl_algo_where_direct, NULL};
static const pdnn__algo *const cl_activation_algos[] = {&pdnn__cl_algo_activation_direct, NULL};
extern const pdnn__algo pdnn__cl_algo_cast_direct; /* cl_cast.c */
static const pdnn__algo *const cl_cast_algos[] = {&pdnn__cl_algo_cast_direct, NULL};
static const pdnn__algo *const cl_scale_algos[] = {&pdnn__cl_algo_scale_direct, NULL};
/* matmul (cl_matmul.c) */
extern const pdnn__algo pdnn__cl_algo_matmul_tiled, pdnn__cl_algo_matmul_conv_gemm, pdnn__cl_algo_matmul_clblast,
    pdnn__cl_algo_matmul_naive;
static const pdnn__algo *const cl_matmul_algos[] = {&pdnn__cl_algo_matmul_tiled, &pdnn__cl_algo_matmul_conv_gemm,
#ifdef PDNN_HAVE_CLBLAST
                                                    &pdnn__cl_algo_matmul_clblast,
#endif
                                                    &pdnn__cl_algo_matmul_naive, NULL};

static const pdnn__algo *const cl_pool_algos[] = {
    &pdnn__cl_algo_pool_direct,
    &pdnn__cl_algo_pool_fast,
    &pdnn__cl_algo_pool_rows,
    &pdnn__cl_algo_pool_flat,
    &pdnn__cl_algo_pool_global,
    NULL,
};

const pdnn__backend pdnn__opencl_backend = {
    .name = "opencl",
    .enumerate = cl_enumerate,
    .device_close = cl_close,
    .region_alloc = cl_region_alloc,
    .region_free = cl_region_free,
    .write = cl_write,
    .read = cl_read,
    .copy = cl_copy,
    .copy_rows = pdnn__cl_copy_rows,
    .synchronize = cl_sync,
    .in_order = 1,
    .algos = {[PDNN__OP_CONV2D_FWD] = cl_conv_algos,
              [PDNN__OP_POOL2D_FWD] = cl_pool_algos,
              [PDNN__OP_CONV2D_BWD_DATA] = cl_conv_bwd_data_algos,
              [PDNN__OP_CONV2D_BWD_FILTER] = cl_conv_bwd_filter_algos,
              [PDNN__OP_CONV2D_BWD_BIAS] = cl_conv_bwd_bias_algos,
              [PDNN__OP_POOL2D_BWD] = cl_pool_bwd_algos,
              [PDNN__OP_BN_FWD_TRAIN] = cl_bn_fwd_train_algos,
              [PDNN__OP_BN_FWD_INFER] = cl_bn_fwd_infer_algos,
              [PDNN__OP_BN_BWD] = cl_bn_bwd_algos,
              [PDNN__OP_RELU_BWD] = cl_relu_bwd_algos,
              [PDNN__OP_SOFTMAX_XENT] = cl_softmax_xent_algos,
              [PDNN__OP_OPTIMIZER] = cl_optimizer_algos,
              [PDNN__OP_GEMM] = cl_matmul_algos,
              [PDNN__OP_SCALE] = cl_scale_algos,
              [PDNN__OP_ACTIVATION] = cl_activation_algos,
              [PDNN__OP_TRANSFORM] = cl_transform_algos,
              [PDNN__OP_BINARY] = cl_binary_algos,
              [PDNN__OP_PAD] = cl_pad_algos,
              [PDNN__OP_ND_TRANSPOSE] = cl_transpose_algos,
              [PDNN__OP_ND_SOFTMAX] = cl_softmax_algos,
              [PDNN__OP_ND_LAYER_NORM] = cl_layer_norm_algos,
              [PDNN__OP_ND_REDUCE] = cl_reduce_algos,
              [PDNN__OP_INDEX] = cl_index_algos,
              [PDNN__OP_WHERE] = cl_where_algos,
              [PDNN__OP_CAST] = cl_cast_algos,
              [PDNN__OP_ND_LAYER_NORM_BWD] = cl_layer_norm_bwd_algos},
    .add = pdnn__cl_add,
    .bias_add = pdnn__cl_bias_add,
    .relu = pdnn__cl_relu,
    .softmax = pdnn__cl_softmax,
    .measure_peak = pdnn__cl_measure_peak,
};
