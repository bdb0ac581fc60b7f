/* Implicit-GEMM convolution for any filter, stride, dilation and padding
 * (kernels_cl/conv2d_implicit_gemm.cl): which calls it claims, its tile
 * configurations, the filter packing and the launch. */
#include "backends/opencl/cl_internal.h"
#include "tuning.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* The kernel's compile-time tiles: VW-lane vectors, KB of them (KT = VW *
 * KB output channels) by PT pixels per work-item. {16, 2, 6} fills
 * AVX-512's registers (12 zmm accumulators), {16, 1, 6} is AVX2's 6x16
 * micro-kernel, {16, 1, 12} and {8, 1, 12} trade channels for pixels
 * (layers with few output channels), {4, 1, 8} keeps GPU register use low,
 * {16, 2, 7} divides every ResNet output image (7x7 .. 112x112) into whole
 * tiles. ig_default in pdnn__cl_igemm_init picks by device class; with
 * tuning on (POLYDNN_TUNING=search) ig_tune measures them all per shape. */
typedef struct ig_cfg {
    int vw, kb, pt;
} ig_cfg;
static const ig_cfg ig_cands[N_IGEMM] = {{16, 2, 6}, {16, 1, 6}, {16, 1, 12}, {8, 1, 12}, {4, 1, 8}, {16, 2, 7}};

static int64_t ig_kt(int i) { return (int64_t)ig_cands[i].vw * ig_cands[i].kb; }
static int64_t ig_kp(const pdnn__conv2d_call *c, int i) { return (c->k + ig_kt(i) - 1) / ig_kt(i) * ig_kt(i); }

/* Why c is outside what any configuration runs (NULL: inside). The kernel
 * computes input rows and columns, pixel indices and channels in int. */
static const char *ig_shape_why(const pdnn__conv2d_call *c)
{
    const int64_t lim = INT32_MAX / 4, cpg = c->groups > 0 ? c->c / c->groups : c->c;
    if (c->n > lim || c->h > lim || c->w > lim || c->c > lim || c->k > lim || c->p > lim || c->q > lim || c->r > lim ||
        c->s > lim || (c->p > 0 && c->q > lim / c->p) || c->p * c->stride_h > lim || c->q * c->stride_w > lim ||
        c->r * c->dil_h > lim || c->s * c->dil_w > lim || c->pad_top > lim || c->pad_left > lim ||
        (c->r * c->s > 0 && cpg > lim / (c->r * c->s)) ||
        (c->p * c->q > 0 && c->n > INT64_MAX / 8 / (c->p * c->q)))
        return "the tensor is too large for its int indices";
    return NULL;
}

/* Whether configuration i runs c: a work-item's channels share a group. */
static int ig_applies(const pdnn__conv2d_call *c, int i)
{
    return !ig_shape_why(c) && (c->groups == 1 || (c->k / c->groups) % ig_kt(i) == 0);
}

/* A filter with k stride 1 and whole channel blocks (HWIO) is read in place. */
static int ig_in_place(const pdnn__conv2d_call *c, int i) { return c->ws[0] == 1 && c->k % ig_kt(i) == 0; }

/* The workspace: IG_ZEROS zero floats, which pixels outside the image
 * read (kept 64-byte aligned for the packed filter after them), then the
 * packed filter unless it is read in place. */
#define IG_ZEROS 16
static size_t ig_ws(const pdnn__conv2d_call *c, int i)
{
    const int64_t packed = ig_in_place(c, i) ? 0 : ig_kp(c, i) * c->r * c->s * (c->c / c->groups);
    return (size_t)(IG_ZEROS + packed) * sizeof(float);
}

/* Test hook: a configuration every implicit_gemm conv uses where it applies. */
static _Atomic int forced = -1;
static _Thread_local char last_cfg[48];

int pdnn__opencl_igemm_configs(int (*out)[3], int max)
{
    for (int i = 0; i < N_IGEMM && i < max; i++) {
        out[i][0] = ig_cands[i].vw;
        out[i][1] = ig_cands[i].kb;
        out[i][2] = ig_cands[i].pt;
    }
    return N_IGEMM;
}

void pdnn__opencl_force_igemm(int vw, int kb, int pt)
{
    int f = -1;
    for (int i = 0; i < N_IGEMM; i++)
        if (ig_cands[i].vw == vw && ig_cands[i].kb == kb && ig_cands[i].pt == pt)
            f = i;
    forced = f;
}

const char *pdnn__opencl_last_igemm(void) { return last_cfg; }

void pdnn__cl_igemm_init(cl_dev *d)
{
    cl_uint vw = 0;
    if (clGetDeviceInfo(d->id, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof vw, &vw, NULL) != CL_SUCCESS)
        vw = 0;
    /* CPUs: 6 pixels x 32 channels where PoCL reports 16-float vectors
     * (AVX-512), else AVX2's 6x16; GPUs: the small tile. */
    d->ig_default = (d->type & CL_DEVICE_TYPE_CPU) ? (vw >= 16 ? 0 : 1) : 4;
}

void pdnn__cl_igemm_release(cl_dev *d)
{
    for (int i = 0; i < N_IGEMM; i++) {
        if (d->ig_pack[i])
            clReleaseKernel(d->ig_pack[i]);
        if (d->ig_conv[i])
            clReleaseKernel(d->ig_conv[i]);
        if (d->ig_prog[i])
            clReleaseProgram(d->ig_prog[i]);
        d->ig_pack[i] = d->ig_conv[i] = NULL;
        d->ig_prog[i] = NULL;
    }
}

static void ig_name(int i, char *buf, size_t len)
{
    snprintf(buf, len, "vw=%d kb=%d pt=%d", ig_cands[i].vw, ig_cands[i].kb, ig_cands[i].pt);
}

static void ig_shape_key(const pdnn__conv2d_call *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s/%s n%lld c%lld h%lld w%lld k%lld r%lld s%lld u%d,%d p%d,%d d%d,%d g%lld",
             pdnn_layout_name(c->x_layout), pdnn_layout_name(c->w_layout), pdnn_layout_name(c->y_layout),
             (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w, (long long)c->k, (long long)c->r,
             (long long)c->s, c->stride_h, c->stride_w, c->pad_top, c->pad_left, c->dil_h, c->dil_w,
             (long long)c->groups);
}

/* Defined below, with the functions it names. */
static const pdnn__cl_tunable ig_tunable;

/* The configuration to run c with (as tiled_pick in opencl.c): the forced
 * one where it applies, else the tuning cache's valid entry (unless
 * tuning is off; under FORCE only one this process stored) with
 * *cached = 1, else the device's default or, for a group narrower than
 * its channel block, the first that applies, with *search = 1 when the
 * caller should tune now. -1 if none applies. */
static int ig_pick(const cl_dev *d, const pdnn__conv2d_call *c, int *search, int *cached)
{
    int dflt = ig_applies(c, d->ig_default) ? d->ig_default : -1;
    for (int i = 0; dflt < 0 && i < N_IGEMM; i++)
        if (ig_applies(c, i))
            dflt = i;
    return pdnn__cl_pick(d, c, &ig_tunable, dflt, forced, search, cached);
}

/* Sets the reason c is refused as the last error (core adds it to its
 * message) and returns PDNN_ERR_UNSUPPORTED. */
static pdnn_status ig_refuse(const pdnn__conv2d_call *c)
{
    const char *why = ig_shape_why(c);
    if (why)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "implicit_gemm does not run this convolution: %s", why);
    return pdnn__error(PDNN_ERR_UNSUPPORTED,
                       "implicit_gemm does not run this convolution: it runs groups == 1 or groups of a multiple "
                       "of 4 output channels; this one has %lld output channels in %lld groups",
                       (long long)c->k, (long long)c->groups);
}

size_t pdnn__cl_igemm_workspace(cl_dev *d, const pdnn__conv2d_call *c)
{
    int search = 0, cached = 0;
    const int i = ig_pick(d, c, &search, &cached);
    if (i < 0) {
        (void)ig_refuse(c);
        return SIZE_MAX;
    }
    uint64_t bytes = ig_ws(c, i);
    for (int j = 0; search && j < N_IGEMM; j++) /* tuning tries them all */
        if (ig_applies(c, j) && ig_ws(c, j) > bytes)
            bytes = ig_ws(c, j);
    return bytes > SIZE_MAX / 2 ? SIZE_MAX : (size_t)bytes;
}

/* Builds configuration i's program and kernels. Called with d->lock held. */
static pdnn_status ig_build(cl_dev *d, int i)
{
    if (d->ig_conv[i])
        return PDNN_SUCCESS;
    char opts[64];
    snprintf(opts, sizeof opts, "-DVW=%d -DKB=%d -DPT=%d", ig_cands[i].vw, ig_cands[i].kb, ig_cands[i].pt);
    static const char *const names[] = {"igemm_pack", "conv2d_implicit_gemm"};
    cl_kernel k[2] = {NULL, NULL};
    pdnn_status st = pdnn__cl_build_kernels(d, "conv2d_implicit_gemm.cl", opts, names, 2, &d->ig_prog[i], k);
    d->ig_pack[i] = k[0];
    d->ig_conv[i] = k[1];
    return st;
}

/* Pixels per work-item. On CPUs a work-item sweeps as many pixel tiles as
 * it can with the same KT filter rows (R*S*cpg*KT floats), which are then
 * read from memory once: all of the batch's pixels, halved while there
 * are fewer than 8 work-items per compute unit. This is what lifts the
 * small late layers (7x7 and 14x14 images, large C), where a one-tile
 * work-item re-reads its filter rows from memory for every 6 pixels. On
 * GPUs one tile: parallelism matters more than reuse. */
static int64_t ig_span(const cl_dev *d, const pdnn__conv2d_call *c, int i)
{
    const int64_t pt = ig_cands[i].pt, npix = c->n * c->p * c->q;
    const int64_t tiles = (npix + pt - 1) / pt;
    if (!(d->type & CL_DEVICE_TYPE_CPU))
        return pt;
    /* At most 2^20 pixels: the kernel takes the span as an int. */
    int64_t per = tiles < ((int64_t)1 << 20) / pt ? tiles : ((int64_t)1 << 20) / pt;
    const int64_t nkb = ig_kp(c, i) / ig_kt(i), want = 8 * (int64_t)(d->cu > 0 ? d->cu : 1);
    while (per > 1 && nkb * ((tiles + per - 1) / per) < want)
        per = (per + 1) / 2;
    return per * pt;
}

/* Enqueues c with configuration i (built). Called with d->lock held. */
static pdnn_status ig_enqueue(cl_dev *d, const pdnn__conv2d_call *c, int i)
{
    const int64_t cpg = c->c / c->groups, kt = ig_kt(i), kp = ig_kp(c, i);
    const int64_t npix = c->n * c->p * c->q;
    if (npix == 0 || c->k == 0)
        return PDNN_SUCCESS;
    cl_int err = CL_SUCCESS;
    cl_kernel k;
    cl_mem wsb, zb = c->workspace.region;
    cl_long wp_off, z_off = elem_off(c->workspace);
    cl_long4 wstr;
    const cl_float zero = 0.0f;
    err = clEnqueueFillBuffer(d->queue, zb, &zero, sizeof zero, c->workspace.offset, IG_ZEROS * sizeof(float), 0,
                              NULL, NULL);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clEnqueueFillBuffer(implicit_gemm zeros)", err);
    if (ig_in_place(c, i)) {
        wsb = c->w_buf.region;
        wp_off = elem_off(c->w_buf);
        wstr.s[0] = kt;
        wstr.s[1] = c->ws[2];
        wstr.s[2] = c->ws[3];
        wstr.s[3] = c->ws[1];
    } else {
        wsb = c->workspace.region;
        wp_off = elem_off(c->workspace) + IG_ZEROS;
        wstr.s[3] = kt;
        wstr.s[2] = cpg * kt;
        wstr.s[1] = c->s * cpg * kt;
        wstr.s[0] = c->r * c->s * cpg * kt;
        if (cpg > 0 && c->r * c->s > 0) {
            k = d->ig_pack[i];
            cl_mem w = c->w_buf.region;
            cl_long wo = elem_off(c->w_buf);
            cl_long4 wst = strides4(c->ws);
            cl_int4 filt = int4_of((int)c->r, (int)c->s, (int)cpg, (int)c->k);
            SET_ARG(k, 0, w);
            SET_ARG(k, 1, wo);
            SET_ARG(k, 2, wst);
            SET_ARG(k, 3, wsb);
            SET_ARG(k, 4, wp_off);
            SET_ARG(k, 5, filt);
            if (err != CL_SUCCESS)
                return pdnn__cl_fail("clSetKernelArg(igemm_pack)", err);
            /* One channel block per work-group; runs of 32 c (PACK_RUN) per tap. */
            size_t plocal[2] = {(size_t)kt, 1};
            size_t pglobal[2] = {(size_t)kp, (size_t)(c->r * c->s * ((cpg + 31) / 32))};
            err = clEnqueueNDRangeKernel(d->queue, k, 2, NULL, pglobal, plocal, 0, NULL, NULL);
            if (err != CL_SUCCESS)
                return pdnn__cl_fail("clEnqueueNDRangeKernel(igemm_pack)", err);
        }
    }
    k = d->ig_conv[i];
    cl_mem x = c->x_buf.region, y = c->y_buf.region;
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : x;
    cl_long xo = elem_off(c->x_buf), yo = elem_off(c->y_buf);
    cl_long bo = c->bias_buf.region ? elem_off(c->bias_buf) : 0;
    cl_long4 xs = strides4(c->xs), ys = strides4(c->ys);
    const int64_t span = ig_span(d, c, i);
    cl_int4 dims = int4_of((int)c->n, (int)c->p, (int)c->q, (int)c->k);
    cl_int4 inp = int4_of((int)c->h, (int)c->w, (int)cpg, (int)(c->k / c->groups));
    cl_int4 filt = int4_of((int)c->r, (int)c->s, c->bias_buf.region != NULL, c->relu);
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    cl_int4 pad = int4_of(c->pad_top, c->pad_left, (int)span, 0);
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, wsb);
    SET_ARG(k, 3, wp_off);
    SET_ARG(k, 4, b);
    SET_ARG(k, 5, bo);
    SET_ARG(k, 6, y);
    SET_ARG(k, 7, yo);
    SET_ARG(k, 8, xs);
    SET_ARG(k, 9, ys);
    SET_ARG(k, 10, dims);
    SET_ARG(k, 11, inp);
    SET_ARG(k, 12, filt);
    SET_ARG(k, 13, geom);
    SET_ARG(k, 14, pad);
    SET_ARG(k, 15, wstr);
    SET_ARG(k, 16, zb);
    SET_ARG(k, 17, z_off);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(conv2d_implicit_gemm)", err);
    /* Dimension 0: channel blocks (neighbouring work-items share the input
     * span, which stays in cache); dimension 1: pixel spans. */
    const size_t l1 = (d->type & CL_DEVICE_TYPE_CPU) ? 1 : 8;
    size_t local[2] = {1, l1};
    const size_t gy = (size_t)((npix + span - 1) / span);
    size_t global[2] = {(size_t)(kp / kt), (gy + l1 - 1) / l1 * l1};
    err = clEnqueueNDRangeKernel(d->queue, k, 2, NULL, global, local, 0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueNDRangeKernel(conv2d_implicit_gemm)", err);
}

static int ig_usable(const pdnn__conv2d_call *c, int i) { return ig_applies(c, i) && ig_ws(c, i) <= c->workspace_bytes; }

/* The search is the shared one (cl_tuner.c): every configuration reduces
 * over (r, s, c) in the same order, so all must match the default. */
static const pdnn__cl_tunable ig_tunable = {"conv2d_implicit_gemm", N_IGEMM, ig_applies, ig_usable, ig_build,
                                            ig_enqueue, ig_name, ig_shape_key};

pdnn_status pdnn__cl_igemm(cl_dev *d, const pdnn__conv2d_call *c)
{
    int search = 0, cached = 0;
    int i = ig_pick(d, c, &search, &cached);
    if (i < 0)
        return ig_refuse(c);
    if (search)
        i = pdnn__cl_tune(d, c, &ig_tunable, i);
    if (ig_ws(c, i) > c->workspace_bytes) {
        /* Tuned by another thread since the workspace was sized: fall
         * back to one that fits. */
        int fit = -1;
        for (int j = 0; j < N_IGEMM && fit < 0; j++)
            if (ig_applies(c, j) && ig_ws(c, j) <= c->workspace_bytes)
                fit = j;
        if (fit < 0)
            return pdnn__error(PDNN_ERR_INTERNAL, "OpenCL: implicit_gemm got %zu bytes of workspace, needs %zu",
                               c->workspace_bytes, ig_ws(c, i));
        i = fit;
        cached = 0;
    }
    pdnn_status st = ig_build(d, i);
    if (st == PDNN_SUCCESS)
        st = ig_enqueue(d, c, i);
    if (st == PDNN_SUCCESS) {
        ig_name(i, last_cfg, sizeof last_cfg);
        if (c->tuning_out) {
            c->tuning_out->tunable = 1;
            c->tuning_out->cached = cached;
            snprintf(c->tuning_out->config, sizeof c->tuning_out->config, "%s", last_cfg);
        }
    }
    return st;
}
