/* pdnn_cast on CUDA, and the conversion the reduced paths use around
 * cuDNN calls that want float32 beside half data (batch norm's vectors).
 *
 * Why cudnnOpTensor: cudnnTransformTensor and cudnnAddTensor need x and y
 * of one data type (the legacy API reference returns
 * CUDNN_STATUS_BAD_PARAM when "the data type of the two tensor
 * descriptors are different"), whereas cudnnOpTensor's table of supported
 * data types (opTensorCompType, A, B, C) has, with a CUDNN_DATA_FLOAT
 * compute type: FLOAT, FLOAT -> HALF; FLOAT, FLOAT -> BFLOAT16; HALF,
 * HALF -> FLOAT; BFLOAT16, BFLOAT16 -> FLOAT. Half to bfloat16 and back is
 * not a row of it, so it goes through float32 in the workspace (widening
 * is exact: one rounding). The op is MAX with B = A: max(x, x) is x for
 * every value, infinities and signed zeros included, and NaN stays NaN
 * with CUDNN_PROPAGATE_NAN (an ADD of 0 * x would turn an infinity into
 * NaN). cuDNN converts float to half and bfloat16 as CUDA's
 * __float2half_rn and __float2bfloat16 do, to nearest even; that it does
 * so bit for bit as src/core/half.c (subnormals and NaN payloads
 * included) is what tests/test_precision's Cast check shows on a GPU.
 * Not run on a GPU yet. */
#include "cu_internal.h"


pdnn_status pdnn__cu_convert(cu_dev *d, cudnnTensorDescriptor_t xd, const void *x, cudnnTensorDescriptor_t yd,
                             void *y)
{
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnOpTensor, d->dnn, d->max, &one, xd, x, &one, xd, x, &zero, yd, y);
    return PDNN_SUCCESS;
}

/* Half to bfloat16 or back: through float32, EW_CHUNK elements at most. */
static int via_float(const pdnn__cast_call *c) { return cu_reduced(c->from) && cu_reduced(c->to); }

static void cu_cast_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__cast_call *c = &call->u.cast;
    if (via_float(c))
        plan->workspace = (size_t)(c->n < EW_CHUNK ? c->n : EW_CHUNK) * sizeof(float);
}

static pdnn_status cast_body(cu_dev *d, const pdnn__op_call *call, const void *unused, pdnn__buf ws)
{
    (void)unused;
    const pdnn__cast_call *c = &call->u.cast;
    const size_t xs = pdnn__dtype_size(c->from), ys = pdnn__dtype_size(c->to);
    if (c->from == c->to) {
        CU(cudaMemcpyAsync, ptr(c->y_buf), ptr(c->x_buf), (size_t)c->n * xs, cudaMemcpyDeviceToDevice, d->stream);
        return PDNN_SUCCESS;
    }
    if (via_float(c) && !ws.region)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "CUDA: cast from %s to %s goes through float32 and needs workspace",
                           pdnn__dtype_name(c->from), pdnn__dtype_name(c->to));
    for (int64_t i = 0; i < c->n; i += EW_CHUNK) {
        const int64_t len = c->n - i < EW_CHUNK ? c->n - i : EW_CHUNK;
        const int64_t dims[4] = {1, 1, 1, len};
        const char *x = (const char *)ptr(c->x_buf) + (size_t)i * xs;
        char *y = (char *)ptr(c->y_buf) + (size_t)i * ys;
        RETURN_IF_FAILED(pdnn__cu_set_packed_as(d->t[TX], cu_dnn_type(c->from), PDNN_NCHW, dims));
        RETURN_IF_FAILED(pdnn__cu_set_packed_as(d->t[TY], cu_dnn_type(c->to), PDNN_NCHW, dims));
        if (!via_float(c)) {
            RETURN_IF_FAILED(pdnn__cu_convert(d, d->t[TX], x, d->t[TY], y));
            continue;
        }
        RETURN_IF_FAILED(pdnn__cu_set_packed_as(d->t[TB], CUDNN_DATA_FLOAT, PDNN_NCHW, dims));
        RETURN_IF_FAILED(pdnn__cu_convert(d, d->t[TX], x, d->t[TB], ptr(ws)));
        RETURN_IF_FAILED(pdnn__cu_convert(d, d->t[TB], ptr(ws), d->t[TY], y));
    }
    return PDNN_SUCCESS;
}

CU_DEFINE_RUN_NO_STATE(cu_cast_run, cast_body)

const pdnn__algo pdnn__cu_algo_cast_cudnn = {
    .op = PDNN__OP_CAST,
    .name = "cudnn",
    .rank = 0,
    .plan = cu_cast_plan,
    .run = cu_cast_run,
    .tol = {.of = {PDNN__TOL_EXACT, PDNN__TOL_EXACT, PDNN__TOL_EXACT}},
    .dtypes = PDNN__DTYPES_FLOAT,
};
