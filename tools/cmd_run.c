/* polydnn run: an ONNX model imported into a graph and run in a session;
 * random, .npy or image inputs (PNG, JPEG: image.c), the top-k classes
 * (named from a labels file), the time per run, the output as .npy. */
#include "cli.h"
#include "precision.h"
#include "image.h"
#include "npy.h"
#include "profile.h"

#include "core/fileio.h"

#include <errno.h>
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

/* The k largest of row r's cols values, best first (k <= cols). */
static void top_k(const float *y, int64_t r, int64_t cols, int k, int *best)
{
    int n = 0;
    for (int64_t c = 0; c < cols; c++) {
        int at = n < k ? n : k;
        while (at > 0 && y[r * cols + c] > y[r * cols + best[at - 1]])
            at--;
        if (at == k)
            continue;
        memmove(&best[at + 1], &best[at], (size_t)((n < k ? n : k - 1) - at) * sizeof best[0]);
        best[at] = (int)c;
        n += n < k;
    }
}

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

/* A labels file: one class name per line (torchvision's and ImageNet's
 * files), the line ending and a final newline not part of the names. */
typedef struct labels {
    char *text;   /* the file, lines cut in place */
    char **names; /* count of them */
    int64_t count;
} labels;

enum { LABELS_MAX_BYTES = 64 << 20 };

static void labels_free(labels *l)
{
    free(l->text);
    free(l->names);
    memset(l, 0, sizeof *l);
}

static int labels_read(const char *path, labels *l)
{
    memset(l, 0, sizeof *l);
    FILE *f = NULL;
    struct stat sb;
    char why[128] = "";
    const int o = pdnn__file_open_read(path, &f, &sb, why, sizeof why);
    if (o <= 0) {
        fprintf(stderr, "polydnn run: --labels %s: %s\n", path, o < 0 ? why : strerror(errno ? errno : ENOENT));
        return EXIT_RUNTIME;
    }
    if (sb.st_size > LABELS_MAX_BYTES) {
        fprintf(stderr, "polydnn run: --labels %s: %lld bytes, more than a labels file's %d\n", path,
                (long long)sb.st_size, LABELS_MAX_BYTES);
        fclose(f);
        return EXIT_RUNTIME;
    }
    const size_t n = (size_t)sb.st_size;
    l->text = malloc(n + 1);
    if (!l->text || fread(l->text, 1, n, f) != n) {
        fprintf(stderr, "polydnn run: --labels %s: %s\n", path, l->text ? "could not read it whole" : "out of memory");
        fclose(f);
        labels_free(l);
        return EXIT_RUNTIME;
    }
    fclose(f);
    l->text[n] = '\0';
    int64_t lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += l->text[i] == '\n' || (i + 1 == n); /* a last line without its newline counts */
    l->names = malloc(sizeof *l->names * (size_t)(lines ? lines : 1));
    if (!l->names) {
        fprintf(stderr, "polydnn run: --labels %s: out of memory\n", path);
        labels_free(l);
        return EXIT_RUNTIME;
    }
    for (char *p = l->text; *p;) {
        char *e = strchr(p, '\n');
        char *next = e ? e + 1 : p + strlen(p);
        if (e)
            *e = '\0';
        size_t len = strlen(p);
        if (len && p[len - 1] == '\r')
            p[len - 1] = '\0';
        l->names[l->count++] = p;
        p = next;
    }
    return 0;
}

/* Row r as probabilities into prob: the row itself when it already is a
 * distribution (every value in [0, 1], summing to 1 within 1e-3: a
 * network ending in Softmax), else its softmax. Returns 1 when the
 * softmax was taken. */
static int probabilities(const float *y, int64_t r, int64_t cols, double *prob)
{
    const float *row = y + r * cols;
    double sum = 0.0, max = -INFINITY;
    int dist = 1;
    for (int64_t c = 0; c < cols; c++) {
        dist &= row[c] >= 0.0f && row[c] <= 1.0f;
        sum += row[c];
        max = fmax(max, (double)row[c]);
    }
    if (dist && fabs(sum - 1.0) <= 1e-3) {
        for (int64_t c = 0; c < cols; c++)
            prob[c] = row[c];
        return 0;
    }
    sum = 0.0;
    for (int64_t c = 0; c < cols; c++)
        sum += prob[c] = exp((double)row[c] - max);
    for (int64_t c = 0; c < cols; c++)
        prob[c] /= sum;
    return 1;
}

/* Each image's top k: text lines, or with json a "top" member, a list per
 * image of [class, score] (with labels [class, score, label, probability]).
 * Without images, the first 8 rows. */
typedef struct top_out {
    int k, json;
    const labels *names;    /* NULL: class indices and scores only */
    const cli_strs *images; /* the rows' files, or NULL */
} top_out;

static int print_top(const float *y, int64_t rows, int64_t cols, const top_out *t)
{
    const int k = t->k < cols ? t->k : (int)cols;
    int *best = malloc(sizeof *best * (size_t)k);
    double *prob = t->names ? malloc(sizeof *prob * (size_t)cols) : NULL;
    if (!best || (t->names && !prob)) {
        free(best);
        free(prob);
        return cli_host_oom("run", "the top classes", (uint64_t)cols * sizeof *prob);
    }
    const int64_t shown = t->images ? rows : rows < 8 ? rows : 8;
    int softmax = 0;
    if (t->json)
        printf(", \"top\": [");
    for (int64_t r = 0; r < shown; r++) {
        top_k(y, r, cols, k, best);
        if (t->names)
            softmax = probabilities(y, r, cols, prob);
        if (t->json)
            printf("%s[", r ? ", " : "");
        else if (t->images)
            printf("image %" PRId64 " (%s) top-%d%s", r, t->images->v[r], k, t->names ? "" : ":");
        else
            printf("image %" PRId64 " top-%d%s", r, k, t->names ? "" : ":");
        if (t->names && !t->json)
            printf(", probabilities (%s):\n", softmax ? "softmax of the output" : "the output, already a distribution");
        for (int i = 0; i < k; i++) {
            const double v = (double)y[r * cols + best[i]];
            if (t->names && !t->json) {
                printf("  %.4f  %s (%d)\n", prob[best[i]], t->names->names[best[i]], best[i]);
            } else if (!t->json) {
                printf(" %d (%.4g)", best[i], v);
            } else {
                printf(isfinite(v) ? "%s[%d, %.9g" : "%s[%d, null", i ? ", " : "", best[i], v); /* JSON has no NaN */
                if (t->names) {
                    printf(", ");
                    cli_json_string(stdout, t->names->names[best[i]]);
                    printf(", %.9g", prob[best[i]]);
                }
                printf("]");
            }
        }
        printf(t->json ? "]" : t->names ? "" : "\n");
    }
    if (t->json) {
        printf("]");
        if (t->names)
            printf(", \"probabilities\": \"%s\"", softmax ? "softmax" : "output");
    }
    free(best);
    free(prob);
    return 0;
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

/* What one --input names: 1 a PNG or JPEG image, 0 a .npy array (or a
 * pipe, which can hand only that; or nothing there, which npy_read
 * reports), -1 a regular file that is neither. */
static int input_kind(const char *path)
{
    FILE *f = NULL;
    struct stat sb;
    char why[128];
    if (pdnn__file_open_read(path, &f, &sb, why, sizeof why) != 1)
        return 0;
    unsigned char head[8];
    const size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (image_sniff(head, got) != IMAGE_NONE)
        return 1;
    return got >= 6 && memcmp(head, "\x93NUMPY", 6) == 0 ? 0 : -1;
}

/* The n images of paths as input 0 (d: its descriptor, NCHW), into *out
 * (malloc'd). 0, or EXIT_RUNTIME after naming the file and the fault. */
static int read_images(const cli_strs *paths, const pdnn_tensor_desc *d, int rank, const image_prep *flags,
                       float **out)
{
    *out = NULL;
    if (rank != 4 || (d->dims[1] != 1 && d->dims[1] != 3) || d->dims[0] != paths->n) {
        fprintf(stderr, "polydnn run: image inputs fill an N x 1|3 x H x W input; the model's first input is rank %d, "
                "%" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64 " (for %d image%s)\n", rank, d->dims[0], d->dims[1],
                d->dims[2], d->dims[3], paths->n, paths->n == 1 ? "" : "s");
        return EXIT_RUNTIME;
    }
    image_prep p = *flags;
    p.channels = (int)d->dims[1], p.height = (int)d->dims[2], p.width = (int)d->dims[3];
    const int64_t per = d->dims[1] * d->dims[2] * d->dims[3];
    float *x = malloc(sizeof *x * (size_t)(per * paths->n));
    if (!x)
        return cli_host_oom("run", "the input images", sizeof *x * (uint64_t)(per * paths->n));
    char err[512];
    for (int i = 0; i < paths->n; i++) {
        image img;
        if (image_read(paths->v[i], &img, err, sizeof err) || image_prepare(&img, &p, paths->v[i], x + per * i, err, sizeof err)) {
            fprintf(stderr, "polydnn run: --input %s\n", err);
            image_free(&img);
            free(x);
            return EXIT_RUNTIME;
        }
        image_free(&img);
    }
    *out = x;
    return 0;
}

/* Input node's tensor on its session device: given's n floats, or random
 * ones (from state) when given is NULL. */
static int feed_input(pdnn_session *s, pdnn_node node, const pdnn_tensor_desc *d, const float *given,
                      uint64_t *state, pdnn_tensor **out)
{
    const int64_t n = pdnn_tensor_desc_elements(d);
    float *host = given ? NULL : malloc((size_t)n * sizeof *host);
    if (!given && !host)
        return cli_host_oom("run", "an input", (uint64_t)n * sizeof *host);
    if (host)
        fill_random(host, n, state);
    pdnn_device *dev = NULL;
    int rc = 0;
    if (pdnn_session_node_device(s, node, &dev) != PDNN_SUCCESS || pdnn_tensor_create(dev, d, out) != PDNN_SUCCESS ||
        pdnn_tensor_write(*out, given ? given : host, (size_t)n * sizeof *host) != PDNN_SUCCESS)
        rc = cli_fail("creating an input");
    free(host);
    return rc;
}

/* --batches: the imported graph run at each batch in turn
 * (pdnn_graph_set_batch, a session per batch), input 0 the first rows of
 * x when given, else random like the others; output 0 of each batch to
 * out "-b<N>" before its ".npy" when out is given. */
static int run_batches(pdnn_graph *g, const pdnn_onnx_io *io, const pdnn_session_config *cfg, const char *list,
                       const npy_array *x, int iters, int warmup, int seed, const char *out)
{
    long bs[64];
    int n_bs = 0;
    for (const char *p = list;; p++) {
        char *end = NULL;
        const long b = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || b < 1 || b > 1 << 20 || n_bs == 64) {
            fprintf(stderr, "polydnn run: --batches '%s' is not a comma-separated list of at most 64 batch sizes "
                            "from 1 to %d\n", list, 1 << 20);
            return EXIT_USAGE;
        }
        bs[n_bs++] = b;
        if (!*(p = end))
            break;
    }
    int rc = 0;
    uint64_t state = 0x9e3779b97f4a7c15ull ^ (uint64_t)seed;
    for (int j = 0; j < n_bs && !rc; j++) {
        const long b = bs[j];
        if (pdnn_graph_set_batch(g, b) != PDNN_SUCCESS)
            return cli_fail("changing the batch");
        pdnn_session *s = NULL;
        pdnn_tensor *feeds[PDNN_ONNX_MAX_IO] = {0}, *fetched[PDNN_ONNX_MAX_IO] = {0};
        float *y = NULL;
        if (pdnn_session_create(g, cfg, &s) != PDNN_SUCCESS)
            rc = cli_fail("creating the session");
        for (int i = 0; i < io->n_inputs && !rc; i++) {
            pdnn_tensor_desc d;
            pdnn_graph_node_desc(g, io->inputs[i], &d);
            int64_t want[PDNN_MAX_RANK];
            const int r = real_shape(&d, io->input_rank[i], want);
            int fits = i == 0 && x && x->ndim == r && r > 0 && x->shape[0] >= b;
            for (int k = 1; fits && k < r; k++)
                fits = x->shape[k] == want[k];
            if (i == 0 && x && !fits) {
                char dims[PDNN_MAX_RANK * 22 + 2];
                fprintf(stderr, "polydnn run: --input's shape does not hold batch %ld of input '%s' (%s)\n", b,
                        pdnn_graph_node_name(g, io->inputs[i]), dims_text(want, r, "x", dims, sizeof dims));
                rc = EXIT_RUNTIME;
                break;
            }
            rc = feed_input(s, io->inputs[i], &d, fits ? x->data : NULL, &state, &feeds[i]);
        }
        double total = 0.0;
        for (int it = 0; it < warmup + iters && !rc; it++) {
            for (int k = 0; k < io->n_outputs; k++) {
                pdnn_tensor_release(fetched[k]);
                fetched[k] = NULL;
            }
            const double t = now_ms();
            if (pdnn_session_run(s, io->inputs, feeds, io->n_inputs, io->outputs, io->n_outputs, fetched) !=
                    PDNN_SUCCESS ||
                pdnn_device_synchronize(pdnn_tensor_device(fetched[0])) != PDNN_SUCCESS)
                rc = cli_fail("running the model");
            total += it >= warmup ? now_ms() - t : 0.0;
        }
        pdnn_tensor_desc yd;
        int64_t ys[PDNN_MAX_RANK], ny = 0;
        int yr = 0;
        if (!rc) {
            pdnn_tensor_get_desc(fetched[0], &yd);
            ny = pdnn_tensor_desc_elements(&yd);
            yr = real_shape(&yd, io->output_rank[0], ys);
            if (!(y = malloc((size_t)ny * sizeof *y)))
                rc = cli_host_oom("run", "the output", (uint64_t)ny * sizeof *y);
            else if (pdnn_tensor_read(fetched[0], y, (size_t)ny * sizeof *y) != PDNN_SUCCESS)
                rc = cli_fail("reading the output");
        }
        if (!rc) {
            char yt[PDNN_MAX_RANK * 22 + 2];
            const double ms = total / iters;
            printf("batch %ld: output %s, %.3f ms per run (mean of %d), %.1f images/s\n", b,
                   dims_text(ys, yr, "x", yt, sizeof yt), ms, iters, ms > 0 ? 1e3 * (double)b / ms : 0.0);
        }
        if (!rc && out) {
            char path[4096], err[512];
            const size_t len = strlen(out), stem = len > 4 && !strcmp(out + len - 4, ".npy") ? len - 4 : len;
            snprintf(path, sizeof path, "%.*s-b%ld.npy", (int)stem, out, b);
            if (npy_write(path, yr, ys, y, err, sizeof err) != PDNN_SUCCESS) {
                fprintf(stderr, "polydnn run: --output %s: %s\n", path, err);
                rc = EXIT_RUNTIME;
            }
        }
        free(y);
        for (int k = 0; k < PDNN_ONNX_MAX_IO; k++) {
            pdnn_tensor_release(fetched[k]);
            pdnn_tensor_release(feeds[k]);
        }
        pdnn_session_destroy(s);
    }
    return rc;
}

int cmd_run(int argc, char **argv)
{
    const char *model = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
    const char *output = NULL, *device = NULL, *fraction = NULL, *layout = NULL, *seed_text = NULL;
    const char *scale = NULL, *mean = NULL, *std = NULL, *labels_path = NULL, *batches = NULL, *precision = NULL;
    static cli_strs inputs; /* static: 8 KiB of names */
    int batch = 0, iters = 10, warmup = 1, log = 0, stats = 0, seed = 0, profile = 0, growth = 0, no_fusion = 0,
        json = 0, resize = 0, stretch = 0, top = 5;
    const cli_opt opts[] = {
        {0, "input", OPT_STRS, &inputs, 0, "x.npy (the model's first input, NCHW; sets the batch), or image files "
                                           "(PNG, JPEG; repeated: one per image of the batch)"},
        {0, "output", OPT_STR, &output, 0, "y.npy: write the (first) output"},
        {'n', "batch", OPT_INT, &batch, 1, "batch size for random inputs (default: the file's, symbolic -> 1)"},
        {0, "batches", OPT_STR, &batches, 0, "N,M,...: import once, then run at each batch in turn (a model with a "
                                             "symbolic batch; --input x.npy gives its first rows; --output y.npy "
                                             "writes y-bN.npy)"},
        {'d', "device", OPT_STR, &device, 0, "run every node on this device, e.g. /cpu:0 (default: placed)"},
        {'i', "iters", OPT_INT, &iters, 1, "timed runs after the warm-up (default 10)"},
        {0, "warmup", OPT_INT, &warmup, 1, "untimed runs first (default 1; the first run builds kernels and "
                                           "packs filters, the second can still touch fresh memory)"},
        {0, "seed", OPT_STR, &seed_text, 0, CLI_SEED_HELP},
        {0, "log-device-placement", OPT_FLAG, &log, 0, "print the device mapping and each node's device"},
        {0, "allow-growth", OPT_FLAG, &growth, 0, "grow device memory on demand"},
        {0, "memory-fraction", OPT_STR, &fraction, 0, "use at most this fraction of each accelerator's memory"},
        {0, "memory-stats", OPT_FLAG, &stats, 0, "print memory statistics of the devices used and the session's "
                                                   "largest live set"},
        {0, "layout", OPT_STR, &layout, 0, "NCHW|NHWC: the layout the network runs in (default NCHW, the file's; "
                                           "inputs and outputs stay NCHW)"},
        {0, "precision", OPT_STR, &precision, 0, "fp32|fp16|bf16: compute in float16 or bfloat16 under the mixed "
                                                 "precision policy, inputs and outputs float32 (default: the file's)"},
        {0, "no-fusion", OPT_FLAG, &no_fusion, 0, "keep each Add, Relu and Clip after a Conv a node of its own (BatchNormalization is still folded)"},
        {0, "profile", OPT_FLAG, &profile, 0, "time every node (synchronizing after each) and print the times"},
        {0, "json", OPT_FLAG, &json, 0, "print the model, top classes and times as one JSON object instead (--profile "
                                        "and --memory-stats stay text)"},
        {0, "top", OPT_INT, &top, 1, "print each image's K best classes (default 5)"},
        {0, "labels", OPT_STR, &labels_path, 0, "class names, one per line (as many as the output's classes): print "
                                                "the top classes by name, with probabilities"},
        {0, NULL, OPT_HEADING, NULL, 0, "image inputs (--input cat.png): decoded, resized, then (v * scale - mean) / std:"},
        {0, "resize", OPT_INT, &resize, 1, "scale the shorter side to N, then cut the input's H x W from the centre "
                                          "(torchvision's Resize(N) + CenterCrop; default: the smallest N that covers it)"},
        {0, "stretch", OPT_FLAG, &stretch, 0, "resize straight to the input's H x W instead (the aspect ratio not kept)"},
        {0, "scale", OPT_STR, &scale, 0, "multiplies each 0..255 value first (default 1/255)"},
        {0, "mean", OPT_STR, &mean, 0, "R,G,B or one value, subtracted (default 0; ImageNet: 0.485,0.456,0.406)"},
        {0, "std", OPT_STR, &std, 0, "R,G,B or one value, divided by (default 1; ImageNet: 0.229,0.224,0.225)"},
    };
    int rc = cli_parse("run model.onnx", argc - (model != NULL), argv + (model != NULL), opts,
                       (int)(sizeof opts / sizeof opts[0]),
                       "Imports an ONNX model and runs it in a session: prints the top-5 classes of the first "
                       "output (by name with --labels) and the time per run.\n"
                       "Images: gray fills a 3-channel input replicated, RGB a 1-channel one by luminance; alpha is "
                       "dropped.");
    if (rc)
        return rc < 0 ? 0 : rc;
    if (!model) {
        fprintf(stderr, "polydnn run: name the model: polydnn run model.onnx [flags]\n");
        return EXIT_USAGE;
    }
    if ((rc = cli_seed("run", seed_text, &seed)))
        return rc;
    const int kind = inputs.n == 1 ? input_kind(inputs.v[0]) : 1;
    if (kind < 0) {
        fprintf(stderr, "polydnn run: --input %s is neither a .npy array nor a PNG or JPEG image (by its first bytes)\n",
                inputs.v[0]);
        return EXIT_RUNTIME;
    }
    const int images = inputs.n > 0 && kind == 1;
    const char *input = inputs.n == 1 && !images ? inputs.v[0] : NULL;
    image_prep prep;
    image_prep_init(&prep);
    char why_flags[256];
    if (image_flags(&prep, resize, stretch, scale, mean, std, why_flags, sizeof why_flags)) {
        fprintf(stderr, "polydnn run: %s\n", why_flags);
        return EXIT_USAGE;
    }
    if (!images && (resize || stretch || scale || mean || std)) {
        fprintf(stderr, "polydnn run: --resize, --stretch, --scale, --mean and --std apply to image inputs "
                        "(--input cat.png) only\n");
        return EXIT_USAGE;
    }
    for (int i = 0; images && i < inputs.n; i++) {
        char why[512];
        if (image_probe(inputs.v[i], why, sizeof why)) {
            fprintf(stderr, "polydnn run: --input %s\n", why);
            return EXIT_RUNTIME;
        }
    }
    if (batches && (images || batch || labels_path || profile || json)) {
        fprintf(stderr, "polydnn run: --batches takes neither image inputs, --batch, --labels, --profile nor --json\n");
        return EXIT_USAGE;
    }
    if (images && batch && batch != inputs.n) {
        fprintf(stderr, "polydnn run: --batch %d differs from the %d image file%s given\n", batch, inputs.n,
                inputs.n == 1 ? "" : "s");
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
    labels names = {0};
    if (labels_path && (rc = labels_read(labels_path, &names)))
        return rc;
    npy_array x = {0};
    char err[512];
    if (input && npy_read(input, &x, err, sizeof err) != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn run: --input %s: %s\n", input, err);
        labels_free(&names);
        return EXIT_RUNTIME;
    }
    if (input && batch && x.ndim > 0 && x.shape[0] != batch) {
        fprintf(stderr, "polydnn run: --batch %d differs from --input's batch %" PRId64 "\n", batch, x.shape[0]);
        npy_free(&x);
        labels_free(&names);
        return EXIT_USAGE;
    }
    pdnn_onnx_options oo;
    pdnn_onnx_options_init(&oo);
    oo.batch = images ? inputs.n : input && x.ndim > 0 ? x.shape[0] : batch;
    oo.device = device;
    oo.no_fusion = no_fusion;
    oo.layout = (pdnn_layout)lay;
    if (cli_precision("run", precision, &oo.precision)) {
        npy_free(&x);
        labels_free(&names);
        return EXIT_USAGE;
    }
    pdnn_graph *g = NULL;
    pdnn_onnx_io io;
    double t0 = now_ms();
    if (pdnn_graph_import_onnx(model, NULL, 0, &oo, &g, &io) != PDNN_SUCCESS) {
        npy_free(&x);
        labels_free(&names);
        return cli_fail("importing the model");
    }
    double t_import = now_ms() - t0;
    if (batches) {
        rc = run_batches(g, &io, &cfg, batches, input ? &x : NULL, iters, warmup, seed, output);
        pdnn_graph_destroy(g);
        npy_free(&x);
        return rc;
    }
    cfg.log_device_placement = log;
    cfg.profile = profile;
    pdnn_session *s = NULL;
    pdnn_tensor *feeds[PDNN_ONNX_MAX_IO] = {0};
    pdnn_tensor *fetched[PDNN_ONNX_MAX_IO] = {0};
    float *y = NULL, *ix = NULL; /* ix: the images, input 0 */
    double *times = NULL;        /* each timed run's ms */
    rc = 0;
    if (labels_path) {
        /* A count that differs names the wrong classes (a 1001-class file
         * with a background class against 1000 outputs): refused. */
        pdnn_tensor_desc od;
        pdnn_graph_node_desc(g, io.outputs[0], &od);
        const int64_t classes = od.dims[0] > 0 ? pdnn_tensor_desc_elements(&od) / od.dims[0] : 0;
        if (names.count != classes) {
            fprintf(stderr, "polydnn run: --labels %s has %" PRId64 " line%s; the model's output '%s' has %" PRId64
                    " classes\n", labels_path, names.count, names.count == 1 ? "" : "s",
                    pdnn_graph_node_name(g, io.outputs[0]), classes);
            rc = EXIT_RUNTIME;
            goto out;
        }
    }
    if (images) {
        pdnn_tensor_desc d;
        pdnn_graph_node_desc(g, io.inputs[0], &d);
        if ((rc = read_images(&inputs, &d, io.input_rank[0], &prep, &ix)))
            goto out;
    }
    if (pdnn_session_create(g, &cfg, &s) != PDNN_SUCCESS) {
        rc = cli_fail("creating the session");
        goto out;
    }
    uint64_t state = 0x9e3779b97f4a7c15ull ^ (uint64_t)seed;
    if (io.n_inputs > (inputs.n ? 1 : 0) && !json)
        printf("random inputs in [-1, 1), seed %d\n", seed);
    for (int i = 0; i < io.n_inputs && !rc; i++) {
        pdnn_tensor_desc d;
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
        rc = feed_input(s, io.inputs[i], &d, i > 0 ? NULL : input ? x.data : ix, &state, &feeds[i]);
    }
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
    const top_out top_o = {top, json, labels_path ? &names : NULL, images ? &inputs : NULL};
    if (json) {
        printf("{\"model\": ");
        cli_json_string(stdout, model);
        printf(", \"nodes\": %d, \"import_ms\": %.3f, \"output\": ", pdnn_graph_node_count(g), t_import);
        cli_json_string(stdout, pdnn_graph_node_name(g, io.outputs[0]));
        printf(", \"output_dims\": [%s]", dims_text(yshape, yrank, ", ", ytext, sizeof ytext));
        if (images) {
            printf(", \"inputs\": [");
            for (int i = 0; i < inputs.n; i++) {
                printf(i ? ", " : "");
                cli_json_string(stdout, inputs.v[i]);
            }
            printf("]");
        }
        if (io.n_inputs > (inputs.n ? 1 : 0))
            printf(", \"seed\": %d", seed);
        if ((rc = print_top(y, yd.dims[0], ny / yd.dims[0], &top_o)))
            goto out;
        printf(", \"iters\": %d, \"warmup\": %d, \"mean_ms\": %.6f, \"min_ms\": %.6f, \"median_ms\": %.6f, "
               "\"p90_ms\": %.6f, \"p99_ms\": %.6f, \"profiled\": %s}\n",
               iters, warmup, per_run, times[0], p50, p90, p99, profile ? "true" : "false");
    } else {
        printf("model %s: %d nodes, imported in %.1f ms; output '%s' %s\n", model, pdnn_graph_node_count(g), t_import,
               pdnn_graph_node_name(g, io.outputs[0]), yrank ? dims_text(yshape, yrank, "x", ytext, sizeof ytext)
                                                                : "scalar");
        if ((rc = print_top(y, yd.dims[0], ny / yd.dims[0], &top_o)))
            goto out;
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
    free(ix);
    labels_free(&names);
    return rc;
}
