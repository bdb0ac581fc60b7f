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
#include "cu_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    /* Plain FP32: no TF32 tensor-core math, so results match the reference. */
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
pdnn_status pdnn__cu_set_packed(cudnnTensorDescriptor_t t, pdnn_layout l, const int64_t dims[4])
{
    int64_t st[4];
    pdnn__layout_strides(l, dims, st);
    return pdnn__cu_set_4d(t, dims, st);
}

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
/* ---- the ops around convolution ------------------------------------------ */

static pdnn_status set_vec(cudnnTensorDescriptor_t t, int64_t len)
{
    const int64_t dims[4] = {1, 1, 1, len};
    return pdnn__cu_set_packed(t, PDNN_NCHW, dims);
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
    RETURN_IF_FAILED(pdnn__cu_set_packed(d->t[0], PDNN_NCHW, dims));
    RETURN_IF_FAILED(pdnn__cu_set_packed(d->t[1], PDNN_NCHW, bdims));
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
    RETURN_IF_FAILED(pdnn__cu_set_packed(d->t[0], PDNN_NCHW, dims));
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnSoftmaxForward, d->dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, d->t[0], ptr(x),
        &zero, d->t[0], ptr(y));
    return PDNN_SUCCESS;
}

static pdnn_status cu_add(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf y, int64_t n)
{
    cu_dev *d = dev;
    pdnn_status st = pdnn__cu_lock_dnn(d);
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
    pdnn_status st = pdnn__cu_lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = bias_add_run(d, x, bias, y, n, c, inner, relu);
    pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status cu_relu(void *dev, pdnn__buf x, pdnn__buf y, int64_t n)
{
    cu_dev *d = dev;
    pdnn_status st = pdnn__cu_lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = relu_run(d, x, y, n);
    pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status cu_softmax(void *dev, pdnn__buf x, pdnn__buf y, int64_t outer, int64_t c, int64_t inner)
{
    cu_dev *d = dev;
    pdnn_status st = pdnn__cu_lock_dnn(d);
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
    pdnn__cu_report_untuned(plan, rep);
    if (!fits_int(m) || !fits_int(n) || !fits_int(k))
        return too_large("matmul");
    pthread_mutex_lock(&d->lock);
    pdnn_status st = pdnn__cu_ensure_blas(d);
    if (st == PDNN_SUCCESS) {
        const float one = 1.0f, zero = 0.0f;
        cublasStatus_t s = pdnn__cu_blas.cublasSgemm(d->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                     trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k, &one,
                                                     (const float *)ptr(b), (int)(trans_b ? k : n),
                                                     (const float *)ptr(a),
                                                     (int)(trans_a ? m : k), &zero, (float *)ptr(c), (int)n);
        if (s != CUBLAS_STATUS_SUCCESS)
            st = pdnn__cu_blas_fail("cublasSgemm", s);
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
    RETURN_IF_FAILED(pdnn__cu_set_packed(d->t[1], PDNN_NCHW, scalar));
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
    RETURN_IF_FAILED(pdnn__cu_set_4d(d->t[TX], c->dims, c->xs));
    RETURN_IF_FAILED(pdnn__cu_set_4d(d->t[TY], c->dims, c->ys));
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
    RETURN_IF_FAILED(pdnn__cu_set_4d(d->t[TX], c->dims, as));
    RETURN_IF_FAILED(pdnn__cu_set_4d(d->t[TY], bd, bs));
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
    pdnn_status st = pdnn__cu_lock_dnn(d);
    if (st != PDNN_SUCCESS)
        return st;
    st = call->op == PDNN__OP_RELU_BWD     ? relu_bwd_run(d, &call->u.relu_bwd)
         : call->op == PDNN__OP_ACTIVATION ? act_run(d, &call->u.act)
         : call->op == PDNN__OP_TRANSFORM  ? transform_run(d, &call->u.transform)
         : call->op == PDNN__OP_BINARY     ? binary_run(d, &call->u.binary)
         : call->op == PDNN__OP_SCALE      ? scale_run(d, &call->u.scale)
                                           : sgd_run(d, &call->u.optim);
    pthread_mutex_unlock(&d->lock);
    pdnn__cu_report_untuned(plan, rep);
    return st;
}

static const pdnn__algo cu_relu_bwd_cudnn = {
    .op = PDNN__OP_RELU_BWD, .name = "cudnn", .rank = 0, .plan = cu_train_plan, .run = cu_train_run};
static const pdnn__algo cu_optimizer_cudnn = {
    .op = PDNN__OP_OPTIMIZER, .name = "cudnn", .rank = 0, .plan = cu_train_plan, .run = cu_train_run};
static const pdnn__algo cu_act_cudnn = {
    .op = PDNN__OP_ACTIVATION, .name = "cudnn", .rank = 0, .plan = cu_train_plan, .run = cu_train_run};
static const pdnn__algo *const cu_act_algos[] = {&cu_act_cudnn, NULL};
static const pdnn__algo cu_transform_cudnn = {
    .op = PDNN__OP_TRANSFORM, .name = "cudnn", .rank = 0, .plan = cu_train_plan, .run = cu_train_run};
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

/* ---- the algorithm tables ------------------------------------------------- */

/* Each op family is a file of its own (cu_<family>.c); adding an algorithm
 * is its entry there and a line here. */
extern const pdnn__algo pdnn__cu_algo_conv_vendor, pdnn__cu_algo_conv_gemm, pdnn__cu_algo_conv_direct;
extern const pdnn__algo pdnn__cu_algo_bwd_data_vendor, pdnn__cu_algo_bwd_data_direct;
extern const pdnn__algo pdnn__cu_algo_bwd_filter_vendor, pdnn__cu_algo_bwd_filter_direct;
extern const pdnn__algo pdnn__cu_algo_bwd_bias_cudnn;
static const pdnn__algo *const cu_conv_algos[] = {&pdnn__cu_algo_conv_vendor, &pdnn__cu_algo_conv_gemm,
                                                  &pdnn__cu_algo_conv_direct, NULL};
static const pdnn__algo *const cu_bwd_data_algos[] = {&pdnn__cu_algo_bwd_data_vendor,
                                                      &pdnn__cu_algo_bwd_data_direct, NULL};
static const pdnn__algo *const cu_bwd_filter_algos[] = {&pdnn__cu_algo_bwd_filter_vendor,
                                                        &pdnn__cu_algo_bwd_filter_direct, NULL};
static const pdnn__algo *const cu_bwd_bias_algos[] = {&pdnn__cu_algo_bwd_bias_cudnn, NULL};
extern const pdnn__algo pdnn__cu_algo_pool_cudnn, pdnn__cu_algo_pool_bwd_cudnn;
static const pdnn__algo *const cu_pool_algos[] = {&pdnn__cu_algo_pool_cudnn, NULL};
static const pdnn__algo *const cu_pool_bwd_algos[] = {&pdnn__cu_algo_pool_bwd_cudnn, NULL};
extern const pdnn__algo pdnn__cu_algo_bn_fwd_train, pdnn__cu_algo_bn_fwd_infer, pdnn__cu_algo_bn_bwd;
static const pdnn__algo *const cu_bn_fwd_train_algos[] = {&pdnn__cu_algo_bn_fwd_train, NULL};
static const pdnn__algo *const cu_bn_fwd_infer_algos[] = {&pdnn__cu_algo_bn_fwd_infer, NULL};
static const pdnn__algo *const cu_bn_bwd_algos[] = {&pdnn__cu_algo_bn_bwd, NULL};

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
