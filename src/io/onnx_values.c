/* The importer's values and what every op's builder uses: finding and
 * adding values, an op's activation and constant inputs and its output,
 * attributes (a Clip's bounds too: Conv fuses it, Clip imports it), errors,
 * and host constants laid out for NHWC. */
#include "io/onnx_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pdnn_status pdnn__onnx_node_error(pdnn_status st, const Onnx__NodeProto *n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return FAIL(st, "pdnn_graph_import_onnx: node '%s' (%s): %s", node_name(n),
                       n->op_type ? n->op_type : "?", msg);
}

value *pdnn__onnx_find_value(importer *im, const char *name)
{
    if (!name || !name[0])
        return NULL;
    for (int i = im->n_vals - 1; i >= 0; i--)
        if (strcmp(im->vals[i].name, name) == 0)
            return &im->vals[i];
    return NULL;
}

pdnn_status pdnn__onnx_add_value(importer *im, const value *v)
{
    if (pdnn__onnx_find_value(im, v->name))
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: value '%s' is defined twice", v->name);
    if (im->n_vals == im->cap_vals) {
        int cap = im->cap_vals ? im->cap_vals * 2 : 64;
        value *nv = realloc(im->vals, (size_t)cap * sizeof *nv);
        if (!nv)
            return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
        im->vals = nv;
        im->cap_vals = cap;
    }
    im->vals[im->n_vals++] = *v;
    return PDNN_SUCCESS;
}

/* An ints attribute of exactly want values into out (left alone if absent). */
pdnn_status pdnn__onnx_attr_ints(const Onnx__NodeProto *n, const char *name, size_t want, int64_t *out)
{
    const Onnx__AttributeProto *a = attr(n, name);
    if (!a)
        return PDNN_SUCCESS;
    if (a->n_ints != want)
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "attribute %s has %zu values, expected %zu", name, a->n_ints,
                                     want);
    for (size_t i = 0; i < want; i++)
        out[i] = a->ints[i];
    return PDNN_SUCCESS;
}

const char *pdnn__onnx_attr_str(const Onnx__NodeProto *n, const char *name, char *buf, size_t len)
{
    const Onnx__AttributeProto *a = attr(n, name);
    buf[0] = 0;
    if (a && a->has_s) {
        size_t l = a->s.len < len - 1 ? a->s.len : len - 1;
        memcpy(buf, a->s.data, l);
        buf[l] = 0;
    }
    return buf;
}

/* ---- what a node may hold ---- */

#define T_(x) ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__##x

/* The attributes the importer reads, each of one type in every op that has
 * it: one of another type used to be ignored (Gemm's transB as a float
 * computed x @ w; LeakyRelu's alpha as a string used 0.01). */
static const struct {
    const char *name;
    Onnx__AttributeProto__AttributeType type;
} attr_types[] = {
    {"allowzero", T_(INT)},    {"axis", T_(INT)},        {"ceil_mode", T_(INT)},   {"count_include_pad", T_(INT)},
    {"group", T_(INT)},        {"storage_order", T_(INT)}, {"training_mode", T_(INT)}, {"transA", T_(INT)},
    {"transB", T_(INT)},       {"alpha", T_(FLOAT)},     {"beta", T_(FLOAT)},      {"epsilon", T_(FLOAT)},
    {"max", T_(FLOAT)},        {"min", T_(FLOAT)},       {"momentum", T_(FLOAT)},  {"dilations", T_(INTS)},
    {"kernel_shape", T_(INTS)}, {"pads", T_(INTS)},      {"strides", T_(INTS)},    {"auto_pad", T_(STRING)},
    {"value", T_(TENSOR)},    {"keepdims", T_(INT)},    {"axes", T_(INTS)},       {"mode", T_(STRING)},
    {"output_padding", T_(INTS)}, {"output_shape", T_(INTS)}, {"to", T_(INT)}, {"start", T_(INT)},
    {"end", T_(INT)}, {"split", T_(INTS)}, {"starts", T_(INTS)}, {"ends", T_(INTS)}, {"num_outputs", T_(INT)},
    {"coordinate_transformation_mode", T_(STRING)}, {"nearest_mode", T_(STRING)}, {"scales", T_(FLOATS)},
    {"antialias", T_(INT)}, {"exclude_outside", T_(INT)}, {"perm", T_(INTS)}, {"fmod", T_(INT)}, {"reduction", T_(STRING)},
    {"equation", T_(STRING)},
};

/* Where one name means another type in another op: Pad's value (opsets
 * before 11) is the padding constant, a float. */
static const struct {
    const char *op, *name;
    Onnx__AttributeProto__AttributeType type;
} attr_types_of_op[] = {
    {"Pad", "value", T_(FLOAT)},
};

/* The inputs each op takes (optional ones included), over the opsets the
 * importer reads: a Relu with three inputs used to be accepted. */
static const struct {
    const char *op;
    unsigned lo, hi;
} op_inputs[] = {
    {"Conv", 2, 3},   {"MaxPool", 1, 1}, {"AveragePool", 1, 1}, {"GlobalAveragePool", 1, 1}, {"Relu", 1, 1},
    {"Clip", 1, 3},   {"LeakyRelu", 1, 1}, {"Sigmoid", 1, 1},   {"Mul", 2, 2},     {"Add", 2, 2},
    {"Gemm", 2, 3},   {"MatMul", 2, 2},  {"Flatten", 1, 1},     {"Reshape", 1, 2}, {"Softmax", 1, 1},
    {"Dropout", 1, 3}, {"Identity", 1, 1}, {"Constant", 0, 0}, {"Sub", 2, 2},       {"Div", 2, 2},
    {"HardSigmoid", 1, 1}, {"HardSwish", 1, 1}, {"Pad", 1, 4}, {"ReduceMean", 1, 2}, {"ReduceMax", 1, 2},
    {"ReduceSum", 1, 2}, {"ConvTranspose", 2, 3}, {"Shape", 1, 1}, {"Gather", 2, 2}, {"Unsqueeze", 1, 2},
    {"Squeeze", 1, 2}, {"Slice", 1, 5}, {"Split", 1, 2}, {"Cast", 1, 1}, {"ConstantOfShape", 1, 1},
    {"Range", 3, 3}, {"Expand", 2, 2}, {"Equal", 2, 2}, {"Mod", 2, 2}, {"Not", 1, 1}, {"ScatterND", 3, 3}, {"Where", 3, 3}, {"Resize", 1, 4}, {"Upsample", 1, 2},
};

static const char *type_name(int t)
{
    switch (t) {
    case T_(FLOAT): return "a float";
    case T_(INT): return "an int";
    case T_(STRING): return "a string";
    case T_(TENSOR): return "a tensor";
    case T_(FLOATS): return "floats";
    case T_(INTS): return "ints";
    case T_(STRINGS): return "strings";
    default: return "another type";
    }
}

/* The type an attribute holds: its declared type, else (writers before
 * IR version 2 left it out) the one field it sets. */
static int held_type(const Onnx__AttributeProto *a)
{
    if (a->has_type && a->type != T_(UNDEFINED))
        return (int)a->type;
    const int set[] = {a->has_f, a->has_i, a->has_s, a->t != NULL, a->n_floats > 0, a->n_ints > 0};
    const int type[] = {T_(FLOAT), T_(INT), T_(STRING), T_(TENSOR), T_(FLOATS), T_(INTS)};
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        if (set[i])
            return type[i];
    return T_(UNDEFINED);
}

pdnn_status pdnn__onnx_check_node(const Onnx__NodeProto *n)
{
    if (!n->op_type || (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0))
        return PDNN_SUCCESS; /* import_node refuses these, naming why */
    for (size_t k = 0; k < sizeof op_inputs / sizeof op_inputs[0]; k++)
        if (strcmp(n->op_type, op_inputs[k].op) == 0 && (n->n_input < op_inputs[k].lo || n->n_input > op_inputs[k].hi))
            return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "%s takes %u to %u inputs, %zu given", n->op_type,
                                         op_inputs[k].lo, op_inputs[k].hi, n->n_input);
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        if (!a->name)
            continue;
        int want = -1;
        for (size_t k = 0; want < 0 && k < sizeof attr_types_of_op / sizeof attr_types_of_op[0]; k++)
            if (strcmp(n->op_type, attr_types_of_op[k].op) == 0 && strcmp(a->name, attr_types_of_op[k].name) == 0)
                want = (int)attr_types_of_op[k].type;
        for (size_t k = 0; want < 0 && k < sizeof attr_types / sizeof attr_types[0]; k++)
            if (strcmp(a->name, attr_types[k].name) == 0)
                want = (int)attr_types[k].type;
        if (want < 0)
            continue;
        const int held = held_type(a);
        /* An empty ints attribute has no field to tell it by. */
        if (held != want && !(held == T_(UNDEFINED) && want == T_(INTS)))
            return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "attribute %s is %s; it must be %s", a->name,
                                         type_name(held), type_name(want));
    }
    return PDNN_SUCCESS;
}

/* ---- graph nodes ---- */

pdnn_status pdnn__onnx_check_name(const Onnx__NodeProto *n, const char *name)
{
    if (strlen(name) >= sizeof(((pdnn__node *)0)->name))
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "value name '%.40s...' is longer than %zu characters",
                                     name, sizeof(((pdnn__node *)0)->name) - 1);
    return PDNN_SUCCESS;
}

/* The graph node of a host constant (made on first use, NCHW {d0..} or a
 * vector). */
static pdnn_status const_node(importer *im, const Onnx__NodeProto *n, value *v, const pdnn_tensor_desc *d,
                              int *out)
{
    if (!v->data)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "constant '%s' is not float", v->name);
    if (pdnn_tensor_desc_elements(d) != v->count)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "constant '%s' has %lld elements, %lld expected",
                                     v->name, (long long)v->count, (long long)pdnn_tensor_desc_elements(d));
    pdnn_status st = pdnn_graph_constant(im->graph, NULL, im->device, d, v->data, out);
    return st == PDNN_SUCCESS ? pdnn__onnx_train_weight(im, *out, v) : st; /* a weight when trainable */
}

/* The input value i of n as a graph node (a constant becomes one). */
value *pdnn__onnx_act_input(importer *im, const Onnx__NodeProto *n, size_t i, pdnn_status *st)
{
    *st = PDNN_SUCCESS;
    if (i >= n->n_input || !n->input[i][0]) {
        *st = pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "input %zu is missing", i);
        return NULL;
    }
    value *v = pdnn__onnx_find_value(im, n->input[i]);
    if (!v) {
        *st = pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n,
                                    "input '%s' is neither a graph input, an initializer nor an earlier "
                                    "node's output",
                                    n->input[i]);
        return NULL;
    }
    if (v->node < 0) {
        /* A constant where an activation is expected: make it a node,
         * NCHW at ranks 2 and 4 (as the importer keeps them), ND else. */
        pdnn_tensor_desc d;
        pdnn__onnx_value_desc(v, &d);
        if ((*st = const_node(im, n, v, &d, &v->node)) != PDNN_SUCCESS)
            return NULL;
    }
    return v;
}

value *pdnn__onnx_image_input(importer *im, const Onnx__NodeProto *n, size_t i, value *tmp, pdnn_status *st)
{
    value *v = pdnn__onnx_act_input(im, n, i, st);
    pdnn_tensor_desc d;
    if (!v || v->rank != 4 || (*st = pdnn_graph_node_desc(im->graph, v->node, &d)) != PDNN_SUCCESS ||
        d.layout != PDNN_ND)
        return *st == PDNN_SUCCESS ? v : NULL;
    /* ND {N, C, H, W} is NCHW's row-major order: a reshape (the session
     * shares the bytes), then NHWC's order where the activations are so. */
    int y = -1;
    *st = pdnn_graph_reshape(im->graph, NULL, im->device, v->node, v->dims, &y);
    if (*st == PDNN_SUCCESS && im->layout == PDNN_NHWC)
        *st = pdnn_graph_transform(im->graph, NULL, im->device, y, PDNN_NHWC, &y);
    if (*st != PDNN_SUCCESS) {
        *st = pdnn__onnx_node_error(*st, n, "%s", pdnn_last_error());
        return NULL;
    }
    *tmp = *v;
    tmp->node = y;
    return tmp;
}

value *pdnn__onnx_const_input(importer *im, const Onnx__NodeProto *n, size_t i)
{
    if (i >= n->n_input || !n->input[i][0])
        return NULL;
    value *v = pdnn__onnx_find_value(im, n->input[i]);
    return v && v->node < 0 ? v : NULL;
}

/* Records output 0 of n as graph node id with the given ONNX rank. */
void pdnn__onnx_value_desc(const value *v, pdnn_tensor_desc *d)
{
    memset(d, 0, sizeof *d);
    d->dtype = PDNN_FLOAT32;
    d->layout = v->rank == 2 || v->rank == 4 ? PDNN_NCHW : PDNN_ND;
    d->rank = d->layout == PDNN_ND ? v->rank : 4;
    for (int i = 0; i < PDNN_MAX_RANK; i++)
        d->dims[i] = i < v->rank ? v->dims[i] : 1;
}

pdnn_status pdnn__onnx_set_output(importer *im, const Onnx__NodeProto *n, const char *name, int id, int rank)
{
    pdnn_tensor_desc d;
    pdnn_status st = pdnn_graph_node_desc(im->graph, id, &d);
    if (st != PDNN_SUCCESS)
        return st;
    value v = {.name = name, .node = id, .rank = rank};
    for (int i = 0; i < rank && i < PDNN_MAX_RANK; i++)
        v.dims[i] = d.dims[i];
    (void)n;
    return pdnn__onnx_add_value(im, &v);
}

/* The one walk of both directions: element i of the row-major array of
 * logical dims d is element at of layout's memory order. */
static void relayout(const float *src, const int64_t d[4], pdnn_layout layout, float *dst, int back)
{
    int64_t st[4];
    pdnn__layout_strides(layout, d, st);
    for (int64_t i = 0, a = 0; a < d[0]; a++)
        for (int64_t b = 0; b < d[1]; b++)
            for (int64_t h = 0; h < d[2]; h++)
                for (int64_t w = 0; w < d[3]; w++, i++) {
                    const int64_t at = a * st[0] + b * st[1] + h * st[2] + w * st[3];
                    if (back)
                        dst[i] = src[at];
                    else
                        dst[at] = src[i];
                }
}

/* dst = src, a row-major array of logical dims d (ONNX's NCHW or OIHW),
 * in memory order of layout (NHWC's, OHWI's). */
void pdnn__onnx_relayout(const float *src, const int64_t d[4], pdnn_layout layout, float *dst)
{
    relayout(src, d, layout, dst, 0);
}

/* Its inverse: src in layout's memory order back to row-major (the
 * export's OIHW from an NHWC import's filter). */
void pdnn__onnx_relayout_back(const float *src, const int64_t d[4], pdnn_layout layout, float *dst)
{
    relayout(src, d, layout, dst, 1);
}

/* A Clip's bounds: attributes before opset 11, constant scalar inputs
 * from it (either may be absent: +-inf). With report 0, a failure sets no
 * error (the conv fusion only asks). */
pdnn_status pdnn__onnx_clip_bounds(importer *im, const Onnx__NodeProto *n, int report, float *lo, float *hi)
{
    *lo = -INFINITY, *hi = INFINITY;
    if (im->opset < 11) {
        *lo = attr_float(n, "min", -INFINITY);
        *hi = attr_float(n, "max", INFINITY);
    }
    for (size_t i = 1; i < 3 && i < n->n_input; i++) {
        if (!n->input[i][0])
            continue;
        value *b = pdnn__onnx_const_input(im, n, i);
        if (!b || !b->data || b->count != 1)
            return report ? pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n,
                                                  "the %s bound '%s' must be a constant float scalar",
                                                  i == 1 ? "min" : "max", n->input[i])
                          : PDNN_ERR_UNSUPPORTED;
        *(i == 1 ? lo : hi) = b->data[0];
    }
    if (isnan(*lo) || isnan(*hi) || *lo > *hi)
        return report ? pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n,
                                              "clip bounds [%g, %g]: NaN, or min above max", (double)*lo, (double)*hi)
                      : PDNN_ERR_INVALID_ARGUMENT;
    return PDNN_SUCCESS;
}
