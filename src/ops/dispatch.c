/* Core's side of the algorithm registries: which algorithm runs an op
 * call, its workspace from the device's allocator, the tuning cache's
 * measured choice, and the helpers every backend's plans share (shape
 * key, configuration pick, configuration search). Backends say what they
 * can do (plan) and do it (run); they never choose among algorithms. */
#include "ops/dispatch.h"
#include "ops/tuning.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

double pdnn__now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

const char *pdnn__op_name(pdnn__op op)
{
    switch (op) {
    case PDNN__OP_CONV2D_FWD: return "conv2d";
    case PDNN__OP_POOL2D_FWD: return "pool2d";
    case PDNN__OP_CONV2D_BWD_DATA: return "conv2d_bwd_data";
    case PDNN__OP_CONV2D_BWD_FILTER: return "conv2d_bwd_filter";
    case PDNN__OP_CONV2D_BWD_BIAS: return "conv2d_bwd_bias";
    case PDNN__OP_POOL2D_BWD: return "pool2d_bwd";
    case PDNN__OP_BN_FWD_TRAIN: return "batch_norm_fwd_train";
    case PDNN__OP_BN_FWD_INFER: return "batch_norm_fwd_infer";
    case PDNN__OP_BN_BWD: return "batch_norm_bwd";
    case PDNN__OP_RELU_BWD: return "relu_bwd";
    case PDNN__OP_SOFTMAX_XENT: return "softmax_xent";
    case PDNN__OP_OPTIMIZER: return "optimizer";
    case PDNN__OP_GEMM: return "matmul";
    case PDNN__OP_SCALE: return "scale";
    case PDNN__OP_ACTIVATION: return "activation";
    case PDNN__OP_BINARY: return "binary";
    case PDNN__OP_TRANSFORM: return "transform";
    case PDNN__OP_COUNT: break;
    }
    return "op";
}

/* ---- conv2d algorithm ids ------------------------------------------------
 * The public ids are the union of every compiled-in backend's conv2d
 * names: an entry's own id where the public enum has one, else the next
 * free id, in backend order. Built once. */

#define MAX_CONV_ALGOS 64
static const char *conv_names[MAX_CONV_ALGOS];
static int n_conv_names;
static pthread_once_t conv_names_once = PTHREAD_ONCE_INIT;

static void build_conv_names(void)
{
    int nb = 0;
    const pdnn__backend *const *bs = pdnn__backend_list(&nb);
    conv_names[0] = "auto";
    n_conv_names = PDNN_CONV_ALGO_COUNT;
    for (int pass = 0; pass < 2; pass++)
        for (int b = 0; b < nb; b++) {
            const pdnn__algo *const *list = bs[b]->algos[PDNN__OP_CONV2D_FWD];
            for (int i = 0; list && list[i]; i++) {
                const pdnn__algo *a = list[i];
                if (pass == 0 && a->id > 0 && a->id < MAX_CONV_ALGOS) {
                    conv_names[a->id] = a->name;
                    if (a->id >= n_conv_names)
                        n_conv_names = a->id + 1;
                } else if (pass == 1 && a->id <= 0) {
                    int known = 0;
                    for (int j = 0; j < n_conv_names; j++)
                        known |= conv_names[j] && strcmp(conv_names[j], a->name) == 0;
                    if (!known && n_conv_names < MAX_CONV_ALGOS)
                        conv_names[n_conv_names++] = a->name;
                }
            }
        }
}

const char *const *pdnn__conv_algo_names(int *n)
{
    pthread_once(&conv_names_once, build_conv_names);
    *n = n_conv_names;
    return conv_names;
}

int pdnn_conv_algo_count(void)
{
    int n = 0;
    pdnn__conv_algo_names(&n);
    return n;
}

const char *pdnn_conv_algo_name(pdnn_conv_algo algo)
{
    int n = 0;
    const char *const *names = pdnn__conv_algo_names(&n);
    if ((int)algo < 0 || (int)algo >= n || !names[algo])
        return "unknown";
    return names[algo];
}

int pdnn_conv_algo_parse(const char *name)
{
    int n = 0;
    const char *const *names = pdnn__conv_algo_names(&n);
    for (int i = 0; name && i < n; i++)
        if (names[i] && strcasecmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* Backward ids, per direction: 0 "auto", then the union of the backends'
 * names for that op in backend order. */
static const char *bwd_names[2][MAX_CONV_ALGOS];
static int n_bwd_names[2];
static pthread_once_t bwd_names_once = PTHREAD_ONCE_INIT;

static void build_bwd_names(void)
{
    int nb = 0;
    const pdnn__backend *const *bs = pdnn__backend_list(&nb);
    for (int d = 0; d < 2; d++) {
        const pdnn__op op = d == PDNN_CONV_BWD_DATA ? PDNN__OP_CONV2D_BWD_DATA : PDNN__OP_CONV2D_BWD_FILTER;
        bwd_names[d][0] = "auto";
        n_bwd_names[d] = 1;
        for (int b = 0; b < nb; b++)
            for (int i = 0; bs[b]->algos[op] && bs[b]->algos[op][i]; i++) {
                const char *name = bs[b]->algos[op][i]->name;
                int known = 0;
                for (int j = 0; j < n_bwd_names[d]; j++)
                    known |= strcmp(bwd_names[d][j], name) == 0;
                if (!known && n_bwd_names[d] < MAX_CONV_ALGOS)
                    bwd_names[d][n_bwd_names[d]++] = name;
            }
    }
}

int pdnn_conv_bwd_algo_count(pdnn_conv_bwd_dir dir)
{
    if (dir != PDNN_CONV_BWD_DATA && dir != PDNN_CONV_BWD_FILTER)
        return 0;
    pthread_once(&bwd_names_once, build_bwd_names);
    return n_bwd_names[dir];
}

const char *pdnn_conv_bwd_algo_name(pdnn_conv_bwd_dir dir, int id)
{
    if (id < 0 || id >= pdnn_conv_bwd_algo_count(dir))
        return "unknown";
    return bwd_names[dir][id];
}

int pdnn_conv_bwd_algo_parse(pdnn_conv_bwd_dir dir, const char *name)
{
    const int n = pdnn_conv_bwd_algo_count(dir);
    for (int i = 0; name && i < n; i++)
        if (strcasecmp(name, bwd_names[dir][i]) == 0)
            return i;
    return -1;
}

/* ---- registry lookups ------------------------------------------------- */

const pdnn__algo *const *pdnn__algos(const pdnn_device *dev, pdnn__op op)
{
    static const pdnn__algo *const none[] = {NULL};
    const pdnn__algo *const *a = (unsigned)op < PDNN__OP_COUNT ? dev->backend->algos[op] : NULL;
    return a ? a : none;
}

const pdnn__algo *pdnn__algo_find(const pdnn_device *dev, pdnn__op op, const char *name)
{
    const pdnn__algo *const *list = pdnn__algos(dev, op);
    for (int i = 0; name && list[i]; i++)
        if (strcasecmp(list[i]->name, name) == 0)
            return list[i];
    return NULL;
}

/* Names of dev's algorithms for op as "a, b, c", for messages. */
static const char *algo_list(const pdnn_device *dev, pdnn__op op, char *buf, size_t len)
{
    const pdnn__algo *const *list = pdnn__algos(dev, op);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; list[i] && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", list[i]->name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

static _Thread_local struct {
    int active;
    pdnn__op op;
    char name[32];
    int config;
} forced;

void pdnn__dispatch_force(pdnn__op op, const char *name, int config)
{
    forced.active = name != NULL;
    forced.op = op;
    snprintf(forced.name, sizeof forced.name, "%s", name ? name : "");
    forced.config = config;
}

void pdnn__call_prepare(pdnn_device *dev, pdnn__op_call *call)
{
    call->tuning = dev->ctx->opts.tuning;
    call->device_key = dev->tune_key;
    call->force_config = forced.active && forced.op == call->op ? forced.config : -1;
}

static void plan_with(pdnn_device *dev, const pdnn__algo *algo, const pdnn__op_call *call, pdnn__plan *plan,
                      int verdict_only)
{
    memset(plan, 0, sizeof *plan);
    plan->supported = 1;
    plan->config = -1;
    plan->rank = algo->rank;
    plan->verdict_only = verdict_only;
    algo->plan(dev->handle, call, plan);
}

void pdnn__plan_for(pdnn_device *dev, const pdnn__algo *algo, const pdnn__op_call *call, pdnn__plan *plan)
{
    plan_with(dev, algo, call, plan, 0);
}

void pdnn__plan_verdict(pdnn_device *dev, const pdnn__algo *algo, const pdnn__op_call *call, pdnn__plan *plan)
{
    plan_with(dev, algo, call, plan, 1);
}

/* plan->why = the text, unless only the verdict is wanted. */
static void word_why(pdnn__plan *plan, const char *fmt, va_list ap)
{
    if (!plan->verdict_only)
        vsnprintf(plan->why, sizeof plan->why, fmt, ap);
}

void pdnn__plan_refuse(pdnn__plan *plan, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    word_why(plan, fmt, ap);
    va_end(ap);
    plan->supported = 0;
}

void pdnn__plan_skip(pdnn__plan *plan, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    word_why(plan, fmt, ap);
    va_end(ap);
    plan->auto_skip = 1;
}

/* ---- keys and sizes ------------------------------------------------- */

void pdnn__op_key(const pdnn__op_call *call, char *buf, size_t len)
{
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
        static const char *const modes[] = {"clip", "leaky_relu", "sigmoid"};
        const pdnn__act_call *c = &call->u.act;
        snprintf(buf, len, "activation f32 %s n%lld", (unsigned)c->mode < 3 ? modes[c->mode] : "?", (long long)c->n);
    } else if (call->op == PDNN__OP_BINARY) {
        const pdnn__binary_call *c = &call->u.binary;
        snprintf(buf, len, "binary f32 %s %lldx%lldx%lldx%lld b%lld,%lld,%lld,%lld",
                 c->kind == PDNN_BINARY_MUL ? "mul" : "add", (long long)c->dims[0], (long long)c->dims[1],
                 (long long)c->dims[2], (long long)c->dims[3], (long long)c->bs[0], (long long)c->bs[1],
                 (long long)c->bs[2], (long long)c->bs[3]);
    } else if (call->op == PDNN__OP_GEMM) {
        const pdnn__matmul_call *c = &call->u.matmul;
        snprintf(buf, len, "matmul f32 m%lld n%lld k%lld t%d,%d", (long long)c->m, (long long)c->n, (long long)c->k,
                 c->trans_a, c->trans_b);
    } else {
        snprintf(buf, len, "op%d", (int)call->op);
    }
}

double pdnn__op_flops(const pdnn__op_call *call)
{
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
        return (double)call->u.binary.dims[0] * (double)call->u.binary.dims[1] * (double)call->u.binary.dims[2] *
               (double)call->u.binary.dims[3];
    if (call->op == PDNN__OP_TRANSFORM)
        return (double)call->u.transform.dims[0] * (double)call->u.transform.dims[1] *
               (double)call->u.transform.dims[2] * (double)call->u.transform.dims[3];
    if (call->op == PDNN__OP_GEMM)
        return 2.0 * (double)call->u.matmul.m * (double)call->u.matmul.n * (double)call->u.matmul.k;
    /* The training ops: elements touched. */
    if (call->op == PDNN__OP_RELU_BWD)
        return (double)call->u.relu_bwd.n;
    if (call->op == PDNN__OP_SOFTMAX_XENT)
        return (double)call->u.xent.n * (double)call->u.xent.k;
    if (call->op == PDNN__OP_OPTIMIZER)
        return (double)call->u.optim.n;
    return 0.0;
}

/* The call's output buffer and its element count. */
static pdnn__buf out_buf(const pdnn__op_call *call, size_t *n)
{
    const pdnn__pool2d_call *pc = &call->u.pool2d;
    const pdnn__conv2d_call *c = &call->u.conv2d;
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
        const int64_t *d = call->u.binary.dims;
        *n = (size_t)(d[0] * d[1] * d[2] * d[3]);
        return call->u.binary.y_buf;
    }
    case PDNN__OP_GEMM: *n = (size_t)(call->u.matmul.m * call->u.matmul.n); return call->u.matmul.c_buf;
    case PDNN__OP_CONV2D_FWD:
    case PDNN__OP_COUNT: break;
    }
    *n = (size_t)(c->n * c->k * c->p * c->q);
    return c->y_buf;
}

/* ---- configurations of one algorithm -------------------------------------- */

int pdnn__plan_pick_config(void *dev, const pdnn__op_call *call, const pdnn__algo *algo, const char *kernel,
                           int (*applies)(void *dev, const pdnn__op_call *call, int i), int dflt, pdnn__plan *plan)
{
    int pick = dflt;
    plan->search = 0;
    plan->cached = 0;
    const int f = call->force_config;
    if (f >= 0 && f < algo->n_configs && applies(dev, call, f)) {
        pick = f;
    } else if (dflt >= 0 && call->tuning != PDNN_TUNING_OFF) {
        char shape[512], value[64], name[64];
        pdnn__op_key(call, shape, sizeof shape);
        if (pdnn__tuning_lookup_for(call->tuning, call->device_key, kernel, shape, value, sizeof value)) {
            int found = -1;
            for (int i = 0; i < algo->n_configs && found < 0; i++) {
                algo->config_name(i, name, sizeof name);
                if (strcmp(name, value) == 0 && applies(dev, call, i))
                    found = i;
            }
            if (found >= 0) {
                pick = found;
                plan->cached = 1;
            } else {
                pdnn__debug("tuning cache: ignoring '%s' for %s %s: not a configuration this build offers for the "
                            "shape",
                            value, kernel, shape);
            }
        } else {
            plan->search = call->tuning == PDNN_TUNING_SEARCH || call->tuning == PDNN_TUNING_FORCE;
        }
    }
    plan->config = pick;
    plan->config_name[0] = '\0';
    if (pick >= 0)
        algo->config_name(pick, plan->config_name, sizeof plan->config_name);
    return pick;
}

/* At least SEARCH_ROUNDS rounds, more (up to SEARCH_ROUNDS_MAX) while a
 * round is short, since short runs are the noisiest. */
enum { SEARCH_ROUNDS = 3, SEARCH_ROUNDS_MAX = 10 };
#define SEARCH_BUDGET_S 0.2

/* Runs configuration i to the end: its seconds, or -1 on failure. */
static double config_timed(const pdnn__config_search *s, int i)
{
    const double t0 = pdnn__now();
    if (s->run_config(s->dev, s->call, i, s->ws) != PDNN_SUCCESS ||
        s->backend->synchronize(s->dev) != PDNN_SUCCESS)
        return -1.0;
    return pdnn__now() - t0;
}

/* Largest |got - ref| and largest |ref|. */
static void compare(const float *ref, const float *got, size_t n, float *worst, float *scale)
{
    *worst = 0.0f;
    *scale = 0.0f;
    for (size_t j = 0; j < n; j++) {
        const float d = fabsf(got[j] - ref[j]);
        *worst = d > *worst || isnan(d) ? d : *worst;
        *scale = fabsf(ref[j]) > *scale ? fabsf(ref[j]) : *scale;
    }
}

int pdnn__search_configs(const pdnn__config_search *s, pdnn__run_report *rep)
{
    const double t_start = pdnn__now();
    const int count = s->algo->n_configs;
    size_t ny = 0;
    const pdnn__buf y = out_buf(s->call, &ny);
    float *ref = malloc(ny * sizeof *ref), *got = malloc(ny * sizeof *got);
    double *times = calloc((size_t)count, sizeof *times);
    int *ok = calloc((size_t)count, sizeof *ok);
    double best_t = -1.0;
    int best = s->dflt, rounds = SEARCH_ROUNDS;
    char name[64];
    /* The default is the reference: the parity harness checks it against
     * the host; every configuration sums in the same order, so they must
     * agree with it to rounding. */
    if (ref && got && times && ok && config_timed(s, s->dflt) >= 0.0 &&
        s->backend->read(s->dev, y, ref, ny * sizeof *ref) == PDNN_SUCCESS) {
        ok[s->dflt] = 1;
        for (int i = 0; i < count; i++) {
            if (i == s->dflt || !s->usable(s->dev, s->call, i))
                continue;
            s->algo->config_name(i, name, sizeof name);
            if (config_timed(s, i) < 0.0 || s->backend->read(s->dev, y, got, ny * sizeof *got) != PDNN_SUCCESS) {
                pdnn__debug("tuning %s: %s failed to run (%s); skipped", s->kernel, name, pdnn_last_error());
                continue;
            }
            float worst, scale;
            compare(ref, got, ny, &worst, &scale);
            if (!(worst <= 1e-5f * (1.0f + scale))) {
                pdnn__debug("tuning %s: %s differs from the default by %g; rejected", s->kernel, name,
                            (double)worst);
                continue;
            }
            ok[i] = 1;
        }
        /* Rounds of one run of each, so that a burst of load from other
         * processes hits all of them alike; each keeps its best. */
        for (int r = 0; r < rounds; r++) {
            const double t_round = pdnn__now();
            for (int i = 0; i < count; i++) {
                if (!ok[i])
                    continue;
                const double t = config_timed(s, i);
                if (t <= 0.0) {
                    ok[i] = 0; /* ran once, fails now: not to be trusted */
                    continue;
                }
                times[i] = r == 0 || t < times[i] ? t : times[i];
            }
            if (r == 0) {
                const double per_round = pdnn__now() - t_round;
                const int want = per_round > 0.0 ? (int)(SEARCH_BUDGET_S / per_round) : SEARCH_ROUNDS_MAX;
                rounds = want < SEARCH_ROUNDS ? SEARCH_ROUNDS : want > SEARCH_ROUNDS_MAX ? SEARCH_ROUNDS_MAX : want;
            }
        }
        for (int i = 0; i < count; i++) {
            if (!ok[i])
                continue;
            s->algo->config_name(i, name, sizeof name);
            pdnn__debug("tuning %s: %s %.3f ms (best of %d)", s->kernel, name, times[i] * 1e3, rounds);
            if (best_t < 0.0 || times[i] < best_t) {
                best_t = times[i];
                best = i;
            }
        }
    }
    free(ref);
    free(got);
    free(times);
    free(ok);
    if (best_t > 0.0) {
        char shape[512];
        pdnn__op_key(s->call, shape, sizeof shape);
        s->algo->config_name(best, name, sizeof name);
        if (pdnn__tuning_store(s->call->device_key, s->kernel, shape, name, pdnn__op_flops(s->call) / best_t * 1e-9) !=
            PDNN_SUCCESS)
            pdnn__debug("tuning %s: %s", s->kernel, pdnn_last_error());
    }
    if (rep) {
        rep->searched = 1;
        rep->search_seconds = pdnn__now() - t_start;
    }
    return best;
}

/* ---- running one planned algorithm ------------------------------------------- */

/* Runs plan with its workspace from dev's allocator, returned as soon as
 * the work is queued (the queue is in order, so the next user of that
 * memory runs after it). A workspace that does not fit is the
 * allocator's out-of-memory error. */
static pdnn_status run_planned(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *plan, const pdnn__op_call *call,
                               pdnn__run_report *rep);

/* Whether a runs call only in part: a residual z or a capped relu that
 * its epilogue lacks. */
static int needs_unfused(const pdnn__algo *a, const pdnn__op_call *call)
{
    if (call->op != PDNN__OP_CONV2D_FWD)
        return 0;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    return (c->z_buf.region && !a->residual) || (c->relu_cap > 0.0f && !a->relu_cap);
}

/* A convolution whose residual z or relu cap a's epilogue lacks: the
 * convolution (bias, and z where a adds it; no relu), then y += z where
 * it did not, then the relu or the clip to [0, cap], each a pass over y
 * (the unfused path; the choice of algorithm is unchanged). */
static pdnn_status run_unfused(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *planned,
                               const pdnn__op_call *call, pdnn__run_report *rep)
{
    memset(rep, 0, sizeof *rep);
    const pdnn__conv2d_call *orig = &call->u.conv2d;
    pdnn__op_call c2 = *call;
    pdnn__conv2d_call *c = &c2.u.conv2d;
    const int add_z = orig->z_buf.region && !a->residual;
    if (add_z)
        c->z_buf = (pdnn__buf){NULL, 0};
    c->relu = 0;
    c->relu_cap = 0.0f;
    if ((add_z && !dev->backend->add) || (orig->relu && orig->relu_cap <= 0.0f && !dev->backend->relu))
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "conv2d: the %s backend has neither the residual or capped relu "
                                                 "epilogue in %s nor the add and relu to run it unfused",
                           dev->backend->name, a->name);
    /* An algorithm without an epilogue ignores z and the cap, so the plan
     * made for the call stands; only a relu (which it would apply before
     * the add, or without the cap) needs a plan without it. */
    pdnn__plan plan;
    if (orig->relu) {
        pdnn__plan_for(dev, a, &c2, &plan);
        if (!plan.supported)
            return pdnn__error(PDNN_ERR_UNSUPPORTED, "conv2d: %s: %s", a->name, plan.why);
        planned = &plan;
    }
    pdnn_status st = run_planned(dev, a, planned, &c2, rep);
    const int64_t n = c->n * c->k * c->p * c->q;
    if (st == PDNN_SUCCESS && add_z)
        st = dev->backend->add(dev->handle, c->y_buf, orig->z_buf, c->y_buf, n);
    if (st == PDNN_SUCCESS && orig->relu && orig->relu_cap > 0.0f) {
        pdnn__op_call act;
        memset(&act, 0, sizeof act);
        act.op = PDNN__OP_ACTIVATION;
        act.u.act = (pdnn__act_call){n, PDNN_ACTIVATION_CLIP, 0.0f, orig->relu_cap, c->y_buf, c->y_buf};
        st = pdnn__dispatch(dev, &act, NULL, NULL);
    } else if (st == PDNN_SUCCESS && orig->relu) {
        st = dev->backend->relu(dev->handle, c->y_buf, c->y_buf, n);
    }
    return st;
}

static pdnn_status run_ws(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *plan, const pdnn__op_call *call,
                          pdnn__run_report *rep);

/* A plan that keeps a packed filter on its frozen tensor (wpack > 0):
 * the tensor's copy when a made it for the same configuration, else a new
 * one the run packs into. The tensor's lock is held through the run, so
 * that no other call reads a copy still being made or evicts it. Where
 * the copy does not fit in the device's free memory, the call runs as if
 * the filter were not frozen (packing into its workspace, for which other
 * tensors' copies give way). */
static pdnn_status run_packed(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *plan,
                              const pdnn__op_call *call, pdnn__run_report *rep)
{
    pdnn_tensor *t = call->u.conv2d.w_const;
    pthread_mutex_lock(&t->pack_lock);
    pdnn__tensor_pack *pk = &t->pack;
    if (pk->owner != a || pk->config != plan->config || pk->bytes != plan->wpack) {
        pdnn__tensor_pack_drop(t);
        if (pdnn__tensor_pack_alloc(t, a, plan->config, plan->wpack) != PDNN_SUCCESS) {
            pthread_mutex_unlock(&t->pack_lock);
            pdnn__debug("conv2d on %s: %s's packed filter does not fit (%s); packing it for this call only",
                        dev->name, a->name, pdnn_last_error());
            pdnn__op_call c2 = *call;
            c2.u.conv2d.w_const = NULL;
            pdnn__plan p2;
            pdnn__plan_for(dev, a, &c2, &p2);
            if (!p2.supported)
                return pdnn__error(PDNN_ERR_UNSUPPORTED, "conv2d: %s: %s", a->name, p2.why);
            return run_ws(dev, a, &p2, &c2, rep);
        }
    }
    pdnn__op_call c2 = *call;
    c2.u.conv2d.wpack = pk->block.buf;
    c2.u.conv2d.wpack_fill = !pk->filled;
    const pdnn_status st = run_ws(dev, a, plan, &c2, rep);
    if (st == PDNN_SUCCESS)
        pk->filled = 1;
    else if (!pk->filled)
        pdnn__tensor_pack_drop(t);
    pthread_mutex_unlock(&t->pack_lock);
    return st;
}

static pdnn_status run_planned(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *plan, const pdnn__op_call *call,
                               pdnn__run_report *rep)
{
    if (needs_unfused(a, call))
        return run_unfused(dev, a, plan, call, rep);
    if (plan->wpack > 0 && call->op == PDNN__OP_CONV2D_FWD && call->u.conv2d.w_const)
        return run_packed(dev, a, plan, call, rep);
    return run_ws(dev, a, plan, call, rep);
}

static pdnn_status run_ws(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *plan, const pdnn__op_call *call,
                          pdnn__run_report *rep)
{
    pdnn__bfc_block block;
    memset(&block, 0, sizeof block);
    pdnn__buf ws = {NULL, 0};
    if (plan->workspace > 0) {
        char label[48];
        snprintf(label, sizeof label, "%s workspace", pdnn__op_name(call->op));
        pdnn_status st = pdnn__device_alloc(dev, plan->workspace, label, &block);
        if (st != PDNN_SUCCESS)
            return st;
        ws = block.buf;
    }
    memset(rep, 0, sizeof *rep);
    rep->config = plan->config;
    snprintf(rep->config_name, sizeof rep->config_name, "%s", plan->config_name);
    pdnn_status st = a->run(dev->handle, call, plan, ws, rep);
    if (plan->workspace > 0)
        pdnn__bfc_free(dev->alloc, block.handle);
    return st;
}

/* Fills res after a successful run of a with plan. */
static void report(pdnn__dispatch_result *res, const pdnn__algo *a, const pdnn__plan *plan,
                   const pdnn__run_report *rep)
{
    if (!res)
        return;
    memset(res, 0, sizeof *res);
    res->algo = a;
    pdnn_conv2d_tuning *t = &res->tuning;
    t->tunable = plan->config >= 0;
    t->cached = plan->cached && !rep->searched;
    t->searched = rep->searched;
    t->search_seconds = rep->search_seconds;
    snprintf(t->config, sizeof t->config, "%s", rep->config_name);
}

static double run_once_timed(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *plan, const pdnn__op_call *call)
{
    pdnn__run_report rep;
    const double t0 = pdnn__now();
    if (run_planned(dev, a, plan, call, &rep) != PDNN_SUCCESS)
        return -1.0;
    if (dev->backend->synchronize && dev->backend->synchronize(dev->handle) != PDNN_SUCCESS)
        return -1.0;
    return pdnn__now() - t0;
}

enum { MAX_PLANS = 32, LOCAL_PLANS = 12 };

/* Like cudnnFind and MIOpen's find-db: runs every supported algorithm
 * once, checks each against the reference (the supported one ranked
 * last: the plainest, which the parity harness checks most widely),
 * times the survivors and stores the fastest under (device, "<op>_algo",
 * shape). Returns its index in plans, or -1. A gross-error check, not a
 * precision test (Winograd's rounding differs from direct's by up to
 * ~1e-3 of the largest output at C = 512). */
static int find_search(pdnn_device *dev, const pdnn__algo *const *list, pdnn__plan *plans, int n,
                       const pdnn__op_call *call, const char *kernel, const char *shape)
{
    int refi = -1;
    for (int i = 0; i < n; i++)
        if (plans[i].supported && (refi < 0 || plans[i].rank > plans[refi].rank))
            refi = i;
    if (refi < 0)
        return -1;
    size_t ny = 0;
    const pdnn__buf y = out_buf(call, &ny);
    float *ref = malloc(ny * sizeof *ref), *got = malloc(ny * sizeof *got);
    int best = -1;
    double best_t = -1.0;
    const double t_start = pdnn__now();
    if (ref && got && run_once_timed(dev, list[refi], &plans[refi], call) >= 0.0 &&
        dev->backend->read(dev->handle, y, ref, ny * sizeof *ref) == PDNN_SUCCESS) {
        for (int i = 0; i < n; i++) {
            if (!plans[i].supported || i == refi)
                continue;
            /* The first run builds programs and may tune the kernel's own
             * configuration; it is checked, not timed. */
            if (run_once_timed(dev, list[i], &plans[i], call) < 0.0 ||
                dev->backend->read(dev->handle, y, got, ny * sizeof *got) != PDNN_SUCCESS)
                continue;
            /* That run searched the algorithm's configurations and stored
             * the winner: plan again, so the timed runs use it instead of
             * searching each time. */
            if (plans[i].search)
                pdnn__plan_for(dev, list[i], call, &plans[i]);
            float worst, scale;
            compare(ref, got, ny, &worst, &scale);
            if (!(worst <= 5e-3f * (1.0f + scale))) {
                pdnn__debug("%s find on %s: %s differs from %s by %g (largest output %g); rejected", pdnn__op_name(call->op),
                            dev->name, list[i]->name, list[refi]->name, (double)worst, (double)scale);
                continue;
            }
            double t = -1.0;
            for (int r = 0; r < 3; r++) {
                const double tr = run_once_timed(dev, list[i], &plans[i], call);
                if (tr >= 0.0 && (t < 0.0 || tr < t))
                    t = tr;
            }
            pdnn__debug("%s find on %s: %s %.3f ms", pdnn__op_name(call->op), dev->name, list[i]->name, t * 1e3);
            if (t > 0.0 && (best_t < 0.0 || t < best_t)) {
                best_t = t;
                best = i;
            }
        }
    }
    free(ref);
    free(got);
    if (best >= 0) {
        if (pdnn__tuning_store(call->device_key, kernel, shape, list[best]->name,
                               pdnn__op_flops(call) / best_t * 1e-9) != PDNN_SUCCESS)
            pdnn__debug("%s find: %s", pdnn__op_name(call->op), pdnn_last_error());
        pdnn__debug("%s find on %s: %s chosen for %s after %.2f s", pdnn__op_name(call->op), dev->name, list[best]->name,
                    shape, pdnn__now() - t_start);
    }
    return best;
}

/* AUTO's stored or (when tuning may search) measured choice: its index in
 * plans, or -1 when the fixed order should decide. */
static int measured_choice(pdnn_device *dev, const pdnn__algo *const *list, pdnn__plan *plans, int n,
                           const pdnn__op_call *call, int *searched, double *seconds)
{
    char kernel[32], shape[512], value[64];
    snprintf(kernel, sizeof kernel, "%s_algo", pdnn__op_name(call->op));
    pdnn__op_key(call, shape, sizeof shape);
    *searched = 0;
    *seconds = 0.0;
    if (pdnn__tuning_lookup_for(call->tuning, call->device_key, kernel, shape, value, sizeof value)) {
        for (int i = 0; i < n; i++)
            if (plans[i].supported && strcmp(list[i]->name, value) == 0)
                return i;
        pdnn__debug("tuning cache: ignoring %s '%s' for %s: not an algorithm that runs it in this build", kernel,
                    value, shape);
        return -1;
    }
    if (call->tuning != PDNN_TUNING_SEARCH && call->tuning != PDNN_TUNING_FORCE)
        return -1;
    /* A search runs every candidate: an update in place would be applied
     * once per candidate. */
    if (call->op == PDNN__OP_OPTIMIZER)
        return -1;
    int choices = 0;
    for (int i = 0; i < n; i++)
        choices += plans[i].supported;
    if (choices < 2) /* nothing to choose (the host: one algorithm) */
        return -1;
    const double t0 = pdnn__now();
    const int best = find_search(dev, list, plans, n, call, kernel, shape);
    *searched = 1;
    *seconds = pdnn__now() - t0;
    return best;
}

static pdnn_status run_named(pdnn_device *dev, pdnn__op_call *call, const char *want, pdnn__dispatch_result *res)
{
    char names[256];
    const pdnn__algo *a = pdnn__algo_find(dev, call->op, want);
    if (!a)
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "%s: algorithm %s is not available on %s (%s backend), which has: %s; use "
                           "PDNN_CONV_ALGO_AUTO",
                           pdnn__op_name(call->op), want, dev->name, dev->backend->name,
                           algo_list(dev, call->op, names, sizeof names));
    pdnn__plan plan;
    pdnn__plan_for(dev, a, call, &plan);
    if (!plan.supported)
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "%s: algorithm %s does not run this %s on %s (%s backend): %s; use PDNN_CONV_ALGO_AUTO",
                           pdnn__op_name(call->op), a->name, pdnn__op_name(call->op), dev->name, dev->backend->name, plan.why);
    pdnn__run_report rep;
    pdnn_status st = run_planned(dev, a, &plan, call, &rep);
    if (st == PDNN_SUCCESS)
        report(res, a, &plan, &rep);
    return st;
}

/* AUTO's fixed order takes the plans in three passes: those within the
 * call's workspace limit, then those over it, then those it passes over. */
static int auto_pass(const pdnn__op_call *call, const pdnn__plan *p)
{
    if (p->auto_skip)
        return 2;
    return call->ws_limit > 0 && p->workspace > call->ws_limit;
}

static void drop_plans(pdnn__plan *plans, pdnn__plan *local)
{
    if (plans != local)
        free(plans);
}

pdnn_status pdnn__dispatch(pdnn_device *dev, pdnn__op_call *call, const char *want, pdnn__dispatch_result *res)
{
    pdnn__call_prepare(dev, call);
    if (forced.active && forced.op == call->op)
        want = forced.name;
    const pdnn__algo *const *list = pdnn__algos(dev, call->op);
    if (!list[0])
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s: the %s backend of %s has no %s kernel", pdnn__op_name(call->op),
                           dev->backend->name, dev->name, pdnn__op_name(call->op));
    if (want && *want && strcasecmp(want, "auto") != 0)
        return run_named(dev, call, want, res);

    int n = 0;
    while (list[n] && n < MAX_PLANS)
        n++;
    /* On the stack where the list is short (every backend's today): a
     * malloc per call contended for the arena with the backend's threads. */
    pdnn__plan local[LOCAL_PLANS];
    pdnn__plan *plans = n <= LOCAL_PLANS ? local : malloc((size_t)n * sizeof *plans);
    if (!plans)
        return pdnn__host_oom(pdnn__op_name(call->op), "the plans of its algorithms", (size_t)n * sizeof *plans);
    for (int i = 0; i < n; i++)
        pdnn__plan_verdict(dev, list[i], call, &plans[i]);

    pdnn_status st = PDNN_ERR_UNSUPPORTED;
    pdnn__run_report rep;
    if (call->tuning != PDNN_TUNING_OFF) {
        int searched = 0;
        double seconds = 0.0;
        int m = measured_choice(dev, list, plans, n, call, &searched, &seconds);
        if (m >= 0 && auto_pass(call, &plans[m]) == 1)
            for (int i = 0; i < n; i++)
                if (plans[i].supported && auto_pass(call, &plans[i]) == 0) {
                    pdnn__debug("%s on %s: the measured choice %s needs more workspace than the call's limit; "
                                "using the fixed order",
                                pdnn__op_name(call->op), dev->name, list[m]->name);
                    m = -1;
                    break;
                }
        if (m >= 0) {
            st = run_planned(dev, list[m], &plans[m], call, &rep);
            if (st == PDNN_SUCCESS) {
                report(res, list[m], &plans[m], &rep);
                if (res) {
                    /* The choice is a tuning result too: report it as one. */
                    res->tuning.tunable = 1;
                    res->tuning.algo_measured = 1;
                    res->tuning.algo_searched = searched;
                    if (searched) {
                        res->tuning.searched = 1;
                        res->tuning.cached = 0;
                        res->tuning.search_seconds = seconds;
                    } else if (!res->tuning.searched) {
                        res->tuning.cached = 1;
                    }
                }
                drop_plans(plans, local);
                return st;
            }
            pdnn__debug("%s on %s: the measured choice %s does not run now (%s); using the fixed order",
                        pdnn__op_name(call->op), dev->name, list[m]->name, pdnn_last_error());
        }
    }
    /* The fixed order: lowest rank first among those within the workspace
     * limit, then those over it, then (nothing fitting) the passed-over
     * ones; the first whose workspace the allocator gives runs. */
    char why[512] = "";
    int fitted_none = 0;
    for (int pass = 0; pass < 3; pass++) {
        int done[MAX_PLANS] = {0};
        for (;;) {
            int pick = -1;
            for (int i = 0; i < n; i++)
                if (!done[i] && plans[i].supported && auto_pass(call, &plans[i]) == pass &&
                    (pick < 0 || plans[i].rank < plans[pick].rank))
                    pick = i;
            if (pick < 0)
                break;
            done[pick] = 1;
            st = run_planned(dev, list[pick], &plans[pick], call, &rep);
            if (st == PDNN_SUCCESS) {
                report(res, list[pick], &plans[pick], &rep);
                drop_plans(plans, local);
                return st;
            }
            if (st != PDNN_ERR_OUT_OF_MEMORY) {
                drop_plans(plans, local);
                return st;
            }
            fitted_none = 1;
            snprintf(why, sizeof why, "%s", pdnn_last_error());
            char b[32];
            pdnn__debug("%s on %s: %s needs %s of workspace, which does not fit (%s); trying the next algorithm",
                        pdnn__op_name(call->op), dev->name, list[pick]->name,
                        pdnn__format_bytes(plans[pick].workspace, b, sizeof b), why);
        }
    }
    if (fitted_none) {
        drop_plans(plans, local);
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY,
                           "%s on %s: no algorithm's workspace fits in the device's free memory; the last: %s",
                           pdnn__op_name(call->op), dev->name, why);
    }
    size_t used = 0;
    why[0] = '\0';
    for (int i = 0; i < n && used < sizeof why; i++) {
        pdnn__plan_for(dev, list[i], call, &plans[i]); /* worded, this time */
        int w = snprintf(why + used, sizeof why - used, "%s%s: %s", i ? "; " : "", list[i]->name, plans[i].why);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    drop_plans(plans, local);
    return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s: no algorithm of the %s backend runs this %s on %s (%s)",
                       pdnn__op_name(call->op), dev->backend->name, pdnn__op_name(call->op), dev->name, why);
}
