/* --precision and --loss-scale (train, run): Keras's mixed precision
 * policy and TensorFlow's dynamic loss scale, and the scale's history
 * for the training note. */
#ifndef POLYDNN_TOOLS_PRECISION_H
#define POLYDNN_TOOLS_PRECISION_H

#include "polydnn.h"

#include <stdint.h>
#include <stdio.h>

/* fp32|fp16|bf16 (or float32, float16, bfloat16; NULL: fp32) into *out;
 * EXIT_USAGE naming the flag otherwise. */
int cli_precision(const char *cmd, const char *text, pdnn_dtype *out);

/* --loss-scale N (at least 1) into *scale; without it 32768 (TensorFlow's
 * initial scale) for float16, 0 (none) otherwise. */
int cli_loss_scale(const char *cmd, const char *text, pdnn_dtype compute, float *scale);

/* The policy and the loss scale (when scale > 0) on g: 0, else an error
 * printed. */
int cli_graph_precision(pdnn_graph *g, pdnn_dtype compute, float scale);

/* The loss scale's values and the steps they began at. */
typedef struct ls_history {
    pdnn_node var; /* "loss_scale"; -1: none */
    int n, dropped;
    int64_t step[32];
    float scale[32];
} ls_history;

void ls_history_init(ls_history *h, const pdnn_graph *g, pdnn_session *s, int64_t step);
/* After a step: a change is recorded and printed (a line, or a JSON
 * "loss_scale" event). */
void ls_history_step(ls_history *h, pdnn_session *s, int64_t step, FILE *out, int json);
/* "loss scale: 32768 from step 0, 16384 from step 12, ..." (nothing
 * without a loss scale). */
void ls_history_print(const ls_history *h, FILE *out, int json);

#endif
