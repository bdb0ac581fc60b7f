/* float16 and bfloat16 storage against float32 (issue 43's speed
 * targets), side by side in one run on one device: each op is timed in
 * the three dtypes in alternating rounds (best of each), so the ratios
 * hold on a loaded machine where the absolute numbers do not. Memory-bound
 * ops (max pooling, depthwise convolution, batch norm, elementwise: ReLU6
 * and add) print
 * elements per second and GB/s moved; the 3x3 and 1x1 convolutions,
 * compute-bound, GFLOP/s. Each row ends with the ratio to float32 (issue 43: at least
 * 1.6x for the memory-bound ops, 0.9x for the convolution). The matmuls
 * (ND operands, GFLOP/s) are a ViT-B/16 layer's at batch 1: the linear
 * layers (197x768 by 768x768, B stored as is and transposed, as a torch
 * Linear holds it) and attention's two batched products over 12 heads
 * (Q K^T: 197x64 by 197x64 transposed; A V: 197x197 by 197x64).
 * conv3x3_bwd_data and conv3x3_bwd_filter are the 3x3's backward
 * directions (the filter's at batch 8, as AUTO runs it in each dtype).
 * maxpool3x3s2_bwd and avgpool2x2_bwd are pooling's backward at batch 8
 * (dx from x and dy; the average reads no x), memory-bound: dx's
 * elements per second, GB/s of x, dy and dx (plane's float32 workspace
 * in the reduced dtypes not counted).
 * dw3x3_bwd_data and dw3x3_bwd_filter are a depthwise 3x3's backward
 * directions at batch 8 in MobileNetV2's shapes (_32x112: its first
 * block's 32 channels at 112x112; _144x56: 144 at 56x56; stride 1,
 * padding 1), memory-bound: elements of dx, or of x for the filter, per
 * second; GB/s of dy, w and dx, or of x, dy and dw.
 * ALGO (an algorithm's name) runs the forward convolutions by it instead
 * of AUTO's pick; "frozen" freezes their filters (pdnn_tensor_freeze, as
 * a session's constants are), so that an algorithm keeps its packed
 * filter across calls instead of packing it in every call.
 *     bench_lowp [rounds [device [op [ALGO|auto [frozen]]]]]
 *     (default 5, the first GPU/OpenCL device, every op, AUTO) */
#include "polydnn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The process's CPU time (every thread's, PoCL's workers included), in
 * seconds: on a machine shared with other jobs it counts the work done
 * where the wall clock also counts the waits for a core. */
static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec * 1e-6;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_lowp: %s: %s\n", what, pdnn_last_error());
    exit(1);
}

enum { MAXPOOL, DEPTHWISE, BATCHNORM, RELU6, ADD, CONV3X3, CONV1X1, LINEAR, LINEAR_NT, ATTN_QK, ATTN_AV, BWD3X3,
       BWDF3X3, MAXPOOL_BWD, AVGPOOL_BWD, DW_BWD_DATA_32, DW_BWD_DATA_144, DW_BWD_FILTER_32, DW_BWD_FILTER_144,
       N_OPS };
static const char *const op_names[N_OPS] = {"maxpool3x3s2", "depthwise3x3", "batchnorm", "relu6", "add",
                                            "conv3x3", "conv1x1", "linear", "linear_nt", "attn_qk", "attn_av",
                                            "conv3x3_bwd_data", "conv3x3_bwd_filter", "maxpool3x3s2_bwd",
                                            "avgpool2x2_bwd", "dw3x3_bwd_data_32x112", "dw3x3_bwd_data_144x56",
                                            "dw3x3_bwd_filter_32x112", "dw3x3_bwd_filter_144x56"};
/* The depthwise backward ops' channels and image size. */
static int dw_bwd_channels(int op) { return op == DW_BWD_DATA_32 || op == DW_BWD_FILTER_32 ? 32 : 144; }
static int is_matmul(int op) { return op >= LINEAR && op <= ATTN_AV; }

typedef struct bench_op {
    int op;
    pdnn_layout layout;
    pdnn_dtype dtype;
    pdnn_tensor *x, *w, *y, *g, *b, *m, *v;
    double elems, bytes, flops; /* per call */
} bench_op;

/* The memory-bound ops' batch: float32's tensors of 100 MB, past the
 * last-level cache (32 MB here), so that they measure memory, not cache. */
#define NB 32

/* A tensor of dtype t, layout l (PDNN_ND: rank 3, {n, c, h}, w 1). */
static pdnn_tensor *make(pdnn_device *dev, pdnn_dtype t, pdnn_layout l, int64_t n, int64_t c, int64_t h, int64_t w,
                         float scale)
{
    pdnn_tensor_desc d = {PDNN_FLOAT32, l, {n, c, h, w}, l == PDNN_ND ? 3 : 4};
    pdnn_tensor *f, *r;
    if (pdnn_tensor_create(dev, &d, &f) != PDNN_SUCCESS)
        die("tensor_create");
    const size_t count = (size_t)(n * c * h * w);
    float *v = malloc(count * sizeof *v);
    for (size_t i = 0; i < count; i++)
        v[i] = scale * (float)((int)(i * 2654435761u % 2001u) - 1000) / 1000.0f + (l == PDNN_LAYOUT_X ? 1.5f : 0);
    if (pdnn_tensor_write(f, v, count * sizeof *v) != PDNN_SUCCESS)
        die("tensor_write");
    free(v);
    if (t == PDNN_FLOAT32)
        return f;
    d.dtype = t;
    if (pdnn_tensor_create(dev, &d, &r) != PDNN_SUCCESS || pdnn_cast(f, r) != PDNN_SUCCESS)
        die("cast");
    pdnn_tensor_release(f);
    return r;
}

static void setup(pdnn_device *dev, bench_op *b)
{
    const pdnn_layout l = b->layout, fl = l == PDNN_NHWC ? PDNN_OHWI : PDNN_OIHW;
    const pdnn_dtype t = b->dtype;
    const double es = t == PDNN_FLOAT32 ? 4 : 2;
    switch (b->op) {
    case MAXPOOL: /* ResNet's stem pool */
        b->x = make(dev, t, l, NB, 64, 112, 112, 1);
        b->y = make(dev, t, l, NB, 64, 56, 56, 1);
        b->elems = NB * 64.0 * 56 * 56;
        b->bytes = es * (NB * 64.0 * 112 * 112 + b->elems);
        break;
    case DEPTHWISE: /* MobileNetV2's 56x56 stage */
        b->x = make(dev, t, l, NB, 144, 56, 56, 1);
        b->w = make(dev, t, fl, 144, 1, 3, 3, 0.3f);
        b->y = make(dev, t, l, NB, 144, 56, 56, 1);
        b->elems = NB * 144.0 * 56 * 56;
        b->bytes = es * 2 * b->elems;
        break;
    case BATCHNORM:
        b->x = make(dev, t, l, NB, 64, 112, 112, 1);
        b->y = make(dev, t, l, NB, 64, 112, 112, 1);
        b->g = make(dev, t, PDNN_LAYOUT_X, 64, 1, 1, 1, 0.2f);
        b->b = make(dev, t, PDNN_LAYOUT_X, 64, 1, 1, 1, 0.2f);
        b->m = make(dev, t, PDNN_LAYOUT_X, 64, 1, 1, 1, 0.2f);
        b->v = make(dev, t, PDNN_LAYOUT_X, 64, 1, 1, 1, 0.2f);
        b->elems = NB * 64.0 * 112 * 112;
        b->bytes = es * 2 * b->elems;
        break;
    case RELU6:
    case ADD:
        b->x = make(dev, t, l, NB, 64, 112, 112, 1);
        b->w = b->op == ADD ? make(dev, t, l, NB, 64, 112, 112, 1) : NULL;
        b->y = make(dev, t, l, NB, 64, 112, 112, 1);
        b->elems = NB * 64.0 * 112 * 112;
        b->bytes = es * (b->op == ADD ? 3 : 2) * b->elems;
        break;
    case CONV1X1: /* ResNet-50's 1x1 of 256 to 64 channels at 56x56, batch 1 */
        b->x = make(dev, t, l, 1, 256, 56, 56, 1);
        b->w = make(dev, t, fl, 64, 256, 1, 1, 0.1f);
        b->y = make(dev, t, l, 1, 64, 56, 56, 1);
        b->elems = 64.0 * 56 * 56;
        b->bytes = es * 5 * b->elems;
        b->flops = 2.0 * 64 * 56 * 56 * 256;
        break;
    case LINEAR:
    case LINEAR_NT:
    case ATTN_QK:
    case ATTN_AV: {
        /* batch, m, n, k of the product; B stored n x k where transposed */
        const int64_t nb = b->op >= ATTN_QK ? 12 : 1, m = 197, n = b->op == ATTN_QK ? 197 : b->op == ATTN_AV ? 64 : 768;
        const int64_t k = b->op == ATTN_QK ? 64 : b->op == ATTN_AV ? 197 : 768;
        b->x = make(dev, t, PDNN_ND, nb, m, k, 1, 1);
        b->w = b->op == LINEAR_NT || b->op == ATTN_QK ? make(dev, t, PDNN_ND, nb, n, k, 1, 0.1f)
                                                      : make(dev, t, PDNN_ND, nb, k, n, 1, 0.1f);
        b->y = make(dev, t, PDNN_ND, nb, m, n, 1, 1);
        b->elems = (double)(nb * m * n);
        b->bytes = es * (double)(nb * (m * k + k * n + m * n));
        b->flops = 2.0 * (double)(nb * m * n * k);
        break;
    }
    case BWDF3X3: /* ResNet's 3x3 at 56x56's backward filter at batch 8: dw (w) from x and dy (y) */
        b->x = make(dev, t, l, 8, 64, 56, 56, 1);
        b->w = make(dev, t, fl, 64, 64, 3, 3, 0.1f);
        b->y = make(dev, t, l, 8, 64, 56, 56, 0.1f);
        b->elems = 64.0 * 64 * 9;
        b->bytes = es * (2 * 8 * 64.0 * 56 * 56 + b->elems);
        b->flops = 2.0 * 8 * 64 * 56 * 56 * 64 * 9;
        break;
    case MAXPOOL_BWD: /* the stem pool's backward at batch 8: dx (g) from x and dy (y) */
    case AVGPOOL_BWD: /* a 2x2/2 average's backward at batch 8: dx (g) from dy (y) */
        b->x = make(dev, t, l, 8, 64, 112, 112, 1);
        b->y = make(dev, t, l, 8, 64, 56, 56, 1);
        b->g = make(dev, t, l, 8, 64, 112, 112, 1);
        b->elems = 8 * 64.0 * 112 * 112;
        b->bytes = es * ((b->op == MAXPOOL_BWD ? 2 : 1) * b->elems + 8 * 64.0 * 56 * 56);
        break;
    case DW_BWD_DATA_32:
    case DW_BWD_DATA_144:
    case DW_BWD_FILTER_32:
    case DW_BWD_FILTER_144: { /* dx (x) from dy (y) and w, or dw (w) from x and dy */
        const int64_t c = dw_bwd_channels(b->op), hw = c == 32 ? 112 : 56;
        b->x = make(dev, t, l, 8, c, hw, hw, 1);
        b->w = make(dev, t, fl, c, 1, 3, 3, 0.3f);
        b->y = make(dev, t, l, 8, c, hw, hw, 0.1f);
        b->elems = 8.0 * (double)(c * hw * hw);
        b->bytes = es * (2 * b->elems + 9.0 * (double)c);
        break;
    }
    default: /* ResNet's 3x3 at 56x56, batch 1 (conv3x3_bwd_data: its backward data, dx into x) */
        b->x = make(dev, t, l, 1, 64, 56, 56, 1);
        b->w = make(dev, t, fl, 64, 64, 3, 3, 0.1f);
        b->y = make(dev, t, l, 1, 64, 56, 56, 1);
        b->elems = 64.0 * 56 * 56;
        b->bytes = es * 2 * b->elems;
        b->flops = 2.0 * 64 * 56 * 56 * 64 * 9;
        break;
    }
}

/* The forward convolutions' algorithm (argument 4; AUTO by default). */
static pdnn_conv_algo conv_algo = PDNN_CONV_ALGO_AUTO;

static pdnn_status call(const bench_op *b)
{
    pdnn_conv2d_params cp;
    pdnn_conv2d_params_init(&cp);
    cp.algorithm = conv_algo;
    cp.pad_top = cp.pad_bottom = cp.pad_left = cp.pad_right = 1;
    switch (b->op) {
    case MAXPOOL: {
        pdnn_pool2d_params p;
        pdnn_pool2d_params_init(&p);
        p.mode = PDNN_POOL_MAX;
        p.window_h = p.window_w = 3;
        p.stride_h = p.stride_w = 2;
        p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
        return pdnn_pool2d_forward(&p, b->x, b->y);
    }
    case DEPTHWISE:
        cp.groups = 144;
        return pdnn_conv2d_forward(&cp, b->x, b->w, NULL, b->y);
    case BATCHNORM: {
        pdnn_batch_norm_params p;
        pdnn_batch_norm_params_init(&p);
        p.training = 0;
        return pdnn_batch_norm_forward(&p, b->x, b->g, b->b, b->m, b->v, NULL, NULL, b->y);
    }
    case RELU6: return pdnn_activation_forward(b->x, PDNN_ACTIVATION_CLIP, 0, 6, b->y);
    case ADD: return pdnn_binary(b->x, b->w, PDNN_BINARY_ADD, b->y);
    case CONV1X1:
        pdnn_conv2d_params_init(&cp);
        cp.algorithm = conv_algo;
        return pdnn_conv2d_forward(&cp, b->x, b->w, NULL, b->y);
    case LINEAR:
    case ATTN_AV: return pdnn_matmul(b->x, b->w, 0, 0, b->y);
    case LINEAR_NT:
    case ATTN_QK: return pdnn_matmul(b->x, b->w, 0, 1, b->y);
    case BWD3X3: return pdnn_conv2d_backward_data(&cp, b->y, b->w, b->x);
    case BWDF3X3: return pdnn_conv2d_backward_filter(&cp, b->x, b->y, b->w);
    case DW_BWD_DATA_32:
    case DW_BWD_DATA_144: cp.groups = dw_bwd_channels(b->op); return pdnn_conv2d_backward_data(&cp, b->y, b->w, b->x);
    case DW_BWD_FILTER_32:
    case DW_BWD_FILTER_144:
        cp.groups = dw_bwd_channels(b->op);
        return pdnn_conv2d_backward_filter(&cp, b->x, b->y, b->w);
    case MAXPOOL_BWD:
    case AVGPOOL_BWD: {
        pdnn_pool2d_params p;
        pdnn_pool2d_params_init(&p);
        p.mode = b->op == MAXPOOL_BWD ? PDNN_POOL_MAX : PDNN_POOL_AVG_EXCLUDE_PADDING;
        p.window_h = p.window_w = b->op == MAXPOOL_BWD ? 3 : 2;
        p.stride_h = p.stride_w = 2;
        p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = b->op == MAXPOOL_BWD;
        return pdnn_pool2d_backward(&p, b->x, b->y, b->g);
    }
    default: return pdnn_conv2d_forward(&cp, b->x, b->w, NULL, b->y);
    }
}

/* Best of three calls, in seconds, wall and CPU (*cpu); 0 where the
 * device refuses the op in this dtype. */
static double time_op(pdnn_device *dev, const bench_op *b, double *cpu)
{
    double best = 1e30;
    *cpu = 1e30;
    for (int i = 0; i < 3; i++) {
        const double t0 = now(), c0 = cpu_now();
        const pdnn_status st = call(b);
        if (st == PDNN_ERR_UNSUPPORTED)
            return 0;
        if (st != PDNN_SUCCESS || pdnn_device_synchronize(dev) != PDNN_SUCCESS)
            die(op_names[b->op]);
        const double t = now() - t0, c = cpu_now() - c0;
        best = t < best ? t : best;
        *cpu = c < *cpu ? c : *cpu;
    }
    return best;
}

static void release(bench_op *b)
{
    pdnn_tensor *ts[] = {b->x, b->w, b->y, b->g, b->b, b->m, b->v};
    for (int i = 0; i < 7; i++)
        pdnn_tensor_release(ts[i]);
}

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 5;
    const char *devname = argc > 2 ? argv[2] : "/gpu:0";
    const char *only = argc > 3 ? argv[3] : NULL;
    const int algo = argc > 4 ? pdnn_conv_algo_parse(argv[4]) : PDNN_CONV_ALGO_AUTO;
    const int frozen = argc > 5 && strcmp(argv[5], "frozen") == 0;
    if (rounds < 1 || algo < 0 || (argc > 5 && !frozen)) {
        fprintf(stderr, "usage: bench_lowp [rounds [device [op [ALGO|auto [frozen]]]]]\n");
        return 2;
    }
    conv_algo = (pdnn_conv_algo)algo;
    pdnn_context *ctx;
    pdnn_device *dev;
    if (pdnn_context_create(NULL, &ctx) != PDNN_SUCCESS || pdnn_device_find(ctx, devname, &dev) != PDNN_SUCCESS)
        die(devname);
    static const pdnn_dtype dts[3] = {PDNN_FLOAT32, PDNN_FLOAT16, PDNN_BFLOAT16};
    static const char *const dt_names[3] = {"float32", "float16", "bfloat16"};
    printf("| op | layout | dtype | ms | Gelem/s | GB/s | ratio to float32 | CPU ms | ratio by CPU time |\n"
           "|---|---|---|---|---|---|---|---|---|\n");
    for (int op = 0; op < N_OPS; op++) {
        if (only && strcmp(only, op_names[op]) != 0)
            continue;
        for (int li = 0; li < (is_matmul(op) ? 1 : 2); li++) {
            const char *ln = is_matmul(op) ? "ND" : li ? "NHWC" : "NCHW";
            bench_op b[3];
            double best[3] = {1e30, 1e30, 1e30}, cbest[3] = {1e30, 1e30, 1e30};
            for (int k = 0; k < 3; k++) {
                memset(&b[k], 0, sizeof b[k]);
                b[k].op = op;
                b[k].layout = li ? PDNN_NHWC : PDNN_NCHW;
                b[k].dtype = dts[k];
                setup(dev, &b[k]);
                if (frozen && (op == CONV3X3 || op == CONV1X1 || op == DEPTHWISE) &&
                    pdnn_tensor_freeze(b[k].w) != PDNN_SUCCESS)
                    die("tensor_freeze");
                if (call(&b[k]) == PDNN_ERR_UNSUPPORTED) /* warm-up: kernel builds, plans */
                    printf("<!-- %s %s %s: %s -->\n", op_names[op], ln, dt_names[k],
                           pdnn_last_error());
            }
            for (int r = 0; r < rounds; r++)
                for (int k = 0; k < 3; k++) {
                    double c;
                    const double t = time_op(dev, &b[k], &c);
                    best[k] = t > 0 && t < best[k] ? t : t == 0 ? 0 : best[k];
                    cbest[k] = c < cbest[k] ? c : cbest[k];
                }
            for (int k = 0; k < 3; k++) {
                if (best[k] == 0) {
                    printf("| %s | %s | %s | refused | | | | | |\n", op_names[op], ln, dt_names[k]);
                    continue;
                }
                const double rate = b[k].flops > 0 ? b[k].flops / best[k] : b[k].elems / best[k];
                const double base = b[0].flops > 0 ? b[0].flops / best[0] : b[0].elems / best[0];
                printf("| %s | %s | %s | %.3f | %.3f | %.2f | %.2fx%s | %.3f | %.2fx |\n", op_names[op],
                       ln, dt_names[k], best[k] * 1e3, b[k].elems / best[k] * 1e-9,
                       b[k].bytes / best[k] * 1e-9, best[0] > 0 ? rate / base : 0.0,
                       b[k].flops > 0 ? " (GFLOP/s)" : "", cbest[k] * 1e3, cbest[k] > 0 ? cbest[0] / cbest[k] : 0.0);
                release(&b[k]);
            }
            fflush(stdout);
        }
    }
    pdnn_context_destroy(ctx);
    return 0;
}
