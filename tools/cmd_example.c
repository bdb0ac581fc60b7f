/* polydnn run-example: TensorFlow-1.x-style graphs run in a session, so a
 * user sees placement, soft placement, the placement log and the memory
 * options without writing C.
 *   towers  a matmul pinned to each of /device:GPU:0 and /device:GPU:1,
 *           add_n of the two on --device (default /cpu:0)
 *   cnn     conv-relu-pool twice, flatten, matmul, softmax on --device
 *           (default: the placer's choice), checked against /cpu:0 */
#include "cli.h"
#include "run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail_build(void) { return cli_fail("building the graph"); }

static pdnn_status matrix(pdnn_graph *g, const char *name, const char *dev, int64_t r, int64_t c, const float *v,
                          pdnn_node *out)
{
    pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_NCHW, {r, c, 1, 1}, 0};
    return pdnn_graph_constant(g, name, dev, &d, v, out);
}

static int build_towers(pdnn_graph *g, const char *sum_dev, pdnn_node *fetch)
{
    static const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 2, 3, 4, 5, 6};
    pdnn_node tower[2];
    for (int t = 0; t < 2; t++) {
        char dev[32], an[8], bn[8];
        snprintf(dev, sizeof dev, "/device:GPU:%d", t);
        snprintf(an, sizeof an, "a%d", t);
        snprintf(bn, sizeof bn, "b%d", t);
        pdnn_node na, nb;
        if (matrix(g, an, dev, 2, 3, a, &na) || matrix(g, bn, dev, 3, 2, b, &nb) ||
            pdnn_graph_matmul(g, NULL, dev, na, nb, 0, 0, &tower[t]))
            return fail_build();
    }
    if (pdnn_graph_add_n(g, NULL, sum_dev ? sum_dev : "/cpu:0", tower, 2, fetch))
        return fail_build();
    return 0;
}

/* Values in [-scale, scale): weights small enough that the softmax is
 * not saturated and the comparison with the host means something. */
static float *seeded(int64_t n, uint64_t seed, float scale)
{
    float *v = malloc(sizeof(float) * (size_t)n);
    if (v) {
        cli_fill(v, n, &seed);
        for (int64_t i = 0; i < n; i++)
            v[i] *= scale;
    }
    return v;
}

/* Input 2x3x16x16 NCHW (a placeholder); the weights are seeded constants. */
static int build_cnn(pdnn_graph *g, const char *dev, pdnn_node *x, pdnn_node *fetch)
{
    pdnn_tensor_desc xd = {PDNN_FLOAT32, PDNN_NCHW, {2, 3, 16, 16}, 0};
    if (pdnn_graph_placeholder(g, "images", dev, &xd, x))
        return fail_build();
    pdnn_node h = *x;
    int64_t cin = 3;
    for (int l = 0; l < 2; l++) {
        int64_t cout = l ? 16 : 8;
        pdnn_tensor_desc wd = {PDNN_FLOAT32, PDNN_OIHW, {cout, cin, 3, 3}, 0};
        pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {cout, 1, 1, 1}, 0};
        float *w = seeded(cout * cin * 9, (uint64_t)l + 1, 0.3f), *b = seeded(cout, (uint64_t)l + 10, 0.1f);
        pdnn_conv2d_params cp;
        pdnn_conv2d_params_init(&cp);
        cp.pad_top = cp.pad_bottom = cp.pad_left = cp.pad_right = 1;
        pdnn_pool2d_params pp;
        pdnn_pool2d_params_init(&pp);
        pdnn_node wn, bn, c, r, p;
        int bad = !w || !b || pdnn_graph_constant(g, NULL, dev, &wd, w, &wn) ||
                  pdnn_graph_constant(g, NULL, dev, &bd, b, &bn) ||
                  pdnn_graph_conv2d(g, NULL, dev, h, wn, bn, &cp, &c) || pdnn_graph_relu(g, NULL, dev, c, &r) ||
                  pdnn_graph_pool2d(g, NULL, dev, r, &pp, &p);
        free(w);
        free(b);
        if (bad)
            return fail_build();
        h = p;
        cin = cout;
    }
    float *fc = seeded(256 * 10, 99, 0.05f);
    pdnn_node f, fw, m;
    int bad = !fc || pdnn_graph_flatten(g, NULL, dev, h, &f) || matrix(g, "fc", dev, 256, 10, fc, &fw) ||
              pdnn_graph_matmul(g, NULL, dev, f, fw, 0, 0, &m) || pdnn_graph_softmax(g, NULL, dev, m, fetch);
    free(fc);
    return bad ? fail_build() : 0;
}

static void print_matrix(const char *label, const float *v, int64_t rows, int64_t cols)
{
    printf("%s\n", label);
    for (int64_t r = 0; r < rows; r++) {
        printf("  [");
        for (int64_t c = 0; c < cols; c++)
            printf("%s%.4g", c ? ", " : "", (double)v[r * cols + c]);
        printf("]\n");
    }
}

typedef struct example_opts {
    const char *device;
    int log, soft, growth, stats;
    double fraction;
} example_opts;

static int open_session(const pdnn_graph *g, const example_opts *o, pdnn_context *ctx, pdnn_session **s)
{
    pdnn_session_config cfg;
    pdnn_session_config_init(&cfg);
    cfg.context = ctx;
    cfg.log_device_placement = o->log;
    cfg.allow_soft_placement = o->soft;
    if (pdnn_session_create(g, &cfg, s))
        return cli_fail("creating the session");
    return 0;
}

static int fetch_all(pdnn_session *s, pdnn_node x, pdnn_tensor *xt, pdnn_node y, float **out)
{
    pdnn_tensor *t = NULL;
    if (pdnn_session_run(s, xt ? &x : NULL, xt ? &xt : NULL, xt ? 1 : 0, &y, 1, &t))
        return cli_fail("running the session");
    int rc = cli_tensor_read(t, out) != PDNN_SUCCESS ? cli_fail("reading the output") : 0;
    pdnn_tensor_release(t);
    return rc;
}

static void print_stats(pdnn_session *s, pdnn_node n)
{
    pdnn_device *d;
    if (pdnn_session_node_device(s, n, &d) == PDNN_SUCCESS)
        cli_print_memory_stats(d);
}

static int run_towers(pdnn_context *ctx, const example_opts *o)
{
    pdnn_graph *g = NULL;
    pdnn_session *s = NULL;
    pdnn_node sum = 0;
    float *v = NULL;
    int rc = pdnn_graph_create(&g) ? cli_fail("creating a graph") : build_towers(g, o->device, &sum);
    if (rc == 0)
        rc = open_session(g, o, ctx, &s);
    if (rc == 0)
        rc = fetch_all(s, 0, NULL, sum, &v);
    if (rc == 0 && v) {
        static const float want[4] = {44, 56, 98, 128};
        print_matrix("AddN (sum of the two towers' 2x3 by 3x2 products):", v, 2, 2);
        for (int i = 0; i < 4; i++)
            if (fabsf(v[i] - want[i]) > 1e-3f) {
                fprintf(stderr, "polydnn: wrong result: element %d is %g, expected %g\n", i, (double)v[i],
                        (double)want[i]);
                rc = EXIT_RUNTIME;
            }
        if (rc == 0)
            printf("matches [[44, 56], [98, 128]]\n");
        if (o->stats)
            for (pdnn_node n = 0; n < pdnn_graph_node_count(g); n++)
                if (strcmp(pdnn_graph_node_op(g, n), "Const") != 0)
                    print_stats(s, n);
    }
    free(v);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
    return rc;
}

static int run_cnn(pdnn_context *ctx, const example_opts *o)
{
    pdnn_graph *g = NULL, *gh = NULL;
    pdnn_session *s = NULL, *sh = NULL;
    pdnn_node x = 0, y = 0, xh = 0, yh = 0;
    pdnn_tensor *xt = NULL;
    float *got = NULL, *ref = NULL, *xv = seeded(2 * 3 * 16 * 16, 7, 1.0f);
    pdnn_device *host = NULL;
    pdnn_tensor_desc xd = {PDNN_FLOAT32, PDNN_NCHW, {2, 3, 16, 16}, 0};
    int rc = !xv || pdnn_graph_create(&g) || pdnn_graph_create(&gh) ? cli_fail("creating a graph") : 0;
    if (rc == 0)
        rc = build_cnn(g, o->device, &x, &y);
    if (rc == 0)
        rc = build_cnn(gh, "/cpu:0", &xh, &yh);
    if (rc == 0)
        rc = open_session(g, o, ctx, &s);
    if (rc == 0) {
        example_opts quiet = *o;
        quiet.log = 0;
        rc = open_session(gh, &quiet, ctx, &sh);
    }
    if (rc == 0 && (pdnn_device_find(ctx, "/cpu:0", &host) || pdnn_tensor_create(host, &xd, &xt) ||
                    pdnn_tensor_write(xt, xv, sizeof(float) * 2 * 3 * 16 * 16)))
        rc = cli_fail("uploading the input");
    if (rc == 0)
        rc = fetch_all(s, x, xt, y, &got);
    if (rc == 0)
        rc = fetch_all(sh, xh, xt, yh, &ref);
    if (rc == 0 && got && ref) {
        pdnn_device *d;
        pdnn_device_info info;
        pdnn_session_node_device(s, y, &d);
        pdnn_device_get_info(d, &info);
        print_matrix("Softmax (2 images, 10 classes):", got, 2, 10);
        double max_abs = 0, max_rel = 0;
        cli_errors(got, ref, 20, &max_abs, &max_rel);
        printf("ran on %s; against /device:CPU:0: max abs error %.3g\n", info.name, max_abs);
        if (max_abs > 1e-4) {
            fprintf(stderr, "polydnn: the result differs from the host reference\n");
            rc = EXIT_RUNTIME;
        }
        if (o->stats)
            print_stats(s, y);
    }
    free(got);
    free(ref);
    free(xv);
    pdnn_tensor_release(xt);
    pdnn_session_destroy(s);
    pdnn_session_destroy(sh);
    pdnn_graph_destroy(g);
    pdnn_graph_destroy(gh);
    return rc;
}

int cmd_example(int argc, char **argv)
{
    const char *which = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
    example_opts o = {NULL, 0, 0, 0, 0, 0.0};
    const char *fraction = NULL;
    const cli_opt opts[] = {
        {'d', "device", OPT_STR, &o.device, 0, "device for the example's nodes (towers: the sum; cnn: all)"},
        {0, "log-device-placement", OPT_FLAG, &o.log, 0, "print the device mapping and each node's device"},
        {0, "allow-soft-placement", OPT_FLAG, &o.soft, 0, "fall back to an existing device instead of failing"},
        {0, "allow-growth", OPT_FLAG, &o.growth, 0, "grow device memory on demand"},
        {0, "memory-fraction", OPT_STR, &fraction, 0, "use at most this fraction of each accelerator's memory"},
        {0, "memory-stats", OPT_FLAG, &o.stats, 0, "print memory statistics of the devices used"},
    };
    int rc = cli_parse("run-example towers|cnn", argc - (which != NULL), argv + (which != NULL), opts,
                       (int)(sizeof opts / sizeof opts[0]),
                       "Runs an example graph in a session: 'towers' (a matmul on each of two GPUs, summed "
                       "on the CPU) or 'cnn' (a small CNN checked against the host).");
    if (rc)
        return rc < 0 ? 0 : rc;
    if (!which || (strcmp(which, "towers") != 0 && strcmp(which, "cnn") != 0)) {
        fprintf(stderr, "polydnn run-example: name the example: towers or cnn\n");
        return EXIT_USAGE;
    }
    pdnn_context_options co;
    pdnn_context_options_init(&co);
    co.allow_growth = o.growth;
    if (fraction) {
        char *end = NULL;
        o.fraction = strtod(fraction, &end);
        if (!end || *end || !(o.fraction > 0 && o.fraction <= 1)) {
            fprintf(stderr, "polydnn run-example: --memory-fraction '%s' must be a number in (0, 1]\n", fraction);
            return EXIT_USAGE;
        }
        co.memory_fraction = o.fraction;
    }
    pdnn_context *ctx = NULL;
    if (pdnn_context_create(&co, &ctx))
        return cli_fail("creating a context");
    rc = strcmp(which, "towers") == 0 ? run_towers(ctx, &o) : run_cnn(ctx, &o);
    pdnn_context_destroy(ctx);
    return rc;
}
