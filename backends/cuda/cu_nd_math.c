/* The N-d math ops through cuDNN: transpose (cudnnTransformTensor over
 * N-d descriptors, x's strides permuted), softmax along an axis
 * (cudnnSoftmaxForward on the [outer, n, inner, 1] view) and the
 * reductions (cudnnReduceTensor). cuDNN's legacy API has no layer norm,
 * and the backend has no kernels of its own: that entry refuses, and AUTO
 * and the placer pass over it. None of this has run on a GPU yet. */
#include "cu_internal.h"

#include <string.h>

/* An N-d float descriptor of dims and strides (rank 0..8), given at least
 * 4 dims (leading ones of size 1), as cuDNN wants. */
static pdnn_status set_nd(cudnnTensorDescriptor_t t, int rank, const int64_t *dims, const int64_t *st)
{
    int d[PDNN_MAX_RANK], s[PDNN_MAX_RANK];
    const int n = rank < 4 ? 4 : rank, lead = n - rank;
    int64_t outer = 1;
    for (int k = 0; k < rank; k++)
        outer = dims[k] * st[k] > outer ? dims[k] * st[k] : outer;
    for (int k = 0; k < n; k++) {
        const int64_t dk = k < lead ? 1 : dims[k - lead], sk = k < lead ? outer : st[k - lead];
        if (!fits_int(dk) || !fits_int(sk) || sk == 0)
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "CUDA: a %d-d tensor with a dim of %lld or a stride of %lld does not fit cuDNN's "
                               "int descriptors",
                               rank, (long long)dk, (long long)sk);
        d[k] = (int)dk;
        s[k] = (int)sk;
    }
    DNN(cudnnSetTensorNdDescriptor, t, CUDNN_DATA_FLOAT, n, d, s);
    return PDNN_SUCCESS;
}

/* Packed row-major strides of dims[rank]. */
static void packed(int rank, const int64_t *dims, int64_t *st)
{
    int64_t s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        st[k] = s;
        s *= dims[k];
    }
}

static pdnn_status transpose_body(cu_dev *d, const pdnn__op_call *call, const void *arg, pdnn__buf ws)
{
    (void)arg, (void)ws;
    const pdnn__transpose_call *c = &call->u.transpose;
    const float one = 1.0f, zero = 0.0f;
    int64_t ys[PDNN_MAX_RANK] = {0};
    packed(c->rank, c->dims, ys);
    RETURN_IF_FAILED(set_nd(d->t[TX], c->rank, c->dims, c->xs));
    RETURN_IF_FAILED(set_nd(d->t[TY], c->rank, c->dims, ys));
    DNN(cudnnTransformTensor, d->dnn, &one, d->t[TX], ptr(c->x_buf), &zero, d->t[TY], ptr(c->y_buf));
    return PDNN_SUCCESS;
}

static pdnn_status softmax_body(cu_dev *d, const pdnn__op_call *call, const void *arg, pdnn__buf ws)
{
    (void)arg, (void)ws;
    const pdnn__softmax_call *c = &call->u.softmax;
    const int64_t dims[4] = {c->outer, c->n, c->inner, 1};
    RETURN_IF_FAILED(pdnn__cu_set_packed(d->t[TX], PDNN_NCHW, dims));
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnSoftmaxForward, d->dnn, c->log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL,
        &one, d->t[TX], ptr(c->x_buf), &zero, d->t[TX], ptr(c->y_buf));
    return PDNN_SUCCESS;
}

/* x's and y's descriptors (y: x's dims with the reduced ones 1) and the
 * reduction's, created here; the caller destroys r. */
static pdnn_status reduce_descriptors(cu_dev *d, const pdnn__reduce_call *c, cudnnReduceTensorDescriptor_t *r)
{
    int64_t xs[PDNN_MAX_RANK] = {0}, yd[PDNN_MAX_RANK] = {0}, ys[PDNN_MAX_RANK] = {0};
    for (int k = 0; k < c->rank; k++)
        yd[k] = c->axes >> k & 1u ? 1 : c->dims[k];
    packed(c->rank, c->dims, xs);
    packed(c->rank, yd, ys);
    RETURN_IF_FAILED(set_nd(d->t[TX], c->rank, c->dims, xs));
    RETURN_IF_FAILED(set_nd(d->t[TY], c->rank, yd, ys));
    static const cudnnReduceTensorOp_t ops[] = {[PDNN_REDUCTION_SUM] = CUDNN_REDUCE_TENSOR_ADD,
                                                [PDNN_REDUCTION_MEAN] = CUDNN_REDUCE_TENSOR_AVG,
                                                [PDNN_REDUCTION_MAX] = CUDNN_REDUCE_TENSOR_MAX,
                                                [PDNN_REDUCTION_MIN] = CUDNN_REDUCE_TENSOR_MIN};
    DNN(cudnnCreateReduceTensorDescriptor, r);
    cudnnStatus_t s = pdnn__cu_dnn.cudnnSetReduceTensorDescriptor(*r, ops[c->kind], CUDNN_DATA_FLOAT,
                                                                  CUDNN_PROPAGATE_NAN, CUDNN_REDUCE_TENSOR_NO_INDICES,
                                                                  CUDNN_32BIT_INDICES);
    if (s != CUDNN_STATUS_SUCCESS) {
        pdnn__cu_dnn.cudnnDestroyReduceTensorDescriptor(*r);
        return pdnn__cu_dnn_fail("cudnnSetReduceTensorDescriptor", s);
    }
    return PDNN_SUCCESS;
}

static pdnn_status reduce_body(cu_dev *d, const pdnn__op_call *call, const void *arg, pdnn__buf ws)
{
    (void)arg;
    const pdnn__reduce_call *c = &call->u.reduce;
    cudnnReduceTensorDescriptor_t r = NULL;
    RETURN_IF_FAILED(reduce_descriptors(d, c, &r));
    const float one = 1.0f, zero = 0.0f;
    size_t bytes = 0;
    cudnnStatus_t s = pdnn__cu_dnn.cudnnGetReductionWorkspaceSize(d->dnn, r, d->t[TX], d->t[TY], &bytes);
    if (s == CUDNN_STATUS_SUCCESS)
        s = pdnn__cu_dnn.cudnnReduceTensor(d->dnn, r, NULL, 0, ws.region ? ptr(ws) : NULL, bytes, &one, d->t[TX],
                                           ptr(c->x_buf), &zero, d->t[TY], ptr(c->y_buf));
    pdnn__cu_dnn.cudnnDestroyReduceTensorDescriptor(r);
    return s == CUDNN_STATUS_SUCCESS ? PDNN_SUCCESS : pdnn__cu_dnn_fail("cudnnReduceTensor", s);
}

CU_DEFINE_RUN_NO_STATE(transpose_run, transpose_body)
CU_DEFINE_RUN_NO_STATE(softmax_run, softmax_body)
CU_DEFINE_RUN_NO_STATE(reduce_run, reduce_body)

static void nd_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    if (call->op == PDNN__OP_ND_SOFTMAX) {
        const pdnn__softmax_call *c = &call->u.softmax;
        if (!fits_int(c->outer * c->n * c->inner))
            pdnn__plan_refuse(plan, "cuDNN's softmax takes int sizes; this one has %lld elements",
                              (long long)(c->outer * c->n * c->inner));
    }
}

/* The reduction's workspace, asked of cuDNN; empty reductions (a reduced
 * dim of 0) are refused: cuDNN's answer for them is not documented. */
static void reduce_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    cu_dev *d = dev;
    const pdnn__reduce_call *c = &call->u.reduce;
    for (int k = 0; k < c->rank; k++)
        if (c->dims[k] == 0) {
            pdnn__plan_refuse(plan, "an empty reduction (cuDNN's result for it is not documented)");
            return;
        }
    if (pdnn__cu_lock_dnn(d) != PDNN_SUCCESS) {
        pdnn__plan_refuse(plan, "cuDNN could not be readied: %s", pdnn_last_error());
        return;
    }
    cudnnReduceTensorDescriptor_t r = NULL;
    size_t bytes = 0;
    pdnn_status st = reduce_descriptors(d, c, &r);
    if (st == PDNN_SUCCESS) {
        const cudnnStatus_t s = pdnn__cu_dnn.cudnnGetReductionWorkspaceSize(d->dnn, r, d->t[TX], d->t[TY], &bytes);
        pdnn__cu_dnn.cudnnDestroyReduceTensorDescriptor(r);
        if (s != CUDNN_STATUS_SUCCESS)
            st = pdnn__cu_dnn_fail("cudnnGetReductionWorkspaceSize", s);
    }
    pthread_mutex_unlock(&d->lock);
    if (st != PDNN_SUCCESS)
        pdnn__plan_refuse(plan, "%s", pdnn_last_error());
    else
        plan->workspace = bytes;
}

static void layer_norm_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev, (void)call;
    pdnn__plan_refuse(plan, "cuDNN's legacy API has no layer normalization and the CUDA backend has no kernels "
                            "of its own");
}

static pdnn_status refused_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                               pdnn__run_report *rep)
{
    (void)dev, (void)call, (void)plan, (void)ws, (void)rep;
    return pdnn__error(PDNN_ERR_UNSUPPORTED, "CUDA: layer norm has no CUDA algorithm");
}

const pdnn__algo pdnn__cu_algo_transpose_cudnn = {
    .op = PDNN__OP_ND_TRANSPOSE, .name = "cudnn", .rank = 0, .plan = nd_plan, .run = transpose_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__cu_algo_softmax_cudnn = {
    .op = PDNN__OP_ND_SOFTMAX, .name = "cudnn", .rank = 0, .plan = nd_plan, .run = softmax_run};
const pdnn__algo pdnn__cu_algo_layer_norm_none = {
    .op = PDNN__OP_ND_LAYER_NORM, .name = "none", .rank = 0, .plan = layer_norm_plan, .run = refused_run};
const pdnn__algo pdnn__cu_algo_reduce_cudnn = {
    .op = PDNN__OP_ND_REDUCE, .name = "cudnn", .rank = 0, .plan = reduce_plan, .run = reduce_run};
