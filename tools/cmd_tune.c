/* polydnn tune: searches the tunable kernels' parameters for a network's
 * convolutions (or one shape) on one device, per layout and batch, and
 * stores the best in the tuning cache that every later process reads.
 *
 * Each row: (1) the default configuration (tuning off) is checked against
 * the host reference at batch 1 -- the tuner checks every candidate
 * against the default, so this anchors the whole chain; (2) in a context
 * whose tuning mode is SEARCH (FORCE with --force) every algorithm of the
 * library's registry that applies to the shape and is tunable runs once
 * by name, which makes the backend search its configurations and store
 * the best, and then the convolution runs once as asked (AUTO: the
 * library measures the algorithms and stores its choice); (3) default and
 * tuned are timed the same way and the tuned output compared with the
 * default's. Everything goes through the public API. With --emit-defaults
 * the run's winners are printed as a row of the OpenCL backend's device
 * table (backends/opencl/cl_device_table.c) for this device class. */
#include "algo.h"
#include "cli.h"
#include "conv_shape.h"
#include "layers.h"
#include "run.h"
#include "tune_backward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* Default and tuned are timed in alternation, one call of each per round,
 * so that load from other processes hits both alike; each keeps its best.
 * At least MIN_ROUNDS rounds, more (up to MAX_ROUNDS) while a round is
 * shorter than ROUND_BUDGET_S / MIN_ROUNDS, since short calls are the
 * noisiest. */
enum { MIN_ROUNDS = 3, MAX_ROUNDS = 10, MAX_ROWS = 64, MAX_ALGOS = 64, MAX_WINS = 512, ROW_WINS = 16 };
#define ROUND_BUDGET_S 0.3

typedef struct tune_opts {
    cli_ints batches;
    int force, layers, emit, json, backward;
    const char *layout, *device, *algo;
    shape_flags shape;
} tune_opts;

/* Where the time went, to see what dominates a long run. */
typedef struct tune_times {
    double reference, defaults, searches, timing;
} tune_times;

/* What tuning each algorithm by name did over the run. */
typedef struct algo_tally {
    int searched, cached, failed;
} algo_tally;

/* A configuration the run found best (or kept from the cache) for a
 * convolution: tallied per algorithm, y's layout and configuration for
 * --emit-defaults. */
typedef struct tune_win {
    int algo, nchw, count;
    char config[48];
} tune_win;

/* Where the heading, the summary and --emit-defaults go: stdout, or
 * stderr with --json, whose stdout is the rows alone (JSON Lines). */
static FILE *text_out;
static int json_rows;

/* One result row as a JSON object (--json; the Markdown rows are printed
 * where they arise). status is "tuned", "not tunable" or "failed", why
 * says why for the last two; the numbers are for "tuned" rows only. */
static void print_json_row(const char *layer, const char *layout, int batch, const char *status, const char *why,
                           const char *tuned, const char *def, double g_def, double g_tuned, const char *search)
{
    printf("{\"layer\": ");
    cli_json_string(stdout, layer);
    printf(", \"layout\": \"%s\", \"batch\": %d, \"status\": \"%s\"", layout, batch, status);
    const char *names[3] = {"why", "tuned_config", "default_config"}, *vals[3] = {why, tuned, def};
    for (int i = 0; i < 3; i++)
        if (vals[i]) {
            printf(", \"%s\": ", names[i]);
            cli_json_string(stdout, vals[i]);
        }
    if (strcmp(status, "tuned") == 0) {
        const int cached = strcmp(search, "cached") == 0;
        printf(", \"default_gflops\": %.6g, \"tuned_gflops\": %.6g, \"speedup\": %.4f, \"search_s\": %s, "
               "\"cached\": %s",
               g_def, g_tuned, g_tuned / g_def, cached || strcmp(search, "-") == 0 ? "null" : search,
               cached ? "true" : "false");
    }
    printf("}\n");
}

typedef struct tune_run {
    const char *cmd;
    int force;
    pdnn_device *dev_off;  /* the device in the tuning-off context */
    pdnn_device *host;     /* the reference, in the same context */
    pdnn_device *dev_tune; /* the device in the searching context */
    pdnn_conv_algo algo;
    int failures, rows, not_tunable, searched, cached;
    int rounds_min, rounds_max; /* of the timing (see MIN_ROUNDS) */
    double log_speedup_sum;
    int n_speedups;
    tune_times t;
    algo_tally per_algo[MAX_ALGOS]; /* by algorithm id */
    /* The row in progress's winners, kept once its checks pass. */
    tune_win row_wins[ROW_WINS];
    int n_row_wins;
    tune_win wins[MAX_WINS];
    int n_wins;
} tune_run;

/* Notes the configuration of label ("algorithm configuration", as
 * label_config writes it) as algorithm algo's winner in the row; a label
 * without one (nothing tunable ran) is passed over. */
static void row_win(tune_run *r, int algo, pdnn_layout layout, const char *label)
{
    const char *name = pdnn_conv_algo_name((pdnn_conv_algo)algo);
    const size_t len = strlen(name);
    if (strncmp(label, name, len) != 0 || label[len] != ' ' || r->n_row_wins >= ROW_WINS)
        return;
    const char *config = label + len + 1;
    tune_win *w = &r->row_wins[r->n_row_wins++];
    w->algo = algo;
    w->nchw = layout == PDNN_NCHW;
    w->count = 1;
    snprintf(w->config, sizeof w->config, "%s", config);
}

/* Adds the row's winners to the run's tally. */
static void keep_row_wins(tune_run *r)
{
    for (int i = 0; i < r->n_row_wins; i++) {
        const tune_win *w = &r->row_wins[i];
        int j = 0;
        while (j < r->n_wins && !(r->wins[j].algo == w->algo && r->wins[j].nchw == w->nchw &&
                                  strcmp(r->wins[j].config, w->config) == 0))
            j++;
        if (j < r->n_wins)
            r->wins[j].count++;
        else if (r->n_wins < MAX_WINS)
            r->wins[r->n_wins++] = *w;
    }
    r->n_row_wins = 0;
}

/* One distinct convolution of the set: its names and shape at batch 1. */
typedef struct tune_layer {
    char name[160];
    conv_shape cs;
} tune_layer;

/* The algorithm that ran last and its configuration, e.g. "tiled tq=8
 * kb=2", into t->config: AUTO's measured choice may differ from the
 * default's algorithm, so rows name both. */
static void label_config(pdnn_conv2d_tuning *t)
{
    char label[96];
    const int n = snprintf(label, sizeof label, "%s%s%s", pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()),
                           t->config[0] ? " " : "", t->config);
    const size_t len = n < 0 ? 0 : (size_t)n < sizeof t->config ? (size_t)n : sizeof t->config - 1;
    memcpy(t->config, label, len);
    t->config[len] = '\0';
}

/* Runs op once to the end (the warm-up: programs are built, and in a
 * searching context the search runs here); *t says what tuning did. */
static pdnn_status run_first(cli_op *op, pdnn_conv2d_tuning *t)
{
    pdnn_status st = cli_op_time(op, 1, 0, CLI_BEST, NULL);
    if (st == PDNN_SUCCESS) {
        pdnn_conv2d_last_tuning(t);
        label_config(t);
    }
    return st;
}

/* Creates the tensors on dev from the host data and runs once (run_first). */
static pdnn_status open_first(cli_op *op, pdnn_device *dev, const pdnn_conv2d_params *p, const pdnn_tensor_desc *xd,
                              const pdnn_tensor_desc *wd, const pdnn_tensor_desc *yd, const float *x, const float *w,
                              pdnn_conv2d_tuning *t)
{
    pdnn_status st = cli_op_conv(op, dev, p, xd, wd, NULL, yd, x, w, NULL);
    return st == PDNN_SUCCESS ? run_first(op, t) : st;
}

/* One call to the end, kept in *best (ms) when faster. */
static pdnn_status time_once(cli_op *op, double *best)
{
    double t = 0.0;
    pdnn_status st = cli_op_time(op, 0, 1, CLI_BEST, &t);
    if (st == PDNN_SUCCESS && (*best <= 0.0 || t < *best))
        *best = t;
    return st;
}

/* Times a and b in alternating rounds (see MIN_ROUNDS): their best, ms. */
static pdnn_status time_pair(cli_op *a, cli_op *b, double *ms_a, double *ms_b, int *rounds)
{
    *ms_a = *ms_b = 0.0;
    int n = MIN_ROUNDS;
    pdnn_status st = PDNN_SUCCESS;
    for (int r = 0; r < n && st == PDNN_SUCCESS; r++) {
        const double t0 = cli_now();
        if ((st = time_once(a, ms_a)) == PDNN_SUCCESS)
            st = time_once(b, ms_b);
        if (r == 0) {
            const double round = cli_now() - t0;
            const int want = round > 0.0 ? (int)(ROUND_BUDGET_S / round) : MAX_ROUNDS;
            n = want < MIN_ROUNDS ? MIN_ROUNDS : want > MAX_ROUNDS ? MAX_ROUNDS : want;
        }
    }
    *rounds = n;
    return st;
}

static double max_abs_error(const float *a, const float *b, int64_t n)
{
    double ma, mr;
    cli_errors(a, b, n, &ma, &mr);
    return ma;
}

/* The descriptors of cs in layout, as polydnn bench runs it. */
static int describe(const tune_run *r, const char *name, pdnn_layout layout, const conv_shape *cs,
                    pdnn_conv2d_params *p, pdnn_tensor_desc *xd, pdnn_tensor_desc *wd, pdnn_tensor_desc *yd)
{
    *p = cs->p;
    p->algorithm = r->algo;
    conv_shape_descs(cs, layout, xd, wd);
    *yd = (pdnn_tensor_desc){PDNN_FLOAT32, layout, {0, 0, 0, 0}, 0};
    if (pdnn_conv2d_output_dims(xd, wd, p, yd->dims) != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn %s: %s: %s\n", r->cmd, name, pdnn_last_error());
        return EXIT_RUNTIME;
    }
    return 0;
}

/* The inputs lie in [-1, 1): float32 sums of red products of two such
 * values agree with the reference's to well within this. */
static double tolerance(const conv_shape *cs) { return 1e-4 + 1e-5 * (double)(cs->c / cs->p.groups * cs->r * cs->s); }

/* What check_reference found. A run that failed (out of memory, say) is
 * not a wrong answer: it must not be reported as one. */
enum { REF_AGREES = 0, REF_DIFFERS = 1, REF_FAILED = -1 };

/* Checks the default configuration at batch 1 against the host. Returns
 * REF_AGREES, REF_DIFFERS (printed loudly) or REF_FAILED (the default or
 * the reference did not run; the library's error printed). */
static int check_reference(tune_run *r, const char *name, pdnn_layout layout, const conv_shape *cs1,
                           const float *x, const float *w)
{
    const double t0 = cli_now();
    pdnn_conv2d_params p;
    pdnn_tensor_desc xd, wd, yd;
    int rc = describe(r, name, layout, cs1, &p, &xd, &wd, &yd);
    if (rc)
        return REF_FAILED;
    pdnn_conv2d_params ph = p;
    ph.algorithm = PDNN_CONV_ALGO_AUTO; /* the host's own: its direct reference */
    cli_op dd, dh;
    memset(&dh, 0, sizeof dh);
    pdnn_conv2d_tuning t;
    float *got = NULL, *want = NULL;
    pdnn_status st = open_first(&dd, r->dev_off, &p, &xd, &wd, &yd, x, w, &t);
    if (st == PDNN_SUCCESS)
        st = cli_op_read(&dd, &got);
    cli_op_release(&dd);
    if (st == PDNN_SUCCESS && (st = open_first(&dh, r->host, &ph, &xd, &wd, &yd, x, w, &t)) == PDNN_SUCCESS)
        st = cli_op_read(&dh, &want);
    cli_op_release(&dh);
    if (st != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn %s: %s %s: the reference check failed to run (%s): %s\n", r->cmd, name,
                pdnn_layout_name(layout), pdnn_status_string(st), cli_last_error());
        rc = REF_FAILED;
    } else {
        const double err = max_abs_error(got, want, pdnn_tensor_desc_elements(&yd)), tol = tolerance(cs1);
        if (!(err <= tol)) {
            fprintf(stderr,
                    "polydnn %s: %s %s: FAILED: the default configuration disagrees with the host reference: "
                    "max abs error %.3g > %.3g at batch 1; not tuned\n",
                    r->cmd, name, pdnn_layout_name(layout), err, tol);
            rc = REF_DIFFERS;
        }
    }
    free(got);
    free(want);
    r->t.reference += cli_now() - t0;
    return rc;
}

/* Tunes by name, one after the other, every algorithm of the library's
 * registry that applies to dt's convolution and is tunable: each run
 * searches its configurations and stores the best (in SEARCH mode only
 * where the cache has none), so that AUTO's measurement that follows
 * compares tuned algorithms, and an algorithm the cache has not seen is
 * tuned even where AUTO's choice is already stored. Adds the searches to
 * *searched and *seconds; leaves dt's algorithm as it was. */
static void tune_by_name(tune_run *r, cli_op *dt, const pdnn_tensor_desc *xd, const pdnn_tensor_desc *wd,
                         pdnn_layout layout, const char *what, int *searched, double *seconds)
{
    const pdnn_conv_algo asked = dt->conv.algorithm;
    const int count = pdnn_conv_algo_count();
    for (int id = 1; id < count && id < MAX_ALGOS; id++) {
        pdnn_conv_algo_info info;
        if (!cli_algo_exists(id) ||
            pdnn_conv2d_query_algorithm(r->dev_tune, &dt->conv, xd, wd, layout, (pdnn_conv_algo)id, &info) !=
                PDNN_SUCCESS ||
            !info.applies || !info.tunable)
            continue;
        dt->conv.algorithm = (pdnn_conv_algo)id;
        pdnn_conv2d_tuning t;
        if (run_first(dt, &t) != PDNN_SUCCESS) {
            /* AUTO passes over it too; the row goes on without it. */
            fprintf(stderr, "polydnn %s: note: %s: %s was not tuned: %s\n", r->cmd, what, info.name,
                    pdnn_last_error());
            r->per_algo[id].failed++;
            continue;
        }
        row_win(r, id, layout, t.config);
        if (t.searched) {
            r->per_algo[id].searched++;
            (*searched)++;
            *seconds += t.search_seconds;
        } else if (t.cached) {
            r->per_algo[id].cached++;
        }
    }
    dt->conv.algorithm = asked;
}

static void fmt_gflops(char *buf, size_t len, double v)
{
    snprintf(buf, len, v < 1 ? "%.3g" : "%.1f", v);
}

/* One row: layer x layout x batch. ref: 0 unchecked, 1 agreed, -1 failed
 * (updated here). Returns 0 or an exit code for a failure that stops the
 * run; a layer that fails its checks is counted in r->failures. */
static int tune_row(tune_run *r, const tune_layer *L, pdnn_layout layout, int batch, int *ref, uint64_t seed)
{
    const char *lname = pdnn_layout_name(layout);
    conv_shape cs = L->cs;
    cs.n = batch;
    pdnn_conv2d_params p;
    pdnn_tensor_desc xd, wd, yd;
    int rc = describe(r, L->name, layout, &cs, &p, &xd, &wd, &yd);
    if (rc)
        return rc;
    const int64_t xn = pdnn_tensor_desc_elements(&xd), wn = pdnn_tensor_desc_elements(&wd);
    const int64_t yn = pdnn_tensor_desc_elements(&yd);
    const double gflop = 2.0 * (double)yn * (double)(wd.dims[1] * wd.dims[2] * wd.dims[3]) / 1e9;
    /* Batch 1's data is the first image of every batch, so the reference
     * check at batch 1 sees the same numbers. */
    float *w = cli_random(wn, &seed), *x = cli_random(xn, &seed);
    float *y_def = NULL, *y_tuned = NULL;
    cli_op dc, dt; /* the default's and the tuned's tensors */
    memset(&dc, 0, sizeof dc);
    memset(&dt, 0, sizeof dt);
    if (!x || !w) {
        rc = cli_host_oom(r->cmd, !x ? "the input x" : "the filter w", (uint64_t)(!x ? xn : wn) * sizeof(float));
        goto out;
    }
    r->rows++;
    r->n_row_wins = 0;

    /* The default configuration: is anything tunable here at all? */
    double t0 = cli_now();
    pdnn_conv2d_tuning t_def, t_tuned;
    pdnn_status st = open_first(&dc, r->dev_off, &p, &xd, &wd, &yd, x, w, &t_def);
    r->t.defaults += cli_now() - t0;
    /* Whether anything is tunable shows in the searching run (AUTO may
     * measure its choice even where the default's kernel has nothing to
     * tune); a device that cannot run the shape is reported here. */
    if (st == PDNN_ERR_UNSUPPORTED) {
        char why[512]; /* whole: the algorithm's own reason comes last */
        snprintf(why, sizeof why, "%s", pdnn_last_error());
        if (json_rows)
            print_json_row(L->name, lname, batch, "not tunable", why, NULL, NULL, 0, 0, NULL);
        else
            printf("| %s | %s | %d | not tunable: %s | - | - | - | - | - |\n", L->name, lname, batch, why);
        r->not_tunable++;
        goto out;
    }
    if (st != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn %s: %s %s batch %d, default configuration: %s\n", r->cmd, L->name, lname, batch,
                pdnn_last_error());
        rc = EXIT_RUNTIME;
        goto out;
    }

    if (*ref == 0) {
        conv_shape cs1 = L->cs;
        cs1.n = 1;
        int c = check_reference(r, L->name, layout, &cs1, x, w);
        if (c == REF_FAILED) {
            rc = EXIT_RUNTIME;
            goto out;
        }
        *ref = c == REF_DIFFERS ? -1 : 1;
    }
    if (*ref < 0) {
        if (json_rows)
            print_json_row(L->name, lname, batch, "failed", "the default differs from the host reference", NULL,
                           t_def.config, 0, 0, NULL);
        else
            printf("| %s | %s | %d | FAILED: %s differs from the host reference | %s | - | - | - | - |\n", L->name,
                   lname, batch, t_def.config, t_def.config);
        r->failures++;
        goto out;
    }

    /* The search, in the searching context: under AUTO every tunable
     * algorithm by name first, then the call as asked. --force makes
     * AUTO's measurement search every algorithm that applies again, so
     * searching them by name before would only double the work. */
    char what[256];
    snprintf(what, sizeof what, "%.160s %.16s batch %d", L->name, lname, batch);
    int by_name = 0;
    double by_name_s = 0.0;
    t0 = cli_now();
    if ((st = cli_op_conv(&dt, r->dev_tune, &p, &xd, &wd, NULL, &yd, x, w, NULL)) == PDNN_SUCCESS) {
        if (r->algo == PDNN_CONV_ALGO_AUTO && !r->force)
            tune_by_name(r, &dt, &xd, &wd, layout, what, &by_name, &by_name_s);
        st = run_first(&dt, &t_tuned);
    }
    r->t.searches += cli_now() - t0;
    if (st == PDNN_SUCCESS && by_name && t_tuned.algo_measured && !t_tuned.algo_searched)
        fprintf(stderr, "polydnn %s: note: %s: AUTO's stored choice was measured before %d algorithm(s) were tuned "
                "now; --force measures it again\n", r->cmd, what, by_name);
    double ms_def = 0.0, ms_tuned = 0.0;
    int rounds = 0;
    t0 = cli_now();
    if (st == PDNN_SUCCESS && (st = time_pair(&dc, &dt, &ms_def, &ms_tuned, &rounds)) == PDNN_SUCCESS &&
        (st = cli_op_read(&dc, &y_def)) == PDNN_SUCCESS)
        st = cli_op_read(&dt, &y_tuned);
    r->t.timing += cli_now() - t0;
    if (st != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn %s: %s %s batch %d, tuning: %s\n", r->cmd, L->name, lname, batch, cli_last_error());
        rc = EXIT_RUNTIME;
        goto out;
    }
    r->rounds_min = r->rounds_min == 0 || rounds < r->rounds_min ? rounds : r->rounds_min;
    r->rounds_max = rounds > r->rounds_max ? rounds : r->rounds_max;
    if (!t_tuned.tunable) {
        char why[96];
        snprintf(why, sizeof why, "%s has no tunable parameters", pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()));
        if (json_rows)
            print_json_row(L->name, lname, batch, "not tunable", why, NULL, NULL, 0, 0, NULL);
        else
            printf("| %s | %s | %d | not tunable: %s |\n", L->name, lname, batch, why);
        r->not_tunable++;
        goto out;
    }
    const double err = max_abs_error(y_tuned, y_def, yn), tol = tolerance(&cs);
    if (!(err <= tol)) {
        fprintf(stderr,
                "polydnn %s: %s %s batch %d: FAILED: the tuned configuration %s disagrees with the default %s: "
                "max abs error %.3g > %.3g\n",
                r->cmd, L->name, lname, batch, t_tuned.config, t_def.config, err, tol);
        if (json_rows)
            print_json_row(L->name, lname, batch, "failed", "the tuned configuration differs from the default",
                           t_tuned.config, t_def.config, 0, 0, NULL);
        else
            printf("| %s | %s | %d | FAILED: %s differs from the default | %s | - | - | - | - |\n", L->name, lname,
                   batch, t_tuned.config, t_def.config);
        r->failures++;
        goto out;
    }
    const double g_def = gflop / (ms_def * 1e-3), g_tuned = gflop / (ms_tuned * 1e-3);
    char gd[32], gt[32], search[32] = "-";
    fmt_gflops(gd, sizeof gd, g_def);
    fmt_gflops(gt, sizeof gt, g_tuned);
    if (t_tuned.searched || by_name) {
        snprintf(search, sizeof search, "%.2f", t_tuned.search_seconds + by_name_s);
        r->searched++;
    } else if (t_tuned.cached) {
        snprintf(search, sizeof search, "cached");
        r->cached++;
    }
    r->log_speedup_sum += log(g_tuned / g_def);
    r->n_speedups++;
    /* Tuned by name, each algorithm's winner is noted; else (--force,
     * --algo) the one that ran. */
    if (r->n_row_wins == 0)
        row_win(r, pdnn_conv2d_last_algorithm(), layout, t_tuned.config);
    keep_row_wins(r);
    if (json_rows)
        print_json_row(L->name, lname, batch, "tuned", NULL, t_tuned.config, t_def.config, g_def, g_tuned, search);
    else
        printf("| %s | %s | %d | %s | %s | %s | %s | %.2f | %s |\n", L->name, lname, batch, t_tuned.config,
               t_def.config, gd, gt, g_tuned / g_def, search);
out:
    fflush(stdout);
    cli_op_release(&dc);
    cli_op_release(&dt);
    free(x);
    free(w);
    free(y_def);
    free(y_tuned);
    return rc;
}

/* The set's distinct convolutions (the first `limit`; 0: all), a shape
 * that repeats listed once under all its names. */
static int distinct_layers(const layer_set *set, int limit, tune_layer *out, int max)
{
    int n = 0;
    const int count = limit > 0 && limit < set->n_convs ? limit : set->n_convs;
    for (int i = 0; i < count; i++) {
        conv_shape cs;
        conv_from_layer(&set->convs[i], 1, &cs);
        int j = 0;
        while (j < n && !conv_shape_equal(&out[j].cs, &cs))
            j++;
        if (j < n) {
            size_t len = strlen(out[j].name);
            snprintf(out[j].name + len, sizeof out[j].name - len, ", %s", set->convs[i].name);
        } else if (n < max) {
            out[n].cs = cs;
            snprintf(out[n].name, sizeof out[n].name, "%s", set->convs[i].name);
            n++;
        }
    }
    return n;
}

/* Entries in the cache file (lines after the header); -1 if unreadable. */
static int count_entries(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) /* a FIFO would block fopen */
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int lines = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        lines += ch == '\n';
    fclose(f);
    return lines > 0 ? lines - 1 : 0;
}

/* What tune_by_name did over the run, after the summary line. */
static void print_by_name(const tune_run *r)
{
    if (r->algo != PDNN_CONV_ALGO_AUTO)
        return;
    if (r->force) {
        fprintf(text_out, "\nBy algorithm: with --force, AUTO's measurement searched every algorithm that applies.");
        return;
    }
    int any = 0;
    for (int id = 1; id < MAX_ALGOS; id++) {
        const algo_tally *t = &r->per_algo[id];
        if (!t->searched && !t->cached && !t->failed)
            continue;
        fprintf(text_out, "%s %s %d searched, %d cached", any ? ";" : "\nBy algorithm (each tunable one that applies, tuned by name):",
               pdnn_conv_algo_name((pdnn_conv_algo)id), t->searched, t->cached);
        if (t->failed)
            fprintf(text_out, ", %d failed to run", t->failed);
        any = 1;
    }
    fprintf(text_out, any ? "." : "\nBy algorithm: no tunable algorithm applies to these convolutions on this device.");
}

/* s as a C string literal's contents. */
static void print_c_string(const char *s)
{
    fputc('"', text_out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', text_out);
        if ((unsigned char)*s >= ' ')
            fputc(*s, text_out);
    }
    fputc('"', text_out);
}

/* The most frequent winner of algorithm algo over the rows of one layout
 * (nchw), the first found on a tie (its count: the rows it won); NULL
 * where none. *of: that layout's rows with a winner of algo. */
static const tune_win *most_frequent(const tune_run *r, int algo, int nchw, int *of)
{
    const tune_win *best = NULL;
    *of = 0;
    for (int i = 0; i < r->n_wins; i++) {
        const tune_win *w = &r->wins[i];
        if (w->algo != algo || w->nchw != nchw)
            continue;
        *of += w->count;
        if (!best || w->count > best->count)
            best = w;
    }
    return best;
}

/* --emit-defaults: the device table row (backends/opencl/cl_device_table.c)
 * that the run's winners give this device's class, in the table's C
 * syntax. A kernel's default is the configuration that won the most of
 * its NHWC rows (of its NCHW rows where only those ran), and its "/nchw"
 * variant (y channel-major) the NCHW rows' where that differs. The
 * kernel is the tuning cache's name, conv2d_ and the algorithm's. The
 * class: the vendor, and the type from it (a CPUID vendor ID such as
 * GenuineIntel or AuthenticAMD is a CPU's; anything else is taken for a
 * GPU: the public API does not say), which the reviewer checks. */
static void emit_defaults(const tune_run *r, const pdnn_device_info *info)
{
    const int cpu = strcmp(info->vendor, "GenuineIntel") == 0 || strcmp(info->vendor, "AuthenticAMD") == 0;
    fprintf(text_out, "\nDevice table row for this device class: the winning configuration per kernel, by y's layout "
           "(review it, then paste it above the generic rows of backends/opencl/cl_device_table.c):\n\n```c\n");
    fprintf(text_out, "    {\n        .name = ");
    char name[400];
    snprintf(name, sizeof name, "%s %s", info->vendor, info->device_name);
    print_c_string(name);
    fprintf(text_out, ",\n        .vendor = ");
    print_c_string(info->vendor);
    fprintf(text_out, ",\n        .type = %s, /* CL_DEVICE_TYPE_CPU or _GPU as clinfo says (taken from the vendor) */\n",
           cpu ? "CL_DEVICE_TYPE_CPU" : "CL_DEVICE_TYPE_GPU");
    if (cpu)
        fprintf(text_out, "        /* .min_vec_float = N: where this vendor's CPUs differ by vector width */\n");
    int any = 0;
    for (int algo = 1; algo < MAX_ALGOS; algo++) {
        int n_nhwc, n_nchw;
        const tune_win *nhwc = most_frequent(r, algo, 0, &n_nhwc), *nchw = most_frequent(r, algo, 1, &n_nchw);
        const tune_win *plain = nhwc ? nhwc : nchw;
        if (!plain)
            continue;
        const char *aname = pdnn_conv_algo_name((pdnn_conv_algo)algo);
        if (!any)
            fprintf(text_out, "        .configs =\n            {\n");
        any = 1;
        fprintf(text_out, "                {\"conv2d_%s\", \"%s\"}, /* %d of %d %s rows */\n", aname, plain->config, plain->count,
               nhwc ? n_nhwc : n_nchw, nhwc ? "NHWC" : "NCHW");
        if (nhwc && nchw && strcmp(nchw->config, nhwc->config) != 0)
            fprintf(text_out, "                {\"conv2d_%s/nchw\", \"%s\"}, /* %d of %d NCHW rows */\n", aname, nchw->config,
                   nchw->count, n_nchw);
    }
    if (any)
        fprintf(text_out, "            },\n");
    else
        fprintf(text_out, "        /* no tunable kernel ran: the generic row's defaults stay */\n");
    fprintf(text_out, "    },\n```\n");
}

/* --algo help: what each algorithm does with every row's convolution. */
static int algo_help(const char *device, const tune_layer *layers, int nlayers, const pdnn_layout *layouts,
                     int nlayouts, int batch)
{
    pdnn_context *ctx = NULL;
    pdnn_device *dev = NULL;
    int rc = cli_open_device(device, &ctx, &dev);
    for (int i = 0; rc == 0 && i < nlayers; i++)
        for (int l = 0; rc == 0 && l < nlayouts; l++) {
            conv_shape cs = layers[i].cs;
            cs.n = batch;
            rc = conv_shape_algo_help(dev, layers[i].name, &cs, layouts[l]);
        }
    pdnn_context_destroy(ctx);
    return rc;
}

/* Opens a context with the given tuning mode and finds the device in it.
 * 0, or an exit code after printing why. */
static int open_ctx(const char *cmd, pdnn_tuning_mode mode, const char *device, pdnn_context **ctx,
                    pdnn_device **dev)
{
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = 1; /* two contexts share the device: take only what is used */
    o.tuning = mode;
    *ctx = NULL;
    if (pdnn_context_create(&o, ctx) != PDNN_SUCCESS)
        return cli_fail("creating a context");
    if ((device ? pdnn_device_find(*ctx, device, dev) : pdnn_device_default(*ctx, dev)) != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn %s: %s (see polydnn devices)\n", cmd, pdnn_last_error());
        return EXIT_USAGE;
    }
    return 0;
}

int cmd_tune(int argc, char **argv)
{
    const char *what = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "tune%s%s", what ? " " : "", what ? what : "");
    tune_opts o;
    memset(&o, 0, sizeof o);
    o.algo = "auto";
    o.shape = (shape_flags)SHAPE_FLAGS_UNSET;
    char algo_text[640];
    enum { N_OWN = 10 };
    cli_opt opts[N_OWN + N_SHAPE_OPTS] = {
        {'d', "device", OPT_STR, &o.device, 0, "device name, e.g. /gpu:0 (default: first GPU)"},
        {'n', "batch", OPT_INTS, &o.batches, 1, "batch sizes, repeatable or a list: --batch 1,8 (default 1)"},
        {0, "layout", OPT_STR, &o.layout, 0, "nchw|nhwc|both (default both)"},
        {0, "force", OPT_FLAG, &o.force, 0, "search again where the cache has a result, and replace it"},
        {'a', "algo", OPT_STR, &o.algo, 0,
         cli_algo_flag_help(algo_text, sizeof algo_text,
                            "the algorithm to tune (default auto: every tunable one that applies, then AUTO's "
                            "choice among them)")},
        {0, "layers", OPT_INT, &o.layers, 1, "only the first N convolutions of the set"},
        {0, "emit-defaults", OPT_FLAG, &o.emit, 0,
         "then print the OpenCL device table row (backends/opencl/cl_device_table.c) the run's winners give "
         "this device class"},
        {0, "json", OPT_FLAG, &o.json, 0,
         "print each row as a JSON object, one per line, on stdout; the heading and summary go to stderr"},
        {0, "backward", OPT_FLAG, &o.backward, 0,
         "then tune each row's backward data and filter (the forward kernels they run inside and AUTO's "
         "choice) and time them against the defaults"},
        {0, NULL, OPT_HEADING, NULL, 0, "shape flags (polydnn tune conv only):"},
    };
    shape_opts(&o.shape, opts + N_OWN);
    int rc = cli_parse(cmd, what ? argc - 1 : argc, what ? argv + 1 : argv, opts, (int)(sizeof opts / sizeof opts[0]),
                       "  polydnn tune resnet50|vgg16|mobilenet [flags]\n"
                       "                                       ResNet-50 v1.5's, VGG-16's or MobileNet v1's distinct\n"
                       "                                       convolutions\n"
                       "  polydnn tune conv [flags]            one convolution, from polydnn conv's shape flags\n"
                       "For each layer, layout and batch: the default configuration is checked against the host\n"
                       "reference (/cpu:0, at batch 1), then every configuration of each tunable algorithm that\n"
                       "applies is checked against it and timed, the fastest stored in the tuning cache (see\n"
                       "docs/tuning.md), and AUTO's choice among the algorithms measured and stored; ops then use both. Prints a Markdown table: default and tuned GFLOP/s (warm-up, then timed in\n"
                       "alternation, best of at least 3), the speedup and the search's seconds; \"cached\" where a\n"
                       "result existed (--force: search anyway).");
    if (rc)
        return rc < 0 ? 0 : rc;
    json_rows = o.json;
    text_out = o.json ? stderr : stdout;
    const layer_set *set = NULL;
    if (!what) {
        fprintf(stderr, "polydnn tune: name a layer set (%s) or conv for one shape (see polydnn tune --help)\n",
                layer_set_names());
        return EXIT_USAGE;
    }
    if (strcmp(what, "conv") != 0 && !(set = layer_set_find(what))) {
        fprintf(stderr, "polydnn tune: unknown layer set '%s'; known: %s, or conv for one shape (see polydnn tune --help)\n",
                what, layer_set_names());
        return EXIT_USAGE;
    }
    if (shape_flags_given(&o.shape) && set) {
        fprintf(stderr, "polydnn %s: the shape flags (-c -H -W -k -y -x -p -q -u -v -l -j -g --padding) apply to "
                "polydnn tune conv only\n", cmd);
        return EXIT_USAGE;
    }
    if (o.layers > 0 && !set) {
        fprintf(stderr, "polydnn %s: --layers applies to a layer set (%s)\n", cmd, layer_set_names());
        return EXIT_USAGE;
    }
    pdnn_layout layouts[2] = {PDNN_NCHW, PDNN_NHWC};
    int nlayouts = 2;
    if (o.layout && strcasecmp(o.layout, "both") != 0) {
        int l = pdnn_layout_parse(o.layout);
        if (l != PDNN_NCHW && l != PDNN_NHWC) {
            fprintf(stderr, "polydnn %s: --layout must be nchw, nhwc or both, got '%s'\n", cmd, o.layout);
            return EXIT_USAGE;
        }
        layouts[0] = (pdnn_layout)l;
        nlayouts = 1;
    }
    const int algo = cli_algo_parse(cmd, o.algo);
    if (algo == -1)
        return EXIT_USAGE;
    if (o.batches.n == 0)
        o.batches.v[o.batches.n++] = 1;
    static tune_layer layers[MAX_ROWS];
    int nlayers = 1;
    if (set) {
        nlayers = distinct_layers(set, o.layers, layers, MAX_ROWS);
    } else {
        if ((rc = conv_from_flags(cmd, &o.shape, 1, &layers[0].cs)))
            return rc;
        conv_shape_name(layers[0].name, sizeof layers[0].name, &layers[0].cs);
    }
    if (algo == CLI_ALGO_HELP)
        return algo_help(o.device, layers, nlayers, layouts, nlayouts, o.batches.v[0]);

    /* This command sets the tuning mode of its two contexts itself. */
    const char *env = getenv("POLYDNN_TUNING");
    if (env) {
        fprintf(stderr, "polydnn %s: note: ignoring POLYDNN_TUNING=%s (use --force to search again)\n", cmd, env);
        unsetenv("POLYDNN_TUNING");
    }
    const double start = cli_now();
    tune_run r;
    memset(&r, 0, sizeof r);
    r.cmd = cmd;
    r.force = o.force;
    r.algo = (pdnn_conv_algo)algo;
    pdnn_context *ctx_off = NULL, *ctx_tune = NULL;
    if ((rc = open_ctx(cmd, PDNN_TUNING_OFF, o.device, &ctx_off, &r.dev_off)) ||
        (rc = open_ctx(cmd, o.force ? PDNN_TUNING_FORCE : PDNN_TUNING_SEARCH, o.device, &ctx_tune, &r.dev_tune)))
        goto out;
    if (pdnn_device_find(ctx_off, "/cpu:0", &r.host) != PDNN_SUCCESS) {
        rc = cli_fail("finding the host reference device");
        goto out;
    }
    pdnn_device_info info;
    pdnn_device_get_info(r.dev_off, &info);
    if (o.emit && strcmp(info.backend, "opencl") != 0) {
        fprintf(stderr, "polydnn %s: --emit-defaults: the device table is the OpenCL backend's; %s is a %s device\n",
                cmd, info.name, info.backend);
        rc = EXIT_USAGE;
        goto out;
    }
    /* --json: stdout is the rows alone; the heading (with the command
     * line, which cli_print_command writes to stdout) is left out. */
    if (!json_rows) {
        char date[64];
        cli_utc_date(date, sizeof date);
        fprintf(text_out, "## polydnn %s: %s (%s, %s, %s, driver %s), %s, ", cmd, info.name, info.backend, info.vendor,
               info.device_name, info.driver_version, date);
        cli_print_command(argc, argv);
        fprintf(text_out, "\n\nMode: %s. Each row: the default configuration is checked against the host reference (/cpu:0) at "
               "batch 1; the search checks every configuration against the default before timing it (warm-up, then "
               "rounds of one run each, best of at least 3) and stores the fastest; the tuned output is checked against "
               "the default's. GFLOP/s: after a warm-up, default and tuned are timed in alternation, best of %d to %d "
               "calls each; search s: the search's wall time, \"cached\" where the cache already had a result.\n\n",
               o.force ? "force (cached results are searched again and replaced)" : "search (cached results are kept)",
               MIN_ROUNDS, MAX_ROUNDS);
        fprintf(text_out, "| layer | layout | batch | tuned configuration | default configuration | default GFLOP/s | tuned GFLOP/s "
               "| speedup | search s |\n| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: |\n");
    }
    fflush(stdout);
    /* Progress on stderr (stdout stays the table): each row as it starts,
     * with the time so far and, from the second row, an ETA at the mean
     * time per row (rows differ; it is a guide). */
    const int total_rows = nlayers * nlayouts * o.batches.n;
    int row = 0;
    const double t_rows = cli_now();
    for (int i = 0; rc == 0 && i < nlayers; i++)
        for (int l = 0; rc == 0 && l < nlayouts; l++) {
            int ref = 0;
            for (int b = 0; rc == 0 && b < o.batches.n; b++) {
                const double spent = cli_now() - t_rows;
                fprintf(stderr, "polydnn %s: [%d/%d] %s %s batch %d (%.0f s so far", cmd, row + 1, total_rows,
                        layers[i].name, layouts[l] == PDNN_NHWC ? "NHWC" : "NCHW", o.batches.v[b], spent);
                if (row > 0)
                    fprintf(stderr, ", ETA %.0f s", spent / row * (total_rows - row));
                fprintf(stderr, ")\n");
                row++;
                rc = tune_row(&r, &layers[i], layouts[l], o.batches.v[b], &ref, 1000u + (uint64_t)i);
            }
        }
    if (rc)
        goto out;
    if (o.backward) {
        tune_backward_heading(text_out);
        for (int i = 0; rc == 0 && i < nlayers; i++)
            for (int l = 0; rc == 0 && l < nlayouts; l++)
                for (int b = 0; rc == 0 && b < o.batches.n; b++)
                    rc = tune_backward_row(r.dev_off, r.dev_tune, layers[i].name, &layers[i].cs, layouts[l],
                                           o.batches.v[b], text_out);
        if (rc)
            goto out;
    }

    const int tuned = r.n_speedups;
    fprintf(text_out, "\nTuned %d of %d row(s): %d searched, %d from the cache; %d not tunable; %d failed.", tuned, r.rows,
           r.searched, r.cached, r.not_tunable, r.failures);
    if (tuned)
        fprintf(text_out, " Geometric mean speedup over the default: %.2f.", exp(r.log_speedup_sum / tuned));
    print_by_name(&r);
    fprintf(text_out, "\nTotal wall time: %.1f s (reference checks %.1f s, first calls with the default %.1f s, searches "
           "%.1f s, timing default against tuned %.1f s",
           cli_now() - start, r.t.reference, r.t.defaults, r.t.searches, r.t.timing);
    if (r.rounds_max > 0)
        fprintf(text_out, ", in %d to %d rounds", r.rounds_min, r.rounds_max);
    fprintf(text_out, ").\n");
    /* A store whose write failed kept its result in memory only: this
     * run's purpose was the file, so say so and fail. */
    size_t unsaved = 0;
    if (pdnn_tuning_cache_flush(&unsaved) != PDNN_SUCCESS) {
        fprintf(stderr, "polydnn %s: warning: %s\n", cmd, pdnn_last_error());
        rc = EXIT_RUNTIME;
    }
    char path[4096];
    if (unsaved) {
        fprintf(text_out, "Tuning cache: %zu result%s could not be written (see the warning); they were kept in memory "
               "only.\n",
               unsaved, unsaved == 1 ? "" : "s");
    } else if (pdnn_tuning_cache_file(path, sizeof path) == PDNN_SUCCESS) {
        int n = count_entries(path);
        /* A searched shape stores AUTO's algorithm choice and the chosen
         * kernel's parameters where it has any, so rows and entries differ. */
        fprintf(text_out, "Tuning cache: %s (%d shape%s searched by this run; the file holds %d entr%s).\n", path, r.searched,
               r.searched == 1 ? "" : "s", n < 0 ? 0 : n, n == 1 ? "y" : "ies");
    } else {
        fprintf(text_out, "Tuning cache: none (%s); results were kept in memory only.\n", pdnn_last_error());
    }
    if (o.emit)
        emit_defaults(&r, &info);
    if (r.failures) {
        fprintf(stderr, "polydnn %s: %d row(s) FAILED their checks (see above)\n", cmd, r.failures);
        rc = EXIT_RUNTIME;
    }
out:
    pdnn_context_destroy(ctx_tune);
    pdnn_context_destroy(ctx_off);
    return rc;
}
