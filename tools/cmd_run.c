/* polydnn run: an ONNX model imported into a graph and run in a session;
 * random or .npy inputs, the top-5 classes, the time per run, the output
 * as .npy. */
#include "cli.h"
#include "npy.h"
#include "profile.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Uniform in [-1, 1) from a small xorshift, so runs are reproducible. */
static void fill_random(float *x, int64_t n, uint64_t *state)
{
    for (int64_t i = 0; i < n; i++) {
        *state ^= *state << 13, *state ^= *state >> 7, *state ^= *state << 17;
        x[i] = (float)((double)(*state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
}

/* The five largest of row r's cols values, best first; -1 past cols. */
static void top5(const float *y, int64_t r, int64_t cols, int best[5])
{
    for (int k = 0; k < 5; k++)
        best[k] = -1;
    for (int64_t c = 0; c < cols; c++)
        for (int k = 0; k < 5; k++)
            if (best[k] < 0 || y[r * cols + c] > y[r * cols + best[k]]) {
                memmove(&best[k + 1], &best[k], (size_t)(4 - k) * sizeof best[0]);
                best[k] = (int)c;
                break;
            }
}

/* Each image's top-5 (the first 8 images): text lines, or with json a
 * "top5" member, [[class, score], ...] per image. */
/* The shape the model declares for a value of desc d: an ND value's own
 * rank and dims; an image-layout one (the importer's rank-4 form of a
 * rank-1 to 4 ONNX value, {N, C, 1, 1} for a matrix) its first
 * onnx_rank dims. Returns the rank. */
static int real_shape(const pdnn_tensor_desc *d, int onnx_rank, int64_t *shape)
{
    const int r = d->layout == PDNN_ND ? d->rank : onnx_rank >= 1 && onnx_rank <= 4 ? onnx_rank : 4;
    for (int i = 0; i < r; i++)
        shape[i] = d->dims[i];
    return r;
}

/* "2x3x5" (sep "x") or "2, 3, 5" (sep ", "); "" for rank 0. */
static const char *dims_text(const int64_t *shape, int rank, const char *sep, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < rank && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%" PRId64, i ? sep : "", shape[i]);
    return buf;
}

static void print_top5(const float *y, int64_t rows, int64_t cols, int json)
{
    if (json)
        printf(", \"top5\": [");
    for (int64_t r = 0; r < rows && r < 8; r++) {
        int best[5];
        top5(y, r, cols, best);
        if (json)
            printf("%s[", r ? ", " : "");
        else
            printf("image %" PRId64 " top-5:", r);
        for (int k = 0; k < 5 && best[k] >= 0; k++) {
            const double v = (double)y[r * cols + best[k]];
            if (!json)
                printf(" %d (%.4g)", best[k], v);
            else if (isfinite(v))
                printf("%s[%d, %.9g]", k ? ", " : "", best[k], v);
            else /* JSON has no NaN or infinity */
                printf("%s[%d, null]", k ? ", " : "", best[k]);
        }
        printf(json ? "]" : "\n");
    }
    if (json)
        printf("]");
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The nearest-rank p-th percentile of n sorted values. */
static double percentile(const double *sorted, int n, int p)
{
    int rank = (p * n + 99) / 100; /* ceil(p/100 * n), 1-based */
    return sorted[rank < 1 ? 0 : rank - 1];
}

int cmd_run(int argc, char **argv)
{
    const char *model = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
    const char *input = NULL, *output = NULL, *device = NULL, *fraction = NULL, *layout = NULL;
    int batch = 0, iters = 10, warmup = 1, log = 0, stats = 0, seed = 1, profile = 0, growth = 0, no_fusion = 0,
        json = 0;
    const cli_opt opts[] = {
        {0, "input", OPT_STR, &input, 0, "x.npy: the model's (first) input, NCHW; sets the batch"},
        {0, "output", OPT_STR, &output, 0, "y.npy: write the (first) output"},
        {'n', "batch", OPT_INT, &batch, 1, "batch size for random inputs (default: the file's, symbolic -> 1)"},
        {'d', "device", OPT_STR, &device, 0, "run every node on this device, e.g. /cpu:0 (default: placed)"},
        {'i', "iters", OPT_INT, &iters, 1, "timed runs after the warm-up (default 10)"},
        {0, "warmup", OPT_INT, &warmup, 1, "untimed runs first (default 1; the first run builds kernels and "
                                           "packs filters, the second can still touch fresh memory)"},
        {0, "seed", OPT_INT, &seed, 0, "seed for random inputs (default 1)"},
        {0, "log-device-placement", OPT_FLAG, &log, 0, "print the device mapping and each node's device"},
        {0, "allow-growth", OPT_FLAG, &growth, 0, "grow device memory on demand"},
        {0, "memory-fraction", OPT_STR, &fraction, 0, "use at most this fraction of each accelerator's memory"},
        {0, "memory-stats", OPT_FLAG, &stats, 0, "print memory statistics of the devices used and the session's "
                                                   "largest live set"},
        {0, "layout", OPT_STR, &layout, 0, "NCHW|NHWC: the layout the network runs in (default NCHW, the file's; "
                                           "inputs and outputs stay NCHW)"},
        {0, "no-fusion", OPT_FLAG, &no_fusion, 0, "keep each Add, Relu and Clip after a Conv a node of its own (BatchNormalization is still folded)"},
        {0, "profile", OPT_FLAG, &profile, 0, "time every node (synchronizing after each) and print the times"},
        {0, "json", OPT_FLAG, &json, 0, "print the model, top-5 and times as one JSON object instead (--profile and "
                                        "--memory-stats stay text)"},
    };
    int rc = cli_parse("run model.onnx", argc - (model != NULL), argv + (model != NULL), opts,
                       (int)(sizeof opts / sizeof opts[0]),
                       "Imports an ONNX model and runs it in a session: prints the top-5 classes of the first "
                       "output and the time per run.");
    if (rc)
        return rc < 0 ? 0 : rc;
    if (!model) {
        fprintf(stderr, "polydnn run: name the model: polydnn run model.onnx [flags]\n");
        return EXIT_USAGE;
    }
    pdnn_session_config cfg;
    pdnn_session_config_init(&cfg);
    cfg.options.allow_growth = growth;
    if (fraction) {
        char *end = NULL;
        const double f = strtod(fraction, &end);
        if (!end || *end || !(f > 0 && f <= 1)) {
            fprintf(stderr, "polydnn run: --memory-fraction '%s' must be a number in (0, 1]\n", fraction);
            return EXIT_USAGE;
        }
        cfg.options.memory_fraction = f;
    }
    int lay = layout ? pdnn_layout_parse(layout) : PDNN_NCHW;
    if (lay != PDNN_NCHW && lay != PDNN_NHWC) {
        fprintf(stderr, "polydnn run: --layout must be NCHW or NHWC, got '%s'\n", layout);
        return EXIT_USAGE;
    }
    npy_array x = {0};
    char err[512];
    if (input && npy_read(input, &x, err, sizeof err) != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn run: --input %s: %s\n", input, err);
        return EXIT_RUNTIME;
    }
    if (input && batch && x.ndim > 0 && x.shape[0] != batch) {
        fprintf(stderr, "polydnn run: --batch %d differs from --input's batch %" PRId64 "\n", batch, x.shape[0]);
        npy_free(&x);
        return EXIT_USAGE;
    }
    pdnn_onnx_options oo;
    pdnn_onnx_options_init(&oo);
    oo.batch = input && x.ndim > 0 ? x.shape[0] : batch;
    oo.device = device;
    oo.no_fusion = no_fusion;
    oo.layout = (pdnn_layout)lay;
    pdnn_graph *g = NULL;
    pdnn_onnx_io io;
    double t0 = now_ms();
    if (pdnn_graph_import_onnx(model, NULL, 0, &oo, &g, &io) != PDNN_SUCCESS) {
        npy_free(&x);
        return cli_fail("importing the model");
    }
    double t_import = now_ms() - t0;
    cfg.log_device_placement = log;
    cfg.profile = profile;
    pdnn_session *s = NULL;
    pdnn_tensor *feeds[PDNN_ONNX_MAX_IO] = {0};
    pdnn_tensor *fetched[PDNN_ONNX_MAX_IO] = {0};
    float *y = NULL;
    double *times = NULL; /* each timed run's ms */
    rc = 0;
    if (pdnn_session_create(g, &cfg, &s) != PDNN_SUCCESS) {
        rc = cli_fail("creating the session");
        goto out;
    }
    pdnn_context *ctx = pdnn_session_context(s);
    uint64_t state = 0x9e3779b97f4a7c15ull ^ (uint64_t)seed;
    for (int i = 0; i < io.n_inputs && !rc; i++) {
        pdnn_tensor_desc d;
        pdnn_device *dev = NULL;
        pdnn_graph_node_desc(g, io.inputs[i], &d);
        int64_t n = pdnn_tensor_desc_elements(&d);
        if (input && i == 0) {
            int64_t want[PDNN_MAX_RANK];
            const int r = real_shape(&d, io.input_rank[i], want);
            int same = x.count == n && x.ndim == r;
            for (int k = 0; same && k < x.ndim; k++)
                same = x.shape[k] == want[k];
            if (!same) {
                char dims[PDNN_MAX_RANK * 22 + 2];
                fprintf(stderr, "polydnn run: --input %s has the wrong shape for input '%s' (rank %d, dims %s)\n",
                        input, pdnn_graph_node_name(g, io.inputs[i]), r, dims_text(want, r, "x", dims, sizeof dims));
                rc = EXIT_RUNTIME;
                break;
            }
        }
        float *host = input && i == 0 ? x.data : malloc((size_t)n * sizeof *host);
        if (!host) {
            rc = cli_host_oom("run", "an input", (uint64_t)n * sizeof *host);
            break;
        }
        if (!(input && i == 0))
            fill_random(host, n, &state);
        if (pdnn_session_node_device(s, io.inputs[i], &dev) != PDNN_SUCCESS ||
            pdnn_tensor_create(dev, &d, &feeds[i]) != PDNN_SUCCESS ||
            pdnn_tensor_write(feeds[i], host, (size_t)n * sizeof *host) != PDNN_SUCCESS)
            rc = cli_fail("creating an input");
        if (host != x.data)
            free(host);
    }
    (void)ctx;
    double per_run = 0.0;
    times = malloc(sizeof *times * (size_t)iters);
    if (!times) {
        rc = cli_host_oom("run", "the run times", sizeof *times * (uint64_t)iters);
        goto out;
    }
    for (int it = 0; it < warmup + iters && !rc; it++) {
        for (int k = 0; k < io.n_outputs; k++) {
            pdnn_tensor_release(fetched[k]);
            fetched[k] = NULL;
        }
        double t = now_ms();
        if (pdnn_session_run(s, io.inputs, feeds, io.n_inputs, io.outputs, io.n_outputs, fetched) != PDNN_SUCCESS)
            rc = cli_fail("running the model");
        else if (pdnn_device_synchronize(pdnn_tensor_device(fetched[0])) != PDNN_SUCCESS)
            rc = cli_fail("waiting for the run");
        if (it >= warmup) {
            times[it - warmup] = now_ms() - t;
            per_run += times[it - warmup] / iters;
        }
    }
    if (rc)
        goto out;
    pdnn_tensor_desc yd;
    pdnn_tensor_get_desc(fetched[0], &yd);
    int64_t ny = pdnn_tensor_desc_elements(&yd), yshape[PDNN_MAX_RANK];
    const int yrank = real_shape(&yd, io.output_rank[0], yshape);
    char ytext[PDNN_MAX_RANK * 22 + 2];
    y = malloc((size_t)ny * sizeof *y);
    if (!y) {
        rc = cli_host_oom("run", "the output", (uint64_t)ny * sizeof *y);
        goto out;
    }
    if (pdnn_tensor_read(fetched[0], y, (size_t)ny * sizeof *y) != PDNN_SUCCESS) {
        rc = cli_fail("reading the output");
        goto out;
    }
    /* The spread as well as the mean: one slow run (a page fault, another
     * process) moves a mean, the median not; p90/p99 are nearest-rank. */
    qsort(times, (size_t)iters, sizeof *times, cmp_double);
    const double p50 = percentile(times, iters, 50), p90 = percentile(times, iters, 90),
                 p99 = percentile(times, iters, 99);
    if (json) {
        printf("{\"model\": ");
        cli_json_string(stdout, model);
        printf(", \"nodes\": %d, \"import_ms\": %.3f, \"output\": ", pdnn_graph_node_count(g), t_import);
        cli_json_string(stdout, pdnn_graph_node_name(g, io.outputs[0]));
        printf(", \"output_dims\": [%s]", dims_text(yshape, yrank, ", ", ytext, sizeof ytext));
        print_top5(y, yd.dims[0], ny / yd.dims[0], 1);
        printf(", \"iters\": %d, \"warmup\": %d, \"mean_ms\": %.6f, \"min_ms\": %.6f, \"median_ms\": %.6f, "
               "\"p90_ms\": %.6f, \"p99_ms\": %.6f, \"profiled\": %s}\n",
               iters, warmup, per_run, times[0], p50, p90, p99, profile ? "true" : "false");
    } else {
        printf("model %s: %d nodes, imported in %.1f ms; output '%s' %s\n", model, pdnn_graph_node_count(g), t_import,
               pdnn_graph_node_name(g, io.outputs[0]), yrank ? dims_text(yshape, yrank, "x", ytext, sizeof ytext)
                                                                : "scalar");
        print_top5(y, yd.dims[0], ny / yd.dims[0], 0);
        printf("time per run: %.3f ms (mean of %d after %d warm-up run%s%s), min %.3f, median %.3f, p90 %.3f, "
               "p99 %.3f ms\n",
               per_run, iters, warmup, warmup == 1 ? "" : "s", profile ? "; --profile synchronizes after every node" : "",
               times[0], p50, p90, p99);
    }
    fflush(stdout);
    if (profile && cli_print_profile(stdout, g, s, 40))
        rc = EXIT_RUNTIME;
    if (output) {
        if (npy_write(output, yrank, yshape, y, err, sizeof err) != PDNN_SUCCESS) {
            fprintf(stderr, "polydnn run: --output %s: %s\n", output, err);
            rc = EXIT_RUNTIME;
        }
    }
    if (stats) {
        pdnn_device *seen[PDNN_ONNX_MAX_IO * 2];
        int n_seen = 0;
        for (int i = 0; i < pdnn_graph_node_count(g); i++) {
            pdnn_device *d = NULL;
            if (pdnn_session_node_device(s, i, &d) != PDNN_SUCCESS)
                continue;
            int k = 0;
            while (k < n_seen && seen[k] != d)
                k++;
            if (k == n_seen && n_seen < (int)(sizeof seen / sizeof seen[0])) {
                seen[n_seen++] = d;
                cli_print_memory_stats(d);
                pdnn_memory_stats ms;
                int64_t live = 0;
                pdnn_device_info info;
                if (pdnn_session_memory_live_peak(s, d, &live) == PDNN_SUCCESS && live > 0 &&
                    pdnn_device_get_memory_stats(d, &ms) == PDNN_SUCCESS && pdnn_device_get_info(d, &info) == PDNN_SUCCESS)
                    printf("plan %s: largest live set %" PRId64 " B, peak in use %" PRIu64 " B (%.3fx)\n", info.name,
                           live, ms.peak_bytes_in_use, (double)ms.peak_bytes_in_use / (double)live);
            }
        }
    }
out:
    free(times);
    free(y);
    for (int k = 0; k < PDNN_ONNX_MAX_IO; k++) {
        pdnn_tensor_release(fetched[k]);
        pdnn_tensor_release(feeds[k]);
    }
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
    npy_free(&x);
    return rc;
}
