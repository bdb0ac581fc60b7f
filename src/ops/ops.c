/* Eager ops: validate in core, build the backend call, dispatch to the
 * device that holds the tensors. */
#include "ops/dispatch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Bounds that keep every index product of a call inside int64 and give
 * absurd parameters a clear message instead of undefined arithmetic. */
#define PARAM_MAX (1 << 20)

void pdnn_conv2d_params_init(pdnn_conv2d_params *p)
{
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    p->stride_h = p->stride_w = 1;
    p->dilation_h = p->dilation_w = 1;
    p->groups = 1;
}

void pdnn_conv2d_set_padding_valid(pdnn_conv2d_params *p)
{
    if (!p)
        return;
    p->pad_top = p->pad_bottom = p->pad_left = p->pad_right = 0;
}

/* TensorFlow's SAME rule on one axis: output ceil(in / stride); the total
 * padding needed for that, with the odd pixel at the end. */
static pdnn_status same_axis(int64_t in, int64_t k, int stride, int dil, int *before, int *after)
{
    if (in < 1 || k < 1 || stride < 1 || dil < 1 || stride > PARAM_MAX || dil > PARAM_MAX ||
        in > INT32_MAX || k > PARAM_MAX)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_conv2d_set_padding_same: input %lld, filter %lld, stride %d, "
                           "dilation %d: each must be >= 1 (and at most %d)",
                           (long long)in, (long long)k, stride, dil, PARAM_MAX);
    int64_t out = (in + stride - 1) / stride;
    int64_t eff = (k - 1) * dil + 1;
    int64_t total = (out - 1) * stride + eff - in;
    if (total < 0)
        total = 0;
    if (total > 2 * (int64_t)PARAM_MAX)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_conv2d_set_padding_same: padding %lld is too large", (long long)total);
    *before = (int)(total / 2);
    *after = (int)(total - total / 2);
    return PDNN_SUCCESS;
}

pdnn_status pdnn_conv2d_set_padding_same(pdnn_conv2d_params *p, int64_t in_h, int64_t in_w,
                                         int64_t kh, int64_t kw)
{
    if (!p)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_conv2d_set_padding_same: params is NULL");
    int t = 0, b = 0, l = 0, r = 0;
    pdnn_status st = same_axis(in_h, kh, p->stride_h, p->dilation_h, &t, &b);
    if (st == PDNN_SUCCESS)
        st = same_axis(in_w, kw, p->stride_w, p->dilation_w, &l, &r);
    if (st != PDNN_SUCCESS)
        return st;
    p->pad_top = t;
    p->pad_bottom = b;
    p->pad_left = l;
    p->pad_right = r;
    return PDNN_SUCCESS;
}

static int is_activation(pdnn_layout l) { return l == PDNN_NCHW || l == PDNN_NHWC; }
static int is_filter(pdnn_layout l) { return l == PDNN_OIHW || l == PDNN_OHWI || l == PDNN_HWIO; }

/* Every conv2d algorithm of this build, "auto, direct, ...", for messages. */
static const char *algo_names(char *buf, size_t len)
{
    int n = 0;
    const char *const *names = pdnn__conv_algo_names(&n);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++) {
        if (!names[i])
            continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", names[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

static pdnn_status check_conv_params(const pdnn_conv2d_params *p)
{
    const int v[] = {p->stride_h, p->stride_w, p->dilation_h, p->dilation_w, p->groups};
    const char *names[] = {"stride_h", "stride_w", "dilation_h", "dilation_w", "groups"};
    for (int i = 0; i < 5; i++)
        if (v[i] < 1 || v[i] > PARAM_MAX)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "conv2d: %s is %d; it must be between 1 and %d", names[i], v[i],
                               PARAM_MAX);
    const int pads[] = {p->pad_top, p->pad_bottom, p->pad_left, p->pad_right};
    const char *pnames[] = {"pad_top", "pad_bottom", "pad_left", "pad_right"};
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0 || pads[i] > PARAM_MAX)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "conv2d: %s is %d; it must be between 0 and %d", pnames[i], pads[i],
                               PARAM_MAX);
    if (p->relu != 0 && p->relu != 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "conv2d: relu is %d; expected 0 or 1", p->relu);
    if (!(p->relu_cap >= 0.0f) || isinf(p->relu_cap))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "conv2d: relu_cap is %g; it must be finite and not negative "
                                                      "(0: no cap)", (double)p->relu_cap);
    if (p->relu_cap > 0.0f && !p->relu)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "conv2d: relu_cap is %g but relu is 0; the cap bounds the "
                                                      "relu (set relu = 1)", (double)p->relu_cap);
    /* Out of range, or an id this build has no algorithm for. */
    if (!pdnn__algo_id_known(PDNN__OP_CONV2D_FWD, (int)p->algorithm)) {
        char names[256];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "conv2d: algorithm %d is unknown; algorithms are %s",
                           (int)p->algorithm, algo_names(names, sizeof names));
    }
    return PDNN_SUCCESS;
}

/* Output length of one axis, or -1 if the filter does not fit. */
static int64_t conv_out(int64_t in, int64_t k, int dil, int stride, int pa, int pb)
{
    int64_t eff = (k - 1) * dil + 1;
    int64_t padded = in + pa + pb;
    if (eff > padded)
        return -1;
    return (padded - eff) / stride + 1;
}

pdnn_status pdnn_conv2d_output_dims(const pdnn_tensor_desc *x, const pdnn_tensor_desc *w,
                                    const pdnn_conv2d_params *p, int64_t out_dims[4])
{
    if (!x || !w || !p || !out_dims)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_conv2d_output_dims: %s is NULL",
                           !x ? "x" : !w ? "w" : !p ? "params" : "out_dims");
    pdnn_status st;
    if ((st = pdnn_tensor_desc_validate(x)) != PDNN_SUCCESS ||
        (st = pdnn_tensor_desc_validate(w)) != PDNN_SUCCESS ||
        (st = check_conv_params(p)) != PDNN_SUCCESS)
        return st;
    char xd[96], wd[96];
    if (!is_activation(x->layout))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "conv2d: input %s must be an activation (NCHW or NHWC)",
                           pdnn__desc_string(x, xd, sizeof xd));
    if (!is_filter(w->layout))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "conv2d: filter %s must be a filter (OIHW, OHWI or HWIO)",
                           pdnn__desc_string(w, wd, sizeof wd));
    for (int i = 1; i < 4; i++)
        if (x->dims[i] > INT32_MAX || w->dims[i] > INT32_MAX)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "conv2d: input %s or filter %s has a channel or spatial dim above 2^31-1",
                               pdnn__desc_string(x, xd, sizeof xd), pdnn__desc_string(w, wd, sizeof wd));
    int64_t c = x->dims[1], k = w->dims[0];
    if (c % p->groups != 0 || k % p->groups != 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "conv2d: groups %d must divide input channels %lld and output channels %lld",
                           p->groups, (long long)c, (long long)k);
    if (w->dims[1] != c / p->groups)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "conv2d: filter %s has %lld input channels, but input %s with %d group(s) "
                           "needs %lld (C / groups)",
                           pdnn__desc_string(w, wd, sizeof wd), (long long)w->dims[1],
                           pdnn__desc_string(x, xd, sizeof xd), p->groups, (long long)(c / p->groups));
    int64_t oh = conv_out(x->dims[2], w->dims[2], p->dilation_h, p->stride_h, p->pad_top, p->pad_bottom);
    int64_t ow = conv_out(x->dims[3], w->dims[3], p->dilation_w, p->stride_w, p->pad_left, p->pad_right);
    if (oh < 1 || ow < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "conv2d: filter %lldx%lld with dilation %dx%d is larger than the padded "
                           "input %lldx%lld (input %lldx%lld, padding %d,%d,%d,%d)",
                           (long long)w->dims[2], (long long)w->dims[3], p->dilation_h, p->dilation_w,
                           (long long)(x->dims[2] + p->pad_top + p->pad_bottom),
                           (long long)(x->dims[3] + p->pad_left + p->pad_right),
                           (long long)x->dims[2], (long long)x->dims[3], p->pad_top, p->pad_bottom,
                           p->pad_left, p->pad_right);
    out_dims[0] = x->dims[0];
    out_dims[1] = k;
    out_dims[2] = oh;
    out_dims[3] = ow;
    return PDNN_SUCCESS;
}

pdnn_status pdnn__device_mismatch(const char *op, const char *an, const pdnn_tensor *a, const char *bn,
                                  const pdnn_tensor *b)
{
    /* Two contexts have devices of the same names: "a is on /device:CPU:0
     * but b is on /device:CPU:0" said nothing, so the contexts are named. */
    if (a->dev->ctx != b->dev->ctx)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: %s is on %s of context %p but %s is on %s of context %p; tensors of two contexts "
                           "cannot meet in one call (copy through the host, or use one context)",
                           op, an, a->dev->name, (const void *)a->dev->ctx, bn, b->dev->name,
                           (const void *)b->dev->ctx);
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                       "%s: %s is on %s but %s is on %s; all tensors of one call must be on one device", op, an,
                       a->dev->name, bn, b->dev->name);
}

pdnn_status pdnn__same_device(const char *op, const pdnn_tensor *const *ts, const char *const *names, int n)
{
    for (int i = 1; i < n; i++) {
        if (ts[i] && ts[i]->dev != ts[0]->dev)
            return pdnn__device_mismatch(op, names[0], ts[0], names[i], ts[i]);
    }
    return pdnn__one_dtype(op, ts, names, n);
}

pdnn_status pdnn__check_output(const char *op, const char *name, const pdnn_tensor *y, const int64_t want[4])
{
    char yd[96];
    if (!is_activation(y->desc.layout))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s %s must be NCHW or NHWC", op, name,
                           pdnn__desc_string(&y->desc, yd, sizeof yd));
    if (memcmp(y->desc.dims, want, 4 * sizeof want[0]) != 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: %s %s has the wrong dims; expected [%lld,%lld,%lld,%lld]", op, name,
                           pdnn__desc_string(&y->desc, yd, sizeof yd), (long long)want[0],
                           (long long)want[1], (long long)want[2], (long long)want[3]);
    return PDNN_SUCCESS;
}

static _Thread_local pdnn_conv_algo last_algo = PDNN_CONV_ALGO_AUTO;
static _Thread_local pdnn_conv2d_tuning last_tuning;

pdnn_conv_algo pdnn_conv2d_last_algorithm(void) { return last_algo; }

pdnn_status pdnn_conv2d_last_tuning(pdnn_conv2d_tuning *out)
{
    if (!out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_conv2d_last_tuning: out is NULL");
    *out = last_tuning;
    return PDNN_SUCCESS;
}

/* Fills c's sizes and layouts from validated descriptors (buffers are
 * the caller's). */
void pdnn__conv_call_from(const pdnn_conv2d_params *p, const pdnn_tensor_desc *x, const pdnn_tensor_desc *w,
                          pdnn_layout y_layout, const int64_t od[4], pdnn__conv2d_call *c)
{
    memset(c, 0, sizeof *c);
    c->n = x->dims[0];
    c->c = x->dims[1];
    c->h = x->dims[2];
    c->w = x->dims[3];
    c->k = od[1];
    c->r = w->dims[2];
    c->s = w->dims[3];
    c->p = od[2];
    c->q = od[3];
    c->groups = p->groups;
    c->stride_h = p->stride_h;
    c->stride_w = p->stride_w;
    c->dil_h = p->dilation_h;
    c->dil_w = p->dilation_w;
    c->pad_top = p->pad_top;
    c->pad_left = p->pad_left;
    c->pad_bottom = p->pad_bottom;
    c->pad_right = p->pad_right;
    c->relu = p->relu;
    c->relu_cap = p->relu ? p->relu_cap : 0.0f;
    c->x_layout = x->layout;
    c->w_layout = w->layout;
    c->y_layout = y_layout;
    pdnn__layout_strides(x->layout, x->dims, c->xs);
    pdnn__layout_strides(w->layout, w->dims, c->ws);
    pdnn__layout_strides(y_layout, od, c->ys);
}

pdnn_status pdnn_conv2d_query_algorithm(pdnn_device *dev, const pdnn_conv2d_params *p,
                                        const pdnn_tensor_desc *x, const pdnn_tensor_desc *w,
                                        pdnn_layout y_layout, pdnn_conv_algo algo, pdnn_conv_algo_info *out)
{
    if (!dev || !p || !x || !w || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_conv2d_query_algorithm: %s is NULL",
                           !dev ? "dev" : !p ? "params" : !x ? "x" : !w ? "w" : "out");
    memset(out, 0, sizeof *out);
    if ((int)algo <= 0 || !pdnn__algo_id_known(PDNN__OP_CONV2D_FWD, (int)algo)) {
        char names[256];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_conv2d_query_algorithm: algorithm %d is not one to query; algorithms are %s",
                           (int)algo, algo_names(names, sizeof names));
    }
    if (!is_activation(y_layout))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_conv2d_query_algorithm: output layout %s must be NCHW or NHWC",
                           pdnn_layout_name(y_layout));
    if (x->dtype != PDNN_FLOAT32 || w->dtype != PDNN_FLOAT32)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "pdnn_conv2d_query_algorithm: only float32 is supported");
    int64_t od[4] = {0};
    pdnn_status st = pdnn_conv2d_output_dims(x, w, p, od);
    if (st != PDNN_SUCCESS)
        return st;
    out->algo = algo;
    snprintf(out->name, sizeof out->name, "%s", pdnn_conv_algo_name(algo));
    const pdnn__algo *a = pdnn__algo_by_id(dev, PDNN__OP_CONV2D_FWD, (int)algo);
    if (!a) {
        snprintf(out->why, sizeof out->why, "the %s backend of %s has no %s algorithm", dev->backend->name,
                 dev->name, out->name);
        return PDNN_SUCCESS;
    }
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_CONV2D_FWD;
    pdnn__conv_call_from(p, x, w, y_layout, od, &call.u.conv2d);
    call.ws_limit = p->workspace_limit;
    pdnn__call_prepare(dev, &call);
    pdnn__plan plan;
    pdnn__plan_for(dev, a, &call, &plan);
    out->available = 1;
    out->applies = plan.supported;
    out->auto_candidate = plan.supported && !plan.auto_skip;
    out->rank = plan.rank;
    out->tunable = a->n_configs > 0 && !pdnn__gpu_class_passed_over(a, &plan);
    out->workspace_bytes = plan.supported ? plan.workspace : 0;
    snprintf(out->config, sizeof out->config, "%s", plan.supported ? plan.config_name : "");
    snprintf(out->why, sizeof out->why, "%s", plan.why);
    if (plan.supported && !plan.auto_skip && call.ws_limit > 0 && plan.workspace > call.ws_limit)
        snprintf(out->why, sizeof out->why,
                 "AUTO tries it after the algorithms within the workspace limit (it needs %llu bytes, the limit "
                 "is %llu)",
                 (unsigned long long)plan.workspace, (unsigned long long)call.ws_limit);
    return PDNN_SUCCESS;
}

static pdnn_status conv_forward(const char *fn, const pdnn_conv2d_params *p, const pdnn_tensor *x,
                                const pdnn_tensor *w, const pdnn_tensor *bias, const pdnn_tensor *z, pdnn_tensor *y)
{
    if (!p || !x || !w || !y)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                           !p ? "params" : !x ? "x" : !w ? "w" : "y");
    const pdnn_tensor *ts[] = {x, w, y, bias, z};
    const char *names[] = {"input", "filter", "output", "bias", "residual"};
    pdnn_status st = pdnn__same_device("conv2d", ts, names, 5);
    if (st != PDNN_SUCCESS)
        return st;
    if (y == x || y == w || (bias && y == bias) || (z && y == z))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "conv2d: the output must be a tensor of its own, not an input");
    /* The unfused path writes y before it reads z: no shared byte. */
    if ((st = pdnn__check_alias("conv2d", y, "output", z, "residual", 0)) != PDNN_SUCCESS)
        return st;
    /* Imports can put two tensors over one buffer: the output may share
     * no byte with an input (every conv algorithm reads x after writing y). */
    if ((st = pdnn__check_alias("conv2d", y, "output", x, "input", 0)) != PDNN_SUCCESS ||
        (st = pdnn__check_alias("conv2d", y, "output", w, "filter", 0)) != PDNN_SUCCESS ||
        (st = pdnn__check_alias("conv2d", y, "output", bias, "bias", 0)) != PDNN_SUCCESS)
        return st;
    int64_t od[4] = {0};
    if ((st = pdnn_conv2d_output_dims(&x->desc, &w->desc, p, od)) != PDNN_SUCCESS ||
        (st = pdnn__check_output("conv2d", "output", y, od)) != PDNN_SUCCESS)
        return st;
    if (bias && (bias->desc.layout != PDNN_LAYOUT_X || bias->desc.dims[0] != od[1])) {
        char bd[96];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "conv2d: bias %s must be a layout-X vector of length %lld (output channels)",
                           pdnn__desc_string(&bias->desc, bd, sizeof bd), (long long)od[1]);
    }
    if (z && (z->desc.dtype != y->desc.dtype || z->desc.layout != y->desc.layout ||
              memcmp(z->desc.dims, y->desc.dims, sizeof z->desc.dims) != 0)) {
        char zd[96], yd[96];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "conv2d: residual %s must be the output's %s",
                           pdnn__desc_string(&z->desc, zd, sizeof zd), pdnn__desc_string(&y->desc, yd, sizeof yd));
    }
    pdnn_device *dev = x->dev;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_CONV2D_FWD;
    call.dtype = x->desc.dtype;
    pdnn__conv2d_call *c = &call.u.conv2d;
    pdnn__conv_call_from(p, &x->desc, &w->desc, y->desc.layout, od, c);
    call.ws_limit = p->workspace_limit;
    c->x_buf = x->block.buf;
    c->w_buf = w->block.buf;
    c->y_buf = y->block.buf;
    /* The packed-copy cache is the only thing written through it. */
    c->w_const = w->frozen ? (pdnn_tensor *)w : NULL;
    if (bias)
        c->bias_buf = bias->block.buf;
    if (z)
        c->z_buf = z->block.buf;
    const pdnn__algo *want = NULL;
    if ((st = pdnn__algo_for_id(dev, PDNN__OP_CONV2D_FWD, (int)p->algorithm, &want)) != PDNN_SUCCESS)
        return st;
    pdnn__dispatch_result res;
    st = pdnn__dispatch(dev, &call, want, &res);
    if (st == PDNN_SUCCESS) {
        last_algo = (pdnn_conv_algo)pdnn__algo_id(PDNN__OP_CONV2D_FWD, res.algo);
        last_tuning = res.tuning;
    }
    return st;
}

pdnn_status pdnn_conv2d_forward(const pdnn_conv2d_params *p, const pdnn_tensor *x, const pdnn_tensor *w,
                                const pdnn_tensor *bias, pdnn_tensor *y)
{
    return conv_forward("pdnn_conv2d_forward", p, x, w, bias, NULL, y);
}

pdnn_status pdnn_conv2d_forward_residual(const pdnn_conv2d_params *p, const pdnn_tensor *x, const pdnn_tensor *w,
                                         const pdnn_tensor *bias, const pdnn_tensor *z, pdnn_tensor *y)
{
    if (!z)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_conv2d_forward_residual: z is NULL (use "
                                                      "pdnn_conv2d_forward)");
    return conv_forward("pdnn_conv2d_forward_residual", p, x, w, bias, z, y);
}

/* ---- pooling --------------------------------------------------------- */

void pdnn_pool2d_params_init(pdnn_pool2d_params *p)
{
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    p->mode = PDNN_POOL_MAX;
    p->window_h = p->window_w = 2;
    p->stride_h = p->stride_w = 2;
}

static int64_t pool_out(int64_t in, int win, int stride, int pa, int pb, int ceil_mode)
{
    int64_t span = in + pa + pb - win;
    if (span < 0)
        return -1;
    int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    /* PyTorch: the last window must start inside the image or the leading
     * padding, never entirely in the trailing padding. */
    if (ceil_mode && (out - 1) * stride >= in + pa)
        out--;
    return out;
}

pdnn_status pdnn_pool2d_output_dims(const pdnn_tensor_desc *x, const pdnn_pool2d_params *p,
                                    int64_t out_dims[4])
{
    if (!x || !p || !out_dims)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_pool2d_output_dims: %s is NULL",
                           !x ? "x" : !p ? "params" : "out_dims");
    pdnn_status st = pdnn_tensor_desc_validate(x);
    if (st != PDNN_SUCCESS)
        return st;
    char xd[96];
    if (!is_activation(x->layout))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pool2d: input %s must be NCHW or NHWC",
                           pdnn__desc_string(x, xd, sizeof xd));
    if ((unsigned)p->mode > PDNN_POOL_AVG_EXCLUDE_PADDING)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pool2d: mode %d is unknown; modes are MAX, AVG_INCLUDE_PADDING, AVG_EXCLUDE_PADDING",
                           (int)p->mode);
    const int v[] = {p->window_h, p->window_w, p->stride_h, p->stride_w};
    const char *names[] = {"window_h", "window_w", "stride_h", "stride_w"};
    for (int i = 0; i < 4; i++)
        if (v[i] < 1 || v[i] > PARAM_MAX)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "pool2d: %s is %d; it must be between 1 and %d", names[i], v[i], PARAM_MAX);
    const int pads[] = {p->pad_top, p->pad_bottom, p->pad_left, p->pad_right};
    const char *pnames[] = {"pad_top", "pad_bottom", "pad_left", "pad_right"};
    for (int i = 0; i < 4; i++) {
        int win = i < 2 ? p->window_h : p->window_w;
        if (pads[i] < 0 || pads[i] >= win)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "pool2d: %s is %d; padding must be >= 0 and smaller than the window (%d) "
                               "so that every window sees the image",
                               pnames[i], pads[i], win);
    }
    if (p->ceil_mode != 0 && p->ceil_mode != 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pool2d: ceil_mode is %d; expected 0 or 1",
                           p->ceil_mode);
    if (x->dims[2] > INT32_MAX || x->dims[3] > INT32_MAX)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pool2d: input %s is taller or wider than 2^31-1",
                           pdnn__desc_string(x, xd, sizeof xd));
    int64_t oh = pool_out(x->dims[2], p->window_h, p->stride_h, p->pad_top, p->pad_bottom, p->ceil_mode);
    int64_t ow = pool_out(x->dims[3], p->window_w, p->stride_w, p->pad_left, p->pad_right, p->ceil_mode);
    if (oh < 1 || ow < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pool2d: window %dx%d is larger than the padded input %lldx%lld",
                           p->window_h, p->window_w, (long long)(x->dims[2] + p->pad_top + p->pad_bottom),
                           (long long)(x->dims[3] + p->pad_left + p->pad_right));
    out_dims[0] = x->dims[0];
    out_dims[1] = x->dims[1];
    out_dims[2] = oh;
    out_dims[3] = ow;
    return PDNN_SUCCESS;
}

pdnn_status pdnn_pool2d_forward(const pdnn_pool2d_params *p, const pdnn_tensor *x, pdnn_tensor *y)
{
    if (!p || !x || !y)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_pool2d_forward: %s is NULL",
                           !p ? "params" : !x ? "x" : "y");
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"input", "output"};
    pdnn_status st = pdnn__same_device("pool2d", ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    if (x == y)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pool2d: the output must be a tensor of its own, not the input");
    if ((st = pdnn__check_alias("pool2d", y, "output", x, "input", 0)) != PDNN_SUCCESS)
        return st;
    int64_t od[4] = {0};
    if ((st = pdnn_pool2d_output_dims(&x->desc, p, od)) != PDNN_SUCCESS ||
        (st = pdnn__check_output("pool2d", "output", y, od)) != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_POOL2D_FWD;
    call.dtype = x->desc.dtype;
    pdnn__pool_call_from(p, &x->desc, y->desc.layout, od, &call.u.pool2d);
    call.u.pool2d.x_buf = x->block.buf;
    call.u.pool2d.y_buf = y->block.buf;
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}

void pdnn__pool_call_from(const pdnn_pool2d_params *p, const pdnn_tensor_desc *x, pdnn_layout y_layout,
                          const int64_t od[4], pdnn__pool2d_call *c)
{
    memset(c, 0, sizeof *c);
    c->n = x->dims[0];
    c->c = x->dims[1];
    c->h = x->dims[2];
    c->w = x->dims[3];
    c->p = od[2];
    c->q = od[3];
    c->mode = p->mode;
    c->win_h = p->window_h;
    c->win_w = p->window_w;
    c->stride_h = p->stride_h;
    c->stride_w = p->stride_w;
    c->pad_top = p->pad_top;
    c->pad_left = p->pad_left;
    c->pad_bottom = p->pad_bottom;
    c->pad_right = p->pad_right;
    c->x_layout = x->layout;
    c->y_layout = y_layout;
    pdnn__layout_strides(x->layout, x->dims, c->xs);
    pdnn__layout_strides(y_layout, od, c->ys);
}
