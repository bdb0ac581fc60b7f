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
 * (pre/post padding), which would remove cu_conv.c's padded input copies.
 *
 * This file: the devices, memory and copies, the locked run the op files
 * share, the vtable and the algorithm tables; cu_internal.h maps the rest. */
#include "cu_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- devices ------------------------------------------------------------ */

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
            pdnn__cu_dnn.cudnnDestroyTensorDescriptor(d->t[i]);
    if (d->filt)
        pdnn__cu_dnn.cudnnDestroyFilterDescriptor(d->filt);
    if (d->conv)
        pdnn__cu_dnn.cudnnDestroyConvolutionDescriptor(d->conv);
    if (d->pool)
        pdnn__cu_dnn.cudnnDestroyPoolingDescriptor(d->pool);
    if (d->relu)
        pdnn__cu_dnn.cudnnDestroyActivationDescriptor(d->relu);
    if (d->act)
        pdnn__cu_dnn.cudnnDestroyActivationDescriptor(d->act);
    if (d->add)
        pdnn__cu_dnn.cudnnDestroyOpTensorDescriptor(d->add);
    if (d->mul)
        pdnn__cu_dnn.cudnnDestroyOpTensorDescriptor(d->mul);
    if (d->max)
        pdnn__cu_dnn.cudnnDestroyOpTensorDescriptor(d->max);
    if (d->min)
        pdnn__cu_dnn.cudnnDestroyOpTensorDescriptor(d->min);
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
    cudnnStatus_t s = pdnn__cu_dnn.cudnnSetStream(h, d->stream);
    if (s != CUDNN_STATUS_SUCCESS) {
        pdnn__cu_dnn.cudnnDestroy(h);
        return pdnn__cu_dnn_fail("cudnnSetStream", s);
    }
    d->dnn = h;
    st = create_descriptors(d);
    if (st != PDNN_SUCCESS) {
        destroy_descriptors(d);
        pdnn__cu_dnn.cudnnDestroy(h);
        d->dnn = NULL;
    }
    return st;
}

/* Locks d, readies cuDNN; on success the caller holds the lock. */
pdnn_status pdnn__cu_lock_dnn(cu_dev *d)
{
    pthread_mutex_lock(&d->lock);
    pdnn_status st = ensure_dnn(d);
    if (st != PDNN_SUCCESS)
        pthread_mutex_unlock(&d->lock);
    return st;
}

pdnn_status pdnn__cu_ensure_blas(cu_dev *d)
{
    pdnn_status st = ensure_stream(d);
    if (st != PDNN_SUCCESS || d->blas)
        return st;
    cublasHandle_t h = NULL;
    cublasStatus_t s = pdnn__cu_blas.cublasCreate(&h);
    if (s != CUBLAS_STATUS_SUCCESS)
        return pdnn__cu_blas_fail("cublasCreate", s);
    s = pdnn__cu_blas.cublasSetStream(h, d->stream);
    /* Plain FP32: no TF32 tensor-core math, so results match the
     * reference; a matmul sets TF32 where its context enables it. */
    if (s == CUBLAS_STATUS_SUCCESS)
        s = pdnn__cu_blas.cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS) {
        pdnn__cu_blas.cublasDestroy(h);
        return pdnn__cu_blas_fail("cublasSetStream/cublasSetMathMode", s);
    }
    d->blas = h;
    return PDNN_SUCCESS;
}

static void dev_free(cu_dev *d)
{
    if (!d)
        return;
    if (d->stream || d->dnn || d->blas)
        pdnn__cu_rt.cudaSetDevice(d->ordinal);
    if (d->stream)
        pdnn__cu_rt.cudaStreamSynchronize(d->stream);
    destroy_descriptors(d);
    if (d->scalars)
        pdnn__cu_rt.cudaFree(d->scalars);
    if (d->dnn)
        pdnn__cu_dnn.cudnnDestroy(d->dnn);
    if (d->blas)
        pdnn__cu_blas.cublasDestroy(d->blas);
    if (d->stream)
        pdnn__cu_rt.cudaStreamDestroy(d->stream);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static pdnn_status cu_enumerate(void ***devs, pdnn__device_props **props, int *n, const char **why)
{
    *devs = NULL;
    *props = NULL;
    *n = 0;
    *why = NULL;
    const char *not_loaded = pdnn__cu_load();
    if (not_loaded) {
        *why = not_loaded;
        return PDNN_SUCCESS;
    }
    int count = 0;
    cudaError_t e = pdnn__cu_rt.cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count <= 0) {
        pdnn__cu_rt.cudaGetLastError();
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
        e = pdnn__cu_rt.getDeviceProperties(&u.p, i);
        if (e == cudaSuccess)
            e = pdnn__cu_rt.cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, i);
        if (e == cudaSuccess)
            e = pdnn__cu_rt.cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, i);
        if (e != cudaSuccess) {
            pdnn__cu_rt.cudaGetLastError();
            pdnn__debug("CUDA: skipping device %d: %s", i, pdnn__cu_rt.cudaGetErrorString(e));
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
        snprintf(q->driver_version, sizeof q->driver_version, "%s", pdnn__cu_versions());
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

static pdnn_status cu_region_alloc(void *dev, size_t bytes, void **region)
{
    cu_dev *d = dev;
    CU(cudaSetDevice, d->ordinal);
    void *p = NULL;
    cudaError_t e = pdnn__cu_rt.cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        pdnn__cu_rt.cudaGetLastError();
        char b[32];
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY,
                           "CUDA: cudaMalloc of a region of %zu bytes (%s) on device %d failed: out of memory", bytes,
                           pdnn__format_bytes(bytes, b, sizeof b), d->ordinal);
    }
    if (e != cudaSuccess)
        return pdnn__cu_cuda_fail("cudaMalloc", e);
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
            (void)pdnn__cu_ensure_blas(d);
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
    if (pdnn__cu_rt.cudaSetDevice(d->ordinal) != cudaSuccess || pdnn__cu_rt.cudaFree(region) != cudaSuccess)
        pdnn__cu_rt.cudaGetLastError();
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

/* A 4-D float tensor descriptor with the given logical dims and element strides. */
pdnn_status pdnn__cu_set_4d(cudnnTensorDescriptor_t t, const int64_t dims[4], const int64_t st[4])
{
    return pdnn__cu_set_4d_as(t, CUDNN_DATA_FLOAT, dims, st);
}

pdnn_status pdnn__cu_set_4d_as(cudnnTensorDescriptor_t t, cudnnDataType_t dt, const int64_t dims[4],
                               const int64_t st[4])
{
    for (int i = 0; i < 4; i++)
        if (!fits_int(dims[i]) || !fits_int(st[i]))
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "CUDA: a tensor of dims %lld x %lld x %lld x %lld is too large for cuDNN "
                               "(sizes and strides must fit in int)",
                               (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3]);
    DNN(cudnnSetTensor4dDescriptorEx, t, dt, (int)dims[0], (int)dims[1], (int)dims[2],
        (int)dims[3], (int)st[0], (int)st[1], (int)st[2], (int)st[3]);
    return PDNN_SUCCESS;
}

/* A packed tensor of dims in layout l. */
pdnn_status pdnn__cu_set_packed(cudnnTensorDescriptor_t t, pdnn_layout l, const int64_t dims[4])
{
    return pdnn__cu_set_packed_as(t, CUDNN_DATA_FLOAT, l, dims);
}

pdnn_status pdnn__cu_set_packed_as(cudnnTensorDescriptor_t t, cudnnDataType_t dt, pdnn_layout l,
                                   const int64_t dims[4])
{
    int64_t st[4];
    pdnn__layout_strides(l, dims, st);
    return pdnn__cu_set_4d_as(t, dt, dims, st);
}

/* ---- running an op -------------------------------------------------------- */

/* No CUDA algorithm has configurations of ours to tune: cuDNN chose (or
 * was told) its kernel in plan. */
void pdnn__cu_report_untuned(const pdnn__plan *plan, pdnn__run_report *rep)
{
    if (!rep)
        return;
    memset(rep, 0, sizeof *rep);
    rep->config = -1;
    snprintf(rep->config_name, sizeof rep->config_name, "%s", plan->config_name);
}

pdnn_status pdnn__cu_run(void *dev, pdnn__cu_body body, const pdnn__op_call *call, const pdnn__plan *plan,
                         void *arg, size_t state_bytes, pdnn__buf ws, pdnn__run_report *rep)
{
    cu_dev *d = dev;
    if (state_bytes > 0)
        memcpy(arg, plan->state, state_bytes); /* state is bytes: copy, never alias */
    pdnn_status st = pdnn__cu_lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = body(d, call, arg, ws);
    pthread_mutex_unlock(&d->lock);
    pdnn__cu_report_untuned(plan, rep);
    return st;
}

/* ---- the algorithm tables ------------------------------------------------- */

/* Each op family is a file of its own (cu_<family>.c); adding an algorithm
 * is its entry there and a line here. */

/* convolution forward (cu_conv.c) */
extern const pdnn__algo pdnn__cu_algo_conv_vendor, pdnn__cu_algo_conv_gemm, pdnn__cu_algo_conv_direct;
static const pdnn__algo *const cu_conv_algos[] = {
    &pdnn__cu_algo_conv_vendor,
    &pdnn__cu_algo_conv_gemm,
    &pdnn__cu_algo_conv_direct,
    NULL,
};
/* convolution backward (cu_conv_bwd.c) */
extern const pdnn__algo pdnn__cu_algo_bwd_data_vendor, pdnn__cu_algo_bwd_data_direct, pdnn__cu_algo_bwd_filter_vendor,
    pdnn__cu_algo_bwd_filter_direct, pdnn__cu_algo_bwd_bias_cudnn;
static const pdnn__algo *const cu_bwd_data_algos[] = {
    &pdnn__cu_algo_bwd_data_vendor,
    &pdnn__cu_algo_bwd_data_direct,
    NULL,
};
static const pdnn__algo *const cu_bwd_filter_algos[] = {
    &pdnn__cu_algo_bwd_filter_vendor,
    &pdnn__cu_algo_bwd_filter_direct,
    NULL,
};
static const pdnn__algo *const cu_bwd_bias_algos[] = {&pdnn__cu_algo_bwd_bias_cudnn, NULL};
/* pooling forward and backward (cu_pool.c) */
extern const pdnn__algo pdnn__cu_algo_pool_cudnn, pdnn__cu_algo_pool_bwd_cudnn;
static const pdnn__algo *const cu_pool_algos[] = {&pdnn__cu_algo_pool_cudnn, NULL};
static const pdnn__algo *const cu_pool_bwd_algos[] = {&pdnn__cu_algo_pool_bwd_cudnn, NULL};
/* batch normalization (cu_bn.c) */
extern const pdnn__algo pdnn__cu_algo_bn_fwd_train, pdnn__cu_algo_bn_fwd_infer, pdnn__cu_algo_bn_bwd;
static const pdnn__algo *const cu_bn_fwd_train_algos[] = {&pdnn__cu_algo_bn_fwd_train, NULL};
static const pdnn__algo *const cu_bn_fwd_infer_algos[] = {&pdnn__cu_algo_bn_fwd_infer, NULL};
static const pdnn__algo *const cu_bn_bwd_algos[] = {&pdnn__cu_algo_bn_bwd, NULL};
/* the ops around convolution and matmul (cu_nn.c) */
extern const pdnn__algo pdnn__cu_algo_act_cudnn, pdnn__cu_algo_transform_cudnn, pdnn__cu_algo_binary_cudnn,
    pdnn__cu_algo_scale_cudnn, pdnn__cu_algo_matmul_cublas, pdnn__cu_algo_pad_cudnn;
static const pdnn__algo *const cu_pad_algos[] = {&pdnn__cu_algo_pad_cudnn, NULL};
/* the N-d math ops (cu_nd_math.c) */
extern const pdnn__algo pdnn__cu_algo_transpose_cudnn, pdnn__cu_algo_softmax_cudnn, pdnn__cu_algo_layer_norm_none,
    pdnn__cu_algo_reduce_cudnn;
static const pdnn__algo *const cu_transpose_algos[] = {&pdnn__cu_algo_transpose_cudnn, NULL};
static const pdnn__algo *const cu_softmax_algos[] = {&pdnn__cu_algo_softmax_cudnn, NULL};
static const pdnn__algo *const cu_layer_norm_algos[] = {&pdnn__cu_algo_layer_norm_none, NULL};
extern const pdnn__algo pdnn__cu_algo_layer_norm_bwd_none; /* cu_nd_grad.c */
static const pdnn__algo *const cu_layer_norm_bwd_algos[] = {&pdnn__cu_algo_layer_norm_bwd_none, NULL};
static const pdnn__algo *const cu_reduce_algos[] = {&pdnn__cu_algo_reduce_cudnn, NULL};
extern const pdnn__algo pdnn__cu_algo_index_cudnn, pdnn__cu_algo_where_cudnn; /* cu_index.c */
static const pdnn__algo *const cu_index_algos[] = {&pdnn__cu_algo_index_cudnn, NULL};
static const pdnn__algo *const cu_where_algos[] = {&pdnn__cu_algo_where_cudnn, NULL};
static const pdnn__algo *const cu_act_algos[] = {&pdnn__cu_algo_act_cudnn, NULL};
static const pdnn__algo *const cu_transform_algos[] = {&pdnn__cu_algo_transform_cudnn, NULL};
static const pdnn__algo *const cu_binary_algos[] = {&pdnn__cu_algo_binary_cudnn, NULL};
static const pdnn__algo *const cu_scale_algos[] = {&pdnn__cu_algo_scale_cudnn, NULL};
static const pdnn__algo *const cu_matmul_algos[] = {&pdnn__cu_algo_matmul_cublas, NULL};
/* the training ops (cu_train.c) */
extern const pdnn__algo pdnn__cu_algo_relu_bwd_cudnn, pdnn__cu_algo_optimizer_cudnn;
static const pdnn__algo *const cu_relu_bwd_algos[] = {&pdnn__cu_algo_relu_bwd_cudnn, NULL};
static const pdnn__algo *const cu_optimizer_algos[] = {&pdnn__cu_algo_optimizer_cudnn, NULL};
/* pdnn_cast (cu_cast.c) */
extern const pdnn__algo pdnn__cu_algo_cast_cudnn;
static const pdnn__algo *const cu_cast_algos[] = {&pdnn__cu_algo_cast_cudnn, NULL};

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
              [PDNN__OP_PAD] = cu_pad_algos,
              [PDNN__OP_ND_TRANSPOSE] = cu_transpose_algos,
              [PDNN__OP_ND_SOFTMAX] = cu_softmax_algos,
              [PDNN__OP_ND_LAYER_NORM] = cu_layer_norm_algos,
              [PDNN__OP_ND_REDUCE] = cu_reduce_algos,
              [PDNN__OP_INDEX] = cu_index_algos,
              [PDNN__OP_WHERE] = cu_where_algos,
              [PDNN__OP_SCALE] = cu_scale_algos,
              [PDNN__OP_ND_LAYER_NORM_BWD] = cu_layer_norm_bwd_algos,
              [PDNN__OP_CAST] = cu_cast_algos},
    .add = pdnn__cu_add,
    .bias_add = pdnn__cu_bias_add,
    .relu = pdnn__cu_relu,
    .softmax = pdnn__cu_softmax,
};
