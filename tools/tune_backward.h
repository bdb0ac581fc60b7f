/* polydnn tune --backward (tools/tune_backward.c). */
#ifndef POLYDNN_CLI_TUNE_BACKWARD_H
#define POLYDNN_CLI_TUNE_BACKWARD_H

#include "conv_shape.h"

#include <stdio.h>

/* The table's heading, on out. */
void tune_backward_heading(FILE *out);

/* Tunes cs's backward data and filter at batch in layout on dev_tune (a
 * context in search or force mode) and times them against dev_off
 * (tuning off), a row each on out. 0, or EXIT_RUNTIME after saying why. */
int tune_backward_row(pdnn_device *dev_off, pdnn_device *dev_tune, const char *name, const conv_shape *cs,
                      pdnn_layout layout, int batch, FILE *out);

#endif
