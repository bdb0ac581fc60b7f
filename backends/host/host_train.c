/* The host reference of the training ops (relu backward, softmax
 * cross-entropy, optimizer steps): one "direct" algorithm each, exported
 * to host.c's registry tables. Sums and the optimizers' moments are
 * formed in double, so the reference is the more accurate side of every
 * parity comparison. */
#include "backend.h"

#include <math.h>

static float *fat(pdnn__buf b) { return (float *)((char *)b.region + b.offset); }
static const int32_t *iat(pdnn__buf b) { return (const int32_t *)(const void *)((const char *)b.region + b.offset); }

/* The reference runs every valid call: nothing to refuse, no workspace. */
static void train_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan) { (void)dev, (void)call, (void)plan; }

static pdnn_status relu_bwd(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                            pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__relu_bwd_call *c = &call->u.relu_bwd;
    const float *y = fat(c->y_buf), *dy = fat(c->dy_buf);
    float *dx = fat(c->dx_buf);
    for (int64_t i = 0; i < c->n; i++)
        dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
    return PDNN_SUCCESS;
}

static pdnn_status scale(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                         pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__scale_call *c = &call->u.scale;
    const float *x = fat(c->x_buf);
    float *y = fat(c->y_buf);
    for (int64_t i = 0; i < c->n; i++)
        y[i] = c->alpha * x[i];
    return PDNN_SUCCESS;
}

/* max(0, min(1, t)) in double; NaN stays NaN. */
static float hard_sigmoid(double t) { return t < 0.0 ? 0.0f : t > 1.0 ? 1.0f : (float)t; }

/* The unary math modes (erf onward), in double. */
static float unary(pdnn_activation mode, float alpha, float x)
{
    const double v = x;
    switch (mode) {
    case PDNN_ACTIVATION_ERF: return (float)erf(v);
    case PDNN_ACTIVATION_GELU: return (float)(0.5 * v * (1.0 + erf(v / sqrt(2.0))));
    case PDNN_ACTIVATION_GELU_TANH:
        return (float)(0.5 * v * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (v + 0.044715 * v * v * v))));
    case PDNN_ACTIVATION_TANH: return (float)tanh(v);
    case PDNN_ACTIVATION_SQRT: return (float)sqrt(v);
    case PDNN_ACTIVATION_NEG: return -x;
    case PDNN_ACTIVATION_EXP: return (float)exp(v);
    case PDNN_ACTIVATION_LOG: return (float)log(v);
    case PDNN_ACTIVATION_RECIPROCAL: return (float)(1.0 / v);
    case PDNN_ACTIVATION_ABS: return fabsf(x);
    case PDNN_ACTIVATION_POW: return (float)pow(v, (double)alpha);
    default: return NAN;
    }
}

static pdnn_status activation(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                              pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__act_call *c = &call->u.act;
    const float *x = fat(c->x_buf);
    float *y = fat(c->y_buf);
    for (int64_t i = 0; i < c->n; i++) {
        const float v = x[i];
        switch (c->mode) {
        case PDNN_ACTIVATION_CLIP: y[i] = v < c->alpha ? c->alpha : v > c->beta ? c->beta : v; break;
        case PDNN_ACTIVATION_LEAKY_RELU: y[i] = v >= 0.0f ? v : c->alpha * v; break;
        case PDNN_ACTIVATION_SIGMOID: y[i] = (float)(1.0 / (1.0 + exp(-(double)v))); break;
        case PDNN_ACTIVATION_HARD_SIGMOID: y[i] = hard_sigmoid((double)c->alpha * v + c->beta); break;
        case PDNN_ACTIVATION_HARD_SWISH: y[i] = (float)(v * hard_sigmoid(v / 6.0 + 0.5)); break;
        case PDNN_ACTIVATION_SILU: y[i] = (float)(v / (1.0 + exp(-(double)v))); break;
        default: y[i] = unary(c->mode, c->alpha, v); break;
        }
    }
    return PDNN_SUCCESS;
}

static float binary_op(pdnn_binary_op kind, float a, float b)
{
    switch (kind) {
    case PDNN_BINARY_ADD: return a + b;
    case PDNN_BINARY_MUL: return a * b;
    case PDNN_BINARY_SUB: return a - b;
    case PDNN_BINARY_DIV: return a / b;
    case PDNN_BINARY_POW: return (float)pow((double)a, (double)b);
    }
    return NAN;
}

/* Loops in memory order over y, a and b through their strides; y may be
 * a or b where that one is packed like y: each element is read before
 * it is written. */
static pdnn_status binary(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                          pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__binary_call *c = &call->u.binary;
    const float *a = fat(c->a_buf), *b = fat(c->b_buf);
    float *y = fat(c->y_buf);
    const int64_t *d = c->dims, *as = c->as, *bs = c->bs;
    enum { R = PDNN_MAX_RANK };
    /* An odometer over the outer R - 1 axes; the innermost is the loop. */
    int64_t idx[R] = {0}, ao = 0, bo = 0;
    const int64_t outer = pdnn__binary_elements(c) / d[R - 1];
    for (int64_t o = 0, i = 0; o < outer; o++) {
        for (int64_t j = 0; j < d[R - 1]; j++, i++)
            y[i] = binary_op(c->kind, a[ao + j * as[R - 1]], b[bo + j * bs[R - 1]]);
        for (int k = R - 2; k >= 0; k--) {
            ao += as[k], bo += bs[k];
            if (++idx[k] < d[k])
                break;
            ao -= as[k] * d[k], bo -= bs[k] * d[k];
            idx[k] = 0;
        }
    }
    return PDNN_SUCCESS;
}

static pdnn_status transform(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__transform_call *c = &call->u.transform;
    const float *x = fat(c->x_buf);
    float *y = fat(c->y_buf);
    for (int64_t a = 0; a < c->dims[0]; a++)
        for (int64_t b = 0; b < c->dims[1]; b++)
            for (int64_t h = 0; h < c->dims[2]; h++)
                for (int64_t w = 0; w < c->dims[3]; w++)
                    y[a * c->ys[0] + b * c->ys[1] + h * c->ys[2] + w * c->ys[3]] =
                        x[a * c->xs[0] + b * c->xs[1] + h * c->xs[2] + w * c->xs[3]];
    return PDNN_SUCCESS;
}

static pdnn_status softmax_xent(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__xent_call *c = &call->u.xent;
    const float *x = fat(c->logits_buf);
    const int32_t *label = iat(c->labels_buf);
    /* Every label is checked before anything is written. */
    for (int64_t i = 0; i < c->n; i++)
        if (label[i] < 0 || label[i] >= c->k)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "softmax_cross_entropy: labels[%lld] is %d, outside [0, %lld) (the logits have %lld "
                               "classes)",
                               (long long)i, (int)label[i], (long long)c->k, (long long)c->k);
    float *dx = c->dlogits_buf.region ? fat(c->dlogits_buf) : NULL;
    double total = 0.0;
    for (int64_t i = 0; i < c->n; i++) {
        const float *row = x + i * c->k;
        double m = row[0];
        for (int64_t j = 1; j < c->k; j++)
            m = row[j] > m ? row[j] : m;
        double s = 0.0;
        for (int64_t j = 0; j < c->k; j++)
            s += exp((double)row[j] - m);
        /* Relative to the maximum, as the device kernels do. */
        total += log(s) + (m - (double)row[label[i]]);
        if (dx)
            for (int64_t j = 0; j < c->k; j++)
                dx[i * c->k + j] =
                    (float)((exp((double)row[j] - m) / s - (j == label[i] ? 1.0 : 0.0)) / (double)c->n);
    }
    *fat(c->loss_buf) = (float)(total / (double)c->n);
    return PDNN_SUCCESS;
}

static pdnn_status optimizer(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__optim_call *c = &call->u.optim;
    float *w = fat(c->w_buf);
    const float *g = fat(c->g_buf);
    const double lr = c->lr, wd = c->weight_decay;
    if (c->kind == PDNN_OPTIMIZER_SGD) {
        float *s1 = c->s1_buf.region ? fat(c->s1_buf) : NULL;
        for (int64_t i = 0; i < c->n; i++) {
            double d = (double)g[i] + wd * (double)w[i];
            if (s1) {
                const double v = (double)c->momentum * (double)s1[i] + d;
                s1[i] = (float)v;
                d = c->nesterov ? d + (double)c->momentum * (double)(float)v : v;
            }
            w[i] = (float)((double)w[i] - lr * d);
        }
        return PDNN_SUCCESS;
    }
    /* Adam, AdamW: core has given both slots. AdamW decays w itself (decoupled), not g. */
    const int decoupled = c->kind == PDNN_OPTIMIZER_ADAMW;
    float *s1 = fat(c->s1_buf), *s2 = fat(c->s2_buf);
    const double b1 = c->beta1, b2 = c->beta2;
    const double bc1 = 1.0 - pow(b1, (double)c->step), bc2 = 1.0 - pow(b2, (double)c->step);
    for (int64_t i = 0; i < c->n; i++) {
        const double d = (double)g[i] + (decoupled ? 0.0 : wd * (double)w[i]);
        if (decoupled)
            w[i] = (float)((double)w[i] * (1.0 - lr * wd));
        const double m = b1 * (double)s1[i] + (1.0 - b1) * d;
        const double v = b2 * (double)s2[i] + (1.0 - b2) * d * d;
        s1[i] = (float)m;
        s2[i] = (float)v;
        w[i] = (float)((double)w[i] - lr * (m / bc1) / (sqrt(v / bc2) + (double)c->epsilon));
    }
    return PDNN_SUCCESS;
}

static pdnn_status pad(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                       pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__pad_call *c = &call->u.pad;
    const float *x = fat(c->x_buf);
    float *y = fat(c->y_buf);
    const int64_t *d = c->dims, *p = c->pads, ph = d[2] + p[0] + p[2], pw = d[3] + p[1] + p[3];
    for (int64_t n = 0; n < d[0]; n++)
        for (int64_t ch = 0; ch < d[1]; ch++)
            for (int64_t h = 0; h < ph; h++) {
                const int64_t sh = pdnn__pad_src(h, p[0], d[2], c->mode);
                for (int64_t w = 0; w < pw; w++) {
                    const int64_t sw = pdnn__pad_src(w, p[1], d[3], c->mode);
                    y[n * c->ys[0] + ch * c->ys[1] + h * c->ys[2] + w * c->ys[3]] =
                        sh < 0 || sw < 0 ? c->value : x[n * c->xs[0] + ch * c->xs[1] + sh * c->xs[2] + sw * c->xs[3]];
                }
            }
    return PDNN_SUCCESS;
}

const pdnn__algo pdnn__host_pad_direct = {
    .op = PDNN__OP_PAD, .name = "direct", .rank = 100, .plan = train_plan, .run = pad,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__host_binary_direct = {
    .op = PDNN__OP_BINARY, .name = "direct", .rank = 100, .plan = train_plan, .run = binary,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_transform_direct = {
    .op = PDNN__OP_TRANSFORM, .name = "direct", .rank = 100, .plan = train_plan, .run = transform,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__host_activation_direct = {
    .op = PDNN__OP_ACTIVATION, .name = "direct", .rank = 100, .plan = train_plan, .run = activation,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_scale_direct = {
    .op = PDNN__OP_SCALE, .name = "direct", .rank = 100, .plan = train_plan, .run = scale,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_relu_bwd_direct = {
    .op = PDNN__OP_RELU_BWD, .name = "direct", .rank = 100, .plan = train_plan, .run = relu_bwd,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__host_softmax_xent_direct = {
    .op = PDNN__OP_SOFTMAX_XENT, .name = "direct", .rank = 100, .plan = train_plan, .run = softmax_xent,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_optimizer_direct = {
    .op = PDNN__OP_OPTIMIZER, .name = "direct", .rank = 100, .plan = train_plan, .run = optimizer,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
