/*
 * float16 and bfloat16 cases of the op-parity harness (test mode, set
 * "precision"; issue 43): pdnn_cast between every pair of the three float
 * dtypes, and the ops that store the reduced dtypes (activations, binary
 * with broadcasting, pooling forward and backward, convolution forward and
 * backward data, filter and bias) in each, run on every
 * device by every algorithm of the op (forced by name). The reference is
 * the documented contract, computed here: the inputs as the dtype holds
 * them, widened (exact), the op in double, the result rounded once to the
 * dtype (src/core/half.c). The error of an element is
 *     |got - ref| / max(|ref|, the dtype's smallest normal)
 * and for convolution, whose sums cancel, the floor is also 4 units of the
 * dtype's last place of the element's sum of |terms| (float32's own
 * rounding of such a sum, before the dtype's, is far below that)
 * within the algorithm's bound for that dtype (pdnn__algo_tol: one unit
 * in the last place unless the entry says otherwise, as float32's
 * rounding before the dtype's may cross a rounding boundary; casts and
 * max pooling exact). An algorithm without a path for the dtype refuses
 * it (a skip, naming why).
 */
#include "core/half.h"
#include "ops/dispatch.h"
#include "helpers.h"
#include "parity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct prec_case {
    pdnn__op op;
    pdnn_dtype from, to; /* cast: both; the others compute in `from` */
    int arg;             /* activation mode, binary op, pool mode, convolution groups (0: 1); backward
                          * data and filter: BWD_ARG's stride, dilation and groups */
    pdnn_tensor_desc a, b; /* cast, activation: x (a); binary: a, b; pool: x (a), y (b) */
} prec_case;

/* Pooling backward's window other than pool_params' default, or'ed into
 * the mode (arg): 2x2 stride 2 unpadded; 3x3 stride 3 padding 1. */
#define POOL_2X2 0x10
#define POOL_3X3S3 0x20
#define POOL_MODE(c) ((c)->arg & 0xf)

/* Backward data's and filter's arg: stride u, dilation d (0: 1) and groups
 * g (0: 1); a bare arg is the stride. */
#define BWD_ARG(u, d, g) ((u) | (d) << 4 | (g) << 8)
#define BWD_DIL(c) (((c)->arg >> 4 & 0xf) > 1 ? (c)->arg >> 4 & 0xf : 1)
#define BWD_GROUPS(c) ((c)->arg >> 8 > 1 ? (c)->arg >> 8 : 1)

/* dims past the rank 1, so the loops below may read 3 */
#define ND1(n) {PDNN_FLOAT32, PDNN_ND, {n, 1, 1}, 1}
#define ND3(x, y, z) {PDNN_FLOAT32, PDNN_ND, {x, y, z}, 3}
#define IMG(l, n, c, h, w) {PDNN_FLOAT32, l, {n, c, h, w}, 4}
#define F32 PDNN_FLOAT32
#define F16 PDNN_FLOAT16
#define BF16 PDNN_BFLOAT16

static const prec_case cases[] = {
    {PDNN__OP_CAST, F32, F16, 0, ND1(4099), {0}},
    {PDNN__OP_CAST, F32, BF16, 0, ND3(17, 5, 3), {0}},
    {PDNN__OP_CAST, F16, F32, 0, ND1(1031), {0}},
    {PDNN__OP_CAST, BF16, F32, 0, ND3(2, 3, 5), {0}},
    {PDNN__OP_CAST, F16, BF16, 0, ND1(1031), {0}},
    {PDNN__OP_CAST, BF16, F16, 0, ND1(1031), {0}},
    {PDNN__OP_CAST, F16, F16, 0, {PDNN_FLOAT32, PDNN_ND, {1, 1, 1}, 0}, {0}},
    {PDNN__OP_CAST, BF16, BF16, 0, ND1(7), {0}},
    {PDNN__OP_CAST, F32, F32, 0, ND1(7), {0}},
    {PDNN__OP_ACTIVATION, F16, F16, PDNN_ACTIVATION_SIGMOID, ND3(17, 5, 3), {0}},
    {PDNN__OP_ACTIVATION, BF16, BF16, PDNN_ACTIVATION_SIGMOID, ND3(17, 5, 3), {0}},
    {PDNN__OP_ACTIVATION, F16, F16, PDNN_ACTIVATION_GELU, ND1(4099), {0}},
    {PDNN__OP_ACTIVATION, BF16, BF16, PDNN_ACTIVATION_TANH, ND1(1031), {0}},
    {PDNN__OP_BINARY, F16, F16, PDNN_BINARY_MUL, ND3(17, 5, 3), ND3(1, 5, 1)},
    {PDNN__OP_BINARY, BF16, BF16, PDNN_BINARY_SUB, ND3(1, 5, 3), ND3(17, 1, 3)},
    {PDNN__OP_BINARY, F16, F16, PDNN_BINARY_DIV, ND1(1031), ND1(1031)},
    {PDNN__OP_BINARY, BF16, BF16, PDNN_BINARY_MUL, ND1(1037), ND1(1)}, /* packed by a repeated one */
    {PDNN__OP_ACTIVATION, BF16, BF16, PDNN_ACTIVATION_SIGMOID, ND1(8), {0}}, /* one whole vector, no tail */
    {PDNN__OP_POOL2D_FWD, F16, F16, PDNN_POOL_MAX, IMG(PDNN_NCHW, 17, 3, 9, 7), IMG(PDNN_NCHW, 17, 3, 5, 4)},
    {PDNN__OP_POOL2D_FWD, BF16, BF16, PDNN_POOL_AVG_EXCLUDE_PADDING, IMG(PDNN_NHWC, 2, 5, 9, 7),
     IMG(PDNN_NHWC, 2, 5, 5, 4)},
    {PDNN__OP_POOL2D_FWD, F16, F16, PDNN_POOL_AVG_INCLUDE_PADDING, IMG(PDNN_NHWC, 1, 3, 8, 8),
     IMG(PDNN_NHWC, 1, 3, 4, 4)},
    /* convolution 3x3, padding 1, with a bias: x (a), w (b) */
    {PDNN__OP_CONV2D_FWD, F16, F16, 0, IMG(PDNN_NCHW, 2, 5, 7, 6), IMG(PDNN_OIHW, 6, 5, 3, 3)},
    {PDNN__OP_CONV2D_FWD, BF16, BF16, 0, IMG(PDNN_NHWC, 17, 3, 5, 5), IMG(PDNN_OHWI, 4, 3, 3, 3)},
    /* depthwise (groups = channels, arg): channels past a vector, a
     * multiplier of 2, columns past a block; NCHW (dw_plane) */
    {PDNN__OP_CONV2D_FWD, F16, F16, 19, IMG(PDNN_NHWC, 2, 19, 7, 11), IMG(PDNN_OHWI, 19, 1, 3, 3)},
    {PDNN__OP_CONV2D_FWD, BF16, BF16, 9, IMG(PDNN_NHWC, 3, 9, 5, 13), IMG(PDNN_OHWI, 18, 1, 3, 3)},
    {PDNN__OP_CONV2D_FWD, F16, F16, 16, IMG(PDNN_NHWC, 1, 16, 6, 9), IMG(PDNN_OHWI, 16, 1, 3, 3)},
    {PDNN__OP_CONV2D_FWD, BF16, BF16, 5, IMG(PDNN_NCHW, 2, 5, 6, 7), IMG(PDNN_OIHW, 5, 1, 3, 3)},
    /* convolution backward data (3x3, padding 1, stride arg): dx (a), w
     * (b); dy is conv_out's shape: channels past a vector, odd images,
     * both layouts, stride 2's four phases */
    {PDNN__OP_CONV2D_BWD_DATA, F16, F16, 0, IMG(PDNN_NCHW, 2, 5, 7, 6), IMG(PDNN_OIHW, 19, 5, 3, 3)},
    {PDNN__OP_CONV2D_BWD_DATA, BF16, BF16, 0, IMG(PDNN_NHWC, 3, 17, 5, 9), IMG(PDNN_OHWI, 6, 17, 3, 3)},
    {PDNN__OP_CONV2D_BWD_DATA, F16, F16, 2, IMG(PDNN_NHWC, 2, 9, 7, 8), IMG(PDNN_OHWI, 5, 9, 3, 3)},
    /* convolution backward filter (padding: the filter's half, stride
     * arg): x (a), dw (b); dy is conv_out's shape: both layouts, stride
     * 2, 1x1 filters (gemm's NCHW kernel, gemm_nt, with a tail past its
     * vectors; float16's on widened copies), sums over the batch and rows
     * longer than a vector */
    {PDNN__OP_CONV2D_BWD_FILTER, F16, F16, 0, IMG(PDNN_NCHW, 3, 5, 9, 30), IMG(PDNN_OIHW, 6, 5, 3, 3)},
    {PDNN__OP_CONV2D_BWD_FILTER, BF16, BF16, 0, IMG(PDNN_NHWC, 2, 17, 6, 7), IMG(PDNN_OHWI, 9, 17, 3, 3)},
    {PDNN__OP_CONV2D_BWD_FILTER, F16, F16, 2, IMG(PDNN_NHWC, 2, 9, 7, 8), IMG(PDNN_OHWI, 5, 9, 3, 3)},
    {PDNN__OP_CONV2D_BWD_FILTER, BF16, BF16, 0, IMG(PDNN_NCHW, 2, 7, 5, 9), IMG(PDNN_OIHW, 10, 7, 1, 1)},
    {PDNN__OP_CONV2D_BWD_FILTER, F16, F16, 0, IMG(PDNN_NCHW, 3, 6, 4, 7), IMG(PDNN_OIHW, 5, 6, 1, 1)},
    /* grouped and depthwise backward data and filter (BWD_ARG: stride,
     * dilation, groups; padding the dilated filter's half): odd channel
     * counts, depthwise with a multiplier of 2, stride 2, dilation 2,
     * both layouts and dtypes (direct, implicit_gemm, split) */
    {PDNN__OP_CONV2D_BWD_DATA, F16, F16, BWD_ARG(2, 0, 19), IMG(PDNN_NCHW, 2, 19, 9, 11), IMG(PDNN_OIHW, 19, 1, 3, 3)},
    {PDNN__OP_CONV2D_BWD_DATA, BF16, BF16, BWD_ARG(1, 2, 9), IMG(PDNN_NHWC, 3, 9, 7, 10), IMG(PDNN_OHWI, 18, 1, 3, 3)},
    {PDNN__OP_CONV2D_BWD_DATA, BF16, BF16, BWD_ARG(2, 2, 3), IMG(PDNN_NCHW, 2, 9, 8, 7), IMG(PDNN_OIHW, 15, 3, 3, 3)},
    {PDNN__OP_CONV2D_BWD_DATA, F16, F16, BWD_ARG(1, 0, 5), IMG(PDNN_NHWC, 2, 15, 6, 9), IMG(PDNN_OHWI, 5, 3, 3, 3)},
    {PDNN__OP_CONV2D_BWD_FILTER, BF16, BF16, BWD_ARG(2, 0, 19), IMG(PDNN_NCHW, 3, 19, 9, 11),
     IMG(PDNN_OIHW, 19, 1, 3, 3)},
    {PDNN__OP_CONV2D_BWD_FILTER, F16, F16, BWD_ARG(1, 2, 9), IMG(PDNN_NHWC, 2, 9, 7, 10), IMG(PDNN_OHWI, 18, 1, 3, 3)},
    {PDNN__OP_CONV2D_BWD_FILTER, F16, F16, BWD_ARG(2, 2, 3), IMG(PDNN_NCHW, 2, 9, 8, 7), IMG(PDNN_OIHW, 15, 3, 3, 3)},
    {PDNN__OP_CONV2D_BWD_FILTER, BF16, BF16, BWD_ARG(1, 0, 5), IMG(PDNN_NHWC, 3, 15, 6, 9),
     IMG(PDNN_OHWI, 5, 3, 3, 3)},
    /* convolution backward bias: db (K = a's channels) from dy (a) */
    {PDNN__OP_CONV2D_BWD_BIAS, F16, F16, 0, IMG(PDNN_NHWC, 3, 11, 5, 7), {0}},
    {PDNN__OP_CONV2D_BWD_BIAS, BF16, BF16, 0, IMG(PDNN_NCHW, 2, 6, 9, 5), {0}},
    {PDNN__OP_POOL2D_BWD, F16, F16, PDNN_POOL_AVG_EXCLUDE_PADDING, IMG(PDNN_NCHW, 2, 3, 9, 7),
     IMG(PDNN_NCHW, 2, 3, 5, 4)},
    /* the vector kernels (rows, flat, global) at odd sizes in both dtypes:
     * rows longer than a vector and planes that end mid-vector */
    {PDNN__OP_POOL2D_FWD, BF16, BF16, PDNN_POOL_MAX, IMG(PDNN_NCHW, 3, 5, 11, 37), IMG(PDNN_NCHW, 3, 5, 6, 19)},
    {PDNN__OP_POOL2D_FWD, F16, F16, PDNN_POOL_AVG_INCLUDE_PADDING, IMG(PDNN_NCHW, 2, 3, 9, 35),
     IMG(PDNN_NCHW, 2, 3, 5, 18)},
    {PDNN__OP_POOL2D_FWD, F16, F16, PDNN_POOL_MAX, IMG(PDNN_NHWC, 2, 29, 7, 9), IMG(PDNN_NHWC, 2, 29, 4, 5)},
    {PDNN__OP_POOL2D_FWD, BF16, BF16, PDNN_POOL_AVG_EXCLUDE_PADDING, IMG(PDNN_NHWC, 3, 27, 7, 6),
     IMG(PDNN_NHWC, 3, 27, 4, 3)},
    {PDNN__OP_POOL2D_FWD, F16, F16, PDNN_POOL_MAX, IMG(PDNN_NCHW, 2, 3, 7, 13), IMG(PDNN_NCHW, 2, 3, 7, 13)},
    {PDNN__OP_POOL2D_FWD, BF16, BF16, PDNN_POOL_AVG_EXCLUDE_PADDING, IMG(PDNN_NCHW, 2, 3, 5, 11),
     IMG(PDNN_NCHW, 2, 3, 5, 11)},
    {PDNN__OP_POOL2D_FWD, BF16, BF16, PDNN_POOL_MAX, IMG(PDNN_NCHW, 3, 5, 7, 5), IMG(PDNN_NCHW, 3, 5, 1, 1)},
    {PDNN__OP_POOL2D_FWD, F16, F16, PDNN_POOL_AVG_EXCLUDE_PADDING, IMG(PDNN_NCHW, 2, 7, 5, 9),
     IMG(PDNN_NCHW, 2, 7, 1, 1)},
    /* batch norm: x (a), dy (b, the backward's) at odd sizes: rows that
     * end mid-vector, channels past a vector (NHWC) */
    {PDNN__OP_BN_FWD_INFER, F16, F16, 0, IMG(PDNN_NCHW, 2, 3, 5, 11), {0}},
    {PDNN__OP_BN_FWD_INFER, BF16, BF16, 0, IMG(PDNN_NHWC, 3, 19, 3, 5), {0}},
    {PDNN__OP_BN_FWD_TRAIN, BF16, BF16, 0, IMG(PDNN_NCHW, 3, 5, 7, 9), {0}},
    {PDNN__OP_BN_FWD_TRAIN, F16, F16, 0, IMG(PDNN_NHWC, 2, 11, 5, 7), {0}},
    {PDNN__OP_BN_BWD, F16, F16, 0, IMG(PDNN_NCHW, 2, 5, 7, 9), IMG(PDNN_NCHW, 2, 5, 7, 9)},
    {PDNN__OP_BN_BWD, BF16, BF16, 0, IMG(PDNN_NHWC, 3, 13, 5, 3), IMG(PDNN_NHWC, 3, 13, 5, 3)},
    /* pooling backward: x (a), dy (b). 3x3/2 padded (overlapping: direct,
     * plane, argmax) in both layouts and modes; 2x2/2 (POOL_2X2: window's
     * vector kernels, the reduced averages' too) and 3x3/3
     * padded (POOL_3X3S3: the scalar one for both), odd sizes leaving
     * rows and columns in no window, vector rows and channels with tails */
    {PDNN__OP_POOL2D_BWD, BF16, BF16, PDNN_POOL_MAX, IMG(PDNN_NHWC, 2, 5, 9, 7), IMG(PDNN_NHWC, 2, 5, 5, 4)},
    {PDNN__OP_POOL2D_BWD, F16, F16, PDNN_POOL_MAX, IMG(PDNN_NCHW, 3, 5, 11, 9), IMG(PDNN_NCHW, 3, 5, 6, 5)},
    {PDNN__OP_POOL2D_BWD, BF16, BF16, PDNN_POOL_AVG_INCLUDE_PADDING, IMG(PDNN_NHWC, 2, 3, 9, 7),
     IMG(PDNN_NHWC, 2, 3, 5, 4)},
    {PDNN__OP_POOL2D_BWD, F16, F16, PDNN_POOL_MAX | POOL_2X2, IMG(PDNN_NCHW, 2, 3, 7, 37), IMG(PDNN_NCHW, 2, 3, 3, 18)},
    {PDNN__OP_POOL2D_BWD, BF16, BF16, PDNN_POOL_MAX | POOL_2X2, IMG(PDNN_NHWC, 2, 19, 6, 9),
     IMG(PDNN_NHWC, 2, 19, 3, 4)},
    {PDNN__OP_POOL2D_BWD, F16, F16, PDNN_POOL_AVG_EXCLUDE_PADDING | POOL_2X2, IMG(PDNN_NHWC, 2, 11, 7, 9),
     IMG(PDNN_NHWC, 2, 11, 3, 4)},
    {PDNN__OP_POOL2D_BWD, BF16, BF16, PDNN_POOL_AVG_INCLUDE_PADDING | POOL_2X2, IMG(PDNN_NCHW, 2, 3, 6, 37),
     IMG(PDNN_NCHW, 2, 3, 3, 18)},
    {PDNN__OP_POOL2D_BWD, BF16, BF16, PDNN_POOL_MAX | POOL_3X3S3, IMG(PDNN_NCHW, 2, 5, 9, 10),
     IMG(PDNN_NCHW, 2, 5, 3, 4)},
    {PDNN__OP_POOL2D_BWD, F16, F16, PDNN_POOL_AVG_INCLUDE_PADDING | POOL_3X3S3, IMG(PDNN_NHWC, 2, 5, 9, 10),
     IMG(PDNN_NHWC, 2, 5, 3, 4)},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static int selected(const prec_case *c, int op, const char *set)
{
    return (op < 0 || (int)c->op == op) && (!set || strcmp(set, "precision") == 0);
}

int parity_precision_count(int op, const char *set)
{
    int n = 0;
    for (int i = 0; i < N_CASES; i++)
        n += selected(&cases[i], op, set);
    return n;
}

/* v as dtype t holds it (the nearest, ties to even). */
static double in_dtype(pdnn_dtype t, double v)
{
    const float f = (float)v;
    return t == F16 ? pdnn__f16_to_f32(pdnn__f32_to_f16(f)) : t == BF16 ? pdnn__bf16_to_f32(pdnn__f32_to_bf16(f)) : f;
}

/* The pooling window, from the output's size: 3x3, stride 2, padding 1
 * (the harness's pool case); stride 1 where y is x's size (the NCHW flat
 * kernel's case); the whole image, no padding, where y is 1x1 (global). */
static void pool_params(const prec_case *c, pdnn_pool2d_params *p)
{
    pdnn_pool2d_params_init(p);
    p->mode = (pdnn_pool_mode)POOL_MODE(c);
    p->window_h = p->window_w = 3;
    p->stride_h = p->stride_w = 2;
    p->pad_top = p->pad_left = p->pad_bottom = p->pad_right = 1;
    if (c->arg & POOL_2X2) {
        p->window_h = p->window_w = 2;
        p->pad_top = p->pad_left = p->pad_bottom = p->pad_right = 0;
    } else if (c->arg & POOL_3X3S3) {
        p->stride_h = p->stride_w = 3;
    } else if (c->b.dims[2] == c->a.dims[2] && c->b.dims[3] == c->a.dims[3]) {
        p->stride_h = p->stride_w = 1;
    } else if (c->b.dims[2] == 1 && c->b.dims[3] == 1) {
        p->window_h = (int)c->a.dims[2];
        p->window_w = (int)c->a.dims[3];
        p->pad_top = p->pad_left = p->pad_bottom = p->pad_right = 0;
    }
}

/* Logical (n, c, h, w) element of an image tensor in its layout. */
static int64_t img_at(const pdnn_tensor_desc *d, int64_t n, int64_t c, int64_t h, int64_t w)
{
    int64_t st[4];
    pdnn__layout_strides(d->layout, d->dims, st);
    return n * st[0] + c * st[1] + h * st[2] + w * st[3];
}

/* Pooling forward (y) or backward (dx from dy = b's values) in double;
 * max pooling's backward adds dy at the window's first maximum in
 * row-major order (the forward's choice, on the values the dtype holds). */
static void pool_ref(const prec_case *c, const double *x, const double *dy, double *out)
{
    const int64_t *xd = c->a.dims, *yd = c->b.dims;
    const int bwd = c->op == PDNN__OP_POOL2D_BWD;
    pdnn_pool2d_params pp;
    pool_params(c, &pp);
    const int64_t sh = pp.stride_h, sw = pp.stride_w, kh = pp.window_h, kw = pp.window_w, pt = pp.pad_top;
    if (bwd)
        memset(out, 0, (size_t)pdnn_tensor_desc_elements(&c->a) * sizeof *out);
    for (int64_t n = 0; n < xd[0]; n++)
        for (int64_t ch = 0; ch < xd[1]; ch++)
            for (int64_t p = 0; p < yd[2]; p++)
                for (int64_t q = 0; q < yd[3]; q++) {
                    const int64_t h0 = p * sh - pt, w0 = q * sw - pt;
                    const int64_t h1 = h0 + kh < xd[2] + pt ? h0 + kh : xd[2] + pt,
                                  w1 = w0 + kw < xd[3] + pt ? w0 + kw : xd[3] + pt;
                    const int64_t padded = (h1 - h0) * (w1 - w0);
                    double s = 0, mx = -INFINITY;
                    int64_t cnt = 0, at = -1;
                    for (int64_t h = h0 < 0 ? 0 : h0; h < (h1 < xd[2] ? h1 : xd[2]); h++)
                        for (int64_t w = w0 < 0 ? 0 : w0; w < (w1 < xd[3] ? w1 : xd[3]); w++) {
                            const double v = x[img_at(&c->a, n, ch, h, w)];
                            if (cnt == 0 || v > mx)
                                at = img_at(&c->a, n, ch, h, w);
                            s += v, cnt++, mx = v > mx ? v : mx;
                        }
                    const int max = POOL_MODE(c) == PDNN_POOL_MAX;
                    const double div = POOL_MODE(c) == PDNN_POOL_AVG_INCLUDE_PADDING ? (double)padded : (double)cnt;
                    if (!bwd) {
                        out[img_at(&c->b, n, ch, p, q)] = max ? mx : s / div;
                        continue;
                    }
                    if (max) {
                        if (at >= 0)
                            out[at] += dy[img_at(&c->b, n, ch, p, q)];
                        continue;
                    }
                    const double g = dy[img_at(&c->b, n, ch, p, q)] / div;
                    for (int64_t h = h0 < 0 ? 0 : h0; h < (h1 < xd[2] ? h1 : xd[2]); h++)
                        for (int64_t w = w0 < 0 ? 0 : w0; w < (w1 < xd[3] ? w1 : xd[3]); w++)
                            out[img_at(&c->a, n, ch, h, w)] += g;
                }
}

/* A backward convolution's stride (its arg), 1 for the forward. */
static int64_t bwd_stride(const prec_case *c)
{
    return (c->op == PDNN__OP_CONV2D_BWD_DATA || c->op == PDNN__OP_CONV2D_BWD_FILTER) && (c->arg & 0xf) > 1
               ? c->arg & 0xf
               : 1;
}

/* The convolution's output descriptor: x's layout, {N, K, H, W} (3x3,
 * padding the dilated filter's half, or 1x1 unpadded: W / stride rounded
 * up). */
static pdnn_tensor_desc conv_out(const prec_case *c)
{
    pdnn_tensor_desc y = c->a;
    y.dims[1] = c->b.dims[0];
    y.dims[2] = (y.dims[2] - 1) / bwd_stride(c) + 1;
    y.dims[3] = (y.dims[3] - 1) / bwd_stride(c) + 1;
    return y;
}

/* The convolution's bias: exact in every dtype. */
static double conv_bias(int64_t k) { return 0.25 * (double)k - 0.5; }

/* Convolution (stride 1, padding 1, conv_bias) in double: out, and mag
 * (unless NULL) each element's sum of |terms|. */
static void conv_ref(const prec_case *c, const double *x, const double *w, double *out, double *mag)
{
    const pdnn_tensor_desc yd = conv_out(c);
    const int64_t *d = c->a.dims, *f = c->b.dims, kpg = f[0] / (c->arg > 1 ? c->arg : 1);
    for (int64_t n = 0; n < d[0]; n++)
        for (int64_t k = 0; k < f[0]; k++)
            for (int64_t p = 0; p < d[2]; p++)
                for (int64_t q = 0; q < d[3]; q++) {
                    double s = conv_bias(k), g = fabs(conv_bias(k));
                    for (int64_t ch = 0; ch < f[1]; ch++)
                        for (int64_t r = 0; r < f[2]; r++)
                            for (int64_t t = 0; t < f[3]; t++) {
                                const int64_t h = p + r - 1, v = q + t - 1;
                                if (h < 0 || h >= d[2] || v < 0 || v >= d[3])
                                    continue;
                                const double term =
                                    x[img_at(&c->a, n, k / kpg * f[1] + ch, h, v)] * w[img_at(&c->b, k, ch, r, t)];
                                s += term, g += fabs(term);
                            }
                    out[img_at(&yd, n, k, p, q)] = s;
                    if (mag)
                        mag[img_at(&yd, n, k, p, q)] = g;
                }
}

/* Convolution backward data (dx from dy, a's shape, and w) or filter (dw
 * from x and dy, b's shape) in double (BWD_ARG's stride, dilation and
 * groups, padding the dilated filter's half): each of the forward's terms
 * dy[n,k,p,q] times w or x added to the element of out (zeroed) it
 * belongs to, mag (zeroed) each element's sum of |terms|. in1: dy (data)
 * or x (filter); in2: w or dy. */
static void conv_grad_ref(const prec_case *c, const double *in1, const double *in2, double *out, double *mag)
{
    const pdnn_tensor_desc yd = conv_out(c);
    const int data = c->op == PDNN__OP_CONV2D_BWD_DATA;
    const int64_t *d = c->a.dims, *f = c->b.dims, u = bwd_stride(c), dil = BWD_DIL(c), pad = dil * (f[2] / 2);
    const int64_t kpg = f[0] / BWD_GROUPS(c);
    for (int64_t n = 0; n < d[0]; n++)
        for (int64_t k = 0; k < f[0]; k++)
            for (int64_t ch = 0; ch < f[1]; ch++)
                for (int64_t p = 0; p < yd.dims[2]; p++)
                    for (int64_t q = 0; q < yd.dims[3]; q++)
                        for (int64_t r = 0; r < f[2]; r++)
                            for (int64_t t = 0; t < f[3]; t++) {
                                const int64_t h = p * u + r * dil - pad, v = q * u + t * dil - pad;
                                if (h < 0 || h >= d[2] || v < 0 || v >= d[3])
                                    continue;
                                const int64_t xi = img_at(&c->a, n, k / kpg * f[1] + ch, h, v),
                                              wi = img_at(&c->b, k, ch, r, t),
                                              yi = img_at(&yd, n, k, p, q);
                                const double term = data ? in1[yi] * in2[wi] : in1[xi] * in2[yi];
                                out[data ? xi : wi] += term;
                                mag[data ? xi : wi] += fabs(term);
                            }
}

/* Convolution backward bias in double: db[k] (out) the sum of dy's (a's)
 * channel k, mag its sum of |terms|. */
static void conv_bwd_bias_ref(const prec_case *c, const double *dy, double *out, double *mag)
{
    const int64_t *d = c->a.dims;
    for (int64_t k = 0; k < d[1]; k++) {
        double s = 0, g = 0;
        for (int64_t n = 0; n < d[0]; n++)
            for (int64_t h = 0; h < d[2]; h++)
                for (int64_t v = 0; v < d[3]; v++) {
                    const double term = dy[img_at(&c->a, n, k, h, v)];
                    s += term, g += fabs(term);
                }
        out[k] = s;
        mag[k] = g;
    }
}

/* Batch norm's per-channel vectors, exact in every dtype: gamma, beta,
 * mean (the running or, for the backward, the saved one) and variance. */
static double bn_vec(int which, int64_t c)
{
    const double k = (double)(c % 16);
    return which == 0 ? 0.5 + 0.125 * k : which == 1 ? 0.25 * k - 0.5 : which == 2 ? 0.125 * k - 0.25 : 0.5 + 0.25 * k;
}
#define BN_EPS 1e-5

static int is_bn(pdnn__op op) { return op == PDNN__OP_BN_FWD_INFER || op == PDNN__OP_BN_FWD_TRAIN || op == PDNN__OP_BN_BWD; }

/* Batch norm in double: y (forward, inference from bn_vec's statistics,
 * training from the batch's) or dx (backward, from the saved mean and
 * inverse std as dtype t holds them, and dy); mag each element's sum of
 * |terms|, for the floor. */
static void bn_ref(const prec_case *c, const double *x, const double *dy, double *out, double *mag)
{
    const int64_t *d = c->a.dims, m = d[0] * d[2] * d[3];
    for (int64_t ch = 0; ch < d[1]; ch++) {
        double mu = bn_vec(2, ch), k = 1.0 / sqrt(bn_vec(3, ch) + BN_EPS), sdy = 0, sdyx = 0;
        if (c->op == PDNN__OP_BN_FWD_TRAIN) {
            double s = 0, q = 0;
            for (int64_t n = 0; n < d[0]; n++)
                for (int64_t h = 0; h < d[2]; h++)
                    for (int64_t w = 0; w < d[3]; w++)
                        s += x[img_at(&c->a, n, ch, h, w)];
            mu = s / (double)m;
            for (int64_t n = 0; n < d[0]; n++)
                for (int64_t h = 0; h < d[2]; h++)
                    for (int64_t w = 0; w < d[3]; w++)
                        q += (x[img_at(&c->a, n, ch, h, w)] - mu) * (x[img_at(&c->a, n, ch, h, w)] - mu);
            k = 1.0 / sqrt(q / (double)m + BN_EPS);
        } else if (c->op == PDNN__OP_BN_BWD) {
            k = in_dtype(c->from, k);
            for (int64_t n = 0; n < d[0]; n++)
                for (int64_t h = 0; h < d[2]; h++)
                    for (int64_t w = 0; w < d[3]; w++) {
                        const int64_t e = img_at(&c->a, n, ch, h, w);
                        sdy += dy[e];
                        sdyx += dy[e] * (x[e] - mu) * k;
                    }
        }
        const double g = bn_vec(0, ch), b = bn_vec(1, ch);
        for (int64_t n = 0; n < d[0]; n++)
            for (int64_t h = 0; h < d[2]; h++)
                for (int64_t w = 0; w < d[3]; w++) {
                    const int64_t e = img_at(&c->a, n, ch, h, w);
                    const double xhat = (x[e] - mu) * k;
                    if (c->op == PDNN__OP_BN_BWD) {
                        out[e] = g * k / (double)m * ((double)m * dy[e] - sdy - xhat * sdyx);
                        mag[e] = fabs(g * k / (double)m) * ((double)m * fabs(dy[e]) + fabs(sdy) + fabs(xhat * sdyx));
                    } else {
                        out[e] = g * xhat + b;
                        mag[e] = fabs(g * xhat) + fabs(b);
                    }
                }
    }
}

static double act_ref(int mode, double v)
{
    switch (mode) {
    case PDNN_ACTIVATION_SIGMOID: return 1.0 / (1.0 + exp(-v));
    case PDNN_ACTIVATION_GELU: return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    default: return tanh(v);
    }
}

/* The reference output of c (n_out elements) from inputs a, b as the
 * dtype holds them. */
static void reference(const prec_case *c, const double *a, const double *b, double *ref, int64_t n_out)
{
    if (is_bn(c->op)) {
        double *mag = parity_xcalloc((size_t)n_out + 1, sizeof *mag);
        bn_ref(c, a, b, ref, mag);
        free(mag);
    } else if (c->op == PDNN__OP_CONV2D_FWD) {
        conv_ref(c, a, b, ref, NULL);
    } else if (c->op == PDNN__OP_CONV2D_BWD_DATA || c->op == PDNN__OP_CONV2D_BWD_FILTER) {
        double *mag = parity_xcalloc((size_t)n_out + 1, sizeof *mag);
        conv_grad_ref(c, a, b, ref, mag);
        free(mag);
    } else if (c->op == PDNN__OP_CONV2D_BWD_BIAS) {
        double *mag = parity_xcalloc((size_t)n_out + 1, sizeof *mag);
        conv_bwd_bias_ref(c, a, ref, mag);
        free(mag);
    } else if (c->op == PDNN__OP_POOL2D_FWD || c->op == PDNN__OP_POOL2D_BWD) {
        pool_ref(c, a, b, ref);
    } else if (c->op == PDNN__OP_BINARY) {
        /* rank 3 or 1, broadcast where a dim is 1 */
        const int64_t *ad = c->a.dims, *bd = c->b.dims;
        int64_t yd[3];
        for (int k = 0; k < 3; k++)
            yd[k] = ad[k] > bd[k] ? ad[k] : bd[k];
        for (int64_t i = 0; i < yd[0]; i++)
            for (int64_t j = 0; j < yd[1]; j++)
                for (int64_t k = 0; k < yd[2]; k++) {
                    const double x = a[((ad[0] > 1 ? i : 0) * ad[1] + (ad[1] > 1 ? j : 0)) * ad[2] + (ad[2] > 1 ? k : 0)];
                    const double y = b[((bd[0] > 1 ? i : 0) * bd[1] + (bd[1] > 1 ? j : 0)) * bd[2] + (bd[2] > 1 ? k : 0)];
                    ref[(i * yd[1] + j) * yd[2] + k] = c->arg == PDNN_BINARY_MUL ? x * y
                                                       : c->arg == PDNN_BINARY_SUB ? x - y
                                                                                   : x / y;
                }
    } else {
        for (int64_t i = 0; i < n_out; i++)
            ref[i] = c->op == PDNN__OP_CAST ? a[i] : act_ref(c->arg, a[i]);
    }
    for (int64_t i = 0; i < n_out; i++)
        ref[i] = in_dtype(c->to, ref[i]);
}

static pdnn_tensor *upload(pdnn_device *dev, pdnn_tensor_desc d, pdnn_dtype t, const float *v)
{
    d.dtype = t;
    const size_t n = (size_t)pdnn_tensor_desc_elements(&d), es = pdnn__dtype_size(t);
    void *raw = parity_xcalloc(n ? n : 1, es);
    if (v)
        pdnn__from_f32(t, v, raw, n);
    pdnn_tensor *x = parity_make(dev, &d, raw);
    free(raw);
    return x;
}

/* Batch norm's vector bn_vec(which) of c's channels in dtype t. */
static pdnn_tensor *bn_upload(pdnn_device *dev, const prec_case *c, pdnn_dtype t, int which)
{
    const pdnn_tensor_desc vd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {c->a.dims[1], 1, 1, 1}, 1};
    float v[64];
    for (int64_t k = 0; k < c->a.dims[1] && k < 64; k++)
        v[k] = (float)(which == 4 ? 1.0 / sqrt(bn_vec(3, k) + BN_EPS) : bn_vec(which, k));
    return upload(dev, vd, t, v);
}

/* Batch norm's case: y (forward) or dx (backward) into out. */
static pdnn_status run_bn(pdnn_device *dev, const prec_case *c, pdnn_tensor *x, pdnn_tensor *dy, pdnn_tensor *out)
{
    pdnn_tensor *v[5];
    for (int i = 0; i < 5; i++) /* gamma, beta, mean, var, inverse std */
        v[i] = bn_upload(dev, c, c->from, i);
    pdnn_batch_norm_params p;
    pdnn_batch_norm_params_init(&p);
    p.epsilon = (float)BN_EPS;
    p.training = c->op != PDNN__OP_BN_FWD_INFER;
    pdnn_status st = v[0] && v[1] && v[2] && v[3] && v[4] ? PDNN_SUCCESS : PDNN_ERR_OUT_OF_MEMORY;
    if (st == PDNN_SUCCESS)
        st = c->op == PDNN__OP_BN_BWD ? pdnn_batch_norm_backward(&p, x, dy, v[0], v[2], v[4], out, NULL, NULL)
             : c->op == PDNN__OP_BN_FWD_TRAIN ? pdnn_batch_norm_forward(&p, x, v[0], v[1], NULL, NULL, NULL, NULL, out)
                                              : pdnn_batch_norm_forward(&p, x, v[0], v[1], v[2], v[3], NULL, NULL, out);
    for (int i = 0; i < 5; i++)
        pdnn_tensor_release(v[i]);
    return st;
}

/* Runs c on dev: got (widened) the output. */
static pdnn_status run_one(pdnn_device *dev, const prec_case *c, const float *a, const float *b, float *got,
                           int64_t n_out)
{
    const int pool = c->op == PDNN__OP_POOL2D_FWD || c->op == PDNN__OP_POOL2D_BWD;
    const int conv = c->op == PDNN__OP_CONV2D_FWD, bwd_data = c->op == PDNN__OP_CONV2D_BWD_DATA,
              bwd_filter = c->op == PDNN__OP_CONV2D_BWD_FILTER,
              two = conv || bwd_data || bwd_filter || c->op == PDNN__OP_BINARY || c->op == PDNN__OP_POOL2D_BWD ||
                    c->op == PDNN__OP_BN_BWD;
    pdnn_tensor_desc yd = conv                                     ? conv_out(c)
                          : bwd_filter || (pool && c->op == PDNN__OP_POOL2D_FWD) ? c->b
                                                                                 : c->a;
    if (c->op == PDNN__OP_BINARY)
        for (int k = 0; k < 3; k++)
            yd.dims[k] = c->a.dims[k] > c->b.dims[k] ? c->a.dims[k] : c->b.dims[k];
    if (c->op == PDNN__OP_CONV2D_BWD_BIAS) /* db: K */
        yd = (pdnn_tensor_desc){PDNN_FLOAT32, PDNN_LAYOUT_X, {c->a.dims[1], 1, 1, 1}, 1};
    pdnn_tensor *x = upload(dev, bwd_data ? conv_out(c) : c->a, c->from, a); /* backward data: dy */
    pdnn_tensor *y2 = two ? upload(dev, bwd_filter ? conv_out(c) : c->b, c->from, b) : NULL; /* filter: dy */
    pdnn_tensor *y = upload(dev, yd, c->to, NULL), *bias = NULL;
    if (conv) {
        const pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {c->b.dims[0], 1, 1, 1}, 1};
        float bv[64];
        for (int64_t k = 0; k < c->b.dims[0] && k < 64; k++)
            bv[k] = (float)conv_bias(k);
        bias = upload(dev, bd, c->from, bv);
    }
    pdnn_status st = x && y && (y2 || !two) && (bias || !conv) ? PDNN_SUCCESS : PDNN_ERR_OUT_OF_MEMORY;
    pdnn_pool2d_params pp;
    pool_params(c, &pp);
    if (st == PDNN_SUCCESS) {
        switch (c->op) {
        case PDNN__OP_CAST: st = pdnn_cast(x, y); break;
        case PDNN__OP_ACTIVATION: st = pdnn_activation_forward(x, (pdnn_activation)c->arg, 0, 0, y); break;
        case PDNN__OP_BINARY: st = pdnn_binary(x, y2, (pdnn_binary_op)c->arg, y); break;
        case PDNN__OP_POOL2D_FWD: st = pdnn_pool2d_forward(&pp, x, y); break;
        case PDNN__OP_BN_FWD_INFER:
        case PDNN__OP_BN_FWD_TRAIN:
        case PDNN__OP_BN_BWD: st = run_bn(dev, c, x, y2, y); break;
        case PDNN__OP_CONV2D_FWD: {
            pdnn_conv2d_params cp;
            pdnn_conv2d_params_init(&cp);
            cp.pad_top = cp.pad_bottom = cp.pad_left = cp.pad_right = 1;
            cp.groups = c->arg > 1 ? c->arg : 1;
            st = pdnn_conv2d_forward(&cp, x, y2, bias, y);
            break;
        }
        case PDNN__OP_CONV2D_BWD_DATA: {
            pdnn_conv2d_params cp;
            pdnn_conv2d_params_init(&cp);
            cp.pad_top = cp.pad_bottom = cp.pad_left = cp.pad_right = BWD_DIL(c);
            cp.stride_h = cp.stride_w = (int)bwd_stride(c);
            cp.dilation_h = cp.dilation_w = BWD_DIL(c);
            cp.groups = BWD_GROUPS(c);
            st = pdnn_conv2d_backward_data(&cp, x, y2, y);
            break;
        }
        case PDNN__OP_CONV2D_BWD_FILTER: {
            pdnn_conv2d_params cp;
            pdnn_conv2d_params_init(&cp);
            cp.pad_top = cp.pad_bottom = cp.pad_left = cp.pad_right = BWD_DIL(c) * (int)(c->b.dims[2] / 2);
            cp.stride_h = cp.stride_w = (int)bwd_stride(c);
            cp.dilation_h = cp.dilation_w = BWD_DIL(c);
            cp.groups = BWD_GROUPS(c);
            st = pdnn_conv2d_backward_filter(&cp, x, y2, y);
            break;
        }
        case PDNN__OP_CONV2D_BWD_BIAS: st = pdnn_conv2d_backward_bias(x, y); break;
        default: st = pdnn_pool2d_backward(&pp, x, y2, y); break;
        }
    }
    if (st == PDNN_SUCCESS) {
        const size_t es = pdnn__dtype_size(c->to);
        void *raw = parity_xcalloc((size_t)(n_out ? n_out : 1), es);
        st = pdnn_tensor_read(y, raw, (size_t)n_out * es);
        pdnn__to_f32(c->to, raw, got, (size_t)n_out);
        free(raw);
    }
    pdnn_tensor_release(x);
    pdnn_tensor_release(y2);
    pdnn_tensor_release(y);
    pdnn_tensor_release(bias);
    return st;
}

void parity_precision_run(pdnn_device *const *devs, int ndev, int op, const char *set, const char *algo)
{
    for (int ci = 0; ci < N_CASES; ci++) {
        const prec_case *c = &cases[ci];
        if (!selected(c, op, set))
            continue;
        char cname[160];
        snprintf(cname, sizeof cname, "precision %s %s%s%s arg%d n%lld", pdnn__op_name(c->op),
                 pdnn__dtype_name(c->from), c->op == PDNN__OP_CAST ? ">" : "",
                 c->op == PDNN__OP_CAST ? pdnn__dtype_name(c->to) : "", c->arg,
                 (long long)pdnn_tensor_desc_elements(&c->a));
        const pdnn_tensor_desc cy = conv_out(c);
        /* na: the first input's elements (backward data: dy's) */
        const int filter = c->op == PDNN__OP_CONV2D_BWD_FILTER; /* its second input is dy, its output dw */
        const int64_t na = pdnn_tensor_desc_elements(c->op == PDNN__OP_CONV2D_BWD_DATA ? &cy : &c->a),
                      nb = pdnn_tensor_desc_elements(filter ? &cy : &c->b);
        int64_t n_out = c->op == PDNN__OP_POOL2D_FWD        ? nb
                        : c->op == PDNN__OP_CONV2D_FWD      ? pdnn_tensor_desc_elements(&cy)
                        : c->op == PDNN__OP_CONV2D_BWD_DATA ? pdnn_tensor_desc_elements(&c->a)
                        : filter                            ? pdnn_tensor_desc_elements(&c->b)
                        : c->op == PDNN__OP_CONV2D_BWD_BIAS ? c->a.dims[1]
                                                            : na;
        if (c->op == PDNN__OP_BINARY) { /* rank 3 or 1, broadcast where a dim is 1 */
            n_out = 1;
            for (int k = 0; k < 3; k++)
                n_out *= c->a.dims[k] > c->b.dims[k] ? c->a.dims[k] : c->b.dims[k];
        }
        float *a = parity_xcalloc((size_t)na + 1, sizeof(float)), *b = parity_xcalloc((size_t)nb + 1, sizeof(float));
        double *ah = parity_xcalloc((size_t)na + 1, sizeof(double)), *bh = parity_xcalloc((size_t)nb + 1, sizeof(double));
        th_fill(a, na, 4300u + (uint32_t)ci);
        th_fill(b, nb, 4400u + (uint32_t)ci);
        for (int64_t i = 0; i < na; i++) {
            a[i] *= c->op == PDNN__OP_CAST ? (float)(1 << (i % 24)) : 4.0f; /* past float16's range */
            ah[i] = in_dtype(c->from, a[i]);
        }
        for (int64_t i = 0; i < nb; i++) {
            b[i] = c->arg == PDNN_BINARY_DIV ? b[i] + (b[i] < 0 ? -0.5f : 0.5f) : b[i];
            bh[i] = in_dtype(c->from, b[i]);
        }
        double *ref = parity_xcalloc((size_t)n_out + 1, sizeof(double));
        float *got = parity_xcalloc((size_t)n_out + 1, sizeof(float));
        reference(c, ah, bh, ref, n_out);
        /* convolution: each element's sum of |terms|, for the floor */
        double *mag = parity_xcalloc((size_t)n_out + 1, sizeof(double)), *sum = NULL;
        if (c->op == PDNN__OP_CONV2D_FWD) {
            sum = parity_xcalloc((size_t)n_out + 1, sizeof(double));
            conv_ref(c, ah, bh, sum, mag);
        } else if (c->op == PDNN__OP_CONV2D_BWD_DATA || filter) {
            sum = parity_xcalloc((size_t)n_out + 1, sizeof(double));
            conv_grad_ref(c, ah, bh, sum, mag);
        } else if (c->op == PDNN__OP_CONV2D_BWD_BIAS) {
            sum = parity_xcalloc((size_t)n_out + 1, sizeof(double));
            conv_bwd_bias_ref(c, ah, sum, mag);
        } else if (is_bn(c->op)) {
            sum = parity_xcalloc((size_t)n_out + 1, sizeof(double));
            bn_ref(c, ah, bh, sum, mag);
        }
        const double tiny = c->to == F16 ? 0x1p-14 : c->to == BF16 ? 0x1p-126 : 0x1p-126;
        for (int di = 0; di < ndev; di++) {
            const pdnn__algo *const *list = pdnn__algos(devs[di], c->op);
            for (int ai = 0; list && list[ai]; ai++) {
                const pdnn__algo *al = list[ai];
                if (algo && strcasecmp(algo, al->name) != 0)
                    continue;
                pdnn__dispatch_force(c->op, al->name, -1);
                const pdnn_status st = run_one(devs[di], c, a, b, got, n_out);
                pdnn__dispatch_force(c->op, NULL, -1);
                if (st == PDNN_ERR_UNSUPPORTED) {
                    /* An algorithm without a reduced path refuses float16
                     * and bfloat16 alike: one reason, so that one whose
                     * only cases in a table are these (backward data and
                     * filter; their float32 cases are grad mode's) counts
                     * as refusing for a reason, not as a hole. */
                    const char *e = pdnn_last_error();
                    if (strstr(e, " path (it takes float32)"))
                        e = "no float16/bfloat16 path (float32 only)";
                    parity_skip(devs[di], al, cname, e);
                    continue;
                }
                if (st != PDNN_SUCCESS) {
                    parity_fail(devs[di], al, cname, "%s (%s)", pdnn_last_error(), pdnn_status_string(st));
                    continue;
                }
                const int exact = c->op == PDNN__OP_CAST || (c->op == PDNN__OP_POOL2D_FWD && c->arg == PDNN_POOL_MAX);
                const double tol = exact ? 0.0 : pdnn__algo_tol(al, c->to);
                double worst = 0;
                int64_t at = 0;
                for (int64_t i = 0; i < n_out; i++) {
                    const double fl = fmax(tiny, 4.0 * pdnn__algo_tol(al, c->to) * mag[i]);
                    const double d = fabs((double)got[i] - ref[i]), m = fabs(ref[i]) > fl ? fabs(ref[i]) : fl;
                    const double e = isnan(ref[i]) && isnan(got[i]) ? 0.0 : isinf(ref[i]) && got[i] == ref[i] ? 0.0 : d / m;
                    if (!(e <= worst)) {
                        worst = isnan(e) ? INFINITY : e;
                        at = i;
                    }
                }
                if (!(worst <= tol))
                    parity_fail(devs[di], al, cname, "y[%lld] is %.9g, expected %.9g: error %.3g, tolerance %.3g",
                                (long long)at, (double)got[at], ref[at], worst, tol);
                else
                    parity_pass(devs[di], al, cname, worst);
            }
        }
        free(a);
        free(b);
        free(ah);
        free(bh);
        free(ref);
        free(got);
        free(mag);
        free(sum);
    }
    fflush(stdout);
}
