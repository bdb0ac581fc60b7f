/* Pooling forward and backward through cuDNN; the forward runs on a
 * padded copy of the input where cuDNN's padding cannot express a call. */
#include "cu_internal.h"
#include "ops/pool_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    if (pl.why && cu_reduced(call->dtype)) {
        /* The padded copy is filled with cudnnSetTensor, whose value has
         * the tensor's type, and scaled by a float32 divisor table: a
         * float32-only path. */
        pdnn__plan_refuse(plan, "CUDA: pool2d in %s: this call has %s, which the CUDA backend pools on a padded "
                                "float32 copy; cuDNN's own padding takes the %s calls it can express",
                          pdnn__dtype_name(call->dtype), pl.why, pdnn__dtype_name(call->dtype));
        return;
    }
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
    cudaError_t e = pdnn__cu_rt.cudaMemcpyAsync(dst, scale, bytes, cudaMemcpyHostToDevice, d->stream);
    if (e == cudaSuccess) {
        call = "cudaStreamSynchronize";
        e = pdnn__cu_rt.cudaStreamSynchronize(d->stream);
    }
    free(scale);
    return e == cudaSuccess ? PDNN_SUCCESS : pdnn__cu_cuda_fail(call, e);
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
    RETURN_IF_FAILED(pdnn__cu_set_4d(d->t[TP_PAD], pdims, pst));
    RETURN_IF_FAILED(pdnn__cu_set_4d(d->t[TP_SRC], cdims, c->xs));
    RETURN_IF_FAILED(pdnn__cu_set_4d(d->t[TP_DST], cdims, pst));
    RETURN_IF_FAILED(pdnn__cu_set_4d(d->t[TP_Y], ydims, c->ys));
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
        RETURN_IF_FAILED(pdnn__cu_set_packed(d->t[TP_SCALE], PDNN_NCHW, sdims));
        DNN(cudnnOpTensor, d->dnn, d->mul, &one, d->t[TP_Y], y, &one, d->t[TP_SCALE], ws + pl->scale_off, &zero,
            d->t[TP_Y], y);
    }
    return PDNN_SUCCESS;
}

/* d->pool as c's window with cuDNN's own padding, for the forward and the
 * backward. */
static pdnn_status set_pool_descriptor(cu_dev *d, const pdnn__pool2d_call *c)
{
    cudnnPoolingMode_t mode = c->mode == PDNN_POOL_MAX ? CUDNN_POOLING_MAX_DETERMINISTIC
                              : c->mode == PDNN_POOL_AVG_INCLUDE_PADDING
                                  ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                  : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    DNN(cudnnSetPooling2dDescriptor, d->pool, mode, CUDNN_PROPAGATE_NAN, c->win_h, c->win_w, c->pad_top,
        c->pad_left, c->stride_h, c->stride_w);
    return PDNN_SUCCESS;
}

/* Pools c with cuDNN's own padding. Called with d->lock held and the
 * cuDNN handle created. */
/* x and y in storage type dt: cudnnPoolingForward takes HALF and BFLOAT16
 * tensors with float alpha and beta. Max selects, so it is exact; that
 * the averages sum in float as the reference does is not documented, and
 * the precision set's one-unit bound is what checks it on a GPU. */
static pdnn_status pool_run(cu_dev *d, const pdnn__pool2d_call *c, cudnnDataType_t dt)
{
    const int64_t xdims[4] = {c->n, c->c, c->h, c->w};
    const int64_t ydims[4] = {c->n, c->c, c->p, c->q};
    RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[0], dt, xdims, c->xs));
    RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[1], dt, ydims, c->ys));
    RETURN_IF_FAILED(set_pool_descriptor(d, c));
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnPoolingForward, d->dnn, d->pool, &one, d->t[0], ptr(c->x_buf), &zero, d->t[1], ptr(c->y_buf));
    return PDNN_SUCCESS;
}

/* cuDNN's own padding where it expresses the call, else the padded copy. */
static pdnn_status pool_body(cu_dev *d, const pdnn__op_call *call, const void *state, pdnn__buf ws)
{
    const pool_plan *pl = state;
    return pl->why ? pool_padded_run(d, &call->u.pool2d, pl, ws)
                   : pool_run(d, &call->u.pool2d, cu_dnn_type(call->dtype));
}

CU_DEFINE_RUN(cu_pool_run, pool_body, pool_plan)

/* One way to pool: cuDNN, on a padded copy where its padding falls short. */
const pdnn__algo pdnn__cu_algo_pool_cudnn = {
    .op = PDNN__OP_POOL2D_FWD,
    .name = "cudnn",
    .rank = 0,
    .plan = cu_pool_plan,
    .run = cu_pool_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT,
};

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
static size_t strided_bytes(const int64_t dims[4], const int64_t st[4], size_t esize)
{
    int64_t last = 0;
    for (int i = 0; i < 4; i++)
        last += (dims[i] - 1) * st[i];
    return (size_t)(last + 1) * esize;
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
    const size_t es = pdnn__dtype_size(call->dtype);
    pl.y_bytes = align256(strided_bytes(ydims, c->ys, es));
    pl.dx_copy = memcmp(c->xs, c->dxs, sizeof c->xs) != 0;
    pl.dx_off = pl.y_bytes;
    pl.total = pl.y_bytes + (pl.dx_copy ? align256(strided_bytes(xdims, c->xs, es)) : 0);
    plan->supported = 1;
    plan->workspace = pl.total;
    memcpy(plan->state, &pl, sizeof pl); /* state is bytes: copy, never alias */
}

/* Called with d->lock held and the cuDNN handle created. */
static pdnn_status pool_bwd_run(cu_dev *d, const pdnn__op_call *call, const void *state, pdnn__buf ws_buf)
{
    const pdnn__pool2d_call *c = &call->u.pool2d;
    const pool_bwd_plan *pl = state;
    if (!ws_buf.region)
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "CUDA: pool2d backward needs %zu bytes of workspace on device %d (the recomputed "
                           "forward output) but got none",
                           pl->total, d->ordinal);
    char *ws = ptr(ws_buf);
    const int64_t xdims[4] = {c->n, c->c, c->h, c->w};
    const int64_t ydims[4] = {c->n, c->c, c->p, c->q};
    /* Every tensor in the call's storage type: cudnnPoolingBackward takes
     * HALF and BFLOAT16 y, dy, x and dx with float alpha and beta. The
     * recomputed y is in that type too, as the forward stored it. */
    const cudnnDataType_t dt = cu_dnn_type(call->dtype);
    RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[0], dt, xdims, c->xs));
    RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[1], dt, ydims, c->ys));
    RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[2], dt, xdims, c->dxs));
    RETURN_IF_FAILED(set_pool_descriptor(d, c));
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnPoolingForward, d->dnn, d->pool, &one, d->t[0], ptr(c->x_buf), &zero, d->t[1], ws);
    void *dx = pl->dx_copy ? (void *)(ws + pl->dx_off) : ptr(c->dx_buf);
    DNN(cudnnPoolingBackward, d->dnn, d->pool, &one, d->t[1], ws, d->t[1], ptr(c->dy_buf), d->t[0], ptr(c->x_buf),
        &zero, d->t[0], dx);
    if (pl->dx_copy)
        DNN(cudnnTransformTensor, d->dnn, &one, d->t[0], dx, &zero, d->t[2], ptr(c->dx_buf));
    return PDNN_SUCCESS;
}

CU_DEFINE_RUN(cu_pool_bwd_run, pool_bwd_run, pool_bwd_plan)

const pdnn__algo pdnn__cu_algo_pool_bwd_cudnn = {
    .op = PDNN__OP_POOL2D_BWD,
    .name = "cudnn",
    .rank = 0,
    .plan = cu_pool_bwd_plan,
    .run = cu_pool_bwd_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT,
};
