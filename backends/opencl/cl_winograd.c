/* Winograd F(4x4, 3x3) convolution on OpenCL (kernels_cl/conv2d_winograd.cl):
 * which calls it claims, the workspace it needs and the four launches.
 *
 * F(4x4, 3x3) rather than F(2x2, 3x3): it saves 4x the multiplies of a
 * direct convolution instead of 2.25x, and its float32 rounding (a few
 * ulps of the transformed magnitudes, see tests/test_conv.c) stays inside
 * the parity suite's tolerance for inputs of unit size. */
#include "backends/opencl/cl_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

extern const pdnn__algo pdnn__cl_algo_winograd;

/* The GEMM's register tile (conv2d_winograd.cl: TT tiles x KB float16
 * channel blocks per work-item, TT x KB accumulators): the device's
 * (cl_device_table.c). */
static void wino_tile(const cl_dev *d, int *tt, int *kb)
{
    *tt = d->cls.t.wino_tt;
    *kb = d->cls.t.wino_kb;
}
/* conv2d_winograd.cl's PLANE_PAD: floats between transform planes. */
#define WINO_PLANE_PAD 16
/* Chunks are whole GEMM work-groups of 4 tile blocks; a chunk of fewer
 * tiles (a small batch) is padded to the register tile only. */
#define WINO_TGROUP 4
/* Above this, V and M (per tile: 36 x (C + Kp) floats) are made for a
 * chunk of the batch's tiles at a time. 8 MiB: 64 MiB chunks made
 * GoogLeNet's b8 session peak 1.47x its largest live set. They ran no
 * faster on single layers (c64 56x56 k192 b8, c256 28x28 b8, c256 56x56
 * b1 on PoCL, alternated), but ResNet-18 b8 NHWC ran about 10% faster
 * with them on another machine (bench/results-onnx-models.md). */
#define WINO_CHUNK_BYTES ((int64_t)8 << 20)

/* Test hook: a smaller chunk limit, so that small tests cover chunking
 * (0: WINO_CHUNK_BYTES). */
static _Atomic int64_t chunk_bytes_override;

void pdnn__opencl_winograd_chunk_bytes(int64_t bytes) { chunk_bytes_override = bytes > 0 ? bytes : 0; }

enum { WK_FILTER, WK_INPUT, WK_GEMM, WK_OUTPUT, WK_COUNT };
static const char *const wino_names[WK_COUNT] = {"wino_filter", "wino_input", "wino_gemm", "wino_output"};

/* What one call needs: tiles per image row/column, padded channels, the
 * chunk of tiles made at a time and its padded size, and the workspace
 * layout U | V | M in floats. */
typedef struct wino_plan {
    int64_t tt, kb; /* the GEMM's register tile (wino_tile) */
    int64_t tr, tc, tiles, kp, chunk, tp;
    int64_t u_floats, v_floats, m_floats;
} wino_plan;

/* The build options the register tile of pl needs. */
static void wino_opts(char *buf, size_t len, const wino_plan *pl)
{
    snprintf(buf, len, "-DTT=%d -DKB=%d -DPLANE_PAD=%d", (int)pl->tt, (int)pl->kb, WINO_PLANE_PAD);
}

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/* float16 and bfloat16 storage (issue 43): the transforms and the GEMM
 * are float32's; the filter is widened into the workspace before its
 * transform, and so is x where it is not NHWC (wino_x_wide), whose
 * per-channel gathers would otherwise each convert a scalar; NHWC x is
 * read in place, 16 channels a vector. Both copies keep their tensor's
 * strides, after U | V | M. */
static int wino_reduced(const pdnn__op_call *call)
{
    return call->dtype == PDNN_FLOAT16 || call->dtype == PDNN_BFLOAT16;
}
static int wino_x_wide(const pdnn__op_call *call) { return wino_reduced(call) && call->u.conv2d.xs[1] != 1; }

/* Elements a view of dims with strides s spans (its float32 copy's floats). */
static int64_t span_of(const int64_t dims[4], const int64_t s[4])
{
    int64_t last = 0;
    for (int a = 0; a < 4; a++) {
        if (dims[a] == 0)
            return 0;
        last += (dims[a] - 1) * s[a];
    }
    return last + 1;
}
static int64_t wino_xw_floats(const pdnn__op_call *call)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t d[4] = {c->n, c->c, c->h, c->w};
    return wino_x_wide(call) ? round_up(span_of(d, c->xs), 16) : 0;
}
static int64_t wino_ww_floats(const pdnn__op_call *call)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t d[4] = {c->k, c->c / c->groups, c->r, c->s};
    return wino_reduced(call) ? round_up(span_of(d, c->ws), 16) : 0;
}

/* Whether c is a convolution this algorithm runs on d, and with what
 * plan; otherwise *why says what rules it out (the shape: *why NULL, see
 * wino_plan). */
static int wino_plan_of(const cl_dev *d, const pdnn__conv2d_call *c, wino_plan *pl, const char **why)
{
    *why = NULL;
    int tt, kb;
    wino_tile(d, &tt, &kb);
    pl->tt = tt;
    pl->kb = kb;
    if (c->r != 3 || c->s != 3 || c->stride_h != 1 || c->stride_w != 1 || c->dil_h != 1 || c->dil_w != 1 ||
        c->groups != 1)
        return 0;
    /* The kernels index channels, tiles within a chunk and image rows and
     * columns with int; keep well inside. */
    if (c->c > INT32_MAX / 64 || c->k > INT32_MAX / 64 || c->h > INT32_MAX / 8 || c->w > INT32_MAX / 8) {
        *why = "the tensor is too large for its int indices";
        return 0;
    }
    pl->tr = (c->p + 3) / 4;
    pl->tc = (c->q + 3) / 4;
    pl->kp = round_up(c->k, 16 * pl->kb);
    if (pl->tr == 0 || pl->tc == 0) {
        *why = "the output is empty";
        return 0;
    }
    if (pl->tr > INT32_MAX / 8 / pl->tc || c->n > INT64_MAX / 8 / (pl->tr * pl->tc)) {
        *why = "the tensor is too large for its int indices";
        return 0;
    }
    pl->tiles = c->n * pl->tr * pl->tc;
    const int64_t per_tile = 36 * (c->c + pl->kp) * (int64_t)sizeof(float);
    const int64_t limit = chunk_bytes_override > 0 ? chunk_bytes_override : WINO_CHUNK_BYTES;
    const int64_t gran = pl->tt * WINO_TGROUP;
    int64_t chunk = limit / per_tile / gran * gran;
    if (chunk < gran) /* huge C + K: one work-group's tiles at a time */
        chunk = gran;
    pl->chunk = pl->tiles < chunk ? pl->tiles : chunk;
    pl->tp = round_up(pl->chunk, pl->tt);
    pl->u_floats = 36 * (c->c * pl->kp + WINO_PLANE_PAD);
    pl->v_floats = 36 * (c->c * pl->tp + WINO_PLANE_PAD);
    pl->m_floats = 36 * (pl->tp * pl->kp + WINO_PLANE_PAD);
    if (pl->tp > INT32_MAX / 64 || pl->u_floats + pl->v_floats + pl->m_floats > INT64_MAX / 8) {
        *why = "the tensor is too large for its int indices";
        return 0;
    }
    return 1;
}

/* 2-D launch: dimension 0 in work-groups of up to 16 (fewer when it is
 * short), dimension 1 filling the group up to 64 work-items, so that
 * few channel blocks (C = 64: 4) do not make a work-group each; the
 * kernels bound-check. */
static pdnn_status launch2(cl_dev *d, cl_kernel k, const char *name, int64_t g0, int64_t g1)
{
    const size_t cap = pdnn__cl_wg_cap(d, k, 64);
    size_t l0 = cap < 16 ? cap : 16;
    while (l0 > 1 && (int64_t)(l0 / 2) >= g0)
        l0 /= 2;
    size_t l1 = cap / l0;
    while (l1 > 1 && (int64_t)(l1 / 2) >= g1)
        l1 /= 2;
    size_t local[2] = {l0, l1};
    size_t global[2] = {((size_t)g0 + l0 - 1) / l0 * l0, ((size_t)g1 + l1 - 1) / l1 * l1};
    cl_int err = clEnqueueNDRangeKernel(d->queue, k, 2, NULL, global, local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "clEnqueueNDRangeKernel(%s)", name);
        return pdnn__cl_fail(call, err);
    }
    return PDNN_SUCCESS;
}

static pdnn_status set_fail(const char *name, cl_int err)
{
    char call[96];
    snprintf(call, sizeof call, "clSetKernelArg(%s)", name);
    return pdnn__cl_fail(call, err);
}

/* U = G g G^T for every (c, k), into ub (the kept copy of a frozen
 * filter, or the workspace's start). */
static pdnn_status wino_filter(cl_kernel k, cl_dev *d, const pdnn__conv2d_call *c, const wino_plan *pl,
                               pdnn__buf ub, pdnn__buf wb)
{
    cl_mem w = wb.region, ws = ub.region;
    cl_long wo = elem_off(wb), uo = elem_off(ub);
    cl_long4 wst = strides4(c->ws);
    cl_int4 dims = int4_of((int)c->c, (int)c->k, (int)pl->kp, 0);
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, w);
    SET_ARG(k, 1, wo);
    SET_ARG(k, 2, wst);
    SET_ARG(k, 3, ws);
    SET_ARG(k, 4, uo);
    SET_ARG(k, 5, dims);
    if (err != CL_SUCCESS)
        return set_fail(wino_names[WK_FILTER], err);
    /* One input channel and 16 output channels per work-item. */
    return launch2(d, k, wino_names[WK_FILTER], c->c, pl->kp / 16);
}

/* Input transform, GEMM and output transform for the chunk of n_t tiles
 * starting at tile t0; U in ub, V and M from vb on. */
static pdnn_status wino_chunk(cl_kernel const kern[WK_COUNT], cl_dev *d, const pdnn__op_call *call,
                              const wino_plan *pl, pdnn__buf ub, pdnn__buf vb, pdnn__buf xb, int64_t t0, int64_t n_t)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const pdnn_dtype t = call->dtype;
    cl_mem ws = vb.region, us = ub.region;
    const cl_long uo = elem_off(ub), vo = elem_off(vb), mo = vo + pl->v_floats;
    const cl_long first = t0;
    cl_int err = CL_SUCCESS;

    cl_kernel k = kern[WK_INPUT];
    cl_mem x = xb.region;
    cl_long xo = wino_x_wide(call) ? elem_off(xb) : pdnn__cl_real_off(xb, t); /* the float32 copy, or x */
    cl_long4 xs = strides4(c->xs);
    cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
    cl_int4 tiles_in = int4_of((int)pl->tr, (int)pl->tc, c->pad_top, c->pad_left);
    cl_int4 chunk_in = int4_of((int)n_t, (int)pl->tp, 0, 0);
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, xs);
    SET_ARG(k, 3, ws);
    SET_ARG(k, 4, vo);
    SET_ARG(k, 5, in_dims);
    SET_ARG(k, 6, tiles_in);
    SET_ARG(k, 7, first);
    SET_ARG(k, 8, chunk_in);
    if (err != CL_SUCCESS)
        return set_fail(wino_names[WK_INPUT], err);
    /* 16 channels per work-item, the channel blocks of a tile side by side. */
    pdnn_status st = launch2(d, k, wino_names[WK_INPUT], (c->c + 15) / 16, pl->tp);
    if (st != PDNN_SUCCESS)
        return st;

    k = kern[WK_GEMM];
    cl_int4 gdims = int4_of((int)c->c, (int)pl->kp, (int)pl->tp, 0);
    SET_ARG(k, 0, us);
    SET_ARG(k, 1, uo);
    SET_ARG(k, 2, ws);
    SET_ARG(k, 3, vo);
    SET_ARG(k, 4, ws);
    SET_ARG(k, 5, mo);
    SET_ARG(k, 6, gdims);
    if (err != CL_SUCCESS)
        return set_fail(wino_names[WK_GEMM], err);
    /* As conv2d_tiled: each work-item fills the SIMD width itself, so a
     * work-group is one channel block by 4 tile blocks. */
    size_t local[3] = {1, WINO_TGROUP, 1};
    size_t global[3] = {(size_t)(pl->kp / (16 * pl->kb)), (size_t)round_up(pl->tp / pl->tt, WINO_TGROUP), 36};
    err = clEnqueueNDRangeKernel(d->queue, k, 3, NULL, global, local, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clEnqueueNDRangeKernel(wino_gemm)", err);

    k = kern[WK_OUTPUT];
    cl_mem y = c->y_buf.region;
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : y; /* not read without a bias */
    cl_mem z = c->z_buf.region ? (cl_mem)c->z_buf.region : y;       /* nor z without a residual */
    cl_long yo = pdnn__cl_real_off(c->y_buf, t), bo = c->bias_buf.region ? pdnn__cl_real_off(c->bias_buf, t) : 0;
    cl_long zo = c->z_buf.region ? pdnn__cl_real_off(c->z_buf, t) : 0;
    cl_long4 ys = strides4(c->ys);
    cl_int4 out_dims = int4_of((int)c->k, (int)c->p, (int)c->q, (int)pl->kp);
    cl_int4 tiles_out = int4_of((int)pl->tr, (int)pl->tc, c->bias_buf.region != NULL, pdnn__cl_relu_word(c));
    cl_int4 chunk_out = int4_of((int)n_t, (int)pl->tp, 0, c->z_buf.region != NULL);
    SET_ARG(k, 0, ws);
    SET_ARG(k, 1, mo);
    SET_ARG(k, 2, b);
    SET_ARG(k, 3, bo);
    SET_ARG(k, 4, y);
    SET_ARG(k, 5, yo);
    SET_ARG(k, 6, ys);
    SET_ARG(k, 7, z);
    SET_ARG(k, 8, zo);
    SET_ARG(k, 9, out_dims);
    SET_ARG(k, 10, tiles_out);
    SET_ARG(k, 11, first);
    SET_ARG(k, 12, chunk_out);
    if (err != CL_SUCCESS)
        return set_fail(wino_names[WK_OUTPUT], err);
    return launch2(d, k, wino_names[WK_OUTPUT], (c->k + 15) / 16, n_t);
}

static void wino_plan_cb(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    wino_plan pl;
    const char *why = NULL;
    _Static_assert(sizeof pl <= sizeof plan->state, "wino_plan fits pdnn__plan.state");
    if (!wino_plan_of(dev, c, &pl, &why)) {
        /* The first condition c breaks, and what c has instead. */
        if (why)
            pdnn__plan_refuse(plan, "winograd (F(4x4,3x3)): %s", why);
        else if (c->r != 3 || c->s != 3)
            pdnn__plan_refuse(plan, "winograd (F(4x4,3x3)) runs 3x3 filters only; this one is %lldx%lld",
                              (long long)c->r, (long long)c->s);
        else if (c->stride_h != 1 || c->stride_w != 1)
            pdnn__plan_refuse(plan, "winograd (F(4x4,3x3)) runs stride 1 only; this one has stride %d,%d",
                              c->stride_h, c->stride_w);
        else if (c->dil_h != 1 || c->dil_w != 1)
            pdnn__plan_refuse(plan, "winograd (F(4x4,3x3)) runs dilation 1 only; this one has dilation %d,%d",
                              c->dil_h, c->dil_w);
        else
            pdnn__plan_refuse(plan,
                              "winograd (F(4x4,3x3)) runs ungrouped convolutions (groups 1) only; this one has "
                              "%lld groups",
                              (long long)c->groups);
        return;
    }
    const uint64_t bytes =
        (uint64_t)(pl.u_floats + pl.v_floats + pl.m_floats + wino_xw_floats(call) + wino_ww_floats(call)) *
        sizeof(float);
    if (bytes > SIZE_MAX / 2) {
        pdnn__plan_refuse(plan, "winograd (F(4x4,3x3)): its workspace is larger than this machine addresses");
        return;
    }
    plan->supported = 1;
    plan->workspace = (size_t)bytes;
    /* A frozen filter keeps its transform U across calls (src/ops/run.c):
     * 36/9 of the filter, written once instead of once per call. */
    if (c->w_const) {
        plan->wpack = (size_t)pl.u_floats * sizeof(float);
        plan->workspace -= plan->wpack;
    }
    memcpy(plan->state, &pl, sizeof pl);
    /* Only where it measured faster than the alternatives (ResNet-50's
     * channel counts, at least 32 tiles in the batch): winograd was
     * 1.5-3x tiled on the 3x3 stride-1 layers, except where there are
     * few 4x4 output tiles (7x7 and 14x14 images at batch 1), where
     * transforming the filter (36/9 of its size) costs more than it saves
     * (bench/results-conv.md). */
    const int64_t tiles = c->n * pl.tr * pl.tc;
    /* Before implicit_gemm from the device's wino_first_min_tiles where
     * C x K is at most its wino_first_max_ck (cl_device_table.c: on CPUs
     * where the transformed filter is small, on GPUs always). */
    const pdnn__cl_thresholds *th = &((const cl_dev *)dev)->cls.t;
    if (tiles >= th->wino_first_min_tiles && c->c * c->k <= th->wino_first_max_ck)
        plan->rank = 25;
    if (c->c < 64 || c->k < 64 || tiles < 32)
        pdnn__plan_skip(plan,
                        "AUTO runs winograd with C and K >= 64 and at least 32 4x4 output tiles only; this one has "
                        "C %lld, K %lld, %lld tiles",
                        (long long)c->c, (long long)c->k, (long long)tiles);
}

static pdnn_status wino_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                            pdnn__run_report *rep)
{
    (void)rep;
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    wino_plan pl;
    memcpy(&pl, plan->state, sizeof pl);
    char opts[128];
    wino_opts(opts, sizeof opts, &pl);
    const char *real = pdnn__cl_real_opts(call->dtype);
    if (real) /* -DPDNN_REAL=.., and where x is widened first, -DWINO_XF */
        snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " %s%s", real,
                 wino_x_wide(call) ? " -DWINO_XF=1" : "");
    cl_kernel kern[WK_COUNT] = {NULL};
    pthread_mutex_lock(&d->lock);
    pdnn_status st = PDNN_SUCCESS;
    for (int i = 0; st == PDNN_SUCCESS && i < WK_COUNT; i++)
        st = pdnn__cl_kernel(d, "conv2d_winograd.cl", opts, wino_names[i], &kern[i]);
    /* U: the frozen filter's kept copy (transformed by its first call) or
     * the workspace's start; V and M follow in the workspace. */
    const int kept = c->wpack.region != NULL;
    const pdnn__buf ub = kept ? c->wpack : ws;
    const pdnn__buf vb = kept ? ws : (pdnn__buf){ws.region, ws.offset + (size_t)pl.u_floats * sizeof(float)};
    /* The reduced dtypes' float32 copies after V and M: x's, then w's. */
    const pdnn__buf xw = {ws.region, vb.offset + (size_t)(pl.v_floats + pl.m_floats) * sizeof(float)};
    const pdnn__buf ww = {ws.region, xw.offset + (size_t)wino_xw_floats(call) * sizeof(float)};
    pdnn__buf wb = c->w_buf, xb = c->x_buf;
    if (st == PDNN_SUCCESS && pl.tiles > 0 && (!kept || c->wpack_fill)) {
        if (wino_reduced(call)) {
            const int64_t wd[4] = {c->k, c->c / c->groups, c->r, c->s};
            st = pdnn__cl_widen_locked(d, call->dtype, c->w_buf, wd, c->ws, ww, c->ws);
            wb = ww;
        }
        if (st == PDNN_SUCCESS)
            st = wino_filter(kern[WK_FILTER], d, c, &pl, ub, wb);
    }
    if (st == PDNN_SUCCESS && pl.tiles > 0 && wino_x_wide(call)) {
        const int64_t xd[4] = {c->n, c->c, c->h, c->w};
        st = pdnn__cl_widen_locked(d, call->dtype, c->x_buf, xd, c->xs, xw, c->xs);
        xb = xw;
    }
    for (int64_t t0 = 0; st == PDNN_SUCCESS && t0 < pl.tiles; t0 += pl.chunk) {
        const int64_t n_t = pl.tiles - t0 < pl.chunk ? pl.tiles - t0 : pl.chunk;
        st = wino_chunk(kern, d, call, &pl, ub, vb, xb, t0, n_t);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_winograd = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "winograd",
    .id = PDNN_CONV_ALGO_WINOGRAD,
    /* After implicit_gemm (30) unless the plan moves it ahead (see
     * wino_plan_cb); before tiled, which it beat 1.5-3x where its plan
     * does not skip. */
    .rank = 40,
    .plan = wino_plan_cb,
    .run = wino_run,
    .residual = 1, /* z added in the output transform */
    .relu_cap = 1, /* and the relu's cap applied there */
    /* float16, bfloat16: float32's bound before the dtype's rounding. */
    .tol = {.of = {[PDNN_FLOAT32] = PDNN__TOL_WINOGRAD,
                   [PDNN_FLOAT16] = PDNN__TOL_F16 + PDNN__TOL_WINOGRAD,
                   [PDNN_BFLOAT16] = PDNN__TOL_BF16 + PDNN__TOL_WINOGRAD}},
    .dtypes = PDNN__DTYPES_FLOAT, /* reduced in float32 (wino_reduced) */
};
