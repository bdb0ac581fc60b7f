/* The data-movement ops of any rank on CUDA (no kernels of our own): the
 * index op's strided copies (every axis's table an arithmetic run with a
 * positive step, or one index; no fill, no interpolation) as one
 * cudnnTransformTensor over N-d descriptors (up to 8-d); the rest refused
 * at plan time, so AUTO and the placer pass over them. Where: cuDNN has no
 * select, refused. */
#include "backends/cuda/cu_internal.h"

/* 1 if c is a strided copy: stride st[k] of x per step of y along each
 * axis and first element at *base; else why says what is not. */
static int strided(const pdnn__index_call *c, int64_t st[PDNN_MAX_RANK], int64_t *base, const char **why)
{
    const int64_t *t = c->idx;
    *base = 0;
    if (c->lerp >= 0)
        return *why = "cuDNN has no interpolation (a linear resize)", 0;
    for (int k = 0; k < c->rank; t += c->dims[k], k++) {
        const int64_t step = c->dims[k] > 1 ? t[1] - t[0] : 1;
        if (t[0] < 0)
            return *why = "cuDNN has no fill (padding)", 0;
        if (step < 1)
            return *why = "cuDNN's tensor strides are positive (a reversed slice, a broadcast or a repeat)", 0;
        for (int64_t i = 1; i < c->dims[k]; i++)
            if (t[i] - t[i - 1] != step)
                return *why = "the indices are not evenly spaced (a gather, a pad or a nearest resize)", 0;
        st[k] = step * c->xs[k];
        *base += t[0] * c->xs[k];
        if (!fits_int(st[k]) || !fits_int(c->dims[k]) || !fits_int(c->ys[k]))
            return *why = "sizes and strides must fit in int", 0;
    }
    return 1;
}

static void index_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    int64_t st[PDNN_MAX_RANK] = {0}, base = 0;
    const char *why = "";
    if (call->op == PDNN__OP_WHERE)
        pdnn__plan_refuse(plan, "cuDNN has no select (Where)");
    else if (!strided(&call->u.index, st, &base, &why))
        pdnn__plan_refuse(plan, "%s", why);
}

/* cuDNN's N-d descriptors take 3 to 8 dims: leading 1s fill the rest. */
static pdnn_status set_nd(cudnnTensorDescriptor_t t, int rank, const int64_t *dims, const int64_t *st)
{
    int d[PDNN_MAX_RANK], s[PDNN_MAX_RANK];
    const int n = rank < 3 ? 3 : rank, lead = n - rank;
    for (int k = 0; k < n; k++) {
        d[k] = k < lead ? 1 : (int)dims[k - lead];
        s[k] = k < lead ? 1 : (int)(st[k - lead] > 0 ? st[k - lead] : 1);
    }
    DNN(cudnnSetTensorNdDescriptor, t, CUDNN_DATA_FLOAT, n, d, s);
    return PDNN_SUCCESS;
}

static pdnn_status index_body(cu_dev *d, const pdnn__op_call *call, const void *unused, pdnn__buf ws)
{
    (void)unused, (void)ws;
    const pdnn__index_call *c = &call->u.index;
    int64_t st[PDNN_MAX_RANK] = {0}, base = 0;
    const char *why = "";
    if (!strided(c, st, &base, &why))
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "CUDA index: %s", why);
    const float one = 1.0f, zero = 0.0f;
    RETURN_IF_FAILED(set_nd(d->t[TX], c->rank, c->dims, st));
    RETURN_IF_FAILED(set_nd(d->t[TY], c->rank, c->dims, c->ys));
    DNN(cudnnTransformTensor, d->dnn, &one, d->t[TX], (const float *)ptr(c->x_buf) + base, &zero, d->t[TY],
        ptr(c->y_buf));
    return PDNN_SUCCESS;
}

CU_DEFINE_RUN_NO_STATE(cu_index_run, index_body)

const pdnn__algo pdnn__cu_algo_index_cudnn = {
    .op = PDNN__OP_INDEX, .name = "cudnn", .rank = 0, .plan = index_plan, .run = cu_index_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__cu_algo_where_cudnn = {
    .op = PDNN__OP_WHERE, .name = "cudnn", .rank = 0, .plan = index_plan, .run = cu_index_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
