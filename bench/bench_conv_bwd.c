/* Backward convolution on one device: ResNet-50 v1.5's distinct
 * convolutions (tools/layers.c), backward data and backward filter, by
 * AUTO (the tuning cache's choice; POLYDNN_TUNING=search measures), each
 * timed (best of iters after a warm-up) against oneDNN's backward
 * primitives on the host CPU in the same run, with GFLOP/s (the forward's
 * 2 N K C R S P Q / groups) and % of the device's measured FMA peak.
 *
 * A second peer on the same device: the im2col + CLBlast SGEMM backward
 * (the "im2col_gemm" algorithm, forced by id), the baseline most OpenCL
 * frameworks train with.
 *
 *   bench/bench_conv_bwd [batch [iters [device [layout [layers [dir]]]]]]
 *       (defaults 8, 3, the first GPU-class device, NCHW, every layer,
 *        both directions; layers: only those whose name contains it, e.g.
 *        "/2", or "" for all; dir: data or filter; BENCH_NO_IM2COL=1 leaves
 *        the im2col peer out)
 *
 * Markdown on stdout, a geometric mean per direction. Without oneDNN (no
 * --with-dnnl) or CLBlast its columns are "-". */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "polydnn.h"
#include "tools/layers.h"
#ifdef PDNN_HAVE_DNNL
#include "tools/peer_dnnl.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The clock; also the tool's cli_now, which peer_dnnl.c times with. */
double cli_now(void);
double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
#define now cli_now

static void fill(float *v, int64_t n, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((double)(*s >> 40) / (double)(1ull << 24) - 0.5);
    }
}

static pdnn_tensor *upload(pdnn_device *dev, const pdnn_tensor_desc *d, const float *v)
{
    pdnn_tensor *t = NULL;
    if (pdnn_tensor_create(dev, d, &t) != PDNN_SUCCESS)
        return NULL;
    if (v && pdnn_tensor_write(t, v, (size_t)pdnn_tensor_desc_bytes(d)) != PDNN_SUCCESS) {
        pdnn_tensor_release(t);
        return NULL;
    }
    return t;
}

static int die(const char *what)
{
    fprintf(stderr, "bench_conv_bwd: %s: %s\n", what, pdnn_last_error());
    return 1;
}

typedef struct geo {
    double sum;
    int n;
} geo;
static void geo_add(geo *g, double v)
{
    if (v > 0)
        g->sum += log(v), g->n++;
}
static double geo_mean(const geo *g) { return g->n ? exp(g->sum / g->n) : 0.0; }

int main(int argc, char **argv)
{
    const int batch = argc > 1 ? atoi(argv[1]) : 8, iters = argc > 2 ? atoi(argv[2]) : 3;
    const char *devname = argc > 3 ? argv[3] : "/gpu:0";
    const pdnn_layout layout = argc > 4 && strcmp(argv[4], "NHWC") == 0 ? PDNN_NHWC : PDNN_NCHW;
    const char *only = argc > 5 && argv[5][0] ? argv[5] : NULL;
    const int dir0 = argc > 6 && strcmp(argv[6], "filter") == 0, dir1 = argc > 6 && strcmp(argv[6], "data") == 0 ? 1 : 2;
    /* BENCH_NO_IM2COL=1 leaves the slow im2col peer out of quick runs. */
    const char *no_im2col = getenv("BENCH_NO_IM2COL");
    const int skip_im2col = no_im2col && strcmp(no_im2col, "1") == 0;
    const int im2col[2] = {skip_im2col ? -1 : pdnn_conv_bwd_algo_parse(PDNN_CONV_BWD_DATA, "im2col_gemm"),
                           skip_im2col ? -1 : pdnn_conv_bwd_algo_parse(PDNN_CONV_BWD_FILTER, "im2col_gemm")};
    if (batch < 1 || iters < 1) {
        fprintf(stderr, "usage: bench_conv_bwd [batch [iters [device [NCHW|NHWC [layers [data|filter]]]]]]\n");
        return 2;
    }
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = 1;
    pdnn_context *ctx = NULL;
    pdnn_device *dev = NULL;
    if (pdnn_context_create(&o, &ctx) != PDNN_SUCCESS)
        return die("creating a context");
    if (pdnn_device_find(ctx, devname, &dev) != PDNN_SUCCESS)
        return die(devname);
    pdnn_device_info info;
    pdnn_device_get_info(dev, &info);
    double peak = 0, gbs = 0;
    if (pdnn_device_measure_peak(dev, &peak, &gbs) != PDNN_SUCCESS)
        peak = 0;
#ifdef PDNN_HAVE_DNNL
    peer_dnnl *dn = NULL;
    char err[256], dver[64];
    if (peer_dnnl_open(&dn, err, sizeof err))
        fprintf(stderr, "bench_conv_bwd: %s\n", err);
    peer_dnnl_describe(dver, sizeof dver);
#else
    const char *dver = "oneDNN (not built: configure --with-dnnl)";
#endif
    printf("## Backward convolution, ResNet-50 v1.5 layers, batch %d, %s, %s (%s, %s)\n\n", batch,
           pdnn_layout_name(layout), info.name, info.backend, info.device_name);
    printf("Measured peak: %.1f GFLOP/s fp32 FMA. Peers: %s on the host CPU, same shapes and layout; "
           "im2col + CLBlast SGEMM (algorithm im2col_gemm) on the same device. Best of %d after a warm-up.\n\n",
           peak, dver, iters);
    printf("| layer | direction | GFLOP | ms | GFLOP/s | %% of peak | oneDNN ms | oneDNN GFLOP/s | polydnn / oneDNN "
           "| im2col ms | im2col GFLOP/s | polydnn / im2col |\n");
    printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    const layer_set *set = &layer_set_resnet50;
    geo ours[2] = {{0, 0}, {0, 0}}, peer[2] = {{0, 0}, {0, 0}}, ratio[2] = {{0, 0}, {0, 0}}, pct[2] = {{0, 0}, {0, 0}};
    geo ic[2] = {{0, 0}, {0, 0}}, icratio[2] = {{0, 0}, {0, 0}};
    uint64_t seed = 1;
    for (int li = 0; li < set->n_convs; li++) {
        const layer_conv *L = &set->convs[li];
        if (only && !strstr(L->name, only))
            continue;
        pdnn_conv2d_params p;
        pdnn_conv2d_params_init(&p);
        p.stride_h = p.stride_w = L->stride;
        p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = L->pad;
        p.groups = L->groups;
        pdnn_tensor_desc xd = {PDNN_FLOAT32, layout, {batch, L->c, L->hw, L->hw}, 0};
        pdnn_tensor_desc wd = {PDNN_FLOAT32, layout == PDNN_NHWC ? PDNN_OHWI : PDNN_OIHW,
                               {L->k, L->c / L->groups, L->rs, L->rs}, 0};
        pdnn_tensor_desc yd = {PDNN_FLOAT32, layout, {0, 0, 0, 0}, 0};
        if (pdnn_conv2d_output_dims(&xd, &wd, &p, yd.dims) != PDNN_SUCCESS)
            return die(L->name);
        const int64_t xn = pdnn_tensor_desc_elements(&xd), wn = pdnn_tensor_desc_elements(&wd),
                      yn = pdnn_tensor_desc_elements(&yd);
        const double gflop = 2.0 * (double)yn * (double)(wd.dims[1] * wd.dims[2] * wd.dims[3]) / 1e9;
        float *x = malloc((size_t)xn * 4), *w = malloc((size_t)wn * 4), *dy = malloc((size_t)yn * 4);
        if (!x || !w || !dy) {
            free(x), free(w), free(dy);
            fprintf(stderr, "bench_conv_bwd: out of host memory\n");
            return 1;
        }
        fill(x, xn, &seed);
        fill(w, wn, &seed);
        fill(dy, yn, &seed);
        pdnn_tensor *tx = upload(dev, &xd, x), *tw = upload(dev, &wd, w), *tdy = upload(dev, &yd, dy);
        pdnn_tensor *tdx = upload(dev, &xd, NULL), *tdw = upload(dev, &wd, NULL);
        if (!tx || !tw || !tdy || !tdx || !tdw) {
            free(x), free(w), free(dy);
            return die("creating the tensors");
        }
        for (int dir = dir0; dir < dir1; dir++) {
            /* pass 0: AUTO; pass 1: the im2col + CLBlast peer */
            double bests[2] = {1e30, 0};
            for (int pass = 0; pass < 2; pass++) {
                pdnn_conv2d_params pp = p;
                if (pass == 1) {
                    if (im2col[dir] <= 0)
                        break;
                    if (dir == 0)
                        pp.bwd_data_algorithm = im2col[dir];
                    else
                        pp.bwd_filter_algorithm = im2col[dir];
                }
                double best = 1e30;
                for (int it = 0; it <= iters; it++) {
                    const double t0 = now();
                    pdnn_status st = dir == 0 ? pdnn_conv2d_backward_data(&pp, tdy, tw, tdx)
                                              : pdnn_conv2d_backward_filter(&pp, tx, tdy, tdw);
                    if (st == PDNN_SUCCESS)
                        st = pdnn_device_synchronize(dev);
                    if (st != PDNN_SUCCESS) {
                        free(x), free(w), free(dy);
                        return die(L->name);
                    }
                    if (it > 0 && now() - t0 < best) /* it 0: the warm-up (builds, tuning) */
                        best = now() - t0;
                }
                bests[pass] = best;
            }
            const double best = bests[0];
            const double ms = best * 1e3, g = gflop / best;
            double dms = 0;
#ifdef PDNN_HAVE_DNNL
            if (dn) {
                peer_conv pc = {batch, L->c, L->hw, L->hw, L->k, L->rs, L->rs, yd.dims[2], yd.dims[3],
                                L->stride, L->stride, 1, 1, L->pad, L->pad, L->pad, L->pad, L->groups,
                                layout == PDNN_NHWC};
                if (peer_dnnl_conv_bwd(dn, &pc, dir, dir == 0 ? dy : x, dir == 0 ? w : dy, iters, &dms, err,
                                       sizeof err))
                    fprintf(stderr, "bench_conv_bwd: %s %s: %s\n", L->name, dir ? "filter" : "data", err), dms = 0;
            }
#endif
            const double dg = dms > 0 ? gflop / (dms / 1e3) : 0;
            char dmsc[32] = "-", dgc[32] = "-", rc[32] = "-";
            if (dms > 0) {
                snprintf(dmsc, sizeof dmsc, "%.2f", dms);
                snprintf(dgc, sizeof dgc, "%.1f", dg);
                snprintf(rc, sizeof rc, "%.2f", g / dg);
                geo_add(&peer[dir], dg);
                geo_add(&ratio[dir], g / dg);
            }
            char ims[32] = "-", igs[32] = "-", irc[32] = "-";
            if (bests[1] > 0) {
                const double ig = gflop / bests[1];
                snprintf(ims, sizeof ims, "%.2f", bests[1] * 1e3);
                snprintf(igs, sizeof igs, "%.1f", ig);
                snprintf(irc, sizeof irc, "%.2f", g / ig);
                geo_add(&ic[dir], ig);
                geo_add(&icratio[dir], g / ig);
            }
            geo_add(&ours[dir], g);
            if (peak > 0)
                geo_add(&pct[dir], 100.0 * g / peak);
            printf("| %s | %s | %.3f | %.2f | %.1f | %.1f | %s | %s | %s | %s | %s | %s |\n", L->name,
                   dir ? "filter" : "data", gflop, ms, g, peak > 0 ? 100.0 * g / peak : 0.0, dmsc, dgc, rc, ims, igs,
                   irc);
            fflush(stdout);
        }
        pdnn_tensor *ts[] = {tx, tw, tdy, tdx, tdw};
        for (int i = 0; i < 5; i++)
            pdnn_tensor_release(ts[i]);
        free(x);
        free(w);
        free(dy);
    }
    for (int dir = dir0; dir < dir1; dir++) /* the directions that ran */
        printf("| geomean | %s | | | %.1f | %.1f | | %.1f | %.2f | | %.1f | %.2f |\n", dir ? "filter" : "data",
               geo_mean(&ours[dir]), geo_mean(&pct[dir]), geo_mean(&peer[dir]), geo_mean(&ratio[dir]),
               geo_mean(&ic[dir]), geo_mean(&icratio[dir]));
#ifdef PDNN_HAVE_DNNL
    peer_dnnl_close(dn);
#endif
    pdnn_context_destroy(ctx);
    return 0;
}
