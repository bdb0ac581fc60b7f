/* The OpenCL backend: every platform's devices, one context and in-order
 * queue per device, programs built once per device from the embedded
 * kernels_cl/ sources, and the hand-written kernels enqueued on
 * (buffer, offset) pairs. */
#include "backends/opencl/cl_internal.h"
#include "backends/opencl/cl_sources.h"
#include "tuning.h"

#ifdef PDNN_HAVE_CLBLAST
#include <clblast_c.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <time.h>


/* The tiled kernel's tunable choices (conv2d_tiled.cl: TQ pixels x KB
 * float16 channel blocks per work-item). Accumulators stay at or under
 * 24 vectors so that they and the filter vectors fit AVX-512's 32
 * registers; GPUs spill less with the small ones. */
typedef struct tiled_cfg {
    int tq, kb;
} tiled_cfg;
static const tiled_cfg tiled_cands[] = {{8, 1}, {4, 1}, {12, 1}, {16, 1}, {4, 2}, {6, 2}, {8, 2}, {12, 2}, {6, 4}};
_Static_assert(sizeof tiled_cands / sizeof tiled_cands[0] == N_TILED, "N_TILED in cl_internal.h");


static const char *const kernel_names[K_COUNT] = {
    "conv2d_direct", "pool2d_direct", "conv2d_pack_filter", "conv2d_im2col", "conv2d_gemm_epilogue",
    "ew_add",        "ew_bias_add",   "ew_relu",            "softmax_mid",   "matmul_naive",  "pool2d_fast",   "pool2d_nhwc_rows", "pool2d_nchw_rows"};

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

/* Maps a failed call to a status: allocation failures are out-of-memory,
 * everything else is a backend error naming the call. */
pdnn_status pdnn__cl_fail(const char *call, cl_int err)
{
    pdnn_status st = (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                      err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE)
                         ? PDNN_ERR_OUT_OF_MEMORY
                         : PDNN_ERR_BACKEND;
    return pdnn__error(st, "OpenCL: %s failed with %s (%d)", call, pdnn__cl_error_name(err), (int)err);
}

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
    pdnn__cl_program_cache_flush(d);
    for (int i = 0; i < K_COUNT; i++)
        if (d->kernels[i])
            clReleaseKernel(d->kernels[i]);
    if (d->program)
        clReleaseProgram(d->program);
    for (int i = 0; i < N_TILED; i++) {
        if (d->tiled_pack[i])
            clReleaseKernel(d->tiled_pack[i]);
        if (d->tiled_conv[i])
            clReleaseKernel(d->tiled_conv[i]);
        if (d->tiled_prog[i])
            clReleaseProgram(d->tiled_prog[i]);
    }
    pdnn__cl_gemm1x1_release(d);
    pdnn__cl_igemm_release(d);
    for (int i = 0; i < CL_SLOT_COUNT; i++) {
        for (int j = 0; j < CL_SLOT_KERNELS; j++)
            if (d->slot_kernels[i][j])
                clReleaseKernel(d->slot_kernels[i][j]);
        if (d->slot_prog[i])
            clReleaseProgram(d->slot_prog[i]);
    }
    if (d->queue)
        clReleaseCommandQueue(d->queue);
    if (d->ctx)
        clReleaseContext(d->ctx);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static pdnn_status dev_open(cl_device_id id, cl_dev **out)
{
    cl_dev *d = calloc(1, sizeof *d);
    if (!d)
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "OpenCL: out of host memory");
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
    char vendor[128], name[128], driver[96];
    info_string(id, CL_DEVICE_VENDOR, vendor, sizeof vendor);
    info_string(id, CL_DEVICE_NAME, name, sizeof name);
    info_string(id, CL_DRIVER_VERSION, driver, sizeof driver);
    snprintf(d->tune_key, sizeof d->tune_key, "%s|%s|%s", vendor, name, driver);
    for (char *t = d->tune_key; *t; t++)
        if (*t == '\t' || *t == '\n' || *t == '\r')
            *t = ' ';
    cl_device_type type = 0;
    clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    d->type = type;
    /* Untuned defaults: on CPUs 12 pixels x 16 channels, the tuner's most
     * frequent pick over ResNet-50 on PoCL (bench/results-conv.md); on
     * GPUs the smallest tile, which keeps the most work-items resident. */
    d->tiled_default = (type & CL_DEVICE_TYPE_CPU) ? 2 : 1;
    pdnn__cl_gemm1x1_init(d);
    pdnn__cl_igemm_init(d);
    *out = d;
    return PDNN_SUCCESS;
}

static pdnn_status cl_enumerate(void ***devs, pdnn__device_props **props, int *n, const char **why)
{
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
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "OpenCL: out of host memory");
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
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "OpenCL: out of host memory");
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

/* ---- programs ---------------------------------------------------------- */

/* Reads $POLYDNN_KERNEL_DIR/name into a malloc'd string. */
static pdnn_status read_override(const char *dir, const char *name, char **out, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return pdnn__error(PDNN_ERR_NOT_FOUND,
                           "OpenCL: POLYDNN_KERNEL_DIR is set but %s cannot be opened", path);
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

/* The sources of the main program, built on first use: what every op
 * needs. The others (tiled configurations, Winograd, depthwise, 1x1 GEMM,
 * peak) are programs of their own, built only when an op picks them, so
 * that they do not slow down the first op. */
static int in_main_program(const char *name)
{
    return strcmp(name, "conv2d.cl") == 0 || strcmp(name, "pool2d.cl") == 0 || strcmp(name, "elementwise.cl") == 0;
}

static pdnn_status build_program(cl_dev *d)
{
    const char *dir = getenv("POLYDNN_KERNEL_DIR");
    const size_t n = pdnn__cl_source_count;
    const char **texts = calloc(n, sizeof *texts);
    size_t *lens = calloc(n, sizeof *lens);
    char **owned = calloc(n, sizeof *owned);
    if (!texts || !lens || !owned) {
        free(texts);
        free(lens);
        free(owned);
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    }
    pdnn_status st = PDNN_SUCCESS;
    cl_uint used = 0;
    char what[128] = ""; /* "conv2d.cl+pool2d.cl+elementwise.cl" */
    for (size_t i = 0; st == PDNN_SUCCESS && i < n; i++) {
        if (!in_main_program(pdnn__cl_sources[i].name))
            continue;
        if (dir && *dir) {
            st = read_override(dir, pdnn__cl_sources[i].name, &owned[used], &lens[used]);
            texts[used] = owned[used];
        } else {
            texts[used] = pdnn__cl_sources[i].text;
            lens[used] = pdnn__cl_sources[i].len;
        }
        const size_t wl = strlen(what);
        snprintf(what + wl, sizeof what - wl, "%s%s", used ? "+" : "", pdnn__cl_sources[i].name);
        used++;
    }
    if (st == PDNN_SUCCESS)
        st = pdnn__cl_program_cached(d, texts, lens, used, "-cl-std=CL1.2", what, &d->program);
    cl_int err = CL_SUCCESS;
    for (int i = 0; st == PDNN_SUCCESS && i < K_COUNT; i++) {
        d->kernels[i] = clCreateKernel(d->program, kernel_names[i], &err);
        if (!d->kernels[i]) {
            char call[96];
            snprintf(call, sizeof call, "clCreateKernel(%s)", kernel_names[i]);
            st = pdnn__cl_fail(call, err);
        }
    }
    if (st != PDNN_SUCCESS) {
        /* Leave the device as it was so a later call may retry. */
        for (int i = 0; i < K_COUNT; i++) {
            if (d->kernels[i])
                clReleaseKernel(d->kernels[i]);
            d->kernels[i] = NULL;
        }
        if (d->program)
            clReleaseProgram(d->program);
        d->program = NULL;
    }
    for (size_t i = 0; i < n; i++)
        free(owned[i]);
    free(owned);
    free(texts);
    free(lens);
    return st;
}

/* ---- memory ------------------------------------------------------------ */

static pdnn_status cl_region_alloc(void *dev, size_t bytes, void **region)
{
    cl_dev *d = dev;
    cl_int err;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!m)
        return pdnn__cl_fail("clCreateBuffer", err);
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

/* ---- ops ---------------------------------------------------------------- */



/* Sets args and enqueues a 1-D launch of total work-items, rounded up to
 * the work-group size (the kernels bound-check). Called with d->lock held. */
pdnn_status pdnn__cl_launch(cl_dev *d, cl_kernel k, const char *name, int64_t total)
{
    size_t wg = 0;
    if (clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) != CL_SUCCESS)
        wg = 1;
    size_t local = 64;
    while (local > 1 && (local > wg || local > d->max_wg))
        local /= 2;
    size_t global = ((size_t)total + local - 1) / local * local;
    cl_int err = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "clEnqueueNDRangeKernel(%s)", name);
        return pdnn__cl_fail(call, err);
    }
    return PDNN_SUCCESS;
}


static pdnn_status ensure_program(cl_dev *d)
{
    return d->program ? PDNN_SUCCESS : build_program(d);
}

/* Called with d->lock held and the program built. */
static pdnn_status conv_direct(cl_dev *d, const pdnn__conv2d_call *c)
{
    pdnn_status st;
    cl_kernel k = d->kernels[K_CONV_DIRECT];
    cl_mem x = c->x_buf.region, w = c->w_buf.region, y = c->y_buf.region;
    /* Without a bias any valid buffer will do; the kernel does not read it. */
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : w;
    cl_long xo = elem_off(c->x_buf), wo = elem_off(c->w_buf), yo = elem_off(c->y_buf);
    cl_long bo = c->bias_buf.region ? elem_off(c->bias_buf) : 0;
    cl_long4 xs = strides4(c->xs), ws = strides4(c->ws), ys = strides4(c->ys);
    cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
    cl_int4 out_dims = int4_of((int)c->k, (int)c->p, (int)c->q, c->y_layout == PDNN_NHWC);
    cl_int4 filt = int4_of((int)c->r, (int)c->s, (int)(c->c / c->groups), (int)(c->k / c->groups));
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    cl_int4 misc = int4_of(c->pad_top, c->pad_left, c->bias_buf.region != NULL, c->relu);
    cl_long total = c->n * c->k * c->p * c->q;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, w);
    SET_ARG(k, 3, wo);
    SET_ARG(k, 4, b);
    SET_ARG(k, 5, bo);
    SET_ARG(k, 6, y);
    SET_ARG(k, 7, yo);
    SET_ARG(k, 8, xs);
    SET_ARG(k, 9, ws);
    SET_ARG(k, 10, ys);
    SET_ARG(k, 11, in_dims);
    SET_ARG(k, 12, out_dims);
    SET_ARG(k, 13, filt);
    SET_ARG(k, 14, geom);
    SET_ARG(k, 15, misc);
    SET_ARG(k, 16, total);
    st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_direct", total) : pdnn__cl_fail("clSetKernelArg(conv2d_direct)", err);
    return st;
}


#ifdef PDNN_HAVE_CLBLAST /* only im2col + GEMM needs it; unused otherwise */
/* Workspace of im2col + GEMM, in floats: the repacked filter, one image's
 * columns and one image's GEMM result. */
static int64_t gemm_workspace_floats(const pdnn__conv2d_call *c)
{
    const int64_t cpg = c->c / c->groups, rs = c->r * c->s, pq = c->p * c->q;
    return c->k * cpg * rs + c->c * rs * pq + c->k * pq;
}
#endif

/* ---- tiled convolution and its tuning ------------------------------------ */

/* Output channels a work-item covers, the unit the filter is packed in. */
static int64_t tiled_kv(int i) { return 16 * (int64_t)tiled_cands[i].kb; }
static int64_t tiled_kp(const pdnn__conv2d_call *c, int i) { return (c->k + tiled_kv(i) - 1) / tiled_kv(i) * tiled_kv(i); }

/* A HWIO filter with whole channel blocks is read in place: no packing. */
static int tiled_in_place(const pdnn__conv2d_call *c, int i)
{
    return c->w_layout == PDNN_HWIO && c->k % tiled_kv(i) == 0;
}

/* Whether configuration i can run c: a work-item's channels must share a
 * group, and the kernel's int indices must not overflow. */
static int tiled_applies(const pdnn__conv2d_call *c, int i)
{
    const int64_t kpg = c->k / c->groups, tq = tiled_cands[i].tq;
    return (c->groups == 1 || kpg % tiled_kv(i) == 0) && tiled_kp(c, i) <= INT32_MAX / 2 &&
           c->p * c->q <= INT32_MAX / 2 && c->n * ((c->p * c->q + tq - 1) / tq) <= INT32_MAX / 2;
}

static size_t tiled_ws(const pdnn__conv2d_call *c, int i)
{
    return tiled_in_place(c, i) ? 0 : (size_t)(c->r * c->s * (c->c / c->groups) * tiled_kp(c, i)) * sizeof(float);
}

/* The tuning cache's key for c: everything that changes the best tile. */
static void tiled_shape_key(const pdnn__conv2d_call *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s/%s n%lld c%lld h%lld w%lld k%lld r%lld s%lld u%d,%d p%d,%d d%d,%d g%lld",
             pdnn_layout_name(c->x_layout), pdnn_layout_name(c->w_layout), pdnn_layout_name(c->y_layout),
             (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w, (long long)c->k, (long long)c->r,
             (long long)c->s, c->stride_h, c->stride_w, c->pad_top, c->pad_left, c->dil_h, c->dil_w,
             (long long)c->groups);
}

/* Test hook: a configuration index every tiled conv uses where it
 * applies (-1: none), so the parity suite covers each one. */
static _Atomic int forced_tiled = -1;

int pdnn__opencl_tiled_configs(int (*out)[2], int max)
{
    for (int i = 0; i < N_TILED && i < max; i++) {
        out[i][0] = tiled_cands[i].tq;
        out[i][1] = tiled_cands[i].kb;
    }
    return N_TILED;
}

void pdnn__opencl_force_tiled(int tq, int kb)
{
    int f = -1;
    for (int i = 0; i < N_TILED; i++)
        if (tiled_cands[i].tq == tq && tiled_cands[i].kb == kb)
            f = i;
    forced_tiled = f;
}

/* Defined below, with the functions it names. */
static const pdnn__cl_tunable tiled_tunable;

/* Which configuration runs c: the cached tuning result where there is a
 * valid one (unless tuning is off; under FORCE only one this process
 * stored), with *cached = 1, else the device class's default, or
 * *search = 1 when the caller should tune now. -1 if none applies. */
static int tiled_pick(cl_dev *d, const pdnn__conv2d_call *c, int *search, int *cached)
{
    int dflt = tiled_applies(c, d->tiled_default) ? d->tiled_default : -1;
    for (int i = 0; dflt < 0 && i < N_TILED; i++)
        if (tiled_cands[i].kb == 1 && tiled_applies(c, i))
            dflt = i;
    return pdnn__cl_pick(d, c, &tiled_tunable, dflt, forced_tiled, search, cached);
}

/* The embedded source `file`, or its copy in POLYDNN_KERNEL_DIR (which
 * wins, as for the main program); *owned is what to free. */
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

pdnn_status pdnn__cl_build_source(cl_dev *d, const char *file, const char *opts, cl_program *out)
{
    const char *text = NULL;
    size_t len = 0;
    char *owned = NULL;
    pdnn_status st = source_of(file, &text, &len, &owned);
    if (st != PDNN_SUCCESS)
        return st;
    char full[256];
    /* -w: PoCL prints warnings (e.g. float16 ABI notes on AVX2) on stderr */
    snprintf(full, sizeof full, "-cl-std=CL1.2 -w %s", opts ? opts : "");
    st = pdnn__cl_program_cached(d, &text, &len, 1, full, file, out);
    free(owned);
    return st;
}

pdnn_status pdnn__cl_build_kernels(cl_dev *d, const char *file, const char *opts, const char *const *names, int n,
                                   cl_program *prog, cl_kernel *kernels)
{
    cl_program p = NULL;
    pdnn_status st = pdnn__cl_build_source(d, file, opts, &p);
    if (st != PDNN_SUCCESS)
        return st;
    for (int i = 0; i < n; i++) {
        cl_int err = CL_SUCCESS;
        kernels[i] = clCreateKernel(p, names[i], &err);
        if (!kernels[i]) {
            char call[128];
            snprintf(call, sizeof call, "clCreateKernel(%s)", names[i]);
            st = pdnn__cl_fail(call, err);
            for (int j = 0; j < i; j++) {
                clReleaseKernel(kernels[j]);
                kernels[j] = NULL;
            }
            clReleaseProgram(p);
            return st;
        }
    }
    *prog = p;
    return PDNN_SUCCESS;
}

pdnn_status pdnn__cl_build_slot(cl_dev *d, enum cl_slot slot, const char *file, const char *opts,
                                const char *const *names, int n)
{
    if (d->slot_prog[slot])
        return PDNN_SUCCESS;
    if (n > CL_SLOT_KERNELS)
        return pdnn__error(PDNN_ERR_INTERNAL, "OpenCL: %s asks for %d kernels, a slot holds %d", file, n,
                           CL_SLOT_KERNELS);
    return pdnn__cl_build_kernels(d, file, opts, names, n, &d->slot_prog[slot], d->slot_kernels[slot]);
}

/* Builds configuration i's program and kernels. Called with d->lock held. */
static pdnn_status tiled_build(cl_dev *d, int i)
{
    if (d->tiled_conv[i])
        return PDNN_SUCCESS;
    char opts[64];
    snprintf(opts, sizeof opts, "-DTQ=%d -DKB=%d", tiled_cands[i].tq, tiled_cands[i].kb);
    static const char *const names[] = {"conv2d_pack_rsck", "conv2d_tiled"};
    cl_kernel k[2] = {NULL, NULL};
    pdnn_status st = pdnn__cl_build_kernels(d, "conv2d_tiled.cl", opts, names, 2, &d->tiled_prog[i], k);
    d->tiled_pack[i] = k[0];
    d->tiled_conv[i] = k[1];
    return st;
}

/* Enqueues c with configuration i (built). Called with d->lock held. */
static pdnn_status tiled_enqueue(cl_dev *d, const pdnn__conv2d_call *c, int i)
{
    const int64_t cpg = c->c / c->groups, kv = tiled_kv(i), tq = tiled_cands[i].tq;
    cl_int err = CL_SUCCESS;
    cl_kernel k;
    cl_mem wsb;
    cl_long wp_off;
    cl_long4 wstr;
    if (tiled_in_place(c, i)) {
        wsb = c->w_buf.region;
        wp_off = elem_off(c->w_buf);
        wstr.s[0] = kv;
        wstr.s[1] = c->ws[3]; /* (r, s) is one step of s; r steps are S of them */
        wstr.s[2] = c->ws[1];
        wstr.s[3] = 0;
    } else {
        const int64_t kp = tiled_kp(c, i);
        wsb = c->workspace.region;
        wp_off = elem_off(c->workspace);
        wstr.s[0] = c->r * c->s * cpg * kv;
        wstr.s[1] = cpg * kv;
        wstr.s[2] = kv;
        wstr.s[3] = 0;
        k = d->tiled_pack[i];
        cl_mem w = c->w_buf.region;
        cl_long wo = elem_off(c->w_buf);
        cl_long4 wst = strides4(c->ws);
        cl_int4 filt = int4_of((int)c->r, (int)c->s, (int)cpg, (int)c->k);
        cl_int kpi = (cl_int)kp;
        cl_long total = c->r * c->s * cpg * kp;
        SET_ARG(k, 0, w);
        SET_ARG(k, 1, wo);
        SET_ARG(k, 2, wst);
        SET_ARG(k, 3, wsb);
        SET_ARG(k, 4, wp_off);
        SET_ARG(k, 5, filt);
        SET_ARG(k, 6, kpi);
        SET_ARG(k, 7, total);
        pdnn_status st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_pack_rsck", total)
                                           : pdnn__cl_fail("clSetKernelArg(conv2d_pack_rsck)", err);
        if (st != PDNN_SUCCESS)
            return st;
    }
    k = d->tiled_conv[i];
    cl_mem x = c->x_buf.region, y = c->y_buf.region;
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : x;
    cl_long xo = elem_off(c->x_buf), yo = elem_off(c->y_buf);
    cl_long bo = c->bias_buf.region ? elem_off(c->bias_buf) : 0;
    cl_long4 xs = strides4(c->xs), ys = strides4(c->ys);
    const int pb = (int)((c->p * c->q + tq - 1) / tq);
    cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
    cl_int4 out_dims = int4_of((int)c->k, (int)c->p, (int)c->q, pb);
    cl_int4 tf = int4_of((int)c->r, (int)c->s, (int)cpg, (int)(c->k / c->groups));
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    cl_int4 misc = int4_of(c->pad_top, c->pad_left, c->bias_buf.region != NULL, c->relu);
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, wsb);
    SET_ARG(k, 3, wp_off);
    SET_ARG(k, 4, b);
    SET_ARG(k, 5, bo);
    SET_ARG(k, 6, y);
    SET_ARG(k, 7, yo);
    SET_ARG(k, 8, xs);
    SET_ARG(k, 9, ys);
    SET_ARG(k, 10, in_dims);
    SET_ARG(k, 11, out_dims);
    SET_ARG(k, 12, tf);
    SET_ARG(k, 13, geom);
    SET_ARG(k, 14, misc);
    SET_ARG(k, 15, wstr);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(conv2d_tiled)", err);
    /* Dimension 0: channel blocks; dimension 1: pixel blocks. Each
     * work-item already fills the SIMD width itself, so work-groups are one
     * channel block by a few pixel blocks. */
    size_t local[2] = {1, 4};
    size_t gy = (size_t)(c->n * pb);
    size_t global[2] = {(size_t)(tiled_kp(c, i) / kv), (gy + 3) / 4 * 4};
    err = clEnqueueNDRangeKernel(d->queue, k, 2, NULL, global, local, 0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueNDRangeKernel(conv2d_tiled)", err);
}


static _Thread_local char last_tiled[48];

const char *pdnn__opencl_last_tiled(void) { return last_tiled; }

static int tiled_usable(const pdnn__conv2d_call *c, int i)
{
    return tiled_applies(c, i) && tiled_ws(c, i) <= c->workspace_bytes;
}

static void tiled_name(int i, char *buf, size_t len)
{
    snprintf(buf, len, "tq=%d kb=%d", tiled_cands[i].tq, tiled_cands[i].kb);
}

static const pdnn__cl_tunable tiled_tunable = {"conv2d_tiled", N_TILED, tiled_applies, tiled_usable, tiled_build,
                                               tiled_enqueue, tiled_name, tiled_shape_key};

static pdnn_status conv_tiled(cl_dev *d, const pdnn__conv2d_call *c)
{
    int search = 0, cached = 0;
    int i = tiled_pick(d, c, &search, &cached);
    if (i < 0)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "OpenCL: no tiled configuration runs this convolution");
    if (search)
        i = pdnn__cl_tune(d, c, &tiled_tunable, i);
    if (tiled_ws(c, i) > c->workspace_bytes) {
        /* Tuned by another thread since the workspace was sized: the
         * 16-channel configurations need the least. */
        for (int j = 0; j < N_TILED; j++)
            if (tiled_cands[j].kb == 1 && tiled_applies(c, j)) {
                i = j;
                cached = 0;
                break;
            }
    }
    pdnn_status st = tiled_build(d, i);
    if (st == PDNN_SUCCESS)
        st = tiled_enqueue(d, c, i);
    if (st == PDNN_SUCCESS) {
        snprintf(last_tiled, sizeof last_tiled, "tq=%d kb=%d", tiled_cands[i].tq, tiled_cands[i].kb);
        if (c->tuning_out) {
            c->tuning_out->tunable = 1;
            c->tuning_out->cached = cached;
            snprintf(c->tuning_out->config, sizeof c->tuning_out->config, "%s", last_tiled);
        }
    }
    return st;
}

static size_t cl_conv2d_workspace(void *dev, const pdnn__conv2d_call *c, pdnn_conv_algo algo)
{
    if (algo == PDNN_CONV_ALGO_DIRECT)
        return 0;
    if (algo == PDNN_CONV_ALGO_WINOGRAD)
        return pdnn__cl_winograd_workspace(dev, c);
    if (algo == PDNN_CONV_ALGO_GEMM_1X1)
        return pdnn__cl_gemm1x1_workspace(dev, c);
    if (algo == PDNN_CONV_ALGO_DEPTHWISE)
        return pdnn__cl_depthwise_workspace(dev, c);
    if (algo == PDNN_CONV_ALGO_IMPLICIT_GEMM)
        return pdnn__cl_igemm_workspace(dev, c);
    if (algo == PDNN_CONV_ALGO_TILED) {
        cl_dev *d = dev;
        int search = 0, cached = 0;
        int i = tiled_pick(d, c, &search, &cached);
        if (i < 0)
            return SIZE_MAX;
        size_t ws = tiled_ws(c, i);
        for (int j = 0; search && j < N_TILED; j++) /* tuning tries them all */
            if (tiled_applies(c, j) && tiled_ws(c, j) > ws)
                ws = tiled_ws(c, j);
        return ws;
    }
#ifdef PDNN_HAVE_CLBLAST
    if (algo == PDNN_CONV_ALGO_IM2COL_GEMM) {
        int64_t f = gemm_workspace_floats(c);
        /* Kernel indices are long, GEMM sizes size_t: keep within both. */
        if (f > INT64_MAX / 8 || (uint64_t)f * sizeof(float) > SIZE_MAX / 2)
            return SIZE_MAX;
        return (size_t)f * sizeof(float);
    }
#else
    (void)c;
#endif
    return SIZE_MAX;
}

#ifdef PDNN_HAVE_CLBLAST
/* For each image: unfold it into columns, one SGEMM per group, then the
 * bias/ReLU epilogue writes the image in y's layout. Called with d->lock
 * held and the program built. */
static pdnn_status conv_im2col_gemm(cl_dev *d, const pdnn__conv2d_call *c)
{
    const int64_t cpg = c->c / c->groups, kpg = c->k / c->groups, rs = c->r * c->s, pq = c->p * c->q;
    cl_mem ws = c->workspace.region;
    const cl_long wp_off = elem_off(c->workspace);
    const cl_long col_off = wp_off + c->k * cpg * rs;
    const cl_long tmp_off = col_off + c->c * rs * pq;
    cl_int err = CL_SUCCESS;

    cl_kernel k = d->kernels[K_PACK_FILTER];
    cl_mem w = c->w_buf.region;
    cl_long wo = elem_off(c->w_buf);
    cl_long4 wst = strides4(c->ws);
    cl_int4 filt = int4_of((int)c->r, (int)c->s, (int)cpg, (int)c->k);
    cl_long total = c->k * cpg * rs;
    SET_ARG(k, 0, w);
    SET_ARG(k, 1, wo);
    SET_ARG(k, 2, wst);
    SET_ARG(k, 3, ws);
    SET_ARG(k, 4, wp_off);
    SET_ARG(k, 5, filt);
    SET_ARG(k, 6, total);
    pdnn_status st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_pack_filter", total)
                                       : pdnn__cl_fail("clSetKernelArg(conv2d_pack_filter)", err);

    cl_mem x = c->x_buf.region, y = c->y_buf.region;
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : x;
    cl_long xo = elem_off(c->x_buf), yo = elem_off(c->y_buf);
    cl_long bo = c->bias_buf.region ? elem_off(c->bias_buf) : 0;
    cl_long4 xs = strides4(c->xs), ys = strides4(c->ys);
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    cl_int2 pad;
    pad.s[0] = c->pad_top;
    pad.s[1] = c->pad_left;
    cl_int2 flags;
    flags.s[0] = c->bias_buf.region != NULL;
    flags.s[1] = c->relu;
    cl_int4 out_dims = int4_of((int)c->p, (int)c->q, (int)c->r, (int)c->s);
    cl_long col_total = c->c * rs * pq, tmp_total = c->k * pq;
    for (int64_t n = 0; st == PDNN_SUCCESS && n < c->n; n++) {
        k = d->kernels[K_IM2COL];
        cl_int4 in_dims = int4_of((int)n, (int)c->c, (int)c->h, (int)c->w);
        SET_ARG(k, 0, x);
        SET_ARG(k, 1, xo);
        SET_ARG(k, 2, xs);
        SET_ARG(k, 3, ws);
        SET_ARG(k, 4, col_off);
        SET_ARG(k, 5, in_dims);
        SET_ARG(k, 6, out_dims);
        SET_ARG(k, 7, geom);
        SET_ARG(k, 8, pad);
        SET_ARG(k, 9, col_total);
        st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_im2col", col_total) : pdnn__cl_fail("clSetKernelArg(conv2d_im2col)", err);
        for (int64_t g = 0; st == PDNN_SUCCESS && g < c->groups; g++) {
            /* tmp[g] (kpg x PQ) = wpack[g] (kpg x cpg*RS) * col[g] (cpg*RS x PQ) */
            CLBlastStatusCode bs = CLBlastSgemm(
                CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, (size_t)kpg, (size_t)pq,
                (size_t)(cpg * rs), 1.0f, ws, (size_t)(wp_off + g * kpg * cpg * rs), (size_t)(cpg * rs), ws,
                (size_t)(col_off + g * cpg * rs * pq), (size_t)pq, 0.0f, ws, (size_t)(tmp_off + g * kpg * pq),
                (size_t)pq, &d->queue, NULL);
            if (bs != CLBlastSuccess)
                st = pdnn__error(bs == CLBlastOpenCLOutOfResources || bs == CLBlastOpenCLOutOfHostMemory
                                     ? PDNN_ERR_OUT_OF_MEMORY
                                     : PDNN_ERR_BACKEND,
                                 "OpenCL: CLBlastSgemm failed with status %d", (int)bs);
        }
        if (st != PDNN_SUCCESS)
            break;
        k = d->kernels[K_GEMM_EPILOGUE];
        cl_int4 dims = int4_of((int)n, (int)c->k, (int)c->p, (int)c->q);
        SET_ARG(k, 0, ws);
        SET_ARG(k, 1, tmp_off);
        SET_ARG(k, 2, b);
        SET_ARG(k, 3, bo);
        SET_ARG(k, 4, y);
        SET_ARG(k, 5, yo);
        SET_ARG(k, 6, ys);
        SET_ARG(k, 7, dims);
        SET_ARG(k, 8, flags);
        SET_ARG(k, 9, tmp_total);
        st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_gemm_epilogue", tmp_total)
                               : pdnn__cl_fail("clSetKernelArg(conv2d_gemm_epilogue)", err);
    }
    return st;
}
#endif

static pdnn_status cl_conv2d(void *dev, const pdnn__conv2d_call *c)
{
    cl_dev *d = dev;
    pthread_mutex_lock(&d->lock);
    pdnn_status st = ensure_program(d);
    if (st == PDNN_SUCCESS) {
        if (c->algo == PDNN_CONV_ALGO_TILED)
            st = conv_tiled(d, c);
        else if (c->algo == PDNN_CONV_ALGO_WINOGRAD)
            st = pdnn__cl_winograd(d, c);
        else if (c->algo == PDNN_CONV_ALGO_GEMM_1X1)
            st = pdnn__cl_gemm1x1(d, c);
        else if (c->algo == PDNN_CONV_ALGO_DEPTHWISE)
            st = pdnn__cl_depthwise(d, c);
        else if (c->algo == PDNN_CONV_ALGO_IMPLICIT_GEMM)
            st = pdnn__cl_igemm(d, c);
#ifdef PDNN_HAVE_CLBLAST
        else if (c->algo == PDNN_CONV_ALGO_IM2COL_GEMM)
            st = conv_im2col_gemm(d, c);
#endif
        else
            st = conv_direct(d, c);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status cl_pool2d(void *dev, const pdnn__pool2d_call *c)
{
    cl_dev *d = dev;
    pthread_mutex_lock(&d->lock);
    pdnn_status st = ensure_program(d);
    if (st != PDNN_SUCCESS) {
        pthread_mutex_unlock(&d->lock);
        return st;
    }
    cl_kernel k = d->kernels[K_POOL_DIRECT];
    cl_mem x = c->x_buf.region, y = c->y_buf.region;
    cl_long xo = elem_off(c->x_buf), yo = elem_off(c->y_buf);
    cl_long4 xs = strides4(c->xs), ys = strides4(c->ys);
    cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
    cl_int4 out_dims = int4_of((int)c->p, (int)c->q, (int)c->mode, c->y_layout == PDNN_NHWC);
    cl_int4 win = int4_of(c->win_h, c->win_w, c->stride_h, c->stride_w);
    cl_int4 pad = int4_of(c->pad_top, c->pad_left, c->pad_bottom, c->pad_right);
    cl_long total = c->n * c->c * c->p * c->q;
    cl_int err = CL_SUCCESS;
    const int nhwc = c->x_layout == PDNN_NHWC;
    /* Every index the fast kernels compute in int stays in range (always,
     * but for tensors of billions of elements). */
    const int fast = c->n * c->p < INT32_MAX && c->n * c->c < INT32_MAX && c->c + 64 < INT32_MAX &&
                     c->q + 64 < INT32_MAX && c->h < INT32_MAX / 4 && c->w < INT32_MAX / 4;
    /* The row kernels need the contiguous axis (channels for NHWC, rows
     * for NCHW); the NCHW one also a horizontal stride of 1 or 2 and a
     * window its registers hold. */
    const int rows = fast && (nhwc ? c->xs[1] == 1
                                   : c->xs[3] == 1 && ((c->stride_w == 1 && c->win_w <= 9) ||
                                                       (c->stride_w == 2 && c->win_w <= 17)));
    if (rows) {
        /* A whole output row per work-item on CPUs (PoCL pays per work-group
         * and per item, and one row is a few hundred bytes to a few KB);
         * one 16-output chunk (NCHW) or 2 pixels (NHWC) on GPUs, which
         * need tens of thousands of items in flight. */
        const int cpu = (d->type & CL_DEVICE_TYPE_CPU) != 0;
        const int64_t run = nhwc ? (cpu ? c->q : 2) : (cpu ? (c->q + 15) / 16 * 16 : 16);
        const int64_t runs = (c->q + run - 1) / run;
        /* NHWC channels per item: all of them on CPUs, so an item streams
         * through whole pixels; one vector's worth on GPUs. */
        const cl_int cpi = cpu ? (cl_int)c->c : 8;
        const int64_t items = nhwc ? c->n * c->p * runs * ((c->c + cpi - 1) / cpi) : c->n * c->c * c->p * runs;
        k = d->kernels[nhwc ? K_POOL_NHWC_ROWS : K_POOL_NCHW_ROWS];
        out_dims = int4_of((int)c->p, (int)c->q, (int)c->mode, (int)run);
        SET_ARG(k, 0, x);
        SET_ARG(k, 1, xo);
        SET_ARG(k, 2, y);
        SET_ARG(k, 3, yo);
        SET_ARG(k, 4, xs);
        SET_ARG(k, 5, ys);
        SET_ARG(k, 6, in_dims);
        SET_ARG(k, 7, out_dims);
        SET_ARG(k, 8, win);
        SET_ARG(k, 9, pad);
        if (nhwc)
            SET_ARG(k, 10, cpi);
        if (err != CL_SUCCESS) {
            pthread_mutex_unlock(&d->lock);
            return pdnn__cl_fail("clSetKernelArg(pool2d rows)", err);
        }
        const size_t local = cpu ? 4 : 64; /* CPU: 4 measured best of 1/4/16/64 */
        const size_t global = ((size_t)items + local - 1) / local * local;
        err = items > 0 ? clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, &local, 0, NULL, NULL) : CL_SUCCESS;
        pthread_mutex_unlock(&d->lock);
        return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueNDRangeKernel(pool2d rows)", err);
    }
    /* Otherwise the scalar 3-D kernel, the first axis the input's
     * contiguous one where there is one. */
    const int64_t a0 = nhwc ? c->c : c->q, a1 = nhwc ? c->q : c->p, a2 = c->n * (nhwc ? c->p : c->c);
    if (fast) {
        k = d->kernels[K_POOL_FAST];
        out_dims = int4_of((int)c->p, (int)c->q, (int)c->mode, nhwc);
    }
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, y);
    SET_ARG(k, 3, yo);
    SET_ARG(k, 4, xs);
    SET_ARG(k, 5, ys);
    SET_ARG(k, 6, in_dims);
    SET_ARG(k, 7, out_dims);
    SET_ARG(k, 8, win);
    SET_ARG(k, 9, pad);
    if (fast) {
        if (err != CL_SUCCESS) {
            pthread_mutex_unlock(&d->lock);
            return pdnn__cl_fail("clSetKernelArg(pool2d)", err);
        }
        /* 16 along the contiguous axis: one AVX-512 vector, four GPU
         * quarter-warps; fewer when the axis is short. */
        const size_t g0 = (size_t)a0;
        size_t l0 = 16;
        while (l0 > 1 && g0 <= l0 / 2)
            l0 /= 2;
        size_t local[3] = {l0, 1, 1};
        size_t global[3] = {(g0 + l0 - 1) / l0 * l0, (size_t)a1, (size_t)a2};
        err = total > 0 ? clEnqueueNDRangeKernel(d->queue, k, 3, NULL, global, local, 0, NULL, NULL) : CL_SUCCESS;
        pthread_mutex_unlock(&d->lock);
        return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueNDRangeKernel(pool2d)", err);
    }
    SET_ARG(k, 10, total);
    st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "pool2d_direct", total) : pdnn__cl_fail("clSetKernelArg(pool2d_direct)", err);
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* ---- the ops around convolution (kernels_cl/elementwise.cl) ------------- */

/* Takes d->lock and builds the program; on success the caller holds the
 * lock (finish_launch releases it). */
static pdnn_status lock_program(cl_dev *d)
{
    pthread_mutex_lock(&d->lock);
    pdnn_status st = ensure_program(d);
    if (st != PDNN_SUCCESS)
        pthread_mutex_unlock(&d->lock);
    return st;
}

/* Launches kernel id over total work-items if setting its arguments went
 * well (err), then releases d->lock. An empty launch is invalid in OpenCL,
 * so total 0 does nothing. */
static pdnn_status finish_launch(cl_dev *d, enum kernel_id id, cl_int err, int64_t total)
{
    pdnn_status st = PDNN_SUCCESS;
    if (err != CL_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "clSetKernelArg(%s)", kernel_names[id]);
        st = pdnn__cl_fail(call, err);
    } else if (total > 0) {
        st = pdnn__cl_launch(d, d->kernels[id], kernel_names[id], total);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status cl_add(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf y, int64_t n)
{
    cl_dev *d = dev;
    pdnn_status st = lock_program(d);
    if (st != PDNN_SUCCESS)
        return st;
    cl_kernel k = d->kernels[K_ADD];
    cl_mem am = a.region, bm = b.region, ym = y.region;
    cl_long ao = elem_off(a), bo = elem_off(b), yo = elem_off(y), total = n;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, am);
    SET_ARG(k, 1, ao);
    SET_ARG(k, 2, bm);
    SET_ARG(k, 3, bo);
    SET_ARG(k, 4, ym);
    SET_ARG(k, 5, yo);
    SET_ARG(k, 6, total);
    return finish_launch(d, K_ADD, err, total);
}

static pdnn_status cl_bias_add(void *dev, pdnn__buf x, pdnn__buf bias, pdnn__buf y, int64_t n, int64_t c,
                               int64_t inner, int relu)
{
    cl_dev *d = dev;
    pdnn_status st = lock_program(d);
    if (st != PDNN_SUCCESS)
        return st;
    cl_kernel k = d->kernels[K_BIAS_ADD];
    cl_mem xm = x.region, bm = bias.region, ym = y.region;
    cl_long xo = elem_off(x), bo = elem_off(bias), yo = elem_off(y);
    cl_long total = n, c_arg = c, inner_arg = inner;
    cl_int relu_arg = relu != 0;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, bm);
    SET_ARG(k, 3, bo);
    SET_ARG(k, 4, ym);
    SET_ARG(k, 5, yo);
    SET_ARG(k, 6, total);
    SET_ARG(k, 7, c_arg);
    SET_ARG(k, 8, inner_arg);
    SET_ARG(k, 9, relu_arg);
    return finish_launch(d, K_BIAS_ADD, err, total);
}

static pdnn_status cl_relu(void *dev, pdnn__buf x, pdnn__buf y, int64_t n)
{
    cl_dev *d = dev;
    pdnn_status st = lock_program(d);
    if (st != PDNN_SUCCESS)
        return st;
    cl_kernel k = d->kernels[K_RELU];
    cl_mem xm = x.region, ym = y.region;
    cl_long xo = elem_off(x), yo = elem_off(y), total = n;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, ym);
    SET_ARG(k, 3, yo);
    SET_ARG(k, 4, total);
    return finish_launch(d, K_RELU, err, total);
}

static pdnn_status cl_softmax(void *dev, pdnn__buf x, pdnn__buf y, int64_t outer, int64_t c, int64_t inner)
{
    cl_dev *d = dev;
    pdnn_status st = lock_program(d);
    if (st != PDNN_SUCCESS)
        return st;
    cl_kernel k = d->kernels[K_SOFTMAX];
    cl_mem xm = x.region, ym = y.region;
    cl_long xo = elem_off(x), yo = elem_off(y);
    cl_long c_arg = c, inner_arg = inner, total = outer * inner;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, ym);
    SET_ARG(k, 3, yo);
    SET_ARG(k, 4, c_arg);
    SET_ARG(k, 5, inner_arg);
    SET_ARG(k, 6, total);
    /* c == 0 leaves nothing to write (and would divide by zero). */
    return finish_launch(d, K_SOFTMAX, err, c > 0 ? total : 0);
}

/* The fallback GEMM. Called with d->lock held and the program built;
 * releases the lock. */
static pdnn_status matmul_naive(cl_dev *d, pdnn__buf a, pdnn__buf b, pdnn__buf c, int64_t m, int64_t n,
                                int64_t k, int trans_a, int trans_b)
{
    cl_kernel kern = d->kernels[K_MATMUL];
    cl_mem am = a.region, bm = b.region, cm = c.region;
    cl_long ao = elem_off(a), bo = elem_off(b), co = elem_off(c);
    cl_long m_arg = m, n_arg = n, k_arg = k;
    cl_int2 trans;
    trans.s[0] = trans_a != 0;
    trans.s[1] = trans_b != 0;
    cl_int err = CL_SUCCESS;
    SET_ARG(kern, 0, am);
    SET_ARG(kern, 1, ao);
    SET_ARG(kern, 2, bm);
    SET_ARG(kern, 3, bo);
    SET_ARG(kern, 4, cm);
    SET_ARG(kern, 5, co);
    SET_ARG(kern, 6, m_arg);
    SET_ARG(kern, 7, n_arg);
    SET_ARG(kern, 8, k_arg);
    SET_ARG(kern, 9, trans);
    return finish_launch(d, K_MATMUL, err, m * n);
}

#ifdef PDNN_HAVE_CLBLAST
/* Row-major SGEMM with element offsets; leading dimensions are the stored
 * row lengths. Called with d->lock held. */
static pdnn_status matmul_clblast(cl_dev *d, pdnn__buf a, pdnn__buf b, pdnn__buf c, int64_t m, int64_t n,
                                  int64_t k, int trans_a, int trans_b)
{
    CLBlastStatusCode bs = CLBlastSgemm(
        CLBlastLayoutRowMajor, trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
        trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, (size_t)m, (size_t)n, (size_t)k, 1.0f,
        (cl_mem)a.region, (size_t)elem_off(a), (size_t)(trans_a ? m : k), (cl_mem)b.region,
        (size_t)elem_off(b), (size_t)(trans_b ? k : n), 0.0f, (cl_mem)c.region, (size_t)elem_off(c),
        (size_t)n, &d->queue, NULL);
    if (bs != CLBlastSuccess)
        return pdnn__error(bs == CLBlastOpenCLOutOfResources || bs == CLBlastOpenCLOutOfHostMemory
                               ? PDNN_ERR_OUT_OF_MEMORY
                               : PDNN_ERR_BACKEND,
                           "OpenCL: CLBlastSgemm failed with status %d", (int)bs);
    return PDNN_SUCCESS;
}
#endif

static pdnn_status cl_matmul(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf c, int64_t m, int64_t n, int64_t k,
                             int trans_a, int trans_b)
{
    cl_dev *d = dev;
    pdnn_status st = lock_program(d);
    if (st != PDNN_SUCCESS)
        return st;
#ifdef PDNN_HAVE_CLBLAST
    /* CLBlast rejects empty sizes; the kernel writes zeros for k == 0. */
    if (m > 0 && n > 0 && k > 0) {
        st = matmul_clblast(d, a, b, c, m, n, k, trans_a, trans_b);
        pthread_mutex_unlock(&d->lock);
        return st;
    }
#endif
    return matmul_naive(d, a, b, c, m, n, k, trans_a, trans_b);
}

/* cl_peak.c measures with its own program and buffers; it needs only the
 * device's context and queue. */
#include "backends/opencl/cl_peak.h"
static pdnn_status cl_measure_peak(void *dev, double *g, double *b)
{
    cl_dev *d = dev;
    return pdnn__cl_measure_peak(d->ctx, d->id, d->queue, g, b);
}

const pdnn__backend pdnn__opencl_backend = {
    .name = "opencl",
    .enumerate = cl_enumerate,
    .device_close = cl_close,
    .region_alloc = cl_region_alloc,
    .region_free = cl_region_free,
    .write = cl_write,
    .read = cl_read,
    .copy = cl_copy,
    .synchronize = cl_sync,
    .conv2d_forward = cl_conv2d,
    .conv2d_workspace = cl_conv2d_workspace,
    .pool2d_forward = cl_pool2d,
    .add = cl_add,
    .bias_add = cl_bias_add,
    .relu = cl_relu,
    .softmax = cl_softmax,
    .matmul = cl_matmul,
    .measure_peak = cl_measure_peak,
};
