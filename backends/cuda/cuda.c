/* The CUDA backend: one device per CUDA ordinal, each with its own stream,
 * cuDNN handle and cuBLAS handle (created on first use), convolution and
 * pooling through cuDNN, matmul through cuBLAS.
 *
 * Nothing links against CUDA: libcudart, libcudnn and libcublas are opened
 * with dlopen the first time devices are enumerated, so a library built
 * with this backend loads, and reports why the backend found no devices,
 * on machines without them or without a driver.
 *
 * cuDNN is driven through its legacy (v7-style) API, deprecated in cuDNN 9
 * but still shipped. Moving to the graph API (cudnn_graph.h / the backend
 * descriptors) means building a cudnnBackendDescriptor_t operation graph
 * per convolution shape (tensor descriptors with unique ids, a convolution
 * forward operation, pointwise bias/ReLU nodes to fuse the epilogue),
 * asking the heuristics for engine configs, finalizing an execution plan
 * and caching it per shape, then running it with a variant pack of device
 * pointers and the workspace; asymmetric padding is native there
 * (pre/post padding), which would remove the padded input copies below. */
#include "backend.h"
#include "ops/pool_math.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PDNN_CUDA_LIBDIR
#define PDNN_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

/* ---- the libraries, loaded at run time ---------------------------------- */

/* Names go through one more macro level so that the headers' renames
 * (cublasSgemm -> cublasSgemm_v2) apply to both the field and the symbol. */
#define CUDART_FUNCS(X)                                                                            \
    X(cudaGetDeviceCount)                                                                          \
    X(cudaSetDevice)                                                                               \
    X(cudaDeviceGetAttribute)                                                                      \
    X(cudaDriverGetVersion)                                                                        \
    X(cudaRuntimeGetVersion)                                                                       \
    X(cudaGetErrorString)                                                                          \
    X(cudaGetErrorName)                                                                            \
    X(cudaGetLastError)                                                                            \
    X(cudaMalloc)                                                                                  \
    X(cudaFree)                                                                                    \
    X(cudaMemGetInfo)                                                                              \
    X(cudaMemcpyAsync)                                                                             \
    X(cudaMemcpy2DAsync)                                                                           \
    X(cudaMemsetAsync)                                                                             \
    X(cudaStreamCreate)                                                                            \
    X(cudaStreamDestroy)                                                                           \
    X(cudaStreamSynchronize)

#define CUDNN_FUNCS(X)                                                                             \
    X(cudnnGetVersion)                                                                             \
    X(cudnnGetErrorString)                                                                         \
    X(cudnnCreate)                                                                                 \
    X(cudnnDestroy)                                                                                \
    X(cudnnSetStream)                                                                              \
    X(cudnnCreateTensorDescriptor)                                                                 \
    X(cudnnDestroyTensorDescriptor)                                                                \
    X(cudnnSetTensor4dDescriptorEx)                                                                \
    X(cudnnCreateFilterDescriptor)                                                                 \
    X(cudnnDestroyFilterDescriptor)                                                                \
    X(cudnnSetFilter4dDescriptor)                                                                  \
    X(cudnnCreateConvolutionDescriptor)                                                            \
    X(cudnnDestroyConvolutionDescriptor)                                                           \
    X(cudnnSetConvolution2dDescriptor)                                                             \
    X(cudnnSetConvolutionGroupCount)                                                               \
    X(cudnnSetConvolutionMathType)                                                                 \
    X(cudnnGetConvolutionForwardAlgorithm_v7)                                                      \
    X(cudnnGetConvolutionForwardWorkspaceSize)                                                     \
    X(cudnnConvolutionForward)                                                                     \
    X(cudnnConvolutionBiasActivationForward)                                                       \
    X(cudnnTransformTensor)                                                                        \
    X(cudnnSetTensor)                                                                              \
    X(cudnnAddTensor)                                                                              \
    X(cudnnScaleTensor)                                                                            \
    X(cudnnCreateOpTensorDescriptor)                                                               \
    X(cudnnDestroyOpTensorDescriptor)                                                              \
    X(cudnnSetOpTensorDescriptor)                                                                  \
    X(cudnnOpTensor)                                                                               \
    X(cudnnCreateActivationDescriptor)                                                             \
    X(cudnnDestroyActivationDescriptor)                                                            \
    X(cudnnSetActivationDescriptor)                                                                \
    X(cudnnActivationForward)                                                                      \
    X(cudnnActivationBackward)                                                                     \
    X(cudnnCreatePoolingDescriptor)                                                                \
    X(cudnnDestroyPoolingDescriptor)                                                               \
    X(cudnnSetPooling2dDescriptor)                                                                 \
    X(cudnnPoolingForward)                                                                         \
    X(cudnnPoolingBackward)                                                                        \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                                                 \
    X(cudnnGetConvolutionBackwardDataWorkspaceSize)                                                \
    X(cudnnConvolutionBackwardData)                                                                \
    X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                                               \
    X(cudnnGetConvolutionBackwardFilterWorkspaceSize)                                              \
    X(cudnnConvolutionBackwardFilter)                                                              \
    X(cudnnConvolutionBackwardBias)                                                                \
    X(cudnnSoftmaxForward)                                                                         \
    X(cudnnDeriveBNTensorDescriptor)                                                               \
    X(cudnnBatchNormalizationForwardTraining)                                                      \
    X(cudnnBatchNormalizationForwardInference)                                                     \
    X(cudnnBatchNormalizationBackward)

#define CUBLAS_FUNCS(X)                                                                            \
    X(cublasCreate)                                                                                \
    X(cublasDestroy)                                                                               \
    X(cublasSetStream)                                                                             \
    X(cublasSetMathMode)                                                                           \
    X(cublasGetStatusString)                                                                       \
    X(cublasSgemm)

#define DECLARE_FN(fn) __typeof__(&fn) fn;
#define DECLARE(fn) DECLARE_FN(fn)

static struct {
    CUDART_FUNCS(DECLARE)
    /* Read through an oversized buffer: its layout changed across CUDA
     * versions, but name and totalGlobalMem lead in all of them. */
    __typeof__(&cudaGetDeviceProperties) getDeviceProperties;
} rt;
static struct {
    CUDNN_FUNCS(DECLARE)
} dnn;
static struct {
    CUBLAS_FUNCS(DECLARE)
} blas;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_ok;                   /* set once by load_libraries        */
static char load_why[512];            /* why not, when !load_ok            */
static char versions[96];             /* "CUDA driver X.Y / runtime ..."   */

/* dlopen's first success among names, each tried as a plain soname and
 * then in the directory the build found CUDA in. */
static void *open_first(const char *const *names, size_t n, const char *what)
{
    char path[512];
    const char *err = "";
    for (size_t i = 0; i < n; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
        (void)dlerror(); /* the error for the path below says more */
        snprintf(path, sizeof path, "%s/%s", PDNN_CUDA_LIBDIR, names[i]);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
        err = dlerror();
    }
    snprintf(load_why, sizeof load_why, "%s not found (tried %s%s%s%s%s, also in %s)%s%s", what, names[0],
             n > 1 ? ", " : "", n > 1 ? names[1] : "", n > 2 ? ", " : "", n > 2 ? names[2] : "",
             PDNN_CUDA_LIBDIR, err ? ": " : "", err ? err : "");
    return NULL;
}

static int load_sym(void *lib, const char *libname, const char *name, void *fnptr, size_t size)
{
    dlerror();
    void *sym = dlsym(lib, name);
    if (!sym) {
        snprintf(load_why, sizeof load_why, "%s lacks %s (too old a version?)", libname, name);
        return 0;
    }
    memcpy(fnptr, &sym, size); /* POSIX: data and function pointers share a representation */
    return 1;
}

#define LOAD_RT(fn) LOAD_(rt, lib_rt, "libcudart", fn)
#define LOAD_DNN(fn) LOAD_(dnn, lib_dnn, "libcudnn", fn)
#define LOAD_BLAS(fn) LOAD_(blas, lib_blas, "libcublas", fn)
#define LOAD_(table, lib, libname, fn) LOAD_EXPANDED(table, lib, libname, fn)
#define LOAD_EXPANDED(table, lib, libname, fn)                                                     \
    ok = ok && load_sym(lib, libname, #fn, &table.fn, sizeof table.fn);

static void load_libraries(void)
{
    static const char *const rt_names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    static const char *const dnn_names[] = {"libcudnn.so.9", "libcudnn.so"};
    static const char *const blas_names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    /* The runtime first, and cuDNN and cuBLAS (about 1 GB of libraries)
     * only where it finds a device: a CPU-only node, or a process under
     * valgrind, need not map them to learn that there is no GPU. */
    void *lib_rt = open_first(rt_names, 3, "libcudart");
    if (!lib_rt)
        return;
    int ok = 1;
    CUDART_FUNCS(LOAD_RT)
    if (!ok)
        return;
    /* CUDA 12 exports the current layout as _v2; CUDA 13 under the plain name. */
    dlerror();
    void *props = dlsym(lib_rt, "cudaGetDeviceProperties_v2");
    if (!props)
        props = dlsym(lib_rt, "cudaGetDeviceProperties");
    if (!props) {
        snprintf(load_why, sizeof load_why, "libcudart lacks cudaGetDeviceProperties");
        return;
    }
    memcpy(&rt.getDeviceProperties, &props, sizeof props);
    int drv = 0, run = 0;
    cudaError_t e = rt.cudaRuntimeGetVersion(&run);
    if (e != cudaSuccess) {
        snprintf(load_why, sizeof load_why, "cudaRuntimeGetVersion failed: %s", rt.cudaGetErrorString(e));
        return;
    }
    if (rt.cudaDriverGetVersion(&drv) != cudaSuccess)
        drv = 0;
    int count = 0;
    e = rt.cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        /* The runtime caches a failed initialisation, so this is final. */
        const char *what = drv == 0                         ? "no NVIDIA driver"
                           : e == cudaErrorInsufficientDriver ? "the NVIDIA driver is too old for this CUDA runtime"
                           : e == cudaErrorNoDevice         ? "no CUDA-capable device"
                                                            : "CUDA cannot start";
        snprintf(load_why, sizeof load_why, "%s (cudaGetDeviceCount: %s)", what, rt.cudaGetErrorString(e));
        rt.cudaGetLastError();
        return;
    }
    void *lib_dnn = open_first(dnn_names, 2, "libcudnn");
    if (!lib_dnn)
        return;
    void *lib_blas = open_first(blas_names, 3, "libcublas");
    if (!lib_blas)
        return;
    CUDNN_FUNCS(LOAD_DNN)
    CUBLAS_FUNCS(LOAD_BLAS)
    if (!ok)
        return;
    size_t dnn_ver = dnn.cudnnGetVersion();
    if (dnn_ver / 10000 != CUDNN_MAJOR) {
        snprintf(load_why, sizeof load_why, "libcudnn is version %zu.%zu; this build needs cuDNN %d",
                 dnn_ver / 10000, dnn_ver / 100 % 100, CUDNN_MAJOR);
        return;
    }
    snprintf(versions, sizeof versions, "CUDA driver %d.%d / runtime %d.%d / cuDNN %zu.%zu.%zu", drv / 1000,
             drv % 1000 / 10, run / 1000, run % 1000 / 10, dnn_ver / 10000, dnn_ver / 100 % 100, dnn_ver % 100);
    load_ok = 1;
    /* The libraries stay loaded for the life of the process. */
}

/* ---- errors ------------------------------------------------------------- */

static pdnn_status cuda_fail(const char *call, cudaError_t e)
{
    rt.cudaGetLastError(); /* clear a non-sticky error so later calls start clean */
    return pdnn__error(PDNN_ERR_BACKEND, "CUDA: %s failed: %s (%s)", call, rt.cudaGetErrorString(e),
                       rt.cudaGetErrorName(e));
}

static pdnn_status dnn_fail(const char *call, cudnnStatus_t s)
{
    return pdnn__error(PDNN_ERR_BACKEND, "cuDNN: %s failed: %s (%d)", call, dnn.cudnnGetErrorString(s), (int)s);
}

static pdnn_status blas_fail(const char *call, cublasStatus_t s)
{
    return pdnn__error(PDNN_ERR_BACKEND, "cuBLAS: %s failed: %s (%d)", call, blas.cublasGetStatusString(s), (int)s);
}

/* Early-return checks for functions returning pdnn_status. */
#define CU(fn, ...)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = rt.fn(__VA_ARGS__);                                                       \
        if (e_ != cudaSuccess)                                                                     \
            return cuda_fail(#fn, e_);                                                             \
    } while (0)
#define DNN(fn, ...)                                                                               \
    do {                                                                                           \
        cudnnStatus_t s_ = dnn.fn(__VA_ARGS__);                                                    \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                            \
            return dnn_fail(#fn, s_);                                                              \
    } while (0)

/* ---- devices ------------------------------------------------------------ */

#define N_TDESC 6      /* tensor descriptors per device */
/* Convolution plans remembered per device, hashed (a power of two).
 * Core plans every CUDA algorithm of a call on every call (three entries
 * per shape and op). The first 96-entry FIFO held 32 forward shapes;
 * GoogLeNet has 49 (147 entries), which a FIFO cycles through without a
 * hit, asking cuDNN again each time (likely why it took 90-112 ms per run
 * on an H200, where PyTorch took 5 ms). 1024 holds a network's forward
 * and backward passes; a full table overwrites an entry's home slot. */
#define PLAN_CACHE 1024

/* How one convolution runs: the cuDNN algorithm and which operands are
 * first copied into the workspace (a zero-padded input where cuDNN's
 * symmetric padding cannot express the call, a repacked filter, an NCHW
 * output) and where in the workspace each part lies. plan() writes it into
 * pdnn__plan.state, run() reads it back. */
typedef struct conv_plan {
    cudnnConvolutionFwdAlgo_t algo;
    int bwd_algo; /* backward data/filter: cuDNN's cudnnConvolutionBwd{Data,Filter}Algo_t */
    int x_copy, w_copy, y_copy;
    pdnn_layout x_copy_layout, w_copy_layout;
    int64_t hp, wp; /* padded input size when x_copy */
    size_t x_off, w_off, y_off, algo_off, algo_bytes, total;
    /* Forward vendor: cuDNN's sizable proposals in its order (algo is the
     * first), for a call's workspace limit to pick among. */
    int n_alt;
    cudnnConvolutionFwdAlgo_t alt[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    size_t alt_bytes[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
} conv_plan;

_Static_assert(sizeof(conv_plan) <= sizeof(((pdnn__plan *)0)->state), "conv_plan must fit in pdnn__plan.state");

/* Every call field that decides the plan, and the algorithm asked for.
 * Only an in-process memo of cuDNN's answers, never stored, so it need
 * not follow the tuning cache's key format. */
typedef struct conv_key {
    int64_t n, c, h, w, k, r, s, p, q, groups;
    int stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right;
    int x_layout, w_layout, y_layout, algo;
} conv_key;

typedef struct plan_entry {
    int used, supported;
    conv_key key;
    conv_plan plan;
    char why[PDNN__WHY_LEN]; /* the refusal, when !supported */
} plan_entry;

typedef struct cu_dev {
    int ordinal;
    pthread_mutex_t lock; /* guards everything below and the use of the handles */
    cudaStream_t stream;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    cudnnTensorDescriptor_t t[N_TDESC];
    cudnnFilterDescriptor_t filt;
    cudnnConvolutionDescriptor_t conv;
    cudnnPoolingDescriptor_t pool;
    cudnnActivationDescriptor_t relu, act; /* act: set per call (sigmoid, clipped relu) */
    cudnnOpTensorDescriptor_t add, mul, max, min;
    float *scalars; /* 2 floats of device memory: clip's bounds, broadcast */
    plan_entry plans[PLAN_CACHE];
} cu_dev;

/* Called with d->lock held (or before the device is shared). */
static pdnn_status ensure_stream(cu_dev *d)
{
    CU(cudaSetDevice, d->ordinal);
    if (!d->stream)
        CU(cudaStreamCreate, &d->stream);
    return PDNN_SUCCESS;
}

static pdnn_status create_descriptors(cu_dev *d)
{
    for (int i = 0; i < N_TDESC; i++)
        DNN(cudnnCreateTensorDescriptor, &d->t[i]);
    DNN(cudnnCreateFilterDescriptor, &d->filt);
    DNN(cudnnCreateConvolutionDescriptor, &d->conv);
    DNN(cudnnCreatePoolingDescriptor, &d->pool);
    DNN(cudnnCreateActivationDescriptor, &d->relu);
    DNN(cudnnSetActivationDescriptor, d->relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0);
    DNN(cudnnCreateActivationDescriptor, &d->act);
    DNN(cudnnCreateOpTensorDescriptor, &d->add);
    DNN(cudnnSetOpTensorDescriptor, d->add, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN);
    DNN(cudnnCreateOpTensorDescriptor, &d->mul);
    DNN(cudnnSetOpTensorDescriptor, d->mul, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN);
    DNN(cudnnCreateOpTensorDescriptor, &d->max);
    DNN(cudnnSetOpTensorDescriptor, d->max, CUDNN_OP_TENSOR_MAX, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN);
    DNN(cudnnCreateOpTensorDescriptor, &d->min);
    DNN(cudnnSetOpTensorDescriptor, d->min, CUDNN_OP_TENSOR_MIN, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN);
    return PDNN_SUCCESS;
}

static void destroy_descriptors(cu_dev *d)
{
    for (int i = 0; i < N_TDESC; i++)
        if (d->t[i])
            dnn.cudnnDestroyTensorDescriptor(d->t[i]);
    if (d->filt)
        dnn.cudnnDestroyFilterDescriptor(d->filt);
    if (d->conv)
        dnn.cudnnDestroyConvolutionDescriptor(d->conv);
    if (d->pool)
        dnn.cudnnDestroyPoolingDescriptor(d->pool);
    if (d->relu)
        dnn.cudnnDestroyActivationDescriptor(d->relu);
    if (d->act)
        dnn.cudnnDestroyActivationDescriptor(d->act);
    if (d->add)
        dnn.cudnnDestroyOpTensorDescriptor(d->add);
    if (d->mul)
        dnn.cudnnDestroyOpTensorDescriptor(d->mul);
    if (d->max)
        dnn.cudnnDestroyOpTensorDescriptor(d->max);
    if (d->min)
        dnn.cudnnDestroyOpTensorDescriptor(d->min);
    memset(d->t, 0, sizeof d->t);
    d->filt = NULL;
    d->conv = NULL;
    d->pool = NULL;
    d->relu = NULL;
    d->act = NULL;
    d->add = NULL;
    d->mul = NULL;
    d->max = NULL;
    d->min = NULL;
}

/* The stream and the cuDNN handle on the right device. Called with d->lock held. */
static pdnn_status ensure_dnn(cu_dev *d)
{
    pdnn_status st = ensure_stream(d);
    if (st != PDNN_SUCCESS || d->dnn)
        return st;
    cudnnHandle_t h = NULL;
    DNN(cudnnCreate, &h);
    cudnnStatus_t s = dnn.cudnnSetStream(h, d->stream);
    if (s != CUDNN_STATUS_SUCCESS) {
        dnn.cudnnDestroy(h);
        return dnn_fail("cudnnSetStream", s);
    }
    d->dnn = h;
    st = create_descriptors(d);
    if (st != PDNN_SUCCESS) {
        destroy_descriptors(d);
        dnn.cudnnDestroy(h);
        d->dnn = NULL;
    }
    return st;
}

/* Locks d, readies cuDNN; on success the caller holds the lock. */
static pdnn_status lock_dnn(cu_dev *d)
{
    pthread_mutex_lock(&d->lock);
    pdnn_status st = ensure_dnn(d);
    if (st != PDNN_SUCCESS)
        pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status ensure_blas(cu_dev *d)
{
    pdnn_status st = ensure_stream(d);
    if (st != PDNN_SUCCESS || d->blas)
        return st;
    cublasHandle_t h = NULL;
    cublasStatus_t s = blas.cublasCreate(&h);
    if (s != CUBLAS_STATUS_SUCCESS)
        return blas_fail("cublasCreate", s);
    s = blas.cublasSetStream(h, d->stream);
    /* Plain FP32: no TF32 tensor-core math, so results match the reference. */
    if (s == CUBLAS_STATUS_SUCCESS)
        s = blas.cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS) {
        blas.cublasDestroy(h);
        return blas_fail("cublasSetStream/cublasSetMathMode", s);
    }
    d->blas = h;
    return PDNN_SUCCESS;
}

static void dev_free(cu_dev *d)
{
    if (!d)
        return;
    if (d->stream || d->dnn || d->blas)
        rt.cudaSetDevice(d->ordinal);
    if (d->stream)
        rt.cudaStreamSynchronize(d->stream);
    destroy_descriptors(d);
    if (d->scalars)
        rt.cudaFree(d->scalars);
    if (d->dnn)
        dnn.cudnnDestroy(d->dnn);
    if (d->blas)
        blas.cublasDestroy(d->blas);
    if (d->stream)
        rt.cudaStreamDestroy(d->stream);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static pdnn_status cu_enumerate(void ***devs, pdnn__device_props **props, int *n, const char **why)
{
    *devs = NULL;
    *props = NULL;
    *n = 0;
    *why = NULL;
    pthread_once(&load_once, load_libraries);
    if (!load_ok) {
        *why = load_why;
        return PDNN_SUCCESS;
    }
    int count = 0;
    cudaError_t e = rt.cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count <= 0) {
        rt.cudaGetLastError();
        *why = e != cudaSuccess ? "cudaGetDeviceCount failed" : "the CUDA runtime reports no devices";
        return PDNN_SUCCESS;
    }
    void **handles = calloc((size_t)count, sizeof *handles);
    pdnn__device_props *pr = calloc((size_t)count, sizeof *pr);
    if (!handles || !pr) {
        free(handles);
        free(pr);
        return pdnn__host_oom("CUDA", "the device table", (size_t)count * (sizeof *handles + sizeof *pr));
    }
    int got = 0;
    for (int i = 0; i < count; i++) {
        union {
            struct cudaDeviceProp p;
            unsigned char pad[16384];
        } u;
        memset(&u, 0, sizeof u);
        int sms = 0, major = 0;
        e = rt.getDeviceProperties(&u.p, i);
        if (e == cudaSuccess)
            e = rt.cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, i);
        if (e == cudaSuccess)
            e = rt.cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, i);
        if (e != cudaSuccess) {
            rt.cudaGetLastError();
            pdnn__debug("CUDA: skipping device %d: %s", i, rt.cudaGetErrorString(e));
            continue;
        }
        cu_dev *d = calloc(1, sizeof *d);
        if (!d || pthread_mutex_init(&d->lock, NULL) != 0) {
            free(d);
            for (int j = 0; j < got; j++)
                dev_free(handles[j]);
            free(handles);
            free(pr);
            return d ? pdnn__error(PDNN_ERR_INTERNAL, "CUDA: pthread_mutex_init failed")
                     : pdnn__host_oom("CUDA", "a device's state", sizeof *d);
        }
        d->ordinal = i;
        pdnn__device_props *q = &pr[got];
        q->kind = PDNN__KIND_GPU;
        snprintf(q->vendor, sizeof q->vendor, "NVIDIA");
        u.p.name[sizeof u.p.name - 1] = '\0';
        snprintf(q->name, sizeof q->name, "%s", u.p.name);
        snprintf(q->driver_version, sizeof q->driver_version, "%s", versions);
        q->memory_bytes = u.p.totalGlobalMem;
        q->max_alloc_bytes = u.p.totalGlobalMem;
        q->base_align = 256;
        /* What TensorFlow leaves to the system by compute capability; the
         * kernels of cuDNN 9 and cuBLAS load lazily, into this. */
        q->keep_free = (major >= 8 ? 1536ull : major >= 7 ? 1050ull : 500ull) << 20;
        q->compute_units = sms;
        q->dlpack_type = 2; /* kDLCUDA */
        q->dlpack_id = i;
        handles[got++] = d;
    }
    if (got == 0) {
        free(handles);
        free(pr);
        *why = "no CUDA device could be queried (POLYDNN_DEBUG=1 says why)";
        return PDNN_SUCCESS;
    }
    *devs = handles;
    *props = pr;
    *n = got;
    return PDNN_SUCCESS;
}

static void cu_close(void *dev) { dev_free(dev); }

/* ---- memory ------------------------------------------------------------- */

static void *ptr(pdnn__buf b) { return (char *)b.region + b.offset; }

static pdnn_status cu_region_alloc(void *dev, size_t bytes, void **region)
{
    cu_dev *d = dev;
    CU(cudaSetDevice, d->ordinal);
    void *p = NULL;
    cudaError_t e = rt.cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        rt.cudaGetLastError();
        char b[32];
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY,
                           "CUDA: cudaMalloc of a region of %zu bytes (%s) on device %d failed: out of memory", bytes,
                           pdnn__format_bytes(bytes, b, sizeof b), d->ordinal);
    }
    if (e != cudaSuccess)
        return cuda_fail("cudaMalloc", e);
    *region = p;
    return PDNN_SUCCESS;
}

/* Asked once, just before the first-use reservation takes the limit. */
static pdnn_status cu_memory_free(void *dev, uint64_t *bytes)
{
    cu_dev *d = dev;
    /* The handles first, so that their device memory is taken before the
     * reservation measures what is left (a reservation of everything left
     * cudnnCreate failing with CUDNN_STATUS_INTERNAL_ERROR on an H100).
     * Whoever holds the lock is inside an op, whose handles exist; a
     * failure here is reported again by the op that needs the handle. */
    if (pthread_mutex_trylock(&d->lock) == 0) {
        if (ensure_dnn(d) == PDNN_SUCCESS)
            (void)ensure_blas(d);
        pthread_mutex_unlock(&d->lock);
    }
    CU(cudaSetDevice, d->ordinal);
    size_t free_b = 0, total_b = 0;
    CU(cudaMemGetInfo, &free_b, &total_b);
    *bytes = free_b;
    return PDNN_SUCCESS;
}

static void cu_region_free(void *dev, void *region)
{
    cu_dev *d = dev;
    if (rt.cudaSetDevice(d->ordinal) != cudaSuccess || rt.cudaFree(region) != cudaSuccess)
        rt.cudaGetLastError();
}

/* The stream, created under the lock on first use; it never changes after. */
static pdnn_status stream_of(cu_dev *d, cudaStream_t *s)
{
    pthread_mutex_lock(&d->lock);
    pdnn_status st = ensure_stream(d);
    *s = d->stream;
    pthread_mutex_unlock(&d->lock); /* the current device is per thread: it stays set */
    return st;
}

/* Host memory is pageable, so copies wait for completion. */
static pdnn_status cu_write(void *dev, pdnn__buf dst, const void *src, size_t bytes)
{
    cudaStream_t s = NULL;
    pdnn_status st = stream_of(dev, &s);
    if (st != PDNN_SUCCESS)
        return st;
    CU(cudaMemcpyAsync, ptr(dst), src, bytes, cudaMemcpyHostToDevice, s);
    CU(cudaStreamSynchronize, s);
    return PDNN_SUCCESS;
}

static pdnn_status cu_read(void *dev, pdnn__buf src, void *dst, size_t bytes)
{
    cudaStream_t s = NULL;
    pdnn_status st = stream_of(dev, &s);
    if (st != PDNN_SUCCESS)
        return st;
    CU(cudaMemcpyAsync, dst, ptr(src), bytes, cudaMemcpyDeviceToHost, s);
    CU(cudaStreamSynchronize, s);
    return PDNN_SUCCESS;
}

static pdnn_status cu_copy(void *dev, pdnn__buf dst, pdnn__buf src, size_t bytes)
{
    cudaStream_t s = NULL;
    pdnn_status st = stream_of(dev, &s);
    if (st != PDNN_SUCCESS)
        return st;
    CU(cudaMemcpyAsync, ptr(dst), ptr(src), bytes, cudaMemcpyDeviceToDevice, s);
    return PDNN_SUCCESS;
}

static pdnn_status cu_copy_rows(void *dev, pdnn__buf dst, size_t dst_pitch, pdnn__buf src, size_t src_pitch,
                                size_t width, size_t rows)
{
    cudaStream_t s = NULL;
    pdnn_status st = stream_of(dev, &s);
    if (st != PDNN_SUCCESS)
        return st;
    CU(cudaMemcpy2DAsync, ptr(dst), dst_pitch, ptr(src), src_pitch, width, rows, cudaMemcpyDeviceToDevice, s);
    return PDNN_SUCCESS;
}

static pdnn_status cu_sync(void *dev)
{
    cu_dev *d = dev;
    pthread_mutex_lock(&d->lock);
    cudaStream_t s = d->stream;
    pthread_mutex_unlock(&d->lock);
    if (!s)
        return PDNN_SUCCESS; /* nothing was ever queued */
    CU(cudaSetDevice, d->ordinal);
    CU(cudaStreamSynchronize, s);
    return PDNN_SUCCESS;
}

/* ---- descriptors ---------------------------------------------------------- */

static int fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* A 4-D float tensor descriptor with the given logical dims and element strides. */
static pdnn_status set_4d(cudnnTensorDescriptor_t t, const int64_t dims[4], const int64_t st[4])
{
    for (int i = 0; i < 4; i++)
        if (!fits_int(dims[i]) || !fits_int(st[i]))
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "CUDA: a tensor of dims %lld x %lld x %lld x %lld is too large for cuDNN "
                               "(sizes and strides must fit in int)",
                               (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3]);
    DNN(cudnnSetTensor4dDescriptorEx, t, CUDNN_DATA_FLOAT, (int)dims[0], (int)dims[1], (int)dims[2],
        (int)dims[3], (int)st[0], (int)st[1], (int)st[2], (int)st[3]);
    return PDNN_SUCCESS;
}

/* A packed tensor of dims in layout l. */
static pdnn_status set_packed(cudnnTensorDescriptor_t t, pdnn_layout l, const int64_t dims[4])
{
    int64_t st[4];
    pdnn__layout_strides(l, dims, st);
    return set_4d(t, dims, st);
}

#define RETURN_IF_FAILED(expr)                                                                     \
    do {                                                                                           \
        pdnn_status st_ = (expr);                                                                  \
        if (st_ != PDNN_SUCCESS)                                                                   \
            return st_;                                                                            \
    } while (0)

/* ---- convolution ---------------------------------------------------------- */

/* Tensor descriptor slots used by a convolution. */
enum { TX, TY, TW_SRC, TW_DST, TX_SRC, TB };

static size_t align256(size_t v) { return (v + 255) & ~(size_t)255; }

static conv_key key_of(const pdnn__conv2d_call *c, pdnn_conv_algo algo)
{
    conv_key k;
    memset(&k, 0, sizeof k); /* keys are compared with memcmp: no stray padding bytes */
    k.n = c->n;
    k.c = c->c;
    k.h = c->h;
    k.w = c->w;
    k.k = c->k;
    k.r = c->r;
    k.s = c->s;
    k.p = c->p;
    k.q = c->q;
    k.groups = c->groups;
    k.stride_h = c->stride_h;
    k.stride_w = c->stride_w;
    k.dil_h = c->dil_h;
    k.dil_w = c->dil_w;
    k.pad_top = c->pad_top;
    k.pad_left = c->pad_left;
    k.pad_bottom = c->pad_bottom;
    k.pad_right = c->pad_right;
    k.x_layout = (int)c->x_layout;
    k.w_layout = (int)c->w_layout;
    k.y_layout = (int)c->y_layout;
    k.algo = (int)algo;
    return k;
}

/* cuDNN's output size for symmetric padding pad on one axis. */
static int64_t cudnn_out(int64_t in, int pad, int64_t filt, int dil, int stride)
{
    int64_t span = (filt - 1) * dil + 1;
    if (in + 2 * (int64_t)pad < span)
        return -1;
    return (in + 2 * (int64_t)pad - span) / stride + 1;
}

/* Sets the descriptors for plan pl (its copy flags decided) of call c:
 * t[TX] the input cuDNN reads, t[TY] the output it writes, filt the filter,
 * t[TW_SRC]/t[TW_DST] the filter repack, t[TX_SRC] the input as stored,
 * conv the convolution. Called with d->lock held. */
static pdnn_status set_conv_descriptors(cu_dev *d, const pdnn__conv2d_call *c, const conv_plan *pl)
{
    const int64_t cpg = c->c / c->groups;
    const int64_t xdims[4] = {c->n, c->c, c->h, c->w};
    const int64_t wdims[4] = {c->k, cpg, c->r, c->s};
    const int64_t ydims[4] = {c->n, c->k, c->p, c->q};
    if (!fits_int(c->groups) || !fits_int(c->k) || !fits_int(cpg) || !fits_int(c->r) || !fits_int(c->s))
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "CUDA: conv2d sizes must fit in int for cuDNN");
    RETURN_IF_FAILED(set_4d(d->t[TX_SRC], xdims, c->xs));
    if (pl->x_copy) {
        const int64_t pdims[4] = {c->n, c->c, pl->hp, pl->wp};
        RETURN_IF_FAILED(set_packed(d->t[TX], pl->x_copy_layout, pdims));
    } else {
        RETURN_IF_FAILED(set_4d(d->t[TX], xdims, c->xs));
    }
    pdnn_layout wl = pl->w_copy ? pl->w_copy_layout : c->w_layout;
    if (pl->w_copy) {
        RETURN_IF_FAILED(set_4d(d->t[TW_SRC], wdims, c->ws));
        RETURN_IF_FAILED(set_packed(d->t[TW_DST], wl, wdims));
    }
    DNN(cudnnSetFilter4dDescriptor, d->filt, CUDNN_DATA_FLOAT, wl == PDNN_OHWI ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
        (int)c->k, (int)cpg, (int)c->r, (int)c->s);
    if (pl->y_copy)
        RETURN_IF_FAILED(set_packed(d->t[TY], PDNN_NCHW, ydims));
    else
        RETURN_IF_FAILED(set_4d(d->t[TY], ydims, c->ys));
    DNN(cudnnSetConvolution2dDescriptor, d->conv, pl->x_copy ? 0 : c->pad_top, pl->x_copy ? 0 : c->pad_left,
        c->stride_h, c->stride_w, c->dil_h, c->dil_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    DNN(cudnnSetConvolutionGroupCount, d->conv, (int)c->groups);
    /* FMA math: CUDNN_DEFAULT_MATH still allows TF32 tensor cores on
     * Ampere and later, which would not match the FP32 reference. */
    DNN(cudnnSetConvolutionMathType, d->conv, CUDNN_FMA_MATH);
    return PDNN_SUCCESS;
}

/* cuDNN's forward algorithm as plan->config_name shows it, so that a
 * query says which kernel family "vendor" settled on. */
static const char *fwd_algo_name(cudnnConvolutionFwdAlgo_t a)
{
    switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "cudnn implicit_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "cudnn implicit_precomp_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "cudnn gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "cudnn direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "cudnn fft";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "cudnn fft_tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "cudnn winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "cudnn winograd_nonfused";
    default: return "cudnn ?";
    }
}

/* Workspace bytes of algo for the current descriptors; *s is cuDNN's
 * answer, anything but success meaning it cannot run algo here. */
static size_t algo_workspace(cu_dev *d, cudnnConvolutionFwdAlgo_t algo, cudnnStatus_t *s)
{
    size_t bytes = 0;
    *s = dnn.cudnnGetConvolutionForwardWorkspaceSize(d->dnn, d->t[TX], d->filt, d->conv, d->t[TY], algo, &bytes);
    if (*s != CUDNN_STATUS_SUCCESS) {
        pdnn__debug("CUDA: cuDNN forward algorithm %d: %s", (int)algo, dnn.cudnnGetErrorString(*s));
        return 0;
    }
    return bytes;
}

/* ---- backward convolution: algorithm choice ---------------------------------
 * The backward ops reuse the forward's descriptors and copy configurations
 * (set_conv_descriptors): t[TX] is x or dx as cuDNN sees it, t[TY] dy,
 * filt w or dw. "vendor" takes the first of cuDNN's heuristics' proposals
 * that cuDNN can size; "direct" is cuDNN's deterministic ALGO_1, which
 * needs little or no workspace, so that dispatch has somewhere to go when
 * the vendor choice's workspace does not fit in the device's memory. */

static const char *bwd_algo_name(pdnn__op op, int a)
{
    if (op == PDNN__OP_CONV2D_BWD_DATA)
        switch ((cudnnConvolutionBwdDataAlgo_t)a) {
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "cudnn bwd_data algo_0";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "cudnn bwd_data algo_1";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "cudnn bwd_data fft";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "cudnn bwd_data fft_tiling";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "cudnn bwd_data winograd";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "cudnn bwd_data winograd_nf";
        default: return "cudnn bwd_data ?";
        }
    switch ((cudnnConvolutionBwdFilterAlgo_t)a) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "cudnn bwd_filter algo_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "cudnn bwd_filter algo_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "cudnn bwd_filter fft";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "cudnn bwd_filter algo_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "cudnn bwd_filter fft_tiling";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "cudnn bwd_filter winograd_nf";
    default: return "cudnn bwd_filter ?";
    }
}

/* Workspace bytes of backward algorithm a for the current descriptors; *s
 * is cuDNN's answer. */
static size_t bwd_workspace(cu_dev *d, pdnn__op op, int a, cudnnStatus_t *s)
{
    size_t bytes = 0;
    if (op == PDNN__OP_CONV2D_BWD_DATA)
        *s = dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(d->dnn, d->filt, d->t[TY], d->conv, d->t[TX],
                                                              (cudnnConvolutionBwdDataAlgo_t)a, &bytes);
    else
        *s = dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(d->dnn, d->t[TX], d->t[TY], d->conv, d->filt,
                                                                (cudnnConvolutionBwdFilterAlgo_t)a, &bytes);
    if (*s != CUDNN_STATUS_SUCCESS) {
        pdnn__debug("CUDA: cuDNN %s: %s", bwd_algo_name(op, a), dnn.cudnnGetErrorString(*s));
        return 0;
    }
    return bytes;
}

/* Picks the backward algorithm of op for the current descriptors into
 * pl->bwd_algo and its workspace into *ws. Returns 1, or 0 with why. */
static int bwd_select(cu_dev *d, pdnn__op op, pdnn_conv_algo want, conv_plan *pl, size_t *ws, char *why,
                      size_t len)
{
    cudnnStatus_t s = CUDNN_STATUS_NOT_SUPPORTED;
    const int is_data = op == PDNN__OP_CONV2D_BWD_DATA;
    if (want != PDNN_CONV_ALGO_VENDOR) {
        pl->bwd_algo = is_data ? (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 : (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
        *ws = bwd_workspace(d, op, pl->bwd_algo, &s);
        if (s != CUDNN_STATUS_SUCCESS) {
            snprintf(why, len, "%s: %s", bwd_algo_name(op, pl->bwd_algo), dnn.cudnnGetErrorString(s));
            return 0;
        }
        return 1;
    }
    /* Both perf arrays hold at most this many proposals. */
    enum { MAXP = 16 };
    _Static_assert((int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT <= (int)MAXP &&
                       (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT <= (int)MAXP,
                   "cuDNN proposes more backward algorithms than MAXP");
    int algos[MAXP], got = 0, proposed = 0;
    const char *fn = is_data ? "cudnnGetConvolutionBackwardDataAlgorithm_v7"
                             : "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
    if (is_data) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        memset(perf, 0, sizeof perf);
        s = dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(d->dnn, d->filt, d->t[TY], d->conv, d->t[TX],
                                                            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf);
        for (int i = 0; s == CUDNN_STATUS_SUCCESS && i < got && i < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; i++)
            algos[i] = perf[i].status == CUDNN_STATUS_SUCCESS ? (int)perf[i].algo : -1;
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        memset(perf, 0, sizeof perf);
        s = dnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7(d->dnn, d->t[TX], d->t[TY], d->conv, d->filt,
                                                              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf);
        for (int i = 0; s == CUDNN_STATUS_SUCCESS && i < got && i < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT; i++)
            algos[i] = perf[i].status == CUDNN_STATUS_SUCCESS ? (int)perf[i].algo : -1;
    }
    if (s != CUDNN_STATUS_SUCCESS) {
        snprintf(why, len, "%s: %s", fn, dnn.cudnnGetErrorString(s));
        return 0;
    }
    if (got > MAXP)
        got = MAXP;
    s = CUDNN_STATUS_NOT_SUPPORTED;
    for (int i = 0; i < got && s != CUDNN_STATUS_SUCCESS; i++) {
        if (algos[i] < 0)
            continue;
        proposed++;
        *ws = bwd_workspace(d, op, algos[i], &s);
        if (s == CUDNN_STATUS_SUCCESS)
            pl->bwd_algo = algos[i];
    }
    if (s != CUDNN_STATUS_SUCCESS) {
        if (proposed == 0)
            snprintf(why, len, "%s proposes no algorithm", fn);
        else
            snprintf(why, len, "none of the %d algorithms %s proposes can be sized: %s", proposed, fn,
                     dnn.cudnnGetErrorString(s));
        return 0;
    }
    return 1;
}

/* Tries one copy configuration: picks the algorithm and fills the
 * workspace layout. Returns 1 if cuDNN can run it, else 0 with why (len
 * bytes) saying what cuDNN answered. Called with d->lock held and the
 * cuDNN handle created. */
static int try_plan(cu_dev *d, pdnn__op op, const pdnn__conv2d_call *c, pdnn_conv_algo want, conv_plan *pl,
                    char *why, size_t len)
{
    if (set_conv_descriptors(d, c, pl) != PDNN_SUCCESS) {
        snprintf(why, len, "%s", pdnn_last_error());
        return 0;
    }
    cudnnStatus_t s = CUDNN_STATUS_NOT_SUPPORTED;
    size_t ws = 0;
    if (op != PDNN__OP_CONV2D_FWD) {
        if (!bwd_select(d, op, want, pl, &ws, why, len))
            return 0;
    } else if (want == PDNN_CONV_ALGO_VENDOR) {
        /* The heuristics' first proposal whose workspace cuDNN can size,
         * the others kept for a call's workspace limit (conv_plan_want).
         * Whether that workspace fits the device is core's question: when
         * it does not, AUTO moves on to im2col_gemm, then direct. */
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int got = 0, proposed = 0;
        memset(perf, 0, sizeof perf);
        s = dnn.cudnnGetConvolutionForwardAlgorithm_v7(d->dnn, d->t[TX], d->filt, d->conv, d->t[TY],
                                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf);
        if (s != CUDNN_STATUS_SUCCESS) {
            pdnn__debug("CUDA: cudnnGetConvolutionForwardAlgorithm_v7: %s", dnn.cudnnGetErrorString(s));
            snprintf(why, len, "cudnnGetConvolutionForwardAlgorithm_v7: %s", dnn.cudnnGetErrorString(s));
            return 0;
        }
        s = CUDNN_STATUS_NOT_SUPPORTED;
        pl->n_alt = 0;
        for (int i = 0; i < got && i < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; i++) {
            if (perf[i].status != CUDNN_STATUS_SUCCESS)
                continue;
            proposed++;
            cudnnStatus_t si;
            const size_t b = algo_workspace(d, perf[i].algo, &si);
            if (si != CUDNN_STATUS_SUCCESS) {
                s = si;
                continue;
            }
            pl->alt[pl->n_alt] = perf[i].algo;
            pl->alt_bytes[pl->n_alt++] = b;
        }
        if (pl->n_alt > 0) {
            s = CUDNN_STATUS_SUCCESS;
            pl->algo = pl->alt[0];
            ws = pl->alt_bytes[0];
        }
        if (s != CUDNN_STATUS_SUCCESS) {
            if (proposed == 0)
                snprintf(why, len, "cuDNN's heuristics propose no algorithm");
            else
                snprintf(why, len, "none of the %d algorithms cuDNN's heuristics propose can be sized: %s", proposed,
                         dnn.cudnnGetErrorString(s));
            return 0;
        }
    } else {
        pl->algo = want == PDNN_CONV_ALGO_DIRECT ? CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM
                                                 : CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
        ws = algo_workspace(d, pl->algo, &s);
        if (s != CUDNN_STATUS_SUCCESS) {
            snprintf(why, len, "cudnnGetConvolutionForwardWorkspaceSize: %s", dnn.cudnnGetErrorString(s));
            return 0;
        }
    }
    const size_t f = sizeof(float);
    size_t off = 0;
    if (pl->w_copy) {
        pl->w_off = off;
        off += align256((size_t)(c->k * (c->c / c->groups) * c->r * c->s) * f);
    }
    if (pl->x_copy) {
        pl->x_off = off;
        off += align256((size_t)(c->n * c->c * pl->hp * pl->wp) * f);
    }
    if (pl->y_copy) {
        pl->y_off = off;
        off += align256((size_t)(c->n * c->k * c->p * c->q) * f);
    }
    pl->algo_off = off;
    pl->algo_bytes = ws;
    pl->total = off + ws;
    return 1;
}

/* The home slot of key in the plan cache (FNV-1a over its bytes, which
 * key_of zeroes first). */
static size_t key_slot(const conv_key *key)
{
    const unsigned char *b = (const unsigned char *)key;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof *key; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return (size_t)(h & (PLAN_CACHE - 1));
}

/* What the algorithm asked for is called in refusals. */
static const char *want_name(pdnn_conv_algo want)
{
    return want == PDNN_CONV_ALGO_DIRECT        ? "implicit-GEMM (direct)"
           : want == PDNN_CONV_ALGO_IM2COL_GEMM ? "GEMM (im2col)"
                                                : "vendor-chosen";
}

/* Finds (or recalls) how to run c with want. Returns 0 if cuDNN cannot,
 * with why (len bytes) saying so. Called with d->lock held and the cuDNN
 * handle created. */
static int find_plan(cu_dev *d, pdnn__op op, const pdnn__conv2d_call *c, pdnn_conv_algo want, conv_plan *out,
                     char *why, size_t len)
{
    conv_key key = key_of(c, want);
    key.algo += 16 * (int)op; /* each op plans apart */
    const size_t home = key_slot(&key);
    size_t slot = home; /* where a new entry goes: the first free slot on the probe path */
    for (size_t i = 0; i < PLAN_CACHE; i++) {
        plan_entry *e = &d->plans[(home + i) & (PLAN_CACHE - 1)];
        if (!e->used) {
            slot = (home + i) & (PLAN_CACHE - 1);
            break;
        }
        if (memcmp(&e->key, &key, sizeof key) == 0) {
            *out = e->plan;
            snprintf(why, len, "%s", e->why);
            return e->supported;
        }
    }

    /* cuDNN pads symmetrically; where pad_top/pad_left do not give the
     * call's output size, the input is copied into a zero-padded buffer. */
    const int need_pad = cudnn_out(c->h, c->pad_top, c->r, c->dil_h, c->stride_h) != c->p ||
                         cudnn_out(c->w, c->pad_left, c->s, c->dil_w, c->stride_w) != c->q;
    int64_t hp = (c->p - 1) * c->stride_h + (c->r - 1) * c->dil_h + 1;
    int64_t wp = (c->q - 1) * c->stride_w + (c->s - 1) * c->dil_w + 1;
    if (hp < c->pad_top + c->h)
        hp = c->pad_top + c->h;
    if (wp < c->pad_left + c->w)
        wp = c->pad_left + c->w;
    const pdnn_layout xl0 = c->x_layout == PDNN_NHWC ? PDNN_NHWC : PDNN_NCHW;
    const pdnn_layout match = xl0 == PDNN_NHWC ? PDNN_OHWI : PDNN_OIHW;

    /* Configurations, cheapest first: operands as they are (HWIO, which
     * cuDNN cannot read, repacked); the filter repacked to match the
     * input; everything in NCHW/OIHW. */
    conv_plan cand[3];
    memset(cand, 0, sizeof cand);
    for (int i = 0; i < 3; i++) {
        cand[i].hp = hp;
        cand[i].wp = wp;
    }
    cand[0].x_copy = need_pad;
    cand[0].x_copy_layout = xl0;
    cand[0].w_copy = c->w_layout == PDNN_HWIO;
    cand[0].w_copy_layout = match;
    cand[1] = cand[0];
    cand[1].w_copy = c->w_layout != match;
    cand[2].x_copy = need_pad || xl0 != PDNN_NCHW;
    cand[2].x_copy_layout = PDNN_NCHW;
    cand[2].w_copy = c->w_layout != PDNN_OIHW;
    cand[2].w_copy_layout = PDNN_OIHW;
    cand[2].y_copy = c->y_layout != PDNN_NCHW;
    int supported = 0, tried = 0;
    char last[PDNN__WHY_LEN] = "";
    conv_plan plan;
    memset(&plan, 0, sizeof plan);
    for (int i = 0; i < 3 && !supported; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= cand[j].x_copy == cand[i].x_copy && cand[j].x_copy_layout == cand[i].x_copy_layout &&
                    cand[j].w_copy == cand[i].w_copy && cand[j].w_copy_layout == cand[i].w_copy_layout &&
                    cand[j].y_copy == cand[i].y_copy;
        if (seen)
            continue;
        plan = cand[i];
        tried++;
        supported = try_plan(d, op, c, want, &plan, last, sizeof last);
    }

    plan_entry *e = &d->plans[slot]; /* a full table overwrites the home slot */
    e->used = 1;
    e->supported = supported;
    e->key = key;
    e->plan = plan;
    e->why[0] = '\0';
    if (!supported) {
        /* The last configuration tried copies the most (NCHW/OIHW where
         * the call's layouts differ), so its answer is the one to give. */
        snprintf(e->why, sizeof e->why,
                 "CUDA: cuDNN has no %s convolution%s for %s input, %s filter, %s output, groups %lld "
                 "(%d operand copy configuration%s tried; the last: %s)",
                 want_name(want),
                 op == PDNN__OP_CONV2D_BWD_DATA     ? " backward data"
                 : op == PDNN__OP_CONV2D_BWD_FILTER ? " backward filter"
                                                    : "",
                 pdnn_layout_name(c->x_layout), pdnn_layout_name(c->w_layout),
                 pdnn_layout_name(c->y_layout), (long long)c->groups, tried, tried == 1 ? "" : "s", last);
    }
    snprintf(why, len, "%s", e->why);
    *out = plan;
    return supported;
}

/* Plans want for call: one cuDNN algorithm and copy configuration, found
 * (or recalled) now so that run only executes it. */
static void conv_plan_want(cu_dev *d, const pdnn__op_call *call, pdnn__plan *plan, pdnn_conv_algo want)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    char why[PDNN__WHY_LEN];
    conv_plan pl;
    memset(&pl, 0, sizeof pl);
    pdnn_status st = lock_dnn(d);
    if (st != PDNN_SUCCESS) {
        pdnn__plan_refuse(plan, "CUDA: cuDNN could not start on device %d: %s", d->ordinal, pdnn_last_error());
        return;
    }
    int ok = find_plan(d, call->op, c, want, &pl, why, sizeof why);
    pthread_mutex_unlock(&d->lock);
    if (!ok) {
        pdnn__plan_refuse(plan, "%s", why);
        return;
    }
    /* Over the call's workspace limit: cuDNN's first proposal within it
     * (the heuristics' order is their guess at speed), else the first. */
    for (int i = 1; call->ws_limit > 0 && pl.total > call->ws_limit && i < pl.n_alt; i++)
        if (pl.algo_off + pl.alt_bytes[i] <= call->ws_limit) {
            pl.algo = pl.alt[i];
            pl.algo_bytes = pl.alt_bytes[i];
            pl.total = pl.algo_off + pl.alt_bytes[i];
        }
    plan->supported = 1;
    plan->workspace = pl.total;
    /* e.g. "cudnn implicit_precomp_gemm copy xw": cuDNN's kernel family
     * and which of input, filter and output go through the workspace. */
    snprintf(plan->config_name, sizeof plan->config_name, "%s%s%s%s%s",
             call->op == PDNN__OP_CONV2D_FWD ? fwd_algo_name(pl.algo) : bwd_algo_name(call->op, pl.bwd_algo),
             pl.x_copy || pl.w_copy || pl.y_copy ? " copy " : "", pl.x_copy ? "x" : "", pl.w_copy ? "w" : "",
             pl.y_copy ? "y" : "");
    memcpy(plan->state, &pl, sizeof pl); /* state is bytes: copy, never alias */
}

static void vendor_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    conv_plan_want(dev, call, plan, PDNN_CONV_ALGO_VENDOR);
}

static void gemm_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    conv_plan_want(dev, call, plan, PDNN_CONV_ALGO_IM2COL_GEMM);
    /* AUTO's order before the registry tried GEMM algorithms only for
     * ungrouped convolutions; grouped ones went from vendor to direct. */
    if (plan->supported && call->u.conv2d.groups != 1)
        pdnn__plan_skip(plan, "AUTO passes over cuDNN's GEMM for grouped convolutions (groups %lld); "
                              "ask for im2col_gemm by name to run it",
                        (long long)call->u.conv2d.groups);
}

static void direct_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    conv_plan_want(dev, call, plan, PDNN_CONV_ALGO_DIRECT);
}

/* Runs c as pl says, with pl->total bytes of workspace at ws. Called
 * with d->lock held and the cuDNN handle created. */
static pdnn_status conv_run(cu_dev *d, const pdnn__conv2d_call *c, const conv_plan *pl, pdnn__buf ws_buf)
{
    if (pl->total > 0 && !ws_buf.region) {
        char b[32];
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "CUDA: this convolution needs %s of workspace on device %d (padded input, repacked "
                           "filter or cuDNN's own) but got none",
                           pdnn__format_bytes(pl->total, b, sizeof b), d->ordinal);
    }
    RETURN_IF_FAILED(set_conv_descriptors(d, c, pl));
    char *ws = pl->total > 0 ? ptr(ws_buf) : NULL;
    const float one = 1.0f, zero = 0.0f;
    const void *w = ptr(c->w_buf);
    if (pl->w_copy) {
        DNN(cudnnTransformTensor, d->dnn, &one, d->t[TW_SRC], w, &zero, d->t[TW_DST], ws + pl->w_off);
        w = ws + pl->w_off;
    }
    const void *x = ptr(c->x_buf);
    if (pl->x_copy) {
        /* Zero the padded buffer, then place the image at (pad_top, pad_left). */
        const int64_t pdims[4] = {c->n, c->c, pl->hp, pl->wp};
        const int64_t idims[4] = {c->n, c->c, c->h, c->w};
        int64_t pst[4];
        pdnn__layout_strides(pl->x_copy_layout, pdims, pst);
        size_t bytes = (size_t)(c->n * c->c * pl->hp * pl->wp) * sizeof(float);
        CU(cudaMemsetAsync, ws + pl->x_off, 0, bytes, d->stream);
        RETURN_IF_FAILED(set_4d(d->t[TB], idims, pst));
        char *origin = ws + pl->x_off + (size_t)(c->pad_top * pst[2] + c->pad_left * pst[3]) * sizeof(float);
        DNN(cudnnTransformTensor, d->dnn, &one, d->t[TX_SRC], x, &zero, d->t[TB], origin);
        x = ws + pl->x_off;
    }
    if (c->bias_buf.region) { /* t[TB] is the bias from here on, for the fused call or the add */
        const int64_t bdims[4] = {1, c->k, 1, 1};
        RETURN_IF_FAILED(set_packed(d->t[TB], PDNN_NCHW, bdims));
    }
    void *y = pl->y_copy ? (void *)(ws + pl->y_off) : ptr(c->y_buf);
    void *algo_ws = pl->algo_bytes > 0 ? ws + pl->algo_off : NULL;
    const void *z = c->z_buf.region ? ptr(c->z_buf) : NULL;
    const pdnn_layout xl = pl->x_copy ? pl->x_copy_layout : c->x_layout;
    if (!pl->y_copy && c->bias_buf.region && c->relu && xl == PDNN_NCHW && c->y_layout == PDNN_NCHW) {
        /* Convolution, bias, residual and relu in one cuDNN call instead of
         * up to four (each a launch and a pass over y). cuDNN takes z only
         * beside y's descriptor, and needs one even with alpha2 0: then y.
         * NCHW only: alternated with separate calls on an H100 (cuDNN
         * 9.19), it took GoogLeNet and ResNet-50 1.1-1.8x faster in NCHW
         * but up to 1.9x slower in NHWC (bench/results-gpu.md). */
        const float alpha2 = z ? 1.0f : 0.0f;
        cudnnStatus_t s = dnn.cudnnConvolutionBiasActivationForward(
            d->dnn, &one, d->t[TX], x, d->filt, w, d->conv, pl->algo, algo_ws, pl->algo_bytes, &alpha2, d->t[TY],
            z ? z : y, d->t[TB], ptr(c->bias_buf), d->relu, d->t[TY], y);
        if (s == CUDNN_STATUS_SUCCESS)
            return PDNN_SUCCESS;
        if (s != CUDNN_STATUS_NOT_SUPPORTED)
            return dnn_fail("cudnnConvolutionBiasActivationForward", s);
        /* Refused before it ran anything: the separate calls below. */
        pdnn__debug("CUDA: cudnnConvolutionBiasActivationForward: %s; bias and relu run apart",
                    dnn.cudnnGetErrorString(s));
    }
    DNN(cudnnConvolutionForward, d->dnn, &one, d->t[TX], x, d->filt, w, d->conv, pl->algo, algo_ws,
        pl->algo_bytes, &zero, d->t[TY], y);
    /* From here on t[TY] describes the call's output as stored. */
    const int64_t ydims[4] = {c->n, c->k, c->p, c->q};
    if (pl->y_copy) {
        RETURN_IF_FAILED(set_4d(d->t[TX_SRC], ydims, c->ys));
        DNN(cudnnTransformTensor, d->dnn, &one, d->t[TY], y, &zero, d->t[TX_SRC], ptr(c->y_buf));
        RETURN_IF_FAILED(set_4d(d->t[TY], ydims, c->ys));
    }
    if (c->bias_buf.region)
        DNN(cudnnAddTensor, d->dnn, &one, d->t[TB], ptr(c->bias_buf), &one, d->t[TY], ptr(c->y_buf));
    if (z) /* z has y's dims, layout and strides */
        DNN(cudnnAddTensor, d->dnn, &one, d->t[TY], z, &one, d->t[TY], ptr(c->y_buf));
    if (c->relu)
        DNN(cudnnActivationForward, d->dnn, d->relu, &one, d->t[TY], ptr(c->y_buf), &zero, d->t[TY],
            ptr(c->y_buf));
    return PDNN_SUCCESS;
}

/* No CUDA algorithm has configurations of ours to tune: cuDNN chose (or
 * was told) its kernel in plan. */
static void report_untuned(const pdnn__plan *plan, pdnn__run_report *rep)
{
    if (!rep)
        return;
    memset(rep, 0, sizeof *rep);
    rep->config = -1;
    snprintf(rep->config_name, sizeof rep->config_name, "%s", plan->config_name);
}

static pdnn_status cu_conv_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                               pdnn__run_report *rep)
{
    cu_dev *d = dev;
    conv_plan pl;
    memcpy(&pl, plan->state, sizeof pl);
    pdnn_status st = lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = conv_run(d, &call->u.conv2d, &pl, ws);
    pthread_mutex_unlock(&d->lock);
    report_untuned(plan, rep);
    return st;
}

/* AUTO's order is the one polydnn used on CUDA before the registry:
 * cuDNN's own choice, then its GEMM (ungrouped only), then implicit GEMM,
 * which cuDNN runs for every call it can describe. */
static const pdnn__algo cu_conv_vendor = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "vendor",
    .id = PDNN_CONV_ALGO_VENDOR,
    .rank = 0,
    .plan = vendor_plan,
    .run = cu_conv_run,
    .residual = 1,
    .tol = PDNN__TOL_F32(PDNN__TOL_WINOGRAD),
};
static const pdnn__algo cu_conv_gemm = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "im2col_gemm",
    .id = PDNN_CONV_ALGO_IM2COL_GEMM,
    .rank = 1,
    .plan = gemm_plan,
    .run = cu_conv_run,
    .residual = 1,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};
static const pdnn__algo cu_conv_direct = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "direct",
    .id = PDNN_CONV_ALGO_DIRECT,
    .rank = 2,
    .plan = direct_plan,
    .run = cu_conv_run,
    .residual = 1,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};
static const pdnn__algo *const cu_conv_algos[] = {&cu_conv_vendor, &cu_conv_gemm, &cu_conv_direct, NULL};

/* ---- pooling -------------------------------------------------------------- */

/* Why cuDNN cannot pool c exactly on one axis (NULL if it can): cuDNN pads
 * both sides by pad_top/pad_left and counts the whole window in the
 * include-padding divisor. */
static const char *pool_axis_problem(int64_t in, int64_t out, int win, int stride, int pad_a, int pad_b,
                                     pdnn_pool_mode mode)
{
    if (in + 2 * (int64_t)pad_a < win || (in + 2 * (int64_t)pad_a - win) / stride + 1 != out)
        return pad_a != pad_b ? "asymmetric padding that cuDNN's symmetric padding cannot express"
                              : "a ceil-mode output size that cuDNN's floor formula does not produce";
    /* Max and exclude-padding see only the image: equal windows suffice.
     * Include-padding divides by the window, which PyTorch clips at the
     * end of the padding. */
    if (mode == PDNN_POOL_AVG_INCLUDE_PADDING && (out - 1) * stride - pad_a + win > in + pad_b)
        return "an include-padding window that runs past the padding (PyTorch's clipped divisor)";
    return NULL;
}

/* Why cuDNN cannot pool c with its own padding (NULL if it can). */
static const char *pool_problem(const pdnn__pool2d_call *c)
{
    const char *why = pool_axis_problem(c->h, c->p, c->win_h, c->stride_h, c->pad_top, c->pad_bottom, c->mode);
    return why ? why : pool_axis_problem(c->w, c->q, c->win_w, c->stride_w, c->pad_left, c->pad_right, c->mode);
}

/* How one pooling runs; plan() writes it into pdnn__plan.state. Where
 * cuDNN's padding cannot express c (why set), c runs on a padded copy of
 * the input (pool_math.h): pooled unpadded, and for averages rescaled per
 * output position. The workspace then holds the copy, and for averages
 * the P x Q scale after it. */
typedef struct pool_plan {
    const char *why;      /* NULL: cuDNN's own padding; else pool_problem's (static) reason */
    pdnn__pool_axis ah, aw;
    int64_t hp, wp;       /* padded input height and width */
    int64_t hc, wc;       /* input rows and columns copied (the rest no window reads) */
    size_t scale_off, total;
} pool_plan;

_Static_assert(sizeof(pool_plan) <= sizeof(((pdnn__plan *)0)->state), "pool_plan must fit in pdnn__plan.state");

static void plan_pool(const pdnn__pool2d_call *c, pool_plan *pl)
{
    memset(pl, 0, sizeof *pl);
    pl->why = pool_problem(c);
    if (!pl->why)
        return;
    pdnn__pool_axes(c, &pl->ah, &pl->aw);
    pl->hp = pdnn__pool_padded_length(&pl->ah, &pl->hc);
    pl->wp = pdnn__pool_padded_length(&pl->aw, &pl->wc);
    pl->scale_off = align256((size_t)(c->n * c->c * pl->hp * pl->wp) * sizeof(float));
    pl->total = pl->scale_off;
    if (c->mode != PDNN_POOL_MAX)
        pl->total += align256((size_t)(c->p * c->q) * sizeof(float));
}

static int dims_fit(const int64_t dims[4], const int64_t st[4])
{
    for (int i = 0; i < 4; i++)
        if (!fits_int(dims[i]) || !fits_int(st[i]))
            return 0;
    return 1;
}

/* The padded copy's element strides: packed, in the input's layout family. */
static void pool_pad_strides(const pdnn__pool2d_call *c, const pool_plan *pl, int64_t pst[4])
{
    const int64_t pdims[4] = {c->n, c->c, pl->hp, pl->wp};
    pdnn__layout_strides(c->x_layout == PDNN_NHWC ? PDNN_NHWC : PDNN_NCHW, pdims, pst);
}

/* Which tensor of pooling c as pl runs it cuDNN cannot describe (its
 * descriptors take int sizes and strides), or NULL. */
static const char *pool_too_large(const pdnn__pool2d_call *c, const pool_plan *pl)
{
    const int64_t xdims[4] = {c->n, c->c, c->h, c->w};
    const int64_t ydims[4] = {c->n, c->c, c->p, c->q};
    if (!dims_fit(xdims, c->xs))
        return "input";
    if (!dims_fit(ydims, c->ys))
        return "output";
    if (pl->why) {
        const int64_t pdims[4] = {c->n, c->c, pl->hp, pl->wp};
        int64_t pst[4];
        pool_pad_strides(c, pl, pst);
        if (!dims_fit(pdims, pst))
            return "padded input copy";
    }
    return NULL;
}

static void cu_pool_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev; /* the plan is arithmetic only: nothing to ask cuDNN yet */
    const pdnn__pool2d_call *c = &call->u.pool2d;
    pool_plan pl;
    plan_pool(c, &pl);
    const char *big = pool_too_large(c, &pl);
    if (big) {
        pdnn__plan_refuse(plan,
                          "CUDA: pool2d of a %lldx%lldx%lldx%lld input to %lldx%lld: its %s is too large for cuDNN, "
                          "whose descriptors take int sizes and strides",
                          (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w, (long long)c->p,
                          (long long)c->q, big);
        return;
    }
    plan->supported = 1;
    plan->workspace = pl.total;
    memcpy(plan->state, &pl, sizeof pl); /* state is bytes: copy, never alias */
}

/* Copies the divisor scale into the workspace at dst. The host copy is
 * freed here, so the copy is waited for first. */
static pdnn_status upload_scale(cu_dev *d, const pool_plan *pl, pdnn_pool_mode mode, void *dst)
{
    const size_t bytes = (size_t)(pl->ah.out * pl->aw.out) * sizeof(float);
    float *scale = malloc(bytes);
    if (!scale)
        return pdnn__host_oom("CUDA: pool2d", "the average divisor scale", bytes);
    pdnn__pool_avg_scale(&pl->ah, &pl->aw, mode, scale);
    const char *call = "cudaMemcpyAsync";
    cudaError_t e = rt.cudaMemcpyAsync(dst, scale, bytes, cudaMemcpyHostToDevice, d->stream);
    if (e == cudaSuccess) {
        call = "cudaStreamSynchronize";
        e = rt.cudaStreamSynchronize(d->stream);
    }
    free(scale);
    return e == cudaSuccess ? PDNN_SUCCESS : cuda_fail(call, e);
}

/* Tensor descriptor slots used by a padded pooling. */
enum { TP_PAD, TP_SRC, TP_DST, TP_Y, TP_SCALE };

/* Pools c through a padded copy (see pool_plan) in the workspace at
 * ws_buf. Called with d->lock held and the cuDNN handle created. */
static pdnn_status pool_padded_run(cu_dev *d, const pdnn__pool2d_call *c, const pool_plan *pl, pdnn__buf ws_buf)
{
    if (!ws_buf.region) {
        char b[32];
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "CUDA: pool2d (window %dx%d, stride %d,%d, pad %d,%d,%d,%d, output %lldx%lld) has %s, "
                           "so it runs on a padded copy needing %s of workspace on device %d, but got none",
                           c->win_h, c->win_w, c->stride_h, c->stride_w, c->pad_top, c->pad_bottom, c->pad_left,
                           c->pad_right, (long long)c->p, (long long)c->q, pl->why,
                           pdnn__format_bytes(pl->total, b, sizeof b), d->ordinal);
    }
    char *ws = ptr(ws_buf);
    void *y = ptr(c->y_buf);
    const int avg = c->mode != PDNN_POOL_MAX;
    if (avg) /* first, so that its wait is for earlier work only */
        RETURN_IF_FAILED(upload_scale(d, pl, c->mode, ws + pl->scale_off));

    /* The padded copy, in the input's layout: fill, then the image at
     * (pad_top, pad_left). -inf never wins a max (every window holds an
     * image element); 0 adds nothing to a sum. */
    const int64_t pdims[4] = {c->n, c->c, pl->hp, pl->wp};
    const int64_t cdims[4] = {c->n, c->c, pl->hc, pl->wc};
    const int64_t ydims[4] = {c->n, c->c, c->p, c->q};
    int64_t pst[4];
    pool_pad_strides(c, pl, pst);
    RETURN_IF_FAILED(set_4d(d->t[TP_PAD], pdims, pst));
    RETURN_IF_FAILED(set_4d(d->t[TP_SRC], cdims, c->xs));
    RETURN_IF_FAILED(set_4d(d->t[TP_DST], cdims, pst));
    RETURN_IF_FAILED(set_4d(d->t[TP_Y], ydims, c->ys));
    const float fill = avg ? 0.0f : -INFINITY;
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnSetTensor, d->dnn, d->t[TP_PAD], ws, &fill);
    char *origin = ws + (size_t)(c->pad_top * pst[2] + c->pad_left * pst[3]) * sizeof(float);
    DNN(cudnnTransformTensor, d->dnn, &one, d->t[TP_SRC], ptr(c->x_buf), &zero, d->t[TP_DST], origin);

    /* hp and wp give exactly P x Q windows unpadded; with no padding both
     * average modes divide by the whole window. */
    DNN(cudnnSetPooling2dDescriptor, d->pool,
        avg ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING : CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_PROPAGATE_NAN,
        c->win_h, c->win_w, 0, 0, c->stride_h, c->stride_w);
    DNN(cudnnPoolingForward, d->dnn, d->pool, &one, d->t[TP_PAD], ws, &zero, d->t[TP_Y], y);
    if (avg) {
        /* y *= scale, the 1 x 1 x P x Q scale broadcast over N and C;
         * C aliasing A is allowed. */
        const int64_t sdims[4] = {1, 1, c->p, c->q};
        RETURN_IF_FAILED(set_packed(d->t[TP_SCALE], PDNN_NCHW, sdims));
        DNN(cudnnOpTensor, d->dnn, d->mul, &one, d->t[TP_Y], y, &one, d->t[TP_SCALE], ws + pl->scale_off, &zero,
            d->t[TP_Y], y);
    }
    return PDNN_SUCCESS;
}

/* Pools c with cuDNN's own padding. Called with d->lock held and the
 * cuDNN handle created. */
static pdnn_status pool_run(cu_dev *d, const pdnn__pool2d_call *c)
{
    const int64_t xdims[4] = {c->n, c->c, c->h, c->w};
    const int64_t ydims[4] = {c->n, c->c, c->p, c->q};
    RETURN_IF_FAILED(set_4d(d->t[0], xdims, c->xs));
    RETURN_IF_FAILED(set_4d(d->t[1], ydims, c->ys));
    cudnnPoolingMode_t mode = c->mode == PDNN_POOL_MAX ? CUDNN_POOLING_MAX_DETERMINISTIC
                              : c->mode == PDNN_POOL_AVG_INCLUDE_PADDING
                                  ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                  : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    DNN(cudnnSetPooling2dDescriptor, d->pool, mode, CUDNN_PROPAGATE_NAN, c->win_h, c->win_w, c->pad_top,
        c->pad_left, c->stride_h, c->stride_w);
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnPoolingForward, d->dnn, d->pool, &one, d->t[0], ptr(c->x_buf), &zero, d->t[1], ptr(c->y_buf));
    return PDNN_SUCCESS;
}

static pdnn_status cu_pool_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                               pdnn__run_report *rep)
{
    cu_dev *d = dev;
    pool_plan pl;
    memcpy(&pl, plan->state, sizeof pl);
    pdnn_status st = lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = pl.why ? pool_padded_run(d, &call->u.pool2d, &pl, ws) : pool_run(d, &call->u.pool2d);
    pthread_mutex_unlock(&d->lock);
    report_untuned(plan, rep);
    return st;
}

/* One way to pool: cuDNN, on a padded copy where its padding falls short. */
static const pdnn__algo cu_pool_cudnn = {
    .op = PDNN__OP_POOL2D_FWD,
    .name = "cudnn",
    .rank = 0,
    .plan = cu_pool_plan,
    .run = cu_pool_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};
static const pdnn__algo *const cu_pool_algos[] = {&cu_pool_cudnn, NULL};

/* ---- backward convolution and pooling ------------------------------------ */

/* Runs backward data or filter c as pl says (see bwd_select), with
 * pl->total bytes of workspace at ws_buf. The copies mirror the forward's:
 * dy goes through an NCHW copy when pl->y_copy; backward data computes a
 * padded dx in the workspace when pl->x_copy and keeps its image part;
 * backward filter reads a padded x and writes a repacked dw there when
 * pl->w_copy, repacking it into the call's filter layout after. Called
 * with d->lock held and the cuDNN handle created. */
static pdnn_status conv_bwd_run(cu_dev *d, pdnn__op op, const pdnn__conv2d_call *c, const conv_plan *pl,
                                pdnn__buf ws_buf)
{
    if (pl->total > 0 && !ws_buf.region) {
        char b[32];
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "CUDA: this convolution backward needs %s of workspace on device %d but got none",
                           pdnn__format_bytes(pl->total, b, sizeof b), d->ordinal);
    }
    RETURN_IF_FAILED(set_conv_descriptors(d, c, pl));
    char *ws = pl->total > 0 ? ptr(ws_buf) : NULL;
    void *algo_ws = pl->algo_bytes > 0 ? ws + pl->algo_off : NULL;
    const float one = 1.0f, zero = 0.0f;
    const int64_t ydims[4] = {c->n, c->k, c->p, c->q};
    const int64_t idims[4] = {c->n, c->c, c->h, c->w};
    const void *dy = ptr(c->y_buf);
    if (pl->y_copy) {
        RETURN_IF_FAILED(set_4d(d->t[TB], ydims, c->ys));
        DNN(cudnnTransformTensor, d->dnn, &one, d->t[TB], dy, &zero, d->t[TY], ws + pl->y_off);
        dy = ws + pl->y_off;
    }
    /* The padded x (or dx) buffer's strides and the image's origin in it. */
    int64_t pst[4] = {0, 0, 0, 0};
    char *origin = NULL;
    if (pl->x_copy) {
        const int64_t pdims[4] = {c->n, c->c, pl->hp, pl->wp};
        pdnn__layout_strides(pl->x_copy_layout, pdims, pst);
        origin = ws + pl->x_off + (size_t)(c->pad_top * pst[2] + c->pad_left * pst[3]) * sizeof(float);
    }
    if (op == PDNN__OP_CONV2D_BWD_DATA) {
        const void *w = ptr(c->w_buf);
        if (pl->w_copy) {
            DNN(cudnnTransformTensor, d->dnn, &one, d->t[TW_SRC], w, &zero, d->t[TW_DST], ws + pl->w_off);
            w = ws + pl->w_off;
        }
        void *dx = pl->x_copy ? (void *)(ws + pl->x_off) : ptr(c->x_buf);
        DNN(cudnnConvolutionBackwardData, d->dnn, &one, d->filt, w, d->t[TY], dy, d->conv,
            (cudnnConvolutionBwdDataAlgo_t)pl->bwd_algo, algo_ws, pl->algo_bytes, &zero, d->t[TX], dx);
        if (pl->x_copy) {
            /* The gradient of the padding is dropped: only the image part is dx. */
            RETURN_IF_FAILED(set_4d(d->t[TB], idims, pst));
            DNN(cudnnTransformTensor, d->dnn, &one, d->t[TB], origin, &zero, d->t[TX_SRC], ptr(c->x_buf));
        }
        return PDNN_SUCCESS;
    }
    const void *x = ptr(c->x_buf);
    if (pl->x_copy) {
        const size_t bytes = (size_t)(c->n * c->c * pl->hp * pl->wp) * sizeof(float);
        CU(cudaMemsetAsync, ws + pl->x_off, 0, bytes, d->stream);
        RETURN_IF_FAILED(set_4d(d->t[TB], idims, pst));
        DNN(cudnnTransformTensor, d->dnn, &one, d->t[TX_SRC], x, &zero, d->t[TB], origin);
        x = ws + pl->x_off;
    }
    void *dw = pl->w_copy ? (void *)(ws + pl->w_off) : ptr(c->w_buf);
    DNN(cudnnConvolutionBackwardFilter, d->dnn, &one, d->t[TX], x, d->t[TY], dy, d->conv,
        (cudnnConvolutionBwdFilterAlgo_t)pl->bwd_algo, algo_ws, pl->algo_bytes, &zero, d->filt, dw);
    if (pl->w_copy)
        DNN(cudnnTransformTensor, d->dnn, &one, d->t[TW_DST], dw, &zero, d->t[TW_SRC], ptr(c->w_buf));
    return PDNN_SUCCESS;
}

static pdnn_status cu_conv_bwd_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                   pdnn__run_report *rep)
{
    cu_dev *d = dev;
    conv_plan pl;
    memcpy(&pl, plan->state, sizeof pl);
    pdnn_status st = lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = conv_bwd_run(d, call->op, &call->u.conv2d, &pl, ws);
    pthread_mutex_unlock(&d->lock);
    report_untuned(plan, rep);
    return st;
}

static const pdnn__algo cu_bwd_data_vendor = {
    .op = PDNN__OP_CONV2D_BWD_DATA,
    .name = "vendor",
    .id = PDNN_CONV_ALGO_VENDOR,
    .rank = 0,
    .plan = vendor_plan,
    .run = cu_conv_bwd_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_WINOGRAD),
};
static const pdnn__algo cu_bwd_data_direct = {
    .op = PDNN__OP_CONV2D_BWD_DATA,
    .name = "direct",
    .id = PDNN_CONV_ALGO_DIRECT,
    .rank = 1,
    .plan = direct_plan,
    .run = cu_conv_bwd_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};
static const pdnn__algo *const cu_bwd_data_algos[] = {&cu_bwd_data_vendor, &cu_bwd_data_direct, NULL};
static const pdnn__algo cu_bwd_filter_vendor = {
    .op = PDNN__OP_CONV2D_BWD_FILTER,
    .name = "vendor",
    .id = PDNN_CONV_ALGO_VENDOR,
    .rank = 0,
    .plan = vendor_plan,
    .run = cu_conv_bwd_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_WINOGRAD),
};
static const pdnn__algo cu_bwd_filter_direct = {
    .op = PDNN__OP_CONV2D_BWD_FILTER,
    .name = "direct",
    .id = PDNN_CONV_ALGO_DIRECT,
    .rank = 1,
    .plan = direct_plan,
    .run = cu_conv_bwd_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};
static const pdnn__algo *const cu_bwd_filter_algos[] = {&cu_bwd_filter_vendor, &cu_bwd_filter_direct, NULL};

/* db: cuDNN's reduction of dy over N, H and W, in dy's layout as stored. */
static void cu_bwd_bias_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t ydims[4] = {c->n, c->k, c->p, c->q};
    if (!dims_fit(ydims, c->ys))
        pdnn__plan_refuse(plan, "CUDA: conv2d backward bias: dy (%lldx%lldx%lldx%lld) is too large for cuDNN, "
                                "whose descriptors take int sizes and strides",
                          (long long)c->n, (long long)c->k, (long long)c->p, (long long)c->q);
}

static pdnn_status bwd_bias_run(cu_dev *d, const pdnn__conv2d_call *c)
{
    const int64_t ydims[4] = {c->n, c->k, c->p, c->q};
    const int64_t bdims[4] = {1, c->k, 1, 1};
    RETURN_IF_FAILED(set_4d(d->t[TY], ydims, c->ys));
    RETURN_IF_FAILED(set_packed(d->t[TB], PDNN_NCHW, bdims));
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnConvolutionBackwardBias, d->dnn, &one, d->t[TY], ptr(c->y_buf), &zero, d->t[TB], ptr(c->bias_buf));
    return PDNN_SUCCESS;
}

static pdnn_status cu_bwd_bias_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                   pdnn__run_report *rep)
{
    (void)ws;
    cu_dev *d = dev;
    pdnn_status st = lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = bwd_bias_run(d, &call->u.conv2d);
    pthread_mutex_unlock(&d->lock);
    report_untuned(plan, rep);
    return st;
}

static const pdnn__algo cu_bwd_bias_cudnn = {
    .op = PDNN__OP_CONV2D_BWD_BIAS,
    .name = "vendor",
    .id = PDNN_CONV_ALGO_VENDOR,
    .rank = 0,
    .plan = cu_bwd_bias_plan,
    .run = cu_bwd_bias_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_WINOGRAD),
};
static const pdnn__algo *const cu_bwd_bias_algos[] = {&cu_bwd_bias_cudnn, NULL};

/* Pooling backward: cudnnPoolingBackward needs the forward's y, so the
 * plan's workspace holds y recomputed with cudnnPoolingForward in dy's
 * strides (cuDNN wants y and dy alike), and, where dx's strides differ
 * from x's, dx computed in x's strides and then copied into place.
 * Which of several equal maxima cuDNN's max-pooling backward credits is
 * not documented (polydnn's rule: the first in row-major window order);
 * see HACKING.md. Calls whose padding cuDNN cannot express (the forward
 * pools a padded copy there) are refused for now. */
typedef struct pool_bwd_plan {
    int dx_copy;
    size_t y_bytes, dx_off, total;
} pool_bwd_plan;

_Static_assert(sizeof(pool_bwd_plan) <= sizeof(((pdnn__plan *)0)->state),
               "pool_bwd_plan must fit in pdnn__plan.state");

/* Bytes spanned by a tensor of dims with element strides st. */
static size_t strided_bytes(const int64_t dims[4], const int64_t st[4])
{
    int64_t last = 0;
    for (int i = 0; i < 4; i++)
        last += (dims[i] - 1) * st[i];
    return (size_t)(last + 1) * sizeof(float);
}

static void cu_pool_bwd_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__pool2d_call *c = &call->u.pool2d;
    const char *why = pool_problem(c);
    if (why) {
        pdnn__plan_refuse(plan,
                          "CUDA: pool2d backward (window %dx%d, stride %d,%d, pad %d,%d,%d,%d) has %s; the CUDA "
                          "backend runs such pooling forward on a padded copy but has no backward for it yet",
                          c->win_h, c->win_w, c->stride_h, c->stride_w, c->pad_top, c->pad_bottom, c->pad_left,
                          c->pad_right, why);
        return;
    }
    const int64_t xdims[4] = {c->n, c->c, c->h, c->w};
    const int64_t ydims[4] = {c->n, c->c, c->p, c->q};
    if (!dims_fit(xdims, c->xs) || !dims_fit(xdims, c->dxs) || !dims_fit(ydims, c->ys)) {
        pdnn__plan_refuse(plan,
                          "CUDA: pool2d backward of a %lldx%lldx%lldx%lld input is too large for cuDNN, whose "
                          "descriptors take int sizes and strides",
                          (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w);
        return;
    }
    pool_bwd_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.y_bytes = align256(strided_bytes(ydims, c->ys));
    pl.dx_copy = memcmp(c->xs, c->dxs, sizeof c->xs) != 0;
    pl.dx_off = pl.y_bytes;
    pl.total = pl.y_bytes + (pl.dx_copy ? align256(strided_bytes(xdims, c->xs)) : 0);
    plan->supported = 1;
    plan->workspace = pl.total;
    memcpy(plan->state, &pl, sizeof pl); /* state is bytes: copy, never alias */
}

/* Called with d->lock held and the cuDNN handle created. */
static pdnn_status pool_bwd_run(cu_dev *d, const pdnn__pool2d_call *c, const pool_bwd_plan *pl, pdnn__buf ws_buf)
{
    if (!ws_buf.region)
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "CUDA: pool2d backward needs %zu bytes of workspace on device %d (the recomputed "
                           "forward output) but got none",
                           pl->total, d->ordinal);
    char *ws = ptr(ws_buf);
    const int64_t xdims[4] = {c->n, c->c, c->h, c->w};
    const int64_t ydims[4] = {c->n, c->c, c->p, c->q};
    RETURN_IF_FAILED(set_4d(d->t[0], xdims, c->xs));
    RETURN_IF_FAILED(set_4d(d->t[1], ydims, c->ys));
    RETURN_IF_FAILED(set_4d(d->t[2], xdims, c->dxs));
    cudnnPoolingMode_t mode = c->mode == PDNN_POOL_MAX ? CUDNN_POOLING_MAX_DETERMINISTIC
                              : c->mode == PDNN_POOL_AVG_INCLUDE_PADDING
                                  ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                  : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    DNN(cudnnSetPooling2dDescriptor, d->pool, mode, CUDNN_PROPAGATE_NAN, c->win_h, c->win_w, c->pad_top,
        c->pad_left, c->stride_h, c->stride_w);
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnPoolingForward, d->dnn, d->pool, &one, d->t[0], ptr(c->x_buf), &zero, d->t[1], ws);
    void *dx = pl->dx_copy ? (void *)(ws + pl->dx_off) : ptr(c->dx_buf);
    DNN(cudnnPoolingBackward, d->dnn, d->pool, &one, d->t[1], ws, d->t[1], ptr(c->dy_buf), d->t[0], ptr(c->x_buf),
        &zero, d->t[0], dx);
    if (pl->dx_copy)
        DNN(cudnnTransformTensor, d->dnn, &one, d->t[0], dx, &zero, d->t[2], ptr(c->dx_buf));
    return PDNN_SUCCESS;
}

static pdnn_status cu_pool_bwd_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                   pdnn__run_report *rep)
{
    cu_dev *d = dev;
    pool_bwd_plan pl;
    memcpy(&pl, plan->state, sizeof pl);
    pdnn_status st = lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = pool_bwd_run(d, &call->u.pool2d, &pl, ws);
    pthread_mutex_unlock(&d->lock);
    report_untuned(plan, rep);
    return st;
}

static const pdnn__algo cu_pool_bwd_cudnn = {
    .op = PDNN__OP_POOL2D_BWD,
    .name = "cudnn",
    .rank = 0,
    .plan = cu_pool_bwd_plan,
    .run = cu_pool_bwd_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};
static const pdnn__algo *const cu_pool_bwd_algos[] = {&cu_pool_bwd_cudnn, NULL};

/* ---- the ops around convolution ------------------------------------------ */

/* Elementwise ops run over chunks of at most this many elements, viewed
 * as 1 x 1 x 1 x len tensors. */
#define EW_CHUNK ((int64_t)1 << 30)

static pdnn_status set_vec(cudnnTensorDescriptor_t t, int64_t len)
{
    const int64_t dims[4] = {1, 1, 1, len};
    return set_packed(t, PDNN_NCHW, dims);
}

static pdnn_status add_run(cu_dev *d, pdnn__buf a, pdnn__buf b, pdnn__buf y, int64_t n)
{
    const float one = 1.0f, two = 2.0f, zero = 0.0f;
    char *pa = ptr(a), *pb = ptr(b), *py = ptr(y);
    if (pb == py && pa != py) { /* cuDNN allows C to alias A, not B: a + b = b + a */
        char *t = pa;
        pa = pb;
        pb = t;
    }
    for (int64_t i = 0; i < n; i += EW_CHUNK) {
        const int64_t len = n - i < EW_CHUNK ? n - i : EW_CHUNK;
        const size_t off = (size_t)i * sizeof(float);
        RETURN_IF_FAILED(set_vec(d->t[0], len));
        if (pa == pb && pb == py) /* y += y, exactly 2y */
            DNN(cudnnScaleTensor, d->dnn, d->t[0], py + off, &two);
        else
            DNN(cudnnOpTensor, d->dnn, d->add, &one, d->t[0], pa + off, &one, d->t[0], pb + off, &zero, d->t[0],
                py + off);
    }
    return PDNN_SUCCESS;
}

/* y = a(x) over n elements, in chunks cuDNN's 4-D descriptors can hold. */
static pdnn_status activation_chunks(cu_dev *d, cudnnActivationDescriptor_t a, pdnn__buf x, pdnn__buf y, int64_t n)
{
    const float one = 1.0f, zero = 0.0f;
    for (int64_t i = 0; i < n; i += EW_CHUNK) {
        const int64_t len = n - i < EW_CHUNK ? n - i : EW_CHUNK;
        const size_t off = (size_t)i * sizeof(float);
        RETURN_IF_FAILED(set_vec(d->t[0], len));
        DNN(cudnnActivationForward, d->dnn, a, &one, d->t[0], (char *)ptr(x) + off, &zero, d->t[0],
            (char *)ptr(y) + off);
    }
    return PDNN_SUCCESS;
}

static pdnn_status relu_run(cu_dev *d, pdnn__buf x, pdnn__buf y, int64_t n)
{
    return activation_chunks(d, d->relu, x, y, n);
}

/* ---- batch normalization -------------------------------------------------- */

/* cuDNN's spatial mode is ours: statistics per channel over N, H, W; its
 * exponentialAverageFactor is our momentum, its running variance takes
 * the unbiased batch variance and its saved inverse variance is
 * 1/sqrt(var + eps), our saved_inv_std. NHWC goes through the strides.
 * The backward always writes dx, dgamma and dbeta: the ones the caller
 * did not ask for go to the workspace (dx first, then 2 C floats). */
typedef struct bn_plan {
    size_t dx_off, dgamma_off, dbeta_off, total;
} bn_plan;

_Static_assert(sizeof(bn_plan) <= sizeof(((pdnn__plan *)0)->state), "bn_plan must fit in pdnn__plan.state");

static void cu_bn_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__bn_call *c = &call->u.bn;
    const int64_t dims[4] = {c->n, c->c, c->h, c->w};
    if (!dims_fit(dims, c->xs) || !fits_int(c->n * c->c * c->h * c->w)) {
        pdnn__plan_refuse(plan, "CUDA: a batch normalization of %lldx%lldx%lldx%lld is too large for cuDNN, whose "
                          "descriptors take int sizes and strides",
                          (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w);
        return;
    }
    if ((double)c->epsilon < CUDNN_BN_MIN_EPSILON) {
        pdnn__plan_refuse(plan, "CUDA: epsilon %g is below cuDNN's minimum %g", (double)c->epsilon,
                          (double)CUDNN_BN_MIN_EPSILON);
        return;
    }
    bn_plan pl;
    memset(&pl, 0, sizeof pl);
    if (call->op == PDNN__OP_BN_BWD) {
        const size_t xbytes = (size_t)(c->n * c->c * c->h * c->w) * sizeof(float);
        const size_t vbytes = align256((size_t)c->c * sizeof(float));
        pl.dx_off = 0;
        pl.dgamma_off = c->dx_buf.region ? 0 : align256(xbytes);
        pl.dbeta_off = pl.dgamma_off + (c->dgamma_buf.region ? 0 : vbytes);
        pl.total = pl.dbeta_off + (c->dbeta_buf.region ? 0 : vbytes);
    }
    plan->workspace = pl.total;
    memcpy(plan->state, &pl, sizeof pl);
}

static pdnn_status bn_run_locked(cu_dev *d, const pdnn__op_call *call, const bn_plan *pl, pdnn__buf ws)
{
    const pdnn__bn_call *c = &call->u.bn;
    const int64_t dims[4] = {c->n, c->c, c->h, c->w};
    const float one = 1.0f, zero = 0.0f;
    RETURN_IF_FAILED(set_4d(d->t[0], dims, c->xs));
    DNN(cudnnDeriveBNTensorDescriptor, d->t[1], d->t[0], CUDNN_BATCHNORM_SPATIAL);
    void *rm = c->running_mean_buf.region ? ptr(c->running_mean_buf) : NULL;
    void *rv = c->running_var_buf.region ? ptr(c->running_var_buf) : NULL;
    switch (call->op) {
    case PDNN__OP_BN_FWD_TRAIN:
        DNN(cudnnBatchNormalizationForwardTraining, d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d->t[0],
            ptr(c->x_buf), d->t[0], ptr(c->y_buf), d->t[1], ptr(c->gamma_buf), ptr(c->beta_buf),
            (double)c->momentum, rm, rv, (double)c->epsilon,
            c->saved_mean_buf.region ? ptr(c->saved_mean_buf) : NULL,
            c->saved_inv_std_buf.region ? ptr(c->saved_inv_std_buf) : NULL);
        return PDNN_SUCCESS;
    case PDNN__OP_BN_FWD_INFER:
        DNN(cudnnBatchNormalizationForwardInference, d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d->t[0],
            ptr(c->x_buf), d->t[0], ptr(c->y_buf), d->t[1], ptr(c->gamma_buf), ptr(c->beta_buf), rm, rv,
            (double)c->epsilon);
        return PDNN_SUCCESS;
    case PDNN__OP_BN_BWD: {
        char *w = ws.region ? (char *)ptr(ws) : NULL;
        void *dx = c->dx_buf.region ? ptr(c->dx_buf) : w + pl->dx_off;
        void *dg = c->dgamma_buf.region ? ptr(c->dgamma_buf) : w + pl->dgamma_off;
        void *db = c->dbeta_buf.region ? ptr(c->dbeta_buf) : w + pl->dbeta_off;
        DNN(cudnnBatchNormalizationBackward, d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, d->t[0],
            ptr(c->x_buf), d->t[0], ptr(c->dy_buf), d->t[0], dx, d->t[1], ptr(c->gamma_buf), dg, db,
            (double)c->epsilon, ptr(c->saved_mean_buf), ptr(c->saved_inv_std_buf));
        return PDNN_SUCCESS;
    }
    default:
        return pdnn__error(PDNN_ERR_INTERNAL, "CUDA: batch normalization called for op %d", (int)call->op);
    }
}

static pdnn_status cu_bn_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)rep;
    cu_dev *d = dev;
    bn_plan pl;
    memcpy(&pl, plan->state, sizeof pl);
    pdnn_status st = lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = bn_run_locked(d, call, &pl, ws);
    pthread_mutex_unlock(&d->lock);
    return st;
}

static const pdnn__algo cu_bn_fwd_train = {
    .op = PDNN__OP_BN_FWD_TRAIN, .name = "vendor", .rank = 0, .plan = cu_bn_plan, .run = cu_bn_run};
static const pdnn__algo cu_bn_fwd_infer = {
    .op = PDNN__OP_BN_FWD_INFER, .name = "vendor", .rank = 0, .plan = cu_bn_plan, .run = cu_bn_run};
static const pdnn__algo cu_bn_bwd = {
    .op = PDNN__OP_BN_BWD, .name = "vendor", .rank = 0, .plan = cu_bn_plan, .run = cu_bn_run};
static const pdnn__algo *const cu_bn_fwd_train_algos[] = {&cu_bn_fwd_train, NULL};
static const pdnn__algo *const cu_bn_fwd_infer_algos[] = {&cu_bn_fwd_infer, NULL};
static const pdnn__algo *const cu_bn_bwd_algos[] = {&cu_bn_bwd, NULL};

static pdnn_status too_large(const char *op)
{
    return pdnn__error(PDNN_ERR_UNSUPPORTED, "CUDA: %s: sizes over %d elements are not supported (cuDNN and "
                                             "cuBLAS take int sizes)",
                       op, INT_MAX);
}

/* y = x + bias over [outer][c][inner], as an NCHW view [outer, c, inner, 1]
 * with the bias broadcast as [1, c, 1, 1]. */
static pdnn_status bias_add_run(cu_dev *d, pdnn__buf x, pdnn__buf bias, pdnn__buf y, int64_t n, int64_t c,
                                int64_t inner, int relu)
{
    const int64_t outer = n / (c * inner);
    if (!fits_int(n))
        return too_large("bias_add");
    const int64_t dims[4] = {outer, c, inner, 1}, bdims[4] = {1, c, 1, 1};
    RETURN_IF_FAILED(set_packed(d->t[0], PDNN_NCHW, dims));
    RETURN_IF_FAILED(set_packed(d->t[1], PDNN_NCHW, bdims));
    const float one = 1.0f, zero = 0.0f;
    /* C may alias A (y may be x). */
    DNN(cudnnOpTensor, d->dnn, d->add, &one, d->t[0], ptr(x), &one, d->t[1], ptr(bias), &zero, d->t[0], ptr(y));
    if (relu)
        DNN(cudnnActivationForward, d->dnn, d->relu, &one, d->t[0], ptr(y), &zero, d->t[0], ptr(y));
    return PDNN_SUCCESS;
}

static pdnn_status softmax_run(cu_dev *d, pdnn__buf x, pdnn__buf y, int64_t outer, int64_t c, int64_t inner)
{
    if (!fits_int(outer) || !fits_int(c) || !fits_int(inner) || outer * c * inner > INT_MAX)
        return too_large("softmax");
    const int64_t dims[4] = {outer, c, inner, 1};
    RETURN_IF_FAILED(set_packed(d->t[0], PDNN_NCHW, dims));
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnSoftmaxForward, d->dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, d->t[0], ptr(x),
        &zero, d->t[0], ptr(y));
    return PDNN_SUCCESS;
}

static pdnn_status cu_add(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf y, int64_t n)
{
    cu_dev *d = dev;
    pdnn_status st = lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = add_run(d, a, b, y, n);
    pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status cu_bias_add(void *dev, pdnn__buf x, pdnn__buf bias, pdnn__buf y, int64_t n, int64_t c,
                               int64_t inner, int relu)
{
    cu_dev *d = dev;
    pdnn_status st = lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = bias_add_run(d, x, bias, y, n, c, inner, relu);
    pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status cu_relu(void *dev, pdnn__buf x, pdnn__buf y, int64_t n)
{
    cu_dev *d = dev;
    pdnn_status st = lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = relu_run(d, x, y, n);
    pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status cu_softmax(void *dev, pdnn__buf x, pdnn__buf y, int64_t outer, int64_t c, int64_t inner)
{
    cu_dev *d = dev;
    pdnn_status st = lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = softmax_run(d, x, y, outer, c, inner);
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
 * row-major buffers read as column-major are already the transposes. */
static void cu_matmul_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__matmul_call *c = &call->u.matmul;
    if (!fits_int(c->m) || !fits_int(c->n) || !fits_int(c->k))
        pdnn__plan_refuse(plan, "cuBLAS takes int sizes; this matmul is %lld x %lld x %lld", (long long)c->m,
                          (long long)c->n, (long long)c->k);
}

static pdnn_status cu_matmul(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)ws;
    cu_dev *d = dev;
    const pdnn__matmul_call *mc = &call->u.matmul;
    const int64_t m = mc->m, n = mc->n, k = mc->k;
    const int trans_a = mc->trans_a, trans_b = mc->trans_b;
    const pdnn__buf a = mc->a_buf, b = mc->b_buf, c = mc->c_buf;
    report_untuned(plan, rep);
    if (!fits_int(m) || !fits_int(n) || !fits_int(k))
        return too_large("matmul");
    pthread_mutex_lock(&d->lock);
    pdnn_status st = ensure_blas(d);
    if (st == PDNN_SUCCESS) {
        const float one = 1.0f, zero = 0.0f;
        cublasStatus_t s = blas.cublasSgemm(d->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                            trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k, &one,
                                            (const float *)ptr(b), (int)(trans_b ? k : n), (const float *)ptr(a),
                                            (int)(trans_a ? m : k), &zero, (float *)ptr(c), (int)n);
        if (s != CUBLAS_STATUS_SUCCESS)
            st = blas_fail("cublasSgemm", s);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* The activations: sigmoid and clip from 0 are cuDNN's (clipped relu; to
 * +infinity, relu). cuDNN has no leaky relu and clips from 0 only, so the
 * others are cudnnOpTensor's MAX and MIN (which propagate NaN, as the
 * reference does): leaky relu is max(x, alpha x) for alpha <= 1 and
 * min(x, alpha x) above (x for x >= 0 either way, alpha x below); another
 * clip is min(max(x, lo), hi) with the bounds in device memory,
 * broadcast. */
static char *elem(pdnn__buf b, int64_t i) { return (char *)ptr(b) + (size_t)i * sizeof(float); }

static pdnn_status leaky_run(cu_dev *d, const pdnn__act_call *c)
{
    const float one = 1.0f, zero = 0.0f, alpha = c->alpha;
    cudnnOpTensorDescriptor_t op = alpha <= 1.0f ? d->max : d->min;
    for (int64_t i = 0; i < c->n; i += EW_CHUNK) {
        const int64_t len = c->n - i < EW_CHUNK ? c->n - i : EW_CHUNK;
        char *x = elem(c->x_buf, i), *y = elem(c->y_buf, i);
        RETURN_IF_FAILED(set_vec(d->t[0], len));
        DNN(cudnnOpTensor, d->dnn, op, &one, d->t[0], x, &alpha, d->t[0], x, &zero, d->t[0], y);
    }
    return PDNN_SUCCESS;
}

static pdnn_status clip_run(cu_dev *d, const pdnn__act_call *c)
{
    const float one = 1.0f, zero = 0.0f;
    static const int64_t scalar[4] = {1, 1, 1, 1};
    if (!d->scalars)
        CU(cudaMalloc, (void **)&d->scalars, 2 * sizeof(float)); /* 8 bytes, kept with the handles */
    float *lo = d->scalars, *hi = d->scalars + 1;
    RETURN_IF_FAILED(set_packed(d->t[1], PDNN_NCHW, scalar));
    DNN(cudnnSetTensor, d->dnn, d->t[1], lo, &c->alpha);
    DNN(cudnnSetTensor, d->dnn, d->t[1], hi, &c->beta);
    for (int64_t i = 0; i < c->n; i += EW_CHUNK) {
        const int64_t len = c->n - i < EW_CHUNK ? c->n - i : EW_CHUNK;
        char *x = elem(c->x_buf, i), *y = elem(c->y_buf, i);
        RETURN_IF_FAILED(set_vec(d->t[0], len));
        DNN(cudnnOpTensor, d->dnn, d->max, &one, d->t[0], x, &one, d->t[1], lo, &zero, d->t[0], y);
        DNN(cudnnOpTensor, d->dnn, d->min, &one, d->t[0], y, &one, d->t[1], hi, &zero, d->t[0], y);
    }
    return PDNN_SUCCESS;
}

/* y = alpha x: cudnnScaleTensor in place, else cudnnAddTensor with beta 0
 * (cuDNN does not read y then). */
static pdnn_status scale_run(cu_dev *d, const pdnn__scale_call *c)
{
    const float zero = 0.0f, alpha = c->alpha;
    const int in_place = c->x_buf.region == c->y_buf.region && c->x_buf.offset == c->y_buf.offset;
    for (int64_t i = 0; i < c->n; i += EW_CHUNK) {
        const int64_t len = c->n - i < EW_CHUNK ? c->n - i : EW_CHUNK;
        char *x = elem(c->x_buf, i), *y = elem(c->y_buf, i);
        RETURN_IF_FAILED(set_vec(d->t[0], len));
        if (in_place)
            DNN(cudnnScaleTensor, d->dnn, d->t[0], y, &alpha);
        else
            DNN(cudnnAddTensor, d->dnn, &alpha, d->t[0], x, &zero, d->t[0], y);
    }
    return PDNN_SUCCESS;
}

static pdnn_status act_run(cu_dev *d, const pdnn__act_call *c)
{
    if (c->mode == PDNN_ACTIVATION_LEAKY_RELU)
        return leaky_run(d, c);
    if (c->mode == PDNN_ACTIVATION_CLIP && c->alpha != 0.0f)
        return clip_run(d, c);
    cudnnActivationDescriptor_t a = d->act;
    if (c->mode == PDNN_ACTIVATION_SIGMOID)
        DNN(cudnnSetActivationDescriptor, a, CUDNN_ACTIVATION_SIGMOID, CUDNN_PROPAGATE_NAN, 0.0);
    else if (isinf(c->beta))
        a = d->relu;
    else
        DNN(cudnnSetActivationDescriptor, a, CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_PROPAGATE_NAN, (double)c->beta);
    return activation_chunks(d, a, c->x_buf, c->y_buf, c->n);
}

/* The layout transform: cudnnTransformTensor between two strided views. */
static pdnn_status transform_run(cu_dev *d, const pdnn__transform_call *c)
{
    const float one = 1.0f, zero = 0.0f;
    RETURN_IF_FAILED(set_4d(d->t[TX], c->dims, c->xs));
    RETURN_IF_FAILED(set_4d(d->t[TY], c->dims, c->ys));
    DNN(cudnnTransformTensor, d->dnn, &one, d->t[TX], ptr(c->x_buf), &zero, d->t[TY], ptr(c->y_buf));
    return PDNN_SUCCESS;
}

/* y = a (op) b: cudnnOpTensor, whose B may have 1 where it repeats. a
 * and y are packed in memory order (NCHW-style strides over dims). */
static pdnn_status binary_run(cu_dev *d, const pdnn__binary_call *c)
{
    const float one = 1.0f, zero = 0.0f;
    int64_t as[4], bd[4], bs[4];
    pdnn__layout_strides(PDNN_NCHW, c->dims, as);
    for (int k = 0; k < 4; k++) {
        bd[k] = c->bs[k] ? c->dims[k] : 1;
        bs[k] = c->bs[k] ? c->bs[k] : 1;
    }
    RETURN_IF_FAILED(set_4d(d->t[TX], c->dims, as));
    RETURN_IF_FAILED(set_4d(d->t[TY], bd, bs));
    DNN(cudnnOpTensor, d->dnn, c->kind == PDNN_BINARY_MUL ? d->mul : d->add, &one, d->t[TX], ptr(c->a_buf), &one,
        d->t[TY], ptr(c->b_buf), &zero, d->t[TX], ptr(c->y_buf));
    return PDNN_SUCCESS;
}

/* ---- the training ops ------------------------------------------------------
 * Relu backward is cudnnActivationBackward; SGD is cudnnOpTensor (v =
 * momentum v + g + wd w) and cudnnAddTensor (w -= lr v, or w = (1 - lr wd)
 * w - lr g without a velocity). Adam (a division and a square root per
 * element) and the fused cross-entropy have no cuDNN or cuBLAS form: Adam
 * is refused here, the cross-entropy has no entry, and soft placement
 * moves those nodes. */

static void cu_train_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    if (call->op == PDNN__OP_OPTIMIZER && call->u.optim.kind != PDNN_OPTIMIZER_SGD)
        pdnn__plan_refuse(plan, "Adam needs an elementwise division and square root, which neither cuDNN nor "
                                "cuBLAS has; place it on another device");
}

static pdnn_status relu_bwd_run(cu_dev *d, const pdnn__relu_bwd_call *c)
{
    const float one = 1.0f, zero = 0.0f;
    for (int64_t i = 0; i < c->n; i += EW_CHUNK) {
        const int64_t len = c->n - i < EW_CHUNK ? c->n - i : EW_CHUNK;
        const size_t off = (size_t)i * sizeof(float);
        char *y = (char *)ptr(c->y_buf) + off;
        RETURN_IF_FAILED(set_vec(d->t[0], len));
        /* y stands for x too: relu's output and input are positive at the same elements. */
        DNN(cudnnActivationBackward, d->dnn, d->relu, &one, d->t[0], y, d->t[0], (char *)ptr(c->dy_buf) + off,
            d->t[0], y, &zero, d->t[0], (char *)ptr(c->dx_buf) + off);
    }
    return PDNN_SUCCESS;
}

static pdnn_status sgd_run(cu_dev *d, const pdnn__optim_call *c)
{
    const float one = 1.0f, mlr = -c->lr, wd = c->weight_decay, mom = c->momentum;
    const float keep = 1.0f - c->lr * c->weight_decay;
    for (int64_t i = 0; i < c->n; i += EW_CHUNK) {
        const int64_t len = c->n - i < EW_CHUNK ? c->n - i : EW_CHUNK;
        const size_t off = (size_t)i * sizeof(float);
        char *w = (char *)ptr(c->w_buf) + off, *g = (char *)ptr(c->g_buf) + off;
        RETURN_IF_FAILED(set_vec(d->t[0], len));
        if (c->s1_buf.region) {
            char *v = (char *)ptr(c->s1_buf) + off;
            DNN(cudnnOpTensor, d->dnn, d->add, &one, d->t[0], g, &wd, d->t[0], w, &mom, d->t[0], v);
            DNN(cudnnAddTensor, d->dnn, &mlr, d->t[0], v, &one, d->t[0], w);
        } else {
            DNN(cudnnAddTensor, d->dnn, &mlr, d->t[0], g, &keep, d->t[0], w);
        }
    }
    return PDNN_SUCCESS;
}

static pdnn_status cu_train_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                pdnn__run_report *rep)
{
    (void)ws;
    cu_dev *d = dev;
    pdnn_status st = lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = call->op == PDNN__OP_RELU_BWD     ? relu_bwd_run(d, &call->u.relu_bwd)
         : call->op == PDNN__OP_ACTIVATION ? act_run(d, &call->u.act)
         : call->op == PDNN__OP_TRANSFORM  ? transform_run(d, &call->u.transform)
         : call->op == PDNN__OP_BINARY     ? binary_run(d, &call->u.binary)
         : call->op == PDNN__OP_SCALE      ? scale_run(d, &call->u.scale)
                                           : sgd_run(d, &call->u.optim);
    pthread_mutex_unlock(&d->lock);
    report_untuned(plan, rep);
    return st;
}

static const pdnn__algo cu_relu_bwd_cudnn = {
    .op = PDNN__OP_RELU_BWD, .name = "cudnn", .rank = 0, .plan = cu_train_plan, .run = cu_train_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
static const pdnn__algo cu_optimizer_cudnn = {
    .op = PDNN__OP_OPTIMIZER, .name = "cudnn", .rank = 0, .plan = cu_train_plan, .run = cu_train_run};
static const pdnn__algo cu_act_cudnn = {
    .op = PDNN__OP_ACTIVATION, .name = "cudnn", .rank = 0, .plan = cu_train_plan, .run = cu_train_run};
static const pdnn__algo *const cu_act_algos[] = {&cu_act_cudnn, NULL};
static const pdnn__algo cu_transform_cudnn = {
    .op = PDNN__OP_TRANSFORM, .name = "cudnn", .rank = 0, .plan = cu_train_plan, .run = cu_train_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
static const pdnn__algo *const cu_transform_algos[] = {&cu_transform_cudnn, NULL};
static const pdnn__algo cu_binary_cudnn = {
    .op = PDNN__OP_BINARY, .name = "cudnn", .rank = 0, .plan = cu_train_plan, .run = cu_train_run};
static const pdnn__algo *const cu_binary_algos[] = {&cu_binary_cudnn, NULL};
static const pdnn__algo cu_scale_cudnn = {
    .op = PDNN__OP_SCALE, .name = "cudnn", .rank = 0, .plan = cu_train_plan, .run = cu_train_run};
static const pdnn__algo *const cu_scale_algos[] = {&cu_scale_cudnn, NULL};
static const pdnn__algo *const cu_relu_bwd_algos[] = {&cu_relu_bwd_cudnn, NULL};
static const pdnn__algo *const cu_optimizer_algos[] = {&cu_optimizer_cudnn, NULL};
static const pdnn__algo cu_matmul_cublas = {
    .op = PDNN__OP_GEMM, .name = "cublas", .rank = 0, .plan = cu_matmul_plan, .run = cu_matmul};
static const pdnn__algo *const cu_matmul_algos[] = {&cu_matmul_cublas, NULL};

const pdnn__backend pdnn__cuda_backend = {
    .name = "cuda",
    .enumerate = cu_enumerate,
    .device_close = cu_close,
    .region_alloc = cu_region_alloc,
    .region_free = cu_region_free,
    .memory_free = cu_memory_free,
    .write = cu_write,
    .read = cu_read,
    .copy = cu_copy,
    .copy_rows = cu_copy_rows,
    .synchronize = cu_sync,
    .in_order = 1,
    .algos = {[PDNN__OP_CONV2D_FWD] = cu_conv_algos,
              [PDNN__OP_POOL2D_FWD] = cu_pool_algos,
              [PDNN__OP_BN_FWD_TRAIN] = cu_bn_fwd_train_algos,
              [PDNN__OP_BN_FWD_INFER] = cu_bn_fwd_infer_algos,
              [PDNN__OP_BN_BWD] = cu_bn_bwd_algos,
              [PDNN__OP_RELU_BWD] = cu_relu_bwd_algos,
              [PDNN__OP_OPTIMIZER] = cu_optimizer_algos,
              [PDNN__OP_CONV2D_BWD_DATA] = cu_bwd_data_algos,
              [PDNN__OP_CONV2D_BWD_FILTER] = cu_bwd_filter_algos,
              [PDNN__OP_CONV2D_BWD_BIAS] = cu_bwd_bias_algos,
              [PDNN__OP_POOL2D_BWD] = cu_pool_bwd_algos,
              [PDNN__OP_GEMM] = cu_matmul_algos,
              [PDNN__OP_ACTIVATION] = cu_act_algos,
              [PDNN__OP_TRANSFORM] = cu_transform_algos,
              [PDNN__OP_BINARY] = cu_binary_algos,
              [PDNN__OP_SCALE] = cu_scale_algos},
    .add = cu_add,
    .bias_add = cu_bias_add,
    .relu = cu_relu,
    .softmax = cu_softmax,
};
