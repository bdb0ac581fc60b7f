/* Convolution forward through cuDNN: the per-device plan cache of cuDNN's
 * answers (shared with the backward ops, which plan through it too), the
 * operand copies that cover what cuDNN cannot read, and the run. */
#include "cu_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static conv_key key_of(const pdnn__op_call *call, pdnn_conv_algo algo)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    conv_key k;
    memset(&k, 0, sizeof k); /* keys are compared with memcmp: no stray padding bytes */
    k.n = c->n;
    k.c = c->c;
    k.h = c->h;
    k.w = c->w;
    k.k = c->k;
    k.r = c->r;
    k.s = c->s;
    k.p = c->p;
    k.q = c->q;
    k.groups = c->groups;
    k.stride_h = c->stride_h;
    k.stride_w = c->stride_w;
    k.dil_h = c->dil_h;
    k.dil_w = c->dil_w;
    k.pad_top = c->pad_top;
    k.pad_left = c->pad_left;
    k.pad_bottom = c->pad_bottom;
    k.pad_right = c->pad_right;
    k.x_layout = (int)c->x_layout;
    k.w_layout = (int)c->w_layout;
    k.y_layout = (int)c->y_layout;
    k.algo = (int)algo;
    k.dtype = (int)call->dtype;
    k.tf32 = call->allow_tf32;
    return k;
}

/* cuDNN's output size for symmetric padding pad on one axis. */
static int64_t cudnn_out(int64_t in, int pad, int64_t filt, int dil, int stride)
{
    int64_t span = (filt - 1) * dil + 1;
    if (in + 2 * (int64_t)pad < span)
        return -1;
    return (in + 2 * (int64_t)pad - span) / stride + 1;
}

/* The convolution's math type. float16 and bfloat16: tensor cores
 * (CUDNN_TENSOR_OP_MATH), with the float32 compute type set below, the
 * "PSEUDO_HALF_CONFIG" and "PSEUDO_BFLOAT16_CONFIG" rows of the supported
 * configurations of cudnnConvolutionForward, BackwardData and
 * BackwardFilter (x, w, y in the dtype, convDesc CUDNN_DATA_FLOAT).
 * float32: CUDNN_FMA_MATH unless the context enables TF32, since
 * CUDNN_DEFAULT_MATH lets cuDNN use TF32 tensor cores on Ampere and later
 * (cudnnMathType_t), which would not match the float32 reference. */
static cudnnMathType_t conv_math(const pdnn__op_call *call)
{
    if (cu_reduced(call->dtype))
        return CUDNN_TENSOR_OP_MATH;
    return call->allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

/* Sets the descriptors for plan pl (its copy flags decided) of call:
 * t[TX] the input cuDNN reads, t[TY] the output it writes, filt the filter,
 * t[TW_SRC]/t[TW_DST] the filter repack, t[TX_SRC] the input as stored,
 * conv the convolution; all in the call's storage type. Called with
 * d->lock held. */
pdnn_status pdnn__cu_set_conv_descriptors(cu_dev *d, const pdnn__op_call *call, const conv_plan *pl)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const cudnnDataType_t dt = cu_dnn_type(call->dtype);
    const int64_t cpg = c->c / c->groups;
    const int64_t xdims[4] = {c->n, c->c, c->h, c->w};
    const int64_t wdims[4] = {c->k, cpg, c->r, c->s};
    const int64_t ydims[4] = {c->n, c->k, c->p, c->q};
    if (!fits_int(c->groups) || !fits_int(c->k) || !fits_int(cpg) || !fits_int(c->r) || !fits_int(c->s))
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "CUDA: conv2d sizes must fit in int for cuDNN");
    RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TX_SRC], dt, xdims, c->xs));
    if (pl->x_copy) {
        const int64_t pdims[4] = {c->n, c->c, pl->hp, pl->wp};
        RETURN_IF_FAILED(pdnn__cu_set_packed_as(d->t[TX], dt, pl->x_copy_layout, pdims));
    } else {
        RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TX], dt, xdims, c->xs));
    }
    pdnn_layout wl = pl->w_copy ? pl->w_copy_layout : c->w_layout;
    if (pl->w_copy) {
        RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TW_SRC], dt, wdims, c->ws));
        RETURN_IF_FAILED(pdnn__cu_set_packed_as(d->t[TW_DST], dt, wl, wdims));
    }
    DNN(cudnnSetFilter4dDescriptor, d->filt, dt, wl == PDNN_OHWI ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
        (int)c->k, (int)cpg, (int)c->r, (int)c->s);
    if (pl->y_copy)
        RETURN_IF_FAILED(pdnn__cu_set_packed_as(d->t[TY], dt, PDNN_NCHW, ydims));
    else
        RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TY], dt, ydims, c->ys));
    DNN(cudnnSetConvolution2dDescriptor, d->conv, pl->x_copy ? 0 : c->pad_top, pl->x_copy ? 0 : c->pad_left,
        c->stride_h, c->stride_w, c->dil_h, c->dil_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    DNN(cudnnSetConvolutionGroupCount, d->conv, (int)c->groups);
    DNN(cudnnSetConvolutionMathType, d->conv, conv_math(call));
    return PDNN_SUCCESS;
}

/* cuDNN's forward algorithm as plan->config_name shows it, so that a
 * query says which kernel family "vendor" settled on. */
static const char *fwd_algo_name(cudnnConvolutionFwdAlgo_t a)
{
    switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "cudnn implicit_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "cudnn implicit_precomp_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "cudnn gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "cudnn direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "cudnn fft";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "cudnn fft_tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "cudnn winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "cudnn winograd_nonfused";
    default: return "cudnn ?";
    }
}

/* Workspace bytes of algo for the current descriptors; *s is cuDNN's
 * answer, anything but success meaning it cannot run algo here. */
static size_t algo_workspace(cu_dev *d, cudnnConvolutionFwdAlgo_t algo, cudnnStatus_t *s)
{
    size_t bytes = 0;
    *s = pdnn__cu_dnn.cudnnGetConvolutionForwardWorkspaceSize(d->dnn, d->t[TX], d->filt, d->conv, d->t[TY], algo,
                                                              &bytes);
    if (*s != CUDNN_STATUS_SUCCESS) {
        pdnn__debug("CUDA: cuDNN forward algorithm %d: %s", (int)algo, pdnn__cu_dnn.cudnnGetErrorString(*s));
        return 0;
    }
    return bytes;
}

/* Tries one copy configuration: picks the algorithm and fills the
 * workspace layout. Returns 1 if cuDNN can run it, else 0 with why (len
 * bytes) saying what cuDNN answered. Called with d->lock held and the
 * cuDNN handle created. */
static int try_plan(cu_dev *d, const pdnn__op_call *call, pdnn_conv_algo want, conv_plan *pl, char *why, size_t len)
{
    const pdnn__op op = call->op;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    if (pdnn__cu_set_conv_descriptors(d, call, pl) != PDNN_SUCCESS) {
        snprintf(why, len, "%s", pdnn_last_error());
        return 0;
    }
    cudnnStatus_t s = CUDNN_STATUS_NOT_SUPPORTED;
    size_t ws = 0;
    if (op != PDNN__OP_CONV2D_FWD) {
        if (!pdnn__cu_bwd_select(d, op, want, pl, &ws, why, len))
            return 0;
    } else if (want == PDNN_CONV_ALGO_VENDOR) {
        /* The heuristics' first proposal whose workspace cuDNN can size,
         * the others kept for a call's workspace limit (conv_plan_want).
         * Whether that workspace fits the device is core's question: when
         * it does not, AUTO moves on to im2col_gemm, then direct. */
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int got = 0, proposed = 0;
        memset(perf, 0, sizeof perf);
        s = pdnn__cu_dnn.cudnnGetConvolutionForwardAlgorithm_v7(d->dnn, d->t[TX], d->filt, d->conv, d->t[TY],
                                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf);
        if (s != CUDNN_STATUS_SUCCESS) {
            pdnn__debug("CUDA: cudnnGetConvolutionForwardAlgorithm_v7: %s", pdnn__cu_dnn.cudnnGetErrorString(s));
            snprintf(why, len, "cudnnGetConvolutionForwardAlgorithm_v7: %s", pdnn__cu_dnn.cudnnGetErrorString(s));
            return 0;
        }
        s = CUDNN_STATUS_NOT_SUPPORTED;
        pl->n_alt = 0;
        for (int i = 0; i < got && i < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; i++) {
            if (perf[i].status != CUDNN_STATUS_SUCCESS)
                continue;
            proposed++;
            cudnnStatus_t si;
            const size_t b = algo_workspace(d, perf[i].algo, &si);
            if (si != CUDNN_STATUS_SUCCESS) {
                s = si;
                continue;
            }
            pl->alt[pl->n_alt] = perf[i].algo;
            pl->alt_bytes[pl->n_alt++] = b;
        }
        if (pl->n_alt > 0) {
            s = CUDNN_STATUS_SUCCESS;
            pl->algo = pl->alt[0];
            ws = pl->alt_bytes[0];
        }
        if (s != CUDNN_STATUS_SUCCESS) {
            if (proposed == 0)
                snprintf(why, len, "cuDNN's heuristics propose no algorithm");
            else
                snprintf(why, len, "none of the %d algorithms cuDNN's heuristics propose can be sized: %s", proposed,
                         pdnn__cu_dnn.cudnnGetErrorString(s));
            return 0;
        }
    } else {
        pl->algo = want == PDNN_CONV_ALGO_DIRECT ? CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM
                                                 : CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
        ws = algo_workspace(d, pl->algo, &s);
        if (s != CUDNN_STATUS_SUCCESS) {
            snprintf(why, len, "cudnnGetConvolutionForwardWorkspaceSize: %s", pdnn__cu_dnn.cudnnGetErrorString(s));
            return 0;
        }
    }
    const size_t f = pdnn__dtype_size(call->dtype);
    size_t off = 0;
    if (pl->w_copy) {
        pl->w_off = off;
        off += align256((size_t)(c->k * (c->c / c->groups) * c->r * c->s) * f);
    }
    if (pl->x_copy) {
        pl->x_off = off;
        off += align256((size_t)(c->n * c->c * pl->hp * pl->wp) * f);
    }
    if (pl->y_copy) {
        pl->y_off = off;
        off += align256((size_t)(c->n * c->k * c->p * c->q) * f);
    }
    pl->algo_off = off;
    pl->algo_bytes = ws;
    pl->total = off + ws;
    return 1;
}

/* The home slot of key in the plan cache (FNV-1a over its bytes, which
 * key_of zeroes first). */
static size_t key_slot(const conv_key *key)
{
    const unsigned char *b = (const unsigned char *)key;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof *key; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return (size_t)(h & (PLAN_CACHE - 1));
}

/* What the algorithm asked for is called in refusals. */
static const char *want_name(pdnn_conv_algo want)
{
    return want == PDNN_CONV_ALGO_DIRECT        ? "implicit-GEMM (direct)"
           : want == PDNN_CONV_ALGO_IM2COL_GEMM ? "GEMM (im2col)"
                                                : "vendor-chosen";
}

/* Finds (or recalls) how to run c with want. Returns 0 if cuDNN cannot,
 * with why (len bytes) saying so. Called with d->lock held and the cuDNN
 * handle created. */
static int find_plan(cu_dev *d, const pdnn__op_call *call, pdnn_conv_algo want, conv_plan *out, char *why,
                     size_t len)
{
    const pdnn__op op = call->op;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    conv_key key = key_of(call, want);
    key.algo += 16 * (int)op; /* each op plans apart */
    const size_t home = key_slot(&key);
    size_t slot = home; /* where a new entry goes: the first free slot on the probe path */
    for (size_t i = 0; i < PLAN_CACHE; i++) {
        plan_entry *e = &d->plans[(home + i) & (PLAN_CACHE - 1)];
        if (!e->used) {
            slot = (home + i) & (PLAN_CACHE - 1);
            break;
        }
        if (memcmp(&e->key, &key, sizeof key) == 0) {
            *out = e->plan;
            snprintf(why, len, "%s", e->why);
            return e->supported;
        }
    }

    /* cuDNN pads symmetrically; where pad_top/pad_left do not give the
     * call's output size, the input is copied into a zero-padded buffer. */
    const int need_pad = cudnn_out(c->h, c->pad_top, c->r, c->dil_h, c->stride_h) != c->p ||
                         cudnn_out(c->w, c->pad_left, c->s, c->dil_w, c->stride_w) != c->q;
    int64_t hp = (c->p - 1) * c->stride_h + (c->r - 1) * c->dil_h + 1;
    int64_t wp = (c->q - 1) * c->stride_w + (c->s - 1) * c->dil_w + 1;
    if (hp < c->pad_top + c->h)
        hp = c->pad_top + c->h;
    if (wp < c->pad_left + c->w)
        wp = c->pad_left + c->w;
    const pdnn_layout xl0 = c->x_layout == PDNN_NHWC ? PDNN_NHWC : PDNN_NCHW;
    const pdnn_layout match = xl0 == PDNN_NHWC ? PDNN_OHWI : PDNN_OIHW;

    /* Configurations, cheapest first: operands as they are (HWIO, which
     * cuDNN cannot read, repacked); the filter repacked to match the
     * input; everything in NCHW/OIHW. */
    conv_plan cand[3];
    memset(cand, 0, sizeof cand);
    for (int i = 0; i < 3; i++) {
        cand[i].hp = hp;
        cand[i].wp = wp;
    }
    cand[0].x_copy = need_pad;
    cand[0].x_copy_layout = xl0;
    cand[0].w_copy = c->w_layout == PDNN_HWIO;
    cand[0].w_copy_layout = match;
    cand[1] = cand[0];
    cand[1].w_copy = c->w_layout != match;
    cand[2].x_copy = need_pad || xl0 != PDNN_NCHW;
    cand[2].x_copy_layout = PDNN_NCHW;
    cand[2].w_copy = c->w_layout != PDNN_OIHW;
    cand[2].w_copy_layout = PDNN_OIHW;
    cand[2].y_copy = c->y_layout != PDNN_NCHW;
    int supported = 0, tried = 0;
    char last[PDNN__WHY_LEN] = "";
    conv_plan plan;
    memset(&plan, 0, sizeof plan);
    for (int i = 0; i < 3 && !supported; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= cand[j].x_copy == cand[i].x_copy && cand[j].x_copy_layout == cand[i].x_copy_layout &&
                    cand[j].w_copy == cand[i].w_copy && cand[j].w_copy_layout == cand[i].w_copy_layout &&
                    cand[j].y_copy == cand[i].y_copy;
        if (seen)
            continue;
        plan = cand[i];
        tried++;
        supported = try_plan(d, call, want, &plan, last, sizeof last);
    }

    plan_entry *e = &d->plans[slot]; /* a full table overwrites the home slot */
    e->used = 1;
    e->supported = supported;
    e->key = key;
    e->plan = plan;
    e->why[0] = '\0';
    if (!supported) {
        /* The last configuration tried copies the most (NCHW/OIHW where
         * the call's layouts differ), so its answer is the one to give. */
        snprintf(e->why, sizeof e->why,
                 "CUDA: cuDNN has no %s%s%s convolution%s for %s input, %s filter, %s output, groups %lld "
                 "(%d operand copy configuration%s tried; the last: %s)",
                 cu_reduced(call->dtype) ? pdnn__dtype_name(call->dtype) : "",
                 cu_reduced(call->dtype) ? " " : "", want_name(want),
                 op == PDNN__OP_CONV2D_BWD_DATA     ? " backward data"
                 : op == PDNN__OP_CONV2D_BWD_FILTER ? " backward filter"
                                                    : "",
                 pdnn_layout_name(c->x_layout), pdnn_layout_name(c->w_layout),
                 pdnn_layout_name(c->y_layout), (long long)c->groups, tried, tried == 1 ? "" : "s", last);
    }
    snprintf(why, len, "%s", e->why);
    *out = plan;
    return supported;
}

/* Plans want for call: one cuDNN algorithm and copy configuration, found
 * (or recalled) now so that run only executes it. */
static void conv_plan_want(cu_dev *d, const pdnn__op_call *call, pdnn__plan *plan, pdnn_conv_algo want)
{
    char why[PDNN__WHY_LEN];
    conv_plan pl;
    memset(&pl, 0, sizeof pl);
    if (cu_reduced(call->dtype) && call->op == PDNN__OP_CONV2D_FWD && call->u.conv2d.relu_cap > 0.0f) {
        /* Core would clip after the convolution, a second rounding and a
         * float32 activation call (src/ops/run.c): not for reduced data. */
        pdnn__plan_refuse(plan, "CUDA: conv2d in %s: the CUDA algorithms have no capped relu (relu_cap %g) in "
                                "their epilogue, and an unfused clip would round the output twice",
                          pdnn__dtype_name(call->dtype), (double)call->u.conv2d.relu_cap);
        return;
    }
    pdnn_status st = pdnn__cu_lock_dnn(d);
    if (st != PDNN_SUCCESS) {
        pdnn__plan_refuse(plan, "CUDA: cuDNN could not start on device %d: %s", d->ordinal, pdnn_last_error());
        return;
    }
    int ok = find_plan(d, call, want, &pl, why, sizeof why);
    pthread_mutex_unlock(&d->lock);
    if (!ok) {
        pdnn__plan_refuse(plan, "%s", why);
        return;
    }
    /* Over the call's workspace limit: cuDNN's first proposal within it
     * (the heuristics' order is their guess at speed), else the first. */
    for (int i = 1; call->ws_limit > 0 && pl.total > call->ws_limit && i < pl.n_alt; i++)
        if (pl.algo_off + pl.alt_bytes[i] <= call->ws_limit) {
            pl.algo = pl.alt[i];
            pl.algo_bytes = pl.alt_bytes[i];
            pl.total = pl.algo_off + pl.alt_bytes[i];
        }
    plan->supported = 1;
    plan->workspace = pl.total;
    /* e.g. "cudnn implicit_precomp_gemm copy xw": cuDNN's kernel family
     * and which of input, filter and output go through the workspace. */
    snprintf(plan->config_name, sizeof plan->config_name, "%s%s%s%s%s",
             call->op == PDNN__OP_CONV2D_FWD ? fwd_algo_name(pl.algo) : pdnn__cu_bwd_algo_name(call->op, pl.bwd_algo),
             pl.x_copy || pl.w_copy || pl.y_copy ? " copy " : "", pl.x_copy ? "x" : "", pl.w_copy ? "w" : "",
             pl.y_copy ? "y" : "");
    memcpy(plan->state, &pl, sizeof pl); /* state is bytes: copy, never alias */
}

void pdnn__cu_vendor_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    conv_plan_want(dev, call, plan, PDNN_CONV_ALGO_VENDOR);
}

static void gemm_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    conv_plan_want(dev, call, plan, PDNN_CONV_ALGO_IM2COL_GEMM);
    /* AUTO's order before the registry tried GEMM algorithms only for
     * ungrouped convolutions; grouped ones went from vendor to direct. */
    if (plan->supported && call->u.conv2d.groups != 1)
        pdnn__plan_skip(plan, "AUTO passes over cuDNN's GEMM for grouped convolutions (groups %lld); "
                              "ask for im2col_gemm by name to run it",
                        (long long)call->u.conv2d.groups);
}

void pdnn__cu_direct_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    conv_plan_want(dev, call, plan, PDNN_CONV_ALGO_DIRECT);
}

/* Runs c as pl says, with pl->total bytes of workspace at ws. Called
 * with d->lock held and the cuDNN handle created. */
static pdnn_status conv_run(cu_dev *d, const pdnn__op_call *call, const void *state, pdnn__buf ws_buf)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const conv_plan *pl = state;
    if (pl->total > 0 && !ws_buf.region) {
        char b[32];
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "CUDA: this convolution needs %s of workspace on device %d (padded input, repacked "
                           "filter or cuDNN's own) but got none",
                           pdnn__format_bytes(pl->total, b, sizeof b), d->ordinal);
    }
    RETURN_IF_FAILED(pdnn__cu_set_conv_descriptors(d, call, pl));
    char *ws = pl->total > 0 ? ptr(ws_buf) : NULL;
    /* alpha and beta are float for half and bfloat16 data too (cuDNN's
     * scaling parameters are double only for double data). */
    const float one = 1.0f, zero = 0.0f;
    const cudnnDataType_t dt = cu_dnn_type(call->dtype);
    const size_t es = pdnn__dtype_size(call->dtype);
    const void *w = ptr(c->w_buf);
    if (pl->w_copy) {
        DNN(cudnnTransformTensor, d->dnn, &one, d->t[TW_SRC], w, &zero, d->t[TW_DST], ws + pl->w_off);
        w = ws + pl->w_off;
    }
    const void *x = ptr(c->x_buf);
    if (pl->x_copy) {
        /* Zero the padded buffer, then place the image at (pad_top, pad_left). */
        const int64_t pdims[4] = {c->n, c->c, pl->hp, pl->wp};
        const int64_t idims[4] = {c->n, c->c, c->h, c->w};
        int64_t pst[4];
        pdnn__layout_strides(pl->x_copy_layout, pdims, pst);
        size_t bytes = (size_t)(c->n * c->c * pl->hp * pl->wp) * es; /* all-zero bits: +0 in every dtype */
        CU(cudaMemsetAsync, ws + pl->x_off, 0, bytes, d->stream);
        RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TB], dt, idims, pst));
        char *origin = ws + pl->x_off + (size_t)(c->pad_top * pst[2] + c->pad_left * pst[3]) * es;
        DNN(cudnnTransformTensor, d->dnn, &one, d->t[TX_SRC], x, &zero, d->t[TB], origin);
        x = ws + pl->x_off;
    }
    if (c->bias_buf.region) { /* t[TB] is the bias from here on, for the fused call or the add */
        const int64_t bdims[4] = {1, c->k, 1, 1};
        RETURN_IF_FAILED(pdnn__cu_set_packed_as(d->t[TB], dt, PDNN_NCHW, bdims));
    }
    void *y = pl->y_copy ? (void *)(ws + pl->y_off) : ptr(c->y_buf);
    void *algo_ws = pl->algo_bytes > 0 ? ws + pl->algo_off : NULL;
    const void *z = c->z_buf.region ? ptr(c->z_buf) : NULL;
    const pdnn_layout xl = pl->x_copy ? pl->x_copy_layout : c->x_layout;
    if (!pl->y_copy && c->bias_buf.region && c->relu && xl == PDNN_NCHW && c->y_layout == PDNN_NCHW) {
        /* Convolution, bias, residual and relu in one cuDNN call instead of
         * up to four (each a launch and a pass over y). cuDNN takes z only
         * beside y's descriptor, and needs one even with alpha2 0: then y.
         * NCHW only: alternated with separate calls on an H100 (cuDNN
         * 9.19), it took GoogLeNet and ResNet-50 1.1-1.8x faster in NCHW
         * but up to 1.9x slower in NHWC (bench/results-gpu.md). */
        const float alpha2 = z ? 1.0f : 0.0f;
        cudnnStatus_t s = pdnn__cu_dnn.cudnnConvolutionBiasActivationForward(
            d->dnn, &one, d->t[TX], x, d->filt, w, d->conv, pl->algo, algo_ws, pl->algo_bytes, &alpha2, d->t[TY],
            z ? z : y, d->t[TB], ptr(c->bias_buf), d->relu, d->t[TY], y);
        if (s == CUDNN_STATUS_SUCCESS)
            return PDNN_SUCCESS;
        if (s != CUDNN_STATUS_NOT_SUPPORTED)
            return pdnn__cu_dnn_fail("cudnnConvolutionBiasActivationForward", s);
        /* Refused before it ran anything: the separate calls below. */
        pdnn__debug("CUDA: cudnnConvolutionBiasActivationForward: %s; bias and relu run apart",
                    pdnn__cu_dnn.cudnnGetErrorString(s));
    }
    DNN(cudnnConvolutionForward, d->dnn, &one, d->t[TX], x, d->filt, w, d->conv, pl->algo, algo_ws,
        pl->algo_bytes, &zero, d->t[TY], y);
    /* From here on t[TY] describes the call's output as stored. */
    const int64_t ydims[4] = {c->n, c->k, c->p, c->q};
    if (pl->y_copy) {
        RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TX_SRC], dt, ydims, c->ys));
        DNN(cudnnTransformTensor, d->dnn, &one, d->t[TY], y, &zero, d->t[TX_SRC], ptr(c->y_buf));
        RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[TY], dt, ydims, c->ys));
    }
    if (c->bias_buf.region)
        DNN(cudnnAddTensor, d->dnn, &one, d->t[TB], ptr(c->bias_buf), &one, d->t[TY], ptr(c->y_buf));
    if (z) /* z has y's dims, layout and strides */
        DNN(cudnnAddTensor, d->dnn, &one, d->t[TY], z, &one, d->t[TY], ptr(c->y_buf));
    if (c->relu)
        DNN(cudnnActivationForward, d->dnn, d->relu, &one, d->t[TY], ptr(c->y_buf), &zero, d->t[TY],
            ptr(c->y_buf));
    return PDNN_SUCCESS;
}

CU_DEFINE_RUN(cu_conv_run, conv_run, conv_plan)

/* AUTO's order is the one polydnn used on CUDA before the registry:
 * cuDNN's own choice, then its GEMM (ungrouped only), then implicit GEMM,
 * which cuDNN runs for every call it can describe. */
const pdnn__algo pdnn__cu_algo_conv_vendor = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "vendor",
    .id = PDNN_CONV_ALGO_VENDOR,
    .rank = 0,
    .plan = pdnn__cu_vendor_plan,
    .run = cu_conv_run,
    .residual = 1,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_WINOGRAD),
    .dtypes = PDNN__DTYPES_FLOAT,
};
const pdnn__algo pdnn__cu_algo_conv_gemm = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "im2col_gemm",
    .id = PDNN_CONV_ALGO_IM2COL_GEMM,
    .rank = 1,
    .plan = gemm_plan,
    .run = cu_conv_run,
    .residual = 1,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT,
};
const pdnn__algo pdnn__cu_algo_conv_direct = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "direct",
    .id = PDNN_CONV_ALGO_DIRECT,
    .rank = 2,
    .plan = pdnn__cu_direct_plan,
    .run = cu_conv_run,
    .residual = 1,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT,
};
