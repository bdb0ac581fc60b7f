/* polydnn train: TensorFlow's Deep MNIST network (conv 5x5x32 SAME + bias,
 * relu, maxpool 2; conv 5x5x64 SAME + bias, relu, maxpool 2; flatten;
 * fc 1024 + relu; fc 10; sparse softmax cross-entropy) trained as a
 * polydnn graph on MNIST-style IDX data, with .npz checkpoints.
 *
 * Resuming: the position is global_step alone. Epoch e's order is a
 * permutation drawn from (seed, e), so global_step, the batch size, the
 * training-set size and the seed (all in the checkpoint's "train_state")
 * give the next batch exactly; a resumed run continues as if uninterrupted.
 * --steps N means N more steps from where the run starts. */
#include "config.h" /* PDNN_HAVE_MPI */
#include "cli.h"
#include "idx.h"
#include "npz.h"
#include "profile.h"
#include "progress.h"
#include "run.h"
#include "precision.h"
#include "train_onnx.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef PDNN_HAVE_MPI
#include <mpi.h>
#endif

enum { N_VARS = 8, CLASSES = 10, MAX_TOWERS = 8 };

typedef struct train_opts {
    int epochs, batch, steps, train_limit, test_limit, seed, log_place, soft, profile, growth, mem_stats;
    const char *lr, *momentum, *optimizer, *layout, *device, *data, *save, *load, *param_device, *fraction;
    const char *distributed, *timeout, *seed_text;
    int ckpt_every, verbose, bucket_mb, no_overlap, json;
    const char *precision, *loss_scale; /* --precision fp32|fp16|bf16, --loss-scale N */
} train_opts;

/* --distributed mpi: this process's rank among size; rank 0 speaks. */
typedef struct dist {
    int on, rank, size;
    int agreed; /* every rank failed the same check: end without MPI_Abort */
} dist;
static dist D = {0, 0, 1, 0};

/* Rank 0 prints; the others only with --verbose, their lines prefixed. */
static int quiet(const train_opts *o) { return D.rank != 0 && !o->verbose; }

/* A number for --json: JSON has no NaN or infinity (a diverged loss). */
static void json_number(double v)
{
    if (isfinite(v))
        printf("%.6g", v);
    else
        printf("null");
}

/* towers > 1: tower t trains on rows [t tb, (t+1) tb) of each batch on
 * devs[t]; the variables and the averaged update live on the parameter
 * device. Evaluation runs tower 0's forward. */
typedef struct model {
    pdnn_graph *g;
    pdnn_node x, y, logits, loss, train_op, vars[N_VARS];
    int batch;  /* rows per tower (the whole batch without towers) */
    int global_batch; /* --batch-size: over all towers of all ranks */
    int towers;
    pdnn_node xs[MAX_TOWERS], ys[MAX_TOWERS], losses[MAX_TOWERS];
    int reduced; /* --precision fp16 or bf16: the logits are cast to float32 for the loss and evaluation */
} model;

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Epoch epoch's order: Fisher-Yates from a generator seeded by (seed, epoch). */
void epoch_order(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch)
{
    uint64_t s = seed * 0x2545F4914F6CDD1Dull + (uint64_t)epoch;
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(splitmix64(&s) % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* One tower: the network on dev over tb rows, reading the variables. */
static int tower(model *m, const char *dev, int t, pdnn_layout layout)
{
    pdnn_graph *g = m->g;
    const int64_t b = m->batch;
    pdnn_tensor_desc xd = {PDNN_FLOAT32, layout, {b, 1, 28, 28}, 0};
    pdnn_tensor_desc yd = {PDNN_INT32, PDNN_LAYOUT_X, {b, 1, 1, 1}, 0};
    char xn[32], yn[32]; /* tower 0's are "images" and "labels", the others' "tower_T/..." */
    snprintf(xn, sizeof xn, t ? "tower_%d/images" : "images", t);
    snprintf(yn, sizeof yn, t ? "tower_%d/labels" : "labels", t);
    if (pdnn_graph_placeholder(g, xn, dev, &xd, &m->xs[t]) || pdnn_graph_placeholder(g, yn, dev, &yd, &m->ys[t]))
        return cli_fail("building the graph");
    pdnn_node h = m->xs[t];
    for (int l = 0; l < 2; l++) {
        pdnn_conv2d_params cp;
        pdnn_conv2d_params_init(&cp);
        cp.pad_top = cp.pad_bottom = cp.pad_left = cp.pad_right = 2; /* SAME for 5x5 stride 1 */
        pdnn_pool2d_params pp;
        pdnn_pool2d_params_init(&pp);
        pdnn_node c, r;
        if (pdnn_graph_conv2d(g, NULL, dev, h, m->vars[2 * l], m->vars[2 * l + 1], &cp, &c) ||
            pdnn_graph_relu(g, NULL, dev, c, &r) || pdnn_graph_pool2d(g, NULL, dev, r, &pp, &h))
            return cli_fail("building the graph");
    }
    pdnn_node f, logits = 0;
    if (pdnn_graph_flatten(g, NULL, dev, h, &f))
        return cli_fail("building the graph");
    for (int l = 0; l < 2; l++) {
        pdnn_node mm, a;
        if (pdnn_graph_matmul(g, NULL, dev, f, m->vars[4 + 2 * l], 0, 0, &mm) ||
            pdnn_graph_bias_add(g, NULL, dev, mm, m->vars[5 + 2 * l], &a))
            return cli_fail("building the graph");
        if (l == 0 && pdnn_graph_relu(g, NULL, dev, a, &f))
            return cli_fail("building the graph");
        if (l == 1)
            logits = a;
    }
    if (m->reduced && pdnn_graph_cast(g, NULL, dev, logits, PDNN_FLOAT32, &logits))
        return cli_fail("building the graph");
    if (t == 0)
        m->logits = logits;
    if (pdnn_graph_softmax_cross_entropy(g, t ? NULL : "loss", dev, logits, m->ys[t], &m->losses[t]))
        return cli_fail("building the graph");
    return 0;
}

/* The variables (on the parameter device with towers, else on --device),
 * the towers, their gradients averaged on the parameter device (AddN, then
 * Mul by 1/towers: TensorFlow's multi-GPU CIFAR-10 pattern), one update. */
static int build(model *m, const train_opts *o, pdnn_layout layout, const pdnn_optimizer_params *op,
                 char devs[][128], const char *pdev)
{
    pdnn_graph *g = m->g;
    const char *vdev = m->towers > 1 || D.on ? pdev : o->device;
    uint64_t seed = (uint64_t)o->seed;
    int64_t cin = 1;
    for (int l = 0; l < 2; l++) {
        int64_t cout = l ? 64 : 32;
        pdnn_tensor_desc wd = {PDNN_FLOAT32, PDNN_OIHW, {cout, cin, 5, 5}, 0};
        pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {cout, 1, 1, 1}, 0};
        char wn[16], bn[16];
        snprintf(wn, sizeof wn, "conv%d_w", l + 1);
        snprintf(bn, sizeof bn, "conv%d_b", l + 1);
        if (pdnn_graph_variable(g, wn, vdev, &wd, PDNN_INIT_HE_NORMAL, seed + (uint64_t)(2 * l), NULL,
                                &m->vars[2 * l]) ||
            pdnn_graph_variable(g, bn, vdev, &bd, PDNN_INIT_ZEROS, 0, NULL, &m->vars[2 * l + 1]))
            return cli_fail("building the graph");
        cin = cout;
    }
    const int64_t fin[2] = {64 * 7 * 7, 1024}, fout[2] = {1024, CLASSES};
    const char *names[4] = {"fc1_w", "fc1_b", "fc2_w", "fc2_b"};
    for (int l = 0; l < 2; l++) {
        pdnn_tensor_desc wd = {PDNN_FLOAT32, PDNN_NCHW, {fin[l], fout[l], 1, 1}, 0};
        pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {fout[l], 1, 1, 1}, 0};
        if (pdnn_graph_variable(g, names[2 * l], vdev, &wd, l ? PDNN_INIT_GLOROT_UNIFORM : PDNN_INIT_HE_NORMAL,
                                seed + 4 + (uint64_t)l, NULL, &m->vars[4 + 2 * l]) ||
            pdnn_graph_variable(g, names[2 * l + 1], vdev, &bd, PDNN_INIT_ZEROS, 0, NULL, &m->vars[5 + 2 * l]))
            return cli_fail("building the graph");
    }
    pdnn_node grads[MAX_TOWERS][N_VARS] = {{0}}, avg[N_VARS];
    if (m->towers < 1 || m->towers > MAX_TOWERS)
        return cli_fail("building the graph (tower count)");
    for (int t = 0; t < m->towers; t++) {
        int rc = tower(m, m->towers > 1 ? devs[t] : o->device, t, layout);
        if (rc)
            return rc;
        if (pdnn_graph_gradients(g, m->losses[t], m->vars, N_VARS, grads[t]))
            return cli_fail("building the graph");
    }
    m->x = m->xs[0];
    m->y = m->ys[0];
    m->loss = m->losses[0];
    for (int k = 0; k < N_VARS; k++) {
        avg[k] = grads[0][k];
        if (m->towers == 1)
            continue;
        pdnn_node in[MAX_TOWERS], sum;
        for (int t = 0; t < m->towers; t++)
            in[t] = grads[t][k];
        char nm[96];
        snprintf(nm, sizeof nm, "average/%s", pdnn_graph_node_name(g, m->vars[k]));
        if (pdnn_graph_add_n(g, nm, pdev, in, m->towers, &sum))
            return cli_fail("building the graph");
        snprintf(nm, sizeof nm, "average/%s/mean", pdnn_graph_node_name(g, m->vars[k]));
        if (pdnn_graph_scale(g, nm, pdev, sum, 1.0f / (float)m->towers, &avg[k]))
            return cli_fail("building the graph");
    }
    /* Data-parallel over ranks: each averaged gradient's mean over the
     * ranks, on the parameter device (Horovod's DistributedOptimizer). The
     * session all-reduces them in buckets while the backward pass runs. */
    for (int k = 0; k < N_VARS && D.on; k++) {
        char nm[96];
        snprintf(nm, sizeof nm, "allreduce/%s", pdnn_graph_node_name(g, m->vars[k]));
        if (pdnn_graph_allreduce(g, nm, vdev, avg[k], &avg[k]))
            return cli_fail("building the graph");
    }
    if (pdnn_graph_apply_gradients(g, NULL, op, m->vars, avg, N_VARS, &m->train_op))
        return cli_fail("building the graph");
    return 0;
}

/* npz names allow [A-Za-z0-9_.-]: a slot "conv1_w/Momentum" is stored as
 * "conv1_w-Momentum". */
void ckpt_name(const char *node, char *buf, size_t len)
{
    snprintf(buf, len, "%s", node);
    for (char *p = buf; *p; p++)
        if (*p == '/')
            *p = '-';
}

static int is_variable(const pdnn_graph *g, pdnn_node n) { return strcmp(pdnn_graph_node_op(g, n), "VariableV2") == 0; }

/* train_state: seed (four 16-bit pieces, exact in float32), batch, training-set size. */
enum { STATE_LEN = 6 };

static void state_pack(float *st, uint64_t seed, int batch, int64_t train_n)
{
    for (int i = 0; i < 4; i++)
        st[i] = (float)((seed >> (16 * i)) & 0xFFFF);
    st[4] = (float)batch;
    st[5] = (float)train_n;
}

static int save_ckpt(pdnn_session *s, const model *m, const char *path, uint64_t seed, int64_t train_n)
{
    int nn = pdnn_graph_node_count(m->g), count = 0, rc = 0;
    npz_entry *e = calloc((size_t)nn + 1, sizeof *e);
    char(*names)[NPZ_MAX_NAME + 1] = calloc((size_t)nn + 1, sizeof *names);
    int64_t(*shapes)[4] = calloc((size_t)nn + 1, sizeof *shapes);
    float **bufs = calloc((size_t)nn + 1, sizeof *bufs);
    float st[STATE_LEN];
    if (!e || !names || !shapes || !bufs) {
        rc = cli_host_oom("train", "the checkpoint", 0);
        goto out;
    }
    for (pdnn_node n = 0; n < nn; n++) {
        if (!is_variable(m->g, n))
            continue;
        pdnn_tensor_desc d;
        pdnn_graph_node_desc(m->g, n, &d);
        int64_t bytes = pdnn_tensor_desc_bytes(&d);
        bufs[count] = malloc((size_t)bytes);
        if (!bufs[count]) {
            rc = cli_host_oom("train", "the checkpoint", (uint64_t)bytes);
            goto out;
        }
        if (pdnn_session_variable_read(s, n, bufs[count], (size_t)bytes)) {
            rc = cli_fail("reading a variable for the checkpoint");
            goto out;
        }
        ckpt_name(pdnn_graph_node_name(m->g, n), names[count], sizeof names[count]);
        memcpy(shapes[count], d.dims, 4 * sizeof d.dims[0]);
        e[count] = (npz_entry){names[count], 4, shapes[count], bufs[count]};
        count++;
    }
    state_pack(st, seed, m->global_batch, train_n);
    static const int64_t st_shape[1] = {STATE_LEN};
    e[count++] = (npz_entry){"train_state", 1, st_shape, st};
    char err[512];
    if (npz_write(path, count, e, err, sizeof err)) {
        fprintf(stderr, "polydnn train: %s\n", err);
        rc = EXIT_RUNTIME;
    }
out:
    if (bufs)
        for (int i = 0; i < nn + 1; i++)
            free(bufs[i]);
    free(bufs);
    free(shapes);
    free(names);
    free(e);
    return rc;
}

/* float32 counts exactly to 2^24: the most a checkpoint's step, batch size
 * or training-set size can be. */
#define CKPT_MAX_COUNT 16777216

/* A number read from a checkpoint that indexes or sizes something: it must
 * be an integer in lo..hi (so never NaN, infinite or negative), else the
 * error names the file, the field, the value and the allowed range (why
 * says where the range comes from). */
static int ckpt_count(const char *path, const char *field, float v, int64_t lo, int64_t hi, const char *why,
                      int64_t *out)
{
    if (!isfinite(v) || v != floorf(v) || (double)v < (double)lo || (double)v > (double)hi) {
        fprintf(stderr, "polydnn train: %s: %s is %.9g; expected an integer in %lld..%lld%s\n", path, field,
                (double)v, (long long)lo, (long long)hi, why);
        return EXIT_RUNTIME;
    }
    *out = (int64_t)v;
    return 0;
}

/* Checks the whole archive against the model before assigning anything:
 * every variable present with its shape, no extra arrays, the same batch
 * and training-set size, every count in range (the seed's pieces, and
 * global_step, which picks the epoch and the position in its order:
 * 0..max_step, the run's last step). The seed comes from the checkpoint. */
static int load_ckpt(pdnn_session *s, const model *m, const char *path, uint64_t *seed, int64_t train_n,
                     int64_t max_step, const char *max_why)
{
    npz_archive a = {0};
    char err[512];
    int rc = 0, nn = pdnn_graph_node_count(m->g), used = 0;
    /* What this model's checkpoint holds, so that the reader refuses any
     * other member, and any larger one, before inflating it (a zip bomb
     * reached 4.4 GB before being refused). */
    npz_expect *want = calloc((size_t)nn + 1, sizeof *want);
    char(*names)[NPZ_MAX_NAME + 1] = calloc((size_t)nn + 1, sizeof *names);
    int n_want = 0;
    if (!want || !names) {
        free(want);
        free(names);
        return cli_host_oom("train", "the checkpoint's names", 0);
    }
    want[n_want++] = (npz_expect){"train_state", STATE_LEN * sizeof(float)};
    for (pdnn_node n = 0; n < nn; n++) {
        if (!is_variable(m->g, n))
            continue;
        pdnn_tensor_desc d;
        pdnn_graph_node_desc(m->g, n, &d);
        ckpt_name(pdnn_graph_node_name(m->g, n), names[n_want], sizeof names[n_want]);
        want[n_want] = (npz_expect){names[n_want], (uint64_t)pdnn_tensor_desc_bytes(&d)};
        n_want++;
    }
    pdnn_status rd = npz_read_expect(path, want, n_want, "this model", &a, err, sizeof err);
    free(want);
    free(names);
    if (rd) {
        fprintf(stderr, "polydnn train: %s\n", err);
        return EXIT_RUNTIME;
    }
    const npz_member *st = npz_find(&a, "train_state");
    if (!st || st->array.ndim != 1 || st->array.shape[0] != STATE_LEN) {
        fprintf(stderr, "polydnn train: %s: not a polydnn train checkpoint (no train_state array of %d values)\n",
                path, STATE_LEN);
        rc = EXIT_RUNTIME;
        goto out;
    }
    used++;
    const float *sv = st->array.data;
    int64_t piece[4] = {0}, ck_batch = 0, ck_n = 0;
    for (int i = 0; i < 4 && rc == 0; i++) {
        char field[64];
        snprintf(field, sizeof field, "train_state[%d] (16 bits of the seed)", i);
        rc = ckpt_count(path, field, sv[i], 0, 0xFFFF, "", &piece[i]);
    }
    if (rc || (rc = ckpt_count(path, "train_state[4] (the batch size)", sv[4], 1, CKPT_MAX_COUNT, "", &ck_batch)) ||
        (rc = ckpt_count(path, "train_state[5] (the training-set size)", sv[5], 1, CKPT_MAX_COUNT, "", &ck_n)))
        goto out;
    if (ck_batch != m->global_batch || ck_n != train_n) {
        fprintf(stderr,
                "polydnn train: %s: saved with --batch-size %lld on %lld training images; this run has %d on %lld "
                "(resume with the same --batch-size and --train-limit)\n",
                path, (long long)ck_batch, (long long)ck_n, m->global_batch, (long long)train_n);
        rc = EXIT_RUNTIME;
        goto out;
    }
    for (pdnn_node n = 0; n < nn && rc == 0; n++) {
        if (!is_variable(m->g, n))
            continue;
        char name[NPZ_MAX_NAME + 1];
        ckpt_name(pdnn_graph_node_name(m->g, n), name, sizeof name);
        pdnn_tensor_desc d;
        pdnn_graph_node_desc(m->g, n, &d);
        const npz_member *mb = npz_find(&a, name);
        if (!mb) {
            fprintf(stderr, "polydnn train: %s: no array '%s' (a checkpoint of another model or optimizer?)\n",
                    path, name);
            rc = EXIT_RUNTIME;
        } else if (mb->array.ndim != 4 || memcmp(mb->array.shape, d.dims, 4 * sizeof d.dims[0]) != 0) {
            fprintf(stderr, "polydnn train: %s: array '%s' has the wrong shape (expected %lldx%lldx%lldx%lld)\n",
                    path, name, (long long)d.dims[0], (long long)d.dims[1], (long long)d.dims[2],
                    (long long)d.dims[3]);
            rc = EXIT_RUNTIME;
        }
        used++;
    }
    if (rc == 0 && used != a.count) {
        for (int i = 0; i < a.count; i++) {
            pdnn_node n;
            int known = strcmp(a.members[i].name, "train_state") == 0;
            for (n = 0; n < nn && !known; n++) {
                char name[NPZ_MAX_NAME + 1];
                ckpt_name(pdnn_graph_node_name(m->g, n), name, sizeof name);
                known = is_variable(m->g, n) && strcmp(name, a.members[i].name) == 0;
            }
            if (!known) {
                fprintf(stderr, "polydnn train: %s: array '%s' is not in this model\n", path, a.members[i].name);
                break;
            }
        }
        rc = EXIT_RUNTIME;
    }
    /* global_step (a variable, its shape checked above) indexes the data
     * order: checked before anything is assigned or read from it. */
    const npz_member *gm = npz_find(&a, "global_step");
    int64_t step = 0;
    if (rc == 0 && gm)
        rc = ckpt_count(path, "global_step", ((const float *)gm->array.data)[0], 0, max_step, max_why, &step);
    for (pdnn_node n = 0; n < nn && rc == 0; n++) {
        if (!is_variable(m->g, n))
            continue;
        char name[NPZ_MAX_NAME + 1];
        ckpt_name(pdnn_graph_node_name(m->g, n), name, sizeof name);
        const npz_member *mb = npz_find(&a, name);
        pdnn_tensor_desc d;
        pdnn_graph_node_desc(m->g, n, &d);
        if (pdnn_session_variable_assign(s, n, mb->array.data, (size_t)pdnn_tensor_desc_bytes(&d)))
            rc = cli_fail("restoring a variable");
    }
    if (rc == 0) {
        *seed = 0;
        for (int i = 0; i < 4; i++)
            *seed |= (uint64_t)piece[i] << (16 * i);
    }
out:
    npz_free(&a);
    return rc;
}

/* --device a,b,...: one tower per device (TensorFlow does not repeat a
 * device in its towers, nor do we: two towers on one device would only
 * split its work). */
int train_tower_devices(const char *list, char devs[][TRAIN_DEVICE_LEN])
{
    int towers = 0;
    for (const char *p = list;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || len >= TRAIN_DEVICE_LEN || towers == MAX_TOWERS) {
            fprintf(stderr, "polydnn train: --device '%s': %s\n", list,
                    len == 0 ? "an empty device name in the list"
                    : towers == MAX_TOWERS ? "more than 8 towers"
                                           : "a device name is too long");
            return -1;
        }
        memcpy(devs[towers], p, len);
        devs[towers][len] = '\0';
        for (int t = 0; t < towers; t++)
            if (strcmp(devs[t], devs[towers]) == 0) {
                fprintf(stderr, "polydnn train: --device '%s': %s is listed twice; give each tower its own "
                                "device\n", list, devs[t]);
                return -1;
            }
        towers++;
        if (!e)
            return towers;
        p = e + 1;
    }
}

/* Distributed: checks that every rank holds the same variables, bit for
 * bit (FNV-1a of their bytes; the smallest and largest over the ranks, through
 * the session so that a stopped rank times out), as Horovod's consistency
 * check; prints the verdict on rank 0, and each differing rank names itself. */
static int check_identical(pdnn_session *s, const model *m) { return train_check_identical(s, m->g); }

uint64_t train_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

int train_hash_range(pdnn_session *s, uint64_t h, uint64_t *lo, uint64_t *hi)
{
    /* Halves of 32 bits are exact in a double. */
    double l[2] = {(double)(h >> 32), (double)(h & 0xffffffffu)}, u[2] = {l[0], l[1]};
    pdnn_status st = pdnn_session_allreduce_values(s, l, 2, PDNN_REDUCE_MIN);
    if (st == PDNN_SUCCESS)
        st = pdnn_session_allreduce_values(s, u, 2, PDNN_REDUCE_MAX);
    *lo = (uint64_t)l[0] << 32 | (uint64_t)l[1];
    *hi = (uint64_t)u[0] << 32 | (uint64_t)u[1];
    return st != PDNN_SUCCESS;
}

int train_check_identical(pdnn_session *s, const pdnn_graph *g)
{
    uint64_t h = TRAIN_FNV_BASIS;
    for (pdnn_node n = 0; n < pdnn_graph_node_count(g); n++) {
        if (!is_variable(g, n))
            continue;
        pdnn_tensor_desc d;
        pdnn_graph_node_desc(g, n, &d);
        const int64_t bytes = pdnn_tensor_desc_bytes(&d);
        unsigned char *b = malloc((size_t)bytes);
        if (!b)
            return cli_host_oom("train", "a variable's copy", (uint64_t)bytes);
        if (pdnn_session_variable_read(s, n, (float *)b, (size_t)bytes)) {
            free(b);
            return cli_fail("reading a variable");
        }
        h = train_fnv(h, b, (size_t)bytes);
        free(b);
    }
    uint64_t hmin, hmax;
    if (train_hash_range(s, h, &hmin, &hmax))
        return cli_fail("comparing the variables' hashes over the ranks");
    if (hmin != hmax) {
        if (h != hmin)
            fprintf(stderr, "polydnn train: rank %d's variables differ from another rank's (hash %016llx, the "
                            "lowest is %016llx)\n", D.rank, (unsigned long long)h, (unsigned long long)hmin);
        else if (D.rank == 0)
            fprintf(stderr, "polydnn train: the ranks' variables differ (hashes from %016llx to %016llx)\n",
                    (unsigned long long)hmin, (unsigned long long)hmax);
        return EXIT_RUNTIME;
    }
    if (D.rank == 0)
        printf("variables identical on all %d ranks (hash %016llx)\n", D.size, (unsigned long long)h);
    return 0;
}

/* Copies rows idx[0..count) of the dataset into the feed buffers (zeros past count). */
static void gather(const idx_dataset *d, const int64_t *idx, int64_t count, int batch, float *x, int32_t *y)
{
    const int64_t px = 28 * 28;
    for (int i = 0; i < batch; i++) {
        if (i < count) {
            memcpy(x + i * px, d->images.data + idx[i] * px, sizeof(float) * (size_t)px);
            y[i] = d->labels.data[idx[i]];
        } else {
            memset(x + i * px, 0, sizeof(float) * (size_t)px);
            y[i] = 0;
        }
    }
}

static int evaluate(pdnn_session *s, const model *m, const idx_dataset *test, int64_t n, pdnn_tensor *xt,
                    float *xb, int32_t *yb, double *acc)
{
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)m->batch), correct = 0;
    if (!idx)
        return cli_host_oom("train", "the test batch", 0);
    /* Distributed: rank r evaluates every size-th batch from the r-th; the
     * counts are summed over the ranks. */
    for (int64_t start = (int64_t)D.rank * m->batch; start < n; start += (int64_t)D.size * m->batch) {
        int64_t cnt = n - start < m->batch ? n - start : m->batch;
        for (int64_t i = 0; i < cnt; i++)
            idx[i] = start + i;
        gather(test, idx, cnt, m->batch, xb, yb);
        pdnn_tensor *lt = NULL;
        float *lv = NULL;
        if (pdnn_tensor_write(xt, xb, sizeof(float) * (size_t)m->batch * 784) ||
            pdnn_session_run(s, &m->x, &xt, 1, &m->logits, 1, &lt)) {
            free(idx);
            return cli_fail("evaluating the test set");
        }
        pdnn_status st = cli_tensor_read(lt, &lv);
        pdnn_tensor_release(lt);
        if (st) {
            free(idx);
            return cli_fail("reading the logits");
        }
        for (int64_t i = 0; i < cnt; i++) {
            int best = 0;
            for (int k = 1; k < CLASSES; k++)
                if (lv[i * CLASSES + k] > lv[i * CLASSES + best])
                    best = k;
            correct += best == test->labels.data[start + i];
        }
        free(lv);
    }
    free(idx);
    double sum = (double)correct; /* exact below 2^53 images */
    if (D.on && pdnn_session_allreduce_values(s, &sum, 1, PDNN_REDUCE_SUM))
        return cli_fail("summing the test counts over the ranks");
    *acc = n ? sum / (double)n : 0.0;
    return 0;
}

/* --memory-stats: the allocator statistics of each device the session
 * placed a node on, once each. */
static void print_memory(pdnn_session *s, const pdnn_graph *g)
{
    pdnn_device *seen[32];
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
        }
    }
}

/* --save's path, checked before the first step: a missing directory or an
 * empty path was reported only when the first checkpoint was written,
 * after the training it was meant to keep. */
static int check_save_path(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!path[0] || (slash && !slash[1])) {
        fprintf(stderr, "polydnn train: --save '%s': the path names no file\n", path);
        return EXIT_USAGE;
    }
    char dir[4096];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    struct stat sb;
    errno = 0;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "polydnn train: --save %s: %s %s\n", path, dir,
                errno == ENOENT ? "does not exist" : errno ? strerror(errno) : "is not a directory");
        return EXIT_USAGE;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "polydnn train: --save %s: cannot write in %s: %s\n", path, dir, strerror(errno));
        return EXIT_USAGE;
    }
    return 0;
}

static int parse_float(const char *flag, const char *s, float *out)
{
    char *end;
    double v = s ? strtod(s, &end) : 0;
    if (!s || end == s || *end || !isfinite(v) || v < 0) {
        fprintf(stderr, "polydnn train: --%s: expected a non-negative number, got '%s'\n", flag, s ? s : "");
        return EXIT_USAGE;
    }
    *out = (float)v;
    return 0;
}

#ifdef PDNN_HAVE_MPI
/* One value every rank must share: its flag, and what it is on this rank. */
typedef struct shared_flag {
    const char *flag;
    int64_t v;
} shared_flag;

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Before the first collective, the ranks compare what decides the size and
 * number of their collectives (and the data each rank takes): ranks started
 * with another --batch-size wrote past each other's buffers (MPI_ERR_TRUNCATE,
 * then a stack overflow of 19 KB). Every rank learns every rank's values,
 * so all of them refuse together and rank 0 names the flag; the exchange
 * waits at most the collective timeout. Returns 0, or EXIT_USAGE on every
 * rank (D.agreed: no MPI_Abort needed), or EXIT_RUNTIME if the exchange
 * failed. */
static int ranks_agree(const shared_flag *f, int n, double timeout)
{
    int64_t *mine = malloc(sizeof *mine * (size_t)n), *all = malloc(sizeof *all * (size_t)n * (size_t)D.size);
    if (!mine || !all) {
        free(mine);
        free(all);
        return cli_host_oom("train", "the ranks' flags", 0);
    }
    for (int i = 0; i < n; i++)
        mine[i] = f[i].v;
    MPI_Request rq = MPI_REQUEST_NULL;
    int rc = MPI_Iallgather(mine, n, MPI_INT64_T, all, n, MPI_INT64_T, MPI_COMM_WORLD, &rq), done = 0;
    double deadline = MPI_Wtime() + (timeout > 0 ? timeout : 120);
    while (rc == MPI_SUCCESS && !done && MPI_Wtime() < deadline) {
        rc = MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
        if (!done) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    free(mine);
    if (rc != MPI_SUCCESS || !done) {
        free(all);
        fprintf(stderr, "polydnn train: rank %d: comparing the ranks' flags %s\n", D.rank,
                rc != MPI_SUCCESS ? "failed" : "timed out (a rank never got there)");
        return EXIT_RUNTIME;
    }
    int bad = 0;
    for (int r = 1; r < D.size && !bad; r++)
        for (int i = 0; i < n && !bad; i++)
            if (all[(size_t)r * (size_t)n + (size_t)i] != all[i]) {
                bad = 1;
                if (D.rank == 0)
                    fprintf(stderr,
                            "polydnn train: the ranks disagree on %s: rank 0 has %lld, rank %d has %lld (start every "
                            "rank with the same flags)\n",
                            f[i].flag, (long long)all[i], r, (long long)all[(size_t)r * (size_t)n + (size_t)i]);
            }
    free(all);
    if (bad)
        D.agreed = 1;
    return bad ? EXIT_USAGE : 0;
}

int train_ranks_agree(const char *const *flags, const int64_t *values, int n, double timeout)
{
    shared_flag f[32];
    if (n > 32)
        return cli_fail("comparing the ranks' flags (too many)");
    for (int i = 0; i < n; i++)
        f[i] = (shared_flag){flags[i], values[i]};
    return ranks_agree(f, n, timeout);
}
#else
int train_ranks_agree(const char *const *flags, const int64_t *values, int n, double timeout)
{
    (void)flags, (void)values, (void)n, (void)timeout;
    return 0;
}
#endif

static int train(const train_opts *o)
{
    pdnn_layout layout = PDNN_NCHW;
    if (o->layout) {
        int l = pdnn_layout_parse(o->layout);
        if (l != PDNN_NCHW && l != PDNN_NHWC) {
            fprintf(stderr, "polydnn train: --layout: expected NCHW or NHWC, got '%s'\n", o->layout);
            return EXIT_USAGE;
        }
        layout = (pdnn_layout)l;
    }
    pdnn_optimizer_params op;
    if (!o->optimizer || strcmp(o->optimizer, "sgd") == 0) {
        pdnn_optimizer_params_init(&op, PDNN_OPTIMIZER_SGD);
        op.learning_rate = 0.05f;
        op.momentum = 0.9f;
    } else if (strcmp(o->optimizer, "adam") == 0) {
        pdnn_optimizer_params_init(&op, PDNN_OPTIMIZER_ADAM);
    } else {
        fprintf(stderr, "polydnn train: --optimizer: expected sgd or adam, got '%s'\n", o->optimizer);
        return EXIT_USAGE;
    }
    if ((o->lr && parse_float("lr", o->lr, &op.learning_rate)) ||
        (o->momentum && parse_float("momentum", o->momentum, &op.momentum)))
        return EXIT_USAGE;
    pdnn_dtype compute;
    float scale0;
    if (cli_precision("train", o->precision, &compute) || cli_loss_scale("train", o->loss_scale, compute, &scale0))
        return EXIT_USAGE;
    pdnn_context_options co;
    pdnn_context_options_init(&co);
    co.allow_growth = o->growth;
    if (o->fraction) {
        float f = 0;
        if (parse_float("memory-fraction", o->fraction, &f))
            return EXIT_USAGE;
        if (!(f > 0 && f <= 1)) {
            fprintf(stderr, "polydnn train: --memory-fraction '%s' must be a number in (0, 1]\n", o->fraction);
            return EXIT_USAGE;
        }
        co.memory_fraction = f;
    }
    char devs[MAX_TOWERS][TRAIN_DEVICE_LEN];
    int towers = 1;
    if (o->device && strchr(o->device, ',')) {
        if ((towers = train_tower_devices(o->device, devs)) < 0)
            return EXIT_USAGE;
    } else if (o->param_device && !D.on) {
        fprintf(stderr, "polydnn train: --param-device needs towers (a comma list in --device) or --distributed\n");
        return EXIT_USAGE;
    }
    /* The global batch splits over the ranks, then each rank's over its
     * towers; the rest of the data set past the last whole batch is left
     * out of the epoch (it is reshuffled in, next epoch). */
    if (o->batch % (towers * D.size)) {
        fprintf(stderr, "polydnn train: --batch-size %d does not split evenly over %d towers x %d ranks\n",
                o->batch, towers, D.size);
        return EXIT_USAGE;
    }
    if (o->ckpt_every > 0 && !o->save) {
        fprintf(stderr, "polydnn train: --checkpoint-every needs --save (the checkpoint's path)\n");
        return EXIT_USAGE;
    }
    if (o->save && D.rank == 0 && check_save_path(o->save))
        return EXIT_USAGE;
    float timeout = 0;
    if (o->timeout && parse_float("collective-timeout", o->timeout, &timeout))
        return EXIT_USAGE;
    const char *pdev = o->param_device ? o->param_device : "/cpu:0";

    char err[512];
    idx_dataset trn = {0}, tst = {0};
    if (idx_load(o->data, "train", CLASSES, 28, 28, layout, &trn, err, sizeof err) ||
        idx_load(o->data, "t10k", CLASSES, 28, 28, layout, &tst, err, sizeof err)) {
        fprintf(stderr, "polydnn train: %s\n", err);
        idx_dataset_free(&trn);
        idx_dataset_free(&tst);
        return EXIT_RUNTIME;
    }
    int64_t train_n = trn.images.count, test_n = tst.images.count;
    if (o->train_limit > 0 && o->train_limit < train_n)
        train_n = o->train_limit;
    if (o->test_limit > 0 && o->test_limit < test_n)
        test_n = o->test_limit;
    int rc = 0;
#ifdef PDNN_HAVE_MPI
    if (D.on) {
        /* Floats by their bits: lr and momentum must be equal, not close. */
        const shared_flag sf[] = {
            {"--batch-size", o->batch},
            {"--train-limit (the training images used)", train_n},
            {"--epochs", o->epochs},
            {"--steps", o->steps},
            {"--seed", o->seed},
            {"--optimizer", (int64_t)op.kind},
            {"--lr (its float32 bits)", float_bits(op.learning_rate)},
            {"--momentum (its float32 bits)", float_bits(op.momentum)},
            {"--bucket-mb", o->bucket_mb},
            {"--no-overlap", o->no_overlap},
        };
        if ((rc = ranks_agree(sf, (int)(sizeof sf / sizeof sf[0]), timeout))) {
            idx_dataset_free(&trn);
            idx_dataset_free(&tst);
            return rc;
        }
    }
#endif
    model m = {0};
    m.towers = towers;
    m.batch = o->batch / towers / D.size;
    m.global_batch = o->batch;
    const int rank_rows = o->batch / D.size; /* this rank's rows of each global batch */
    pdnn_session *s = NULL;
    pdnn_tensor *xt = NULL, *lt = NULL, *txt[MAX_TOWERS] = {0}, *tyt[MAX_TOWERS] = {0};
    float *xb = malloc(sizeof(float) * (size_t)o->batch * 784);
    int32_t *yb = malloc(sizeof(int32_t) * (size_t)o->batch);
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)train_n);
    int64_t spe = train_n / o->batch;
    if (spe < 1) {
        fprintf(stderr, "polydnn train: %lld training images make no batch of %d\n", (long long)train_n, o->batch);
        rc = EXIT_USAGE;
        goto out;
    }
    if (!xb || !yb || !perm) {
        rc = cli_host_oom("train", "the batches", 0);
        goto out;
    }
    if (pdnn_graph_create(&m.g)) {
        rc = cli_fail("creating the graph");
        goto out;
    }
    m.reduced = compute != PDNN_FLOAT32;
    if ((rc = cli_graph_precision(m.g, compute, scale0)) || (rc = build(&m, o, layout, &op, devs, pdev)))
        goto out;
    pdnn_session_config cfg;
    pdnn_session_config_init(&cfg);
    cfg.options = co;
    cfg.log_device_placement = o->log_place;
    cfg.allow_soft_placement = o->soft;
    cfg.profile = o->profile;
    cfg.distributed = D.on ? PDNN_DISTRIBUTED_MPI : PDNN_DISTRIBUTED_NONE;
    cfg.allreduce_bucket_bytes = (int64_t)o->bucket_mb << 20;
    cfg.allreduce_overlap = !o->no_overlap;
    cfg.collective_timeout = timeout;
    if (pdnn_session_create(m.g, &cfg, &s)) {
        rc = cli_fail("creating the session");
        goto out;
    }
    pdnn_device *host = NULL;
    pdnn_tensor_desc xd = {PDNN_FLOAT32, layout, {m.batch, 1, 28, 28}, 0};
    pdnn_tensor_desc yd = {PDNN_INT32, PDNN_LAYOUT_X, {m.batch, 1, 1, 1}, 0};
    if (pdnn_device_find(pdnn_session_context(s), "/cpu:0", &host)) {
        rc = cli_fail("finding the host");
        goto out;
    }
    for (int t = 0; t < towers; t++)
        if (pdnn_tensor_create(host, &xd, &txt[t]) || pdnn_tensor_create(host, &yd, &tyt[t])) {
            rc = cli_fail("creating the feed tensors");
            goto out;
        }
    xt = txt[0]; /* evaluation feeds tower 0 */
    uint64_t seed = (uint64_t)o->seed;
    /* The last step this run reaches: --epochs of spe steps each. */
    const int64_t end_step = (int64_t)o->epochs * spe;
    char end_why[160];
    if (end_step <= CKPT_MAX_COUNT)
        snprintf(end_why, sizeof end_why, " (this run's %d epochs of %lld steps; raise --epochs to go further)",
                 o->epochs, (long long)spe);
    else
        snprintf(end_why, sizeof end_why, " (float32 counts steps exactly to 2^24)");
    const int64_t max_step = end_step < CKPT_MAX_COUNT ? end_step : CKPT_MAX_COUNT;
    if (o->load && (rc = load_ckpt(s, &m, o->load, &seed, train_n, max_step, end_why)))
        goto out;
    /* Every rank starts from rank 0's variables (initial or loaded). */
    if (D.on && pdnn_session_broadcast_variables(s, 0)) {
        rc = cli_fail("broadcasting the variables from rank 0");
        goto out;
    }
    pdnn_node gs_node;
    float gsf = 0;
    if (pdnn_graph_find(m.g, "global_step", &gs_node) ||
        pdnn_session_variable_read(s, gs_node, &gsf, sizeof gsf)) {
        rc = cli_fail("reading global_step");
        goto out;
    }
    int64_t gs = (int64_t)gsf, done = 0;
    if (o->load && gs >= end_step && !quiet(o))
        fprintf(stderr, "polydnn train: %s: global_step %lld: this run's %d epochs are done; nothing to train (raise "
                        "--epochs to go further)\n", o->load, (long long)gs, o->epochs);
    ls_history lsh; /* --precision fp16, --loss-scale: the scale's changes */
    ls_history_init(&lsh, m.g, s, gs);
    progress pr;
    progress_init(&pr, quiet(o) ? NULL : stderr, -1);
    char who[32] = ""; /* the other ranks' lines (--verbose) say whose they are */
    if (D.on && D.rank)
        snprintf(who, sizeof who, "[rank %d] ", D.rank);
    pdnn_node fetch[MAX_TOWERS + 1], feeds[2 * MAX_TOWERS];
    pdnn_tensor *fv[2 * MAX_TOWERS];
    for (int t = 0; t < towers; t++) {
        fetch[t] = m.losses[t];
        feeds[2 * t] = m.xs[t];
        feeds[2 * t + 1] = m.ys[t];
        fv[2 * t] = txt[t];
        fv[2 * t + 1] = tyt[t];
    }
    fetch[towers] = m.train_op;
    int stopped = 0;
    /* Training throughput over the steps after the first (which builds
     * kernels), evaluation excluded, as bench/train_reference.py counts. */
    double train_sec = 0, t_step = 0;
    int64_t timed_images = 0;
    for (int64_t epoch = gs / spe; epoch < o->epochs && !stopped; epoch++) {
        if (o->steps > 0 && done >= o->steps)
            break;
        epoch_order(perm, train_n, seed, epoch);
        progress_epoch(&pr, (int)epoch + 1, o->epochs, spe, progress_now());
        for (int64_t step = gs % spe; step < spe; step++) {
            if (o->steps > 0 && done >= o->steps) {
                stopped = 1;
                break;
            }
            t_step = progress_now();
            gather(&trn, perm + step * o->batch + (int64_t)D.rank * rank_rows, rank_rows, rank_rows, xb, yb);
            pdnn_tensor *out[MAX_TOWERS + 1] = {NULL};
            float loss = 0;
            pdnn_status st = PDNN_SUCCESS;
            for (int t = 0; t < towers && st == PDNN_SUCCESS; t++) {
                st = pdnn_tensor_write(txt[t], xb + (size_t)t * (size_t)m.batch * 784,
                                       sizeof(float) * (size_t)m.batch * 784);
                if (st == PDNN_SUCCESS)
                    st = pdnn_tensor_write(tyt[t], yb + (size_t)t * (size_t)m.batch, sizeof(int32_t) * (size_t)m.batch);
            }
            if (st || pdnn_session_run(s, feeds, fv, 2 * towers, fetch, towers + 1, out)) {
                rc = cli_fail("running a training step");
                goto out;
            }
            for (int t = 0; t < towers; t++) { /* the batch's loss: the towers' mean */
                float lt_v = NAN;
                if (st == PDNN_SUCCESS)
                    st = pdnn_tensor_read(out[t], &lt_v, sizeof lt_v);
                loss += lt_v / (float)towers;
                pdnn_tensor_release(out[t]);
            }
            pdnn_tensor_release(out[towers]);
            if (st) {
                rc = cli_fail("reading the loss");
                goto out;
            }
            if (D.on) { /* the global batch's loss: the ranks' mean */
                double l = (double)loss;
                if (pdnn_session_allreduce_values(s, &l, 1, PDNN_REDUCE_SUM)) {
                    rc = cli_fail("summing the loss over the ranks");
                    goto out;
                }
                loss = (float)(l / D.size);
            }
            if (o->mem_stats && done == 0) {
                printf("memory after the first step:\n");
                print_memory(s, m.g);
            }
            if (done > 0) {
                train_sec += progress_now() - t_step;
                timed_images += o->batch;
            }
            gs++;
            done++;
            if (!quiet(o) && lsh.n) {
                progress_clear(&pr);
                ls_history_step(&lsh, s, gs, stdout, o->json);
            }
            if (gs % 10 == 0 && !quiet(o)) {
                /* Off the progress line first when both share a terminal. */
                progress_clear(&pr);
                if (o->json) {
                    printf("{\"event\": \"step\", \"rank\": %d, \"step\": %lld, \"loss\": ", D.rank, (long long)gs);
                    json_number(loss);
                    printf("}\n");
                } else {
                    printf("%sstep %lld loss %.4f\n", who, (long long)gs, loss);
                }
                fflush(stdout);
            }
            progress_step(&pr, o->batch, loss, progress_now());
            /* Rank 0 alone writes checkpoints (the ranks' variables are equal). */
            if (o->ckpt_every > 0 && gs % o->ckpt_every == 0 && D.rank == 0 &&
                (rc = save_ckpt(s, &m, o->save, seed, train_n)))
                goto out;
        }
        if (!stopped)
            progress_end_epoch(&pr, progress_now());
        double acc = 0;
        if ((rc = evaluate(s, &m, &tst, test_n, xt, xb, yb, &acc)))
            goto out;
        if (!quiet(o) && o->json)
            printf("{\"event\": \"epoch\", \"rank\": %d, \"epoch\": %lld, \"step\": %lld, \"test_accuracy\": %.6f, "
                   "\"test_images\": %lld}\n",
                   D.rank, (long long)epoch + 1, (long long)gs, acc, (long long)test_n);
        else if (!quiet(o))
            printf("%sepoch %lld step %lld: test accuracy %.4f (%lld images)\n", who, (long long)epoch + 1,
                   (long long)gs, acc, (long long)test_n);
        fflush(stdout);
        if (o->save && D.rank == 0 && (rc = save_ckpt(s, &m, o->save, seed, train_n)))
            goto out;
    }
    if (!quiet(o))
        ls_history_print(&lsh, stdout, o->json);
    if (o->mem_stats) {
        printf("memory at the end:\n");
        print_memory(s, m.g);
    }
    if (done > 1 && !quiet(o) && o->json)
        printf("{\"event\": \"trained\", \"rank\": %d, \"steps\": %lld, \"images_per_s\": %.3f, \"timed_steps\": %lld}\n",
               D.rank, (long long)done, (double)timed_images / train_sec, (long long)done - 1);
    else if (done > 1 && !quiet(o))
        printf("%strained %lld steps: %.1f images/s (the %lld after the first, evaluation excluded)\n", who,
               (long long)done, (double)timed_images / train_sec, (long long)done - 1);
    if (D.on && (rc = check_identical(s, &m)))
        goto out;
    if (D.on && !quiet(o)) {
        pdnn_allreduce_stats as;
        pdnn_session_allreduce_stats(s, &as);
        printf("%sall-reduce over %d ranks: %lld buckets, %.1f MB, %.3f s communicating, %.3f s waited "
               "(%.0f%% hidden behind the backward pass)\n",
               who, D.size, (long long)as.buckets, (double)as.bytes / 1e6, as.comm_seconds, as.wait_seconds,
               as.comm_seconds > 0 ? 100.0 * (1.0 - as.wait_seconds / as.comm_seconds) : 0.0);
    }
    if (o->profile)
        rc = cli_print_profile(stdout, m.g, s, 30);
out:
    pdnn_tensor_release(lt);
    for (int t = 0; t < MAX_TOWERS; t++) {
        pdnn_tensor_release(txt[t]);
        pdnn_tensor_release(tyt[t]);
    }
    pdnn_session_destroy(s);
    pdnn_graph_destroy(m.g);
    free(xb);
    free(yb);
    free(perm);
    idx_dataset_free(&trn);
    idx_dataset_free(&tst);
    return rc;
}

int cmd_train(int argc, char **argv)
{
    train_opts o = {.epochs = 3, .batch = 64, .seed = CLI_SEED_DEFAULT};
    train_onnx_opts x = {0}; /* --model's own flags (tools/train_onnx.c) */
    const cli_opt opts[] = {
        {0, "epochs", OPT_INT, &o.epochs, 1, "epochs (default 3)"},
        {'n', "batch", OPT_INT, &o.batch, 1, "batch size (default 64)"},
        /* The name every other command uses is --batch; this one's old name stays. */
        {0, "batch-size", OPT_INT, &o.batch, 1, "the same as --batch (its older name here)"},
        {0, "lr", OPT_STR, &o.lr, 0, "learning rate (SGD 0.05, Adam 0.001)"},
        {0, "momentum", OPT_STR, &o.momentum, 0, "SGD momentum (default 0.9)"},
        {0, "optimizer", OPT_STR, &o.optimizer, 0, "sgd or adam (default sgd)"},
        {0, "layout", OPT_STR, &o.layout, 0, "activation layout NCHW or NHWC (default NCHW)"},
        {'d', "device", OPT_STR, &o.device, 0,
         "device for every node (default: the placer's choice), or a comma list: one tower per device"},
        {0, "param-device", OPT_STR, &o.param_device, 0,
         "with towers: the device of the variables and the averaged update (default /cpu:0)"},
        {0, "allow-growth", OPT_FLAG, &o.growth, 0, "grow device memory on demand"},
        {0, "memory-fraction", OPT_STR, &o.fraction, 0, "use at most this fraction of each accelerator's memory"},
        {0, "memory-stats", OPT_FLAG, &o.mem_stats, 0, "print memory statistics after the first step and at the end"},
        {0, "log-device-placement", OPT_FLAG, &o.log_place, 0, "print each node's device"},
        {0, "allow-soft-placement", OPT_FLAG, &o.soft, 0, "fall back to a device that exists"},
        {0, "seed", OPT_STR, &o.seed_text, 0,
         "N or time: the initialisation and shuffling seed (default 1; time: from the clock, printed; not with "
         "--distributed)"},
        {0, "profile", OPT_FLAG, &o.profile, 0, "time every node (synchronizing after each) and print the times"},
        {0, "steps", OPT_INT, &o.steps, 1, "stop after N more steps (a resumed run counts from where it resumes)"},
        {0, "train-limit", OPT_INT, &o.train_limit, 1, "use the first N training images"},
        {0, "test-limit", OPT_INT, &o.test_limit, 1, "use the first N test images"},
        {0, "data", OPT_STR, &o.data, 0, "MNIST-style IDX directory (default " IDX_DEFAULT_DIR ")"},
        {0, "save", OPT_STR, &o.save, 0, "write a .npz checkpoint at each epoch end and at the end"},
        {0, "load", OPT_STR, &o.load, 0, "resume from a .npz checkpoint"},
        {0, "checkpoint-every", OPT_INT, &o.ckpt_every, 1, "also write the --save checkpoint every N steps"},
        {0, "distributed", OPT_STR, &o.distributed, 0,
         "mpi: data-parallel over the ranks of mpirun (each rank its share of every batch)"},
        {0, "bucket-mb", OPT_INT, &o.bucket_mb, 1, "with --distributed: gradient all-reduce bucket size (default 4)"},
        {0, "no-overlap", OPT_FLAG, &o.no_overlap, 0,
         "with --distributed: all-reduce after the backward pass, not during it (to measure the overlap)"},
        {0, "collective-timeout", OPT_STR, &o.timeout, 0,
         "with --distributed: seconds to wait for the other ranks before failing (default 120)"},
        {'v', "verbose", OPT_FLAG, &o.verbose, 0, "with --distributed: every rank prints, not only rank 0"},
        {0, "precision", OPT_STR, &o.precision, 0,
         "fp32 (default), fp16 or bf16: Keras's mixed precision policy (float32 variables, float16 or bfloat16 "
         "compute, the loss in float32; docs/precision.md)"},
        {0, "loss-scale", OPT_STR, &o.loss_scale, 0,
         "the initial dynamic loss scale (default 32768 with fp16, none otherwise); halved on inf/NaN (the step "
         "skipped), doubled after 2000 finite steps"},
        {0, "json", OPT_FLAG, &o.json, 0,
         "print the step, epoch and closing lines as JSON objects, one per line (other output stays text)"},
        {0, "model", OPT_STR, &x.model, 0, "train this ONNX model instead of Deep MNIST (docs/training.md)"},
        {0, "export", OPT_STR, &x.export_path, 0, "with --model: write the trained model as ONNX"},
        {0, "npz", OPT_STR, &x.npz, 0, "with --model: train on .npz arrays x (N,C,H,W) and y (N) instead of --data"},
        {0, "fit", OPT_STR, &x.fit, 0, "with --model: pad (default) or resize images to the model's input"},
        {0, "images", OPT_STR, &x.images, 0,
         "with --model: train on a folder of PNG/JPEG images, one subfolder per class (torchvision's ImageFolder)"},
        {0, "test-images", OPT_STR, &x.test_images, 0, "with --images: evaluate on this folder (same class names)"},
        {0, "resize", OPT_INT, &x.resize, 1,
         "with --images: scale the shorter side to N, then cut the input's H x W from the centre"},
        {0, "stretch", OPT_FLAG, &x.stretch, 0, "with --images: resize straight to the input's H x W"},
        {0, "skip-bad-images", OPT_FLAG, &x.skip_bad, 0,
         "with --images: skip (and name) files that do not decode, rather than stop"},
        {0, "scale", OPT_STR, &x.scale, 0, "with --images: multiplies each 0..255 value first (default 1/255)"},
        {0, "mean", OPT_STR, &x.mean, 0, "with --images: R,G,B or one value, subtracted (default 0)"},
        {0, "std", OPT_STR, &x.std, 0, "with --images: R,G,B or one value, divided by (default 1)"},
        {0, "loss", OPT_STR, &x.loss, 0, "with --model: cross-entropy (default) or mse"},
        {0, "weight-decay", OPT_STR, &x.weight_decay, 0, "with --model: L2 (sgd, adam) or decoupled (adamw)"},
        {0, "nesterov", OPT_FLAG, &x.nesterov, 0, "with --model: Nesterov momentum (sgd)"},
        {0, "val-split", OPT_STR, &x.val_split, 0, "with --model: hold out this fraction of the training set"},
        {0, "lr-schedule", OPT_STR, &x.schedule, 0, "with --model: constant (default), step or cosine"},
        {0, "warmup", OPT_INT, &x.warmup, 1, "with --model: linear learning-rate warm-up over N steps"},
        {0, "eval-every", OPT_INT, &x.eval_every, 1, "with --model: evaluate every N steps (and at epoch ends)"},
        {0, "early-stop", OPT_INT, &x.early_stop, 1, "with --model: stop after N evaluations without improvement"},
        {0, "log", OPT_STR, &x.log, 0, "with --model: write a training log (.csv, else JSON lines)"},
        {0, "plot", OPT_STR, &x.plot, 0, "with --model: draw the loss and accuracy curves as an SVG"},
    };
    int r = cli_parse("train", argc, argv, opts, (int)(sizeof opts / sizeof opts[0]),
                      "train the Deep MNIST CNN on MNIST-style data");
    if (r)
        return r < 0 ? 0 : r;
    if ((r = cli_seed("train", o.seed_text, &o.seed)))
        return r;
    if (o.seed_text && strcmp(o.seed_text, "time") == 0) {
        /* Each rank would read its own clock: the ranks agree on numbers only. */
        if (o.distributed) {
            fprintf(stderr, "polydnn train: --seed time with --distributed: every rank would draw its own seed; "
                            "give a number\n");
            return EXIT_USAGE;
        }
        printf("seed %d (--seed time)\n", o.seed);
    }
    if (x.model) {
        x.epochs = o.epochs, x.batch = o.batch, x.steps = o.steps, x.train_limit = o.train_limit;
        x.test_limit = o.test_limit, x.seed = o.seed, x.ckpt_every = o.ckpt_every, x.json = o.json;
        x.profile = o.profile;
        x.lr = o.lr, x.momentum = o.momentum, x.optimizer = o.optimizer, x.device = o.device, x.data = o.data;
        x.save = o.save, x.load = o.load, x.layout = o.layout, x.param_device = o.param_device;
        x.precision = o.precision, x.loss_scale = o.loss_scale;
        x.bucket_mb = o.bucket_mb, x.no_overlap = o.no_overlap;
        if (o.timeout && parse_float("collective-timeout", o.timeout, &x.timeout))
            return EXIT_USAGE;
        if (!o.distributed)
            return train_onnx(&x);
    }
    if (!o.distributed)
        return train(&o);
    if (strcmp(o.distributed, "mpi") != 0) {
        fprintf(stderr, "polydnn train: --distributed: expected mpi, got '%s'\n", o.distributed);
        return EXIT_USAGE;
    }
#ifndef PDNN_HAVE_MPI
    fprintf(stderr, "polydnn train: --distributed mpi: this polydnn was built without MPI (configure --with-mpi; "
                    "Debian: apt-get install libopenmpi-dev openmpi-bin)\n");
    return EXIT_USAGE;
#else
    /* SERIALIZED: the session's all-reduce thread and this one take turns. */
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "polydnn train: MPI_Init_thread failed\n");
        return EXIT_RUNTIME;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    D.on = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &D.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &D.size);
    int rc;
    if (x.model) {
        x.dist = 1, x.rank = D.rank, x.size = D.size;
        if (x.batch % D.size) { /* every rank sees it: no MPI_Abort */
            if (D.rank == 0)
                fprintf(stderr, "polydnn train: --batch-size %d is not a multiple of the %d ranks\n", x.batch, D.size);
            D.agreed = 1;
            rc = EXIT_USAGE;
        } else {
            rc = train_onnx(&x);
        }
    } else {
        rc = train(&o);
    }
    if (rc && !D.agreed) {
        /* Every other rank would wait for this one: end them all now. */
        fprintf(stderr, "polydnn train: rank %d of %d failed (exit %d); ending every rank (MPI_Abort)\n", D.rank,
                D.size, rc);
        fflush(NULL);
        MPI_Abort(MPI_COMM_WORLD, rc);
    }
    MPI_Finalize();
    return rc;
#endif
}
