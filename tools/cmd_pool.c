/* polydnn pool: one 2-D pooling, timed, optionally verified against the
 * host reference, with NumPy files in and out. */
#include "cli.h"
#include "npy.h"
#include "run.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Creates, writes, runs (one warm-up, then iters timed calls unless iters
 * is 0) and reads back the pooling on dev: *out (malloc'd). */
static int run_pool(pdnn_device *dev, const pdnn_pool2d_params *p, const pdnn_tensor_desc *xd,
                    const pdnn_tensor_desc *yd, const float *x, int iters, float **out, double *ms)
{
    cli_op op;
    int rc = 0;
    if (cli_op_pool(&op, dev, p, xd, yd, x) != PDNN_SUCCESS || cli_op_time(&op, 1, iters, CLI_MEAN, ms) != PDNN_SUCCESS ||
        cli_op_read(&op, out) != PDNN_SUCCESS)
        rc = cli_fail(op.step);
    cli_op_release(&op);
    return rc;
}

int cmd_pool(int argc, char **argv)
{
    int n = 1, c = 3, h = 32, w = 32, wy = 2, wx = 2, ph = 0, pw = 0, u = 2, v = 2;
    int pt = -1, pb = -1, pl = -1, pr = -1, excl = 0, ceil_mode = 0, iters = 10, verify = 0, seed = 0;
    int mem_stats = 0;
    const char *mode = "max", *layout = "NCHW", *device = NULL, *input = NULL, *output = NULL, *seed_text = NULL;
    const cli_opt opts[] = {
        {'n', "batch", OPT_INT, &n, 1, "batch size N (default 1)"},
        {'c', "channels", OPT_INT, &c, 1, "channels C (default 3)"},
        {'H', "height", OPT_INT, &h, 1, "input height (default 32)"},
        {'W', "width", OPT_INT, &w, 1, "input width (default 32)"},
        {'y', "window-h", OPT_INT, &wy, 1, "window height (default 2)"},
        {'x', "window-w", OPT_INT, &wx, 1, "window width (default 2)"},
        {'p', "pad-h", OPT_INT, &ph, 0, "padding top and bottom (default 0)"},
        {'q', "pad-w", OPT_INT, &pw, 0, "padding left and right (default 0)"},
        {0, "pad-top", OPT_INT, &pt, 0, "padding on top only"},
        {0, "pad-bottom", OPT_INT, &pb, 0, "padding at the bottom only"},
        {0, "pad-left", OPT_INT, &pl, 0, "padding on the left only"},
        {0, "pad-right", OPT_INT, &pr, 0, "padding on the right only"},
        {'u', "stride-h", OPT_INT, &u, 1, "vertical stride (default 2)"},
        {'v', "stride-w", OPT_INT, &v, 1, "horizontal stride (default 2)"},
        {'m', "mode", OPT_STR, &mode, 0, "max|avg (default max)"},
        {0, "exclude-padding", OPT_FLAG, &excl, 0, "avg: divide by in-image elements only"},
        {0, "ceil-mode", OPT_FLAG, &ceil_mode, 0, "round the output size up (PyTorch's ceil_mode)"},
        {0, "layout", OPT_STR, &layout, 0, "NCHW|NHWC for input and output (default NCHW)"},
        {'d', "device", OPT_STR, &device, 0, "device name, e.g. /gpu:0 or /cpu:0 (default: first GPU)"},
        {'i', "iters", OPT_INT, &iters, 1, "timed calls after one warm-up (default 10)"},
        {0, "verify", OPT_FLAG, &verify, 0, "compare with the host reference (/cpu:0)"},
        {0, "seed", OPT_STR, &seed_text, 0, CLI_SEED_HELP},
        {0, "input", OPT_STR, &input, 0, "x.npy: input in --layout order (defines N, C, H, W)"},
        {0, "output", OPT_STR, &output, 0, "y.npy: write the output in --layout order"},
        {0, "memory-stats", OPT_FLAG, &mem_stats, 0, "print the device's memory statistics"},
    };
    int rc = cli_parse("pool", argc, argv, opts, (int)(sizeof opts / sizeof opts[0]),
                       "Runs y = pool2d(x) on one device and prints time and GB/s.");
    if (rc)
        return rc < 0 ? 0 : rc;
    if ((rc = cli_seed("pool", seed_text, &seed)))
        return rc;
    int xl = pdnn_layout_parse(layout);
    if (xl != PDNN_NCHW && xl != PDNN_NHWC) {
        fprintf(stderr, "polydnn pool: --layout must be NCHW or NHWC, got '%s'\n", layout);
        return EXIT_USAGE;
    }
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    if (strcasecmp(mode, "max") == 0) {
        if (excl) {
            fprintf(stderr, "polydnn pool: --exclude-padding applies to --mode avg only\n");
            return EXIT_USAGE;
        }
        p.mode = PDNN_POOL_MAX;
    } else if (strcasecmp(mode, "avg") == 0) {
        p.mode = excl ? PDNN_POOL_AVG_EXCLUDE_PADDING : PDNN_POOL_AVG_INCLUDE_PADDING;
    } else {
        fprintf(stderr, "polydnn pool: --mode must be max or avg, got '%s'\n", mode);
        return EXIT_USAGE;
    }
    p.window_h = wy;
    p.window_w = wx;
    p.stride_h = u;
    p.stride_w = v;
    p.pad_top = pt >= 0 ? pt : ph;
    p.pad_bottom = pb >= 0 ? pb : ph;
    p.pad_left = pl >= 0 ? pl : pw;
    p.pad_right = pr >= 0 ? pr : pw;
    p.ceil_mode = ceil_mode;

    npy_array xa = {0};
    float *x = NULL, *y = NULL, *ref = NULL;
    pdnn_context *ctx = NULL;
    pdnn_tensor_desc xd = {PDNN_FLOAT32, (pdnn_layout)xl, {n, c, h, w}, 0};
    if (input) {
        char err[512];
        if (npy_read(input, &xa, err, sizeof err) != PDNN_SUCCESS) {
            fprintf(stderr, "polydnn: %s\n", err);
            return EXIT_RUNTIME;
        }
        if (xa.ndim != 4) {
            fprintf(stderr, "polydnn: %s has %d dimension(s); expected 4\n", input, xa.ndim);
            npy_free(&xa);
            return EXIT_RUNTIME;
        }
        const int64_t *s = xa.shape;
        if (xl == PDNN_NHWC) {
            int64_t d[4] = {s[0], s[3], s[1], s[2]};
            memcpy(xd.dims, d, sizeof d);
        } else {
            memcpy(xd.dims, s, 4 * sizeof xd.dims[0]);
        }
        x = xa.data;
    }
    pdnn_tensor_desc yd = {PDNN_FLOAT32, (pdnn_layout)xl, {0, 0, 0, 0}, 0};
    if (pdnn_pool2d_output_dims(&xd, &p, yd.dims) != PDNN_SUCCESS) {
        rc = cli_fail("pool2d");
        goto out;
    }
    int64_t xn = pdnn_tensor_desc_elements(&xd);
    if (!input) {
        const uint64_t s = (uint64_t)seed;
        printf("random inputs in [-1, 1), seed %" PRIu64 "\n", s);
        uint64_t state = s * 2654435761u + 1;
        if (!(x = cli_random(xn, &state))) {
            rc = cli_host_oom(NULL, "the input x", (uint64_t)xn * sizeof(float));
            goto out;
        }
    }
    pdnn_device *dev = NULL;
    if ((rc = cli_open_device(device, &ctx, &dev)))
        goto out;
    pdnn_device_info info;
    pdnn_device_get_info(dev, &info);
    double ms = 0.0;
    if ((rc = run_pool(dev, &p, &xd, &yd, x, iters, &y, &ms)))
        goto out;
    double bytes = (double)(pdnn_tensor_desc_bytes(&xd) + pdnn_tensor_desc_bytes(&yd));
    printf("pool %s%s n%lld c%lld %lldx%lld window %dx%d stride %d,%d pad %d,%d,%d,%d%s %s -> "
           "[%lld,%lld,%lld,%lld]\n",
           p.mode == PDNN_POOL_MAX ? "max" : "avg", p.mode == PDNN_POOL_AVG_EXCLUDE_PADDING ? " exclude-padding" : "",
           (long long)xd.dims[0], (long long)xd.dims[1], (long long)xd.dims[2], (long long)xd.dims[3], wy, wx,
           u, v, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, ceil_mode ? " ceil" : "",
           pdnn_layout_name((pdnn_layout)xl), (long long)yd.dims[0], (long long)yd.dims[1],
           (long long)yd.dims[2], (long long)yd.dims[3]);
    printf("device %s (%s, %s): %.3f ms/call over %d call(s), %.2f GB/s\n", info.name, info.backend,
           info.device_name, ms, iters, bytes / (ms * 1e-3) / 1e9);
    if (mem_stats)
        cli_print_memory_stats(dev);
    pdnn_device *host = NULL;
    if (verify && (rc = cli_host_reference(ctx, dev, &host)) == 0 && host &&
        (rc = run_pool(host, &p, &xd, &yd, x, 0, &ref, NULL)) == 0) {
        double ma, mr;
        cli_errors(y, ref, pdnn_tensor_desc_elements(&yd), &ma, &mr);
        /* max is exact; an average's sum rounds once per window element */
        double tol = p.mode == PDNN_POOL_MAX ? 0.0 : 1e-6 * wy * wx * 4;
        int ok = ma <= tol;
        pdnn_device_info hinfo;
        pdnn_device_get_info(host, &hinfo);
        printf("verify against %s: max abs error %.3g, max rel error %.3g, tolerance %.3g: %s\n", hinfo.name, ma,
               mr, tol, ok ? "OK" : "FAILED");
        if (!ok)
            rc = EXIT_RUNTIME;
    }
    if (output) {
        char err[512];
        int64_t shape[4] = {yd.dims[0], yd.dims[1], yd.dims[2], yd.dims[3]};
        if (xl == PDNN_NHWC) {
            shape[1] = yd.dims[2];
            shape[2] = yd.dims[3];
            shape[3] = yd.dims[1];
        }
        if (npy_write(output, 4, shape, y, err, sizeof err) != PDNN_SUCCESS) {
            fprintf(stderr, "polydnn: %s\n", err);
            rc = EXIT_RUNTIME;
        } else {
            printf("wrote %s\n", output);
        }
    }
out:
    if (x != xa.data)
        free(x);
    npy_free(&xa);
    free(y);
    free(ref);
    pdnn_context_destroy(ctx);
    return rc;
}
