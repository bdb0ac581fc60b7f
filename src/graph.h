/* The graph's nodes, shared by graph.c, placer.c and session.c. */
#ifndef POLYDNN_GRAPH_H
#define POLYDNN_GRAPH_H

#include "context.h"

typedef enum pdnn__node_op {
    PDNN__OP_PLACEHOLDER,
    PDNN__OP_CONST,
    PDNN__OP_CONV2D,
    PDNN__OP_POOL2D,
    PDNN__OP_MATMUL,
    PDNN__OP_ADD,
    PDNN__OP_ADD_N,
    PDNN__OP_BIAS_ADD,
    PDNN__OP_RELU,
    PDNN__OP_SOFTMAX,
    PDNN__OP_RESHAPE
} pdnn__node_op;

typedef struct pdnn__node {
    char name[128];
    char device[128];   /* requested, "" if none */
    pdnn__node_op op;
    int *inputs;        /* node indices; -1 for an absent optional input */
    int n_inputs;
    pdnn_tensor_desc out;
    pdnn_conv2d_params conv;
    pdnn_pool2d_params pool;
    int trans_a, trans_b;
    float *data;        /* constants */
} pdnn__node;

struct pdnn_graph {
    pdnn__node *nodes;
    int n, cap;
};

/* TensorFlow's op type name ("Conv2D", "MaxPool", ...). */
const char *pdnn__op_type(const pdnn__node *n);

/* Deep copy (session.c keeps its own). */
pdnn_status pdnn__graph_clone(const pdnn_graph *g, pdnn_graph **out);

/* Chooses a device for every node (placer.c). placed[i] receives node i's
 * device; soft placements and errors are worded there. */
pdnn_status pdnn__place(const pdnn_graph *g, pdnn_context *ctx, int allow_soft,
                        void (*log)(void *user, const char *line), void *log_user, pdnn_device **placed);

/* Whether dev's backend has a kernel for node n's op. */
int pdnn__has_kernel(const pdnn_device *dev, const pdnn__node *n);

/* "/job:localhost/replica:0/task:0/device:GPU:0" for a device. */
const char *pdnn__full_device_name(const pdnn_device *d, char *buf, size_t len);

#endif
