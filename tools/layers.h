/* The layer sets that `polydnn bench` and bench/bench_conv run: every
 * distinct convolution and the max pools of a network, as one shared
 * table so the tool and the benchmark program measure the same shapes. */
#ifndef POLYDNN_CLI_LAYERS_H
#define POLYDNN_CLI_LAYERS_H

/* A square convolution of a square input: C x HW x HW in, K out, an RS x
 * RS filter, the same stride and padding on both axes, and groups (C for
 * a depthwise convolution). */
typedef struct layer_conv {
    const char *name;
    int c, hw, k, rs, stride, pad, groups;
} layer_conv;

/* A square max pool of C x HW x HW. */
typedef struct layer_pool {
    const char *name;
    int c, hw, window, stride, pad;
} layer_pool;

typedef struct layer_set {
    const char *name;  /* what `polydnn bench NAME` takes */
    const char *title; /* for table headings */
    const layer_conv *convs;
    int n_convs;
    const layer_pool *pools;
    int n_pools;
} layer_set;

extern const layer_set layer_set_resnet50;
extern const layer_set layer_set_vgg16;
extern const layer_set layer_set_mobilenet;

/* The set named name (case-sensitive), or NULL. */
const layer_set *layer_set_find(const char *name);

/* The names layer_set_find knows, e.g. "resnet50, vgg16, mobilenet". */
const char *layer_set_names(void);

#endif
