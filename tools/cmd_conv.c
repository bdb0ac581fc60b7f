/* polydnn conv: one 2-D convolution, timed, optionally verified against
 * the host reference, with NumPy files in and out. */
#include "algo.h"
#include "cli.h"
#include "conv_shape.h"
#include "npy.h"
#include "run.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct conv_job {
    int n, pt, pb, pl, pr, bias, relu, iters, verify, seed, mem_stats;
    const char *layout, *filter_layout, *device, *algo, *seed_text;
    const char *input, *filter, *bias_file, *output;
    shape_flags shape; /* -c -H -W -k -y -x -p -q --padding -u -v -l -j -g */
} conv_job;

/* Loads a 4-D (or 1-D for bias) float32 .npy file. */
static int load(const char *path, int ndim, npy_array *a)
{
    char err[512];
    pdnn_status st = npy_read(path, a, err, sizeof err);
    if (st != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn: %s\n", err);
        return EXIT_RUNTIME;
    }
    if (a->ndim != ndim) {
        fprintf(stderr, "polydnn: %s has %d dimension(s); expected %d\n", path, a->ndim, ndim);
        npy_free(a);
        return EXIT_RUNTIME;
    }
    /* An empty array has no data: it silently became random inputs. */
    if (a->count == 0) {
        fprintf(stderr, "polydnn: %s holds no elements (a dimension is 0); expected a non-empty array\n", path);
        npy_free(a);
        return EXIT_RUNTIME;
    }
    return 0;
}

/* Logical dims {a,b,c,d} from a shape stored in layout order. */
static void logical_dims(pdnn_layout l, const int64_t s[4], int64_t d[4])
{
    switch (l) {
    case PDNN_NHWC:
    case PDNN_OHWI: d[0] = s[0]; d[2] = s[1]; d[3] = s[2]; d[1] = s[3]; break;
    case PDNN_HWIO: d[2] = s[0]; d[3] = s[1]; d[1] = s[2]; d[0] = s[3]; break;
    default: memcpy(d, s, 4 * sizeof *d); break;
    }
}

static void stored_shape(pdnn_layout l, const int64_t d[4], int64_t s[4])
{
    switch (l) {
    case PDNN_NHWC:
    case PDNN_OHWI: s[0] = d[0]; s[1] = d[2]; s[2] = d[3]; s[3] = d[1]; break;
    case PDNN_HWIO: s[0] = d[2]; s[1] = d[3]; s[2] = d[1]; s[3] = d[0]; break;
    default: memcpy(s, d, 4 * sizeof *s); break;
    }
}

static int fits_int(int64_t v, const char *what, const char *path)
{
    if (v > 0x7fffffff) {
        fprintf(stderr, "polydnn: %s of %s is too large\n", what, path);
        return 0;
    }
    return 1;
}


/* Loads a 4-D .npy file and its logical dims in layout l, each of which
 * must fit the int flags they replace. */
static int load_4d(const char *path, pdnn_layout l, npy_array *a, int64_t dims[4])
{
    int rc = load(path, 4, a);
    if (rc)
        return rc;
    logical_dims(l, a->shape, dims);
    for (int i = 0; i < 4; i++)
        if (!fits_int(dims[i], "a dimension", path))
            return EXIT_RUNTIME;
    return 0;
}

/* x, w and b: from the files, else random from the seed (printed). NULL
 * in *b when there is no bias. 0, or EXIT_RUNTIME (out of memory). */
static int inputs(const conv_job *o, const npy_array *xa, const npy_array *wa, const npy_array *ba,
                  int64_t xn, int64_t wn, int64_t bn, float **x, float **w, float **b)
{
    const uint64_t seed = (uint64_t)o->seed;
    if (!xa->data || !wa->data || (o->bias && !ba->data))
        printf("random inputs in [-1, 1), seed %" PRIu64 "\n", seed);
    uint64_t state = seed * 2654435761u + 1;
    if (!(*x = xa->data ? xa->data : cli_random(xn, &state)))
        return cli_host_oom(NULL, "the input x", (uint64_t)xn * sizeof(float));
    if (!(*w = wa->data ? wa->data : cli_random(wn, &state)))
        return cli_host_oom(NULL, "the filter w", (uint64_t)wn * sizeof(float));
    if (o->bias && !(*b = ba->data ? ba->data : cli_random(bn, &state)))
        return cli_host_oom(NULL, "the bias b", (uint64_t)bn * sizeof(float));
    return 0;
}

/* Creates, writes, runs (one warm-up, then iters timed calls unless iters
 * is 0) and reads back the convolution on dev: *out (malloc'd). */
static int run_on(pdnn_device *dev, const pdnn_conv2d_params *p, const pdnn_tensor_desc *xd,
                  const pdnn_tensor_desc *wd, const pdnn_tensor_desc *bd, const pdnn_tensor_desc *yd,
                  const float *x, const float *w, const float *b, int iters, float **out, double *ms)
{
    cli_op op;
    int rc = 0;
    if (cli_op_conv(&op, dev, p, xd, wd, bd, yd, x, w, b) != PDNN_SUCCESS ||
        cli_op_time(&op, 1, iters, CLI_MEAN, ms) != PDNN_SUCCESS || cli_op_read(&op, out) != PDNN_SUCCESS)
        rc = cli_fail(op.step);
    cli_op_release(&op);
    return rc;
}

/* Checks y against the host's direct loop on the same inputs. */
static int verify(pdnn_context *ctx, pdnn_device *dev, const pdnn_conv2d_params *p, const pdnn_tensor_desc *xd,
                  const pdnn_tensor_desc *wd, const pdnn_tensor_desc *bd, const pdnn_tensor_desc *yd,
                  const float *x, const float *w, const float *b, const float *y)
{
    pdnn_device *host = NULL;
    int rc = cli_host_reference(ctx, dev, &host);
    if (rc || !host)
        return rc;
    pdnn_conv2d_params ref_p = *p;
    ref_p.algorithm = PDNN_CONV_ALGO_DIRECT; /* the host's reference */
    float *ref = NULL;
    if ((rc = run_on(host, &ref_p, xd, wd, bd, yd, x, w, b, 0, &ref, NULL)))
        return rc;
    double ma, mr;
    cli_errors(y, ref, pdnn_tensor_desc_elements(yd), &ma, &mr);
    /* float32 accumulation error grows with the reduction length and the
     * size of the terms. */
    double xmax = 0, wmax = 0;
    for (int64_t i = 0; i < pdnn_tensor_desc_elements(xd); i++)
        xmax = fmax(xmax, fabs(x[i]));
    for (int64_t i = 0; i < pdnn_tensor_desc_elements(wd); i++)
        wmax = fmax(wmax, fabs(w[i]));
    const double red = (double)(wd->dims[1] * wd->dims[2] * wd->dims[3]);
    const double tol = 1e-5 + 2e-6 * red * fmax(xmax * wmax, 1e-30) + 1e-6 * (b ? fabs(b[0]) : 0);
    const int ok = ma <= tol;
    pdnn_device_info hinfo;
    pdnn_device_get_info(host, &hinfo);
    printf("verify against %s: max abs error %.3g, max rel error %.3g, tolerance %.3g: %s\n", hinfo.name, ma, mr,
           tol, ok ? "OK" : "FAILED");
    free(ref);
    return ok ? 0 : EXIT_RUNTIME;
}

int cmd_conv(int argc, char **argv)
{
    conv_job o = {1, -1, -1, -1, -1, 0, 0, 10, 0, CLI_SEED_DEFAULT, 0, "NCHW", NULL, NULL, "auto", NULL,
                  NULL, NULL, NULL, NULL, SHAPE_FLAGS_UNSET};
    char algo_help[640];
    const cli_opt head[] = {
        {'n', "batch", OPT_INT, &o.n, 1, "batch size N (default 1)"},
    };
    const cli_opt tail[] = {
        {0, "pad-top", OPT_INT, &o.pt, 0, "padding on top only"},
        {0, "pad-bottom", OPT_INT, &o.pb, 0, "padding at the bottom only"},
        {0, "pad-left", OPT_INT, &o.pl, 0, "padding on the left only"},
        {0, "pad-right", OPT_INT, &o.pr, 0, "padding on the right only"},
        {0, "bias", OPT_FLAG, &o.bias, 0, "add a (random) bias per output channel"},
        {0, "relu", OPT_FLAG, &o.relu, 0, "fuse a ReLU after the bias"},
        {0, "layout", OPT_STR, &o.layout, 0, "NCHW|NHWC for input and output (default NCHW)"},
        {0, "filter-layout", OPT_STR, &o.filter_layout, 0, "OIHW|OHWI|HWIO (default OIHW for NCHW, OHWI for NHWC)"},
        {'d', "device", OPT_STR, &o.device, 0, "device name, e.g. /gpu:0 or /cpu:0 (default: first GPU)"},
        {'a', "algo", OPT_STR, &o.algo, 0,
         cli_algo_flag_help(algo_help, sizeof algo_help, "the algorithm (default auto: the fastest that fits)")},
        {'i', "iters", OPT_INT, &o.iters, 1, "timed calls after one warm-up (default 10)"},
        {0, "verify", OPT_FLAG, &o.verify, 0, "compare with the host reference (/cpu:0)"},
        {0, "seed", OPT_STR, &o.seed_text, 0, CLI_SEED_HELP},
        {0, "input", OPT_STR, &o.input, 0, "x.npy: input in --layout order (defines N, C, H, W)"},
        {0, "filter", OPT_STR, &o.filter, 0, "w.npy: filter in --filter-layout order (defines K, R, S)"},
        {0, "bias-file", OPT_STR, &o.bias_file, 0, "b.npy: bias of length K (implies --bias)"},
        {0, "output", OPT_STR, &o.output, 0, "y.npy: write the output in --layout order"},
        {0, "memory-stats", OPT_FLAG, &o.mem_stats, 0, "print the device's memory statistics"},
    };
    enum { N_HEAD = sizeof head / sizeof head[0], N_TAIL = sizeof tail / sizeof tail[0] };
    cli_opt opts[N_HEAD + N_SHAPE_OPTS + N_TAIL];
    memcpy(opts, head, sizeof head);
    shape_opts(&o.shape, opts + N_HEAD);
    memcpy(opts + N_HEAD + N_SHAPE_OPTS, tail, sizeof tail);
    int rc = cli_parse("conv", argc, argv, opts, (int)(sizeof opts / sizeof opts[0]),
                       "Runs y = relu?(conv2d(x, w) + b) on one device and prints time and GFLOP/s;\n"
                       "--algo help lists what every algorithm does with the shape on the device.");
    if (rc)
        return rc < 0 ? 0 : rc;
    if ((rc = cli_seed("conv", o.seed_text, &o.seed)))
        return rc;

    int xl = pdnn_layout_parse(o.layout);
    if (xl != PDNN_NCHW && xl != PDNN_NHWC) {
        fprintf(stderr, "polydnn conv: --layout must be NCHW or NHWC, got '%s'\n", o.layout);
        return EXIT_USAGE;
    }
    int wl = o.filter_layout ? pdnn_layout_parse(o.filter_layout) : (xl == PDNN_NCHW ? PDNN_OIHW : PDNN_OHWI);
    if (wl != PDNN_OIHW && wl != PDNN_OHWI && wl != PDNN_HWIO) {
        fprintf(stderr, "polydnn conv: --filter-layout must be OIHW, OHWI or HWIO, got '%s'\n", o.filter_layout);
        return EXIT_USAGE;
    }
    const int algo = cli_algo_parse("conv", o.algo);
    if (algo == -1)
        return EXIT_USAGE;

    npy_array xa = {0}, wa = {0}, ba = {0};
    float *x = NULL, *w = NULL, *b = NULL, *y = NULL;
    pdnn_context *ctx = NULL;
    int64_t fdims[4] = {0};
    /* The files define the dims they hold: they stand for those flags. */
    if (o.input) {
        int64_t d[4];
        if ((rc = load_4d(o.input, (pdnn_layout)xl, &xa, d)))
            goto out;
        o.n = (int)d[0];
        o.shape.c = (int)d[1];
        o.shape.h = (int)d[2];
        o.shape.w = (int)d[3];
    }
    if (o.filter) {
        if ((rc = load_4d(o.filter, (pdnn_layout)wl, &wa, fdims)))
            goto out;
        o.shape.k = (int)fdims[0];
        o.shape.y = (int)fdims[2];
        o.shape.x = (int)fdims[3];
    }
    if (o.bias_file) {
        if ((rc = load(o.bias_file, 1, &ba)))
            goto out;
        o.bias = 1;
    }
    conv_shape cs;
    if ((rc = conv_from_flags("conv", &o.shape, o.n, &cs)))
        goto out;
    pdnn_conv2d_params p = cs.p;
    if (!o.shape.padding) { /* --padding sets all four sides */
        p.pad_top = o.pt >= 0 ? o.pt : p.pad_top;
        p.pad_bottom = o.pb >= 0 ? o.pb : p.pad_bottom;
        p.pad_left = o.pl >= 0 ? o.pl : p.pad_left;
        p.pad_right = o.pr >= 0 ? o.pr : p.pad_right;
    }
    p.relu = o.relu;
    p.algorithm = algo == CLI_ALGO_HELP ? PDNN_CONV_ALGO_AUTO : (pdnn_conv_algo)algo;

    pdnn_tensor_desc xd = {PDNN_FLOAT32, (pdnn_layout)xl, {cs.n, cs.c, cs.h, cs.w}, 0};
    pdnn_tensor_desc wd = {PDNN_FLOAT32, (pdnn_layout)wl, {cs.k, cs.c / p.groups, cs.r, cs.s}, 0};
    pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {cs.k, 1, 1, 1}, 0};
    pdnn_tensor_desc yd = {PDNN_FLOAT32, (pdnn_layout)xl, {0, 0, 0, 0}, 0};
    if (o.filter && fdims[1] != wd.dims[1]) {
        fprintf(stderr, "polydnn: %s holds filters of %lld input channel(s); C / groups = %lld / %d needs %lld\n",
                o.filter, (long long)fdims[1], (long long)cs.c, p.groups, (long long)wd.dims[1]);
        rc = EXIT_RUNTIME;
        goto out;
    }
    if (pdnn_conv2d_output_dims(&xd, &wd, &p, yd.dims) != PDNN_SUCCESS) {
        rc = cli_fail("conv2d");
        goto out;
    }
    if (o.bias_file && ba.shape[0] != cs.k) {
        fprintf(stderr, "polydnn: %s holds %lld values; the bias needs K = %lld\n", o.bias_file,
                (long long)ba.shape[0], (long long)cs.k);
        rc = EXIT_RUNTIME;
        goto out;
    }

    pdnn_device *dev = NULL;
    if (algo != CLI_ALGO_HELP &&
        (rc = inputs(&o, &xa, &wa, &ba, pdnn_tensor_desc_elements(&xd), pdnn_tensor_desc_elements(&wd), cs.k, &x,
                     &w, &b)))
        goto out;
    if ((rc = cli_open_device(o.device, &ctx, &dev)))
        goto out;
    printf("conv n%lld c%lld %lldx%lld k%lld %lldx%lld pad %d,%d,%d,%d stride %d,%d dilation %d,%d groups %d "
           "%s/%s%s%s -> [%lld,%lld,%lld,%lld]\n",
           (long long)cs.n, (long long)cs.c, (long long)cs.h, (long long)cs.w, (long long)cs.k, (long long)cs.r,
           (long long)cs.s, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, p.stride_h, p.stride_w, p.dilation_h,
           p.dilation_w, p.groups, pdnn_layout_name((pdnn_layout)xl), pdnn_layout_name((pdnn_layout)wl),
           o.bias ? " bias" : "", o.relu ? " relu" : "", (long long)yd.dims[0], (long long)yd.dims[1],
           (long long)yd.dims[2], (long long)yd.dims[3]);
    if (algo == CLI_ALGO_HELP) {
        rc = cli_algo_print(dev, &p, &xd, &wd, (pdnn_layout)xl);
        goto out;
    }
    pdnn_device_info info;
    pdnn_device_get_info(dev, &info);
    double ms = 0.0;
    if ((rc = run_on(dev, &p, &xd, &wd, &bd, &yd, x, w, b, o.iters, &y, &ms)))
        goto out;
    const double flops = 2.0 * (double)pdnn_tensor_desc_elements(&yd) * (double)(wd.dims[1] * wd.dims[2] * wd.dims[3]);
    printf("device %s (%s, %s), algorithm %s: %.3f ms/call over %d call(s), %.2f GFLOP/s\n", info.name,
           info.backend, info.device_name, pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()), ms, o.iters,
           flops / (ms * 1e-3) / 1e9);
    if (o.mem_stats)
        cli_print_memory_stats(dev);
    if (o.verify) /* a failed check still writes the output, to look at */
        rc = verify(ctx, dev, &p, &xd, &wd, &bd, &yd, x, w, b, y);
    if (o.output) {
        char err[512];
        int64_t shape[4];
        stored_shape((pdnn_layout)xl, yd.dims, shape);
        if (npy_write(o.output, 4, shape, y, err, sizeof err) != PDNN_SUCCESS) {
            fprintf(stderr, "polydnn: %s\n", err);
            rc = EXIT_RUNTIME;
        } else {
            printf("wrote %s\n", o.output);
        }
    }
out:
    if (x != xa.data)
        free(x);
    if (w != wa.data)
        free(w);
    if (b != ba.data)
        free(b);
    npy_free(&xa);
    npy_free(&wa);
    npy_free(&ba);
    free(y);
    pdnn_context_destroy(ctx);
    return rc;
}
