/* polydnn train --model model.onnx: the user's network, imported trainable
 * (pdnn_onnx_options.trainable, pdnn_graph_add_training), trained on IDX or
 * .npz data fitted to its input, with a validation split, learning-rate
 * schedules, early stopping, a CSV / JSON-lines log, an SVG plot of the
 * curves, checkpoints that resume exactly, and the trained model exported
 * back to ONNX (pdnn_session_export_onnx).
 *
 * Resuming: as Deep MNIST's, the position is global_step alone: the data
 * order of epoch e is drawn from (seed, e), the learning rate is a function
 * of global_step, and the early-stopping state rides in train_state. */
#include "config.h"
#include "cli.h"
#include "core/fileio.h" /* libc only, compiled into the tool */
#include "idx.h"
#include "image.h"
#include "image_folder.h"
#include "npz.h"
#include "profile.h"
#include "progress.h"
#include "run.h"
#include "precision.h"
#include "train_onnx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --distributed mpi: ranks other than 0 print nothing but errors. */
static int say = 1;

/* A data set fitted to the model's input: n images of c x h x w. */
typedef struct dataset {
    int64_t n;
    int c, h, w;
    float *x;   /* n x c x h x w */
    int32_t *y; /* n labels */
} dataset;

/* The log's rows, kept to rewrite the file whole (fileio's temp + rename)
 * and to draw the plot. */
typedef struct row {
    int64_t step;
    double epoch, loss, acc, val_acc, lr, ips; /* val_acc < 0: none */
} row;

typedef struct tlog {
    row *rows;
    int n, cap;
    int json;
} tlog;

static void dataset_free(dataset *d)
{
    free(d->x);
    free(d->y);
    memset(d, 0, sizeof *d);
}

/* src (n images of sc x sh x sw) into d's shape: each channel of d reads
 * channel min(k, sc - 1) (1 -> 3 tiles the gray image); "pad" centres the
 * image on zeros (or crops it), "resize" samples it nearest-neighbour. */
static int fit_images(const float *src, int64_t n, int sc, int sh, int sw, const int32_t *labels, const char *fit,
                      dataset *d)
{
    const int resize = fit && strcmp(fit, "resize") == 0;
    const size_t per = (size_t)d->c * (size_t)d->h * (size_t)d->w;
    d->n = n;
    d->x = calloc((size_t)n * per, sizeof *d->x);
    d->y = malloc((size_t)n * sizeof *d->y);
    if (!d->x || !d->y)
        return cli_host_oom("train", "the fitted images", (uint64_t)n * per * sizeof *d->x);
    const int oy = (d->h - sh) / 2, ox = (d->w - sw) / 2;
    for (int64_t i = 0; i < n; i++) {
        d->y[i] = labels[i];
        for (int k = 0; k < d->c; k++) {
            const float *s = src + ((size_t)i * (size_t)sc + (size_t)(k < sc ? k : sc - 1)) * (size_t)sh * (size_t)sw;
            float *t = d->x + (size_t)i * per + (size_t)k * (size_t)d->h * (size_t)d->w;
            for (int r = 0; r < d->h; r++)
                for (int q = 0; q < d->w; q++) {
                    int sr = resize ? (int)((int64_t)r * sh / d->h) : r - oy;
                    int sq = resize ? (int)((int64_t)q * sw / d->w) : q - ox;
                    if (sr >= 0 && sr < sh && sq >= 0 && sq < sw)
                        t[r * d->w + q] = s[sr * sw + sq];
                }
        }
    }
    return 0;
}

static int load_idx(const train_onnx_opts *o, const char *split, int classes, dataset *d)
{
    char err[512];
    idx_dataset raw = {0};
    if (idx_load(o->data, split, classes, 0, 0, PDNN_NCHW, &raw, err, sizeof err)) {
        fprintf(stderr, "polydnn train: %s\n", err);
        return EXIT_RUNTIME;
    }
    int rc = fit_images(raw.images.data, raw.images.count, 1, raw.images.rows, raw.images.cols, raw.labels.data,
                        o->fit, d);
    idx_dataset_free(&raw);
    return rc;
}

/* .npz with x (N, C, H, W) or (N, H, W) float32 and y (N) class indices
 * (float32 holding integers, as the tool's reader takes float32 only). */
static int load_npz(const train_onnx_opts *o, int classes, dataset *d)
{
    char err[512];
    npz_archive a = {0};
    if (npz_read(o->npz, &a, err, sizeof err)) {
        fprintf(stderr, "polydnn train: %s\n", err);
        return EXIT_RUNTIME;
    }
    const npz_member *x = npz_find(&a, "x"), *y = npz_find(&a, "y");
    int32_t *lab = NULL;
    int rc = 0;
    if (!x || !y || (x->array.ndim != 4 && x->array.ndim != 3) || y->array.count != x->array.shape[0] ||
        x->array.shape[0] < 1) {
        fprintf(stderr, "polydnn train: --npz %s: needs arrays x (N, C, H, W) or (N, H, W) and y (N)\n", o->npz);
        rc = EXIT_RUNTIME;
    } else if (!(lab = calloc((size_t)y->array.count, sizeof *lab))) {
        rc = cli_host_oom("train", "the labels", 0);
    }
    for (int64_t i = 0; lab && !rc && i < y->array.count; i++) {
        float v = y->array.data[i];
        if (!(v >= 0 && v < (float)classes && v == floorf(v))) {
            fprintf(stderr, "polydnn train: --npz %s: y[%lld] is %g; labels are integers in 0..%d\n", o->npz,
                    (long long)i, (double)v, classes - 1);
            rc = EXIT_RUNTIME;
        } else {
            lab[i] = (int32_t)v;
        }
    }
    if (lab && !rc) {
        const int r4 = x->array.ndim == 4;
        const int64_t *s = x->array.shape;
        if ((r4 ? s[1] : 1) > 4096 || s[r4 + 1] > 65536 || s[r4 + 2] > 65536) {
            fprintf(stderr, "polydnn train: --npz %s: images of that size are not supported\n", o->npz);
            rc = EXIT_RUNTIME;
        } else {
            rc = fit_images(x->array.data, s[0], r4 ? (int)s[1] : 1, (int)s[r4 + 1], (int)s[r4 + 2], lab, o->fit,
                            d);
        }
    }
    free(lab);
    npz_free(&a);
    return rc;
}

/* The images of folder dir (ImageFolder: a subfolder per class) decoded
 * and prepared for the model's input (d's c, h, w; o's --resize/--stretch,
 * --scale, --mean, --std), in an order drawn from the seed: the folder
 * lists its files class by class, and --val-split and --train-limit take
 * the end and the start of the set, which must mix the classes. With as
 * (the training folder), labels follow as's classes. f keeps the listing. */
static int load_images(const train_onnx_opts *o, const char *dir, const image_folder *as, int classes,
                       image_folder *f, dataset *d)
{
    char err[768];
    image_prep p;
    image_prep_init(&p);
    if (image_flags(&p, o->resize, o->stretch, o->scale, o->mean, o->std, err, sizeof err)) {
        fprintf(stderr, "polydnn train: %s\n", err);
        return EXIT_USAGE;
    }
    p.channels = d->c, p.height = d->h, p.width = d->w;
    if (image_folder_scan(dir, as, f, err, sizeof err)) {
        fprintf(stderr, "polydnn train: --%s %s\n", as ? "test-images" : "images", err);
        return EXIT_RUNTIME;
    }
    if (!as && f->nclass > classes) {
        fprintf(stderr, "polydnn train: --images %s has %d class folders; the model scores %d classes\n", dir,
                f->nclass, classes);
        return EXIT_RUNTIME;
    }
    const size_t per = (size_t)d->c * (size_t)d->h * (size_t)d->w;
    if ((uint64_t)f->n > SIZE_MAX / sizeof *d->x / per)
        return cli_host_oom("train", "the decoded images", UINT64_MAX);
    int64_t *order = malloc(sizeof *order * (size_t)f->n);
    char **errs = calloc((size_t)f->n, sizeof *errs);
    d->n = f->n;
    d->x = malloc((size_t)f->n * per * sizeof *d->x);
    d->y = malloc((size_t)f->n * sizeof *d->y);
    if (!order || !errs || !d->x || !d->y) {
        free(order);
        free(errs);
        return cli_host_oom("train", "the decoded images", (uint64_t)f->n * per * sizeof *d->x);
    }
    /* Epoch -1's order: never one that training draws. */
    epoch_order(order, f->n, (uint64_t)o->seed, -1);
    const int64_t bad = image_folder_decode(f, order, f->n, &p, 0, d->x, d->y, errs);
    int rc = 0;
    int64_t kept = 0;
    const char *flag = as ? "test-images" : "images";
    for (int64_t i = 0; i < f->n; i++) {
        if (d->y[i] >= 0) {
            if (kept != i) { /* close the gaps the skipped images left */
                memmove(d->x + (size_t)kept * per, d->x + (size_t)i * per, per * sizeof *d->x);
                d->y[kept] = d->y[i];
            }
            kept++;
        } else if (!rc && o->skip_bad) {
            fprintf(stderr, "polydnn train: --%s: skipping %s\n", flag, errs[i] ? errs[i] : "an image (no memory)");
        } else if (!rc) {
            fprintf(stderr, "polydnn train: --%s %s (%lld of %lld images failed; --skip-bad-images skips them)\n",
                    flag, errs[i] ? errs[i] : "an image failed (no memory for its message)", (long long)bad,
                    (long long)f->n);
            rc = EXIT_RUNTIME;
        }
        free(errs[i]);
    }
    free(errs);
    free(order);
    d->n = kept;
    if (!rc && kept == 0) {
        fprintf(stderr, "polydnn train: --%s %s: none of its %lld images decoded\n", flag, dir, (long long)f->n);
        rc = EXIT_RUNTIME;
    }
    if (!rc && say) {
        /* The labels the classes got, as torchvision's class_to_idx. */
        printf("%s: %lld images in %d classes", dir, (long long)kept, f->nclass);
        for (int k = 0; !as && k < f->nclass && k < 8; k++)
            printf("%s%d %s", k ? ", " : " (", k, f->classes[k]);
        printf("%s", as ? "" : f->nclass > 8 ? ", ...)" : ")");
        printf(bad ? ", %lld skipped\n" : "\n", (long long)bad);
        fflush(stdout); /* before the progress lines on stderr */
    }
    return rc;
}

/* The learning rate at global step gs of total: warm-up, then the schedule. */
static float lr_at(const train_onnx_opts *o, float base, int64_t gs, int64_t total)
{
    double lr = base;
    if (o->warmup > 0 && gs < o->warmup)
        return (float)(lr * (double)(gs + 1) / (double)o->warmup);
    const double t = total > o->warmup ? (double)(gs - o->warmup) / (double)(total - o->warmup) : 1.0;
    if (o->schedule && strcmp(o->schedule, "cosine") == 0)
        lr *= 0.5 * (1.0 + cos(3.14159265358979323846 * (t < 1.0 ? t : 1.0)));
    else if (o->schedule && strcmp(o->schedule, "step") == 0)
        lr *= t >= 0.75 ? 0.01 : t >= 0.5 ? 0.1 : 1.0;
    return (float)lr;
}

static int log_add(tlog *l, const row *r)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 256;
        row *p = realloc(l->rows, sizeof *p * (size_t)cap);
        if (!p)
            return cli_host_oom("train", "the log", sizeof *p * (size_t)cap);
        l->rows = p;
        l->cap = cap;
    }
    l->rows[l->n++] = *r;
    return 0;
}

static void num(FILE *f, double v, int json)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs(json ? "null" : "", f);
}

static int write_log(FILE *f, void *arg)
{
    const tlog *l = arg;
    if (!l->json)
        fputs("step,epoch,loss,accuracy,val_accuracy,lr,images_per_s\n", f);
    for (int i = 0; i < l->n; i++) {
        const row *r = &l->rows[i];
        const double v[6] = {r->epoch, r->loss, r->acc, r->val_acc >= 0 ? r->val_acc : NAN, r->lr, r->ips};
        static const char *const keys[6] = {"epoch", "loss", "accuracy", "val_accuracy", "lr", "images_per_s"};
        fprintf(f, l->json ? "{\"step\": %lld" : "%lld", (long long)r->step);
        for (int k = 0; k < 6; k++) {
            fprintf(f, l->json ? ", \"%s\": " : ",", keys[k]);
            num(f, v[k], l->json);
        }
        fputs(l->json ? "}\n" : "\n", f);
    }
    return ferror(f) ? -1 : 0;
}

/* The plot: loss (left axis) and accuracies (right, 0..1) against the step. */
static int write_svg(FILE *f, void *arg)
{
    const tlog *l = arg;
    const double W = 640, H = 360, L = 60, R = 60, T = 30, B = 40;
    double maxs = 1, maxl = 1e-9;
    for (int i = 0; i < l->n; i++) {
        maxs = fmax(maxs, (double)l->rows[i].step);
        if (isfinite(l->rows[i].loss))
            maxl = fmax(maxl, l->rows[i].loss);
    }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<path d=\"M%g %g V%g H%g V%g\" fill=\"none\" stroke=\"black\"/>\n", L, T, H - B, W - R, T);
    fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">step (0..%g)</text>\n", (L + W - R) / 2, H - 10, maxs);
    fprintf(f, "<text x=\"5\" y=\"20\" fill=\"#c03\">loss (0..%.3g)</text>\n", maxl);
    fprintf(f, "<text x=\"%g\" y=\"20\" text-anchor=\"end\" fill=\"#06c\">accuracy, validation (0..1)</text>\n",
            W - 5);
    static const char *const colour[3] = {"#c03", "#06c", "#090"};
    for (int c = 0; c < 3; c++) {
        int first = 1;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" points=\"", colour[c]);
        for (int i = 0; i < l->n; i++) {
            const row *r = &l->rows[i];
            double v = c == 0 ? r->loss / maxl : c == 1 ? r->acc : r->val_acc;
            if (!isfinite(v) || v < 0)
                continue;
            fprintf(f, "%s%.1f,%.1f", first ? "" : " ", L + (W - L - R) * (double)r->step / maxs,
                    H - B - (H - T - B) * fmin(v, 1.0));
            first = 0;
        }
        fputs("\"/>\n", f);
    }
    fputs("</svg>\n", f);
    return ferror(f) ? -1 : 0;
}

static int flush_log(const train_onnx_opts *o, tlog *l)
{
    char why[512];
    if (o->log && pdnn__file_replace_named(o->log, write_log, l, why, sizeof why)) {
        fprintf(stderr, "polydnn train: --log: %s\n", why);
        return EXIT_RUNTIME;
    }
    if (o->plot && pdnn__file_replace_named(o->plot, write_svg, l, why, sizeof why)) {
        fprintf(stderr, "polydnn train: --plot: %s\n", why);
        return EXIT_RUNTIME;
    }
    return 0;
}

typedef struct net {
    pdnn_graph *g;
    pdnn_session *s;
    /* towers: [0] the import's own nodes, [t] copy t (one without towers) */
    int towers;
    pdnn_onnx_io io[PDNN_MAX_TOWERS];
    pdnn_onnx_training t[PDNN_MAX_TOWERS];
    int64_t batch, classes; /* batch: rows per tower */
    int mse;
    pdnn_tensor *xt[PDNN_MAX_TOWERS], *yt[PDNN_MAX_TOWERS];
    float *xb;
    int32_t *yb; /* towers x batch labels */
    float *tb; /* MSE: one-hot targets */
    float base_lr; /* the schedule's rate */
    int mixed;     /* --distributed over devices of different kinds (below) */
} net;

/* Rows idx[0..cnt) of d into tower t's feed tensors (a short batch
 * repeats its last image, counted once by the caller). */
static pdnn_status feed(net *m, int t, const dataset *d, const int64_t *idx, int64_t cnt)
{
    int32_t *yb = m->yb + t * m->batch;
    const size_t per = (size_t)d->c * (size_t)d->h * (size_t)d->w;
    for (int64_t i = 0; i < m->batch; i++) {
        const int64_t j = idx[i < cnt ? i : cnt - 1];
        memcpy(m->xb + (size_t)i * per, d->x + (size_t)j * per, per * sizeof *m->xb);
        yb[i] = d->y[j];
        if (m->mse)
            for (int64_t k = 0; k < m->classes; k++)
                m->tb[i * m->classes + k] = k == d->y[j];
    }
    pdnn_status st = pdnn_tensor_write(m->xt[t], m->xb, (size_t)m->batch * per * sizeof *m->xb);
    if (st == PDNN_SUCCESS)
        st = m->mse ? pdnn_tensor_write(m->yt[t], m->tb, (size_t)(m->batch * m->classes) * sizeof *m->tb)
                    : pdnn_tensor_write(m->yt[t], yb, (size_t)m->batch * sizeof *yb);
    return st;
}

/* Hits of tower t's logits on the labels it was fed. */
static int64_t correct_of(const net *m, int t, const float *logits, int64_t cnt)
{
    int64_t ok = 0;
    for (int64_t i = 0; i < cnt; i++) {
        int64_t best = 0;
        for (int64_t k = 1; k < m->classes; k++)
            if (logits[i * m->classes + k] > logits[i * m->classes + best])
                best = k;
        ok += best == m->yb[t * m->batch + i];
    }
    return ok;
}

static int set_flag(net *m, float v)
{
    return pdnn_session_variable_assign(m->s, m->t[0].training, &v, sizeof v) ? cli_fail("setting polydnn/training") : 0;
}

/* Accuracy on rows [from, from + n) of d, in inference mode. */
static int sync_vectors(const train_onnx_opts *o, net *m);

/* Under --distributed mpi each rank evaluates every size-th batch and the
 * counts are summed over the ranks (after sync_vectors, so that every rank
 * holds the same running statistics). */
static int evaluate(const train_onnx_opts *o, net *m, const dataset *d, int64_t from, int64_t n, double *acc)
{
    int64_t *idx = malloc(sizeof *idx * (size_t)m->batch), ok = 0;
    if (!idx)
        return cli_host_oom("train", "the evaluation batch", 0);
    int rc = sync_vectors(o, m);
    if (!rc)
        rc = set_flag(m, 0.0f);
    const int64_t first = o->dist ? (int64_t)o->rank * m->batch : 0, stride = m->batch * (o->dist ? o->size : 1);
    for (int64_t start = first; !rc && start < n; start += stride) {
        const int64_t cnt = n - start < m->batch ? n - start : m->batch;
        for (int64_t i = 0; i < cnt; i++)
            idx[i] = from + start + i;
        pdnn_tensor *out = NULL;
        float *lv = NULL;
        if (feed(m, 0, d, idx, cnt) ||
            pdnn_session_run(m->s, &m->io[0].inputs[0], &m->xt[0], 1, &m->io[0].outputs[0], 1, &out) ||
            cli_tensor_read(out, &lv)) {
            rc = cli_fail("evaluating");
        } else {
            ok += correct_of(m, 0, lv, cnt);
        }
        pdnn_tensor_release(out);
        free(lv);
    }
    free(idx);
    if (!rc)
        rc = set_flag(m, 1.0f);
    double sum = (double)ok;
    if (!rc && o->dist && pdnn_session_allreduce_values(m->s, &sum, 1, PDNN_REDUCE_SUM))
        rc = cli_fail("summing the evaluation's counts over the ranks");
    *acc = n ? sum / (double)n : 0.0;
    return rc;
}

/* train_state: seed (four 16-bit pieces), batch, training-set size, the
 * best validation accuracy and evaluations since (early stopping). */
enum { STATE_LEN = 8 };

/* One checkpoint member: a variable's values under its npz name. */
typedef struct ckpt_item {
    char name[NPZ_MAX_NAME + 1];
    int64_t count;
    float *values;
} ckpt_item;

static int save_ckpt(const net *m, const char *path, uint64_t seed, int64_t train_n, double best, int64_t bad)
{
    const int nn = pdnn_graph_node_count(m->g);
    ckpt_item *it = calloc((size_t)nn, sizeof *it);
    npz_entry *e = calloc((size_t)nn + 1, sizeof *e);
    float st[STATE_LEN];
    if (!it || !e) {
        free(it), free(e);
        return cli_host_oom("train", "the checkpoint", 0);
    }
    int count = 0, rc = 0;
    for (pdnn_node n = 0; !rc && n < nn; n++) {
        if (strcmp(pdnn_graph_node_op(m->g, n), "VariableV2") != 0)
            continue;
        ckpt_item *c = &it[count];
        pdnn_tensor_desc d;
        pdnn_graph_node_desc(m->g, n, &d);
        c->count = pdnn_tensor_desc_elements(&d);
        c->values = malloc((size_t)c->count * sizeof *c->values);
        if (!c->values)
            rc = cli_host_oom("train", "the checkpoint", (uint64_t)c->count * sizeof *c->values);
        else if (pdnn_session_variable_read(m->s, n, c->values, (size_t)c->count * sizeof *c->values))
            rc = cli_fail("reading a variable for the checkpoint");
        ckpt_name(pdnn_graph_node_name(m->g, n), c->name, sizeof c->name);
        e[count++] = (npz_entry){c->name, 1, &c->count, c->values};
    }
    for (int i = 0; i < 4; i++)
        st[i] = (float)((seed >> (16 * i)) & 0xFFFF);
    st[4] = (float)m->batch;
    st[5] = (float)train_n;
    st[6] = (float)best;
    st[7] = (float)bad;
    static const int64_t st_shape[1] = {STATE_LEN};
    char err[512];
    if (!rc) {
        e[count] = (npz_entry){"train_state", 1, st_shape, st};
        if (npz_write(path, count + 1, e, err, sizeof err)) {
            fprintf(stderr, "polydnn train: %s\n", err);
            rc = EXIT_RUNTIME;
        }
    }
    while (count > 0)
        free(it[--count].values);
    free(it);
    free(e);
    return rc;
}

/* Every variable of the model from path, checked by name and size first;
 * train_state must agree with this run (seed, batch, data). */
static int load_ckpt(net *m, const char *path, uint64_t seed, int64_t train_n, double *best, int64_t *bad)
{
    const int nn = pdnn_graph_node_count(m->g);
    npz_expect *want = calloc((size_t)nn + 1, sizeof *want);
    char(*names)[NPZ_MAX_NAME + 1] = calloc((size_t)nn + 1, sizeof *names);
    pdnn_node *vars = calloc((size_t)nn + 1, sizeof *vars);
    if (!want || !names || !vars) {
        free(want), free(names), free(vars);
        return cli_host_oom("train", "the checkpoint's table", 0);
    }
    int k = 0, rc = 0;
    for (pdnn_node n = 0; !rc && n < nn; n++) {
        if (strcmp(pdnn_graph_node_op(m->g, n), "VariableV2") != 0)
            continue;
        pdnn_tensor_desc d;
        pdnn_graph_node_desc(m->g, n, &d);
        ckpt_name(pdnn_graph_node_name(m->g, n), names[k], sizeof names[k]);
        want[k] = (npz_expect){names[k], (uint64_t)pdnn_tensor_desc_bytes(&d)};
        vars[k++] = n;
    }
    if (!rc)
        want[k] = (npz_expect){"train_state", STATE_LEN * sizeof(float)};
    npz_archive a = {0};
    char err[512];
    if (!rc && npz_read_expect(path, want, k + 1, "this model", &a, err, sizeof err)) {
        fprintf(stderr, "polydnn train: %s\n", err);
        rc = EXIT_RUNTIME;
    }
    const npz_member *st = rc ? NULL : npz_find(&a, "train_state");
    if (!rc && (!st || st->array.count != STATE_LEN)) {
        fprintf(stderr, "polydnn train: %s: train_state is not %d numbers\n", path, STATE_LEN);
        rc = EXIT_RUNTIME;
    }
    if (!rc) {
        uint64_t s = 0;
        for (int i = 0; i < 4; i++)
            s |= (uint64_t)st->array.data[i] << (16 * i);
        if (s != seed || st->array.data[4] != (float)m->batch || st->array.data[5] != (float)train_n) {
            fprintf(stderr, "polydnn train: %s was written with another --seed, --batch or training set (seed %llu, "
                            "batch %g, %g images; this run: %llu, %lld, %lld)\n", path, (unsigned long long)s,
                    (double)st->array.data[4], (double)st->array.data[5], (unsigned long long)seed,
                    (long long)m->batch, (long long)train_n);
            rc = EXIT_RUNTIME;
        }
        *best = st->array.data[6];
        *bad = (int64_t)st->array.data[7];
    }
    for (int i = 0; !rc && i < k; i++) {
        const npz_member *v = npz_find(&a, names[i]);
        pdnn_tensor_desc d;
        pdnn_graph_node_desc(m->g, vars[i], &d);
        if (v->array.count != pdnn_tensor_desc_elements(&d)) {
            fprintf(stderr, "polydnn train: %s: '%s' has %lld values; the model's has %lld\n", path, names[i],
                    (long long)v->array.count, (long long)pdnn_tensor_desc_elements(&d));
            rc = EXIT_RUNTIME;
        } else if (pdnn_session_variable_assign(m->s, vars[i], v->array.data,
                                                (size_t)v->array.count * sizeof(float))) {
            rc = cli_fail("restoring a variable");
        }
    }
    npz_free(&a);
    free(want);
    free(names);
    free(vars);
    return rc;
}

static int parse_num(const char *flag, const char *s, double lo, double hi, float *out)
{
    char *end = NULL;
    double v = s ? strtod(s, &end) : 0;
    if (!s || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "polydnn train: --%s '%s': expected a number in [%g, %g]\n", flag, s ? s : "", lo, hi);
        return EXIT_USAGE;
    }
    *out = (float)v;
    return 0;
}

static int build(const train_onnx_opts *o, net *m)
{
    pdnn_optimizer_params p;
    const char *kind = o->optimizer ? o->optimizer : "sgd";
    if (strcmp(kind, "sgd") == 0) {
        pdnn_optimizer_params_init(&p, PDNN_OPTIMIZER_SGD);
        p.learning_rate = 0.05f;
        p.momentum = 0.9f;
    } else if (strcmp(kind, "adam") == 0 || strcmp(kind, "adamw") == 0) {
        pdnn_optimizer_params_init(&p, kind[4] ? PDNN_OPTIMIZER_ADAMW : PDNN_OPTIMIZER_ADAM);
    } else {
        fprintf(stderr, "polydnn train: --optimizer: expected sgd, adam or adamw, got '%s'\n", kind);
        return EXIT_USAGE;
    }
    p.nesterov = o->nesterov;
    if ((o->lr && parse_num("lr", o->lr, 0, 1e6, &p.learning_rate)) ||
        (o->momentum && parse_num("momentum", o->momentum, 0, 1, &p.momentum)) ||
        (o->weight_decay && parse_num("weight-decay", o->weight_decay, 0, 1e6, &p.weight_decay)))
        return EXIT_USAGE;
    m->base_lr = p.learning_rate;
    if (o->loss && strcmp(o->loss, "cross-entropy") != 0 && strcmp(o->loss, "mse") != 0) {
        fprintf(stderr, "polydnn train: --loss: expected cross-entropy or mse, got '%s'\n", o->loss);
        return EXIT_USAGE;
    }
    m->mse = o->loss && strcmp(o->loss, "mse") == 0;
    /* --device a,b,...: one tower per device, the variables on
     * --param-device (pdnn_graph_add_training_towers) */
    char devs[PDNN_MAX_TOWERS][TRAIN_DEVICE_LEN];
    pdnn_training_towers tw = {1, {NULL}, o->param_device};
    if (o->device && strchr(o->device, ',')) {
        if ((tw.n = train_tower_devices(o->device, devs)) < 0)
            return EXIT_USAGE;
        for (int t = 0; t < tw.n; t++)
            tw.devices[t] = devs[t];
    } else if (o->param_device) {
        fprintf(stderr, "polydnn train: --param-device needs towers (a comma list in --device)\n");
        return EXIT_USAGE;
    }
    if (o->batch % (tw.n * (o->dist ? o->size : 1))) {
        fprintf(stderr, "polydnn train: --batch-size %d does not split evenly over %d towers x %d ranks\n", o->batch,
                tw.n, o->dist ? o->size : 1);
        return EXIT_USAGE;
    }
    m->towers = tw.n;
    pdnn_onnx_options io;
    pdnn_onnx_options_init(&io);
    io.batch = o->batch / (o->dist ? o->size : 1) / tw.n; /* one tower's share of this rank's batch */
    io.distributed = o->dist ? PDNN_DISTRIBUTED_MPI : PDNN_DISTRIBUTED_NONE;
    io.device = tw.n > 1 ? NULL : o->device;
    io.trainable = 1;
    if (o->layout) { /* inside the network; the data and the file stay NCHW */
        const int l = pdnn_layout_parse(o->layout);
        if (l != PDNN_NCHW && l != PDNN_NHWC) {
            fprintf(stderr, "polydnn train: --layout: expected NCHW or NHWC, got '%s'\n", o->layout);
            return EXIT_USAGE;
        }
        io.layout = (pdnn_layout)l;
    }
    io.seed = (uint64_t)o->seed;
    float scale0 = 0;
    if (cli_precision("train", o->precision, &io.precision) ||
        cli_loss_scale("train", o->loss_scale, io.precision, &scale0))
        return EXIT_USAGE;
    if (pdnn_graph_import_onnx(o->model, NULL, 0, &io, &m->g, &m->io[0]))
        return cli_fail("importing the model");
    /* the policy came with the import; the scale before the gradients */
    if (cli_graph_precision(m->g, PDNN_FLOAT32, scale0))
        return EXIT_RUNTIME;
    pdnn_tensor_desc od;
    pdnn_graph_node_desc(m->g, m->io[0].outputs[0], &od);
    if (m->io[0].n_inputs != 1 || m->io[0].input_rank[0] != 4 || m->io[0].output_rank[0] != 2) {
        fprintf(stderr, "polydnn train: %s: training needs one image input (N, C, H, W) and a class-score output "
                        "(N, K) first\n", o->model);
        return EXIT_RUNTIME;
    }
    m->classes = od.dims[1];
    const pdnn_loss_kind lk = m->mse ? PDNN_LOSS_MSE : PDNN_LOSS_CROSS_ENTROPY;
    if (tw.n > 1 ? pdnn_graph_add_training_towers(m->g, m->io, &tw, lk, &p, m->t)
                 : pdnn_graph_add_training(m->g, &m->io[0], lk, &p, &m->t[0]))
        return cli_fail("adding the loss and the optimizer");
    if (o->dist) {
        /* What sizes the collectives must agree before the first one. */
        int64_t n_var = 0, n_el = 0;
        for (pdnn_node i = 0; i < pdnn_graph_node_count(m->g); i++) {
            pdnn_tensor_desc d;
            if (strcmp(pdnn_graph_node_op(m->g, i), "VariableV2") == 0 && !pdnn_graph_node_desc(m->g, i, &d)) {
                n_var++;
                n_el += pdnn_tensor_desc_elements(&d);
            }
        }
        uint32_t lr_bits, mom_bits;
        memcpy(&lr_bits, &p.learning_rate, sizeof lr_bits);
        memcpy(&mom_bits, &p.momentum, sizeof mom_bits);
        const char *flags[] = {"--batch-size", "--epochs", "--steps", "--seed", "--optimizer",
                               "--lr (its float32 bits)", "--momentum (its float32 bits)", "--bucket-mb",
                               "--no-overlap", "the model's variables", "the model's variable elements"};
        const int64_t vals[] = {o->batch, o->epochs, o->steps, o->seed, (int64_t)p.kind, lr_bits, mom_bits,
                                o->bucket_mb, o->no_overlap, n_var, n_el};
        const int rc = train_ranks_agree(flags, vals, (int)(sizeof vals / sizeof vals[0]), o->timeout);
        if (rc)
            return rc;
    }
    pdnn_session_config cfg;
    pdnn_session_config_init(&cfg);
    if (o->dist) {
        cfg.distributed = PDNN_DISTRIBUTED_MPI;
        cfg.allreduce_bucket_bytes = (int64_t)o->bucket_mb << 20;
        cfg.allreduce_overlap = !o->no_overlap;
        cfg.collective_timeout = o->timeout;
    }
    cfg.profile = o->profile;
    if (pdnn_session_create(m->g, &cfg, &m->s))
        return cli_fail("creating the session");
    /* The same start everywhere (the files could differ in what the
     * import does not read). */
    if (o->dist && pdnn_session_broadcast_variables(m->s, 0))
        return cli_fail("broadcasting rank 0's variables");
    if (o->dist) {
        /* Ranks whose variables live on different kinds of device (the
         * host and OpenCL) apply the same averaged gradients with
         * different roundings (OpenCL contracts to FMA): their weights
         * drift apart by ulps. They are then made rank 0's again at every
         * evaluation, checkpoint and the end (sync_vectors). */
        pdnn_device *dev = NULL;
        pdnn_device_info info;
        if (pdnn_session_node_device(m->s, m->io[0].outputs[0], &dev) || pdnn_device_get_info(dev, &info))
            return cli_fail("reading the output's device");
        uint64_t h = train_fnv(TRAIN_FNV_BASIS, info.backend, strlen(info.backend)), lo, hi;
        h = train_fnv(h, info.device_name, strlen(info.device_name));
        if (train_hash_range(m->s, h, &lo, &hi))
            return cli_fail("comparing the ranks' devices");
        m->mixed = lo != hi;
        if (m->mixed && o->rank == 0)
            printf("the ranks train on different kinds of device, whose updates round differently: rank 0's "
                   "variables are copied to every rank at each evaluation, checkpoint and the end\n");
    }
    return 0;
}

/* Every vector variable (batch norm's running statistics, which each rank
 * computes from its own rows, and the scales, biases and slots, which are
 * equal everywhere) set to its mean over the ranks: the running
 * statistics a rank's export or evaluation uses. The mean runs in double,
 * where a value equal on every rank sums and divides back exactly, so
 * only the running statistics change. A collective: every rank calls it
 * at the same points. */
static int sync_vectors(const train_onnx_opts *o, net *m)
{
    if (!o->dist)
        return 0;
    for (pdnn_node i = 0; i < pdnn_graph_node_count(m->g); i++) {
        pdnn_tensor_desc d;
        if (strcmp(pdnn_graph_node_op(m->g, i), "VariableV2") != 0 || pdnn_graph_node_desc(m->g, i, &d) ||
            d.layout != PDNN_LAYOUT_X || d.dtype != PDNN_FLOAT32)
            continue;
        const int64_t n = pdnn_tensor_desc_elements(&d);
        float *f = malloc(sizeof *f * (size_t)n);
        double *v = malloc(sizeof *v * (size_t)n);
        int rc = !f || !v ? cli_host_oom("train", "a variable's copy", (uint64_t)n * sizeof *v) : 0;
        if (!rc && pdnn_session_variable_read(m->s, i, f, sizeof *f * (size_t)n))
            rc = cli_fail("reading a variable");
        for (int64_t k = 0; !rc && k < n; k++)
            v[k] = f[k];
        if (!rc && pdnn_session_allreduce_values(m->s, v, (int)n, PDNN_REDUCE_SUM))
            rc = cli_fail("averaging the running statistics over the ranks");
        for (int64_t k = 0; !rc && k < n; k++)
            f[k] = (float)(v[k] / o->size);
        if (!rc && pdnn_session_variable_assign(m->s, i, f, sizeof *f * (size_t)n))
            rc = cli_fail("writing a variable");
        free(f);
        free(v);
        if (rc)
            return rc;
    }
    if (m->mixed && pdnn_session_broadcast_variables(m->s, 0))
        return cli_fail("broadcasting rank 0's variables");
    return 0;
}

int train_onnx(const train_onnx_opts *o)
{
    float split = 0.0f;
    if (o->val_split && parse_num("val-split", o->val_split, 0, 0.9, &split))
        return EXIT_USAGE;
    if (o->schedule && strcmp(o->schedule, "step") != 0 && strcmp(o->schedule, "cosine") != 0 &&
        strcmp(o->schedule, "constant") != 0) {
        fprintf(stderr, "polydnn train: --lr-schedule: expected constant, step or cosine, got '%s'\n", o->schedule);
        return EXIT_USAGE;
    }
    if (o->images && (o->npz || o->fit)) {
        fprintf(stderr, "polydnn train: --images takes its data from the folder and fits it by --resize or "
                        "--stretch: not with --%s\n", o->npz ? "npz" : "fit");
        return EXIT_USAGE;
    }
    if (!o->images && (o->test_images || o->resize || o->stretch || o->scale || o->mean || o->std)) {
        fprintf(stderr, "polydnn train: --test-images, --resize, --stretch, --scale, --mean and --std apply to "
                        "--images only\n");
        return EXIT_USAGE;
    }
    if (o->test_images && split > 0.0f) {
        fprintf(stderr, "polydnn train: --test-images and --val-split both name the evaluation set: give one\n");
        return EXIT_USAGE;
    }
    if (o->fit && strcmp(o->fit, "pad") != 0 && strcmp(o->fit, "resize") != 0) {
        fprintf(stderr, "polydnn train: --fit: expected pad or resize, got '%s'\n", o->fit);
        return EXIT_USAGE;
    }
    if (o->ckpt_every > 0 && !o->save) {
        fprintf(stderr, "polydnn train: --checkpoint-every needs --save (the checkpoint's path)\n");
        return EXIT_USAGE;
    }
    net m = {0};
    say = !o->dist || o->rank == 0;
    dataset trn = {0}, tst = {0};
    image_folder trn_f = {0}, tst_f = {0};
    tlog lg = {NULL, 0, 0, o->log && !(strlen(o->log) > 4 && strcmp(o->log + strlen(o->log) - 4, ".csv") == 0)};
    int64_t *perm = NULL;
    int rc = build(o, &m);
    if (rc)
        goto out;
    m.batch = o->batch / (o->dist ? o->size : 1) / m.towers;
    pdnn_tensor_desc xd, yd;
    pdnn_graph_node_desc(m.g, m.io[0].inputs[0], &xd);
    pdnn_graph_node_desc(m.g, m.t[0].targets, &yd);
    trn.c = tst.c = (int)xd.dims[1];
    trn.h = tst.h = (int)xd.dims[2];
    trn.w = tst.w = (int)xd.dims[3];
    if ((rc = o->images   ? load_images(o, o->images, NULL, (int)m.classes, &trn_f, &trn)
              : o->npz    ? load_npz(o, (int)m.classes, &trn)
                          : load_idx(o, "train", (int)m.classes, &trn)))
        goto out;
    if (o->test_images && (rc = load_images(o, o->test_images, &trn_f, (int)m.classes, &tst_f, &tst)))
        goto out;
    if (!o->npz && !o->images && !split && (rc = load_idx(o, "t10k", (int)m.classes, &tst)))
        goto out;
    int64_t train_n = trn.n;
    if (o->train_limit > 0 && o->train_limit < train_n)
        train_n = o->train_limit;
    /* The validation set: the last val-split of the (limited) training set. */
    const int64_t val_n = (int64_t)((double)train_n * split);
    train_n -= val_n;
    const dataset *vset = val_n ? &trn : &tst;
    const int64_t v_from = val_n ? train_n : 0;
    int64_t v_n = val_n ? val_n : tst.n;
    if (!val_n && o->test_limit > 0 && o->test_limit < v_n)
        v_n = o->test_limit;
    const int64_t gbatch = o->batch; /* the global batch: m.batch per rank */
    const int64_t spe = train_n / gbatch;
    if (spe < 1) {
        fprintf(stderr, "polydnn train: %lld training images make no batch of %lld\n", (long long)train_n,
                (long long)gbatch);
        rc = EXIT_USAGE;
        goto out;
    }
    pdnn_device *host = NULL;
    const size_t per = (size_t)trn.c * (size_t)trn.h * (size_t)trn.w;
    m.xb = malloc((size_t)m.batch * per * sizeof *m.xb);
    m.yb = malloc((size_t)(m.batch * m.towers) * sizeof *m.yb);
    m.tb = malloc((size_t)(m.batch * m.classes) * sizeof *m.tb);
    perm = malloc((size_t)train_n * sizeof *perm);
    if (!m.xb || !m.yb || !m.tb || !perm) {
        rc = cli_host_oom("train", "the batches", 0);
        goto out;
    }
    if (pdnn_device_find(pdnn_session_context(m.s), "/cpu:0", &host)) {
        rc = cli_fail("finding /cpu:0 for the feed tensors");
        goto out;
    }
    for (int t = 0; t < m.towers; t++)
        if (pdnn_tensor_create(host, &xd, &m.xt[t]) || pdnn_tensor_create(host, &yd, &m.yt[t])) {
            rc = cli_fail("creating the feed tensors");
            goto out;
        }
    const uint64_t seed = (uint64_t)o->seed;
    double best = -1.0;
    int64_t bad = 0;
    if (o->load && (rc = load_ckpt(&m, o->load, seed, train_n, &best, &bad)))
        goto out;
    float gsf = 0, base_lr;
    pdnn_node gsn;
    if (pdnn_graph_find(m.g, "global_step", &gsn) || pdnn_session_variable_read(m.s, gsn, &gsf, sizeof gsf)) {
        rc = cli_fail("reading global_step");
        goto out;
    }
    base_lr = m.base_lr;
    const int64_t total = (int64_t)o->epochs * spe;
    int64_t gs = (int64_t)gsf, done = 0;
    ls_history lsh; /* --precision fp16, --loss-scale: the scale's changes */
    ls_history_init(&lsh, m.g, m.s, gs);
    progress pr;
    progress_init(&pr, say ? stderr : NULL, -1);
    /* feeds: each tower's images and labels; fetches: each tower's loss
     * and output, then the step */
    pdnn_node feeds[2 * PDNN_MAX_TOWERS], fetch[2 * PDNN_MAX_TOWERS + 1];
    pdnn_tensor *fv[2 * PDNN_MAX_TOWERS];
    const int nt = m.towers, nf = 2 * nt + 1;
    for (int t = 0; t < nt; t++) {
        feeds[2 * t] = m.io[t].inputs[0], feeds[2 * t + 1] = m.t[t].targets;
        fv[2 * t] = m.xt[t], fv[2 * t + 1] = m.yt[t];
        fetch[2 * t] = m.t[t].loss, fetch[2 * t + 1] = m.io[t].outputs[0];
    }
    fetch[2 * nt] = m.t[0].train_op;
    int stop = 0;
    for (int64_t epoch = gs / spe; epoch < o->epochs && !stop; epoch++) {
        if (o->steps > 0 && done >= o->steps)
            break; /* --steps ran out at an epoch's end: no empty epoch after it */
        epoch_order(perm, train_n, seed, epoch);
        progress_epoch(&pr, (int)epoch + 1, o->epochs, spe, progress_now());
        for (int64_t step = gs % spe; step < spe && !stop; step++) {
            if (o->steps > 0 && done >= o->steps) {
                stop = 1;
                break;
            }
            const double t0 = progress_now();
            const float lr = lr_at(o, base_lr, gs, total);
            pdnn_tensor *out[2 * PDNN_MAX_TOWERS + 1] = {NULL};
            float loss = 0;
            /* this rank's rows of the global batch, tower t's share of them */
            const int64_t *rows = perm + step * gbatch + (o->dist ? o->rank : 0) * m.batch * nt;
            pdnn_status st = pdnn_session_variable_assign(m.s, m.t[0].learning_rate, &lr, sizeof lr);
            for (int t = 0; t < nt && st == PDNN_SUCCESS; t++)
                st = feed(&m, t, &trn, rows + t * m.batch, m.batch);
            if (st == PDNN_SUCCESS)
                st = pdnn_session_run(m.s, feeds, fv, 2 * nt, fetch, nf, out);
            double lc[2] = {0, 0}; /* the batch's loss (the towers' mean), its hits */
            for (int t = 0; t < nt && st == PDNN_SUCCESS; t++) {
                float lt = NAN, *lv = NULL;
                st = pdnn_tensor_read(out[2 * t], &lt, sizeof lt);
                if (st == PDNN_SUCCESS)
                    st = cli_tensor_read(out[2 * t + 1], &lv);
                if (st == PDNN_SUCCESS)
                    lc[0] += lt / (double)nt, lc[1] += (double)correct_of(&m, t, lv, m.batch);
                free(lv);
            }
            for (int i = 0; i < nf; i++)
                pdnn_tensor_release(out[i]);
            if (st != PDNN_SUCCESS) {
                rc = cli_fail("running a training step");
                goto out;
            }
            loss = (float)lc[0];
            if (o->dist) { /* the global batch's: the ranks' mean loss, their summed hits */
                if (pdnn_session_allreduce_values(m.s, lc, 2, PDNN_REDUCE_SUM)) {
                    rc = cli_fail("summing the loss over the ranks");
                    goto out;
                }
                loss = (float)(lc[0] / o->size);
            }
            const double acc = lc[1] / (double)gbatch;
            gs++;
            done++;
            if (say && lsh.n) {
                progress_clear(&pr);
                ls_history_step(&lsh, m.s, gs, stdout, o->json);
            }
            const double dt = progress_now() - t0;
            row r = {gs, (double)gs / (double)spe, loss, acc, -1.0, lr, dt > 0 ? (double)gbatch / dt : 0};
            const int eval = (o->eval_every > 0 && gs % o->eval_every == 0) || step == spe - 1;
            if (eval && v_n > 0) {
                if ((rc = evaluate(o, &m, vset, v_from, v_n, &r.val_acc)))
                    goto out;
                progress_clear(&pr);
                if (!say)
                    ;
                else if (o->json)
                    printf("{\"event\": \"eval\", \"step\": %lld, \"epoch\": %.3f, \"%s_accuracy\": %.6f}\n",
                           (long long)gs, r.epoch, val_n ? "val" : "test", r.val_acc);
                else
                    printf("step %lld epoch %.2f: %s accuracy %.4f (%lld images)\n", (long long)gs, r.epoch,
                           val_n ? "validation" : "test", r.val_acc, (long long)v_n);
                fflush(stdout);
                if (r.val_acc > best) {
                    best = r.val_acc;
                    bad = 0;
                } else if (o->early_stop > 0 && ++bad >= o->early_stop) {
                    if (say)
                        printf("early stop: no better %s accuracy than %.4f in %lld evaluations\n",
                           val_n ? "validation" : "test", best, (long long)bad);
                    stop = 1;
                }
            }
            if (say && ((rc = log_add(&lg, &r)) || ((eval || gs % 10 == 0) && (rc = flush_log(o, &lg)))))
                goto out;
            if (say && gs % 10 == 0 && !eval) {
                progress_clear(&pr);
                if (o->json)
                    printf("{\"event\": \"step\", \"step\": %lld, \"loss\": %.6g, \"lr\": %.6g}\n", (long long)gs,
                           (double)loss, (double)lr);
                else
                    printf("step %lld loss %.4f lr %.4g\n", (long long)gs, (double)loss, (double)lr);
                fflush(stdout);
            }
            progress_step(&pr, gbatch, loss, progress_now());
            if (o->save && ((o->ckpt_every > 0 && gs % o->ckpt_every == 0) || step == spe - 1 || stop) &&
                ((rc = sync_vectors(o, &m)) || (say && (rc = save_ckpt(&m, o->save, seed, train_n, best, bad)))))
                goto out;
        }
        progress_end_epoch(&pr, progress_now());
    }
    if ((rc = sync_vectors(o, &m)) || (say && (rc = flush_log(o, &lg))) ||
        (say && o->save && done > 0 && (rc = save_ckpt(&m, o->save, seed, train_n, best, bad))))
        goto out;
    if (o->dist && (rc = train_check_identical(m.s, m.g)))
        goto out;
    if (say && o->profile && (rc = cli_print_profile(stdout, m.g, m.s, 30)))
        goto out;
    if (say)
        ls_history_print(&lsh, stdout, o->json);
    if (say && o->export_path) {
        int n = 0;
        if (pdnn_session_export_onnx(m.s, o->model, o->export_path, &n)) {
            rc = cli_fail("exporting the trained model");
            goto out;
        }
        printf("exported %s: %d initializers trained or updated\n", o->export_path, n);
    }
out:
    for (int t = 0; t < PDNN_MAX_TOWERS; t++) {
        pdnn_tensor_release(m.xt[t]);
        pdnn_tensor_release(m.yt[t]);
    }
    pdnn_session_destroy(m.s);
    pdnn_graph_destroy(m.g);
    free(m.xb);
    free(m.yb);
    free(m.tb);
    free(perm);
    free(lg.rows);
    dataset_free(&trn);
    dataset_free(&tst);
    image_folder_free(&trn_f);
    image_folder_free(&tst_f);
    return rc;
}
