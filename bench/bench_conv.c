/* Convolution benchmark: every distinct convolution of ResNet-50 v1.5
 * (batch from argv, default 1) in both layouts on one device, the direct
 * kernel against the im2col + CLBlast SGEMM peer, measured side by side in
 * one run. Prints a Markdown table of GFLOP/s and the ratio to the peer.
 * The layer table is the tool's (tools/layers.c); `polydnn bench
 * resnet50` measures the same layers with more peers. */
#include "polydnn.h"
#include "tools/layers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_conv: %s: %s\n", what, pdnn_last_error());
    exit(1);
}

/* Best of reps calls after a warm-up, in ms; -1 if the algorithm is not
 * available on this device. */
static double time_conv(pdnn_device *dev, const pdnn_conv2d_params *p, pdnn_tensor *x, pdnn_tensor *w,
                        pdnn_tensor *y, int reps)
{
    pdnn_status st = pdnn_conv2d_forward(p, x, w, NULL, y);
    if (st == PDNN_ERR_UNSUPPORTED)
        return -1;
    if (st != PDNN_SUCCESS || pdnn_device_synchronize(dev) != PDNN_SUCCESS)
        die("conv2d");
    double best = 1e30;
    for (int i = 0; i < reps; i++) {
        double t0 = now();
        if (pdnn_conv2d_forward(p, x, w, NULL, y) != PDNN_SUCCESS || pdnn_device_synchronize(dev) != PDNN_SUCCESS)
            die("conv2d");
        double t = (now() - t0) * 1e3;
        if (t < best)
            best = t;
    }
    return best;
}

int main(int argc, char **argv)
{
    int batch = argc > 1 ? atoi(argv[1]) : 1;
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    const char *devname = argc > 3 ? argv[3] : NULL;
    if (batch < 1 || reps < 1) {
        fprintf(stderr, "usage: bench_conv [batch [reps [device]]]\n");
        return 2;
    }
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = 1;
    pdnn_context *ctx;
    pdnn_device *dev;
    if (pdnn_context_create(&o, &ctx) != PDNN_SUCCESS)
        die("context");
    if ((devname ? pdnn_device_find(ctx, devname, &dev) : pdnn_device_default(ctx, &dev)) != PDNN_SUCCESS)
        die("device");
    pdnn_device_info info;
    pdnn_device_get_info(dev, &info);
    printf("## ResNet-50 v1.5 convolutions, batch %d, %s (%s: %s), best of %d\n\n", batch, info.name,
           info.backend, info.device_name, reps);
    printf("| layer | layout | GFLOP | direct GFLOP/s | tiled GFLOP/s | im2col+CLBlast GFLOP/s (peer) | "
           "tiled / peer |\n");
    printf("| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
    double log_ratio = 0, log_direct = 0, log_peer = 0, log_tiled = 0;
    int n_ratio = 0;
    const layer_set *set = &layer_set_resnet50;
    for (int i = 0; i < set->n_convs; i++) {
        const layer_conv *L = &set->convs[i];
        for (int lay = 0; lay < 2; lay++) {
            pdnn_layout al = lay ? PDNN_NHWC : PDNN_NCHW, fl = lay ? PDNN_OHWI : PDNN_OIHW;
            pdnn_tensor_desc xd = {PDNN_FLOAT32, al, {batch, L->c, L->hw, L->hw}, 0};
            pdnn_tensor_desc wd = {PDNN_FLOAT32, fl, {L->k, L->c, L->rs, L->rs}, 0};
            pdnn_conv2d_params p;
            pdnn_conv2d_params_init(&p);
            p.stride_h = p.stride_w = L->stride;
            p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = L->pad;
            pdnn_tensor_desc yd = {PDNN_FLOAT32, al, {0}, 0};
            if (pdnn_conv2d_output_dims(&xd, &wd, &p, yd.dims) != PDNN_SUCCESS)
                die("output dims");
            pdnn_tensor *x, *w, *y;
            if (pdnn_tensor_create(dev, &xd, &x) || pdnn_tensor_create(dev, &wd, &w) ||
                pdnn_tensor_create(dev, &yd, &y))
                die("tensors");
            /* Values do not change the timing; zeros avoid a host fill. */
            size_t xb = (size_t)pdnn_tensor_desc_bytes(&xd), wb = (size_t)pdnn_tensor_desc_bytes(&wd);
            float *zx = calloc(1, xb), *zw = calloc(1, wb);
            if (!zx || !zw || pdnn_tensor_write(x, zx, xb) || pdnn_tensor_write(w, zw, wb))
                die("write");
            free(zx);
            free(zw);
            double gflop = 2.0 * (double)yd.dims[0] * (double)yd.dims[1] * (double)yd.dims[2] *
                           (double)yd.dims[3] * L->c * L->rs * L->rs / 1e9;
            p.algorithm = PDNN_CONV_ALGO_DIRECT;
            double td = time_conv(dev, &p, x, w, y, reps);
            p.algorithm = PDNN_CONV_ALGO_TILED;
            double tt = time_conv(dev, &p, x, w, y, reps);
            p.algorithm = PDNN_CONV_ALGO_IM2COL_GEMM;
            double tg = time_conv(dev, &p, x, w, y, reps);
            double gd = gflop / (td * 1e-3), gt = tt > 0 ? gflop / (tt * 1e-3) : 0;
            double gg = tg > 0 ? gflop / (tg * 1e-3) : 0;
            char tcol[32] = "n/a", gcol[32] = "n/a", rcol[32] = "n/a";
            if (tt > 0)
                snprintf(tcol, sizeof tcol, "%.1f", gt);
            if (tg > 0)
                snprintf(gcol, sizeof gcol, "%.1f", gg);
            if (tt > 0 && tg > 0)
                snprintf(rcol, sizeof rcol, "%.2f", gt / gg);
            printf("| %s | %s | %.3f | %.1f | %s | %s | %s |\n", L->name, pdnn_layout_name(al), gflop, gd, tcol, gcol,
                   rcol);
            fflush(stdout);
            if (tt > 0 && tg > 0) {
                log_ratio += log(gt / gg);
                log_peer += log(gg);
                log_tiled += log(gt);
                n_ratio++;
            }
            log_direct += log(gd);
            pdnn_tensor_release(x);
            pdnn_tensor_release(w);
            pdnn_tensor_release(y);
        }
    }
    int n = 2 * set->n_convs;
    printf("\nGeometric means: direct %.1f GFLOP/s", exp(log_direct / n));
    if (n_ratio)
        printf(", tiled %.1f GFLOP/s, im2col+CLBlast %.1f GFLOP/s, tiled / peer %.2f", exp(log_tiled / n_ratio),
               exp(log_peer / n_ratio), exp(log_ratio / n_ratio));
    printf("\n");
    pdnn_context_destroy(ctx);
    return 0;
}
