/* Backward convolution as forward convolutions, run by a forward GEMM
 * kernel (wg_gemm on GPU-class devices, else gemm_1x1 or implicit_gemm:
 * pdnn__cl_plan_fwd_inner) on views of the tensors, with no copy:
 *
 * data: dx is the convolution of dy with the filter turned by 180 degrees
 * and with its K and C axes swapped. With stride 1 that is one forward
 * convolution. With stride u, dx splits into u*u phases (rows ih with
 * ih % u == ph): phase ph gets only the taps r with (ph + pad - r*dil)
 * divisible by u, so each phase is a stride-1 forward convolution of dy
 * with those taps (a strided view of the turned filter) written to a
 * strided view of dx. The kernel then does the useful multiply-adds only,
 * where a gather over all taps (implicit_gemm, direct) skips u*u - 1 of
 * every u*u; a phase with no taps is zero. Pads of a phase may be
 * negative: the kernel only bounds-checks the rows it reads.
 *
 * filter: dw[k,c,r,s] = sum over n,p,q of dy[n,k,p,q] x[n,c,p*u+r*dil-pad,
 * ...] is a forward convolution whose batch is x's channels (x seen as
 * C x N x H x W), whose filter is dy (K x N x P x Q, dilated by the
 * stride) and whose stride is the dilation; its output C x K x R x S is
 * dw seen with its first two axes swapped.
 *
 * Both need groups == 1 (a grouped filter is no stride view of the swap).
 * The inner calls are CONV2D_FWD calls, so they take the inner
 * algorithm's configuration pick and tuning-cache entry for their
 * forward shapes.
 *
 * All three take float16 and bfloat16 storage (issue 43). Backward
 * data's phases are forward calls in the same dtype, which the inner
 * algorithm (gemm_1x1, implicit_gemm: pdnn__cl_plan_fwd_inner passes over
 * one without the dtype) reduces in float32 and rounds once at the store;
 * offsets and the zeroing count the dtype's elements. Backward filter
 * runs in float32 on widened copies of x and dy and rounds its float32 dw
 * once into the dtype (widened: the sum over the batch and pixels of each
 * element float32, one rounding, as the host reference's). */
#include "backends/opencl/cl_internal.h"
#include "core/half.h"

#include <stdio.h>
#include <string.h>


/* in: call as a forward call without bias or ReLU, to be reshaped. */
static pdnn__conv2d_call *fwd_of(const pdnn__op_call *call, pdnn__op_call *in)
{
    *in = *call;
    in->op = PDNN__OP_CONV2D_FWD;
    in->force_config = -1;
    pdnn__conv2d_call *f = &in->u.conv2d;
    f->bias_buf.region = NULL;
    f->bias_buf.offset = 0;
    f->relu = 0;
    return f;
}

/* One dimension of a data phase: output rows ph, ph + u, ... of dx (n of
 * them) get taps r0, r0 + t, ... (m of them, 0: none) of the filter, read
 * as a stride-1 convolution of dy with dilation dd and top pad pe. */
typedef struct phase_dim {
    int64_t n, r0, t, m, dd, pe;
} phase_dim;

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        const int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Phase ph of a dimension of extent h (dx), filter taps r, stride u,
 * dilation dil and leading pad pad. */
static phase_dim phase_of(int64_t h, int64_t r, int64_t u, int64_t dil, int64_t pad, int64_t ph)
{
    phase_dim d = {.n = ph < h ? (h - ph + u - 1) / u : 0, .t = u / gcd64(u, dil)};
    d.dd = dil / gcd64(u, dil);
    d.r0 = -1;
    for (int64_t i = 0; i < r && i < d.t && d.r0 < 0; i++)
        if (((ph + pad - i * dil) % u + u) % u == 0)
            d.r0 = i;
    if (d.r0 < 0)
        return d;
    d.m = (r - 1 - d.r0) / d.t + 1;
    /* Output row i of the phase reads dy row i + o - j*dd for tap r0 + j*t,
     * o = (ph + pad - r0*dil) / u; turned, the first tap read is the last. */
    const int64_t o = (ph + pad - d.r0 * dil) / u;
    d.pe = (d.m - 1) * d.dd - o;
    return d;
}

/* The forward call for phase (ph, pw) of a backward-data call: 1 built,
 * 0 a phase with rows but no taps (zeros), -1 a phase with no rows. */
static int data_phase(const pdnn__op_call *call, int64_t ph, int64_t pw, pdnn__op_call *in)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const phase_dim dh = phase_of(c->h, c->r, c->stride_h, c->dil_h, c->pad_top, ph);
    const phase_dim dw = phase_of(c->w, c->s, c->stride_w, c->dil_w, c->pad_left, pw);
    if (dh.n == 0 || dw.n == 0)
        return -1;
    if (dh.m == 0 || dw.m == 0)
        return 0;
    pdnn__conv2d_call *f = fwd_of(call, in);
    /* Input dy (N, K, P, Q), filter (C, K, m, m) turned, output a phase of dx. */
    f->c = c->k;
    f->h = c->p;
    f->w = c->q;
    f->k = c->c;
    f->p = dh.n;
    f->q = dw.n;
    f->r = dh.m;
    f->s = dw.m;
    f->stride_h = f->stride_w = 1;
    f->dil_h = (int)dh.dd;
    f->dil_w = (int)dw.dd;
    f->pad_top = (int)dh.pe;
    f->pad_left = (int)dw.pe;
    f->pad_bottom = (int)(dh.n - 1 + (dh.m - 1) * dh.dd - dh.pe - (c->p - 1));
    f->pad_right = (int)(dw.n - 1 + (dw.m - 1) * dw.dd - dw.pe - (c->q - 1));
    f->x_layout = c->y_layout;
    f->y_layout = c->x_layout;
    f->x_buf = c->y_buf;
    f->y_buf = c->x_buf;
    f->y_buf.offset += (size_t)(ph * c->xs[2] + pw * c->xs[3]) * pdnn__dtype_size(call->dtype);
    memcpy(f->xs, c->ys, sizeof f->xs);
    f->ys[0] = c->xs[0];
    f->ys[1] = c->xs[1];
    f->ys[2] = c->xs[2] * c->stride_h;
    f->ys[3] = c->xs[3] * c->stride_w;
    f->ws[0] = c->ws[1];
    f->ws[1] = c->ws[0];
    f->ws[2] = -dh.t * c->ws[2];
    f->ws[3] = -dw.t * c->ws[3];
    f->w_buf.offset =
        c->w_buf.offset +
        (size_t)((dh.r0 + (dh.m - 1) * dh.t) * c->ws[2] + (dw.r0 + (dw.m - 1) * dw.t) * c->ws[3]) * pdnn__dtype_size(call->dtype);
    return 1;
}

/* Whether dx (call's x) covers exactly its n*c*h*w floats from its offset,
 * so that one fill zeroes the phases without taps. */
static int dx_dense(const pdnn__conv2d_call *c)
{
    const int64_t dims[4] = {c->n, c->c, c->h, c->w};
    int64_t span = 1, count = 1;
    for (int i = 0; i < 4; i++) {
        if (dims[i] > 1 && c->xs[i] <= 0)
            return 0;
        if (dims[i] > 1)
            span += (dims[i] - 1) * c->xs[i];
        count *= dims[i];
    }
    return span == count;
}

/* The forward call that computes a backward-filter call; 0 with why if none. */
static int inner_call(const pdnn__op_call *call, pdnn__op_call *in, char *why, size_t len)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    pdnn__conv2d_call *f = fwd_of(call, in);
    if (c->groups != 1) {
        snprintf(why, len, "forward_gemm runs ungrouped convolutions; this one has %lld groups",
                 (long long)c->groups);
        return 0;
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

/* Column s of a backward-filter call as a forward call: dw[c,k,r,s] for
 * every c, k, r = sum over n, p and q of dy[n,k,p,q] x[n,c,p*u+r*dil-pad,
 * q*uw+s*dilw-padl]. The batch is x's channels, the output image R x 1,
 * the taps dy's rows p and its images n (x seen as H x N), and the
 * reduced channels are the columns q that read inside x for this s, so
 * the kernel's inner loop runs along a row of x and of dy (Q long, unit
 * stride in NCHW) rather than over the few images of a batch. */
static void filter_column(const pdnn__op_call *call, int64_t s, pdnn__op_call *in)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    pdnn__conv2d_call *f = fwd_of(call, in);
    /* The columns q in [q0, q1) read x column q*uw + s*dilw - padl in [0, W). */
    const int64_t uw = c->stride_w, off = s * c->dil_w - c->pad_left;
    int64_t q0 = off >= 0 ? 0 : (-off + uw - 1) / uw;
    int64_t q1 = c->w - 1 - off >= 0 ? (c->w - 1 - off) / uw + 1 : 0;
    if (q1 > c->q)
        q1 = c->q;
    if (q0 > q1)
        q0 = q1;
    f->n = c->c;
    f->c = q1 - q0;
    f->h = c->h;
    f->w = c->n;
    f->k = c->k;
    f->r = c->p;
    f->s = c->n;
    f->p = c->r;
    f->q = 1;
    f->stride_h = c->dil_h;
    f->stride_w = 1;
    f->dil_h = c->stride_h;
    f->dil_w = 1;
    f->pad_left = f->pad_right = 0;
    const int64_t pb = (int64_t)c->dil_h * (c->r - 1) + (int64_t)c->stride_h * (c->p - 1) + 1 - c->h - c->pad_top;
    f->pad_bottom = pb > 0 ? (int)pb : 0;
    f->x_layout = f->y_layout = PDNN_NCHW; /* views: the strides say where */
    f->w_layout = PDNN_OIHW;
    f->x_buf = c->x_buf;
    if (f->c > 0)
        f->x_buf.offset += (size_t)((q0 * uw + off) * c->xs[3]) * pdnn__dtype_size(call->dtype);
    f->xs[0] = c->xs[1];
    f->xs[1] = uw * c->xs[3];
    f->xs[2] = c->xs[2];
    f->xs[3] = c->xs[0];
    f->w_buf = c->y_buf;
    f->w_buf.offset += (size_t)(q0 * c->ys[3]) * pdnn__dtype_size(call->dtype);
    f->ws[0] = c->ys[1];
    f->ws[1] = c->ys[3];
    f->ws[2] = c->ys[2];
    f->ws[3] = c->ys[0];
    f->y_buf = c->w_buf;
    f->y_buf.offset += (size_t)(s * c->ws[3]) * pdnn__dtype_size(call->dtype);
    f->ys[0] = c->ws[1];
    f->ys[1] = c->ws[0];
    f->ys[2] = c->ws[2];
    f->ys[3] = c->ws[3];
}

/* Plans the forward call in into ip and returns the algorithm that runs
 * it: wg_gemm on GPU-class devices (where AUTO would take it), else
 * gemm_1x1 where it takes the shape (a phase or layer with a 1x1 filter
 * and no padding), as the forward's order has it, else implicit_gemm. */
static const pdnn__algo *plan_inner(void *dev, const pdnn__op_call *in, pdnn__plan *ip)
{
    return pdnn__cl_plan_fwd_inner(dev, in, ip, 1);
}

/* A call is run as parts, each a forward call: backward data's phases,
 * backward filter's columns (rows != 0: forward_gemm_rows) or its one
 * call (forward_gemm). */
static int64_t n_parts(const pdnn__op_call *call, int rows)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    if (call->op == PDNN__OP_CONV2D_BWD_DATA)
        return (int64_t)c->stride_h * c->stride_w;
    return rows ? c->s : 1;
}

/* Part i as a forward call: 1 built, 0 a part with no taps (zeros), -1 an
 * empty part. */
static int build_part(const pdnn__op_call *call, int64_t i, pdnn__op_call *in, int rows)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    if (call->op == PDNN__OP_CONV2D_BWD_DATA)
        return data_phase(call, i / c->stride_w, i % c->stride_w, in);
    if (rows) {
        filter_column(call, i, in);
        return 1;
    }
    char why[PDNN__WHY_LEN];
    return inner_call(call, in, why, sizeof why) ? 1 : -1;
}

/* Plans every part of call into plan (workspace: the largest; searched
 * if any is); *zeros set when a part has no taps. */
static void parts_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan, int *zeros, int rows)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    int parts = 0;
    *zeros = 0;
    plan->cached = 1;
    if (c->groups != 1) {
        pdnn__plan_refuse(plan, "forward_gemm runs ungrouped convolutions; this one has %lld groups",
                          (long long)c->groups);
        return;
    }
    for (int64_t i = 0; i < n_parts(call, rows); i++) {
        pdnn__op_call in;
        const int r = build_part(call, i, &in, rows);
        if (r == 0)
            *zeros = 1;
        if (r != 1)
            continue;
        pdnn__plan ip;
        plan_inner(dev, &in, &ip);
        if (!ip.supported) {
            pdnn__plan_refuse(plan, "forward_gemm: %s", ip.why);
            return;
        }
        if (ip.workspace > plan->workspace)
            plan->workspace = ip.workspace;
        plan->search |= ip.search;
        plan->cached &= ip.cached;
        if (parts++ == 0)
            snprintf(plan->config_name, sizeof plan->config_name, "%s", ip.config_name);
    }
    if (*zeros && !dx_dense(c)) {
        pdnn__plan_refuse(plan, "forward_gemm zeroes the phases of dx that no tap reaches, which needs a dense dx; "
                                "this one is a strided view");
        return;
    }
    if (parts > 1) {
        const size_t l = strlen(plan->config_name);
        snprintf(plan->config_name + l, sizeof plan->config_name - l, ", %d %s", parts,
                 call->op == PDNN__OP_CONV2D_BWD_DATA ? "phases" : "columns");
    }
}

/* Backward filter in float16 or bfloat16 runs on float32 copies: x and
 * dy widened once into the workspace, the parts run in float32 into a
 * float32 dw there, which one cast rounds into dw (each element a float32
 * sum rounded once, the host reference's contract). Parts in the dtype
 * each widened x again (forward_gemm_rows: once per filter column):
 * 0.81-0.88x float32's GFLOP/s on ResNet's 3x3 (NCHW, batch 8, PoCL). */
static int widened(const pdnn__op_call *call)
{
    return call->op == PDNN__OP_CONV2D_BWD_FILTER && pdnn__dtype_size(call->dtype) == 2;
}

/* Floats of n elements in whole 64-byte lines. */
static int64_t lines(int64_t n) { return (n + 15) / 16 * 16; }

/* call as a float32 call on copies at ws: x and dy dense in their own
 * layouts, dw with dw's strides (dense); *bytes their size. */
static void f32_shadow(const pdnn__op_call *call, pdnn__buf ws, pdnn__op_call *sh, size_t *bytes)
{
    *sh = *call;
    sh->dtype = PDNN_FLOAT32;
    pdnn__conv2d_call *f = &sh->u.conv2d;
    const int64_t xd[4] = {f->n, f->c, f->h, f->w}, yd[4] = {f->n, f->k, f->p, f->q};
    pdnn__layout_strides(f->xs[1] == 1 ? PDNN_NHWC : PDNN_NCHW, xd, f->xs);
    pdnn__layout_strides(f->ys[1] == 1 ? PDNN_NHWC : PDNN_NCHW, yd, f->ys);
    const int64_t nx = lines(f->n * f->c * f->h * f->w), ny = lines(f->n * f->k * f->p * f->q);
    f->x_buf = (pdnn__buf){ws.region, ws.offset};
    f->y_buf = (pdnn__buf){ws.region, ws.offset + (size_t)nx * sizeof(float)};
    f->w_buf = (pdnn__buf){ws.region, ws.offset + (size_t)(nx + ny) * sizeof(float)};
    *bytes = (size_t)(nx + ny + lines(f->k * f->c * f->r * f->s)) * sizeof(float);
}

/* Plans call (rows: forward_gemm_rows), on float32 copies where widened. */
static void any_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan, int rows)
{
    int zeros;
    if (!widened(call) || call->u.conv2d.groups != 1) { /* a grouped call: parts_plan refuses it, saying so */
        parts_plan(dev, call, plan, &zeros, rows);
        return;
    }
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t wd[4] = {c->k, c->c, c->r, c->s};
    if (!pdnn__cl_dense(wd, c->ws)) {
        pdnn__plan_refuse(plan, "forward_gemm rounds a float32 dw into a %s one in one pass, which needs a dense "
                                "dw; this one is a strided view",
                          call->dtype == PDNN_FLOAT16 ? "float16" : "bfloat16");
        return;
    }
    pdnn__op_call sh;
    size_t bytes;
    f32_shadow(call, (pdnn__buf){NULL, 0}, &sh, &bytes);
    parts_plan(dev, &sh, plan, &zeros, rows);
    plan->workspace += bytes;
}

static void fwd_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan) { any_plan(dev, call, plan, 0); }

/* forward_gemm_rows goes before forward_gemm where its inner loop is long
 * and dy is packed few times: columns of 28 or more, filters of at most 3
 * columns. Measured on ResNet-50's layers (batch 8, NCHW, PoCL, AVX2): at
 * 56 and 28 columns 1.1-3.5x forward_gemm; at 14 mixed (0.6-1.5x); at 7
 * 0.5-0.7x; conv1 (7 columns of 112, so dy packed 7 times) 0.3x. */
static void rows_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    any_plan(dev, call, plan, 1);
    const pdnn__conv2d_call *c = &call->u.conv2d;
    plan->rank = c->q >= 28 && c->s <= 3 ? 15 : 25;
}

/* Zeroes dx where a phase has no taps, then runs each part; ws covers the
 * largest. */
static pdnn_status parts_run(void *dev, const pdnn__op_call *call, pdnn__buf ws, pdnn__run_report *rep, int rows)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    pdnn__plan p;
    memset(&p, 0, sizeof p);
    int zeros;
    parts_plan(dev, call, &p, &zeros, rows);
    if (p.why[0])
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "OpenCL: %s", p.why);
    if (zeros) {
        cl_dev *d = dev;
        const cl_uint zero = 0; /* 0.0 in every dtype; the pattern's size the dtype's */
        const size_t es = pdnn__dtype_size(call->dtype);
        pthread_mutex_lock(&d->lock);
        const cl_int err = clEnqueueFillBuffer(d->queue, (cl_mem)c->x_buf.region, &zero, es, c->x_buf.offset,
                                               (size_t)(c->n * c->c * c->h * c->w) * es, 0, NULL, NULL);
        pthread_mutex_unlock(&d->lock);
        if (err != CL_SUCCESS)
            return pdnn__cl_fail("clEnqueueFillBuffer(forward_gemm dx)", err);
    }
    pdnn__run_report all;
    memset(&all, 0, sizeof all);
    int first = 1;
    for (int64_t i = 0; i < n_parts(call, rows); i++) {
        pdnn__op_call in;
        if (build_part(call, i, &in, rows) != 1)
            continue;
        pdnn__plan ip;
        const pdnn__algo *a = plan_inner(dev, &in, &ip);
        if (!ip.supported)
            return pdnn__error(PDNN_ERR_UNSUPPORTED, "OpenCL: forward_gemm: %s", ip.why);
        pdnn__run_report r;
        memset(&r, 0, sizeof r);
        const pdnn_status st = a->run(dev, &in, &ip, ws, &r);
        if (st != PDNN_SUCCESS)
            return st;
        if (first)
            all = r;
        else
            all.search_seconds += r.search_seconds;
        all.searched |= r.searched;
        first = 0;
    }
    if (rep)
        *rep = all;
    return PDNN_SUCCESS;
}

extern const pdnn__algo pdnn__cl_algo_cast_direct;

/* Runs call, on float32 copies where widened (any_plan checked dw). */
static pdnn_status any_run(void *dev, const pdnn__op_call *call, pdnn__buf ws, pdnn__run_report *rep, int rows)
{
    if (!widened(call))
        return parts_run(dev, call, ws, rep, rows);
    const pdnn__conv2d_call *c = &call->u.conv2d;
    pdnn__op_call sh;
    size_t bytes;
    f32_shadow(call, ws, &sh, &bytes);
    const pdnn__conv2d_call *f = &sh.u.conv2d;
    const int64_t xd[4] = {c->n, c->c, c->h, c->w}, yd[4] = {c->n, c->k, c->p, c->q};
    cl_dev *d = dev;
    pthread_mutex_lock(&d->lock);
    pdnn_status st = pdnn__cl_widen_locked(d, call->dtype, c->x_buf, xd, c->xs, f->x_buf, f->xs);
    if (st == PDNN_SUCCESS)
        st = pdnn__cl_widen_locked(d, call->dtype, c->y_buf, yd, c->ys, f->y_buf, f->ys);
    pthread_mutex_unlock(&d->lock);
    if (st == PDNN_SUCCESS)
        st = parts_run(dev, &sh, (pdnn__buf){ws.region, ws.offset + bytes}, rep, rows);
    if (st != PDNN_SUCCESS)
        return st;
    pdnn__op_call cc;
    memset(&cc, 0, sizeof cc);
    cc.op = PDNN__OP_CAST;
    cc.dtype = PDNN_FLOAT32;
    cc.u.cast = (pdnn__cast_call){.n = c->k * c->c * c->r * c->s, .from = PDNN_FLOAT32, .to = call->dtype,
                                  .x_buf = f->w_buf, .y_buf = c->w_buf};
    return pdnn__cl_algo_cast_direct.run(dev, &cc, NULL, ws, NULL);
}

static pdnn_status fwd_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                           pdnn__run_report *rep)
{
    (void)plan;
    return any_run(dev, call, ws, rep, 0);
}

static pdnn_status rows_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                            pdnn__run_report *rep)
{
    (void)plan;
    return any_run(dev, call, ws, rep, 1);
}

const pdnn__algo pdnn__cl_algo_bwd_data_fwd = {
    .op = PDNN__OP_CONV2D_BWD_DATA,
    .name = "forward_gemm",
    .rank = 20,
    .plan = fwd_plan,
    .run = fwd_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT, /* the inner forward algorithm's REAL_T storage */
};

const pdnn__algo pdnn__cl_algo_bwd_filter_fwd = {
    .op = PDNN__OP_CONV2D_BWD_FILTER,
    .name = "forward_gemm",
    .rank = 20,
    .plan = fwd_plan,
    .run = fwd_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT, /* the inner forward algorithm's REAL_T storage */
};

const pdnn__algo pdnn__cl_algo_bwd_filter_rows = {
    .op = PDNN__OP_CONV2D_BWD_FILTER,
    .name = "forward_gemm_rows",
    .rank = 25,
    .plan = rows_plan,
    .run = rows_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT, /* the inner forward algorithm's REAL_T storage */
};
