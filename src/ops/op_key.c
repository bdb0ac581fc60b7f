/* What core knows of an op call without running it: the tuning cache's
 * shape key, the FLOP count, the output buffer, and how far two outputs
 * differ. */
#include "ops/dispatch_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

double pdnn__now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- keys and sizes ------------------------------------------------- */

/* The data-movement ops' key: dims and strides, and a hash of the index
 * tables (one algorithm each today, so the key only names the call). */
static void index_key(const pdnn__op_call *call, char *buf, size_t len)
{
    const int is_index = call->op == PDNN__OP_INDEX;
    const int r = is_index ? call->u.index.rank : call->u.where.rank;
    const int64_t *d = is_index ? call->u.index.dims : call->u.where.dims;
    const int64_t *s1 = is_index ? call->u.index.xs : call->u.where.as;
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; is_index && i < call->u.index.n_idx; i++)
        h = (h ^ (uint64_t)call->u.index.idx[i]) * 1099511628211ull;
    int used = snprintf(buf, len, "%s f32 r%d lerp%d h%016llx", is_index ? "index" : "where", r,
                        is_index ? call->u.index.lerp : -1, (unsigned long long)h);
    for (int k = 0; k < r && used > 0 && (size_t)used < len; k++)
        used += snprintf(buf + used, len - (size_t)used, " %lld:%lld", (long long)d[k], (long long)s1[k]);
}

static void op_key_of(const pdnn__op_call *call, char *buf, size_t len)
{
    if (pdnn__nd_math_describe(call, buf, len, NULL, NULL, NULL) ||
        pdnn__nd_grad_describe(call, buf, len, NULL, NULL, NULL))
        return;
    if (pdnn__op_is_conv(call->op)) {
        static const char *const tag[] = {[PDNN__OP_CONV2D_FWD] = "conv2d_fwd",
                                          [PDNN__OP_CONV2D_BWD_DATA] = "conv2d_bwd_data",
                                          [PDNN__OP_CONV2D_BWD_FILTER] = "conv2d_bwd_filter",
                                          [PDNN__OP_CONV2D_BWD_BIAS] = "conv2d_bwd_bias"};
        const pdnn__conv2d_call *c = &call->u.conv2d;
        snprintf(buf, len,
                 "%s f32 %s/%s/%s n%lld c%lld h%lld w%lld k%lld r%lld s%lld p%lld q%lld u%d,%d d%d,%d "
                 "pad%d,%d,%d,%d g%lld",
                 tag[call->op], pdnn_layout_name(c->x_layout), pdnn_layout_name(c->w_layout),
                 pdnn_layout_name(c->y_layout), (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w, (long long)c->k,
                 (long long)c->r, (long long)c->s, (long long)c->p, (long long)c->q, c->stride_h, c->stride_w,
                 c->dil_h, c->dil_w, c->pad_top, c->pad_bottom, c->pad_left, c->pad_right, (long long)c->groups);
        /* Views (the backward ops' forward_gemm, matmul's conv_gemm) read
         * memory in patterns no layout name says: their strides join the
         * key, so a view and a plain tensor of the same shape, or two
         * views, do not share a measured configuration. */
        const int64_t xd[4] = {c->n, c->c, c->h, c->w}, wd[4] = {c->k, c->c / (c->groups ? c->groups : 1), c->r, c->s},
                      yd[4] = {c->n, c->k, c->p, c->q};
        int64_t px[4], pw[4], py[4];
        pdnn__layout_strides(c->x_layout, xd, px);
        pdnn__layout_strides(c->w_layout, wd, pw);
        pdnn__layout_strides(c->y_layout, yd, py);
        if (memcmp(px, c->xs, sizeof px) != 0 || memcmp(pw, c->ws, sizeof pw) != 0 || memcmp(py, c->ys, sizeof py) != 0) {
            const size_t used = strlen(buf);
            if (used < len)
                snprintf(buf + used, len - used, " view x%lld,%lld,%lld,%lld w%lld,%lld,%lld,%lld y%lld,%lld,%lld,%lld",
                         (long long)c->xs[0], (long long)c->xs[1], (long long)c->xs[2], (long long)c->xs[3],
                         (long long)c->ws[0], (long long)c->ws[1], (long long)c->ws[2], (long long)c->ws[3],
                         (long long)c->ys[0], (long long)c->ys[1], (long long)c->ys[2], (long long)c->ys[3]);
        }
    } else if (call->op == PDNN__OP_POOL2D_FWD || call->op == PDNN__OP_POOL2D_BWD) {
        const pdnn__pool2d_call *c = &call->u.pool2d;
        snprintf(buf, len,
                 "%s f32 %s/%s mode%d n%lld c%lld h%lld w%lld p%lld q%lld win%d,%d u%d,%d pad%d,%d,%d,%d",
                 call->op == PDNN__OP_POOL2D_FWD ? "pool2d_fwd" : "pool2d_bwd", pdnn_layout_name(c->x_layout),
                 pdnn_layout_name(c->y_layout), (int)c->mode, (long long)c->n,
                 (long long)c->c, (long long)c->h, (long long)c->w, (long long)c->p, (long long)c->q, c->win_h,
                 c->win_w, c->stride_h, c->stride_w, c->pad_top, c->pad_bottom, c->pad_left, c->pad_right);
        const size_t used = strlen(buf);
        if (call->op == PDNN__OP_POOL2D_BWD && used < len)
            snprintf(buf + used, len - used, " dx%s", pdnn_layout_name(c->dx_layout));
    } else if (pdnn__op_is_bn(call->op)) {
        const pdnn__bn_call *c = &call->u.bn;
        snprintf(buf, len, "%s f32 %s n%lld c%lld h%lld w%lld", pdnn__op_name(call->op), pdnn_layout_name(c->layout),
                 (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w);
    } else if (call->op == PDNN__OP_RELU_BWD) {
        snprintf(buf, len, "relu_bwd f32 n%lld", (long long)call->u.relu_bwd.n);
    } else if (call->op == PDNN__OP_SOFTMAX_XENT) {
        snprintf(buf, len, "softmax_xent f32 n%lld k%lld%s", (long long)call->u.xent.n, (long long)call->u.xent.k,
                 call->u.xent.dlogits_buf.region ? " grad" : "");
    } else if (call->op == PDNN__OP_OPTIMIZER) {
        const pdnn__optim_call *o = &call->u.optim;
        snprintf(buf, len, "optimizer f32 %s n%lld%s", o->kind == PDNN_OPTIMIZER_ADAM ? "adam" : "sgd",
                 (long long)o->n, o->s1_buf.region ? " slot" : "");
    } else if (call->op == PDNN__OP_SCALE) {
        snprintf(buf, len, "scale f32 n%lld", (long long)call->u.scale.n);
    } else if (call->op == PDNN__OP_TRANSFORM) {
        const pdnn__transform_call *c = &call->u.transform;
        snprintf(buf, len, "transform f32 %lldx%lldx%lldx%lld x%lld,%lld,%lld,%lld y%lld,%lld,%lld,%lld",
                 (long long)c->dims[0], (long long)c->dims[1], (long long)c->dims[2], (long long)c->dims[3],
                 (long long)c->xs[0], (long long)c->xs[1], (long long)c->xs[2], (long long)c->xs[3],
                 (long long)c->ys[0], (long long)c->ys[1], (long long)c->ys[2], (long long)c->ys[3]);
    } else if (call->op == PDNN__OP_ACTIVATION) {
        static const char *const modes[] = {"clip", "leaky_relu", "sigmoid", "hard_sigmoid", "hard_swish", "silu"};
        const pdnn__act_call *c = &call->u.act;
        snprintf(buf, len, "activation f32 %s n%lld", (unsigned)c->mode < 6 ? modes[c->mode] : "?", (long long)c->n);
    } else if (call->op == PDNN__OP_BINARY) {
        static const char *const kinds[] = {"add", "mul", "sub", "div"};
        const pdnn__binary_call *c = &call->u.binary;
        /* The 8 axes in memory order; the leading ones of size 1 are left
         * out (a 4-d call's key reads as before). */
        int at = snprintf(buf, len, "binary f32 %s ", (unsigned)c->kind < 4 ? kinds[c->kind] : "?"), k0 = 0;
        while (k0 < PDNN_MAX_RANK - 4 && c->dims[k0] == 1)
            k0++;
        const int64_t *parts[] = {c->dims, c->as, c->bs};
        for (int p = 0; p < 3; p++)
            for (int k = k0; k < PDNN_MAX_RANK && at >= 0 && (size_t)at < len; k++)
                at += snprintf(buf + at, len - (size_t)at, "%s%lld",
                               k > k0 ? (p ? "," : "x") : p == 1 ? " a" : p == 2 ? " b" : "", (long long)parts[p][k]);
    } else if (call->op == PDNN__OP_PAD) {
        const pdnn__pad_call *c = &call->u.pad;
        snprintf(buf, len, "pad f32 mode%d %lldx%lldx%lldx%lld p%lld,%lld,%lld,%lld x%lld,%lld,%lld,%lld", (int)c->mode,
                 (long long)c->dims[0], (long long)c->dims[1], (long long)c->dims[2], (long long)c->dims[3],
                 (long long)c->pads[0], (long long)c->pads[1], (long long)c->pads[2], (long long)c->pads[3],
                 (long long)c->xs[0], (long long)c->xs[1], (long long)c->xs[2], (long long)c->xs[3]);
    } else if (call->op == PDNN__OP_INDEX || call->op == PDNN__OP_WHERE) {
        index_key(call, buf, len);
    } else if (call->op == PDNN__OP_GEMM) {
        const pdnn__matmul_call *c = &call->u.matmul;
        const int at = snprintf(buf, len, "matmul f32 m%lld n%lld k%lld t%d,%d", (long long)c->m, (long long)c->n,
                                (long long)c->k, c->trans_a, c->trans_b);
        if (pdnn__matmul_batch(c) > 1 && at >= 0 && (size_t)at < len) /* one matrix's key reads as before */
            snprintf(buf + at, len - (size_t)at, " b%lld s%lld,%lld", (long long)c->batch, (long long)c->stride_a,
                     (long long)c->stride_b);
    } else if (call->op == PDNN__OP_CAST) {
        snprintf(buf, len, "cast %d>%d n%lld", (int)call->u.cast.from, (int)call->u.cast.to, (long long)call->u.cast.n);
    } else {
        snprintf(buf, len, "op%d", (int)call->op);
    }
}

/* The keys name float32 ("f32") as they did before other dtypes; a call
 * in another dtype says so at the end, so its choices are its own. */
void pdnn__op_key(const pdnn__op_call *call, char *buf, size_t len)
{
    op_key_of(call, buf, len);
    const size_t at = strlen(buf);
    if (call->dtype != PDNN_FLOAT32 && at < len)
        snprintf(buf + at, len - at, " dtype=%s", call->dtype == PDNN_FLOAT16 ? "f16" : "bf16");
}

double pdnn__op_flops(const pdnn__op_call *call)
{
    double nd_flops = 0.0;
    if (pdnn__nd_math_describe(call, NULL, 0, &nd_flops, NULL, NULL) ||
        pdnn__nd_grad_describe(call, NULL, 0, &nd_flops, NULL, NULL))
        return nd_flops;
    /* Backward data and filter do the forward's multiply-adds (cuDNN and
     * oneDNN count them so); the bias gradient adds each dy once. */
    if (call->op == PDNN__OP_CONV2D_BWD_BIAS) {
        const pdnn__conv2d_call *c = &call->u.conv2d;
        return (double)c->n * (double)c->k * (double)c->p * (double)c->q;
    }
    if (pdnn__op_is_conv(call->op)) {
        const pdnn__conv2d_call *c = &call->u.conv2d;
        return 2.0 * (double)c->n * (double)c->k * (double)c->p * (double)c->q * (double)c->r * (double)c->s *
               (double)(c->c / c->groups);
    }
    if (call->op == PDNN__OP_POOL2D_FWD || call->op == PDNN__OP_POOL2D_BWD) {
        const pdnn__pool2d_call *c = &call->u.pool2d;
        return (double)c->n * (double)c->c * (double)c->p * (double)c->q * (double)c->win_h * (double)c->win_w;
    }
    if (pdnn__op_is_bn(call->op)) { /* elements touched: x read (twice for the statistics), y written */
        const pdnn__bn_call *c = &call->u.bn;
        return (double)c->n * (double)c->c * (double)c->h * (double)c->w * (call->op == PDNN__OP_BN_FWD_INFER ? 2.0 : 4.0);
    }
    if (call->op == PDNN__OP_SCALE)
        return (double)call->u.scale.n;
    if (call->op == PDNN__OP_ACTIVATION)
        return (double)call->u.act.n;
    if (call->op == PDNN__OP_BINARY)
        return (double)pdnn__binary_elements(&call->u.binary);
    if (call->op == PDNN__OP_TRANSFORM)
        return (double)call->u.transform.dims[0] * (double)call->u.transform.dims[1] *
               (double)call->u.transform.dims[2] * (double)call->u.transform.dims[3];
    if (call->op == PDNN__OP_PAD) { /* elements written */
        const pdnn__pad_call *c = &call->u.pad;
        return (double)c->dims[0] * (double)c->dims[1] * (double)(c->dims[2] + c->pads[0] + c->pads[2]) *
               (double)(c->dims[3] + c->pads[1] + c->pads[3]);
    }
    if (call->op == PDNN__OP_INDEX || call->op == PDNN__OP_WHERE) { /* elements written */
        size_t n = 0;
        (void)pdnn__out_buf(call, &n);
        return (double)n;
    }
    if (call->op == PDNN__OP_GEMM)
        return 2.0 * (double)pdnn__matmul_batch(&call->u.matmul) * (double)call->u.matmul.m *
               (double)call->u.matmul.n * (double)call->u.matmul.k;
    /* The training ops: elements touched. */
    if (call->op == PDNN__OP_RELU_BWD)
        return (double)call->u.relu_bwd.n;
    if (call->op == PDNN__OP_SOFTMAX_XENT)
        return (double)call->u.xent.n * (double)call->u.xent.k;
    if (call->op == PDNN__OP_OPTIMIZER)
        return (double)call->u.optim.n;
    if (call->op == PDNN__OP_CAST)
        return (double)call->u.cast.n;
    return 0.0;
}

/* The call's output buffer and its element count. */
pdnn__buf pdnn__out_buf(const pdnn__op_call *call, size_t *n)
{
    const pdnn__pool2d_call *pc = &call->u.pool2d;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    pdnn__buf nd_out;
    if (pdnn__nd_math_describe(call, NULL, 0, NULL, &nd_out, n) ||
        pdnn__nd_grad_describe(call, NULL, 0, NULL, &nd_out, n))
        return nd_out;
    switch (call->op) {
    case PDNN__OP_POOL2D_FWD: *n = (size_t)(pc->n * pc->c * pc->p * pc->q); return pc->y_buf;
    case PDNN__OP_POOL2D_BWD: *n = (size_t)(pc->n * pc->c * pc->h * pc->w); return pc->dx_buf;
    case PDNN__OP_CONV2D_BWD_DATA: *n = (size_t)(c->n * c->c * c->h * c->w); return c->x_buf;
    case PDNN__OP_CONV2D_BWD_FILTER: *n = (size_t)(c->k * (c->c / c->groups) * c->r * c->s); return c->w_buf;
    case PDNN__OP_CONV2D_BWD_BIAS: *n = (size_t)c->k; return c->bias_buf;
    case PDNN__OP_BN_FWD_TRAIN:
    case PDNN__OP_BN_FWD_INFER:
        *n = (size_t)(call->u.bn.n * call->u.bn.c * call->u.bn.h * call->u.bn.w);
        return call->u.bn.y_buf;
    case PDNN__OP_BN_BWD: /* dx when wanted, else dgamma */
        *n = call->u.bn.dx_buf.region ? (size_t)(call->u.bn.n * call->u.bn.c * call->u.bn.h * call->u.bn.w)
                                      : (size_t)call->u.bn.c;
        return call->u.bn.dx_buf.region ? call->u.bn.dx_buf : call->u.bn.dgamma_buf.region ? call->u.bn.dgamma_buf : call->u.bn.dbeta_buf;
    case PDNN__OP_RELU_BWD: *n = (size_t)call->u.relu_bwd.n; return call->u.relu_bwd.dx_buf;
    case PDNN__OP_SOFTMAX_XENT: *n = 1; return call->u.xent.loss_buf;
    case PDNN__OP_OPTIMIZER: *n = (size_t)call->u.optim.n; return call->u.optim.w_buf;
    case PDNN__OP_SCALE: *n = (size_t)call->u.scale.n; return call->u.scale.y_buf;
    case PDNN__OP_ACTIVATION: *n = (size_t)call->u.act.n; return call->u.act.y_buf;
    case PDNN__OP_TRANSFORM: {
        const int64_t *d = call->u.transform.dims;
        *n = (size_t)(d[0] * d[1] * d[2] * d[3]);
        return call->u.transform.y_buf;
    }
    case PDNN__OP_BINARY: {
        *n = (size_t)pdnn__binary_elements(&call->u.binary);
        return call->u.binary.y_buf;
    }
    case PDNN__OP_GEMM:
        *n = (size_t)(pdnn__matmul_batch(&call->u.matmul) * call->u.matmul.m * call->u.matmul.n);
        return call->u.matmul.c_buf;
    case PDNN__OP_PAD: {
        const pdnn__pad_call *p = &call->u.pad;
        *n = (size_t)(p->dims[0] * p->dims[1] * (p->dims[2] + p->pads[0] + p->pads[2]) *
                      (p->dims[3] + p->pads[1] + p->pads[3]));
        return p->y_buf;
    }
    case PDNN__OP_INDEX:
    case PDNN__OP_WHERE: {
        const int r = call->op == PDNN__OP_INDEX ? call->u.index.rank : call->u.where.rank;
        const int64_t *d = call->op == PDNN__OP_INDEX ? call->u.index.dims : call->u.where.dims;
        *n = 1;
        for (int k = 0; k < r; k++)
            *n *= (size_t)d[k];
        return call->op == PDNN__OP_INDEX ? call->u.index.y_buf : call->u.where.y_buf;
    }
    case PDNN__OP_CAST: *n = (size_t)call->u.cast.n; return call->u.cast.y_buf;
    case PDNN__OP_ND_TRANSPOSE: /* ops_nd_math.c, above */
    case PDNN__OP_ND_SOFTMAX:
    case PDNN__OP_ND_LAYER_NORM:
    case PDNN__OP_ND_REDUCE:
    case PDNN__OP_ND_LAYER_NORM_BWD: /* ops_nd_grad.c, above */
    case PDNN__OP_CONV2D_FWD:
    case PDNN__OP_COUNT: break;
    }
    *n = (size_t)(c->n * c->k * c->p * c->q);
    return c->y_buf;
}

/* Largest |got - ref| and largest |ref|. */
void pdnn__compare_outputs(const float *ref, const float *got, size_t n, float *worst, float *scale)
{
    *worst = 0.0f;
    *scale = 0.0f;
    for (size_t j = 0; j < n; j++) {
        const float d = fabsf(got[j] - ref[j]);
        *worst = d > *worst || isnan(d) ? d : *worst;
        *scale = fabsf(ref[j]) > *scale ? fabsf(ref[j]) : *scale;
    }
}
