/* polydnn conv: one 2-D convolution, timed, optionally verified against
 * the host reference, with NumPy files in and out. */
#include "cli.h"
#include "npy.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct conv_job {
    int n, c, h, w, k, y, x, p, q, u, v, l, j, g;
    int pt, pb, pl, pr, bias, relu, iters, verify, seed, mem_stats;
    const char *layout, *filter_layout, *padding, *device, *algo;
    const char *input, *filter, *bias_file, *output;
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

/* Runs the op on dev with host data, returning the output (malloc'd). */
static int run_on(pdnn_device *dev, const pdnn_conv2d_params *p, const pdnn_tensor_desc *xd,
                  const pdnn_tensor_desc *wd, const pdnn_tensor_desc *bd, const pdnn_tensor_desc *yd,
                  const float *x, const float *w, const float *b, int iters, float **out, double *ms)
{
    pdnn_tensor *tx = NULL, *tw = NULL, *tb = NULL, *ty = NULL;
    cli_conv_call call;
    int rc = 0;
    if (pdnn_tensor_create(dev, xd, &tx) || pdnn_tensor_create(dev, wd, &tw) ||
        (b && pdnn_tensor_create(dev, bd, &tb)) || pdnn_tensor_create(dev, yd, &ty)) {
        rc = cli_fail("allocating tensors");
        goto done;
    }
    if (pdnn_tensor_write(tx, x, (size_t)pdnn_tensor_desc_bytes(xd)) ||
        pdnn_tensor_write(tw, w, (size_t)pdnn_tensor_desc_bytes(wd)) ||
        (tb && pdnn_tensor_write(tb, b, (size_t)pdnn_tensor_desc_bytes(bd)))) {
        rc = cli_fail("writing inputs");
        goto done;
    }
    call = (cli_conv_call){p, tx, tw, tb, ty};
    if ((rc = cli_time(dev, "conv2d", iters, cli_conv_op, &call, ms)) == 0)
        rc = cli_read(ty, out);
done:
    pdnn_tensor_release(tx);
    pdnn_tensor_release(tw);
    pdnn_tensor_release(tb);
    pdnn_tensor_release(ty);
    return rc;
}

int cmd_conv(int argc, char **argv)
{
    conv_job o = {1, 3, 32, 32, 32, 3, 3, 0, 0, 1, 1, 1, 1, 1, -1, -1, -1, -1, 0, 0, 10, 0, -1, 0,
                  "NCHW", NULL, NULL, NULL, "auto", NULL, NULL, NULL, NULL};
    const cli_opt opts[] = {
        {'n', "batch", OPT_INT, &o.n, 1, "batch size N (default 1)"},
        {'c', "in-channels", OPT_INT, &o.c, 1, "input channels C (default 3)"},
        {'H', "height", OPT_INT, &o.h, 1, "input height (default 32)"},
        {'W', "width", OPT_INT, &o.w, 1, "input width (default 32)"},
        {'k', "out-channels", OPT_INT, &o.k, 1, "output channels K (default 32)"},
        {'y', "filter-height", OPT_INT, &o.y, 1, "filter height R (default 3)"},
        {'x', "filter-width", OPT_INT, &o.x, 1, "filter width S (default 3)"},
        {'p', "pad-h", OPT_INT, &o.p, 0, "padding top and bottom (default 0)"},
        {'q', "pad-w", OPT_INT, &o.q, 0, "padding left and right (default 0)"},
        {0, "pad-top", OPT_INT, &o.pt, 0, "padding on top only"},
        {0, "pad-bottom", OPT_INT, &o.pb, 0, "padding at the bottom only"},
        {0, "pad-left", OPT_INT, &o.pl, 0, "padding on the left only"},
        {0, "pad-right", OPT_INT, &o.pr, 0, "padding on the right only"},
        {0, "padding", OPT_STR, &o.padding, 0, "same|valid: TensorFlow's padding (overrides -p/-q)"},
        {'u', "stride-h", OPT_INT, &o.u, 1, "vertical stride (default 1)"},
        {'v', "stride-w", OPT_INT, &o.v, 1, "horizontal stride (default 1)"},
        {'l', "dilation-h", OPT_INT, &o.l, 1, "vertical dilation (default 1)"},
        {'j', "dilation-w", OPT_INT, &o.j, 1, "horizontal dilation (default 1)"},
        {'g', "groups", OPT_INT, &o.g, 1, "groups; C for depthwise (default 1)"},
        {0, "bias", OPT_FLAG, &o.bias, 0, "add a (random) bias per output channel"},
        {0, "relu", OPT_FLAG, &o.relu, 0, "fuse a ReLU after the bias"},
        {0, "layout", OPT_STR, &o.layout, 0, "NCHW|NHWC for input and output (default NCHW)"},
        {0, "filter-layout", OPT_STR, &o.filter_layout, 0, "OIHW|OHWI|HWIO (default OIHW for NCHW, OHWI for NHWC)"},
        {0, "device", OPT_STR, &o.device, 0, "device name, e.g. /gpu:0 or /cpu:0 (default: first GPU)"},
        {'a', "algo", OPT_STR, &o.algo, 0, "auto|direct|tiled|winograd|depthwise|gemm_1x1|implicit_gemm|im2col_gemm|vendor (default auto: fastest that fits)"},
        {'i', "iters", OPT_INT, &o.iters, 1, "timed calls after one warm-up (default 10)"},
        {0, "verify", OPT_FLAG, &o.verify, 0, "compare with the host reference (/cpu:0)"},
        {0, "seed", OPT_INT, &o.seed, 0, "seed for random inputs (default: time-based, printed)"},
        {0, "input", OPT_STR, &o.input, 0, "x.npy: input in --layout order (defines N, C, H, W)"},
        {0, "filter", OPT_STR, &o.filter, 0, "w.npy: filter in --filter-layout order (defines K, R, S)"},
        {0, "bias-file", OPT_STR, &o.bias_file, 0, "b.npy: bias of length K (implies --bias)"},
        {0, "output", OPT_STR, &o.output, 0, "y.npy: write the output in --layout order"},
        {0, "memory-stats", OPT_FLAG, &o.mem_stats, 0, "print the device's memory statistics"},
    };
    int rc = cli_parse("conv", argc, argv, opts, (int)(sizeof opts / sizeof opts[0]),
                       "Runs y = relu?(conv2d(x, w) + b) on one device and prints time and GFLOP/s.");
    if (rc)
        return rc < 0 ? 0 : rc;

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
    int algo = pdnn_conv_algo_parse(o.algo);
    if (algo < 0) {
        fprintf(stderr, "polydnn conv: --algo must be auto, direct, tiled, winograd, depthwise, gemm_1x1, implicit_gemm, im2col_gemm or vendor, got '%s'\n", o.algo);
        return EXIT_USAGE;
    }
    if (o.padding && strcasecmp(o.padding, "same") != 0 && strcasecmp(o.padding, "valid") != 0) {
        fprintf(stderr, "polydnn conv: --padding must be same or valid, got '%s'\n", o.padding);
        return EXIT_USAGE;
    }

    npy_array xa = {0}, wa = {0}, ba = {0};
    float *x = NULL, *w = NULL, *b = NULL, *y = NULL, *ref = NULL;
    pdnn_context *ctx = NULL;
    int64_t xdims[4] = {o.n, o.c, o.h, o.w};
    if (o.input) {
        if ((rc = load(o.input, 4, &xa)))
            goto out;
        logical_dims((pdnn_layout)xl, xa.shape, xdims);
        for (int i = 0; i < 4; i++)
            if (!fits_int(xdims[i], "a dimension", o.input)) {
                rc = EXIT_RUNTIME;
                goto out;
            }
        o.n = (int)xdims[0];
        o.c = (int)xdims[1];
        o.h = (int)xdims[2];
        o.w = (int)xdims[3];
    }
    int64_t wdims[4] = {o.k, o.g > 0 ? o.c / o.g : o.c, o.y, o.x};
    if (o.filter) {
        if ((rc = load(o.filter, 4, &wa)))
            goto out;
        logical_dims((pdnn_layout)wl, wa.shape, wdims);
        for (int i = 0; i < 4; i++)
            if (!fits_int(wdims[i], "a dimension", o.filter)) {
                rc = EXIT_RUNTIME;
                goto out;
            }
        o.k = (int)wdims[0];
        o.y = (int)wdims[2];
        o.x = (int)wdims[3];
    } else if (o.c % o.g != 0) {
        fprintf(stderr, "polydnn conv: groups %d must divide the input channels %d\n", o.g, o.c);
        rc = EXIT_USAGE;
        goto out;
    }
    if (o.bias_file) {
        if ((rc = load(o.bias_file, 1, &ba)))
            goto out;
        o.bias = 1;
    }

    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.stride_h = o.u;
    p.stride_w = o.v;
    p.dilation_h = o.l;
    p.dilation_w = o.j;
    p.groups = o.g;
    p.relu = o.relu;
    p.algorithm = (pdnn_conv_algo)algo;
    p.pad_top = o.pt >= 0 ? o.pt : o.p;
    p.pad_bottom = o.pb >= 0 ? o.pb : o.p;
    p.pad_left = o.pl >= 0 ? o.pl : o.q;
    p.pad_right = o.pr >= 0 ? o.pr : o.q;
    if (o.padding && strcasecmp(o.padding, "valid") == 0)
        pdnn_conv2d_set_padding_valid(&p);
    else if (o.padding && pdnn_conv2d_set_padding_same(&p, o.h, o.w, o.y, o.x) != PDNN_SUCCESS) {
        rc = cli_fail("--padding same");
        goto out;
    }

    pdnn_tensor_desc xd = {PDNN_FLOAT32, (pdnn_layout)xl, {xdims[0], xdims[1], xdims[2], xdims[3]}};
    pdnn_tensor_desc wd = {PDNN_FLOAT32, (pdnn_layout)wl, {wdims[0], wdims[1], wdims[2], wdims[3]}};
    pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {o.k, 1, 1, 1}};
    pdnn_tensor_desc yd = {PDNN_FLOAT32, (pdnn_layout)xl, {0, 0, 0, 0}};
    if (pdnn_conv2d_output_dims(&xd, &wd, &p, yd.dims) != PDNN_SUCCESS) {
        rc = cli_fail("conv2d");
        goto out;
    }
    if (o.bias_file && ba.shape[0] != o.k) {
        fprintf(stderr, "polydnn: %s holds %lld values; the bias needs K = %d\n", o.bias_file,
                (long long)ba.shape[0], o.k);
        rc = EXIT_RUNTIME;
        goto out;
    }

    int64_t xn = pdnn_tensor_desc_elements(&xd), wn = pdnn_tensor_desc_elements(&wd);
    uint64_t seed = o.seed >= 0 ? (uint64_t)o.seed : (uint64_t)(cli_now() * 1e6) % 1000000007u;
    if (!o.input || !o.filter || (o.bias && !o.bias_file))
        printf("random inputs in [-1, 1), seed %" PRIu64 "\n", seed);
    uint64_t state = seed * 2654435761u + 1;
    if (xa.data) {
        x = xa.data;
    } else if (!(x = malloc((size_t)xn * sizeof *x))) {
        goto oom;
    } else {
        cli_fill(x, xn, &state);
    }
    if (wa.data) {
        w = wa.data;
    } else if (!(w = malloc((size_t)wn * sizeof *w))) {
        goto oom;
    } else {
        cli_fill(w, wn, &state);
    }
    if (o.bias) {
        if (ba.data) {
            b = ba.data;
        } else if (!(b = malloc((size_t)o.k * sizeof *b))) {
            goto oom;
        } else {
            cli_fill(b, o.k, &state);
        }
    }

    pdnn_device *dev = NULL;
    if ((rc = cli_open_device(o.device, &ctx, &dev)))
        goto out;
    pdnn_device_info info;
    pdnn_device_get_info(dev, &info);
    double ms = 0.0;
    if ((rc = run_on(dev, &p, &xd, &wd, &bd, &yd, x, w, b, o.iters, &y, &ms)))
        goto out;
    double flops = 2.0 * (double)yd.dims[0] * (double)yd.dims[1] * (double)yd.dims[2] * (double)yd.dims[3] *
                   (double)wd.dims[1] * (double)wd.dims[2] * (double)wd.dims[3];
    printf("conv n%d c%d %dx%d k%d %dx%d pad %d,%d,%d,%d stride %d,%d dilation %d,%d groups %d %s/%s%s%s "
           "-> [%lld,%lld,%lld,%lld]\n",
           o.n, o.c, o.h, o.w, o.k, o.y, o.x, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, o.u, o.v,
           o.l, o.j, o.g, pdnn_layout_name((pdnn_layout)xl), pdnn_layout_name((pdnn_layout)wl),
           o.bias ? " bias" : "", o.relu ? " relu" : "", (long long)yd.dims[0], (long long)yd.dims[1],
           (long long)yd.dims[2], (long long)yd.dims[3]);
    printf("device %s (%s, %s), algorithm %s: %.3f ms/call over %d call(s), %.2f GFLOP/s\n", info.name,
           info.backend, info.device_name, pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()), ms, o.iters,
           flops / (ms * 1e-3) / 1e9);
    if (o.mem_stats)
        cli_print_memory_stats(dev);

    if (o.verify) {
        pdnn_device *host = NULL;
        if (pdnn_device_find(ctx, "/cpu:0", &host) != PDNN_SUCCESS) {
            rc = cli_fail("finding the host reference");
            goto out;
        }
        pdnn_conv2d_params ref_p = p; /* the reference is the host's direct loop */
        ref_p.algorithm = PDNN_CONV_ALGO_DIRECT;
        if ((rc = run_on(host, &ref_p, &xd, &wd, &bd, &yd, x, w, b, 0, &ref, NULL)))
            goto out;
        int64_t yn = pdnn_tensor_desc_elements(&yd);
        double ma, mr;
        cli_errors(y, ref, yn, &ma, &mr);
        /* float32 accumulation error grows with the reduction length and
         * the size of the terms. */
        double xmax = 0, wmax = 0;
        for (int64_t i = 0; i < xn; i++)
            xmax = fmax(xmax, fabs(x[i]));
        for (int64_t i = 0; i < wn; i++)
            wmax = fmax(wmax, fabs(w[i]));
        double red = (double)(wd.dims[1] * wd.dims[2] * wd.dims[3]);
        double tol = 1e-5 + 2e-6 * red * fmax(xmax * wmax, 1e-30) + 1e-6 * (b ? fabs(b[0]) : 0);
        int ok = ma <= tol;
        printf("verify against /device:CPU:0: max abs error %.3g, max rel error %.3g, tolerance %.3g: %s\n",
               ma, mr, tol, ok ? "OK" : "FAILED");
        if (!ok)
            rc = EXIT_RUNTIME;
    }
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
    goto out;
oom:
    fprintf(stderr, "polydnn: out of host memory\n");
    rc = EXIT_RUNTIME;
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
    free(ref);
    pdnn_context_destroy(ctx);
    return rc;
}
