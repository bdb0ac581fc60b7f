/* polydnn bench: a network's convolutions and pools (or one shape) on one
 * device, each against the peers measured in the same run (im2col +
 * CLBlast on the same device, oneDNN on the host CPU, cuDNN on a CUDA
 * device), and the device's measured peak rates, as a Markdown table that
 * can be committed to bench/ as it is. */
#ifdef HAVE_CONFIG_H
#include "config.h" /* PDNN_HAVE_DNNL */
#endif
#include "algo.h"
#include "cli.h"
#include "conv_shape.h"
#include "layers.h"
#include "run.h"
#ifdef PDNN_HAVE_DNNL
#include "peer_dnnl.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_opts {
    int batch, iters, peak, no_peak, layers, frozen;
    const char *layout, *device, *algo;
    shape_flags shape; /* bench conv's */
    int json;
} bench_opts;

/* One geometric mean: the sum of logs and how many. */
typedef struct geo {
    double sum;
    int n;
} geo;

static void geo_add(geo *g, double v)
{
    if (v > 0) {
        g->sum += log(v);
        g->n++;
    }
}

static double geo_mean(const geo *g)
{
    return g->n ? exp(g->sum / g->n) : 0.0;
}

/* --json: stdout is one JSON object per row; the heading, the peers and
 * the geometric means go to text_out, stderr then (else stdout). */
static FILE *text_out;
static int json_rows;

/* A measured rate for --json: null where the peer could not run (0). */
static void json_rate(const char *key, double v)
{
    if (v > 0)
        printf(", \"%s\": %.6g", key, v);
    else
        printf(", \"%s\": null", key);
}

typedef struct bench_run {
    const char *cmd; /* "bench resnet50", for messages */
    /* What PDNN_CONV_ALGO_IM2COL_GEMM is on the device: im2col + CLBlast
     * on OpenCL, cuDNN's GEMM algorithm on CUDA. */
    const char *gemm;
    pdnn_device *dev, *cuda;
    double peak_gflops, peak_gbytes; /* 0: unknown */
    int iters, frozen;
    pdnn_conv_algo algo;
#ifdef PDNN_HAVE_DNNL
    peer_dnnl *dnnl;
#endif
    int mismatches;
    geo ours, pct, gemm_g, gemm_ratio, dnnl_g, dnnl_ratio, cudnn, cudnn_ratio, pool, pool_pct;
} bench_run;

/* Times conv on dev with the host data x, w (best of iters after one
 * warm-up): *ms, and the output in *y when y is not NULL (malloc'd).
 * Returns the library's status, so that the caller can tell "not
 * available here" from a failure. */
static pdnn_status conv_on(pdnn_device *dev, const pdnn_conv2d_params *p, const pdnn_tensor_desc *xd,
                           const pdnn_tensor_desc *wd, const pdnn_tensor_desc *yd, const float *x, const float *w,
                           int iters, int frozen, double *ms, float **y)
{
    cli_op op;
    pdnn_status st = cli_op_conv(&op, dev, p, xd, wd, NULL, yd, x, w, NULL);
    if (st == PDNN_SUCCESS && frozen)
        st = pdnn_tensor_freeze(op.w);
    if (st == PDNN_SUCCESS)
        st = cli_op_time(&op, 1, iters, CLI_BEST, ms);
    if (st == PDNN_SUCCESS && y)
        st = cli_op_read(&op, y);
    cli_op_release(&op);
    return st;
}

/* v with one decimal, or three significant digits below 1 (a tiny
 * shape's GFLOP/s); "-" for 0 (not measured). */
static void fmt_num(char *buf, size_t len, double v)
{
    if (v <= 0)
        snprintf(buf, len, "-");
    else if (v < 1)
        snprintf(buf, len, "%.3g", v);
    else
        snprintf(buf, len, "%.1f", v);
}

/* A peer's GFLOP/s and polydnn's ratio to it, into two table cells. */
static void peer_cells(double ours, double peer, geo *g, geo *ratio, char *gcol, char *rcol, size_t len)
{
    fmt_num(gcol, len, peer);
    snprintf(rcol, len, "-");
    if (peer > 0) {
        /* Three significant digits: a ratio far below 1 stays readable. */
        snprintf(rcol, len, ours / peer < 1 ? "%.3g" : "%.2f", ours / peer);
        geo_add(g, peer);
        geo_add(ratio, ours / peer);
    }
}

/* A peer that cannot run a shape prints "-": not available on the device,
 * or its workspace does not fit. Anything else is a failure. */
static int peer_missing(pdnn_status st)
{
    return st == PDNN_ERR_UNSUPPORTED || st == PDNN_ERR_OUT_OF_MEMORY;
}

/* Measures one convolution in one layout on the device and its peers and
 * prints its row. 0, or an exit code after printing what failed. */
static int bench_conv_row(bench_run *r, const char *name, pdnn_layout layout, const conv_shape *cs, uint64_t seed)
{
    const char *lname = pdnn_layout_name(layout);
    pdnn_tensor_desc xd, wd;
    conv_shape_descs(cs, layout, &xd, &wd);
    pdnn_tensor_desc yd = {PDNN_FLOAT32, layout, {0, 0, 0, 0}, 0};
    pdnn_conv2d_params p = cs->p;
    p.algorithm = r->algo;
    if (pdnn_conv2d_output_dims(&xd, &wd, &p, yd.dims) != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn %s: %s: %s\n", r->cmd, name, pdnn_last_error());
        return EXIT_RUNTIME;
    }
    const int64_t xn = pdnn_tensor_desc_elements(&xd), wn = pdnn_tensor_desc_elements(&wd);
    const int64_t yn = pdnn_tensor_desc_elements(&yd);
    const double red = (double)(wd.dims[1] * wd.dims[2] * wd.dims[3]);
    const double gflop = 2.0 * (double)yn * red / 1e9;
    float *x = cli_random(xn, &seed), *w = cli_random(wn, &seed);
    float *y = NULL, *y_dnnl = NULL;
    int rc = 0;
    if (!x || !w) {
        rc = cli_host_oom(r->cmd, !x ? "the input x" : "the filter w", (uint64_t)(!x ? xn : wn) * sizeof(float));
        goto out;
    }

    int want_y = 0;
#ifdef PDNN_HAVE_DNNL
    want_y = r->dnnl != NULL; /* to check oneDNN's output against ours */
#endif
    double ms = 0.0;
    pdnn_status st = conv_on(r->dev, &p, &xd, &wd, &yd, x, w, r->iters, r->frozen, &ms, want_y ? &y : NULL);
    if (st != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn %s: %s %s (--algo %s): %s\n", r->cmd, name, lname, pdnn_conv_algo_name(r->algo),
                cli_last_error());
        rc = EXIT_RUNTIME;
        goto out;
    }
    const pdnn_conv_algo ran = pdnn_conv2d_last_algorithm();
    const double ours = gflop / (ms * 1e-3);
    geo_add(&r->ours, ours);
    char pct[32] = "-", ours_s[32], gflop_s[32];
    fmt_num(ours_s, sizeof ours_s, ours);
    snprintf(gflop_s, sizeof gflop_s, "%.3g", gflop);
    if (r->peak_gflops > 0) {
        fmt_num(pct, sizeof pct, 100.0 * ours / r->peak_gflops);
        geo_add(&r->pct, 100.0 * ours / r->peak_gflops);
    }

    /* (a) im2col + GEMM on the same device. */
    pdnn_conv2d_params pg = p;
    pg.algorithm = PDNN_CONV_ALGO_IM2COL_GEMM;
    double ms_gemm = 0.0;
    st = conv_on(r->dev, &pg, &xd, &wd, &yd, x, w, r->iters, r->frozen, &ms_gemm, NULL);
    if (st != PDNN_SUCCESS && !peer_missing(st)) {
        fprintf(stderr, "polydnn %s: %s %s, %s peer: %s\n", r->cmd, name, lname, r->gemm, pdnn_last_error());
        rc = EXIT_RUNTIME;
        goto out;
    }
    if (st == PDNN_ERR_OUT_OF_MEMORY)
        fprintf(stderr, "polydnn %s: note: %s %s: %s skipped: %s\n", r->cmd, name, lname, r->gemm,
                pdnn_last_error());
    char gemm_g[32], gemm_r[32];
    const double g_gemm = st == PDNN_SUCCESS ? gflop / (ms_gemm * 1e-3) : 0.0;
    double g_dnnl = 0.0, g_cudnn = 0.0; /* 0: the peer did not run */
    peer_cells(ours, g_gemm, &r->gemm_g, &r->gemm_ratio, gemm_g, gemm_r, sizeof gemm_g);

    /* The row is printed once complete, so that notes on stderr do not
     * land inside it. */
    char more[160] = "";

#ifdef PDNN_HAVE_DNNL
    /* (b) oneDNN on the host CPU, from the same data; its output must
     * match ours, or one of the two is not computing this convolution. */
    if (r->dnnl) {
        char err[256];
        double ms_dnnl = 0.0;
        peer_conv pc = {cs->n, cs->c, cs->h, cs->w, cs->k, cs->r, cs->s, yd.dims[2], yd.dims[3],
                        p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, p.pad_top, p.pad_bottom,
                        p.pad_left, p.pad_right, p.groups, layout == PDNN_NHWC};
        double g = 0.0;
        if (!(y_dnnl = malloc((size_t)yn * sizeof *y_dnnl))) {
            rc = cli_host_oom(r->cmd, "oneDNN's output", (uint64_t)yn * sizeof *y_dnnl);
            goto out;
        }
        if (peer_dnnl_conv(r->dnnl, &pc, x, w, y_dnnl, r->iters, &ms_dnnl, err, sizeof err) != 0) {
            fprintf(stderr, "polydnn %s: note: %s %s: oneDNN skipped: %s\n", r->cmd, name, lname, err);
        } else {
            g = gflop / (ms_dnnl * 1e-3);
            double max_abs = 0.0, max_rel = 0.0;
            cli_errors(y, y_dnnl, yn, &max_abs, &max_rel);
            /* Inputs lie in [-1, 1): float32 sums of red products of two
             * such values stay well within this of each other. */
            const double tol = 1e-4 + 1e-5 * red;
            if (!(max_abs <= tol)) {
                fprintf(stderr, "polydnn %s: %s %s: polydnn (%s) and oneDNN disagree: max abs error %.3g > %.3g\n",
                        r->cmd, name, lname, pdnn_conv_algo_name(ran), max_abs, tol);
                r->mismatches++;
            }
        }
        char dg[32], dr[32];
        g_dnnl = g;
        peer_cells(ours, g, &r->dnnl_g, &r->dnnl_ratio, dg, dr, sizeof dg);
        snprintf(more + strlen(more), sizeof more - strlen(more), " | %s | %s", dg, dr);
    }
#endif

    /* (c) cuDNN's own choice on a CUDA device. */
    if (r->cuda) {
        pdnn_conv2d_params pv = p;
        pv.algorithm = PDNN_CONV_ALGO_VENDOR;
        double ms_v = 0.0;
        st = conv_on(r->cuda, &pv, &xd, &wd, &yd, x, w, r->iters, r->frozen, &ms_v, NULL);
        if (st != PDNN_SUCCESS && !peer_missing(st)) {
            fprintf(stderr, "polydnn %s: %s %s, cuDNN peer: %s\n", r->cmd, name, lname, pdnn_last_error());
            rc = EXIT_RUNTIME;
            goto out;
        }
        char cg[32], cr[32];
        g_cudnn = st == PDNN_SUCCESS ? gflop / (ms_v * 1e-3) : 0.0;
        peer_cells(ours, g_cudnn, &r->cudnn, &r->cudnn_ratio, cg, cr, sizeof cg);
        snprintf(more + strlen(more), sizeof more - strlen(more), " | %s | %s", cg, cr);
    }
    if (json_rows) {
        printf("{\"kind\": \"conv\", \"layer\": ");
        cli_json_string(stdout, name);
        printf(", \"layout\": \"%s\", \"algorithm\": \"%s\", \"gflop\": %.6g, \"ms\": %.6g", lname,
               pdnn_conv_algo_name(ran), gflop, ms);
        json_rate("gflops", ours);
        json_rate("pct_of_peak", r->peak_gflops > 0 ? 100.0 * ours / r->peak_gflops : 0.0);
        json_rate("im2col_gemm_gflops", g_gemm);
#ifdef PDNN_HAVE_DNNL
        if (r->dnnl)
            json_rate("onednn_gflops", g_dnnl);
#endif
        if (r->cuda)
            json_rate("cudnn_gflops", g_cudnn);
        printf("}\n");
    } else {
        printf("| %s | %s | %s | %s | %.3f | %s | %s | %s | %s%s |\n", name, lname, pdnn_conv_algo_name(ran),
               gflop_s, ms, ours_s, pct, gemm_g, gemm_r, more);
    }
    fflush(stdout);
out:
    free(x);
    free(w);
    free(y);
    free(y_dnnl);
    return rc;
}

static int bench_pool_row(bench_run *r, const layer_pool *L, pdnn_layout layout, int64_t n, uint64_t seed)
{
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    p.mode = PDNN_POOL_MAX;
    p.window_h = p.window_w = L->window;
    p.stride_h = p.stride_w = L->stride;
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = L->pad;
    pdnn_tensor_desc xd = {PDNN_FLOAT32, layout, {n, L->c, L->hw, L->hw}, 0};
    pdnn_tensor_desc yd = {PDNN_FLOAT32, layout, {0, 0, 0, 0}, 0};
    if (pdnn_pool2d_output_dims(&xd, &p, yd.dims) != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn %s: %s: %s\n", r->cmd, L->name, pdnn_last_error());
        return EXIT_RUNTIME;
    }
    const size_t xb = (size_t)pdnn_tensor_desc_bytes(&xd), yb = (size_t)pdnn_tensor_desc_bytes(&yd);
    float *x = cli_random(pdnn_tensor_desc_elements(&xd), &seed);
    int rc = 0;
    double ms = 0.0;
    if (!x)
        return cli_host_oom(r->cmd, "the input x", xb);
    cli_op op;
    pdnn_status st = cli_op_pool(&op, r->dev, &p, &xd, &yd, x);
    if (st == PDNN_SUCCESS)
        st = cli_op_time(&op, 1, r->iters, CLI_BEST, &ms);
    cli_op_release(&op);
    if (st != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn %s: %s %s: %s\n", r->cmd, L->name, pdnn_layout_name(layout), pdnn_last_error());
        rc = EXIT_RUNTIME;
    } else {
        const double gbs = (double)(xb + yb) / (ms * 1e-3) / 1e9;
        char pct[32] = "-";
        geo_add(&r->pool, gbs);
        if (r->peak_gbytes > 0) {
            fmt_num(pct, sizeof pct, 100.0 * gbs / r->peak_gbytes);
            geo_add(&r->pool_pct, 100.0 * gbs / r->peak_gbytes);
        }
        if (json_rows) {
            printf("{\"kind\": \"pool\", \"layer\": ");
            cli_json_string(stdout, L->name);
            printf(", \"layout\": \"%s\", \"mb\": %.6g, \"ms\": %.6g", pdnn_layout_name(layout),
                   (double)(xb + yb) / 1e6, ms);
            json_rate("gbytes_per_s", gbs);
            json_rate("pct_of_copy_bandwidth", r->peak_gbytes > 0 ? 100.0 * gbs / r->peak_gbytes : 0.0);
            printf("}\n");
        } else {
            printf("| %s | %s | %.1f | %.3f | %.2f | %s |\n", L->name, pdnn_layout_name(layout),
                   (double)(xb + yb) / 1e6, ms, gbs, pct);
        }
        fflush(stdout);
    }
    free(x);
    return rc;
}

/* Measures the peak rates into r; prints why when they stay unknown. */
static void measure_peak(bench_run *r)
{
    if (pdnn_device_measure_peak(r->dev, &r->peak_gflops, &r->peak_gbytes) != PDNN_SUCCESS) {
        fprintf(text_out, "peak: unknown (%s)\n", pdnn_last_error());
        r->peak_gflops = r->peak_gbytes = 0.0;
    }
}

static int find_cuda(pdnn_context *ctx, pdnn_device **out)
{
    *out = NULL;
    for (int i = 0; i < pdnn_device_count(ctx); i++) {
        pdnn_device *d;
        pdnn_device_info info;
        if (pdnn_device_get(ctx, i, &d) == PDNN_SUCCESS && pdnn_device_get_info(d, &info) == PDNN_SUCCESS &&
            strcmp(info.backend, "cuda") == 0) {
            *out = d;
            return 1;
        }
    }
    return 0;
}

/* The set's first convolutions (or the one shape) as bench would run
 * them, with the chosen batch. */
static void bench_shape(const layer_set *set, const conv_shape *one, int i, int batch, conv_shape *cs, char *name,
                        size_t len)
{
    if (set) {
        conv_from_layer(&set->convs[i], batch, cs);
        snprintf(name, len, "%s", set->convs[i].name);
    } else {
        *cs = *one;
        conv_shape_name(name, len, cs);
    }
}

/* --algo help: what each algorithm does with every convolution the run
 * would time, in every layout it would time. */
static int algo_help(bench_run *r, const layer_set *set, const conv_shape *one, const pdnn_layout *layouts,
                     int nlayouts, const bench_opts *o)
{
    const int nconv = set ? (o->layers > 0 && o->layers < set->n_convs ? o->layers : set->n_convs) : 1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < nconv; i++) {
        conv_shape cs;
        char name[128];
        bench_shape(set, one, i, o->batch, &cs, name, sizeof name);
        for (int l = 0; rc == 0 && l < nlayouts; l++)
            rc = conv_shape_algo_help(r->dev, name, &cs, layouts[l]);
    }
    return rc;
}

static int run_bench(bench_run *r, const layer_set *set, const conv_shape *one, const pdnn_layout *layouts,
                     int nlayouts, const bench_opts *o)
{
    int rc = 0;
    fprintf(text_out, "\n| layer | layout | algorithm | GFLOP | ms | GFLOP/s | %% of peak | %s GFLOP/s | polydnn / %s", r->gemm,
           r->gemm);
#ifdef PDNN_HAVE_DNNL
    if (r->dnnl)
        fprintf(text_out, " | oneDNN (host CPU) GFLOP/s | polydnn / oneDNN");
#endif
    if (r->cuda)
        fprintf(text_out, " | cuDNN GFLOP/s | polydnn / cuDNN");
    fprintf(text_out, " |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---:");
#ifdef PDNN_HAVE_DNNL
    if (r->dnnl)
        fprintf(text_out, " | ---: | ---:");
#endif
    if (r->cuda)
        fprintf(text_out, " | ---: | ---:");
    fprintf(text_out, " |\n");
    fflush(stdout);

    const int nconv = set ? (o->layers > 0 && o->layers < set->n_convs ? o->layers : set->n_convs) : 1;
    for (int i = 0; rc == 0 && i < nconv; i++) {
        conv_shape cs;
        char name[128];
        bench_shape(set, one, i, o->batch, &cs, name, sizeof name);
        for (int l = 0; rc == 0 && l < nlayouts; l++)
            rc = bench_conv_row(r, name, layouts[l], &cs, 1000u + (uint64_t)i);
    }
    if (rc || !set || set->n_pools == 0)
        return rc;

    const int npool = o->layers > 0 && o->layers < set->n_pools ? o->layers : set->n_pools;
    fprintf(text_out, "\n| max pool | layout | MB read + written | ms | GB/s | %% of copy bandwidth |\n"
           "| --- | --- | ---: | ---: | ---: | ---: |\n");
    for (int i = 0; rc == 0 && i < npool; i++)
        for (int l = 0; rc == 0 && l < nlayouts; l++)
            rc = bench_pool_row(r, &set->pools[i], layouts[l], o->batch, 2000u + (uint64_t)i);
    return rc;
}

static void print_summary(const bench_run *r)
{
    fprintf(text_out, "\nGeometric means over %d convolution(s): polydnn %.1f GFLOP/s", r->ours.n, geo_mean(&r->ours));
    if (r->pct.n)
        fprintf(text_out, " (%.1f%% of peak)", geo_mean(&r->pct));
    if (r->gemm_g.n)
        fprintf(text_out, "; %s %.1f GFLOP/s, polydnn / %s %.2f over %d", r->gemm, geo_mean(&r->gemm_g), r->gemm,
               geo_mean(&r->gemm_ratio), r->gemm_ratio.n);
    else
        fprintf(text_out, "; %s: not available on this device", r->gemm);
    if (r->dnnl_g.n)
        fprintf(text_out, "; oneDNN %.1f GFLOP/s, polydnn / oneDNN %.2f over %d", geo_mean(&r->dnnl_g), geo_mean(&r->dnnl_ratio),
               r->dnnl_ratio.n);
    if (r->cudnn.n)
        fprintf(text_out, "; cuDNN %.1f GFLOP/s, polydnn / cuDNN %.2f over %d", geo_mean(&r->cudnn), geo_mean(&r->cudnn_ratio),
               r->cudnn_ratio.n);
    if (r->pool.n) {
        fprintf(text_out, "; max pool %.2f GB/s over %d", geo_mean(&r->pool), r->pool.n);
        if (r->pool_pct.n)
            fprintf(text_out, " (%.1f%% of copy bandwidth)", geo_mean(&r->pool_pct));
    }
    fprintf(text_out, ".\n");
}

int cmd_bench(int argc, char **argv)
{
    const char *what = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "bench%s%s", what ? " " : "", what ? what : "");
    const layer_set *set = NULL;
    if (what && strcmp(what, "conv") != 0 && !(set = layer_set_find(what))) {
        fprintf(stderr, "polydnn bench: unknown layer set '%s'; known: %s, or conv for one shape (see polydnn bench --help)\n",
                what, layer_set_names());
        return EXIT_USAGE;
    }
    bench_opts o = {1, 3, 0, 0, 0, 0, NULL, NULL, "auto", SHAPE_FLAGS_UNSET, 0};
    char algo_text[640];
    enum { N_OWN = 10 };
    cli_opt opts[N_OWN + N_SHAPE_OPTS] = {
        {'n', "batch", OPT_INT, &o.batch, 1, "batch size N (default 1)"},
        {0, "layout", OPT_STR, &o.layout, 0, "NCHW|NHWC: only this layout (default both)"},
        {'d', "device", OPT_STR, &o.device, 0, "device name, e.g. /gpu:0 or /cpu:0 (default: first GPU)"},
        {'a', "algo", OPT_STR, &o.algo, 0,
         cli_algo_flag_help(algo_text, sizeof algo_text, "polydnn's algorithm (default auto)")},
        {'i', "iters", OPT_INT, &o.iters, 1, "timed calls after one warm-up; the best counts (default 3)"},
        {0, "layers", OPT_INT, &o.layers, 1, "only the first N convolutions and N pools of the set"},
        {0, "peak", OPT_FLAG, &o.peak, 0, "measure and print the device's peak FMA rate and copy bandwidth"},
        {0, "no-peak", OPT_FLAG, &o.no_peak, 0, "skip the peak measurement (no % of peak columns)"},
        {0, "json", OPT_FLAG, &o.json, 0,
         "print each row as a JSON object, one per line, on stdout; the heading and means go to stderr"},
        {0, "frozen-filter", OPT_FLAG, &o.frozen, 0,
         "freeze each filter (pdnn_tensor_freeze): packed once, as the oneDNN peer's weights are"},
        {0, NULL, OPT_HEADING, NULL, 0, "shape flags (polydnn bench conv only):"},
    };
    shape_opts(&o.shape, opts + N_OWN);
    int rc = cli_parse(cmd, what ? argc - 1 : argc, what ? argv + 1 : argv, opts, (int)(sizeof opts / sizeof opts[0]),
                       "  polydnn bench resnet50|vgg16|mobilenet [flags]\n"
                       "                                        ResNet-50 v1.5's, VGG-16's or MobileNet v1's convolutions\n"
                       "                                        and max pools\n"
                       "  polydnn bench conv [flags]            one convolution, from polydnn conv's shape flags\n"
                       "  polydnn bench --peak [--device D]     the device's peak FMA rate and copy bandwidth only\n"
                       "Each convolution runs against im2col + GEMM on the same device (CLBlast on OpenCL), oneDNN on\n"
                       "the host CPU (when configured) and cuDNN (when a CUDA device exists); the output is a Markdown\n"
                       "table with GFLOP/s, GB/s, % of the device's measured peak, the ratios and their geometric means.");
    if (rc)
        return rc < 0 ? 0 : rc;
    json_rows = o.json;
    text_out = o.json ? stderr : stdout;
    if (!what && !o.peak) {
        fprintf(stderr, "polydnn bench: name a layer set (%s), conv for one shape, or --peak (see polydnn bench --help)\n",
                layer_set_names());
        return EXIT_USAGE;
    }
    if (o.peak && o.no_peak) {
        fprintf(stderr, "polydnn %s: --peak and --no-peak contradict each other\n", cmd);
        return EXIT_USAGE;
    }
    if (shape_flags_given(&o.shape) && (set || !what)) {
        fprintf(stderr, "polydnn %s: the shape flags (-c -H -W -k -y -x -p -q -u -v -l -j -g --padding) apply to "
                "polydnn bench conv only\n", cmd);
        return EXIT_USAGE;
    }
    if (o.layers > 0 && !set) {
        fprintf(stderr, "polydnn %s: --layers applies to a layer set (%s)\n", cmd, layer_set_names());
        return EXIT_USAGE;
    }
    pdnn_layout layouts[2] = {PDNN_NCHW, PDNN_NHWC};
    int nlayouts = 2;
    if (o.layout) {
        int l = pdnn_layout_parse(o.layout);
        if (l != PDNN_NCHW && l != PDNN_NHWC) {
            fprintf(stderr, "polydnn %s: --layout must be NCHW or NHWC, got '%s'\n", cmd, o.layout);
            return EXIT_USAGE;
        }
        layouts[0] = (pdnn_layout)l;
        nlayouts = 1;
    }
    const int algo = cli_algo_parse(cmd, o.algo);
    if (algo == -1)
        return EXIT_USAGE;
    if (algo == CLI_ALGO_HELP && !what) {
        fprintf(stderr, "polydnn bench: --algo help needs the convolutions: a layer set or conv\n");
        return EXIT_USAGE;
    }
    conv_shape one = {0};
    if (what && !set && (rc = conv_from_flags(cmd, &o.shape, o.batch, &one)))
        return rc;

    /* Regions grow on demand: the peak measurement's buffers come from
     * the driver beside the allocator, and peers on a second device
     * should take only what they use. Environment overrides still apply. */
    pdnn_context_options copts;
    pdnn_context_options_init(&copts);
    copts.allow_growth = 1;
    pdnn_context *ctx = NULL;
    if (pdnn_context_create(&copts, &ctx) != PDNN_SUCCESS)
        return cli_fail("creating a context");
    bench_run r;
    memset(&r, 0, sizeof r);
    r.cmd = cmd;
    r.iters = o.iters;
    r.frozen = o.frozen;
    r.algo = algo == CLI_ALGO_HELP ? PDNN_CONV_ALGO_AUTO : (pdnn_conv_algo)algo;
    if ((o.device ? pdnn_device_find(ctx, o.device, &r.dev) : pdnn_device_default(ctx, &r.dev)) != PDNN_SUCCESS) {
        rc = cli_fail("choosing a device");
        goto out;
    }
    pdnn_device_info info;
    pdnn_device_get_info(r.dev, &info);
    r.gemm = strcmp(info.backend, "opencl") == 0 ? "im2col+CLBlast"
             : strcmp(info.backend, "cuda") == 0 ? "cuDNN GEMM"
                                                 : "im2col+GEMM";

    if (!what) { /* --peak alone */
        if (pdnn_device_measure_peak(r.dev, &r.peak_gflops, &r.peak_gbytes) != PDNN_SUCCESS) {
            printf("peak %s (%s: %s): unknown (%s)\n", info.name, info.backend, info.device_name, pdnn_last_error());
        } else {
            printf("peak %s (%s: %s): %.1f GFLOP/s fp32 FMA, %.2f GB/s copy\n", info.name, info.backend,
                   info.device_name, r.peak_gflops, r.peak_gbytes);
        }
        goto out;
    }

    if (algo == CLI_ALGO_HELP) {
        rc = algo_help(&r, set, &one, layouts, nlayouts, &o);
        goto out;
    }
    find_cuda(ctx, &r.cuda);
    char dnnl_note[320] = "oneDNN: not configured (./configure --with-dnnl)";
#ifdef PDNN_HAVE_DNNL
    {
        char err[256];
        if (peer_dnnl_open(&r.dnnl, err, sizeof err) != 0) {
            snprintf(dnnl_note, sizeof dnnl_note, "oneDNN: unavailable (%s)", err);
        } else {
            char desc[128];
            peer_dnnl_describe(desc, sizeof desc);
            snprintf(dnnl_note, sizeof dnnl_note, "%s on the host CPU", desc);
        }
    }
#endif
    char date[64];
    cli_utc_date(date, sizeof date);
    if (!json_rows) { /* the heading names the command line, which cli_print_command writes to stdout */
        printf("## polydnn %s, batch %d: %s (%s, %s, %s, driver %s), %s, ", cmd, o.batch, info.name, info.backend,
               info.vendor, info.device_name, info.driver_version, date);
        cli_print_command(argc, argv);
        printf("\n\n");
    }
    if (o.no_peak) {
        fprintf(text_out, "Peak: not measured (--no-peak).\n");
    } else {
        fflush(stdout);
        measure_peak(&r);
        if (r.peak_gflops > 0)
            fprintf(text_out, "Measured peak (polydnn bench --peak): %.1f GFLOP/s fp32 FMA, %.2f GB/s copy.\n", r.peak_gflops,
                   r.peak_gbytes);
    }
    fprintf(text_out, "Peers, measured in the same run: %s (algorithm %s) on %s; %s; ", r.gemm,
           pdnn_conv_algo_name(PDNN_CONV_ALGO_IM2COL_GEMM), info.name, dnnl_note);
    if (r.cuda)
        fprintf(text_out, "cuDNN (algorithm %s) on the CUDA device.\n", pdnn_conv_algo_name(PDNN_CONV_ALGO_VENDOR));
    else
        fprintf(text_out, "cuDNN: no CUDA device.\n");
    fprintf(text_out, "polydnn's algorithm: %s. Times: best of %d call(s) after one warm-up. Ratios: polydnn's GFLOP/s over "
           "the peer's (above 1: polydnn is faster); -: the peer cannot run it.\n",
           pdnn_conv_algo_name(r.algo), o.iters);
    fprintf(text_out, "Filters: %s.\n",
            o.frozen ? "frozen (--frozen-filter: polydnn's algorithms keep them packed, as the oneDNN peer keeps its "
                       "reordered weights)"
                     : "plain tensors (an algorithm that packs them does so on every call)");
    fflush(stdout);
    rc = run_bench(&r, set, &one, layouts, nlayouts, &o);
    if (rc == 0)
        print_summary(&r);
    if (rc == 0 && r.mismatches) {
        fprintf(stderr, "polydnn %s: polydnn and oneDNN disagree on %d convolution(s) (see above)\n", cmd,
                r.mismatches);
        rc = EXIT_RUNTIME;
    }
out:
#ifdef PDNN_HAVE_DNNL
    peer_dnnl_close(r.dnnl);
#endif
    pdnn_context_destroy(ctx);
    return rc;
}
