/* polydnn train --model: training a user's ONNX model (train_onnx.c). */
#ifndef POLYDNN_TRAIN_ONNX_H
#define POLYDNN_TRAIN_ONNX_H

#include <stdint.h>

typedef struct train_onnx_opts {
    /* the flags Deep MNIST shares (cmd_train.c fills them) */
    int epochs, batch, steps, train_limit, test_limit, seed, ckpt_every, json;
    const char *lr, *momentum, *optimizer, *device, *data, *save, *load, *layout;
    /* --model's own */
    const char *model, *export_path, *log, *plot, *schedule, *val_split, *npz, *loss, *weight_decay, *fit;
    int warmup, eval_every, early_stop, nesterov;
    /* --images DIR (torchvision's ImageFolder) and its preparation, as run's */
    const char *images, *test_images, *scale, *mean, *std;
    int resize, stretch, skip_bad;
} train_onnx_opts;

int train_onnx(const train_onnx_opts *o);

/* cmd_train.c's, shared: epoch e's order (Fisher-Yates seeded by (seed,
 * e)) and a variable's checkpoint member name ('/' as '-'). */
void epoch_order(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch);
void ckpt_name(const char *node, char *buf, size_t len);

#endif
