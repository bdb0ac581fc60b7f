/* The ops around convolution through cuDNN: the vtable's add, bias_add,
 * relu and softmax; the activations, the layout transform, the
 * broadcasting binary ops and scale, which the graph runs as algorithms;
 * and matmul through cuBLAS. */
#include "cu_internal.h"

#include <math.h>
#include <pthread.h>

/* A 1 x 1 x 1 x len view: the elementwise ops run over such chunks. */
pdnn_status pdnn__cu_set_vec(cudnnTensorDescriptor_t t, int64_t len)
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
        RETURN_IF_FAILED(pdnn__cu_set_vec(d->t[0], len));
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
        RETURN_IF_FAILED(pdnn__cu_set_vec(d->t[0], len));
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
                                                     trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k,
                                                     &one, (const float *)ptr(b), (int)(trans_b ? k : n),
                                                     (const float *)ptr(a), (int)(trans_a ? m : k), &zero,
                                                     (float *)ptr(c), (int)n);
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
        RETURN_IF_FAILED(pdnn__cu_set_vec(d->t[0], len));
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
        RETURN_IF_FAILED(pdnn__cu_set_vec(d->t[0], len));
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
        RETURN_IF_FAILED(pdnn__cu_set_vec(d->t[0], len));
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

/* cuDNN takes every activation, transform, binary and scale call: nothing
 * to decide. */
static void cu_nn_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan) { (void)dev, (void)call, (void)plan; }

static pdnn_status nn_body(cu_dev *d, const pdnn__op_call *call, const void *unused, pdnn__buf ws)
{
    (void)unused, (void)ws;
    return call->op == PDNN__OP_ACTIVATION  ? act_run(d, &call->u.act)
           : call->op == PDNN__OP_TRANSFORM ? transform_run(d, &call->u.transform)
           : call->op == PDNN__OP_BINARY    ? binary_run(d, &call->u.binary)
                                            : scale_run(d, &call->u.scale);
}

CU_DEFINE_RUN_NO_STATE(cu_nn_run, nn_body)

const pdnn__algo pdnn__cu_algo_act_cudnn = {
    .op = PDNN__OP_ACTIVATION, .name = "cudnn", .rank = 0, .plan = cu_nn_plan, .run = cu_nn_run};
const pdnn__algo pdnn__cu_algo_transform_cudnn = {
    .op = PDNN__OP_TRANSFORM, .name = "cudnn", .rank = 0, .plan = cu_nn_plan, .run = cu_nn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__cu_algo_binary_cudnn = {
    .op = PDNN__OP_BINARY, .name = "cudnn", .rank = 0, .plan = cu_nn_plan, .run = cu_nn_run};
const pdnn__algo pdnn__cu_algo_scale_cudnn = {
    .op = PDNN__OP_SCALE, .name = "cudnn", .rank = 0, .plan = cu_nn_plan, .run = cu_nn_run};
const pdnn__algo pdnn__cu_algo_matmul_cublas = {
    .op = PDNN__OP_GEMM, .name = "cublas", .rank = 0, .plan = cu_matmul_plan, .run = cu_matmul};
