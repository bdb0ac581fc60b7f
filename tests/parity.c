/*
 * The op-parity harness: one table of op cases (conv2d and pool2d
 * forward), each run on every device of the context, by every algorithm
 * its backend registers for the op (src/backend.h) and, for tunable
 * algorithms, under every configuration, and compared with the host
 * reference (/device:CPU:0's direct) by a normalised error. The host's own
 * algorithms are compared with an independent naive loop written here, so
 * the reference is checked too. New algorithms get coverage by being
 * registered: nothing here names one, and each brings its tolerance of
 * the normalised error below (pdnn__algo.tol, see src/backend.h).
 *
 * Modes:
 *   test  (default; `make check` runs it through tests/parity_*.sh)
 *   perf  ms, GFLOP/s (conv) or GB/s (pool) per case, device and
 *         algorithm, and the ratio to direct measured in the same run
 *   grad  the backward ops (conv2d data, filter and bias gradients, pool2d
 *         gradient) on the forward table's shapes, the same way; and the
 *         naive backward loops themselves checked against the naive
 *         forward: the adjoint identity <f(x), dy> = <x, f'(dy)> in double,
 *         and central finite differences of <f(x), dy> on small cases
 *
 * The normalised error of an output element is
 *     |got - ref| / (sum over its reduction of |x * w| + |bias|)
 * for conv2d (for pool2d: the window's largest |x| for max, the sum of |x|
 * over the divisor for averages). A float32 sum of n terms in any order is
 * within (n - 1) eps of that scale of the exact sum, and in practice (terms
 * of random sign) within about eps / sqrt(n) of it; a defect (a wrong tap,
 * a lost channel, a missed tail) is off by a sizeable fraction of the scale.
 * The backward ops' scale is the same sum of |terms| over what flows into
 * each gradient element (|dy * w|, |dy * x|, |dy|, |dy / divisor|).
 * So one bound serves every shape, small or large, and every input
 * magnitude, where an absolute tolerance would be loose for small outputs
 * and tight for large ones.
 *
 * Exit status: 0 all passed; 1 a failure; 2 bad usage; 77 (Automake's
 * SKIP) when the selected backends ran no case at all, e.g. CUDA without a
 * device, so that a suite that checked nothing never reads as PASS.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "core/context.h"
#include "core/half.h"
#include "ops/dispatch.h"
#ifdef PDNN_HAVE_OPENCL
#include "backends/opencl/cl_hooks.h" /* pdnn__opencl_gpu_class_everywhere */
#endif
#include "helpers.h"
#include "parity.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { EXIT_USAGE = 2, EXIT_SKIP = 77 };

/* --dtype (issue 43): the storage dtype of conv2d forward's tensors (x, w,
 * bias, z, y); float32 unless given. The inputs are rounded to it before
 * the reference sees them, so the reference is the documented contract's
 * (widen, compute, round once) before its last rounding. */
static pdnn_dtype opt_dtype = PDNN_FLOAT32;
static int reduced_dtype(void) { return opt_dtype == PDNN_FLOAT16 || opt_dtype == PDNN_BFLOAT16; }

/* v[0..n) as opt_dtype holds them (nearest, ties to even). */
static void round_to_dtype(float *v, int64_t n)
{
    if (!reduced_dtype() || !v)
        return;
    for (int64_t i = 0; i < n; i++)
        v[i] = opt_dtype == PDNN_FLOAT16 ? pdnn__f16_to_f32(pdnn__f32_to_f16(v[i]))
                                         : pdnn__bf16_to_f32(pdnn__f32_to_bf16(v[i]));
}

/* ---- small utilities ------------------------------------------------------ */

static int is_conv_op(pdnn__op op) { return pdnn__op_is_conv(op); }
static int is_backward(pdnn__op op) { return op != PDNN__OP_CONV2D_FWD && op != PDNN__OP_POOL2D_FWD; }

/* Zeroed, so that nothing is ever read uninitialised even where a loop
 * below leaves an element unwritten. */
static void *xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "parity: out of host memory (%zu bytes)\n", n);
        exit(EXIT_USAGE);
    }
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "parity: out of host memory (%zu bytes)\n", n);
        exit(EXIT_USAGE);
    }
    return q;
}

static char *xstrdup(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

/* th_fill's values scaled to [-amp, amp). */
static void fill(float *v, int64_t n, uint32_t seed, float amp)
{
    th_fill(v, n, seed);
    for (int64_t i = 0; amp != 1.0f && i < n; i++)
        v[i] *= amp;
}

/* ---- the table of op cases ----------------------------------------------- */

typedef struct conv_case {
    int64_t n, c, h, w, k, r, s;
    int sh, sw, dh, dw, pt, pb, pl, pr, groups, bias, relu;
    pdnn_layout xl, wl, yl;
    int residual; /* forward: a z (y's layout) added before the relu */
    float cap;    /* forward with relu: its upper bound (relu_cap; 0: none) */
} conv_case;

typedef struct pool_case {
    int64_t n, c, h, w;
    pdnn_pool_mode mode;
    int wh, ww, sh, sw, pt, pb, pl, pr, ceil;
    pdnn_layout xl, yl;
} pool_case;

/* batch normalization: x {N,C,H,W} in layout, values + offset */
typedef struct bn_case {
    int64_t n, c, h, w;
    pdnn_layout layout;
    float offset;
    int running; /* training forward: running statistics given (and updated) */
} bn_case;
#define BN_EPS 1e-5
#define BN_MOMENTUM 0.1

typedef struct op_case {
    pdnn__op op;
    const char *set;  /* the grid it belongs to (--set) */
    int all_configs;  /* also run under every configuration of tunable
                         algorithms (the others run the algorithm's pick) */
    uint32_t seed;
    float amp[3];     /* amplitude of the input, filter and bias values */
    int nans;         /* pool2d: sparse NaNs in the input */
    int ties;         /* pool2d: inputs from 3 levels, so windows hold ties */
    union {
        conv_case conv;
        pool_case pool;
        bn_case bn;
    } u;
} op_case;

static op_case *cases;
static int n_cases, cap_cases;

static op_case *add_case(pdnn__op op, const char *set, int all_configs, uint32_t seed)
{
    if (n_cases == cap_cases) {
        cap_cases = cap_cases ? 2 * cap_cases : 256;
        cases = xrealloc(cases, (size_t)cap_cases * sizeof *cases);
    }
    op_case *c = &cases[n_cases++];
    memset(c, 0, sizeof *c);
    c->op = op;
    c->set = set;
    c->all_configs = all_configs;
    c->seed = seed;
    c->amp[0] = c->amp[1] = c->amp[2] = 1.0f;
    return c;
}

static void add_conv(const char *set, int all_configs, const conv_case *k, uint32_t seed)
{
    add_case(PDNN__OP_CONV2D_FWD, set, all_configs, seed)->u.conv = *k;
}

static op_case *add_pool(const char *set, const pool_case *k, uint32_t seed, int nans)
{
    op_case *c = add_case(PDNN__OP_POOL2D_FWD, set, 1, seed);
    c->u.pool = *k;
    c->nans = nans;
    return c;
}

static const pdnn_layout act_layouts[] = {PDNN_NCHW, PDNN_NHWC};
/* The relu cap of the cases that have one: below many outputs' values. */
#define RELU_CAP 0.25f
static const pdnn_layout filt_layouts[] = {PDNN_OIHW, PDNN_OHWI, PDNN_HWIO};

/* Each shape in all 12 activation-in x filter x activation-out layouts. */
static void add_conv_all_layouts(const char *set, int all_configs, const conv_case *shapes, size_t n, uint32_t seed)
{
    for (size_t si = 0; si < n; si++)
        for (int a = 0; a < 2; a++)
            for (int f = 0; f < 3; f++)
                for (int o = 0; o < 2; o++) {
                    conv_case k = shapes[si];
                    k.xl = act_layouts[a];
                    k.wl = filt_layouts[f];
                    k.yl = act_layouts[o];
                    /* Half of each relu row's layouts cap the relu (ReLU6's
                     * form, at a bound many outputs pass). */
                    k.cap = k.relu && (a + f + o) % 2 ? RELU_CAP : 0.0f;
                    add_conv(set, all_configs, &k, seed + (uint32_t)(si * 100 + (size_t)a * 10 + (size_t)f));
                }
}

/* xorshift32 for the sampled grids: a fixed sequence per seed. */
static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* A seeded sample of the whole conv grid (batch, channels, image size,
 * filter, stride, dilation, per-side padding, groups incl. depthwise,
 * layouts, bias, ReLU), bounded in cost. three_by_three draws only the
 * shapes Winograd-style algorithms take (3x3, stride 1, dilation 1,
 * ungrouped), which are rare in the full grid. */
static void add_conv_sampled(const char *set, int three_by_three, int count, uint32_t seed)
{
    static const int64_t batches[] = {1, 2, 17};
    static const int64_t chans[] = {1, 3, 4, 17, 64};
    static const int64_t sizes[] = {1, 2, 5, 8, 13, 28, 56};
    static const int64_t kernels[] = {1, 3, 5, 7};
    uint32_t s = 12345;
    int done = 0;
    for (int tries = 0; done < count && tries < 100000; tries++) {
        conv_case k;
        memset(&k, 0, sizeof k);
        k.n = batches[next_rand(&s) % 3];
        k.c = chans[next_rand(&s) % 5];
        k.h = sizes[next_rand(&s) % 7];
        k.w = next_rand(&s) % 2 ? k.h : sizes[next_rand(&s) % 7];
        k.r = kernels[next_rand(&s) % 4];
        k.s = next_rand(&s) % 3 ? k.r : kernels[next_rand(&s) % 4];
        k.sh = 1 + (int)(next_rand(&s) % 3);
        k.sw = next_rand(&s) % 2 ? k.sh : 1 + (int)(next_rand(&s) % 3);
        k.dh = 1 + (int)(next_rand(&s) % 2);
        k.dw = 1 + (int)(next_rand(&s) % 2);
        k.pt = (int)(next_rand(&s) % (uint32_t)k.r);
        k.pb = (int)(next_rand(&s) % (uint32_t)k.r);
        k.pl = (int)(next_rand(&s) % (uint32_t)k.s);
        k.pr = (int)(next_rand(&s) % (uint32_t)k.s);
        const uint32_t g = next_rand(&s) % 3;
        k.groups = g == 0 ? 1 : g == 1 ? (k.c % 2 == 0 ? 2 : 1) : (int)k.c;
        k.k = k.groups * (int64_t)(1 + next_rand(&s) % 3) * (k.groups == 1 ? 5 : 1);
        k.bias = (int)(next_rand(&s) % 2);
        k.relu = (int)(next_rand(&s) % 2);
        k.xl = act_layouts[next_rand(&s) % 2];
        k.wl = filt_layouts[next_rand(&s) % 3];
        k.yl = act_layouts[next_rand(&s) % 2];
        if (three_by_three) {
            k.r = k.s = 3;
            k.sh = k.sw = k.dh = k.dw = 1;
            k.groups = 1;
            k.k = 1 + (int64_t)(next_rand(&s) % 20);
            k.pt = (int)(next_rand(&s) % 3);
            k.pb = (int)(next_rand(&s) % 3);
            k.pl = (int)(next_rand(&s) % 3);
            k.pr = (int)(next_rand(&s) % 3);
        }
        if ((k.r - 1) * k.dh + 1 > k.h + k.pt + k.pb || (k.s - 1) * k.dw + 1 > k.w + k.pl + k.pr)
            continue;
        const int64_t oh = (k.h + k.pt + k.pb - (k.r - 1) * k.dh - 1) / k.sh + 1;
        const int64_t ow = (k.w + k.pl + k.pr - (k.s - 1) * k.dw - 1) / k.sw + 1;
        if (k.n * k.k * oh * ow * (k.c / k.groups) * k.r * k.s > 3000000) /* cheap under the sanitizers */
            continue;
        /* Every third sampled case adds a residual z (a hash of the index,
         * not a draw: the draws, and so the shapes, stay as they were). */
        k.residual = (done * 2654435761u >> 9) % 3 == 0;
        k.cap = k.relu && (done * 2246822519u >> 11) % 2 ? RELU_CAP : 0.0f; /* half the relus, capped */
        add_conv(set, 0, &k, seed + (uint32_t)done);
        done++;
    }
}

static void build_conv_cases(void)
{
    /* Every activation/filter/output layout combination on shapes that
     * exercise groups, depthwise, stride, dilation and asymmetric padding. */
    static const conv_case layouts[] = {
        /* n  c   h   w   k  r  s  sh sw dh dw pt pb pl pr g  bias relu */
        {2, 6, 9, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 5, 7, 7, 10, 3, 3, 2, 2, 2, 2, 2, 1, 0, 2, 5, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {3, 17, 6, 5, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {17, 7, 6, 11, 7, 3, 3, 1, 2, 1, 1, 1, 0, 1, 1, 7, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 5, 7, 6, 9, 3, 3, 1, 1, 1, 1, 1, 2, 0, 1, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
    };
    add_conv_all_layouts("layouts", 1, layouts, sizeof layouts / sizeof layouts[0], 0);

    /* The odd sizes: 1x1 images, channels not a multiple of 4, batch 1 and
     * 17, filters 1/3/5/7, the largest spatial size, depthwise with
     * multipliers and vector-width rows and channel blocks. */
    static const conv_case edge[] = {
        {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {17, 3, 1, 1, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC, 0, 0},
        {1, 3, 1, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, PDNN_NHWC, PDNN_OHWI, PDNN_NCHW, 0, 0},
        {17, 4, 8, 8, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PDNN_NHWC, PDNN_OHWI, PDNN_NHWC, 0, 0},
        {17, 17, 5, 6, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 3, 23, 23, 64, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1, 1, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC, 0, 0},
        {1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 64, 56, 56, 64, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, PDNN_NHWC, PDNN_OHWI, PDNN_NHWC, 0, 0},
        {1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 64, 1, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC, 0, 0},
        {1, 17, 9, 9, 34, 3, 3, 3, 3, 2, 2, 2, 0, 1, 2, 17, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NHWC, 0, 0},
        {2, 4, 4, 4, 4, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3, 2, 1, 0, PDNN_NCHW, PDNN_OHWI, PDNN_NCHW, 0, 0},
        {1, 3, 2, 9, 2, 1, 5, 1, 3, 1, 2, 0, 0, 4, 3, 1, 1, 0, PDNN_NHWC, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {17, 3, 1, 1, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 1, PDNN_NHWC, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 5, 20, 37, 5, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 5, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 8, 30, 45, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 8, 0, 1, PDNN_NCHW, PDNN_HWIO, PDNN_NCHW, 0, 0},
        {2, 20, 11, 13, 20, 3, 3, 2, 1, 1, 2, 1, 1, 2, 2, 20, 1, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC, 0, 0},
        /* grouped with 16 and 32 output channels per group (tiled's and the
         * GEMMs' channel blocks), and a multiplier-2 depthwise with a
         * one-sided pad: the guard after the output sees partial tiles */
        {2, 32, 9, 11, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0, 1, PDNN_NHWC, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 64, 9, 11, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, 1, 0, PDNN_NHWC, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {3, 6, 10, 19, 12, 3, 3, 1, 2, 1, 1, 1, 1, 1, 0, 6, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {3, 5, 9, 13, 20, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC, 0, 0},
        /* backward data by phases (forward_gemm): stride and dilation
         * sharing a factor, a pad wider than the filter reaches, and a
         * stride larger than the filter (phases no tap reaches: zeros) */
        {2, 6, 11, 12, 8, 3, 3, 2, 2, 2, 2, 2, 1, 1, 2, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NHWC, 0, 0},
        {2, 5, 7, 8, 6, 1, 1, 2, 3, 1, 1, 1, 2, 0, 1, 1, 0, 0, PDNN_NHWC, PDNN_OHWI, PDNN_NCHW, 0, 0},
        {1, 4, 9, 10, 5, 3, 3, 4, 4, 1, 1, 1, 0, 0, 1, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 4, 8, 8, 4, 2, 2, 2, 2, 3, 3, 2, 1, 3, 0, 1, 0, 0, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC, 0, 0},
    };
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        conv_case k = edge[i];
        k.cap = k.relu && i % 2 ? RELU_CAP : 0.0f;
        add_conv("edge", 1, &k, (uint32_t)(1000 + i));
    }

    add_conv_sampled("sampled", 0, 80, 5000);
    add_conv_sampled("sampled_3x3", 1, 40, 6000);

    /* 1x1 convolutions for the GEMMs' tiles and tails: K and C of 1, 3, 5,
     * 17 and 33, 1x1 images, batch 1 and 17, pixel counts off every tile,
     * stride 2 with unread bottom/right padding, groups, images large
     * enough for an NCHW rows kernel, every layout; the last column marks
     * the rows that also add a residual z. */
    static const conv_case gemm_1x1[] = {
        {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {17, 3, 1, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
        {1, 33, 7, 7, 17, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {17, 5, 3, 5, 33, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
        {2, 17, 13, 11, 64, 1, 1, 1, 1, 3, 2, 0, 0, 0, 0, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {3, 64, 9, 9, 3, 1, 1, 2, 2, 1, 1, 0, 1, 0, 0, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 32, 6, 7, 64, 1, 1, 2, 3, 1, 1, 0, 0, 0, 0, 2, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 12, 5, 5, 12, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 96, 14, 14, 48, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
        {2, 33, 29, 31, 17, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
    };
    add_conv_all_layouts("gemm_1x1", 1, gemm_1x1, sizeof gemm_1x1 / sizeof gemm_1x1[0], 7000);

    /* Implicit GEMM's tiles, masks and tails: odd C and K, 1x1 images,
     * pixel tiles spanning images, padding beyond the filter's reach,
     * dilation 2, stride 3, 1xN and Nx1 filters, groups of 16 and 32
     * output channels, ResNet-50's conv1 and a strided 3x3. */
    static const conv_case implicit_gemm[] = {
        {1, 1, 1, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {17, 3, 1, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 33, 7, 7, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {17, 5, 3, 5, 33, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
        {2, 3, 4, 5, 7, 2, 2, 1, 1, 1, 1, 4, 4, 5, 3, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 17, 13, 11, 19, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {3, 8, 11, 10, 9, 3, 3, 3, 3, 1, 1, 1, 0, 0, 2, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 6, 9, 9, 20, 1, 5, 1, 2, 1, 2, 0, 0, 3, 1, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 32, 6, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 12, 8, 8, 48, 3, 1, 2, 1, 1, 1, 1, 0, 0, 0, 3, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 3, 23, 23, 64, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 40, 10, 10, 36, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
    };
    add_conv_all_layouts("implicit_gemm", 1, implicit_gemm, sizeof implicit_gemm / sizeof implicit_gemm[0], 9000);

    /* wg_gemm's work-group tiles (64 x 64 by default, 16 to 128 in its
     * configurations): K across two channel tiles (65), reductions off
     * every step length (E = 27, 297, ...), pixel tiles spanning images,
     * batch 17, 1x1 images, dilation, stride 3 with one-sided padding,
     * groups of 32 and 16 channels, a 7x7/2 of 3 channels, reductions
     * split across work-groups where the output has few tiles (c128 on
     * 4x4, and per group), and a 1x1 with a residual. */
    static const conv_case wg_gemm[] = {
        {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {17, 3, 5, 5, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 33, 7, 7, 65, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 17, 13, 11, 19, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
        {3, 8, 11, 10, 9, 3, 3, 3, 3, 1, 1, 1, 0, 0, 2, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 6, 9, 9, 20, 1, 5, 1, 2, 1, 2, 0, 0, 3, 1, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 32, 6, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 12, 8, 8, 48, 3, 1, 2, 1, 1, 1, 1, 0, 0, 0, 3, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 3, 23, 23, 64, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 128, 4, 4, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
        {1, 64, 3, 3, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 70, 5, 5, 33, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
        {3, 5, 9, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
    };
    add_conv_all_layouts("wg_gemm", 1, wg_gemm, sizeof wg_gemm / sizeof wg_gemm[0], 9500);

    /* wg_gemm under a simulator (tests/oclgrind_wg_gemm.sh, which runs it
     * under Oclgrind with GPU semantics: races, barriers, bounds): one
     * work-group's worth of output each, in both activation layouts with
     * the layout's own filter (HWIO: read in place), every
     * configuration: tails of K, pixels and the reduction; a reduction
     * split in two (c40 on 3x3: 23 steps, one tile); groups with a
     * residual and a capped relu; a reduction of 576 (c64 on 3x3, two
     * parts of 288) that runs through two or more chunks of the staged
     * table in every configuration. */
    static const conv_case wg_sim[] = {
        {2, 5, 5, 4, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 5, 5, 4, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC, 0, 0},
        {1, 40, 3, 3, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 40, 3, 3, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, PDNN_NHWC, PDNN_OHWI, PDNN_NHWC, 0, 0},
        {1, 8, 3, 3, 6, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 1, 1, PDNN_NHWC, PDNN_OIHW, PDNN_NCHW, 1, RELU_CAP},
        {1, 64, 3, 3, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
    };
    for (size_t i = 0; i < sizeof wg_sim / sizeof wg_sim[0]; i++)
        add_conv("wg_gemm_sim", 1, &wg_sim[i], 9700 + (uint32_t)i);
    /* sim_1x1, also for Oclgrind (tests/oclgrind_kernels.sh): 1x1 filters
     * at stride 1 on NCHW images, one of 28x29 pixels (gemm_1x1's row
     * kernel from 784); their filter gradients take bwd_filter_gemm_nt. */
    static const conv_case sim_1x1[] = {
        {2, 5, 3, 5, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 5, 28, 29, 6, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        /* the rows kernel over an HWIO filter: its K x C copy in a reduced dtype */
        {1, 5, 28, 29, 6, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, PDNN_NCHW, PDNN_HWIO, PDNN_NCHW, 0, 0},
    };
    for (size_t i = 0; i < sizeof sim_1x1 / sizeof sim_1x1[0]; i++)
        add_conv("sim_1x1", 0, &sim_1x1[i], 9750 + (uint32_t)i);

    /* Images of 1.5 MiB and more, which implicit_gemm copies
     * channels-last into its workspace on CPUs where x is not
     * (cl_implicit_gemm.c, ig_relayout): 3 channels at stride 2, groups of
     * 16 with dilation and one-sided padding, a 5x3 filter at stride 3
     * with a residual, batch 2. Small K and strides keep them cheap. */
    static const conv_case ig_relayout[] = {
        {1, 3, 400, 330, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 32, 112, 112, 32, 3, 3, 2, 2, 2, 2, 2, 1, 2, 1, 2, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 128, 56, 56, 16, 5, 3, 3, 3, 1, 1, 2, 2, 1, 1, 1, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
    };
    add_conv_all_layouts("implicit_gemm_relayout", 1, ig_relayout, sizeof ig_relayout / sizeof ig_relayout[0], 9200);

    /* The depthwise kernels' paths: NHWC blocks whose taps all lie in the
     * image, 16-channel vectors with a tail (K 24) and a multiplier, NCHW
     * row chunks inside, at the borders (masked loads reaching into the
     * next row) and at the ends of x, stride 2 and dilation 2 on wide
     * rows, and filters wider than 8 (whose width is not built in); and
     * NCHW's blocks of rows: a 5x3 filter with unequal top and bottom
     * padding on rows that leave a tail after the last whole block, rows
     * whose every filter row lies in the padding (pad 3 around a 3x3),
     * and a 7x7 filter with a vertical stride of 2 only. */
    static const conv_case depthwise[] = {
        {1, 8, 61, 50, 8, 5, 3, 1, 1, 1, 1, 2, 0, 1, 1, 8, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 8, 6, 20, 8, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3, 8, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 12, 33, 47, 12, 7, 7, 2, 1, 1, 1, 3, 3, 3, 3, 12, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 32, 20, 37, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 24, 23, 40, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 24, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 24, 12, 30, 48, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 24, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
        {1, 16, 30, 30, 16, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 16, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {3, 16, 15, 64, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 16, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 16, 9, 40, 16, 3, 9, 1, 1, 1, 1, 1, 1, 4, 4, 16, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 8, 5, 33, 8, 1, 11, 1, 2, 1, 2, 0, 0, 5, 3, 8, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        /* dw_plane (stride 1, output as large as the input, NCHW planes
         * contiguous): 7x7 planes whose chunks span rows, a multiplier,
         * "same" padding all on one side, dilation 2, a 2x5 filter, 1x1
         * images in a batch of 17 (loads past both ends of x) and a 1x1
         * filter. */
        {1, 24, 7, 7, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 24, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 8, 14, 14, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
        {1, 5, 9, 13, 5, 3, 3, 1, 1, 1, 1, 0, 2, 2, 0, 5, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {3, 6, 10, 11, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 6, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {1, 16, 6, 17, 16, 2, 5, 1, 1, 1, 1, 1, 0, 2, 2, 16, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {17, 4, 1, 1, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 3, 5, 5, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
    };
    add_conv_all_layouts("depthwise", 1, depthwise, sizeof depthwise / sizeof depthwise[0], 9500);
    /* depthwise_wg (GPU-class; small enough for Oclgrind, which runs the
     * set in tests/oclgrind_kernels.sh): 1x1 images with C 3 at batch 1
     * and 17, C 17 with a residual and a capped relu, stride 2 with a
     * multiplier of 2 and one-sided padding, dilation 2, batch 17 at
     * stride 2, channel blocks of 32 with a tail (K 40, 66) and a
     * multiplier of 3 whose blocks share an input channel, NCHW tiles
     * with column and row tails (20x37), a 3x5 filter with unequal
     * strides and dilations; mixed layouts. */
    static const conv_case dw_wg[] = {
        {1, 3, 1, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {17, 3, 1, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC, 1, RELU_CAP},
        {2, 17, 9, 11, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 17, 1, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC, 1, RELU_CAP},
        {2, 17, 9, 11, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 17, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, RELU_CAP},
        {2, 17, 9, 11, 34, 3, 3, 2, 2, 1, 1, 1, 0, 1, 1, 17, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 0, 0},
        {2, 17, 9, 11, 34, 3, 3, 2, 2, 1, 1, 1, 0, 1, 1, 17, 1, 0, PDNN_NHWC, PDNN_OHWI, PDNN_NHWC, 0, 0},
        {1, 6, 12, 13, 12, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 6, 0, 1, PDNN_NHWC, PDNN_OHWI, PDNN_NCHW, 0, 0},
        {1, 6, 12, 13, 12, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 6, 0, 1, PDNN_NCHW, PDNN_HWIO, PDNN_NHWC, 0, 0},
        {17, 4, 5, 6, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4, 1, 1, PDNN_NHWC, PDNN_OIHW, PDNN_NHWC, 1, 0},
        {17, 4, 5, 6, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, 0},
        {1, 40, 7, 7, 40, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 40, 1, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC, 0, RELU_CAP},
        {1, 33, 4, 5, 66, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 33, 1, 0, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC, 0, 0},
        {1, 11, 3, 4, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 11, 1, 1, PDNN_NHWC, PDNN_OHWI, PDNN_NCHW, 0, 0},
        {1, 5, 20, 37, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW, 1, RELU_CAP},
        {1, 3, 10, 9, 6, 3, 5, 2, 1, 1, 2, 0, 2, 3, 1, 3, 0, 0, PDNN_NCHW, PDNN_HWIO, PDNN_NHWC, 0, 0},
        {1, 3, 10, 9, 6, 3, 5, 2, 1, 1, 2, 0, 2, 3, 1, 3, 0, 0, PDNN_NHWC, PDNN_OIHW, PDNN_NCHW, 0, 0},
    };
    for (size_t i = 0; i < sizeof dw_wg / sizeof dw_wg[0]; i++)
        add_conv("depthwise_wg", 1, &dw_wg[i], 9800 + (uint32_t)i);

    /* Large values on 3x3 filters (inputs up to 1000, filters up to 50,
     * bias up to 1e4), odd sizes (1x1, 2x3, 9x11 images), C 3, K 5, batch
     * 17, padding 0 to 2: where Winograd's transforms amplify rounding. */
    static const int64_t sizes[][2] = {{1, 1}, {2, 3}, {9, 11}};
    static const pdnn_layout lay[][3] = {
        {PDNN_NCHW, PDNN_OIHW, PDNN_NCHW}, {PDNN_NHWC, PDNN_HWIO, PDNN_NHWC}, {PDNN_NHWC, PDNN_OHWI, PDNN_NCHW}};
    for (int si = 0; si < 3; si++)
        for (int pad = 0; pad <= 2; pad++)
            for (int li = 0; li < 3; li++) {
                conv_case k = {17, 3, sizes[si][0], sizes[si][1], 5, 3, 3, 1, 1, 1, 1, pad, pad, pad, pad, 1, 1,
                               li != 1, lay[li][0], lay[li][1], lay[li][2], li == 2, 0};
                if (k.h + 2 * pad < 3 || k.w + 2 * pad < 3)
                    continue; /* the filter does not fit */
                op_case *c = add_case(PDNN__OP_CONV2D_FWD, "large_values", 1, (uint32_t)(40 + si * 10 + pad));
                c->u.conv = k;
                c->amp[0] = 1000.0f;
                c->amp[1] = 50.0f;
                c->amp[2] = 1e4f;
            }
}

static void build_pool_cases(void)
{
    static const pdnn_layout L[] = {PDNN_NCHW, PDNN_NHWC};
    /* Modes, layouts and edges: 1x1 images, batch 17, the stem's 3x3/2 on
     * 112x112, asymmetric padding, ceil mode. */
    static const pool_case edges[] = {
        {1, 1, 1, 1, PDNN_POOL_MAX, 1, 1, 1, 1, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {17, 3, 7, 7, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {2, 17, 9, 6, PDNN_POOL_MAX, 3, 2, 2, 3, 2, 0, 1, 1, 1, PDNN_NCHW, PDNN_NCHW},
        {1, 64, 112, 112, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {3, 5, 8, 8, PDNN_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 4, 10, 11, PDNN_POOL_MAX, 5, 4, 3, 1, 2, 4, 0, 3, 1, PDNN_NCHW, PDNN_NCHW},
        {17, 1, 2, 2, PDNN_POOL_MAX, 2, 2, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
    };
    /* Row kernels' branches: rows narrower than a vector segment, widths off
     * the segment grid, segments crossing either border or wholly outside,
     * the widest windows strides 1 and 2 hold and one wider, NHWC channel
     * counts mixing vector and scalar groups. */
    static const pool_case rows[] = {
        {2, 3, 5, 7, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 5, 9, 37, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 2, 1, 2, 1, PDNN_NCHW, PDNN_NCHW},
        {17, 3, 6, 19, PDNN_POOL_MAX, 2, 3, 1, 1, 1, 0, 2, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 4, 50, PDNN_POOL_MAX, 2, 9, 2, 1, 0, 1, 4, 4, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 4, 70, PDNN_POOL_MAX, 1, 17, 1, 2, 0, 0, 8, 8, 1, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 4, 70, PDNN_POOL_MAX, 1, 18, 1, 2, 0, 0, 9, 9, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 4, 40, PDNN_POOL_MAX, 2, 10, 2, 1, 1, 1, 5, 5, 0, PDNN_NCHW, PDNN_NCHW},
        {2, 12, 7, 9, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {3, 24, 5, 5, PDNN_POOL_MAX, 2, 2, 1, 1, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_NCHW},
        {1, 35, 6, 6, PDNN_POOL_MAX, 3, 2, 2, 3, 2, 1, 1, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 3, 16, PDNN_POOL_MAX, 2, 3, 1, 1, 0, 1, 0, 2, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 3, 32, PDNN_POOL_MAX, 2, 3, 1, 2, 0, 1, 0, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {17, 4, 1, 1, PDNN_POOL_MAX, 1, 1, 1, 1, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {5, 17, 1, 1, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
    };
    /* OpenCL's plane kernels (NCHW): flat (stride 1, the output the
     * input's size) on planes of fewer than 16 outputs, a whole vector,
     * a tail, 1x1 and one-column images, asymmetric padding, windows 1 to
     * 5 wide; global (the window the whole image) on planes shorter than a
     * vector, exactly one, and with a tail. */
    static const pool_case planes[] = {
        {1, 3, 14, 14, PDNN_POOL_MAX, 3, 3, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {2, 5, 7, 7, PDNN_POOL_MAX, 3, 3, 1, 1, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_NCHW},
        {17, 3, 1, 1, PDNN_POOL_MAX, 3, 3, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 4, 5, 17, PDNN_POOL_MAX, 5, 5, 1, 1, 2, 2, 2, 2, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 4, 16, PDNN_POOL_MAX, 3, 3, 1, 1, 0, 2, 2, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {2, 3, 6, 9, PDNN_POOL_MAX, 1, 3, 1, 1, 0, 0, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 17, 28, 28, PDNN_POOL_MAX, 3, 3, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {3, 2, 3, 5, PDNN_POOL_MAX, 2, 2, 1, 1, 0, 1, 1, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 1, 33, 1, PDNN_POOL_MAX, 3, 1, 1, 1, 1, 1, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 10, 13, 13, PDNN_POOL_MAX, 13, 13, 1, 1, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {17, 3, 7, 7, PDNN_POOL_MAX, 7, 7, 2, 2, 0, 0, 0, 0, 1, PDNN_NCHW, PDNN_NCHW},
        {2, 5, 1, 1, PDNN_POOL_MAX, 1, 1, 1, 1, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 3, 17, 3, PDNN_POOL_MAX, 17, 3, 1, 1, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {2, 4, 4, 4, PDNN_POOL_MAX, 4, 4, 1, 1, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 5, 3, PDNN_POOL_MAX, 5, 3, 1, 1, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
    };
    const struct {
        const char *set;
        const pool_case *shapes;
        size_t n;
        uint32_t seed;
    } grids[] = {{"pool_edges", edges, sizeof edges / sizeof edges[0], 0},
                 {"pool_rows", rows, sizeof rows / sizeof rows[0], 500},
                 {"pool_planes", planes, sizeof planes / sizeof planes[0], 700}};
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++)
        for (size_t i = 0; i < grids[g].n; i++)
            for (int m = 0; m < 3; m++)
                for (int a = 0; a < 2; a++)
                    for (int b = 0; b < 2; b++) {
                        pool_case k = grids[g].shapes[i];
                        k.mode = (pdnn_pool_mode)m;
                        k.xl = L[a];
                        k.yl = L[b];
                        add_pool(grids[g].set, &k, grids[g].seed + (uint32_t)(i * 10 + (size_t)m), 0);
                    }

    /* sim_pool, for Oclgrind: windows that do not overlap (stride 3 over
     * 3x3, a tail column), in each mode and layout pair; their gradients
     * take pool2d_bwd_window. */
    for (int m = 0; m < 3; m++)
        for (int a = 0; a < 2; a++) {
            pool_case k = {2, 3, 7, 10, (pdnn_pool_mode)m, 3, 3, 3, 3, 0, 0, 0, 0, 0, L[a], L[1 - a]};
            add_pool("sim_pool", &k, 950 + (uint32_t)(m * 2 + a), 0);
        }
    /* and 2x2/2 averages in one layout (pool2d_bwd_2x2's and _nhwc's
     * average: 9 windows a row, 11 channels, past a vector). */
    for (int m = 1; m < 3; m++)
        for (int a = 0; a < 2; a++) {
            pool_case k = {2, 11, 5, 19, (pdnn_pool_mode)m, 2, 2, 2, 2, 0, 0, 0, 0, 0, L[a], L[a]};
            add_pool("sim_pool", &k, 960 + (uint32_t)(m * 2 + a), 0);
        }

    /* A seeded sample of the whole grid. */
    static const int64_t batches[] = {1, 2, 17};
    static const int64_t chans[] = {1, 3, 4, 17, 64};
    static const int64_t sizes[] = {1, 2, 5, 8, 13, 28, 56};
    uint32_t s = 777;
    int done = 0;
    for (int tries = 0; done < 60 && tries < 100000; tries++) {
        pool_case k;
        memset(&k, 0, sizeof k);
        k.n = batches[next_rand(&s) % 3];
        k.c = chans[next_rand(&s) % 5];
        k.h = sizes[next_rand(&s) % 7];
        k.w = next_rand(&s) % 2 ? k.h : sizes[next_rand(&s) % 7];
        k.mode = (pdnn_pool_mode)(next_rand(&s) % 3);
        k.wh = 1 + (int)(next_rand(&s) % 4);
        k.ww = next_rand(&s) % 2 ? k.wh : 1 + (int)(next_rand(&s) % 4);
        k.sh = 1 + (int)(next_rand(&s) % 3);
        k.sw = 1 + (int)(next_rand(&s) % 3);
        k.pt = (int)(next_rand(&s) % (uint32_t)k.wh);
        k.pb = (int)(next_rand(&s) % (uint32_t)k.wh);
        k.pl = (int)(next_rand(&s) % (uint32_t)k.ww);
        k.pr = (int)(next_rand(&s) % (uint32_t)k.ww);
        k.ceil = (int)(next_rand(&s) % 2);
        k.xl = next_rand(&s) % 2 ? PDNN_NHWC : PDNN_NCHW;
        k.yl = next_rand(&s) % 2 ? PDNN_NHWC : PDNN_NCHW;
        if (k.h + k.pt + k.pb < k.wh || k.w + k.pl + k.pr < k.ww || k.n * k.c * k.h * k.w > 400000)
            continue;
        add_pool("pool_sampled", &k, 9000 + (uint32_t)done, 0);
        done++;
    }

    /* NaN in a window makes the output NaN in every mode (as in PyTorch),
     * on vector paths (contiguous rows or channels, strides 1 and 2) and
     * scalar ones (edges, channel tails) alike. */
    static const pool_case nan_shapes[] = {
        {2, 3, 9, 40, PDNN_POOL_MAX, 3, 3, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 12, 64, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {2, 19, 7, 9, PDNN_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, PDNN_NHWC, PDNN_NHWC},
        {1, 16, 11, 11, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 1, PDNN_NHWC, PDNN_NCHW},
        {1, 27, 9, 9, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NHWC, PDNN_NHWC},
        {2, 3, 7, 11, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        /* OpenCL's 2x2/2 backward vector kernel: two chunks of 8 windows
         * and a tail of 2, an odd last column left to the zero fill */
        {2, 3, 12, 37, PDNN_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
        /* and its NHWC twin: a chunk of 8 channels and a tail of 3 */
        {2, 11, 9, 10, PDNN_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, PDNN_NHWC, PDNN_NHWC},
        /* OpenCL's plane kernels: flat (3x3 at stride 1 on 14x14) and
         * global (a 7x7 image: three vectors and a tail) */
        {2, 3, 14, 14, PDNN_POOL_MAX, 3, 3, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {2, 3, 7, 7, PDNN_POOL_MAX, 7, 7, 1, 1, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
    };
    for (size_t i = 0; i < sizeof nan_shapes / sizeof nan_shapes[0]; i++)
        for (int m = 0; m < 3; m++) {
            pool_case k = nan_shapes[i];
            k.mode = (pdnn_pool_mode)m;
            add_pool("pool_nan", &k, 77 + (uint32_t)i, 1);
        }

    /* Ties: inputs from three levels, so most windows hold several
     * maxima; the forward's value is the same whichever it takes, its
     * gradient goes to the first in row-major order (the backward cases
     * check that rule), on overlapping and disjoint windows. */
    for (size_t i = 0; i < sizeof nan_shapes / sizeof nan_shapes[0]; i++) {
        pool_case k = nan_shapes[i];
        add_pool("pool_ties", &k, 300 + (uint32_t)i, 0)->ties = 1;
    }
}

/* grad mode: the table becomes its backward cases. Each conv2d case
 * gives its data and filter gradients (and the bias gradient where it has
 * a bias), each pool2d case its gradient, in the same layouts, under the
 * same set names. Every configuration is the forward's flag. */
static void make_backward_cases(void)
{
    const int n_fwd = n_cases;
    op_case *fwd = xmalloc((size_t)n_fwd * sizeof *fwd);
    memcpy(fwd, cases, (size_t)n_fwd * sizeof *fwd);
    n_cases = 0;
    for (int i = 0; i < n_fwd; i++) {
        const op_case *f = &fwd[i];
        static const pdnn__op conv_ops[] = {PDNN__OP_CONV2D_BWD_DATA, PDNN__OP_CONV2D_BWD_FILTER,
                                            PDNN__OP_CONV2D_BWD_BIAS};
        const int n_ops = f->op == PDNN__OP_CONV2D_FWD ? (f->u.conv.bias ? 3 : 2) : 1;
        for (int j = 0; j < n_ops; j++) {
            op_case *c = add_case(f->op == PDNN__OP_CONV2D_FWD ? conv_ops[j] : PDNN__OP_POOL2D_BWD, f->set,
                                  f->all_configs, f->seed + 17u * (uint32_t)j);
            const pdnn__op op = c->op;
            *c = *f;
            c->op = op;
            c->seed = f->seed + 17u * (uint32_t)j;
            if (is_conv_op(op)) {
                c->u.conv.relu = 0;
                c->u.conv.cap = 0.0f;
                c->u.conv.residual = 0;
            }
        }
    }
    free(fwd);
}

static const char *mode_name(pdnn_pool_mode m)
{
    return m == PDNN_POOL_MAX ? "max" : m == PDNN_POOL_AVG_INCLUDE_PADDING ? "avg-incl" : "avg-excl";
}

static void case_name(const op_case *oc, char *buf, size_t len)
{
    if (is_backward(oc->op)) { /* "dx of <the forward case>" */
        op_case fwd = *oc;
        fwd.op = is_conv_op(oc->op) ? PDNN__OP_CONV2D_FWD : PDNN__OP_POOL2D_FWD;
        const char *what = oc->op == PDNN__OP_CONV2D_BWD_FILTER ? "dw" : oc->op == PDNN__OP_CONV2D_BWD_BIAS ? "db" : "dx";
        const int w = snprintf(buf, len, "%s of ", what);
        if (w > 0 && (size_t)w < len)
            case_name(&fwd, buf + w, len - (size_t)w);
        return;
    }
    if (oc->op == PDNN__OP_CONV2D_FWD) {
        const conv_case *k = &oc->u.conv;
        snprintf(buf, len,
                 "n%lld c%lld %lldx%lld k%lld %lldx%lld stride %d,%d dil %d,%d pad %d,%d,%d,%d g%d bias%d relu%d%s%s "
                 "%s/%s->%s%s",
                 (long long)k->n, (long long)k->c, (long long)k->h, (long long)k->w, (long long)k->k,
                 (long long)k->r, (long long)k->s, k->sh, k->sw, k->dh, k->dw, k->pt, k->pb, k->pl, k->pr,
                 k->groups, k->bias, k->relu, k->cap > 0.0f ? " capped" : "", k->residual ? " residual" : "", pdnn_layout_name(k->xl),
                 pdnn_layout_name(k->wl),
                 pdnn_layout_name(k->yl), oc->amp[0] != 1.0f ? " large values" : "");
    } else {
        const pool_case *k = &oc->u.pool;
        snprintf(buf, len, "n%lld c%lld %lldx%lld %s win %dx%d stride %d,%d pad %d,%d,%d,%d ceil%d %s->%s%s",
                 (long long)k->n, (long long)k->c, (long long)k->h, (long long)k->w, mode_name(k->mode), k->wh,
                 k->ww, k->sh, k->sw, k->pt, k->pb, k->pl, k->pr, k->ceil, pdnn_layout_name(k->xl),
                 pdnn_layout_name(k->yl), oc->nans ? " with NaNs" : oc->ties ? " with ties" : "");
    }
}

/* ---- inputs, shapes and the naive loops ---------------------------------- */

/* Logical-order inputs of a case: x {N,C,H,W}, w {O,I,H,W}, bias {K}. */
typedef struct case_data {
    float *x, *w, *b;
    float *z; /* conv forward with a residual: {N,K,P,Q}, logical order */
    int64_t xn, wn, bn;
    int64_t od[4], yn; /* the result's dims and count: the forward's output
                          {N, C|K, P, Q}, or the gradient's (x's, w's or
                          {K,1,1,1}) */
    int64_t fod[4], fyn; /* the forward's output, which dy has */
    float *dy;           /* backward ops: dL/dy, logical order */
} case_data;

static void conv_params(const conv_case *k, pdnn_conv2d_params *p)
{
    pdnn_conv2d_params_init(p);
    p->stride_h = k->sh;
    p->stride_w = k->sw;
    p->dilation_h = k->dh;
    p->dilation_w = k->dw;
    p->pad_top = k->pt;
    p->pad_bottom = k->pb;
    p->pad_left = k->pl;
    p->pad_right = k->pr;
    p->groups = k->groups;
    p->relu = k->relu;
    p->relu_cap = k->relu ? k->cap : 0.0f;
}

static void pool_params(const pool_case *k, pdnn_pool2d_params *p)
{
    pdnn_pool2d_params_init(p);
    p->mode = k->mode;
    p->window_h = k->wh;
    p->window_w = k->ww;
    p->stride_h = k->sh;
    p->stride_w = k->sw;
    p->pad_top = k->pt;
    p->pad_bottom = k->pb;
    p->pad_left = k->pl;
    p->pad_right = k->pr;
    p->ceil_mode = k->ceil;
}

/* Output length of one axis, written from the definitions (not the
 * library's helper). */
static int64_t conv_out(int64_t in, int64_t f, int stride, int dil, int pa, int pb)
{
    return (in + pa + pb - (f - 1) * dil - 1) / stride + 1;
}

static int64_t pool_out(int64_t in, int win, int stride, int pa, int pb, int ceil_mode)
{
    const int64_t span = in + pa + pb - win;
    int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    /* PyTorch drops a ceil-mode window that would start in the trailing
     * padding. */
    if (ceil_mode && (out - 1) * stride >= in + pa)
        out--;
    return out;
}

static void case_data_make(const op_case *oc, case_data *d)
{
    memset(d, 0, sizeof *d);
    if (is_conv_op(oc->op)) {
        const conv_case *k = &oc->u.conv;
        d->xn = k->n * k->c * k->h * k->w;
        d->wn = k->k * (k->c / k->groups) * k->r * k->s;
        d->bn = k->k;
        d->od[0] = k->n;
        d->od[1] = k->k;
        d->od[2] = conv_out(k->h, k->r, k->sh, k->dh, k->pt, k->pb);
        d->od[3] = conv_out(k->w, k->s, k->sw, k->dw, k->pl, k->pr);
        d->w = xmalloc((size_t)d->wn * sizeof *d->w);
        d->b = xmalloc((size_t)d->bn * sizeof *d->b);
        fill(d->w, d->wn, oc->seed + 1, oc->amp[1]);
        fill(d->b, d->bn, oc->seed + 2, oc->amp[2]);
    } else {
        const pool_case *k = &oc->u.pool;
        d->xn = k->n * k->c * k->h * k->w;
        d->od[0] = k->n;
        d->od[1] = k->c;
        d->od[2] = pool_out(k->h, k->wh, k->sh, k->pt, k->pb, k->ceil);
        d->od[3] = pool_out(k->w, k->ww, k->sw, k->pl, k->pr, k->ceil);
    }
    d->x = xmalloc((size_t)d->xn * sizeof *d->x);
    fill(d->x, d->xn, oc->seed, oc->amp[0]);
    if (oc->nans)
        for (int64_t j = 5; j < d->xn; j += 97) /* sparse: most windows stay finite */
            d->x[j] = NAN;
    if (oc->ties)
        for (int64_t j = 0; j < d->xn; j++)
            d->x[j] = floorf(d->x[j] * 1.5f) / 1.5f; /* -1, -1/3, 1/3 (and 0 at -0) */
    memcpy(d->fod, d->od, sizeof d->fod);
    d->fyn = d->od[0] * d->od[1] * d->od[2] * d->od[3];
    if (is_backward(oc->op)) {
        d->dy = xmalloc((size_t)d->fyn * sizeof *d->dy);
        fill(d->dy, d->fyn, oc->seed + 3, 1.0f);
        if (oc->op == PDNN__OP_CONV2D_BWD_FILTER) {
            const conv_case *k = &oc->u.conv;
            const int64_t wd[4] = {k->k, k->c / k->groups, k->r, k->s};
            memcpy(d->od, wd, sizeof wd);
        } else if (oc->op == PDNN__OP_CONV2D_BWD_BIAS) {
            const int64_t bd[4] = {oc->u.conv.k, 1, 1, 1};
            memcpy(d->od, bd, sizeof bd);
        } else { /* dx: x's dims */
            const int64_t n = is_conv_op(oc->op) ? oc->u.conv.n : oc->u.pool.n;
            const int64_t c = is_conv_op(oc->op) ? oc->u.conv.c : oc->u.pool.c;
            const int64_t h = is_conv_op(oc->op) ? oc->u.conv.h : oc->u.pool.h;
            const int64_t w = is_conv_op(oc->op) ? oc->u.conv.w : oc->u.pool.w;
            const int64_t xd[4] = {n, c, h, w};
            memcpy(d->od, xd, sizeof xd);
        }
    }
    d->yn = d->od[0] * d->od[1] * d->od[2] * d->od[3];
    if (oc->op == PDNN__OP_CONV2D_FWD && oc->u.conv.residual) {
        d->z = xmalloc((size_t)d->yn * sizeof *d->z);
        fill(d->z, d->yn, oc->seed + 4, 1.0f);
    }
    round_to_dtype(d->x, d->xn);
    round_to_dtype(d->w, d->wn);
    round_to_dtype(d->b, d->bn);
    round_to_dtype(d->z, d->yn);
}

static void case_data_free(case_data *d)
{
    free(d->z);
    free(d->dy);
    free(d->x);
    free(d->w);
    free(d->b);
}

/* The independent reference: logical NCHW/OIHW indexing written here, one
 * output at a time, double accumulation. Also the scale of each output
 * for the normalised error: the sum of |x * w| over its taps, plus |b|. */
static void naive_conv(const conv_case *k, const case_data *d, double *y, double *scale)
{
    const int64_t cpg = k->c / k->groups, kpg = k->k / k->groups, P = d->od[2], Q = d->od[3];
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t o = 0; o < k->k; o++)
            for (int64_t p = 0; p < P; p++)
                for (int64_t q = 0; q < Q; q++) {
                    double sum = 0.0, mag = 0.0;
                    for (int64_t ci = 0; ci < cpg; ci++) {
                        const int64_t cx = (o / kpg) * cpg + ci;
                        for (int64_t r = 0; r < k->r; r++) {
                            const int64_t ih = p * k->sh - k->pt + r * k->dh;
                            if (ih < 0 || ih >= k->h)
                                continue;
                            for (int64_t s = 0; s < k->s; s++) {
                                const int64_t iw = q * k->sw - k->pl + s * k->dw;
                                if (iw < 0 || iw >= k->w)
                                    continue;
                                const double t = (double)d->x[((n * k->c + cx) * k->h + ih) * k->w + iw] *
                                                 (double)d->w[((o * cpg + ci) * k->r + r) * k->s + s];
                                sum += t;
                                mag += fabs(t);
                            }
                        }
                    }
                    if (k->bias) {
                        sum += (double)d->b[o];
                        mag += fabs((double)d->b[o]);
                    }
                    const int64_t i = ((n * k->k + o) * P + p) * Q + q;
                    if (d->z) {
                        sum += (double)d->z[i];
                        mag += fabs((double)d->z[i]);
                    }
                    if (k->relu && sum < 0.0)
                        sum = 0.0;
                    if (k->relu && k->cap > 0.0f && sum > (double)k->cap)
                        sum = (double)k->cap;
                    y[i] = sum;
                    scale[i] = mag;
                }
}

/* Pooling from its definition: max over the window's in-image part, or
 * the sum over it divided by the window clipped at the end of the
 * trailing padding (include padding, PyTorch's rule) or by its in-image
 * size (exclude padding); a NaN anywhere in the window gives NaN. Scale:
 * the largest |x| (max), or the sum of |x| over the divisor. */
static void naive_pool(const pool_case *k, const case_data *d, double *y, double *scale)
{
    const int64_t P = d->od[2], Q = d->od[3];
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t c = 0; c < k->c; c++)
            for (int64_t p = 0; p < P; p++)
                for (int64_t q = 0; q < Q; q++) {
                    const int64_t h0 = p * k->sh - k->pt, w0 = q * k->sw - k->pl;
                    double mx = -INFINITY, sum = 0.0, mag = 0.0, big = 0.0;
                    int64_t inside = 0;
                    int nan = 0;
                    for (int64_t i = h0; i < h0 + k->wh; i++)
                        for (int64_t j = w0; j < w0 + k->ww; j++) {
                            if (i < 0 || j < 0 || i >= k->h || j >= k->w)
                                continue;
                            const double v = (double)d->x[((n * k->c + c) * k->h + i) * k->w + j];
                            nan |= isnan(v) != 0;
                            mx = v > mx ? v : mx;
                            sum += v;
                            mag += fabs(v);
                            big = fabs(v) > big ? fabs(v) : big;
                            inside++;
                        }
                    const int64_t ih_end = h0 + k->wh < k->h + k->pb ? h0 + k->wh : k->h + k->pb;
                    const int64_t iw_end = w0 + k->ww < k->w + k->pr ? w0 + k->ww : k->w + k->pr;
                    const int64_t div =
                        k->mode == PDNN_POOL_AVG_INCLUDE_PADDING ? (ih_end - h0) * (iw_end - w0) : inside;
                    const int64_t o = ((n * k->c + c) * P + p) * Q + q;
                    if (k->mode == PDNN_POOL_MAX) {
                        y[o] = nan ? NAN : mx;
                        scale[o] = big;
                    } else {
                        y[o] = nan ? NAN : sum / (double)div;
                        scale[o] = mag / (double)div;
                    }
                }
}

/* The backward ops from their definitions, in scatter form (each term of
 * the forward sends dy back to what it read), double accumulation; the
 * library's host reference gathers instead. Scale: the sum of |terms|. */
static void naive_conv_backward(pdnn__op op, const conv_case *k, const case_data *d, double *g, double *scale)
{
    const int64_t cpg = k->c / k->groups, kpg = k->k / k->groups, P = d->fod[2], Q = d->fod[3];
    memset(g, 0, (size_t)d->yn * sizeof *g);
    memset(scale, 0, (size_t)d->yn * sizeof *scale);
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t o = 0; o < k->k; o++)
            for (int64_t p = 0; p < P; p++)
                for (int64_t q = 0; q < Q; q++) {
                    const double dy = d->dy[((n * k->k + o) * P + p) * Q + q];
                    if (op == PDNN__OP_CONV2D_BWD_BIAS) {
                        g[o] += dy;
                        scale[o] += fabs(dy);
                        continue;
                    }
                    for (int64_t ci = 0; ci < cpg; ci++) {
                        const int64_t cx = (o / kpg) * cpg + ci;
                        for (int64_t r = 0; r < k->r; r++) {
                            const int64_t ih = p * k->sh - k->pt + r * k->dh;
                            if (ih < 0 || ih >= k->h)
                                continue;
                            for (int64_t s = 0; s < k->s; s++) {
                                const int64_t iw = q * k->sw - k->pl + s * k->dw;
                                if (iw < 0 || iw >= k->w)
                                    continue;
                                const int64_t xi = ((n * k->c + cx) * k->h + ih) * k->w + iw;
                                const int64_t wi = ((o * cpg + ci) * k->r + r) * k->s + s;
                                const int64_t gi = op == PDNN__OP_CONV2D_BWD_DATA ? xi : wi;
                                const double t = dy * (op == PDNN__OP_CONV2D_BWD_DATA ? (double)d->w[wi] : (double)d->x[xi]);
                                g[gi] += t;
                                scale[gi] += fabs(t);
                            }
                        }
                    }
                }
}

/* Pooling's gradient: each window sends dy to the element it returned
 * (max: the first maximum in row-major order, or the last NaN, as the
 * forward picks it) or dy / divisor to each in-image element (averages). */
static void naive_pool_backward(const pool_case *k, const case_data *d, double *g, double *scale)
{
    const int64_t P = d->fod[2], Q = d->fod[3];
    memset(g, 0, (size_t)d->yn * sizeof *g);
    memset(scale, 0, (size_t)d->yn * sizeof *scale);
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t c = 0; c < k->c; c++)
            for (int64_t p = 0; p < P; p++)
                for (int64_t q = 0; q < Q; q++) {
                    const int64_t h0 = p * k->sh - k->pt, w0 = q * k->sw - k->pl;
                    const double dy = d->dy[((n * k->c + c) * P + p) * Q + q];
                    const int64_t ih_end = h0 + k->wh < k->h + k->pb ? h0 + k->wh : k->h + k->pb;
                    const int64_t iw_end = w0 + k->ww < k->w + k->pr ? w0 + k->ww : k->w + k->pr;
                    int64_t inside = 0, arg = -1;
                    double best = 0.0;
                    for (int64_t i = h0; i < h0 + k->wh; i++)
                        for (int64_t j = w0; j < w0 + k->ww; j++) {
                            if (i < 0 || j < 0 || i >= k->h || j >= k->w)
                                continue;
                            const int64_t xi = ((n * k->c + c) * k->h + i) * k->w + j;
                            const double v = d->x[xi];
                            inside++;
                            if (arg < 0 || isnan(v) || (!isnan(best) && v > best)) {
                                best = v;
                                arg = xi;
                            }
                        }
                    if (k->mode == PDNN_POOL_MAX) {
                        g[arg] += dy;
                        scale[arg] += fabs(dy);
                        continue;
                    }
                    const double div =
                        k->mode == PDNN_POOL_AVG_INCLUDE_PADDING ? (double)((ih_end - h0) * (iw_end - w0)) : (double)inside;
                    for (int64_t i = h0 < 0 ? 0 : h0; i < h0 + k->wh && i < k->h; i++)
                        for (int64_t j = w0 < 0 ? 0 : w0; j < w0 + k->ww && j < k->w; j++) {
                            const int64_t xi = ((n * k->c + c) * k->h + i) * k->w + j;
                            g[xi] += dy / div;
                            scale[xi] += fabs(dy / div);
                        }
                }
}

/* L = <f(x, w, b), dy> with the naive forward (no ReLU), and the sum of
 * |terms| it adds (for the bound on its rounding). */
static double naive_loss(const op_case *oc, const case_data *d, double *mag)
{
    double *y = xmalloc((size_t)d->fyn * sizeof *y), *sc = xmalloc((size_t)d->fyn * sizeof *sc);
    case_data fd = *d;
    memcpy(fd.od, d->fod, sizeof fd.od);
    fd.yn = d->fyn;
    if (is_conv_op(oc->op)) {
        conv_case k = oc->u.conv;
        k.relu = 0;
        k.bias = oc->op == PDNN__OP_CONV2D_BWD_BIAS;
        naive_conv(&k, &fd, y, sc);
    } else {
        naive_pool(&oc->u.pool, &fd, y, sc);
    }
    double l = 0.0, m = 0.0;
    for (int64_t i = 0; i < d->fyn; i++) {
        l += y[i] * (double)d->dy[i];
        m += sc[i] * fabs((double)d->dy[i]);
    }
    free(y);
    free(sc);
    *mag = m;
    return l;
}

/* The gradient's variable of a backward case: x (dx), w (dw) or b (db). */
static float *grad_variable(const op_case *oc, case_data *d)
{
    return oc->op == PDNN__OP_CONV2D_BWD_FILTER ? d->w : oc->op == PDNN__OP_CONV2D_BWD_BIAS ? d->b : d->x;
}

/* Checks the naive backward loop g of a case against the naive forward:
 * the adjoint identity <x, g> = <f(x), dy> (the ops are linear in the
 * variable, max pooling piecewise so), and central differences of the
 * loss at a few elements on small cases. Returns 0 and a message when
 * either fails. */
static int check_naive_backward(const op_case *oc, case_data *d, const double *g, const double *scale, char *msg,
                                size_t len)
{
    if (oc->nans)
        return 1; /* NaN makes both sides NaN */
    double mag = 0.0;
    const double loss = naive_loss(oc, d, &mag);
    float *v = grad_variable(oc, d);
    double dot = 0.0, dmag = 0.0;
    for (int64_t i = 0; i < d->yn; i++) {
        dot += (double)v[i] * g[i];
        dmag += fabs((double)v[i]) * scale[i];
    }
    if (oc->op == PDNN__OP_CONV2D_BWD_BIAS) {
        /* L = <conv(x, w), dy> + <b, db>: the bias's part is the difference */
        case_data nb = *d;
        float *zero = xmalloc((size_t)d->bn * sizeof *zero);
        nb.b = zero;
        double m0 = 0.0;
        const double l0 = naive_loss(oc, &nb, &m0);
        free(zero);
        if (!(fabs((loss - l0) - dot) <= 1e-9 * (mag + m0 + dmag) + 1e-300)) {
            snprintf(msg, len, "adjoint identity: <b, db> = %.17g but L(b) - L(0) = %.17g", dot, loss - l0);
            return 0;
        }
    } else if (!(fabs(loss - dot) <= 1e-9 * (mag + dmag) + 1e-300)) {
        snprintf(msg, len, "adjoint identity: <var, grad> = %.17g but <f(x), dy> = %.17g", dot, loss);
        return 0;
    }
    /* Finite differences on small cases: a handful of elements. */
    const double work = is_conv_op(oc->op) ? (double)d->fyn * (double)d->wn : (double)d->fyn * 16.0;
    if (work > 4e6)
        return 1;
    const int samples = d->yn < 6 ? (int)d->yn : 6;
    for (int t = 0; t < samples; t++) {
        const int64_t i = samples > 1 ? (d->yn - 1) * t / (samples - 1) : 0;
        const float keep = v[i];
        const double h = 1.0 / 64;
        double m = 0.0;
        v[i] = (float)(keep + h);
        const double up = (double)v[i], lp = naive_loss(oc, d, &m);
        v[i] = (float)(keep - h);
        const double dn = (double)v[i], lm = naive_loss(oc, d, &m);
        v[i] = keep;
        const double l0 = loss; /* at v unperturbed: computed above, with mag */
        const double fd = (lp - lm) / (up - dn);
        if (oc->op == PDNN__OP_POOL2D_BWD && oc->u.pool.mode == PDNN_POOL_MAX &&
            fabs((lp - l0) / (up - keep) - (l0 - lm) / (keep - dn)) > 1e-9 * (mag + 1.0))
            continue; /* a kink: another element becomes the maximum within h */
        if (!(fabs(fd - g[i]) <= 1e-7 * (scale[i] + 1.0) + 1e-12 * mag / h)) {
            snprintf(msg, len, "finite difference at element %lld: %.17g, the naive gradient %.17g", (long long)i,
                     fd, g[i]);
            return 0;
        }
    }
    return 1;
}

/* ---- results --------------------------------------------------------------- */

/* Per backend: counts and the skip reasons aggregated. */
typedef struct reason {
    char *text;
    long count;
} reason;

typedef struct backend_stats {
    char name[16];
    int selected; /* chosen by --backend (or every one built) */
    int devices;
    long passed, failed, skipped;
    reason *reasons;
    int n_reasons;
} backend_stats;

static backend_stats backends[8];
static int n_backends;

static backend_stats *stats_for(const char *name)
{
    for (int i = 0; i < n_backends; i++)
        if (strcmp(backends[i].name, name) == 0)
            return &backends[i];
    if (n_backends == (int)(sizeof backends / sizeof backends[0])) {
        fprintf(stderr, "parity: more backends than this harness counts\n");
        exit(EXIT_USAGE);
    }
    backend_stats *b = &backends[n_backends++];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    return b;
}

/* Counts a skip under "algorithm: why", numbers replaced by '#' so that
 * one rule refusing many shapes is one line. */
static void count_skip(backend_stats *b, const char *algo, const char *why)
{
    char key[PDNN__WHY_LEN + 64];
    size_t o = (size_t)snprintf(key, sizeof key, "%s: ", algo);
    for (const char *s = why; *s && o + 1 < sizeof key; s++) {
        if (isdigit((unsigned char)*s)) {
            while (isdigit((unsigned char)s[1]) || (s[1] == '.' && isdigit((unsigned char)s[2])))
                s++;
            key[o++] = '#';
        } else {
            key[o++] = *s;
        }
    }
    key[o] = '\0';
    b->skipped++;
    for (int i = 0; i < b->n_reasons; i++)
        if (strcmp(b->reasons[i].text, key) == 0) {
            b->reasons[i].count++;
            return;
        }
    b->reasons = xrealloc(b->reasons, (size_t)(b->n_reasons + 1) * sizeof *b->reasons);
    b->reasons[b->n_reasons].text = xstrdup(key);
    b->reasons[b->n_reasons].count = 1;
    b->n_reasons++;
}

/* Per device and algorithm: what ran, so that an algorithm (or a
 * configuration) that the table never exercised is reported instead of
 * passing by skipping everything. */
typedef struct algo_stats {
    pdnn_device *dev;
    const pdnn__algo *algo;
    long passed, failed, skipped, shown;
    long *config_runs; /* per configuration: cases it was checked on */
    double worst;      /* largest normalised error among passes */
    char worst_where[400];
    char only_why[PDNN__WHY_LEN]; /* the reason of every skip, while they agree */
    int why_differs;
} algo_stats;

static algo_stats *astats;
static int n_astats;

static algo_stats *astats_for(pdnn_device *dev, const pdnn__algo *a)
{
    for (int i = 0; i < n_astats; i++)
        if (astats[i].dev == dev && astats[i].algo == a)
            return &astats[i];
    astats = xrealloc(astats, (size_t)(n_astats + 1) * sizeof *astats);
    algo_stats *s = &astats[n_astats++];
    memset(s, 0, sizeof *s);
    s->dev = dev;
    s->algo = a;
    s->config_runs = calloc((size_t)(a->n_configs > 0 ? a->n_configs : 1), sizeof *s->config_runs);
    if (!s->config_runs) {
        fprintf(stderr, "parity: out of host memory\n");
        exit(EXIT_USAGE);
    }
    return s;
}

/* Failures printed per device and algorithm before the rest are only
 * counted: a broken kernel fails hundreds of cases alike. */
enum { SHOW_FAILURES = 8 };

static int verbose;

/* ---- one device's tensors for one case ------------------------------------ */

typedef struct dev_run {
    pdnn_device *dev;
    pdnn_tensor *x, *w, *b, *dy, *z;
    /* conv2d forward: the filter again, frozen as a session's constant is
     * (its algorithms may keep it packed across calls); use_wf runs with it. */
    pdnn_tensor *wf;
    int use_wf;
    pdnn_tensor *arena; /* y's elements, then GUARD_N guard elements */
    pdnn_tensor *y;     /* a view of the arena's start */
    pdnn_tensor_desc yd;
    int64_t yn;
    float *amem; /* the arena read back: y in memory order, then the guard */
    float *ylog, *nan_fill;
} dev_run;

/* y is the start of a larger tensor (the arena) whose next GUARD_N
 * elements must keep their values: no algorithm may write past its
 * output. The guard starts at y's last byte, not at the allocator's next
 * 256-byte chunk, so an overrun by one element is caught. */
enum { GUARD_N = 4096 };
#define GUARD_VALUE 7.0f

static void dev_run_free(dev_run *r)
{
    pdnn_tensor_release(r->x);
    pdnn_tensor_release(r->w);
    pdnn_tensor_release(r->wf);
    pdnn_tensor_release(r->b);
    pdnn_tensor_release(r->dy);
    pdnn_tensor_release(r->z);
    pdnn_tensor_release(r->y); /* the view first: it does not own the memory */
    pdnn_tensor_release(r->arena);
    free(r->amem);
    free(r->ylog);
    free(r->nan_fill);
    memset(r, 0, sizeof *r);
}

static pdnn_status upload(pdnn_device *dev, const pdnn_tensor_desc *desc, const float *data, pdnn_tensor **out)
{
    pdnn_status st = pdnn_tensor_create(dev, desc, out);
    if (st == PDNN_SUCCESS && data)
        st = pdnn_tensor_write(*out, data, (size_t)pdnn_tensor_desc_bytes(desc));
    return st;
}

/* upload in opt_dtype (an operand of the op, not the arena). */
static pdnn_status upload_real(pdnn_device *dev, const pdnn_tensor_desc *desc, const float *data, pdnn_tensor **out)
{
    if (!reduced_dtype())
        return upload(dev, desc, data, out);
    pdnn_tensor_desc d = *desc;
    d.dtype = opt_dtype;
    pdnn_status st = pdnn_tensor_create(dev, &d, out);
    if (st == PDNN_SUCCESS && data) {
        const int64_t n = pdnn_tensor_desc_elements(&d);
        uint16_t *raw = xmalloc((size_t)(n ? n : 1) * sizeof *raw);
        pdnn__from_f32(opt_dtype, data, raw, (size_t)n);
        st = pdnn_tensor_write(*out, raw, (size_t)pdnn_tensor_desc_bytes(&d));
        free(raw);
    }
    return st;
}

/* Creates the case's tensors on dev, in the case's layouts. */
static pdnn_status dev_run_make(pdnn_device *dev, const op_case *oc, const case_data *d, dev_run *r)
{
    memset(r, 0, sizeof *r);
    r->dev = dev;
    pdnn_tensor_desc xd;
    pdnn_layout yl, rl; /* the forward output's layout (dy's), the result's */
    pdnn_status st = PDNN_SUCCESS;
    const pdnn__op op = oc->op;
    /* What each op reads (the forward: x, w, bias; the backward: see
     * pdnn__conv2d_call) and the layout of what it writes. */
    const int reads_x = op != PDNN__OP_CONV2D_BWD_DATA && op != PDNN__OP_CONV2D_BWD_BIAS;
    const int reads_w = op == PDNN__OP_CONV2D_FWD || op == PDNN__OP_CONV2D_BWD_DATA;
    if (is_conv_op(op)) {
        const conv_case *k = &oc->u.conv;
        xd = th_desc(k->xl, k->n, k->c, k->h, k->w);
        const pdnn_tensor_desc wd = th_desc(k->wl, k->k, k->c / k->groups, k->r, k->s);
        const pdnn_tensor_desc bd = th_desc(PDNN_LAYOUT_X, k->k, 1, 1, 1);
        if (reads_w) {
            float *wm = xmalloc((size_t)d->wn * sizeof *wm);
            th_to_layout(d->w, wm, k->wl, wd.dims);
            st = upload_real(dev, &wd, wm, &r->w);
            if (st == PDNN_SUCCESS && op == PDNN__OP_CONV2D_FWD) {
                st = upload_real(dev, &wd, wm, &r->wf);
                if (st == PDNN_SUCCESS)
                    pdnn__tensor_freeze(r->wf);
            }
            free(wm);
        }
        if (st == PDNN_SUCCESS && k->bias && op == PDNN__OP_CONV2D_FWD)
            st = upload_real(dev, &bd, d->b, &r->b);
        if (st == PDNN_SUCCESS && d->z) { /* the residual, in y's layout */
            const pdnn_tensor_desc zd = th_desc(k->yl, d->od[0], d->od[1], d->od[2], d->od[3]);
            float *zm = xmalloc((size_t)d->yn * sizeof *zm);
            th_to_layout(d->z, zm, k->yl, zd.dims);
            st = upload_real(dev, &zd, zm, &r->z);
            free(zm);
        }
        yl = k->yl;
        rl = op == PDNN__OP_CONV2D_BWD_DATA ? k->xl : op == PDNN__OP_CONV2D_BWD_FILTER ? k->wl
             : op == PDNN__OP_CONV2D_BWD_BIAS  ? PDNN_LAYOUT_X
                                               : k->yl;
    } else {
        xd = th_desc(oc->u.pool.xl, oc->u.pool.n, oc->u.pool.c, oc->u.pool.h, oc->u.pool.w);
        yl = oc->u.pool.yl;
        rl = yl; /* pool2d's dx in dy's layout: x and dx differ where x and y do */
    }
    if (reads_x) {
        float *xm = xmalloc((size_t)d->xn * sizeof *xm);
        th_to_layout(d->x, xm, xd.layout, xd.dims);
        if (st == PDNN_SUCCESS)
            st = upload_real(dev, &xd, xm, &r->x);
        free(xm);
    }
    if (is_backward(op)) {
        const pdnn_tensor_desc dyd = th_desc(yl, d->fod[0], d->fod[1], d->fod[2], d->fod[3]);
        float *ym = xmalloc((size_t)d->fyn * sizeof *ym);
        th_to_layout(d->dy, ym, yl, dyd.dims);
        if (st == PDNN_SUCCESS)
            st = upload_real(dev, &dyd, ym, &r->dy);
        free(ym);
    }
    r->yd = th_desc(rl, d->od[0], d->od[1], d->od[2], d->od[3]);
    r->yd.dtype = opt_dtype;
    r->yn = d->yn;
    r->ylog = xmalloc((size_t)d->yn * sizeof *r->ylog);
    r->nan_fill = xmalloc((size_t)d->yn * sizeof *r->nan_fill);
    for (int64_t i = 0; i < d->yn; i++)
        r->nan_fill[i] = NAN;
    if (reduced_dtype()) { /* the fill in y's dtype (its first half) */
        float *f = xmalloc((size_t)(d->yn ? d->yn : 1) * sizeof *f);
        memcpy(f, r->nan_fill, (size_t)d->yn * sizeof *f);
        pdnn__from_f32(opt_dtype, f, r->nan_fill, (size_t)d->yn);
        free(f);
    }
    r->amem = xmalloc((size_t)(d->yn + GUARD_N) * sizeof *r->amem);
    for (int64_t i = 0; i < d->yn + GUARD_N; i++)
        r->amem[i] = GUARD_VALUE;
    const pdnn_tensor_desc ad = th_desc(PDNN_NCHW, 1, 1, 1, d->yn + GUARD_N);
    if (st == PDNN_SUCCESS)
        st = upload(dev, &ad, r->amem, &r->arena);
    if (st == PDNN_SUCCESS)
        st = pdnn__tensor_wrap(dev, &r->yd, r->arena->block.buf, NULL, NULL, &r->y);
    return st;
}

/* What one run reported. */
typedef struct run_result {
    pdnn_status st;
    char error[512];
    char config[PDNN__CONFIG_LEN]; /* the configuration that ran ("" if not tunable) */
    int wrong_algo;                /* conv2d: another algorithm ran */
    long guard_hit;                /* first guard element overwritten + 1; 0 none */
} run_result;

/* Runs algorithm a (configuration cfg, -1: its own pick) on the case's
 * tensors once. check: poison y first and read it back into r->ylog
 * (logical order) and the guard; otherwise only run (perf). */
static void run_once(dev_run *r, const op_case *oc, const pdnn__algo *a, int cfg, int check, run_result *res)
{
    memset(res, 0, sizeof *res);
    const size_t ybytes = (size_t)pdnn_tensor_desc_bytes(&r->yd);
    /* NaN in every output element first: an element the algorithm never
     * writes fails the comparison instead of keeping another's result. */
    if (check && (res->st = pdnn_tensor_write(r->y, r->nan_fill, ybytes)) != PDNN_SUCCESS) {
        snprintf(res->error, sizeof res->error, "writing the output's NaN fill: %s", pdnn_last_error());
        return;
    }
    pdnn__dispatch_force(oc->op, a->name, cfg);
    if (oc->op == PDNN__OP_CONV2D_FWD) {
        pdnn_conv2d_params p;
        conv_params(&oc->u.conv, &p);
        p.algorithm = (pdnn_conv_algo)pdnn_conv_algo_parse(a->name);
        const pdnn_tensor *w = r->use_wf ? r->wf : r->w;
        res->st = r->z ? pdnn_conv2d_forward_residual(&p, r->x, w, r->b, r->z, r->y)
                       : pdnn_conv2d_forward(&p, r->x, w, r->b, r->y);
        if (res->st == PDNN_SUCCESS) {
            pdnn_conv2d_tuning t;
            pdnn_conv2d_last_tuning(&t);
            snprintf(res->config, sizeof res->config, "%s", t.config);
            res->wrong_algo = strcmp(pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()), a->name) != 0;
        }
    } else if (is_conv_op(oc->op)) {
        pdnn_conv2d_params p;
        conv_params(&oc->u.conv, &p);
        p.relu = 0;
        p.relu_cap = 0.0f;
        if (oc->op == PDNN__OP_CONV2D_BWD_DATA)
            res->st = pdnn_conv2d_backward_data(&p, r->dy, r->w, r->y);
        else if (oc->op == PDNN__OP_CONV2D_BWD_FILTER)
            res->st = pdnn_conv2d_backward_filter(&p, r->x, r->dy, r->y);
        else
            res->st = pdnn_conv2d_backward_bias(r->dy, r->y);
    } else {
        pdnn_pool2d_params p;
        pool_params(&oc->u.pool, &p);
        res->st = oc->op == PDNN__OP_POOL2D_BWD ? pdnn_pool2d_backward(&p, r->x, r->dy, r->y)
                                                : pdnn_pool2d_forward(&p, r->x, r->y);
    }
    pdnn__dispatch_force(oc->op, NULL, -1);
    if (res->st != PDNN_SUCCESS) {
        snprintf(res->error, sizeof res->error, "%s", pdnn_last_error());
        return;
    }
    if (!check)
        return;
    const size_t abytes = (size_t)(r->yn + GUARD_N) * sizeof *r->amem;
    if ((res->st = pdnn_tensor_read(r->arena, r->amem, abytes)) != PDNN_SUCCESS) {
        snprintf(res->error, sizeof res->error, "reading back: %s", pdnn_last_error());
        return;
    }
    /* In a reduced dtype y is the arena's first yn * 2 bytes: widened,
     * and every float past them is guard. */
    int64_t g0 = r->yn;
    if (reduced_dtype()) {
        float *wide = xmalloc((size_t)(r->yn ? r->yn : 1) * sizeof *wide);
        pdnn__to_f32(opt_dtype, r->amem, wide, (size_t)r->yn);
        th_from_layout(wide, r->ylog, r->yd.layout, r->yd.dims);
        free(wide);
        g0 = (r->yn * 2 + 3) / 4;
    } else {
        th_from_layout(r->amem, r->ylog, r->yd.layout, r->yd.dims);
    }
    const float *guard = r->amem + g0;
    for (int64_t i = 0; i < r->yn + GUARD_N - g0 && !res->guard_hit; i++)
        if (guard[i] != GUARD_VALUE) /* NOLINT(clang-diagnostic-float-equal): an exact sentinel */
            res->guard_hit = i + 1;
    if (res->guard_hit) { /* restore it for the next run */
        for (int64_t i = r->yn; i < r->yn + GUARD_N; i++)
            r->amem[i] = GUARD_VALUE;
        pdnn_tensor_write(r->arena, r->amem, abytes);
    }
}

/* The pool2d call of a case as core builds it, to ask a plan which
 * configuration a forced run takes (pool2d reports none back). */
static int pool_planned_config(pdnn_device *dev, const pdnn__algo *a, const op_case *oc, const case_data *d)
{
    const pool_case *k = &oc->u.pool;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_POOL2D_FWD;
    pdnn__pool2d_call *c = &call.u.pool2d;
    c->n = k->n;
    c->c = k->c;
    c->h = k->h;
    c->w = k->w;
    c->p = d->od[2];
    c->q = d->od[3];
    c->mode = k->mode;
    c->win_h = k->wh;
    c->win_w = k->ww;
    c->stride_h = k->sh;
    c->stride_w = k->sw;
    c->pad_top = k->pt;
    c->pad_left = k->pl;
    c->pad_bottom = k->pb;
    c->pad_right = k->pr;
    c->x_layout = k->xl;
    c->y_layout = k->yl;
    const int64_t xdims[4] = {k->n, k->c, k->h, k->w};
    pdnn__layout_strides(k->xl, xdims, c->xs);
    pdnn__layout_strides(k->yl, d->od, c->ys);
    pdnn__call_prepare(dev, &call);
    pdnn__plan plan;
    pdnn__plan_for(dev, a, &call, &plan);
    return plan.supported ? plan.config : -1;
}

/* The configuration a forced backward conv2d run takes (the backward
 * ops report none back): -1 when the plan refuses. */
static int conv_bwd_planned_config(pdnn_device *dev, const pdnn__algo *a, const op_case *oc, const case_data *d,
                                   int cfg)
{
    const conv_case *k = &oc->u.conv;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = oc->op;
    pdnn__conv2d_call *c = &call.u.conv2d;
    c->n = k->n, c->c = k->c, c->h = k->h, c->w = k->w, c->k = k->k, c->r = k->r, c->s = k->s;
    c->p = d->fod[2], c->q = d->fod[3], c->groups = k->groups;
    c->stride_h = k->sh, c->stride_w = k->sw, c->dil_h = k->dh, c->dil_w = k->dw;
    c->pad_top = k->pt, c->pad_left = k->pl, c->pad_bottom = k->pb, c->pad_right = k->pr;
    c->x_layout = k->xl, c->w_layout = k->wl, c->y_layout = k->yl;
    const int64_t xdims[4] = {k->n, k->c, k->h, k->w}, wdims[4] = {k->k, k->c / k->groups, k->r, k->s};
    pdnn__layout_strides(k->xl, xdims, c->xs);
    pdnn__layout_strides(k->wl, wdims, c->ws);
    pdnn__layout_strides(k->yl, d->fod, c->ys);
    pdnn__dispatch_force(oc->op, a->name, cfg);
    pdnn__call_prepare(dev, &call);
    pdnn__plan plan;
    pdnn__plan_for(dev, a, &call, &plan);
    return plan.supported ? plan.config : -1;
}

/* Why a forced pool2d run was refused: the plan's reason inside the
 * dispatcher's message ("...(opencl backend): WHY; use ..."). */
static const char *refusal_reason(const char *msg, char *buf, size_t len)
{
    const char *s = strstr(msg, "backend): ");
    s = s ? s + strlen("backend): ") : msg;
    const char *e = strstr(s, "; use ");
    const size_t n = e ? (size_t)(e - s) : strlen(s);
    snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), s);
    return buf;
}

/* ---- comparing -------------------------------------------------------------- */

typedef struct verdict {
    double worst; /* largest normalised error (INFINITY: NaN/Inf where ref is finite, or the reverse) */
    int64_t at;
    double got, want, scale;
} verdict;

static void compare(const float *got, const double *ref, const double *scale, int64_t n, verdict *v)
{
    memset(v, 0, sizeof *v);
    v->at = -1;
    for (int64_t i = 0; i < n; i++) {
        double e;
        if (isnan(ref[i]))
            e = isnan(got[i]) ? 0.0 : INFINITY;
        else if (!isfinite(got[i]))
            e = INFINITY;
        else
            e = fabs((double)got[i] - ref[i]) / (scale[i] + 1e-30);
        if (v->at < 0 || e > v->worst) {
            v->worst = e;
            v->at = i;
            v->got = got[i];
            v->want = ref[i];
            v->scale = scale[i];
        }
    }
}

/* The entry's bound on the normalised error (src/backend.h,
 * pdnn__tolerance). Max pooling's forward selects one input in every
 * algorithm: exact; its gradient may sum the dy of several windows, in
 * any order: the entry's. */
static double case_tolerance(const op_case *oc, const pdnn__algo *a)
{
    if (oc->op == PDNN__OP_POOL2D_FWD && oc->u.pool.mode == PDNN_POOL_MAX)
        return 0.0;
    return pdnn__algo_tol(a, opt_dtype);
}

/* Element index -> "(n,c,p,q)" in logical order. */
static const char *element_name(int64_t i, const int64_t od[4], char *buf, size_t len)
{
    const int64_t q = i % od[3], p = i / od[3] % od[2], c = i / (od[2] * od[3]) % od[1],
                  n = i / (od[1] * od[2] * od[3]);
    snprintf(buf, len, "(%lld,%lld,%lld,%lld)", (long long)n, (long long)c, (long long)p, (long long)q);
    return buf;
}

/* ---- options ---------------------------------------------------------------- */

static const char *op_label(pdnn__op op);

typedef enum run_mode { MODE_TEST, MODE_PERF, MODE_GRAD } run_mode;

typedef struct options {
    run_mode mode;
    const char *backend; /* NULL: every backend */
    int op;              /* -1: every op */
    const char *algo;    /* NULL: every algorithm */
    const char *set;     /* NULL: every case set */
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: parity [--mode test|perf|grad] [--backend host|opencl|cuda] [--op OP]\n"
            "              [--algo NAME] [--set NAME] [--dtype T] [--gpu-class] [-v]\n"
            "Runs every case of the op table on every device, by every registered algorithm (and\n"
            "configuration) that applies, against the host reference.\n"
            "  --mode test   compare (default); exit 1 on a failure, 77 when nothing ran\n"
            "  --mode perf   also time each case: ms, GFLOP/s or GB/s, ratio to direct\n"
            "  --mode grad   the backward ops (OP conv2d_bwd_data, conv2d_bwd_filter, conv2d_bwd_bias,\n"
            "                pool2d_bwd) on the forward table's shapes, and the naive backward loops\n"
            "                checked against the forward (adjoint identity, finite differences); and\n"
            "                batch normalization (OP batch_norm_fwd_train, batch_norm_fwd_infer,\n"
            "                batch_norm_bwd; set batch_norm); and the training ops (OP relu_bwd,\n"
            "                softmax_xent, optimizer, matmul, scale, activation, transform, binary, pad;\n"
            "                sets relu_bwd, xent, xent_large, sgd, adam, matmul, scale, activation,\n"
            "                transform, binary, pad)\n"
            "  --dtype T     float16 or bfloat16 (test, conv2d or matmul): every tensor of the forward\n"
            "                (matmul: set nd_matmul) stored in T, the inputs rounded to it, each\n"
            "                algorithm's bound for T\n"
            "  --set NAME    one grid: layouts, edge, sampled, sampled_3x3, gemm_1x1,\n"
            "                implicit_gemm, wg_gemm, wg_gemm_sim, sim_1x1, depthwise, depthwise_wg, large_values, pool_edges, pool_rows,\n"
            "                pool_planes, pool_sampled, sim_pool,\n"
            "                pool_nan, pool_ties, batch_norm, relu_bwd, xent, xent_large, sgd, adam, matmul, matmul_sim, scale,\n"
            "                activation, transform, binary, pad (grad); gg_binary, gg_act, gg_reduce,\n"
            "                gg_layer_norm, gg_softmax, gg_move, gg_nchw, gg_matmul (grad: pdnn_graph_gradients of\n"
            "                the N-d ops against finite differences; gg_layer_norm also OP layer_norm_bwd)\n"
            "  --gpu-class   OpenCL CPU devices run the GPU-class kernels where AUTO would on a\n"
            "                GPU (wg_gemm inside the backward and matmul algorithms), to check\n"
            "                those paths on PoCL\n"
            "  -v            print every case\n");
}

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->op = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            verbose = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        }
#ifdef PDNN_HAVE_OPENCL
        if (strcmp(a, "--gpu-class") == 0) {
            pdnn__opencl_gpu_class_everywhere(1);
            continue;
        }
#endif
        if (!v || a[0] != '-') {
            fprintf(stderr, "parity: %s: %s\n", a, a[0] == '-' ? "needs a value" : "unexpected argument");
            usage(stderr);
            return -1;
        }
        i++;
        if (strcmp(a, "--mode") == 0) {
            if (strcmp(v, "test") == 0)
                o->mode = MODE_TEST;
            else if (strcmp(v, "perf") == 0)
                o->mode = MODE_PERF;
            else if (strcmp(v, "grad") == 0)
                o->mode = MODE_GRAD;
            else {
                fprintf(stderr, "parity: --mode must be test, perf or grad, got '%s'\n", v);
                return -1;
            }
        } else if (strcmp(a, "--backend") == 0) {
            o->backend = v;
        } else if (strcmp(a, "--op") == 0) {
            o->op = -1;
            for (int op = 0; op < PDNN__OP_COUNT; op++)
                if (strcmp(v, op_label((pdnn__op)op)) == 0)
                    o->op = op;
            if (o->op < 0) {
                fprintf(stderr,
                        "parity: --op must be conv2d, pool2d (test, perf) or conv2d_bwd_data, conv2d_bwd_filter, "
                        "conv2d_bwd_bias, pool2d_bwd, batch_norm_fwd_train, batch_norm_fwd_infer, batch_norm_bwd, "
                        "relu_bwd, softmax_xent, optimizer, matmul, scale, activation, transform, binary, pad "
                        "(grad; matmul, activation, transform, binary also test: their N-d cases), "
                        "index, where (test), "
                        "got '%s'\n",
                        v);
                return -1;
            }
        } else if (strcmp(a, "--algo") == 0) {
            o->algo = v;
        } else if (strcmp(a, "--set") == 0) {
            o->set = v;
        } else if (strcmp(a, "--dtype") == 0) {
            opt_dtype = strcmp(v, "float16") == 0    ? PDNN_FLOAT16
                        : strcmp(v, "bfloat16") == 0 ? PDNN_BFLOAT16
                        : strcmp(v, "float32") == 0  ? PDNN_FLOAT32
                                                     : PDNN_INT32;
            if (opt_dtype == PDNN_INT32) {
                fprintf(stderr, "parity: --dtype must be float32, float16 or bfloat16, got '%s'\n", v);
                return -1;
            }
        } else {
            fprintf(stderr, "parity: unknown option %s\n", a);
            usage(stderr);
            return -1;
        }
    }
    return 0;
}

/* ---- the run ------------------------------------------------------------------ */

typedef struct harness {
    options opt;
    pdnn_context *ctx;
    pdnn_device *host;
    pdnn_device *devs[16];
    int ndev;
    int host_selected; /* /device:CPU:0 is among devs */
} harness;

static const char *op_label(pdnn__op op) { return pdnn__op_name(op); }

static const char *backend_of(pdnn_device *dev, char *buf, size_t len)
{
    pdnn_device_info info;
    pdnn_device_get_info(dev, &info);
    snprintf(buf, len, "%s", info.backend);
    return buf;
}

static const char *dev_name(pdnn_device *dev)
{
    static _Thread_local pdnn_device_info info;
    pdnn_device_get_info(dev, &info);
    return info.name;
}

/* Does a conv algorithm apply to the case on dev (and if not, why)? */
static int conv_applies(pdnn_device *dev, const pdnn__algo *a, const conv_case *k, char *why, size_t len)
{
    pdnn_conv2d_params p;
    conv_params(k, &p);
    const pdnn_tensor_desc xd = th_desc(k->xl, k->n, k->c, k->h, k->w);
    const pdnn_tensor_desc wd = th_desc(k->wl, k->k, k->c / k->groups, k->r, k->s);
    pdnn_conv_algo_info info;
    const int id = pdnn_conv_algo_parse(a->name);
    if (id <= 0) {
        snprintf(why, len, "the algorithm has no public id");
        return 0;
    }
    if (pdnn_conv2d_query_algorithm(dev, &p, &xd, &wd, k->yl, (pdnn_conv_algo)id, &info) != PDNN_SUCCESS) {
        snprintf(why, len, "query failed: %s", pdnn_last_error());
        return 0;
    }
    snprintf(why, len, "%s", info.why);
    return info.applies;
}

/* The label of one run for messages: "tiled", "tiled [tq=8 kb=1]". */
static void fail(backend_stats *b, algo_stats *s, const char *label, const char *cname, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* conv2d forward: the case's call twice more with the frozen filter. The
 * first packs it into the copy an algorithm keeps (where it keeps one),
 * the second reads that copy; each must pass as the call with the plain
 * filter did. Counts a failure and returns 0 otherwise. */
static int frozen_runs_match(dev_run *r, const op_case *oc, const pdnn__algo *a, int cfg, const double *want,
                             const double *scale, const case_data *d, double tol, backend_stats *b, algo_stats *s,
                             const char *label, const char *cname)
{
    for (int call = 1; call <= 2; call++) {
        run_result res;
        r->use_wf = 1;
        run_once(r, oc, a, cfg, 1, &res);
        r->use_wf = 0;
        char why[640] = "";
        if (res.st != PDNN_SUCCESS) {
            snprintf(why, sizeof why, "%s (%s)", res.error, pdnn_status_string(res.st));
        } else if (res.wrong_algo) {
            snprintf(why, sizeof why, "%s ran", pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()));
        } else if (res.guard_hit) {
            snprintf(why, sizeof why, "wrote past its output (guard element %ld)", res.guard_hit - 1);
        } else {
            verdict v;
            compare(r->ylog, want, scale, d->yn, &v);
            if (!(v.worst <= tol)) {
                char el[96];
                snprintf(why, sizeof why, "element %s is %.9g, expected %.9g: normalised error %.3g, tolerance %.3g",
                         element_name(v.at, d->od, el, sizeof el), v.got, v.want, v.worst, tol);
            }
        }
        if (why[0]) {
            fail(b, s, label, cname, "with a frozen filter, call %d (%s): %s", call,
                 call == 1 ? "packing a kept copy" : "reading the kept copy", why);
            return 0;
        }
    }
    return 1;
}

static void run_label(const pdnn__algo *a, int cfg, const char *ran_config, char *buf, size_t len)
{
    char cname[PDNN__CONFIG_LEN] = "";
    if (cfg >= 0 && a->config_name)
        a->config_name(cfg, cname, sizeof cname);
    if (cfg >= 0)
        snprintf(buf, len, "%s [%s]", a->name, cname);
    else if (ran_config && *ran_config) /* its own pick, named for the record */
        snprintf(buf, len, "%s [pick %s]", a->name, ran_config);
    else
        snprintf(buf, len, "%s", a->name);
}

/* Records a failure: counted always, printed for the first few per device
 * and algorithm. */
static void fail(backend_stats *b, algo_stats *s, const char *label, const char *cname, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static void fail(backend_stats *b, algo_stats *s, const char *label, const char *cname, const char *fmt, ...)
{
    b->failed++;
    if (s)
        s->failed++;
    if (s && s->shown >= SHOW_FAILURES && !verbose)
        return;
    if (s)
        s->shown++;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("FAIL %s %s %s: %s: %s\n", b->name, s ? dev_name(s->dev) : "", label, cname, msg);
}

static void skip(backend_stats *b, algo_stats *s, const char *label, const char *cname, const char *why)
{
    count_skip(b, s->algo->name, why);
    s->skipped++;
    if (s->skipped == 1)
        snprintf(s->only_why, sizeof s->only_why, "%s", why);
    else if (strcmp(s->only_why, why) != 0)
        s->why_differs = 1;
    if (verbose)
        printf("skip %s %s %s: %s: %s\n", b->name, dev_name(s->dev), label, cname, why);
}

/* parity.h's accounting, for the case files linked into the harness. */
void parity_pass(pdnn_device *dev, const pdnn__algo *a, const char *cname, double err)
{
    char bname[16];
    backend_stats *b = stats_for(backend_of(dev, bname, sizeof bname));
    algo_stats *s = astats_for(dev, a);
    b->passed++;
    s->passed++;
    if (err > s->worst || s->passed == 1) {
        s->worst = err;
        snprintf(s->worst_where, sizeof s->worst_where, "%s", cname);
    }
    if (verbose)
        printf("pass %s %s %s: %s: error %.3g\n", b->name, dev_name(dev), a->name, cname, err);
}

void parity_fail(pdnn_device *dev, const pdnn__algo *a, const char *cname, const char *fmt, ...)
{
    char bname[16], msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fail(stats_for(backend_of(dev, bname, sizeof bname)), astats_for(dev, a), a->name, cname, "%s", msg);
}

void parity_skip(pdnn_device *dev, const pdnn__algo *a, const char *cname, const char *why)
{
    char bname[16];
    skip(stats_for(backend_of(dev, bname, sizeof bname)), astats_for(dev, a), a->name, cname, why);
}

/* The reference of one case: the naive loop (for the host's own
 * algorithms, and the scale of every comparison) and /device:CPU:0's
 * direct (for every other device), the latter checked against the former. */
typedef struct reference {
    double *naive, *scale, *host;
    int have_host;
} reference;

static void reference_free(reference *ref)
{
    free(ref->naive);
    free(ref->scale);
    free(ref->host);
}

/* Times run_once until about budget seconds have passed (at least 3 runs):
 * the best run's milliseconds, or -1 on failure. */
static double time_runs(dev_run *r, const op_case *oc, const pdnn__algo *a)
{
    const double budget = 0.05;
    double best = -1.0, spent = 0.0;
    for (int i = 0; i < 100 && (i < 3 || spent < budget); i++) {
        run_result res;
        const double t0 = pdnn__now();
        run_once(r, oc, a, -1, 0, &res);
        if (res.st != PDNN_SUCCESS || pdnn_device_synchronize(r->dev) != PDNN_SUCCESS)
            return -1.0;
        const double t = pdnn__now() - t0;
        spent += t;
        best = best < 0.0 || t < best ? t : best;
    }
    return best * 1e3;
}

/* The largest case a GPU-class algorithm runs on a CPU device (2 ms at
 * PoCL's 2 GFLOP/s for them). */
#define GPU_CLASS_CPU_FLOPS 4e6

static int work_is_flops(pdnn__op op) { return is_conv_op(op) && op != PDNN__OP_CONV2D_BWD_BIAS; }

static double case_work(const op_case *oc, const case_data *d)
{
    if (work_is_flops(oc->op)) { /* the forward's multiply-adds, for each of the three */
        const conv_case *k = &oc->u.conv;
        return 2.0 * (double)d->fyn * (double)(k->c / k->groups) * (double)k->r * (double)k->s;
    }
    if (oc->op == PDNN__OP_POOL2D_BWD) /* x and dy read, dx written */
        return (double)(d->xn + d->fyn + d->yn) * sizeof(float);
    return (double)((oc->op == PDNN__OP_CONV2D_BWD_BIAS ? d->fyn : d->xn) + d->yn) * sizeof(float);
}

/* Runs one case on one device: every algorithm that applies, under its
 * own pick and (for all_configs cases) every configuration. */
static void run_case_on(harness *h, const op_case *oc, const case_data *d, reference *ref, pdnn_device *dev)
{
    char bname[16];
    backend_stats *b = stats_for(backend_of(dev, bname, sizeof bname));
    char cname[256];
    case_name(oc, cname, sizeof cname);
    const int is_host = dev == h->host;
    const double *want = is_host ? ref->naive : ref->host;
    const pdnn__algo *const *list = pdnn__algos(dev, oc->op);
    dev_run r;
    int made = 0;
    struct {
        const char *name;
        double ms;
        char label[96];
    } times[32];
    int n_times = 0;
    for (int ai = 0; list[ai]; ai++) {
        const pdnn__algo *a = list[ai];
        if (h->opt.algo && strcasecmp(h->opt.algo, a->name) != 0)
            continue;
        algo_stats *s = astats_for(dev, a);
        char why[PDNN__WHY_LEN + 64] = "";
        if (oc->op == PDNN__OP_CONV2D_FWD && !conv_applies(dev, a, &oc->u.conv, why, sizeof why)) {
            skip(b, s, a->name, cname, why);
            continue;
        }
        /* GPU-class kernels (work-group tiles through local memory) run
         * at a few GFLOP/s on a CPU device, where AUTO passes over them:
         * there the grid checks them on its small cases (every odd size
         * and configuration of their own set is among them); on a GPU on
         * all. */
        if (a->gpu_class && dev->props.kind == PDNN__KIND_CPU && case_work(oc, d) > GPU_CLASS_CPU_FLOPS) {
            skip(b, s, a->name, cname, "a GPU-class kernel on a CPU device: checked there up to 4 MFLOP");
            continue;
        }
        /* Tied maxima: the reference credits the first in row-major order.
         * Host and OpenCL claim that rule; cuDNN documents none, so CUDA's
         * max-pooling gradients are checked on the untied sets only. */
        if (oc->op == PDNN__OP_POOL2D_BWD && oc->ties && oc->u.pool.mode == PDNN_POOL_MAX &&
            strcmp(bname, "host") != 0 && strcmp(bname, "opencl") != 0) {
            skip(b, s, a->name, cname, "the backend does not claim the first-maximum rule for tied maxima");
            continue;
        }
        if (!made) {
            const pdnn_status st = dev_run_make(dev, oc, d, &r);
            made = 1;
            if (st != PDNN_SUCCESS) {
                fail(b, s, a->name, cname, "creating the tensors: %s", pdnn_last_error());
                dev_run_free(&r);
                return;
            }
        }
        /* perf times each algorithm's own pick; test and grad check every
         * configuration of the all_configs sets. */
        const int n_cfg = h->opt.mode != MODE_PERF && oc->all_configs ? a->n_configs : 0;
        for (int cfg = -1; cfg < n_cfg; cfg++) {
            char cfg_name[PDNN__CONFIG_LEN] = "";
            if (cfg >= 0)
                a->config_name(cfg, cfg_name, sizeof cfg_name);
            if (cfg >= 0 && ((oc->op == PDNN__OP_POOL2D_FWD && pool_planned_config(dev, a, oc, d) != cfg) ||
                             (is_backward(oc->op) && is_conv_op(oc->op) &&
                              conv_bwd_planned_config(dev, a, oc, d, cfg) != cfg))) {
                char label[96];
                run_label(a, cfg, NULL, label, sizeof label);
                skip(b, s, label, cname, "configuration does not apply");
                continue;
            }
            run_result res;
            run_once(&r, oc, a, cfg, 1, &res);
            char label[96];
            run_label(a, cfg, res.config, label, sizeof label);
            /* conv2d forward: conv_applies asked about the shape; in a
             * reduced dtype the run may still refuse the dtype. */
            if (res.st == PDNN_ERR_UNSUPPORTED && (oc->op != PDNN__OP_CONV2D_FWD || reduced_dtype())) {
                char buf[PDNN__WHY_LEN];
                skip(b, s, label, cname, refusal_reason(res.error, buf, sizeof buf));
                break; /* no configuration of it runs the case */
            }
            if (res.st != PDNN_SUCCESS) {
                fail(b, s, label, cname, "%s (%s)", res.error, pdnn_status_string(res.st));
                continue;
            }
            if (res.wrong_algo) {
                fail(b, s, label, cname, "asked for %s, %s ran", a->name,
                     pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()));
                continue;
            }
            if (cfg >= 0 && oc->op == PDNN__OP_CONV2D_FWD && strcmp(res.config, cfg_name) != 0) {
                skip(b, s, label, cname, "configuration does not apply");
                continue;
            }
            if (res.guard_hit) {
                fail(b, s, label, cname, "wrote past its output (guard element %ld after it changed)",
                     res.guard_hit - 1);
                continue;
            }
            verdict v;
            compare(r.ylog, want, ref->scale, d->yn, &v);
            const double tol = case_tolerance(oc, a);
            if (!(v.worst <= tol)) {
                char el[96];
                fail(b, s, label, cname, "element %s is %.9g, expected %.9g: normalised error %.3g (scale %.3g), "
                     "tolerance %.3g, against %s",
                     element_name(v.at, d->od, el, sizeof el), v.got, v.want, v.worst, v.scale, tol,
                     is_host ? "the naive loop" : "/device:CPU:0");
                continue;
            }
            if (oc->op == PDNN__OP_CONV2D_FWD && r.wf && h->opt.mode != MODE_PERF &&
                !frozen_runs_match(&r, oc, a, cfg, want, ref->scale, d, tol, b, s, label, cname))
                continue;
            b->passed++;
            s->passed++;
            s->config_runs[cfg >= 0 ? cfg : 0] += cfg >= 0;
            if (v.worst > s->worst || s->passed == 1) {
                s->worst = v.worst;
                snprintf(s->worst_where, sizeof s->worst_where, "%s: %s", label, cname);
            }
            if (verbose)
                printf("pass %s %s %s: %s: error %.3g\n", b->name, dev_name(dev), label, cname, v.worst);
            if (h->opt.mode == MODE_PERF && cfg < 0 && n_times < 32) {
                times[n_times].name = a->name;
                times[n_times].ms = time_runs(&r, oc, a);
                snprintf(times[n_times].label, sizeof times[n_times].label, "%s", label);
                n_times++;
            }
        }
    }
    if (h->opt.mode == MODE_PERF && n_times > 0) {
        double direct_ms = -1.0;
        for (int i = 0; i < n_times; i++)
            if (strcmp(times[i].name, "direct") == 0)
                direct_ms = times[i].ms;
        const double work = case_work(oc, d);
        for (int i = 0; i < n_times; i++) {
            char ratio[32] = "-";
            if (direct_ms > 0.0 && times[i].ms > 0.0)
                snprintf(ratio, sizeof ratio, "%.2fx direct", direct_ms / times[i].ms);
            if (times[i].ms < 0.0)
                printf("perf %s | %s | %s %s | %s | failed to time\n", op_label(oc->op), cname, dev_name(dev),
                       b->name, times[i].label);
            else
                printf("perf %s | %s | %s %s | %s | %.3f ms | %.3g %s | %s\n", op_label(oc->op), cname,
                       dev_name(dev), b->name, times[i].label, times[i].ms, work / (times[i].ms * 1e-3) * 1e-9,
                       work_is_flops(oc->op) ? "GFLOP/s" : "GB/s", ratio);
        }
        fflush(stdout);
    }
    if (made)
        dev_run_free(&r);
}

/* Fills ref for a case: the naive loop always; with need_host also
 * /device:CPU:0's direct in the case's layouts, checked against the naive
 * loop (a failure there is the host's, whatever backends were selected). */
static void make_reference(harness *h, const op_case *oc, case_data *d, int need_host, reference *ref)
{
    memset(ref, 0, sizeof *ref);
    ref->naive = xmalloc((size_t)d->yn * sizeof *ref->naive);
    ref->scale = xmalloc((size_t)d->yn * sizeof *ref->scale);
    char cname[256];
    case_name(oc, cname, sizeof cname);
    if (oc->op == PDNN__OP_CONV2D_FWD) {
        naive_conv(&oc->u.conv, d, ref->naive, ref->scale);
        /* A reduced dtype rounds below its smallest normal in steps of
         * its smallest subnormal: its scale's floor. */
        const double tiny = opt_dtype == PDNN_FLOAT16 ? 0x1p-14 : opt_dtype == PDNN_BFLOAT16 ? 0x1p-126 : 0.0;
        for (int64_t i = 0; i < d->yn; i++)
            ref->scale[i] = fmax(ref->scale[i], tiny);
    } else if (oc->op == PDNN__OP_POOL2D_FWD) {
        naive_pool(&oc->u.pool, d, ref->naive, ref->scale);
    } else {
        char msg[256];
        if (is_conv_op(oc->op))
            naive_conv_backward(oc->op, &oc->u.conv, d, ref->naive, ref->scale);
        else
            naive_pool_backward(&oc->u.pool, d, ref->naive, ref->scale);
        /* Checked once, in the run that includes the host. */
        if (h->host_selected) {
            if (check_naive_backward(oc, d, ref->naive, ref->scale, msg, sizeof msg))
                stats_for("host")->passed++;
            else
                fail(stats_for("host"), NULL, "the naive backward loop", cname, "%s", msg);
        }
    }
    if (!need_host)
        return;
    ref->host = xmalloc((size_t)d->yn * sizeof *ref->host);
    /* Until the host has run: the naive loop stands in, so that other
     * devices are still checked against something independent. */
    memcpy(ref->host, ref->naive, (size_t)d->yn * sizeof *ref->host);
    backend_stats *b = stats_for("host");
    const pdnn__algo *a = pdnn__algo_find(h->host, oc->op, "direct");
    if (!a) {
        fail(b, NULL, "direct (the reference)", cname, "the host backend has no direct %s", op_label(oc->op));
        return;
    }
    dev_run r;
    if (dev_run_make(h->host, oc, d, &r) != PDNN_SUCCESS) {
        fail(b, NULL, "direct (the reference)", cname, "creating the tensors: %s", pdnn_last_error());
        dev_run_free(&r);
        return;
    }
    run_result res;
    run_once(&r, oc, a, -1, 1, &res);
    verdict v;
    if (res.st != PDNN_SUCCESS) {
        fail(b, NULL, "direct (the reference)", cname, "%s", res.error);
    } else {
        compare(r.ylog, ref->naive, ref->scale, d->yn, &v);
        if (!(v.worst <= case_tolerance(oc, a))) {
            char el[96];
            fail(b, NULL, "direct (the reference)", cname,
                 "element %s is %.9g, the naive loop's %.9g: normalised error %.3g", element_name(v.at, d->od, el, sizeof el),
                 v.got, v.want, v.worst);
        } else {
            for (int64_t i = 0; i < d->yn; i++)
                ref->host[i] = r.ylog[i];
            ref->have_host = 1;
        }
    }
    dev_run_free(&r);
}

/* The line of pdnn_context_notes about backend name, or "". */
/* ---- batch normalization (grad mode) ---------------------------------------
 * Its own path through the harness: the op has several outputs (y and the
 * saved and running statistics; dx, dgamma and dbeta), each compared by
 * the normalised error with the naive loops below on every device and
 * algorithm, the host's direct included. The naive backward is checked
 * against central differences of L = <bn(x), dy> in double. */

typedef struct bn_data {
    int64_t m, xn;
    float *x, *gamma, *beta, *rm, *rv, *sm, *si, *dy; /* x and dy in logical NCHW order */
    int running;                                      /* FWD_TRAIN: update running stats */
} bn_data;

static void add_bn_cases(void)
{
    static const bn_case shapes[] = {
        {2, 3, 4, 5, 0, 0.0f, 1},    {1, 5, 3, 3, 0, 0.0f, 1},    /* batch 1: variance over H*W only */
        {17, 6, 2, 3, 0, 0.0f, 1},   {4, 7, 1, 1, 0, 0.0f, 1},    /* batch 17; 1x1 images */
        {1, 3, 1, 1, 0, 0.0f, 0},    {3, 5, 6, 7, 0, 1e3f, 1},    /* zero variance (eps); large means */
        {2, 13, 9, 9, 0, 0.0f, 1},   {8, 32, 14, 14, 0, 0.0f, 1}, /* C not a multiple of 4; many slices */
        {16, 3, 40, 40, 0, 1e3f, 1},
    };
    static const pdnn__op ops[] = {PDNN__OP_BN_FWD_TRAIN, PDNN__OP_BN_FWD_INFER, PDNN__OP_BN_BWD};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int l = 0; l < 2; l++)
            for (int o = 0; o < 3; o++) {
                op_case *c = add_case(ops[o], "batch_norm", 1, 500 + (uint32_t)(i * 10 + (size_t)l));
                c->u.bn = shapes[i];
                c->u.bn.layout = act_layouts[l];
            }
}

static void bn_case_name(const op_case *oc, char *buf, size_t len)
{
    const bn_case *k = &oc->u.bn;
    snprintf(buf, len, "%s n%lld c%lld %lldx%lld %s%s%s",
             oc->op == PDNN__OP_BN_FWD_TRAIN ? "train" : oc->op == PDNN__OP_BN_FWD_INFER ? "inference" : "backward",
             (long long)k->n, (long long)k->c, (long long)k->h, (long long)k->w, pdnn_layout_name(k->layout),
             k->offset != 0.0f ? " mean 1e3" : "", oc->op == PDNN__OP_BN_FWD_TRAIN && !k->running ? " no running" : "");
}

/* The training forward in double over x (logical order): y (may be NULL),
 * the batch mean, the biased variance, and mean |x| per channel. */
static void naive_bn_stats(const bn_case *k, const double *x, double *mean, double *var, double *mabs)
{
    const int64_t hw = k->h * k->w, m = k->n * hw;
    for (int64_t c = 0; c < k->c; c++) {
        double s = 0.0, a = 0.0, q = 0.0;
        for (int64_t n = 0; n < k->n; n++)
            for (int64_t i = 0; i < hw; i++) {
                s += x[(n * k->c + c) * hw + i];
                a += fabs(x[(n * k->c + c) * hw + i]);
            }
        mean[c] = s / (double)m;
        for (int64_t n = 0; n < k->n; n++)
            for (int64_t i = 0; i < hw; i++) {
                const double d = x[(n * k->c + c) * hw + i] - mean[c];
                q += d * d;
            }
        var[c] = q / (double)m;
        mabs[c] = a / (double)m;
    }
}

/* L = <bn_train(x; gamma, beta), dy> in double. */
static double naive_bn_loss(const bn_case *k, const double *x, const double *gamma, const double *beta, const float *dy,
                            double eps)
{
    const int64_t hw = k->h * k->w;
    double *mean = xmalloc((size_t)k->c * sizeof *mean), *var = xmalloc((size_t)k->c * sizeof *var),
           *mabs = xmalloc((size_t)k->c * sizeof *mabs);
    naive_bn_stats(k, x, mean, var, mabs);
    double l = 0.0;
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t c = 0; c < k->c; c++)
            for (int64_t i = 0; i < hw; i++) {
                const int64_t e = (n * k->c + c) * hw + i;
                l += (gamma[c] * (x[e] - mean[c]) / sqrt(var[c] + eps) + beta[c]) * (double)dy[e];
            }
    free(mean);
    free(var);
    free(mabs);
    return l;
}

/* The backward from its formulas with the statistics mean and inv: g is
 * dx (xn), then dgamma (C), then dbeta (C); scale likewise. */
static void naive_bn_backward(const bn_case *k, const bn_data *d, const double *mean, const double *inv, double *g,
                              double *scale)
{
    const int64_t hw = k->h * k->w, m = d->m, C = k->c, xn = d->xn;
    for (int64_t c = 0; c < C; c++) {
        double db = 0.0, dg = 0.0, adb = 0.0, adg = 0.0;
        for (int64_t n = 0; n < k->n; n++)
            for (int64_t i = 0; i < hw; i++) {
                const int64_t e = (n * C + c) * hw + i;
                const double xh = ((double)d->x[e] - mean[c]) * inv[c], dy = d->dy[e];
                db += dy;
                dg += dy * xh;
                adb += fabs(dy);
                adg += fabs(dy) * (fabs(xh) + fabs((double)d->x[e]) * inv[c]);
            }
        g[xn + c] = dg;
        scale[xn + c] = adg;
        g[xn + C + c] = db;
        scale[xn + C + c] = adb;
        const double gm = d->gamma[c];
        for (int64_t n = 0; n < k->n; n++)
            for (int64_t i = 0; i < hw; i++) {
                const int64_t e = (n * C + c) * hw + i;
                const double xh = ((double)d->x[e] - mean[c]) * inv[c], dy = d->dy[e];
                const double big = 1.0 + fabs(xh) + fabs((double)d->x[e]) * inv[c];
                g[e] = gm * inv[c] / (double)m * ((double)m * dy - db - xh * dg);
                scale[e] = fabs(gm) * inv[c] * (fabs(dy) + big * (adb + adg) / (double)m);
            }
    }
}

/* The op's outputs laid end to end: FWD_TRAIN y, saved mean, saved inv
 * std, then (running) running mean and var; FWD_INFER y; BWD dx, dgamma,
 * dbeta. Counts in n[], total returned. */
static int64_t bn_outputs(const op_case *oc, const bn_data *d, int64_t n[5], int *count)
{
    const int64_t C = oc->u.bn.c;
    if (oc->op == PDNN__OP_BN_FWD_INFER) {
        n[0] = d->xn;
        *count = 1;
        return d->xn;
    }
    if (oc->op == PDNN__OP_BN_BWD) {
        n[0] = d->xn, n[1] = n[2] = C;
        *count = 3;
        return d->xn + 2 * C;
    }
    n[0] = d->xn, n[1] = n[2] = n[3] = n[4] = C;
    *count = d->running ? 5 : 3;
    return d->xn + (*count - 1) * C;
}

static const char *bn_output_name(pdnn__op op, int i)
{
    static const char *const train[] = {"y", "saved_mean", "saved_inv_std", "running_mean", "running_var"};
    static const char *const bwd[] = {"dx", "dgamma", "dbeta"};
    return op == PDNN__OP_BN_BWD ? bwd[i] : op == PDNN__OP_BN_FWD_INFER ? "y" : train[i];
}

static void bn_data_make(const op_case *oc, bn_data *d)
{
    const bn_case *k = &oc->u.bn;
    memset(d, 0, sizeof *d);
    d->m = k->n * k->h * k->w;
    d->xn = d->m * k->c;
    d->running = oc->op == PDNN__OP_BN_FWD_TRAIN ? k->running : 1;
    d->x = xmalloc((size_t)d->xn * sizeof *d->x);
    d->dy = xmalloc((size_t)d->xn * sizeof *d->dy);
    fill(d->x, d->xn, oc->seed, 1.0f);
    for (int64_t i = 0; i < d->xn; i++)
        d->x[i] += k->offset;
    fill(d->dy, d->xn, oc->seed + 3, 1.0f);
    float **v[] = {&d->gamma, &d->beta, &d->rm, &d->rv, &d->sm, &d->si};
    for (int i = 0; i < 6; i++)
        *v[i] = xmalloc((size_t)k->c * sizeof **v[i]);
    fill(d->gamma, k->c, oc->seed + 1, 1.0f);
    fill(d->beta, k->c, oc->seed + 2, 1.0f);
    fill(d->rm, k->c, oc->seed + 4, 1.0f);
    fill(d->rv, k->c, oc->seed + 5, 1.0f);
    for (int64_t c = 0; c < k->c; c++) {
        d->rm[c] += k->offset;
        d->rv[c] = 0.5f + fabsf(d->rv[c]);
    }
    /* The backward's saved statistics: the forward's, rounded to float. */
    double *x = xmalloc((size_t)d->xn * sizeof *x), *mean = xmalloc((size_t)k->c * sizeof *mean),
           *var = xmalloc((size_t)k->c * sizeof *var), *mabs = xmalloc((size_t)k->c * sizeof *mabs);
    for (int64_t i = 0; i < d->xn; i++)
        x[i] = d->x[i];
    naive_bn_stats(k, x, mean, var, mabs);
    for (int64_t c = 0; c < k->c; c++) {
        d->sm[c] = (float)mean[c];
        d->si[c] = (float)(1.0 / sqrt(var[c] + BN_EPS));
    }
    free(x);
    free(mean);
    free(var);
    free(mabs);
}

static void bn_data_free(bn_data *d)
{
    float *v[] = {d->x, d->dy, d->gamma, d->beta, d->rm, d->rv, d->sm, d->si};
    for (int i = 0; i < 8; i++)
        free(v[i]);
}

/* The naive reference of every output (bn_outputs' order) and its scale. */
static void naive_bn(const op_case *oc, const bn_data *d, double *ref, double *scale)
{
    const bn_case *k = &oc->u.bn;
    const int64_t C = k->c, hw = k->h * k->w, xn = d->xn;
    double *x = xmalloc((size_t)xn * sizeof *x), *mean = xmalloc((size_t)C * sizeof *mean),
           *var = xmalloc((size_t)C * sizeof *var), *mabs = xmalloc((size_t)C * sizeof *mabs),
           *inv = xmalloc((size_t)C * sizeof *inv);
    for (int64_t i = 0; i < xn; i++)
        x[i] = d->x[i];
    naive_bn_stats(k, x, mean, var, mabs);
    if (oc->op == PDNN__OP_BN_BWD) {
        for (int64_t c = 0; c < C; c++) {
            mean[c] = d->sm[c];
            inv[c] = d->si[c];
        }
        naive_bn_backward(k, d, mean, inv, ref, scale);
    } else {
        const int train = oc->op == PDNN__OP_BN_FWD_TRAIN;
        const double mo = BN_MOMENTUM;
        for (int64_t c = 0; c < C; c++) {
            const double mu = train ? mean[c] : (double)d->rm[c];
            const double iv = 1.0 / sqrt((train ? var[c] : (double)d->rv[c]) + BN_EPS);
            const double ma = train ? mabs[c] : fabs((double)d->rm[c]);
            const double g = d->gamma[c], b = d->beta[c];
            for (int64_t n = 0; n < k->n; n++)
                for (int64_t i = 0; i < hw; i++) {
                    const int64_t e = (n * C + c) * hw + i;
                    ref[e] = g * ((x[e] - mu) * iv) + b;
                    scale[e] = fabs(g) * iv * (fabs(x[e] - mu) + ma + fabs(x[e]) * (train ? 0.0 : 1.0)) + fabs(b);
                }
            if (!train)
                continue;
            const double unb = d->m > 1 ? var[c] * (double)d->m / (double)(d->m - 1) : 0.0;
            ref[xn + c] = mean[c];
            scale[xn + c] = mabs[c];
            ref[xn + C + c] = iv;
            scale[xn + C + c] = iv * (1.0 + mabs[c] * iv);
            ref[xn + 2 * C + c] = (1.0 - mo) * d->rm[c] + mo * mean[c];
            scale[xn + 2 * C + c] = (1.0 - mo) * fabs((double)d->rm[c]) + mo * mabs[c];
            ref[xn + 3 * C + c] = (1.0 - mo) * d->rv[c] + mo * unb;
            scale[xn + 3 * C + c] = (1.0 - mo) * fabs((double)d->rv[c]) + mo * unb * (1.0 + mabs[c] / sqrt(var[c] + BN_EPS));
        }
    }
    free(x);
    free(mean);
    free(var);
    free(mabs);
    free(inv);
}

/* Central differences of L = <bn_train(x), dy> against the naive
 * backward with exact statistics, at a few elements of x, gamma, beta. */
static int check_naive_bn_backward(const op_case *oc, const bn_data *d, char *msg, size_t len)
{
    const bn_case *k = &oc->u.bn;
    const int64_t C = k->c, xn = d->xn;
    if ((double)xn > 2e4)
        return 1;
    double *x = xmalloc((size_t)xn * sizeof *x), *g = xmalloc((size_t)(xn + 2 * C) * sizeof *g),
           *sc = xmalloc((size_t)(xn + 2 * C) * sizeof *sc), *mean = xmalloc((size_t)C * sizeof *mean),
           *var = xmalloc((size_t)C * sizeof *var), *mabs = xmalloc((size_t)C * sizeof *mabs),
           *inv = xmalloc((size_t)C * sizeof *inv), *gm = xmalloc((size_t)C * sizeof *gm),
           *bt = xmalloc((size_t)C * sizeof *bt);
    for (int64_t i = 0; i < xn; i++)
        x[i] = d->x[i];
    for (int64_t c = 0; c < C; c++) {
        gm[c] = d->gamma[c];
        bt[c] = d->beta[c];
    }
    naive_bn_stats(k, x, mean, var, mabs);
    for (int64_t c = 0; c < C; c++)
        inv[c] = 1.0 / sqrt(var[c] + BN_EPS);
    naive_bn_backward(k, d, mean, inv, g, sc);
    int ok = 1;
    const double h = 1e-4;
    for (int t = 0; t < 12 && ok; t++) {
        /* elements of x (0..5), gamma (6..8), beta (9..11) */
        double *v = t < 6 ? x : t < 9 ? gm : bt;
        const int64_t nv = t < 6 ? xn : C, j = t < 6 ? t : t < 9 ? t - 6 : t - 9;
        const int64_t i = t < 6 ? (nv - 1) * j / 5 : (nv - 1) * j / 2;
        const int64_t gi = t < 6 ? i : t < 9 ? xn + i : xn + C + i;
        const double keep = v[i];
        v[i] = keep + h;
        const double lp = naive_bn_loss(k, x, gm, bt, d->dy, BN_EPS);
        v[i] = keep - h;
        const double lm = naive_bn_loss(k, x, gm, bt, d->dy, BN_EPS);
        v[i] = keep;
        const double fd = (lp - lm) / (2.0 * h);
        if (!(fabs(fd - g[gi]) <= 1e-6 * (sc[gi] + fabs(g[gi])) + 1e-9)) {
            snprintf(msg, len, "finite difference of d%s at %lld: %.17g, the naive gradient %.17g",
                     t < 6 ? "x" : t < 9 ? "gamma" : "beta", (long long)i, fd, g[gi]);
            ok = 0;
        }
    }
    free(x);
    free(g);
    free(sc);
    free(mean);
    free(var);
    free(mabs);
    free(inv);
    free(gm);
    free(bt);
    return ok;
}

/* Runs a on dev for the case and reads every output into got (bn_outputs'
 * order, logical). Returns the status; err gets the message. */
static pdnn_status bn_run_on(pdnn_device *dev, const op_case *oc, const bn_data *d, const pdnn__algo *a, float *got,
                             char *err, size_t elen)
{
    const bn_case *k = &oc->u.bn;
    const pdnn_tensor_desc xd = th_desc(k->layout, k->n, k->c, k->h, k->w);
    const pdnn_tensor_desc vd = th_desc(PDNN_LAYOUT_X, k->c, 1, 1, 1);
    pdnn_tensor *x = NULL, *dy = NULL, *out = NULL, *vec[6] = {NULL};
    pdnn_tensor *res[4] = {NULL};
    const float *vsrc[6] = {d->gamma, d->beta, d->rm, d->rv, d->sm, d->si};
    float *xm = xmalloc((size_t)d->xn * sizeof *xm), *ym = xmalloc((size_t)d->xn * sizeof *ym);
    float *nan_fill = xmalloc((size_t)d->xn * sizeof *nan_fill);
    for (int64_t i = 0; i < d->xn; i++)
        nan_fill[i] = NAN;
    th_to_layout(d->x, xm, k->layout, xd.dims);
    pdnn_status st = upload(dev, &xd, xm, &x);
    if (st == PDNN_SUCCESS && oc->op == PDNN__OP_BN_BWD) {
        th_to_layout(d->dy, ym, k->layout, xd.dims);
        st = upload(dev, &xd, ym, &dy);
    }
    for (int i = 0; i < 6 && st == PDNN_SUCCESS; i++)
        st = upload(dev, &vd, vsrc[i], &vec[i]);
    /* The outputs start as NaN: an element never written fails. */
    if (st == PDNN_SUCCESS)
        st = upload(dev, &xd, nan_fill, &out);
    for (int i = 0; i < 4 && st == PDNN_SUCCESS; i++)
        st = upload(dev, &vd, nan_fill, &res[i]);
    pdnn_batch_norm_params p;
    pdnn_batch_norm_params_init(&p);
    p.epsilon = (float)BN_EPS;
    p.momentum = (float)BN_MOMENTUM;
    if (st == PDNN_SUCCESS) {
        pdnn__dispatch_force(oc->op, a->name, -1);
        if (oc->op == PDNN__OP_BN_BWD) {
            st = pdnn_batch_norm_backward(&p, x, dy, vec[0], vec[4], vec[5], out, res[0], res[1]);
        } else if (oc->op == PDNN__OP_BN_FWD_INFER) {
            p.training = 0;
            st = pdnn_batch_norm_forward(&p, x, vec[0], vec[1], vec[2], vec[3], NULL, NULL, out);
        } else {
            /* the running statistics are updated in place: start from rm, rv */
            st = pdnn_batch_norm_forward(&p, x, vec[0], vec[1], d->running ? vec[2] : NULL,
                                         d->running ? vec[3] : NULL, res[0], res[1], out);
        }
        pdnn__dispatch_force(oc->op, NULL, -1);
    }
    if (st == PDNN_SUCCESS && (st = pdnn_tensor_read(out, ym, (size_t)d->xn * sizeof *ym)) == PDNN_SUCCESS)
        th_from_layout(ym, got, k->layout, xd.dims);
    const size_t vb = (size_t)k->c * sizeof(float);
    float *tail = got + d->xn;
    if (st == PDNN_SUCCESS && oc->op == PDNN__OP_BN_BWD) {
        if ((st = pdnn_tensor_read(res[0], tail, vb)) == PDNN_SUCCESS)
            st = pdnn_tensor_read(res[1], tail + k->c, vb);
    } else if (st == PDNN_SUCCESS && oc->op == PDNN__OP_BN_FWD_TRAIN) {
        if ((st = pdnn_tensor_read(res[0], tail, vb)) == PDNN_SUCCESS)
            st = pdnn_tensor_read(res[1], tail + k->c, vb);
        if (st == PDNN_SUCCESS && d->running && (st = pdnn_tensor_read(vec[2], tail + 2 * k->c, vb)) == PDNN_SUCCESS)
            st = pdnn_tensor_read(vec[3], tail + 3 * k->c, vb);
    }
    if (st != PDNN_SUCCESS)
        snprintf(err, elen, "%s", pdnn_last_error());
    pdnn_tensor_release(x);
    pdnn_tensor_release(dy);
    pdnn_tensor_release(out);
    for (int i = 0; i < 6; i++)
        pdnn_tensor_release(vec[i]);
    for (int i = 0; i < 4; i++)
        pdnn_tensor_release(res[i]);
    free(xm);
    free(ym);
    free(nan_fill);
    return st;
}

static void run_bn_case(harness *h, const op_case *oc)
{
    char cname[256];
    bn_case_name(oc, cname, sizeof cname);
    bn_data d;
    bn_data_make(oc, &d);
    int64_t n[5];
    int count = 0;
    (void)bn_outputs(oc, &d, n, &count);
    const int64_t total = d.xn + 4 * oc->u.bn.c; /* room for every output naive_bn writes */
    double *ref = xmalloc((size_t)total * sizeof *ref), *scale = xmalloc((size_t)total * sizeof *scale);
    float *got = xmalloc((size_t)total * sizeof *got);
    naive_bn(oc, &d, ref, scale);
    if (h->host_selected && oc->op == PDNN__OP_BN_BWD) {
        char msg[256];
        if (check_naive_bn_backward(oc, &d, msg, sizeof msg))
            stats_for("host")->passed++;
        else
            fail(stats_for("host"), NULL, "the naive backward loop", cname, "%s", msg);
    }
    for (int di = 0; di < h->ndev; di++) {
        pdnn_device *dev = h->devs[di];
        char bname[16];
        backend_stats *b = stats_for(backend_of(dev, bname, sizeof bname));
        const pdnn__algo *const *list = pdnn__algos(dev, oc->op);
        for (int ai = 0; list[ai]; ai++) {
            const pdnn__algo *a = list[ai];
            if (h->opt.algo && strcasecmp(h->opt.algo, a->name) != 0)
                continue;
            algo_stats *s = astats_for(dev, a);
            char err[512] = "";
            const pdnn_status st = bn_run_on(dev, oc, &d, a, got, err, sizeof err);
            if (st == PDNN_ERR_UNSUPPORTED) {
                char buf[PDNN__WHY_LEN];
                skip(b, s, a->name, cname, refusal_reason(err, buf, sizeof buf));
                continue;
            }
            if (st != PDNN_SUCCESS) {
                fail(b, s, a->name, cname, "%s (%s)", err, pdnn_status_string(st));
                continue;
            }
            double worst = 0.0;
            int bad = 0;
            for (int o = 0, at = 0; o < count && !bad; at += (int)n[o], o++) {
                verdict v;
                compare(got + at, ref + at, scale + at, n[o], &v);
                if (v.worst > worst)
                    worst = v.worst;
                if (!(v.worst <= pdnn__algo_tol(a, PDNN_FLOAT32))) {
                    fail(b, s, a->name, cname,
                         "%s element %lld is %.9g, expected %.9g: normalised error %.3g (scale %.3g), tolerance %.3g, "
                         "against the naive loop",
                         bn_output_name(oc->op, o), (long long)v.at, v.got, v.want, v.worst, v.scale,
                         pdnn__algo_tol(a, PDNN_FLOAT32));
                    bad = 1;
                }
            }
            if (bad)
                continue;
            b->passed++;
            s->passed++;
            if (worst > s->worst || s->passed == 1) {
                s->worst = worst;
                snprintf(s->worst_where, sizeof s->worst_where, "%s", cname);
            }
            if (verbose)
                printf("pass %s %s %s: %s: error %.3g\n", b->name, dev_name(dev), a->name, cname, worst);
        }
    }
    free(ref);
    free(scale);
    free(got);
    bn_data_free(&d);
}

static void backend_note(pdnn_context *ctx, const char *name, char *buf, size_t len)
{
    buf[0] = '\0';
    const char *notes = pdnn_context_notes(ctx);
    const size_t n = strlen(name);
    for (const char *l = notes; l && *l;) {
        const char *e = strchr(l, '\n');
        const size_t ll = e ? (size_t)(e - l) : strlen(l);
        if (ll > n && strncmp(l, name, n) == 0 && l[n] == ':')
            snprintf(buf, len, "%.*s", (int)ll, l);
        l = e ? e + 1 : l + ll;
    }
}

static int by_count(const void *a, const void *b)
{
    const reason *x = a, *y = b;
    return x->count < y->count ? 1 : x->count > y->count ? -1 : strcmp(x->text, y->text);
}

int main(int argc, char **argv)
{
    harness h;
    memset(&h, 0, sizeof h);
    if (parse_options(argc, argv, &h.opt) != 0)
        return EXIT_USAGE;
    if (reduced_dtype() && (h.opt.mode != MODE_TEST || (h.opt.op != PDNN__OP_CONV2D_FWD && h.opt.op != PDNN__OP_GEMM))) {
        fprintf(stderr, "parity: --dtype float16 and bfloat16 run --mode test --op conv2d or matmul only\n");
        return EXIT_USAGE;
    }
    parity_nd_set_dtype(opt_dtype);
    int nb = 0;
    const pdnn__backend *const *bl = pdnn__backend_list(&nb);
    if (h.opt.backend) {
        int known = 0;
        for (int i = 0; i < nb; i++)
            known |= strcmp(bl[i]->name, h.opt.backend) == 0;
        if (!known && strcmp(h.opt.backend, "host") != 0 && strcmp(h.opt.backend, "opencl") != 0 &&
            strcmp(h.opt.backend, "cuda") != 0) {
            fprintf(stderr, "parity: --backend must be host, opencl or cuda, got '%s'\n", h.opt.backend);
            return EXIT_USAGE;
        }
    }

    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = 1; /* take memory as cases need it, not the whole device */
    /* The algorithms' own picks are their defaults, whatever a user's
     * tuning cache holds (POLYDNN_TUNING still overrides). */
    o.tuning = PDNN_TUNING_OFF;
    /* float32 held to float32 tolerances: no TF32 tensor cores on CUDA. */
    o.enable_tensor_float_32_execution = 0;
    if (pdnn_context_create(&o, &h.ctx) != PDNN_SUCCESS) {
        fprintf(stderr, "parity: creating a context: %s\n", pdnn_last_error());
        return 1;
    }
    if (pdnn_device_find(h.ctx, "/cpu:0", &h.host) != PDNN_SUCCESS) {
        fprintf(stderr, "parity: no host device: %s\n", pdnn_last_error());
        pdnn_context_destroy(h.ctx);
        return 1;
    }
    /* Every backend that is built (and selected) gets a line, devices or not. */
    for (int i = 0; i < nb; i++)
        if (!h.opt.backend || strcmp(bl[i]->name, h.opt.backend) == 0)
            stats_for(bl[i]->name)->selected = 1;
    if (h.opt.backend) /* a backend this build lacks: its line says so */
        stats_for(h.opt.backend)->selected = 1;
    for (int i = 0; i < pdnn_device_count(h.ctx) && h.ndev < (int)(sizeof h.devs / sizeof h.devs[0]); i++) {
        pdnn_device *dev = NULL;
        pdnn_device_info info;
        if (pdnn_device_get(h.ctx, i, &dev) != PDNN_SUCCESS || pdnn_device_get_info(dev, &info) != PDNN_SUCCESS)
            continue;
        if (h.opt.backend && strcmp(info.backend, h.opt.backend) != 0)
            continue;
        h.devs[h.ndev++] = dev;
        stats_for(info.backend)->devices++;
    }
    int need_host = 0;
    for (int i = 0; i < h.ndev; i++) {
        need_host |= h.devs[i] != h.host;
        h.host_selected |= h.devs[i] == h.host;
    }

    build_conv_cases();
    build_pool_cases();
    if (h.opt.mode == MODE_GRAD) {
        make_backward_cases();
        add_bn_cases();
    }
    int selected = h.opt.mode == MODE_GRAD ? parity_train_count(h.opt.op, h.opt.set) + parity_nd_math_count(h.opt.op, h.opt.set) +
                                             parity_graph_grad_count(h.opt.op, h.opt.set)
                   : h.opt.mode == MODE_TEST ? parity_nd_count(h.opt.op, h.opt.set) + parity_index_count(h.opt.op, h.opt.set) +
                                                   parity_precision_count(h.opt.op, h.opt.set)
                                             : 0;
    for (int i = 0; i < n_cases; i++)
        selected += (h.opt.op < 0 || (int)cases[i].op == h.opt.op) && (!h.opt.set || strcmp(h.opt.set, cases[i].set) == 0);
    int algo_known = !h.opt.algo || h.ndev == 0;
    for (int i = 0; i < h.ndev && !algo_known; i++)
        for (int op = 0; op < PDNN__OP_COUNT; op++)
            algo_known |= (h.opt.op < 0 || op == h.opt.op) && pdnn__algo_find(h.devs[i], (pdnn__op)op, h.opt.algo);
    if (selected == 0 || !algo_known) {
        if (selected == 0)
            fprintf(stderr, "parity: no case is in set '%s' for the op(s) selected (see --help)\n",
                    h.opt.set ? h.opt.set : "");
        else
            fprintf(stderr, "parity: no selected device has an algorithm named '%s'\n", h.opt.algo);
        free(cases);
        pdnn_context_destroy(h.ctx);
        return EXIT_USAGE;
    }

    const double t0 = pdnn__now();
    for (int ci = 0; ci < n_cases && h.ndev > 0; ci++) {
        const op_case *oc = &cases[ci];
        if ((h.opt.op >= 0 && (int)oc->op != h.opt.op) || (h.opt.set && strcmp(h.opt.set, oc->set) != 0))
            continue;
        /* A reduced dtype's range ends at 65504 (float16): the large
         * values set is float32's. */
        if (reduced_dtype() && (oc->amp[0] != 1.0f || oc->amp[1] != 1.0f || oc->amp[2] != 1.0f))
            continue;
        if (pdnn__op_is_bn(oc->op)) {
            run_bn_case(&h, oc);
            fflush(stdout);
            continue;
        }
        case_data d;
        case_data_make(oc, &d);
        reference ref;
        make_reference(&h, oc, &d, need_host, &ref);
        for (int di = 0; di < h.ndev; di++)
            run_case_on(&h, oc, &d, &ref, h.devs[di]);
        reference_free(&ref);
        case_data_free(&d);
        fflush(stdout);
    }
    if (h.opt.mode == MODE_GRAD && h.ndev > 0)
        parity_train_run(h.host, h.devs, h.ndev, h.opt.op, h.opt.set, h.opt.algo, verbose);
    if (h.opt.mode == MODE_TEST && h.ndev > 0)
        parity_nd_run(h.devs, h.ndev, h.opt.op, h.opt.set, h.opt.algo);
    if (h.opt.mode == MODE_TEST && h.ndev > 0)
        parity_index_run(h.devs, h.ndev, h.opt.op, h.opt.set, h.opt.algo);
    if (h.opt.mode == MODE_GRAD && h.ndev > 0)
        parity_nd_math_run(h.devs, h.ndev, h.opt.op, h.opt.set, h.opt.algo, verbose);
    if (h.opt.mode == MODE_TEST && h.ndev > 0)
        parity_precision_run(h.devs, h.ndev, h.opt.op, h.opt.set, h.opt.algo);
    if (h.opt.mode == MODE_GRAD && h.ndev > 0)
        parity_graph_grad_run(h.host, h.devs, h.ndev, h.opt.op, h.opt.set, h.opt.algo, verbose);

    /* Coverage: an algorithm that ran no case of the whole table, or a
     * configuration that ran on no case, is a hole, not a pass (unless
     * the algorithm refused every case for one reason, such as a library
     * this build lacks). With --set or --op the table is partial and only
     * what ran is judged. */
    const int whole_table = !h.opt.set && h.opt.mode == MODE_TEST;
    for (int i = 0; i < n_astats; i++) {
        algo_stats *s = &astats[i];
        char bname[16];
        backend_stats *b = stats_for(backend_of(s->dev, bname, sizeof bname));
        const long ran = s->passed + s->failed;
        if (ran == 0 && whole_table && (s->skipped == 0 || s->why_differs))
            fail(b, s, s->algo->name, "the whole table", "ran no case: every one was refused or skipped");
        /* Configurations are judged where the grid ran them: the case
         * files (precision, N-d, index) run each algorithm at its default
         * configuration and count none, so an algorithm that only they
         * reach in this table (backward filter in reduced precision, whose
         * float32 grid is grad mode's) has no configuration to judge. */
        long grid_runs = 0;
        for (int c = 0; c < s->algo->n_configs; c++)
            grid_runs += s->config_runs[c];
        for (int c = 0; c < s->algo->n_configs && grid_runs > 0 && whole_table; c++)
            if (s->config_runs[c] == 0) {
                char cn[PDNN__CONFIG_LEN];
                s->algo->config_name(c, cn, sizeof cn);
                fail(b, s, s->algo->name, "the whole table", "configuration %s ran on no case", cn);
            }
    }

    long passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < n_backends; i++) {
        backend_stats *b = &backends[i];
        passed += b->passed;
        failed += b->failed;
        skipped += b->skipped;
        if (!b->selected && b->passed + b->failed + b->skipped == 0)
            continue;
        if (b->devices == 0 && b->passed + b->failed == 0) {
            char note[256];
            int built = 0;
            for (int k = 0; k < nb; k++)
                built |= strcmp(bl[k]->name, b->name) == 0;
            if (built)
                backend_note(h.ctx, b->name, note, sizeof note);
            else
                snprintf(note, sizeof note, "%s: not in this build", b->name);
            printf("backend %s: no device%s%s%s; 0 cases ran\n", b->name, *note ? " (" : "", note, *note ? ")" : "");
            continue;
        }
        printf("backend %s: %ld cases ran, %ld passed, %ld failed, %ld skipped\n", b->name, b->passed + b->failed,
               b->passed, b->failed, b->skipped);
        if (b->n_reasons > 1)
            qsort(b->reasons, (size_t)b->n_reasons, sizeof *b->reasons, by_count);
        for (int r = 0; r < b->n_reasons; r++)
            printf("  skipped %ld: %s\n", b->reasons[r].count, b->reasons[r].text);
        for (int a = 0; a < n_astats; a++) {
            algo_stats *s = &astats[a];
            char bn[16];
            if (strcmp(backend_of(s->dev, bn, sizeof bn), b->name) != 0)
                continue;
            printf("  %s %s %s: %ld passed, %ld failed, %ld skipped", dev_name(s->dev), op_label(s->algo->op),
                   s->algo->name, s->passed, s->failed, s->skipped);
            if (s->passed)
                printf("; worst normalised error %.3g (%s)", s->worst, s->worst_where);
            else if (s->skipped && !s->why_differs)
                printf("; applies to no case here: %s", s->only_why);
            if (s->failed > s->shown)
                printf("; %ld failure(s) not shown (-v shows all)", s->failed - s->shown);
            printf("\n");
        }
    }
    printf("parity: %.1f s\n", pdnn__now() - t0);
    printf("%ld passed, %ld failed, %ld skipped\n", passed, failed, skipped);

    for (int i = 0; i < n_backends; i++) {
        for (int r = 0; r < backends[i].n_reasons; r++)
            free(backends[i].reasons[r].text);
        free(backends[i].reasons);
    }
    for (int i = 0; i < n_astats; i++)
        free(astats[i].config_runs);
    free(astats);
    free(cases);
    pdnn_context_destroy(h.ctx);
    if (failed > 0)
        return 1;
    return passed == 0 ? EXIT_SKIP : 0;
}
