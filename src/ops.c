/* Eager ops: validate in core, build the backend call, dispatch to the
 * device that holds the tensors. */
#include "context.h"
#include "tuning.h"

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
    if ((unsigned)p->algorithm >= PDNN_CONV_ALGO_COUNT)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "conv2d: algorithm %d is unknown; algorithms are AUTO, DIRECT, IM2COL_GEMM, VENDOR, TILED, "
                           "WINOGRAD, DEPTHWISE, GEMM_1X1, IMPLICIT_GEMM",
                           (int)p->algorithm);
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

static pdnn_status same_device(const char *op, const pdnn_tensor *const *ts, const char *const *names,
                               int n)
{
    for (int i = 1; i < n; i++) {
        if (ts[i] && ts[i]->dev != ts[0]->dev)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "%s: %s is on %s but %s is on %s; all tensors of one call must be "
                               "on one device",
                               op, names[0], ts[0]->dev->name, names[i], ts[i]->dev->name);
    }
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->desc.dtype != PDNN_FLOAT32)
            return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s: %s is not float32; only float32 is supported",
                               op, names[i]);
    return PDNN_SUCCESS;
}

static pdnn_status check_output(const char *op, const pdnn_tensor *y, const int64_t want[4])
{
    char yd[96];
    if (!is_activation(y->desc.layout))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: output %s must be NCHW or NHWC", op,
                           pdnn__desc_string(&y->desc, yd, sizeof yd));
    if (memcmp(y->desc.dims, want, sizeof y->desc.dims) != 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: output %s has the wrong dims; expected [%lld,%lld,%lld,%lld]", op,
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

const char *pdnn_conv_algo_name(pdnn_conv_algo algo)
{
    switch (algo) {
    case PDNN_CONV_ALGO_AUTO: return "auto";
    case PDNN_CONV_ALGO_DIRECT: return "direct";
    case PDNN_CONV_ALGO_IM2COL_GEMM: return "im2col_gemm";
    case PDNN_CONV_ALGO_VENDOR: return "vendor";
    case PDNN_CONV_ALGO_TILED: return "tiled";
    case PDNN_CONV_ALGO_WINOGRAD: return "winograd";
    case PDNN_CONV_ALGO_DEPTHWISE: return "depthwise";
    case PDNN_CONV_ALGO_GEMM_1X1: return "gemm_1x1";
    case PDNN_CONV_ALGO_IMPLICIT_GEMM: return "implicit_gemm";
    }
    return "unknown";
}

int pdnn_conv_algo_parse(const char *name)
{
    for (int i = 0; name && i < PDNN_CONV_ALGO_COUNT; i++)
        if (strcasecmp(name, pdnn_conv_algo_name((pdnn_conv_algo)i)) == 0)
            return i;
    return -1;
}

static size_t workspace_of(pdnn_device *dev, const pdnn__conv2d_call *c, pdnn_conv_algo algo)
{
    if (dev->backend->conv2d_workspace)
        return dev->backend->conv2d_workspace(dev->handle, c, algo);
    return algo == PDNN_CONV_ALGO_DIRECT ? 0 : SIZE_MAX;
}

/* Runs c with algo, its workspace taken from the device's allocator and
 * returned as soon as the work is queued (the queue is in order, so the
 * next user of that memory runs after it). */
static pdnn_status run_with(pdnn_device *dev, pdnn_conv_algo algo, size_t ws, pdnn__conv2d_call *c,
                            pdnn__bfc_block *block)
{
    c->algo = algo;
    c->workspace_bytes = ws;
    memset(&c->workspace, 0, sizeof c->workspace);
    if (ws > 0)
        c->workspace = block->buf;
    pdnn_conv2d_tuning tuning;
    memset(&tuning, 0, sizeof tuning);
    c->tuning_out = &tuning;
    pdnn_status st = dev->backend->conv2d_forward(dev->handle, c);
    c->tuning_out = NULL;
    if (ws > 0)
        pdnn__bfc_free(dev->alloc, block->handle);
    if (st == PDNN_SUCCESS) {
        last_algo = algo;
        last_tuning = tuning;
    }
    return st;
}

/* ---- AUTO by measurement ------------------------------------------------
 * Like cudnnFind and MIOpen's find-db: with tuning on, AUTO runs every
 * algorithm that can take the shape once, checks each against the direct
 * kernel's output, times them, and remembers the fastest per device and
 * shape in the tuning cache ("conv2d_algo"); later calls (and processes)
 * run that one. Without a stored choice, or with tuning off, the fixed
 * order below applies. */

static const pdnn_conv_algo find_candidates[] = {
    PDNN_CONV_ALGO_VENDOR, PDNN_CONV_ALGO_WINOGRAD,      PDNN_CONV_ALGO_GEMM_1X1,    PDNN_CONV_ALGO_DEPTHWISE,
    PDNN_CONV_ALGO_TILED,  PDNN_CONV_ALGO_IMPLICIT_GEMM, PDNN_CONV_ALGO_IM2COL_GEMM, PDNN_CONV_ALGO_DIRECT};
#define N_FIND ((int)(sizeof find_candidates / sizeof find_candidates[0]))

static void find_keys(const pdnn_device *dev, const pdnn__conv2d_call *c, char *dkey, size_t dlen, char *skey,
                      size_t slen)
{
    snprintf(dkey, dlen, "%s|%s|%s|%s", dev->backend->name, dev->props.vendor, dev->props.name,
             dev->props.driver_version);
    for (char *t = dkey; *t; t++)
        if (*t == '\t' || *t == '\n' || *t == '\r')
            *t = ' ';
    snprintf(skey, slen, "%s/%s/%s n%lld c%lld h%lld w%lld k%lld r%lld s%lld p%lld q%lld u%d,%d t%d,%d d%d,%d g%lld",
             pdnn_layout_name(c->x_layout), pdnn_layout_name(c->w_layout), pdnn_layout_name(c->y_layout),
             (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w, (long long)c->k, (long long)c->r,
             (long long)c->s, (long long)c->p, (long long)c->q, c->stride_h, c->stride_w, c->pad_top, c->pad_left,
             c->dil_h, c->dil_w, (long long)c->groups);
}

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One run of algo to completion, its workspace taken and returned; the
 * seconds it took, or -1 if it cannot run now. */
static double run_timed(pdnn_device *dev, pdnn_conv_algo algo, pdnn__conv2d_call *c)
{
    const size_t ws = workspace_of(dev, c, algo);
    if (ws == SIZE_MAX)
        return -1.0;
    pdnn__bfc_block block;
    memset(&block, 0, sizeof block);
    if (ws > 0 && pdnn__bfc_alloc(dev->alloc, ws, "conv2d workspace", &block) != PDNN_SUCCESS)
        return -1.0;
    const double t0 = seconds_now();
    if (run_with(dev, algo, ws, c, &block) != PDNN_SUCCESS)
        return -1.0;
    if (dev->backend->synchronize && dev->backend->synchronize(dev->handle) != PDNN_SUCCESS)
        return -1.0;
    return seconds_now() - t0;
}

/* Searches the algorithms for c and stores the fastest; returns it, or
 * AUTO when none but direct ran (nothing is stored then). */
static pdnn_conv_algo find_search(pdnn_device *dev, pdnn__conv2d_call *c, const char *dkey, const char *skey)
{
    const size_t ny = (size_t)(c->n * c->k * c->p * c->q);
    float *ref = malloc(ny * sizeof *ref), *got = malloc(ny * sizeof *got);
    pdnn_conv_algo best = PDNN_CONV_ALGO_AUTO;
    double best_t = -1.0;
    const double t_start = seconds_now();
    /* The reference: the direct kernel, the one the parity suite checks
     * most widely; a gross-error check, not a precision test (Winograd's
     * rounding differs from direct's by up to ~1e-3 of the largest output
     * at C = 512). */
    if (ref && got && run_timed(dev, PDNN_CONV_ALGO_DIRECT, c) >= 0.0 &&
        dev->backend->read(dev->handle, c->y_buf, ref, ny * sizeof *ref) == PDNN_SUCCESS) {
        float scale = 0.0f;
        for (size_t j = 0; j < ny; j++)
            scale = fabsf(ref[j]) > scale ? fabsf(ref[j]) : scale;
        for (int a = 0; a < N_FIND; a++) {
            const pdnn_conv_algo algo = find_candidates[a];
            if (algo == PDNN_CONV_ALGO_DIRECT)
                continue;
            /* The first run builds programs and may tune the kernel's own
             * parameters; it is checked, not timed. */
            if (run_timed(dev, algo, c) < 0.0 ||
                dev->backend->read(dev->handle, c->y_buf, got, ny * sizeof *got) != PDNN_SUCCESS)
                continue;
            float worst = 0.0f;
            for (size_t j = 0; j < ny; j++)
                worst = fabsf(got[j] - ref[j]) > worst ? fabsf(got[j] - ref[j]) : worst;
            if (!(worst <= 5e-3f * (1.0f + scale))) {
                pdnn__debug("conv2d find on %s: %s differs from direct by %g (largest output %g); rejected",
                            dev->name, pdnn_conv_algo_name(algo), (double)worst, (double)scale);
                continue;
            }
            double t = -1.0;
            for (int r = 0; r < 3; r++) {
                const double tr = run_timed(dev, algo, c);
                if (tr >= 0.0 && (t < 0.0 || tr < t))
                    t = tr;
            }
            pdnn__debug("conv2d find on %s: %s %.3f ms", dev->name, pdnn_conv_algo_name(algo), t * 1e3);
            if (t > 0.0 && (best_t < 0.0 || t < best_t)) {
                best_t = t;
                best = algo;
            }
        }
    }
    free(ref);
    free(got);
    if (best != PDNN_CONV_ALGO_AUTO) {
        const double flops = 2.0 * (double)c->n * (double)c->k * (double)c->p * (double)c->q * (double)c->r *
                             (double)c->s * (double)(c->c / c->groups);
        if (pdnn__tuning_store(dkey, "conv2d_algo", skey, pdnn_conv_algo_name(best), flops / best_t * 1e-9) !=
            PDNN_SUCCESS)
            pdnn__debug("conv2d find: %s", pdnn_last_error());
        pdnn__debug("conv2d find on %s: %s chosen for %s after %.2f s", dev->name, pdnn_conv_algo_name(best), skey,
                    seconds_now() - t_start);
    }
    return best;
}

/* AUTO's stored or (when tuning may search) measured choice for c, run
 * once more so y holds its result; returns 0 when there is none and the
 * fixed order should decide. */
static int run_found(pdnn_device *dev, pdnn__conv2d_call *c, pdnn_status *st)
{
    char dkey[768], skey[256], value[32];
    find_keys(dev, c, dkey, sizeof dkey, skey, sizeof skey);
    pdnn_conv_algo algo = PDNN_CONV_ALGO_AUTO;
    int searched = 0;
    double find_seconds = 0.0;
    if (pdnn__tuning_lookup_for(c->tuning, dkey, "conv2d_algo", skey, value, sizeof value)) {
        const int a = pdnn_conv_algo_parse(value);
        if (a > PDNN_CONV_ALGO_AUTO && a < PDNN_CONV_ALGO_COUNT)
            algo = (pdnn_conv_algo)a;
        else
            pdnn__debug("tuning cache: ignoring conv2d_algo '%s' for %s: not an algorithm of this build", value,
                        skey);
    } else if (c->tuning == PDNN_TUNING_SEARCH || c->tuning == PDNN_TUNING_FORCE) {
        /* Nothing to choose (the host: direct only) is not searched. */
        int choices = 0;
        for (int a = 0; a < N_FIND; a++)
            choices += find_candidates[a] != PDNN_CONV_ALGO_DIRECT && workspace_of(dev, c, find_candidates[a]) != SIZE_MAX;
        if (choices < 2)
            return 0;
        const double t0 = seconds_now();
        algo = find_search(dev, c, dkey, skey);
        searched = 1;
        find_seconds = seconds_now() - t0;
    }
    if (algo == PDNN_CONV_ALGO_AUTO)
        return 0;
    const size_t ws = workspace_of(dev, c, algo);
    pdnn__bfc_block block;
    memset(&block, 0, sizeof block);
    if (ws == SIZE_MAX || (ws > 0 && pdnn__bfc_alloc(dev->alloc, ws, "conv2d workspace", &block) != PDNN_SUCCESS)) {
        pdnn__debug("conv2d on %s: the stored choice %s does not run now (%s); using the fixed order", dev->name,
                    pdnn_conv_algo_name(algo), ws == SIZE_MAX ? "not applicable" : "its workspace does not fit");
        return 0;
    }
    *st = run_with(dev, algo, ws, c, &block);
    if (*st == PDNN_SUCCESS) {
        /* The choice is a tuning result too: report it as one. */
        last_tuning.tunable = 1;
        last_tuning.algo_measured = 1;
        last_tuning.algo_searched = searched;
        if (searched) {
            last_tuning.searched = 1;
            last_tuning.cached = 0;
            last_tuning.search_seconds = find_seconds;
        } else if (!last_tuning.searched) {
            last_tuning.cached = 1;
        }
    }
    return 1;
}

/* AUTO prefers the vendor library's choice (cuDNN) where a backend has
 * one, then the 1x1 GEMM for the ungrouped 1x1 shapes it claims, then
 * the implicit GEMM for every other ungrouped convolution, then
 * Winograd (3x3 stride-1 layers with enough tiles), then the
 * register-tiled kernel, then im2col + GEMM for ungrouped
 * convolutions (the GEMM library is
 * far faster than the direct kernel), each only when its workspace fits in
 * what the device's limit leaves; otherwise, or for grouped convolutions
 * where per-group GEMMs are tiny, the direct path, which needs none. */
static pdnn_status run_conv(pdnn_device *dev, pdnn_conv_algo want, pdnn__conv2d_call *c)
{
    pdnn__bfc_block block;
    memset(&block, 0, sizeof block);
    if (want != PDNN_CONV_ALGO_AUTO) {
        /* A backend may say why it refuses (e.g. winograd: "3x3 filters
         * only") as the last error; start from none. */
        pdnn__error(PDNN_SUCCESS, "%s", "");
        size_t ws = workspace_of(dev, c, want);
        if (ws == SIZE_MAX && want == PDNN_CONV_ALGO_DEPTHWISE && c->groups != c->c)
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "conv2d: algorithm depthwise runs only depthwise convolutions (groups == input "
                               "channels), but this one has %lld input channels in %lld group(s); use "
                               "PDNN_CONV_ALGO_AUTO",
                               (long long)c->c, (long long)c->groups);
        if (ws == SIZE_MAX && want == PDNN_CONV_ALGO_GEMM_1X1 && strcmp(dev->backend->name, "opencl") == 0)
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "conv2d: algorithm gemm_1x1 does not run this convolution on %s (%s backend): it "
                               "runs only 1x1 filters without padding (every output pixel on an input pixel), "
                               "groups == 1 or a multiple of 4 output channels per group; this one has a "
                               "%lldx%lld filter, padding top/left %d,%d, %lldx%lld -> %lldx%lld, stride %d,%d, "
                               "groups %lld; use PDNN_CONV_ALGO_AUTO",
                               dev->name, dev->backend->name, (long long)c->r, (long long)c->s, c->pad_top,
                               c->pad_left, (long long)c->h, (long long)c->w, (long long)c->p, (long long)c->q,
                               c->stride_h, c->stride_w, (long long)c->groups);
        if (ws == SIZE_MAX) {
            char why[512];
            snprintf(why, sizeof why, "%s", pdnn_last_error());
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "conv2d: algorithm %s is not available on %s (%s backend)%s%s; use "
                               "PDNN_CONV_ALGO_AUTO or PDNN_CONV_ALGO_DIRECT",
                               pdnn_conv_algo_name(want), dev->name, dev->backend->name, why[0] ? ": " : "", why);
        }
        if (ws > 0) {
            pdnn_status st = pdnn__bfc_alloc(dev->alloc, ws, "conv2d workspace", &block);
            if (st != PDNN_SUCCESS)
                return st;
        }
        return run_with(dev, want, ws, c, &block);
    }
    pdnn_status found = PDNN_SUCCESS;
    if (c->tuning != PDNN_TUNING_OFF && run_found(dev, c, &found))
        return found;
    /* Fastest first, measured on PoCL for ResNet-50's layers (bench/):
     * tiled 3-4x im2col + CLBlast, which is 3-4x direct; gemm_1x1 2-7x
     * tiled on every 1x1 layer of ResNet-50 (batch 1 and 8, NCHW and
     * NHWC; bench/results-conv.md), ungrouped only (grouped ones were not
     * measured); winograd 1.5-3x tiled on the 3x3 stride-1 layers, except
     * where there are few 4x4 output tiles (7x7 and 14x14 images at batch
     * 1), where transforming the filter (36/9 of its size) costs more
     * than it saves. implicit_gemm before both for every ungrouped
     * convolution: on all 16 of ResNet-50's non-1x1 layer shapes (conv1
     * 7x7/2, 3x3 at 56/28/14/7 incl. the /2 ones; batch 1 and 8, NCHW and
     * NHWC) it measured 1.9-9.3x tiled and 1.4-9.3x winograd (geomean
     * 4.3x tiled, 3.2x winograd on its stride-1 rows; 107-502 GFLOP/s
     * where tiled had 22-106; bench/results-conv.md). Grouped
     * convolutions were not measured and keep tiled; 1x1 layers keep
     * gemm_1x1, which is specialised for them; depthwise 3-16x direct
     * (what ran before) on MobileNet v1's depthwise layers
     * (bench/results-depthwise.md). */
    static const pdnn_conv_algo order[] = {PDNN_CONV_ALGO_VENDOR,        PDNN_CONV_ALGO_DEPTHWISE,
                                           PDNN_CONV_ALGO_GEMM_1X1,      PDNN_CONV_ALGO_IMPLICIT_GEMM,
                                           PDNN_CONV_ALGO_WINOGRAD,      PDNN_CONV_ALGO_TILED,
                                           PDNN_CONV_ALGO_IM2COL_GEMM};
    for (int a = 0; a < (int)(sizeof order / sizeof order[0]); a++) {
        pdnn_conv_algo algo = order[a];
        if ((algo == PDNN_CONV_ALGO_IM2COL_GEMM || algo == PDNN_CONV_ALGO_GEMM_1X1 ||
             algo == PDNN_CONV_ALGO_IMPLICIT_GEMM) &&
            c->groups != 1)
            continue;
        /* Only where measured faster: ResNet-50's channel counts, and
         * at least 32 tiles in the batch. */
        if (algo == PDNN_CONV_ALGO_WINOGRAD &&
            (c->c < 64 || c->k < 64 || c->n * ((c->p + 3) / 4) * ((c->q + 3) / 4) < 32))
            continue;
        /* depthwise: one input channel is an ordinary convolution. */
        if (algo == PDNN_CONV_ALGO_DEPTHWISE && c->groups == 1)
            continue;
        size_t ws = workspace_of(dev, c, algo);
        if (ws == SIZE_MAX)
            continue;
        if (ws == 0 || pdnn__bfc_alloc(dev->alloc, ws, "conv2d workspace", &block) == PDNN_SUCCESS)
            return run_with(dev, algo, ws, c, &block);
        char b[32];
        pdnn__debug("conv2d on %s: %s needs %s of workspace, which does not fit (%s); trying the next algorithm",
                    dev->name, pdnn_conv_algo_name(algo), pdnn__format_bytes(ws, b, sizeof b), pdnn_last_error());
    }
    /* direct needs no workspace on OpenCL; a vendor library may still want
     * some (cuDNN: a filter layout it lacks), so ask. */
    size_t ws = workspace_of(dev, c, PDNN_CONV_ALGO_DIRECT);
    if (ws == SIZE_MAX)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "conv2d: no algorithm of the %s backend runs this convolution on %s",
                           dev->backend->name, dev->name);
    if (ws > 0) {
        pdnn_status st = pdnn__bfc_alloc(dev->alloc, ws, "conv2d workspace", &block);
        if (st != PDNN_SUCCESS)
            return st;
    }
    return run_with(dev, PDNN_CONV_ALGO_DIRECT, ws, c, &block);
}

pdnn_status pdnn_conv2d_forward(const pdnn_conv2d_params *p, const pdnn_tensor *x,
                                const pdnn_tensor *w, const pdnn_tensor *bias, pdnn_tensor *y)
{
    if (!p || !x || !w || !y)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_conv2d_forward: %s is NULL",
                           !p ? "params" : !x ? "x" : !w ? "w" : "y");
    const pdnn_tensor *ts[] = {x, w, y, bias};
    const char *names[] = {"input", "filter", "output", "bias"};
    pdnn_status st = same_device("conv2d", ts, names, 4);
    if (st != PDNN_SUCCESS)
        return st;
    if (y == x || y == w || (bias && y == bias))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "conv2d: the output must be a tensor of its own, not an input");
    int64_t od[4] = {0};
    if ((st = pdnn_conv2d_output_dims(&x->desc, &w->desc, p, od)) != PDNN_SUCCESS ||
        (st = check_output("conv2d", y, od)) != PDNN_SUCCESS)
        return st;
    if (bias && (bias->desc.layout != PDNN_LAYOUT_X || bias->desc.dims[0] != od[1])) {
        char bd[96];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "conv2d: bias %s must be a layout-X vector of length %lld (output channels)",
                           pdnn__desc_string(&bias->desc, bd, sizeof bd), (long long)od[1]);
    }
    pdnn_device *dev = x->dev;
    if (!dev->backend->conv2d_forward)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "conv2d: the %s backend of %s has no conv2d kernel",
                           dev->backend->name, dev->name);
    pdnn__conv2d_call c;
    memset(&c, 0, sizeof c);
    c.n = x->desc.dims[0];
    c.c = x->desc.dims[1];
    c.h = x->desc.dims[2];
    c.w = x->desc.dims[3];
    c.k = od[1];
    c.r = w->desc.dims[2];
    c.s = w->desc.dims[3];
    c.p = od[2];
    c.q = od[3];
    c.groups = p->groups;
    c.stride_h = p->stride_h;
    c.stride_w = p->stride_w;
    c.dil_h = p->dilation_h;
    c.dil_w = p->dilation_w;
    c.pad_top = p->pad_top;
    c.pad_left = p->pad_left;
    c.relu = p->relu;
    c.x_layout = x->desc.layout;
    c.w_layout = w->desc.layout;
    c.y_layout = y->desc.layout;
    pdnn__layout_strides(x->desc.layout, x->desc.dims, c.xs);
    pdnn__layout_strides(w->desc.layout, w->desc.dims, c.ws);
    pdnn__layout_strides(y->desc.layout, y->desc.dims, c.ys);
    c.x_buf = x->block.buf;
    c.w_buf = w->block.buf;
    c.y_buf = y->block.buf;
    if (bias)
        c.bias_buf = bias->block.buf;
    c.tuning = dev->ctx->opts.tuning;
    return run_conv(dev, p->algorithm, &c);
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
    pdnn_status st = same_device("pool2d", ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    if (x == y)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pool2d: the output must be a tensor of its own, not the input");
    int64_t od[4] = {0};
    if ((st = pdnn_pool2d_output_dims(&x->desc, p, od)) != PDNN_SUCCESS ||
        (st = check_output("pool2d", y, od)) != PDNN_SUCCESS)
        return st;
    pdnn_device *dev = x->dev;
    if (!dev->backend->pool2d_forward)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "pool2d: the %s backend of %s has no pool2d kernel",
                           dev->backend->name, dev->name);
    pdnn__pool2d_call c;
    memset(&c, 0, sizeof c);
    c.n = x->desc.dims[0];
    c.c = x->desc.dims[1];
    c.h = x->desc.dims[2];
    c.w = x->desc.dims[3];
    c.p = od[2];
    c.q = od[3];
    c.mode = p->mode;
    c.win_h = p->window_h;
    c.win_w = p->window_w;
    c.stride_h = p->stride_h;
    c.stride_w = p->stride_w;
    c.pad_top = p->pad_top;
    c.pad_left = p->pad_left;
    c.pad_bottom = p->pad_bottom;
    c.pad_right = p->pad_right;
    c.x_layout = x->desc.layout;
    c.y_layout = y->desc.layout;
    pdnn__layout_strides(x->desc.layout, x->desc.dims, c.xs);
    pdnn__layout_strides(y->desc.layout, y->desc.dims, c.ys);
    c.x_buf = x->block.buf;
    c.y_buf = y->block.buf;
    /* As for conv2d: the workspace goes back as soon as the work is
     * queued (the queue is in order). */
    const size_t ws = dev->backend->pool2d_workspace ? dev->backend->pool2d_workspace(dev->handle, &c) : 0;
    pdnn__bfc_block block;
    memset(&block, 0, sizeof block);
    if (ws > 0) {
        st = pdnn__bfc_alloc(dev->alloc, ws, "pool2d workspace", &block);
        if (st != PDNN_SUCCESS)
            return st;
        c.workspace = block.buf;
        c.workspace_bytes = ws;
    }
    st = dev->backend->pool2d_forward(dev->handle, &c);
    if (ws > 0)
        pdnn__bfc_free(dev->alloc, block.handle);
    return st;
}
