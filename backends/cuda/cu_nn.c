/* The ops around convolution through cuDNN: the vtable's add, bias_add,
 * relu and softmax; the activations, the layout transform, the
 * broadcasting binary ops and scale, which the graph runs as algorithms;
 * and matmul through cuBLAS. */
#include "cu_internal.h"

#include <math.h>
#include <pthread.h>

/* A 1 x 1 x 1 x len view in storage type dt: the elementwise ops run over
 * such chunks. */
static pdnn_status set_vec_as(cudnnTensorDescriptor_t t, cudnnDataType_t dt, int64_t len)
{
    const int64_t dims[4] = {1, 1, 1, len};
    return pdnn__cu_set_packed_as(t, dt, PDNN_NCHW, dims);
}

/* The same in float32. */
pdnn_status pdnn__cu_set_vec(cudnnTensorDescriptor_t t, int64_t len) { return set_vec_as(t, CUDNN_DATA_FLOAT, len); }

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
        RETURN_IF_FAILED(pdnn__cu_set_vec(d->t[0], len));
        if (pa == pb && pb == py) /* y += y, exactly 2y */
            DNN(cudnnScaleTensor, d->dnn, d->t[0], py + off, &two);
        else
            DNN(cudnnOpTensor, d->dnn, d->add, &one, d->t[0], pa + off, &one, d->t[0], pb + off, &zero, d->t[0],
                py + off);
    }
    return PDNN_SUCCESS;
}

/* y = a(x) over n elements of dtype t, in chunks cuDNN's 4-D descriptors
 * can hold. cudnnActivationForward takes HALF and BFLOAT16 x and y (one
 * type for both) with float alpha and beta. */
static pdnn_status activation_chunks(cu_dev *d, cudnnActivationDescriptor_t a, pdnn__buf x, pdnn__buf y, int64_t n,
                                     pdnn_dtype t)
{
    const float one = 1.0f, zero = 0.0f;
    for (int64_t i = 0; i < n; i += EW_CHUNK) {
        const int64_t len = n - i < EW_CHUNK ? n - i : EW_CHUNK;
        const size_t off = (size_t)i * pdnn__dtype_size(t);
        RETURN_IF_FAILED(set_vec_as(d->t[0], cu_dnn_type(t), len));
        DNN(cudnnActivationForward, d->dnn, a, &one, d->t[0], (char *)ptr(x) + off, &zero, d->t[0],
            (char *)ptr(y) + off);
    }
    return PDNN_SUCCESS;
}

static pdnn_status relu_run(cu_dev *d, pdnn__buf x, pdnn__buf y, int64_t n)
{
    return activation_chunks(d, d->relu, x, y, n, PDNN_FLOAT32);
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

/* The vtable's elementwise ops have no op call or plan: their arguments
 * reach the one body they share as pdnn__cu_run's arg. */
typedef struct ew_args {
    enum { EW_ADD, EW_BIAS_ADD, EW_RELU, EW_SOFTMAX } kind;
    pdnn__buf x, b, y;   /* b: add's second operand, bias_add's bias */
    int64_t n, c, inner; /* softmax: n is outer */
    int relu;
} ew_args;

static pdnn_status ew_body(cu_dev *d, const pdnn__op_call *call, const void *arg, pdnn__buf ws)
{
    (void)call, (void)ws;
    const ew_args *e = arg;
    switch (e->kind) {
    case EW_ADD: return add_run(d, e->x, e->b, e->y, e->n);
    case EW_BIAS_ADD: return bias_add_run(d, e->x, e->b, e->y, e->n, e->c, e->inner, e->relu);
    case EW_RELU: return relu_run(d, e->x, e->y, e->n);
    default: return softmax_run(d, e->x, e->y, e->n, e->c, e->inner);
    }
}

static pdnn_status ew_run(void *dev, ew_args *e)
{
    const pdnn__buf none = {.region = NULL};
    return pdnn__cu_run(dev, ew_body, NULL, NULL, e, 0, none, NULL);
}

pdnn_status pdnn__cu_add(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf y, int64_t n)
{
    ew_args e = {.kind = EW_ADD, .x = a, .b = b, .y = y, .n = n};
    return ew_run(dev, &e);
}

pdnn_status pdnn__cu_bias_add(void *dev, pdnn__buf x, pdnn__buf bias, pdnn__buf y, int64_t n, int64_t c,
                              int64_t inner, int relu)
{
    ew_args e = {.kind = EW_BIAS_ADD, .x = x, .b = bias, .y = y, .n = n, .c = c, .inner = inner, .relu = relu};
    return ew_run(dev, &e);
}

pdnn_status pdnn__cu_relu(void *dev, pdnn__buf x, pdnn__buf y, int64_t n)
{
    ew_args e = {.kind = EW_RELU, .x = x, .y = y, .n = n};
    return ew_run(dev, &e);
}

pdnn_status pdnn__cu_softmax(void *dev, pdnn__buf x, pdnn__buf y, int64_t outer, int64_t c, int64_t inner)
{
    ew_args e = {.kind = EW_SOFTMAX, .x = x, .y = y, .n = outer, .c = c, .inner = inner};
    return ew_run(dev, &e);
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
 * row-major buffers read as column-major are already the transposes.
 * float32 runs cublasSgemm; float16 and bfloat16 run cublasGemmEx with A,
 * B and C all CUDA_R_16F or all CUDA_R_16BF and CUBLAS_COMPUTE_32F (float
 * alpha and beta): rows of cublasGemmEx's table of supported types that
 * accumulate in float32 and round C once, as the reference does, and may
 * use tensor cores. */
static void cu_matmul_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__matmul_call *c = &call->u.matmul;
    if (!fits_int(c->m) || !fits_int(c->n) || !fits_int(c->k) || !fits_int(pdnn__matmul_batch(c)))
        pdnn__plan_refuse(plan, "cuBLAS takes int sizes; this matmul is %lld x %lld x %lld, batch %lld",
                          (long long)c->m, (long long)c->n, (long long)c->k, (long long)pdnn__matmul_batch(c));
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
    const int64_t nb = pdnn__matmul_batch(mc);
    if (!fits_int(m) || !fits_int(n) || !fits_int(k) || !fits_int(nb))
        return too_large("matmul");
    pthread_mutex_lock(&d->lock);
    pdnn_status st = pdnn__cu_ensure_blas(d);
    /* float32: TF32 tensor cores only where the context enables them
     * (CUBLAS_TF32_TENSOR_OP_MATH); else CUBLAS_DEFAULT_MATH, plain float32
     * FMA, so that results match the reference. The handle is the
     * device's, so every call sets its own. */
    const int reduced = cu_reduced(call->dtype);
    if (st == PDNN_SUCCESS && !reduced) {
        const cublasStatus_t s = pdnn__cu_blas.cublasSetMathMode(
            d->blas, call->allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
        if (s != CUBLAS_STATUS_SUCCESS)
            st = pdnn__cu_blas_fail("cublasSetMathMode", s);
    }
    if (st == PDNN_SUCCESS) {
        const float one = 1.0f, zero = 0.0f;
        const cublasOperation_t ob = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, oa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        const int ldb = (int)(trans_b ? k : n), lda = (int)(trans_a ? m : k);
        const cudaDataType t = cu_blas_type(call->dtype);
        /* A batch in one call: B's and A's strides swap places as the
         * operands do; a stride of 0 reads one matrix for all. */
        cublasStatus_t s;
        if (reduced && nb > 1)
            s = pdnn__cu_blas.cublasGemmStridedBatchedEx(d->blas, ob, oa, (int)n, (int)m, (int)k, &one, ptr(b), t, ldb,
                                                         (long long)mc->stride_b, ptr(a), t, lda,
                                                         (long long)mc->stride_a, &zero, ptr(c), t, (int)n,
                                                         (long long)(m * n), (int)nb, CUBLAS_COMPUTE_32F,
                                                         CUBLAS_GEMM_DEFAULT);
        else if (reduced)
            s = pdnn__cu_blas.cublasGemmEx(d->blas, ob, oa, (int)n, (int)m, (int)k, &one, ptr(b), t, ldb, ptr(a), t,
                                           lda, &zero, ptr(c), t, (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        else if (nb > 1)
            s = pdnn__cu_blas.cublasSgemmStridedBatched(d->blas, ob, oa, (int)n, (int)m, (int)k, &one,
                                                        (const float *)ptr(b), ldb, (long long)mc->stride_b,
                                                        (const float *)ptr(a), lda, (long long)mc->stride_a, &zero,
                                                        (float *)ptr(c), (int)n, (long long)(m * n), (int)nb);
        else
            s = pdnn__cu_blas.cublasSgemm(d->blas, ob, oa, (int)n, (int)m, (int)k, &one, (const float *)ptr(b), ldb,
                                          (const float *)ptr(a), lda, &zero, (float *)ptr(c), (int)n);
        if (s != CUBLAS_STATUS_SUCCESS)
            st = pdnn__cu_blas_fail(reduced ? (nb > 1 ? "cublasGemmStridedBatchedEx" : "cublasGemmEx")
                                            : (nb > 1 ? "cublasSgemmStridedBatched" : "cublasSgemm"),
                                    s);
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
static char *elem(pdnn__buf b, int64_t i, pdnn_dtype t) { return (char *)ptr(b) + (size_t)i * pdnn__dtype_size(t); }

/* The cudnnOpTensor calls below take HALF and BFLOAT16 A, B and C with
 * the float compute type of d->max, d->min, d->add, d->mul (the FLOAT |
 * HALF | HALF | HALF and FLOAT | BFLOAT16 | BFLOAT16 | BFLOAT16 rows of
 * its table of supported data types): each element is computed in float
 * and rounded once. */
static pdnn_status leaky_run(cu_dev *d, const pdnn__act_call *c, pdnn_dtype t)
{
    const float one = 1.0f, zero = 0.0f, alpha = c->alpha;
    cudnnOpTensorDescriptor_t op = alpha <= 1.0f ? d->max : d->min;
    for (int64_t i = 0; i < c->n; i += EW_CHUNK) {
        const int64_t len = c->n - i < EW_CHUNK ? c->n - i : EW_CHUNK;
        char *x = elem(c->x_buf, i, t), *y = elem(c->y_buf, i, t);
        RETURN_IF_FAILED(set_vec_as(d->t[0], cu_dnn_type(t), len));
        DNN(cudnnOpTensor, d->dnn, op, &one, d->t[0], x, &alpha, d->t[0], x, &zero, d->t[0], y);
    }
    return PDNN_SUCCESS;
}

/* cudnnSetTensor's value has the tensor's type: the bound v as t stores it. */
typedef union cu_scalar {
    float f;
    uint16_t h;
} cu_scalar;

static cu_scalar scalar_as(float v, pdnn_dtype t)
{
    cu_scalar s = {.f = v};
    if (t == PDNN_FLOAT16)
        s.h = pdnn__f32_to_f16(v);
    else if (t == PDNN_BFLOAT16)
        s.h = pdnn__f32_to_bf16(v);
    return s;
}

static pdnn_status clip_run(cu_dev *d, const pdnn__act_call *c, pdnn_dtype t)
{
    const float one = 1.0f, zero = 0.0f;
    static const int64_t scalar[4] = {1, 1, 1, 1};
    if (!d->scalars)
        CU(cudaMalloc, (void **)&d->scalars, 2 * sizeof(float)); /* 8 bytes, kept with the handles */
    /* Each bound in a float's room; a reduced dtype uses its first 2 bytes. */
    float *lo = d->scalars, *hi = d->scalars + 1;
    const cudnnDataType_t dt = cu_dnn_type(t);
    /* The bounds rounded to the dtype: max and min then select one of
     * them or x, as the reference's float32 clip rounded once does. */
    const cu_scalar vlo = scalar_as(c->alpha, t), vhi = scalar_as(c->beta, t);
    RETURN_IF_FAILED(pdnn__cu_set_packed_as(d->t[1], dt, PDNN_NCHW, scalar));
    DNN(cudnnSetTensor, d->dnn, d->t[1], lo, &vlo);
    DNN(cudnnSetTensor, d->dnn, d->t[1], hi, &vhi);
    for (int64_t i = 0; i < c->n; i += EW_CHUNK) {
        const int64_t len = c->n - i < EW_CHUNK ? c->n - i : EW_CHUNK;
        char *x = elem(c->x_buf, i, t), *y = elem(c->y_buf, i, t);
        RETURN_IF_FAILED(set_vec_as(d->t[0], dt, len));
        DNN(cudnnOpTensor, d->dnn, d->max, &one, d->t[0], x, &one, d->t[1], lo, &zero, d->t[0], y);
        DNN(cudnnOpTensor, d->dnn, d->min, &one, d->t[0], y, &one, d->t[1], hi, &zero, d->t[0], y);
    }
    return PDNN_SUCCESS;
}

/* y = alpha x: cudnnScaleTensor in place, else cudnnAddTensor with beta 0
 * (cuDNN does not read y then). */
static pdnn_status scale_run(cu_dev *d, const pdnn__scale_call *c, pdnn_dtype t)
{
    const float zero = 0.0f, alpha = c->alpha;
    const int in_place = c->x_buf.region == c->y_buf.region && c->x_buf.offset == c->y_buf.offset;
    for (int64_t i = 0; i < c->n; i += EW_CHUNK) {
        const int64_t len = c->n - i < EW_CHUNK ? c->n - i : EW_CHUNK;
        char *x = elem(c->x_buf, i, t), *y = elem(c->y_buf, i, t);
        RETURN_IF_FAILED(set_vec_as(d->t[0], cu_dnn_type(t), len));
        if (in_place)
            DNN(cudnnScaleTensor, d->dnn, d->t[0], y, &alpha);
        else
            DNN(cudnnAddTensor, d->dnn, &alpha, d->t[0], x, &zero, d->t[0], y);
    }
    return PDNN_SUCCESS;
}

static pdnn_status act_run(cu_dev *d, const pdnn__act_call *c, pdnn_dtype t)
{
    if (c->mode == PDNN_ACTIVATION_LEAKY_RELU)
        return leaky_run(d, c, t);
    if (c->mode == PDNN_ACTIVATION_CLIP && c->alpha != 0.0f)
        return clip_run(d, c, t);
    if (c->mode == PDNN_ACTIVATION_NEG) {
        const pdnn__scale_call s = {.n = c->n, .alpha = -1.0f, .x_buf = c->x_buf, .y_buf = c->y_buf};
        return scale_run(d, &s, t);
    }
    cudnnActivationDescriptor_t a = d->act;
    if (c->mode == PDNN_ACTIVATION_TANH)
        DNN(cudnnSetActivationDescriptor, a, CUDNN_ACTIVATION_TANH, CUDNN_PROPAGATE_NAN, 0.0);
    else if (c->mode == PDNN_ACTIVATION_SIGMOID)
        DNN(cudnnSetActivationDescriptor, a, CUDNN_ACTIVATION_SIGMOID, CUDNN_PROPAGATE_NAN, 0.0);
    else if (c->mode == PDNN_ACTIVATION_SILU) { /* swish with beta 1: x sigmoid(x) */
        DNN(cudnnSetActivationDescriptor, a, CUDNN_ACTIVATION_SWISH, CUDNN_PROPAGATE_NAN, 0.0);
        DNN(cudnnSetActivationDescriptorSwishBeta, a, 1.0);
    } else if (isinf(c->beta))
        a = d->relu;
    else
        DNN(cudnnSetActivationDescriptor, a, CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_PROPAGATE_NAN, (double)c->beta);
    return activation_chunks(d, a, c->x_buf, c->y_buf, c->n, t);
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

/* y = a (op) b: cudnnOpTensor, C = op(alpha1 A, alpha2 B), whose B may
 * have 1 where it repeats and whose C must have A's dims; so A is the
 * full side (y's dims) and B the other, a - b with b as A being -b + a.
 * y is packed in memory order (NCHW-style strides over dims). The plan
 * has refused division and calls where both sides repeat. */
static pdnn_status binary_run(cu_dev *d, const pdnn__binary_call *c, pdnn_dtype t)
{
    /* The plan has refused calls with more than 4 axes after core's
     * merging: those are the last 4 (the others are 1). */
    enum { F = PDNN_MAX_RANK - 4 };
    const int64_t *dims = c->dims + F, *as = c->as + F, *bs = c->bs + F;
    const float zero = 0.0f;
    int a_full = 1;
    for (int k = 0; k < 4; k++)
        a_full &= as[k] != 0 || dims[k] == 1;
    /* y may alias a full b: cuDNN allows C to alias A only, so a full b
     * (when a is full too, for y == b) goes in A. */
    const int swap = !a_full || (c->y_buf.region == c->b_buf.region && c->y_buf.offset == c->b_buf.offset);
    const int64_t *fs = swap ? bs : as, *rs = swap ? as : bs;
    int64_t ys[4], fd[4], fst[4], rd[4], rst[4];
    pdnn__layout_strides(PDNN_NCHW, dims, ys);
    for (int k = 0; k < 4; k++) {
        fd[k] = dims[k];
        fst[k] = fs[k] ? fs[k] : ys[k];
        rd[k] = rs[k] ? dims[k] : 1;
        rst[k] = rs[k] ? rs[k] : 1;
    }
    const float plus = 1.0f, minus = -1.0f;
    const int sub = c->kind == PDNN_BINARY_SUB;
    const float *alpha1 = sub && swap ? &minus : &plus, *alpha2 = sub && !swap ? &minus : &plus;
    const cudnnDataType_t dt = cu_dnn_type(t);
    RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TX], dt, fd, fst));
    RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TY], dt, rd, rst));
    RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TW_SRC], dt, dims, ys));
    DNN(cudnnOpTensor, d->dnn, c->kind == PDNN_BINARY_MUL ? d->mul : d->add, alpha1, d->t[TX],
        ptr(swap ? c->b_buf : c->a_buf), alpha2, d->t[TY], ptr(swap ? c->a_buf : c->b_buf), &zero, d->t[TW_SRC],
        ptr(c->y_buf));
    return PDNN_SUCCESS;
}

/* Constant padding: y filled with the value (cudnnSetTensor), then x
 * copied into y's interior, a view of y's strides at (top, left). The
 * plan has refused reflect and edge, which cuDNN lacks. */
static pdnn_status pad_run(cu_dev *d, const pdnn__pad_call *c)
{
    const float one = 1.0f, zero = 0.0f;
    const int64_t yd[4] = {c->dims[0], c->dims[1], c->dims[2] + c->pads[0] + c->pads[2],
                           c->dims[3] + c->pads[1] + c->pads[3]};
    RETURN_IF_FAILED(pdnn__cu_set_4d(d->t[TY], yd, c->ys));
    DNN(cudnnSetTensor, d->dnn, d->t[TY], ptr(c->y_buf), &c->value);
    RETURN_IF_FAILED(pdnn__cu_set_4d(d->t[TX], c->dims, c->xs));
    RETURN_IF_FAILED(pdnn__cu_set_4d(d->t[TW_SRC], c->dims, c->ys));
    char *inner = (char *)ptr(c->y_buf) + (size_t)(c->pads[0] * c->ys[2] + c->pads[1] * c->ys[3]) * sizeof(float);
    DNN(cudnnTransformTensor, d->dnn, &one, d->t[TX], ptr(c->x_buf), &zero, d->t[TW_SRC], inner);
    return PDNN_SUCCESS;
}

/* cuDNN takes every transform and scale call; constant padding only; of the activations, all but
 * hard sigmoid and hard swish, which it lacks; of the binary ops, those
 * cudnnOpTensor expresses: no division, one side broadcast at most, 4
 * axes at most once core has merged what it can. */
static void cu_nn_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    if (call->op == PDNN__OP_PAD && call->u.pad.mode != PDNN_PAD_CONSTANT)
        pdnn__plan_refuse(plan, "cuDNN has no %s padding", call->u.pad.mode == PDNN_PAD_REFLECT ? "reflect" : "edge");
    if (call->op == PDNN__OP_ACTIVATION && (call->u.act.mode == PDNN_ACTIVATION_HARD_SIGMOID ||
                                            call->u.act.mode == PDNN_ACTIVATION_HARD_SWISH ||
                                            (call->u.act.mode >= PDNN_ACTIVATION_ERF &&
                                             call->u.act.mode != PDNN_ACTIVATION_TANH && call->u.act.mode != PDNN_ACTIVATION_NEG)))
        pdnn__plan_refuse(plan, "cuDNN has no activation mode %d (of the unary math it has tanh, and neg as a scale)",
                          (int)call->u.act.mode);
    if (call->op == PDNN__OP_BINARY && call->u.binary.kind == PDNN_BINARY_POW)
        pdnn__plan_refuse(plan, "cudnnOpTensor has no power");
    if (call->op != PDNN__OP_BINARY)
        return;
    const pdnn__binary_call *c = &call->u.binary;
    int a_full = 1, b_full = 1, axes = 0;
    for (int k = 0; k < PDNN_MAX_RANK; k++) {
        a_full &= c->as[k] != 0 || c->dims[k] == 1;
        b_full &= c->bs[k] != 0 || c->dims[k] == 1;
        if (c->dims[k] != 1 && axes == 0)
            axes = PDNN_MAX_RANK - k;
    }
    if (axes > 4)
        pdnn__plan_refuse(plan, "cudnnOpTensor is run on 4-d descriptors; this broadcast needs %d axes after merging",
                          axes);
    else if (c->kind == PDNN_BINARY_DIV)
        pdnn__plan_refuse(plan, "cudnnOpTensor has no division");
    else if (!a_full && !b_full)
        pdnn__plan_refuse(plan, "both inputs are broadcast; cudnnOpTensor broadcasts one side only");
}

static pdnn_status nn_body(cu_dev *d, const pdnn__op_call *call, const void *unused, pdnn__buf ws)
{
    (void)unused, (void)ws;
    return call->op == PDNN__OP_ACTIVATION  ? act_run(d, &call->u.act, call->dtype)
           : call->op == PDNN__OP_TRANSFORM ? transform_run(d, &call->u.transform)
           : call->op == PDNN__OP_BINARY    ? binary_run(d, &call->u.binary, call->dtype)
           : call->op == PDNN__OP_PAD       ? pad_run(d, &call->u.pad)
                                            : scale_run(d, &call->u.scale, call->dtype);
}

CU_DEFINE_RUN_NO_STATE(cu_nn_run, nn_body)

const pdnn__algo pdnn__cu_algo_act_cudnn = {
    .op = PDNN__OP_ACTIVATION, .name = "cudnn", .rank = 0, .plan = cu_nn_plan, .run = cu_nn_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};
const pdnn__algo pdnn__cu_algo_transform_cudnn = {
    .op = PDNN__OP_TRANSFORM, .name = "cudnn", .rank = 0, .plan = cu_nn_plan, .run = cu_nn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__cu_algo_binary_cudnn = {
    .op = PDNN__OP_BINARY, .name = "cudnn", .rank = 0, .plan = cu_nn_plan, .run = cu_nn_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};
const pdnn__algo pdnn__cu_algo_pad_cudnn = {
    .op = PDNN__OP_PAD, .name = "cudnn", .rank = 0, .plan = cu_nn_plan, .run = cu_nn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__cu_algo_scale_cudnn = {
    .op = PDNN__OP_SCALE, .name = "cudnn", .rank = 0, .plan = cu_nn_plan, .run = cu_nn_run};
const pdnn__algo pdnn__cu_algo_matmul_cublas = {
    .op = PDNN__OP_GEMM, .name = "cublas", .rank = 0, .plan = cu_matmul_plan, .run = cu_matmul,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};
