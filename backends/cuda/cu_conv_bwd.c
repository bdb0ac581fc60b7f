/* Convolution backward through cuDNN: data and filter (planned by
 * cu_conv.c's plan cache, with the algorithm choice here) and bias. */
#include "cu_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- backward convolution: algorithm choice ---------------------------------
 * The backward ops reuse the forward's descriptors and copy
 * configurations (pdnn__cu_set_conv_descriptors): t[TX] is x or dx as
 * cuDNN sees it, t[TY] dy, filt w or dw. "vendor" takes the first of
 * cuDNN's heuristics' proposals that cuDNN can size; "direct" is cuDNN's
 * deterministic ALGO_1, which needs little or no workspace, so that
 * dispatch has somewhere to go when the vendor choice's workspace does
 * not fit in the device's memory. */

const char *pdnn__cu_bwd_algo_name(pdnn__op op, int a)
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
        *s = pdnn__cu_dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(d->dnn, d->filt, d->t[TY], d->conv, d->t[TX],
                                                                       (cudnnConvolutionBwdDataAlgo_t)a, &bytes);
    else
        *s = pdnn__cu_dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(d->dnn, d->t[TX], d->t[TY], d->conv, d->filt,
                                                                         (cudnnConvolutionBwdFilterAlgo_t)a, &bytes);
    if (*s != CUDNN_STATUS_SUCCESS) {
        pdnn__debug("CUDA: cuDNN %s: %s", pdnn__cu_bwd_algo_name(op, a), pdnn__cu_dnn.cudnnGetErrorString(*s));
        return 0;
    }
    return bytes;
}

/* Picks the backward algorithm of op for the current descriptors into
 * pl->bwd_algo and its workspace into *ws. Returns 1, or 0 with why. */
int pdnn__cu_bwd_select(cu_dev *d, pdnn__op op, pdnn_conv_algo want, conv_plan *pl, size_t *ws, char *why,
                        size_t len)
{
    cudnnStatus_t s = CUDNN_STATUS_NOT_SUPPORTED;
    const int is_data = op == PDNN__OP_CONV2D_BWD_DATA;
    if (want != PDNN_CONV_ALGO_VENDOR) {
        pl->bwd_algo = is_data ? (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 : (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
        *ws = bwd_workspace(d, op, pl->bwd_algo, &s);
        if (s != CUDNN_STATUS_SUCCESS) {
            snprintf(why, len, "%s: %s", pdnn__cu_bwd_algo_name(op, pl->bwd_algo), pdnn__cu_dnn.cudnnGetErrorString(s));
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
        s = pdnn__cu_dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(d->dnn, d->filt, d->t[TY], d->conv, d->t[TX],
                                                                     CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf);
        for (int i = 0; s == CUDNN_STATUS_SUCCESS && i < got && i < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; i++)
            algos[i] = perf[i].status == CUDNN_STATUS_SUCCESS ? (int)perf[i].algo : -1;
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        memset(perf, 0, sizeof perf);
        s = pdnn__cu_dnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7(d->dnn, d->t[TX], d->t[TY], d->conv, d->filt,
                                                                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got,
                                                                       perf);
        for (int i = 0; s == CUDNN_STATUS_SUCCESS && i < got && i < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT; i++)
            algos[i] = perf[i].status == CUDNN_STATUS_SUCCESS ? (int)perf[i].algo : -1;
    }
    if (s != CUDNN_STATUS_SUCCESS) {
        snprintf(why, len, "%s: %s", fn, pdnn__cu_dnn.cudnnGetErrorString(s));
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
                     pdnn__cu_dnn.cudnnGetErrorString(s));
        return 0;
    }
    return 1;
}
/* Runs backward data or filter c as pl says (see pdnn__cu_bwd_select), with
 * pl->total bytes of workspace at ws_buf. The copies mirror the forward's:
 * dy goes through an NCHW copy when pl->y_copy; backward data computes a
 * padded dx in the workspace when pl->x_copy and keeps its image part;
 * backward filter reads a padded x and writes a repacked dw there when
 * pl->w_copy, repacking it into the call's filter layout after. Called
 * with d->lock held and the cuDNN handle created. */
static pdnn_status conv_bwd_run(cu_dev *d, const pdnn__op_call *call, const void *state, pdnn__buf ws_buf)
{
    const pdnn__op op = call->op;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const conv_plan *pl = state;
    if (pl->total > 0 && !ws_buf.region) {
        char b[32];
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "CUDA: this convolution backward needs %s of workspace on device %d but got none",
                           pdnn__format_bytes(pl->total, b, sizeof b), d->ordinal);
    }
    RETURN_IF_FAILED(pdnn__cu_set_conv_descriptors(d, call, pl));
    char *ws = pl->total > 0 ? ptr(ws_buf) : NULL;
    void *algo_ws = pl->algo_bytes > 0 ? ws + pl->algo_off : NULL;
    const float one = 1.0f, zero = 0.0f; /* float scaling for half and bfloat16 data too */
    const cudnnDataType_t dt = cu_dnn_type(call->dtype);
    const size_t es = pdnn__dtype_size(call->dtype);
    const int64_t ydims[4] = {c->n, c->k, c->p, c->q};
    const int64_t idims[4] = {c->n, c->c, c->h, c->w};
    const void *dy = ptr(c->y_buf);
    if (pl->y_copy) {
        RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TB], dt, ydims, c->ys));
        DNN(cudnnTransformTensor, d->dnn, &one, d->t[TB], dy, &zero, d->t[TY], ws + pl->y_off);
        dy = ws + pl->y_off;
    }
    /* The padded x (or dx) buffer's strides and the image's origin in it. */
    int64_t pst[4] = {0, 0, 0, 0};
    char *origin = NULL;
    if (pl->x_copy) {
        const int64_t pdims[4] = {c->n, c->c, pl->hp, pl->wp};
        pdnn__layout_strides(pl->x_copy_layout, pdims, pst);
        origin = ws + pl->x_off + (size_t)(c->pad_top * pst[2] + c->pad_left * pst[3]) * es;
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
            RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TB], dt, idims, pst));
            DNN(cudnnTransformTensor, d->dnn, &one, d->t[TB], origin, &zero, d->t[TX_SRC], ptr(c->x_buf));
        }
        return PDNN_SUCCESS;
    }
    const void *x = ptr(c->x_buf);
    if (pl->x_copy) {
        const size_t bytes = (size_t)(c->n * c->c * pl->hp * pl->wp) * es;
        CU(cudaMemsetAsync, ws + pl->x_off, 0, bytes, d->stream);
        RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TB], dt, idims, pst));
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

CU_DEFINE_RUN(cu_conv_bwd_run, conv_bwd_run, conv_plan)

const pdnn__algo pdnn__cu_algo_bwd_data_vendor = {
    .op = PDNN__OP_CONV2D_BWD_DATA,
    .name = "vendor",
    .id = PDNN_CONV_ALGO_VENDOR,
    .rank = 0,
    .plan = pdnn__cu_vendor_plan,
    .run = cu_conv_bwd_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_WINOGRAD),
    .dtypes = PDNN__DTYPES_FLOAT,
};
const pdnn__algo pdnn__cu_algo_bwd_data_direct = {
    .op = PDNN__OP_CONV2D_BWD_DATA,
    .name = "direct",
    .id = PDNN_CONV_ALGO_DIRECT,
    .rank = 1,
    .plan = pdnn__cu_direct_plan,
    .run = cu_conv_bwd_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT,
};
const pdnn__algo pdnn__cu_algo_bwd_filter_vendor = {
    .op = PDNN__OP_CONV2D_BWD_FILTER,
    .name = "vendor",
    .id = PDNN_CONV_ALGO_VENDOR,
    .rank = 0,
    .plan = pdnn__cu_vendor_plan,
    .run = cu_conv_bwd_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_WINOGRAD),
    .dtypes = PDNN__DTYPES_FLOAT,
};
const pdnn__algo pdnn__cu_algo_bwd_filter_direct = {
    .op = PDNN__OP_CONV2D_BWD_FILTER,
    .name = "direct",
    .id = PDNN_CONV_ALGO_DIRECT,
    .rank = 1,
    .plan = pdnn__cu_direct_plan,
    .run = cu_conv_bwd_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT,
};

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

static pdnn_status bwd_bias_run(cu_dev *d, const pdnn__op_call *call, const void *unused, pdnn__buf ws)
{
    (void)unused, (void)ws;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t ydims[4] = {c->n, c->k, c->p, c->q};
    const int64_t bdims[4] = {1, c->k, 1, 1};
    /* dy and db in the call's dtype, alpha and beta float: the legacy API
     * takes HALF and BFLOAT16 tensors with float scaling; that its sum is
     * float (the reference's) is for a GPU run of the precision set to
     * show. */
    const cudnnDataType_t dt = cu_dnn_type(call->dtype);
    RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TY], dt, ydims, c->ys));
    RETURN_IF_FAILED(pdnn__cu_set_packed_as(d->t[TB], dt, PDNN_NCHW, bdims));
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnConvolutionBackwardBias, d->dnn, &one, d->t[TY], ptr(c->y_buf), &zero, d->t[TB], ptr(c->bias_buf));
    return PDNN_SUCCESS;
}

CU_DEFINE_RUN_NO_STATE(cu_bwd_bias_run, bwd_bias_run)

const pdnn__algo pdnn__cu_algo_bwd_bias_cudnn = {
    .op = PDNN__OP_CONV2D_BWD_BIAS,
    .name = "vendor",
    .id = PDNN_CONV_ALGO_VENDOR,
    .rank = 0,
    .plan = cu_bwd_bias_plan,
    .run = cu_bwd_bias_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_WINOGRAD),
    .dtypes = PDNN__DTYPES_FLOAT,
};
