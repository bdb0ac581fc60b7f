/* What the ONNX importer's files share: the importer and its values, and
 * the functions one file calls in another (pdnn__onnx_*, hidden). Built
 * only with ONNX import (Makefile.am's HAVE_ONNX); onnx_import.c alone is
 * always built, for the entry point that refuses without it.
 *
 *   onnx_import.c     pdnn_graph_import_onnx; the graph's inputs, outputs
 *   onnx_model.c      the file, the protobuf nesting check, tensors
 *   onnx_values.c     values, inputs and outputs of a node, attributes
 *   onnx_conv_pool.c  Conv with what it absorbs (fusion), pooling
 *   onnx_ops.c        the other ops, and import_node's dispatch
 *   onnx_move.c       ConvTranspose, data movement, constant folding
 *   onnx_einsum.c     Einsum (two operands) as a batched MatMul */
#ifndef POLYDNN_ONNX_INTERNAL_H
#define POLYDNN_ONNX_INTERNAL_H

#include "backend.h"
#include "graph/graph.h"
#include "polydnn.h"

#include "onnx.pb-c.h"

#include <stdint.h>
#include <string.h>

/* pdnn__error's status as a constant the static analyzer can follow. */
#define FAIL(st, ...) (pdnn__error((st), __VA_ARGS__), (st))

/* Models over this size are refused before reading (protobuf's own limit). */
#define MAX_MODEL_BYTES ((size_t)INT32_MAX)

/* ONNX TensorProto.DataType values used here. */
enum { ONNX_FLOAT = 1, ONNX_INT64 = 7, ONNX_BOOL = 9, ONNX_FLOAT16 = 10, ONNX_BFLOAT16 = 16 };

/* One ONNX value: an activation computed by a graph node (node >= 0), or a
 * constant held on the host (data or i64) until an op uses it. Its graph
 * node holds ranks 2 and 4 as NCHW ({N, C, 1, 1} for a matrix, the
 * activations' layout for images), any other rank (0 to 8) as PDNN_ND of
 * the ONNX shape (pdnn__onnx_value_desc). */
typedef struct value {
    const char *name;   /* points into the parsed model */
    int node;           /* graph node, -1 for a host constant */
    int rank;
    int64_t dims[8];
    float *data;        /* float constant (owned unless alias) */
    int64_t *i64;       /* int64 constant (owned unless alias) */
    int64_t count;
    int alias;          /* data/i64 belong to another value or to the parsed model */
} value;

typedef struct importer {
    Onnx__ModelProto *model;
    Onnx__GraphProto *g;
    pdnn_graph *graph;
    value *vals;
    int n_vals, cap_vals;
    const char *dir;       /* external data directory, NULL: refused */
    const char *device;    /* every node's requested device */
    int fuse;              /* Conv + Relu into one node */
    pdnn_layout layout;    /* of the activations inside: NCHW or NHWC */
    int64_t opset;
    unsigned char *absorbed; /* per ONNX node: folded into an earlier one */
    struct onnx_train *train; /* a trainable import's state (onnx_train.c); NULL: inference */
    pdnn_dtype reduced;    /* the model's float16 or bfloat16 (onnx_precision.c); float32: none seen */
    int precision_given;   /* options.precision set the graph's policy */
} importer;

/* onnx_precision.c: the pdnn dtype of an ONNX float16 or bfloat16 type
 * (float32 for any other); a reduced tensor or input seen (the graph
 * takes its policy); a reduced tensor's values widened into *out
 * (malloc'd); output *y cast to float32 where the policy made it reduced. */
pdnn_dtype pdnn__onnx_reduced_type(int64_t onnx_type);
pdnn_status pdnn__onnx_saw_reduced(importer *im, pdnn_dtype t, const char *what);
pdnn_status pdnn__onnx_widen(const Onnx__TensorProto *t, const char *name, int64_t count, float **out);
pdnn_status pdnn__onnx_output_float32(pdnn_graph *g, const char *name, const char *device, int *y);

/* The deepest nesting of messages pdnn__onnx_nesting_ok accepts. */
#define MAX_DEPTH 64

/* A node's name for messages. */
static inline const char *node_name(const Onnx__NodeProto *n)
{
    return n->name && n->name[0] ? n->name : "(unnamed)";
}

/* Attribute name of n (NULL: absent); attr_int and attr_float give def
 * when it is absent or of another type. */
static inline const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

static inline int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_i ? a->i : def;
}

static inline float attr_float(const Onnx__NodeProto *n, const char *name, float def)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_f ? a->f : def;
}

/* onnx_values.c */
pdnn_status pdnn__onnx_node_error(pdnn_status st, const Onnx__NodeProto *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
value *pdnn__onnx_find_value(importer *im, const char *name);
pdnn_status pdnn__onnx_add_value(importer *im, const value *v);
pdnn_status pdnn__onnx_attr_ints(const Onnx__NodeProto *n, const char *name, size_t want, int64_t *out);
const char *pdnn__onnx_attr_str(const Onnx__NodeProto *n, const char *name, char *buf, size_t len);
pdnn_status pdnn__onnx_check_name(const Onnx__NodeProto *n, const char *name);
/* n's input count and the types of the attributes the importer reads,
 * checked for every node before any is imported (a Conv reads the
 * attributes of the nodes it absorbs). */
pdnn_status pdnn__onnx_check_node(const Onnx__NodeProto *n);
value *pdnn__onnx_act_input(importer *im, const Onnx__NodeProto *n, size_t i, pdnn_status *st);
value *pdnn__onnx_const_input(importer *im, const Onnx__NodeProto *n, size_t i);
/* pdnn__onnx_act_input for the image ops (Conv, pooling, BatchNormalization,
 * Pad of H and W), which take NCHW or NHWC activations: a rank-4 value
 * held as ND comes back as *tmp, a copy of it whose node is its view in
 * the importer's layout (the value itself keeps its ND node). */
value *pdnn__onnx_image_input(importer *im, const Onnx__NodeProto *n, size_t i, value *tmp, pdnn_status *st);
pdnn_status pdnn__onnx_set_output(importer *im, const Onnx__NodeProto *n, const char *name, int id, int rank);
void pdnn__onnx_relayout(const float *src, const int64_t d[4], pdnn_layout layout, float *dst);
void pdnn__onnx_relayout_back(const float *src, const int64_t d[4], pdnn_layout layout, float *dst);
/* The descriptor a value of v's rank and dims has as a node (NCHW or ND). */
void pdnn__onnx_value_desc(const value *v, pdnn_tensor_desc *d);

/* onnx_model.c */
pdnn_status pdnn__onnx_tensor_value(importer *im, const Onnx__TensorProto *t, const char *name);
pdnn_status pdnn__onnx_read_file(const char *path, uint8_t **buf, size_t *len);
int pdnn__onnx_nesting_ok(const ProtobufCMessageDescriptor *desc, const uint8_t *p, const uint8_t *end, int depth);

/* onnx_conv_pool.c */
/* The unique reader of value name among nodes after index from, or -1
 * (none, several, or a graph output). */
int pdnn__onnx_sole_reader(importer *im, size_t from, const char *name);
pdnn_status pdnn__onnx_import_conv(importer *im, size_t idx, const Onnx__NodeProto *n);
pdnn_status pdnn__onnx_import_pool(importer *im, const Onnx__NodeProto *n, int max, int global);
pdnn_status pdnn__onnx_import_pad(importer *im, size_t idx, const Onnx__NodeProto *n);
/* kind: "Mean", "Max" or "Sum" */
pdnn_status pdnn__onnx_import_reduce(importer *im, const Onnx__NodeProto *n, const char *kind);
/* onnx_ops.c: a reduction over any axes (mask) of x, kind "Mean", "Sum",
 * "Max", "Min" (pdnn__onnx_import_reduce's others). */
pdnn_status pdnn__onnx_import_reduce_nd(importer *im, const Onnx__NodeProto *n, const value *x, unsigned mask,
                                        int keep, const char *kind);

/* onnx_train.c: a trainable import (pdnn_onnx_options.trainable) */
pdnn_status pdnn__onnx_train_begin(importer *im, const pdnn_onnx_options *opts);
void pdnn__onnx_train_end(importer *im);
/* Makes constant node of value v (a weight or bias) a trainable variable
 * named after its initializer, where v is one and scale is 1. */
pdnn_status pdnn__onnx_train_param(importer *im, int node, const value *v, float scale);
/* The same for an initializer that another op reads as an operand (an
 * Add's, a MatMul's, LayerNormalization's): one of 2 or more elements
 * (a scalar operand is a constant: a scale, an epsilon). */
pdnn_status pdnn__onnx_train_weight(importer *im, int node, const value *v);
/* Whether a trainable import keeps node n as a node rather than folding
 * it: it reads a float initializer (a weight: Transpose or Expand of a
 * parameter, as torch exports them), other than for its Shape. */
int pdnn__onnx_train_unfolded(importer *im, const Onnx__NodeProto *n);
pdnn_status pdnn__onnx_train_batch_norm(importer *im, const Onnx__NodeProto *n);
pdnn_status pdnn__onnx_train_dropout(importer *im, const Onnx__NodeProto *n);

/* onnx_move.c */
pdnn_status pdnn__onnx_import_conv_transpose(importer *im, const Onnx__NodeProto *n);
/* Folds n if its result is known at import (*done 1). */
pdnn_status pdnn__onnx_fold(importer *im, const Onnx__NodeProto *n, int *done);
/* Slice, Split, Gather, Expand, Where, Resize, Upsample, Squeeze,
 * Unsqueeze of activations. */
pdnn_status pdnn__onnx_import_move(importer *im, const Onnx__NodeProto *n);

/* onnx_einsum.c: Einsum of two operands as a batched MatMul */
pdnn_status pdnn__onnx_import_einsum(importer *im, const Onnx__NodeProto *n);

/* onnx_ops.c */
/* v's node as a PDNN_ND node of v's ONNX shape (a view, or a transform
 * from NHWC, of an image; a constant made a node). */
pdnn_status pdnn__onnx_nd_node(importer *im, const Onnx__NodeProto *n, value *v, int *node);
/* A reshape of x's activation to rank r (1 to 4) dims. */
pdnn_status pdnn__onnx_reshape_to(importer *im, const Onnx__NodeProto *n, value *x, int r, const int64_t *dims);
pdnn_status pdnn__onnx_clip_bounds(importer *im, const Onnx__NodeProto *n, int report, float *lo, float *hi);
pdnn_status pdnn__onnx_import_node(importer *im, size_t idx);
/* Every node whose operator the importer does not know, counted per
 * operator in one PDNN_ERR_UNSUPPORTED ("Transpose x12, ..."). */
pdnn_status pdnn__onnx_check_ops(const importer *im);

#endif
