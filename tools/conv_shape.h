/* One convolution's shape from flags (polydnn conv, bench conv, tune
 * conv) or from a layer table (bench, tune): the flags, their option
 * table, and the shape they or a layer table entry describe. */
#ifndef POLYDNN_CLI_CONV_SHAPE_H
#define POLYDNN_CLI_CONV_SHAPE_H

#include "cli.h"
#include "layers.h"

#include <stddef.h>
#include <stdint.h>

/* A convolution: the batch, the input, the filter and the geometry (its
 * algorithm field is left AUTO: the command sets it). */
typedef struct conv_shape {
    int64_t n, c, h, w, k, r, s;
    pdnn_conv2d_params p;
} conv_shape;

/* polydnn conv's shape flags; -1 (NULL) unless given, so that a command
 * running a layer set can reject them. */
typedef struct shape_flags {
    int c, h, w, k, y, x, p, q, u, v, l, j, g;
    const char *padding;
} shape_flags;

#define SHAPE_FLAGS_UNSET {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, NULL}

enum { N_SHAPE_OPTS = 14 };

/* The option table entries for f's flags (-c -H -W -k -y -x -p -q
 * --padding -u -v -l -j -g), into out. */
void shape_opts(shape_flags *f, cli_opt out[N_SHAPE_OPTS]);

/* Whether any shape flag was given. */
int shape_flags_given(const shape_flags *f);

/* The shape from the flags, with polydnn conv's defaults. 0, or
 * EXIT_USAGE after printing what was wrong (cmd names the command). */
int conv_from_flags(const char *cmd, const shape_flags *f, int64_t batch, conv_shape *cs);

/* A layer table entry as a shape. */
void conv_from_layer(const layer_conv *L, int64_t batch, conv_shape *cs);

/* Whether two shapes are the same convolution. */
int conv_shape_equal(const conv_shape *a, const conv_shape *b);

/* The descriptors of cs in layout as bench and tune run it: an NCHW
 * input gets an OIHW filter, NHWC an OHWI one (each layout's default). */
void conv_shape_descs(const conv_shape *cs, pdnn_layout layout, pdnn_tensor_desc *xd, pdnn_tensor_desc *wd);

/* --algo help for bench and tune: a heading with name and layout, then
 * cli_algo_print's table for cs on dev. 0 or EXIT_RUNTIME. */
int conv_shape_algo_help(pdnn_device *dev, const char *name, const conv_shape *cs, pdnn_layout layout);

/* A short name, e.g. "c8 8x8 k8 3x3 /2,2 pad 1,1,1,1". */
void conv_shape_name(char *buf, size_t len, const conv_shape *cs);

#endif
