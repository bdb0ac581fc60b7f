/* Backward convolution as forward convolutions, run by the forward
 * implicit-GEMM kernel (cl_implicit_gemm.c) on views of the tensors, with
 * no copy:
 *
 * data, stride 1: dx is the convolution of dy with the filter turned by
 * 180 degrees and with its K and C axes swapped, padded by
 * dil * (R - 1) - pad on each side. The turn is a view with negative
 * strides from the filter's last tap.
 *
 * filter: dw[k,c,r,s] = sum over n,p,q of dy[n,k,p,q] x[n,c,p*u+r*dil-pad,
 * ...] is a forward convolution whose batch is x's channels (x seen as
 * C x N x H x W), whose filter is dy (K x N x P x Q, dilated by the
 * stride) and whose stride is the dilation; its output C x K x R x S is
 * dw seen with its first two axes swapped.
 *
 * Both need groups == 1 (a grouped filter is no stride view of the swap).
 * The inner call is a CONV2D_FWD call, so it takes implicit_gemm's
 * configuration pick and tuning-cache entry for that forward shape. */
#include "backends/opencl/cl_internal.h"

#include <stdio.h>
#include <string.h>

extern const pdnn__algo pdnn__cl_algo_implicit_gemm;

/* The forward call that computes call's gradient; 0 with why if none. */
static int inner_call(const pdnn__op_call *call, pdnn__op_call *in, char *why, size_t len)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    *in = *call;
    in->op = PDNN__OP_CONV2D_FWD;
    in->force_config = -1;
    pdnn__conv2d_call *f = &in->u.conv2d;
    f->bias_buf.region = NULL;
    f->bias_buf.offset = 0;
    f->relu = 0;
    if (c->groups != 1) {
        snprintf(why, len, "forward_gemm runs ungrouped convolutions; this one has %lld groups",
                 (long long)c->groups);
        return 0;
    }
    if (call->op == PDNN__OP_CONV2D_BWD_DATA) {
        const int64_t eh = (int64_t)c->dil_h * (c->r - 1), ew = (int64_t)c->dil_w * (c->s - 1);
        if (c->stride_h != 1 || c->stride_w != 1) {
            snprintf(why, len, "forward_gemm computes dx for stride 1; this one has stride %d,%d", c->stride_h,
                     c->stride_w);
            return 0;
        }
        if (c->pad_top > eh || c->pad_bottom > eh || c->pad_left > ew || c->pad_right > ew) {
            snprintf(why, len, "forward_gemm computes dx where no padding exceeds the dilated filter's reach");
            return 0;
        }
        /* Input dy (N, K, P, Q), filter (C, K, R, S) turned, output dx. */
        f->c = c->k;
        f->h = c->p;
        f->w = c->q;
        f->k = c->c;
        f->p = c->h;
        f->q = c->w;
        f->pad_top = (int)(eh - c->pad_top);
        f->pad_bottom = (int)(eh - c->pad_bottom);
        f->pad_left = (int)(ew - c->pad_left);
        f->pad_right = (int)(ew - c->pad_right);
        f->x_layout = c->y_layout;
        f->y_layout = c->x_layout;
        f->x_buf = c->y_buf;
        f->y_buf = c->x_buf;
        memcpy(f->xs, c->ys, sizeof f->xs);
        memcpy(f->ys, c->xs, sizeof f->ys);
        f->ws[0] = c->ws[1];
        f->ws[1] = c->ws[0];
        f->ws[2] = -c->ws[2];
        f->ws[3] = -c->ws[3];
        f->w_buf.offset = c->w_buf.offset + (size_t)((c->r - 1) * c->ws[2] + (c->s - 1) * c->ws[3]) * sizeof(float);
        return 1;
    }
    /* BWD_FILTER: input x as (C, N, H, W), filter dy as (K, N, P, Q),
     * output dw as (C, K, R, S). */
    f->n = c->c;
    f->c = c->n;
    f->k = c->k;
    f->r = c->p;
    f->s = c->q;
    f->p = c->r;
    f->q = c->s;
    f->stride_h = c->dil_h;
    f->stride_w = c->dil_w;
    f->dil_h = c->stride_h;
    f->dil_w = c->stride_w;
    /* The output ends at tap R - 1: rows of x past the last one read are
     * not padding any more. */
    const int64_t pb = (int64_t)c->dil_h * (c->r - 1) + (int64_t)c->stride_h * (c->p - 1) + 1 - c->h - c->pad_top;
    const int64_t pr = (int64_t)c->dil_w * (c->s - 1) + (int64_t)c->stride_w * (c->q - 1) + 1 - c->w - c->pad_left;
    f->pad_bottom = pb > 0 ? (int)pb : 0;
    f->pad_right = pr > 0 ? (int)pr : 0;
    f->x_layout = f->y_layout = PDNN_NCHW; /* views: the strides say where */
    f->w_layout = PDNN_OIHW;
    f->x_buf = c->x_buf;
    f->w_buf = c->y_buf;
    f->y_buf = c->w_buf;
    f->xs[0] = c->xs[1];
    f->xs[1] = c->xs[0];
    f->xs[2] = c->xs[2];
    f->xs[3] = c->xs[3];
    f->ws[0] = c->ys[1];
    f->ws[1] = c->ys[0];
    f->ws[2] = c->ys[2];
    f->ws[3] = c->ys[3];
    f->ys[0] = c->ws[1];
    f->ys[1] = c->ws[0];
    f->ys[2] = c->ws[2];
    f->ys[3] = c->ws[3];
    return 1;
}

static void plan_inner(void *dev, const pdnn__op_call *in, pdnn__plan *ip)
{
    memset(ip, 0, sizeof *ip);
    ip->supported = 1;
    ip->config = -1;
    ip->rank = pdnn__cl_algo_implicit_gemm.rank;
    pdnn__cl_algo_implicit_gemm.plan(dev, in, ip);
}

static void fwd_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    pdnn__op_call in;
    char why[PDNN__WHY_LEN];
    if (!inner_call(call, &in, why, sizeof why)) {
        pdnn__plan_refuse(plan, "%s", why);
        return;
    }
    pdnn__plan ip;
    plan_inner(dev, &in, &ip);
    if (!ip.supported) {
        pdnn__plan_refuse(plan, "forward_gemm: %s", ip.why);
        return;
    }
    plan->workspace = ip.workspace;
    plan->search = ip.search;
    snprintf(plan->config_name, sizeof plan->config_name, "%s", ip.config_name);
    plan->cached = ip.cached;
}

static pdnn_status fwd_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                           pdnn__run_report *rep)
{
    (void)plan;
    pdnn__op_call in;
    char why[PDNN__WHY_LEN];
    if (!inner_call(call, &in, why, sizeof why))
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "OpenCL: %s", why);
    /* The same plan as fwd_plan's: the workspace covers it. */
    pdnn__plan ip;
    plan_inner(dev, &in, &ip);
    if (!ip.supported)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "OpenCL: forward_gemm: %s", ip.why);
    return pdnn__cl_algo_implicit_gemm.run(dev, &in, &ip, ws, rep);
}

const pdnn__algo pdnn__cl_algo_bwd_data_fwd = {
    .op = PDNN__OP_CONV2D_BWD_DATA,
    .name = "forward_gemm",
    .rank = 20,
    .plan = fwd_plan,
    .run = fwd_run,
};

const pdnn__algo pdnn__cl_algo_bwd_filter_fwd = {
    .op = PDNN__OP_CONV2D_BWD_FILTER,
    .name = "forward_gemm",
    .rank = 20,
    .plan = fwd_plan,
    .run = fwd_run,
};
