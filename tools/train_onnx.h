/* polydnn train --model: training a user's ONNX model (train_onnx.c). */
#ifndef POLYDNN_TRAIN_ONNX_H
#define POLYDNN_TRAIN_ONNX_H

#include <stddef.h>
#include <stdint.h>

typedef struct train_onnx_opts {
    /* the flags Deep MNIST shares (cmd_train.c fills them) */
    int epochs, batch, steps, train_limit, test_limit, seed, ckpt_every, json, profile;
    const char *lr, *momentum, *optimizer, *device, *data, *save, *load, *layout, *param_device;
    const char *precision, *loss_scale; /* --precision, --loss-scale (tools/precision.h) */
    /* --model's own */
    const char *model, *export_path, *log, *plot, *schedule, *val_split, *npz, *loss, *weight_decay, *fit;
    int warmup, eval_every, early_stop, nesterov;
    /* --images DIR (torchvision's ImageFolder) and its preparation, as run's */
    const char *images, *test_images, *scale, *mean, *std;
    int resize, stretch, skip_bad;
    /* --distributed mpi (cmd_train.c initialized MPI): this rank of size;
     * --bucket-mb, --no-overlap, --collective-timeout as Deep MNIST's */
    int dist, rank, size, bucket_mb, no_overlap;
    float timeout;
} train_onnx_opts;

int train_onnx(const train_onnx_opts *o);

/* cmd_train.c's, shared: epoch e's order (Fisher-Yates seeded by (seed,
 * e)) and a variable's checkpoint member name ('/' as '-'). */
void epoch_order(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch);
void ckpt_name(const char *node, char *buf, size_t len);

/* cmd_train.c's, for --distributed mpi (train_onnx.c calls no MPI itself):
 * whether every rank has the same values of these flags (0; else
 * EXIT_USAGE on every rank, rank 0 naming the flag, and no MPI_Abort
 * follows), and whether every variable of g is the same on every rank
 * (0, rank 0 saying so; else EXIT_RUNTIME naming the ranks). */
int train_ranks_agree(const char *const *flags, const int64_t *values, int n, double timeout);
struct pdnn_session;
struct pdnn_graph;
int train_check_identical(struct pdnn_session *s, const struct pdnn_graph *g);
/* FNV-1a of n bytes at p, continuing h (start from TRAIN_FNV_BASIS), and
 * the lowest and highest of every rank's h (equal: the ranks agree; 0,
 * or nonzero when the collective failed). */
/* --device's comma list split into devs (at most 8, each named once):
 * the count, or -1 after saying what is wrong. */
#define TRAIN_DEVICE_LEN 128
int train_tower_devices(const char *list, char devs[][TRAIN_DEVICE_LEN]);
#define TRAIN_FNV_BASIS 0xcbf29ce484222325ull
uint64_t train_fnv(uint64_t h, const void *p, size_t n);
int train_hash_range(struct pdnn_session *s, uint64_t h, uint64_t *lo, uint64_t *hi);

#endif
