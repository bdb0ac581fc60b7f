/* The graph's nodes, shared by graph.c, placer.c and session.c. */
#ifndef POLYDNN_GRAPH_H
#define POLYDNN_GRAPH_H

#include "core/context.h"

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
    PDNN__OP_RESHAPE,
    PDNN__OP_VARIABLE,         /* data: the initial value; the session keeps the value */
    PDNN__OP_XENT,             /* softmax cross-entropy loss: inputs logits, labels */
    PDNN__OP_XENT_GRAD,        /* its dlogits: inputs logits, labels */
    PDNN__OP_G_CONV_BWD_DATA,  /* inputs dy, w; conv */
    PDNN__OP_G_CONV_BWD_FILTER, /* inputs x, dy; conv */
    PDNN__OP_G_CONV_BWD_BIAS,  /* input dy */
    PDNN__OP_G_POOL_BWD,       /* inputs x, dy; pool */
    PDNN__OP_G_RELU_BWD,         /* inputs y, dy */
    PDNN__OP_APPLY,            /* inputs var, grad, slots; updates var in place; no value */
    PDNN__OP_TRAIN,            /* inputs the APPLY nodes; then global_step += 1; no value */
    PDNN__OP_MUL,              /* x * alpha (pdnn_scale) */
    PDNN__OP_ACT,              /* pdnn_activation_forward: act, alpha, beta */
    PDNN__OP_CONCAT,           /* pdnn_concat along axis */
    PDNN__OP_TRANSPOSE,        /* pdnn_transform into out.layout */
    PDNN__OP_ALLREDUCE,        /* mean over the ranks (session.c with comm.c) */
    PDNN__OP_ELTWISE,          /* pdnn_binary: inputs a, b (broadcast); binop */
    PDNN__OP_BN,               /* batch norm inference: x, gamma, beta, mean, var; alpha the epsilon */
    PDNN__OP_PADDING,          /* pdnn_pad: pads, pad_mode, alpha the value */
    /* Training an imported model (io/onnx_train.c, graph/train_ops.c): */
    PDNN__OP_BN_TRAIN,         /* x, gamma, beta, mean, var, flag: batch norm in training mode while the flag
                                  variable is 1 (running stats updated in place), else inference; alpha the
                                  epsilon, beta the momentum (pdnn_batch_norm_params') */
    PDNN__OP_G_BN_BWD,         /* x, dy, gamma, stats: dx (axis 0) or dgamma (axis 1); axis 2: x, gamma: the batch
                                  stats {2C}, mean then 1/sqrt(var + eps), that both read */
    PDNN__OP_DROPOUT,          /* x, flag, step: x * mask while the flag is 1, else x; alpha the ratio, seed;
                                  the mask depends on (seed, step, element) only, so the gradient (the same
                                  op applied to dy) uses the forward's mask */
    PDNN__OP_G_CLIP_BWD,       /* y, dy: dy where alpha < y < beta, else 0 (Clip's and ReLU6's gradient) */
    PDNN__OP_NDMATH,           /* graph_nd_math.c: nd_kind, perm, axes_mask, nd_flag, alpha the epsilon */
    PDNN__OP_MOVE,             /* graph_move.c: move_kind, move_n, move (pdnn_slice, ...) */
    /* Mixed precision (graph_precision.c): */
    PDNN__OP_CAST_NODE,             /* pdnn_cast into out.dtype */
    PDNN__OP_LOSS_SCALE        /* axis 0: x * scale (inputs x, scale); axis 1: the update (inputs the scaled
                                  gradients, scale, good steps): the scale and its counter updated in place,
                                  the value 1/scale before it, or 0 where a gradient is not finite */
} pdnn__node_op;

/* A MOVE node's op, and the most int64 arguments it keeps. */
typedef enum pdnn__move_kind {
    PDNN__MOVE_SLICE,  /* move: n starts, n ends, n axes, n steps (move_n = n) */
    PDNN__MOVE_GATHER, /* axis; move: the move_n indices */
    PDNN__MOVE_EXPAND, /* out the shape */
    PDNN__MOVE_WHERE,  /* inputs mask, a, b */
    PDNN__MOVE_PAD,    /* move: 2 x rank pads; pad_mode, alpha the value */
    PDNN__MOVE_RESIZE  /* move: mode, coord, nearest, has scales, then rank scales' float bits */
} pdnn__move_kind;
#define PDNN__MOVE_ARGS 64

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
    float *data;        /* constants, variables' initial values */
    pdnn_optimizer_params optim; /* APPLY */
    int step;           /* APPLY, TRAIN: the global_step variable */
    int colocate;       /* 1 + the node whose device this one takes when it names none; 0: none */
    float alpha;        /* MUL, ACT */
    float beta;         /* ACT */
    pdnn_activation act; /* ACT */
    int axis;           /* CONCAT */
    int residual;       /* CONV2D: the last input is z, added before the relu */
    pdnn_binary_op binop; /* BINARY */
    int bcast;          /* BINARY: 1 a repeats along some axis, 2 b does (both: 3) */
    int64_t pads[4];    /* PAD: top, left, bottom, right */
    pdnn_pad_mode pad_mode; /* PAD */
    uint64_t seed;      /* DROPOUT */
    int trainable;      /* VARIABLE: a weight of a trainable import (pdnn_graph_add_training trains it) */
    int lr_var;         /* APPLY: 1 + the "learning_rate" variable read at each step; 0: optim's */
    int nd_kind;        /* NDMATH: pdnn__nd_kind */
    int perm[PDNN_MAX_RANK]; /* NDMATH transpose */
    unsigned axes_mask; /* NDMATH reduce: the reduced axes */
    int nd_flag;        /* NDMATH: softmax log; reduce pdnn_reduction; transpose, layer norm unused */
    pdnn__move_kind move_kind; /* MOVE */
    int move_n;
    int64_t move[PDNN__MOVE_ARGS];
    int cast_of[2];     /* 1 + this node's value cast to float16, bfloat16 under a policy (one per value); 0 */
    int cast32;         /* 1 + this node's value cast to float32 under a policy; 0: none */
    int gate;           /* APPLY: 1 + the LOSS_SCALE update node (its last input): 0 skips the update */
    int ls_interval;    /* LOSS_SCALE update: clean steps before the scale doubles */
    int f32_fallback;   /* a session's copy: its device has no reduced path for it (session_run.c's run_lowp) */
} pdnn__node;

struct pdnn_graph {
    pdnn__node *nodes;
    int n, cap;
    int train_allreduce; /* a trainable import's pdnn_onnx_options.distributed: add_training all-reduces */
    struct pdnn__batch_plan *batch_plan; /* graph_batch.c: how an import's nodes follow the batch; NULL: none */
    pdnn_dtype compute;  /* pdnn_graph_set_precision: the builders' compute dtype (float32: no policy) */
    int ls_scale;        /* 1 + the loss_scale variable (pdnn_graph_set_loss_scale); 0: none */
    int ls_good;         /* 1 + its good-steps counter */
    int ls_interval;
};

/* Ops that produce no value (fetching them runs them and gives NULL). */
static inline int pdnn__no_value(const pdnn__node *n) { return n->op == PDNN__OP_APPLY || n->op == PDNN__OP_TRAIN; }

/* The N-d math nodes (graph_nd_math.c): which op an NDMATH node runs,
 * its type name, whether dev runs it, its run, its backward. */
typedef enum pdnn__nd_kind {
    PDNN__ND_TRANSPOSE,
    PDNN__ND_SOFTMAX,
    PDNN__ND_LAYER_NORM,
    PDNN__ND_REDUCE,
    PDNN__ND_LAYER_NORM_BWD /* x, dy, scale: nd_flag 0 dx, 1 dscale, 2 dbias; axis, alpha the forward's */
} pdnn__nd_kind;
const char *pdnn__nd_math_op_type(const pdnn__node *n);
int pdnn__nd_math_has_kernel(const pdnn_device *dev, const pdnn__node *n);
pdnn_status pdnn__nd_math_run_node(const pdnn__node *n, const pdnn_tensor *const *in, pdnn_tensor *y);
/* graph.c's checks around a builder, for the builders in other files:
 * begin validates and zeroes nd, finish appends it (see graph.c). */
pdnn_status pdnn__graph_begin(pdnn_graph *g, const char *fn, const char *name, const char *device,
                              pdnn__node_op op, const pdnn_node *inputs, int n_inputs, pdnn_node *out,
                              pdnn__node *nd);
pdnn_status pdnn__graph_finish(pdnn_graph *g, pdnn__node *nd, const pdnn_node *inputs, int n_inputs,
                               pdnn_node *out);
/* placer.c: whether some algorithm of dev's backend plans call. */
int pdnn__some_algorithm_plans(const pdnn_device *dev, pdnn__op_call *call);
/* A MOVE node's op type name ("Slice", "Gather", ...), graph_move.c, and
 * its run (session_run.c) and whether dev runs it (placer.c). */
const char *pdnn__move_type(const pdnn__node *n);
pdnn_status pdnn__move_run(const pdnn__node *n, const pdnn_tensor *const *in, pdnn_tensor *y);
/* A two-element call of the node's kind that a backend's plan judges as
 * it would the node's (tbl holds its table). */
void pdnn__move_probe(const pdnn__node *n, pdnn__op_call *call, int64_t tbl[2]);

/* TensorFlow's op type name ("Conv2D", "MaxPool", ...). */
const char *pdnn__op_type(const pdnn__node *n);

/* Appends a copy of proto (its data copied, inputs replaced) named name,
 * or name_1, name_2... if taken. */
pdnn_status pdnn__graph_add(pdnn_graph *g, const char *name, const pdnn__node *proto, const pdnn_node *inputs,
                            int n_inputs, pdnn_node *out);

/* pdnn_graph_constant without the copy: the node takes data (malloc'd,
 * desc's bytes), or frees it on failure. */
pdnn_status pdnn__graph_constant_adopt(pdnn_graph *g, const char *device, const pdnn_tensor_desc *desc, float *data,
                                       pdnn_node *out);

/* Removes nodes n0.. (added by a call that failed), leaving g as it was. */
void pdnn__graph_truncate(pdnn_graph *g, int n0);

/* graph_precision.c: the builders' policy (casts of nd's inputs where
 * g->compute asks, before nd is appended; its inputs rewritten), the
 * dtype of nd's output and the one-dtype check; a Cast's or a loss
 * scale node's run; the gradient seed times the loss scale. */
pdnn_status pdnn__graph_autocast(pdnn_graph *g, pdnn__node *nd, int *inputs, int n_inputs);
pdnn_status pdnn__graph_dtypes(const pdnn_graph *g, pdnn__node *nd);
/* grads times 1/scale into unscaled, gate the update node (-1 and the
 * grads themselves without a loss scale). */
pdnn_status pdnn__graph_unscale(pdnn_graph *g, const char *base, const pdnn_node *grads, int n, pdnn_node *unscaled,
                                pdnn_node *gate);
pdnn_status pdnn__loss_scale_run(const pdnn__node *nd, const pdnn_tensor *const *in, pdnn_tensor *y);
pdnn_status pdnn__graph_scale_seed(pdnn_graph *g, const char *prefix, pdnn_node seed, pdnn_node *out);

/* Runs a node that training an imported model adds (train_ops.c). */
pdnn_status pdnn__run_train_node(const pdnn__node *nd, const pdnn_tensor *const *in, pdnn_tensor *y);

/* A copy of g's nodes and their inputs without the constants' and
 * variables' data (NULL): session.c keeps its own, and puts the data on
 * the devices from g while it is created. */
pdnn_status pdnn__graph_clone(const pdnn_graph *g, pdnn_graph **out);

/* Chooses a device for every node (placer.c). placed[i] receives node i's
 * device; soft placements and errors are worded there. */
pdnn_status pdnn__place(const pdnn_graph *g, pdnn_context *ctx, int allow_soft,
                        void (*log)(void *user, const char *line), void *log_user, pdnn_device **placed);

/* Whether dev's backend has a kernel for node n's op. */
int pdnn__has_kernel(const pdnn_device *dev, const pdnn__node *n);

/* "/job:localhost/replica:0/task:0/device:GPU:0" for a device. */
const char *pdnn__full_device_name(const pdnn_device *d, char *buf, size_t len);
/* placer_auto.c: 1 where the host (/cpu:0, oneDNN) goes ahead of PoCL in
 * the default order for g on a CPU-only machine; why (may be NULL) gets
 * the placement log's line, "" where the rule does not apply. */
int pdnn__place_host_first(const pdnn_graph *g, const pdnn_context *ctx, char *why, size_t len);

#endif
