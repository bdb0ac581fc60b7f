/* ONNX import into polydnn's graph (pdnn_graph_import_onnx). The file is
 * parsed by protobuf-c code generated at build time from the system's
 * onnx.proto (Makefile.am); this file maps the parsed nodes onto graph
 * nodes. Initializers stay host arrays until an op needs them, so a
 * BatchNormalization can be folded into its Conv's weights first. */
/* realpath (confining external data to the model's directory). */
#define _XOPEN_SOURCE 700

#include "config.h"

#include "backend.h"
#include "graph/graph.h"
#include "polydnn.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pdnn_onnx_options_init(pdnn_onnx_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
}

#ifndef PDNN_HAVE_ONNX

pdnn_status pdnn_graph_import_onnx(const char *path, const void *data, size_t size,
                                   const pdnn_onnx_options *opts, pdnn_graph **out, pdnn_onnx_io *io)
{
    (void)path, (void)data, (void)size, (void)opts, (void)io;
    if (out)
        *out = NULL;
    return pdnn__error(PDNN_ERR_UNSUPPORTED,
                       "pdnn_graph_import_onnx: this polydnn was built without ONNX import (configure found no "
                       "protoc-c, libprotobuf-c or onnx.proto: apt-get install protobuf-c-compiler "
                       "libprotobuf-c-dev python3-onnx and configure again)");
}

#else

#include "onnx.pb-c.h"

#include <sys/stat.h>

/* pdnn__error's status as a constant the static analyzer can follow. */
#define FAIL(st, ...) (pdnn__error((st), __VA_ARGS__), (st))

#define SUPPORTED_OPS                                                                                  \
    "Add, AveragePool, BatchNormalization (after a Conv), Clip, Concat, Constant, Conv, Dropout, "       \
    "Flatten, Gemm, GlobalAveragePool, Identity, LeakyRelu, MatMul, MaxPool, Mul (by a constant "        \
    "scalar), Reshape, Relu, Sigmoid, Softmax"

/* Models over this size are refused before reading (protobuf's own limit). */
#define MAX_MODEL_BYTES ((size_t)INT32_MAX)

/* ONNX TensorProto.DataType values used here. */
enum { ONNX_FLOAT = 1, ONNX_INT64 = 7 };

/* One ONNX value: an activation computed by a graph node (node >= 0), or a
 * constant held on the host (data or i64) until an op uses it. */
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
} importer;

static const char *node_name(const Onnx__NodeProto *n)
{
    return n->name && n->name[0] ? n->name : "(unnamed)";
}

static pdnn_status node_error(pdnn_status st, const Onnx__NodeProto *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static pdnn_status node_error(pdnn_status st, const Onnx__NodeProto *n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return FAIL(st, "pdnn_graph_import_onnx: node '%s' (%s): %s", node_name(n),
                       n->op_type ? n->op_type : "?", msg);
}

static value *find_value(importer *im, const char *name)
{
    if (!name || !name[0])
        return NULL;
    for (int i = im->n_vals - 1; i >= 0; i--)
        if (strcmp(im->vals[i].name, name) == 0)
            return &im->vals[i];
    return NULL;
}

static pdnn_status add_value(importer *im, const value *v)
{
    if (find_value(im, v->name))
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

/* Element count of dims, or -1 when a dim is negative or the product
 * overflows what a tensor may hold. */
static int64_t dims_count(const int64_t *dims, size_t rank)
{
    int64_t c = 1;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] < 0 || (dims[i] > 0 && c > (INT64_MAX / 8) / dims[i]))
            return -1;
        c *= dims[i];
    }
    return c;
}

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

static int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_i ? a->i : def;
}

static float attr_float(const Onnx__NodeProto *n, const char *name, float def)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_f ? a->f : def;
}

/* An ints attribute of exactly want values into out (left alone if absent). */
static pdnn_status attr_ints(const Onnx__NodeProto *n, const char *name, size_t want, int64_t *out)
{
    const Onnx__AttributeProto *a = attr(n, name);
    if (!a)
        return PDNN_SUCCESS;
    if (a->n_ints != want)
        return node_error(PDNN_ERR_CORRUPT, n, "attribute %s has %zu values, expected %zu", name, a->n_ints, want);
    for (size_t i = 0; i < want; i++)
        out[i] = a->ints[i];
    return PDNN_SUCCESS;
}

static const char *attr_str(const Onnx__NodeProto *n, const char *name, char *buf, size_t len)
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

/* ---- tensors (initializers, Constant) ---- */

/* Reads an external-data tensor's bytes: location confined to im->dir. */
static pdnn_status read_external(importer *im, const Onnx__TensorProto *t, size_t bytes, void **out)
{
    *out = NULL;
    const char *loc = NULL;
    int64_t offset = 0, length = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (!e->key || !e->value)
            continue;
        char *end = NULL;
        if (strcmp(e->key, "location") == 0)
            loc = e->value;
        else if (strcmp(e->key, "offset") == 0 || strcmp(e->key, "length") == 0) {
            errno = 0;
            long long v = strtoll(e->value, &end, 10);
            if (errno || end == e->value || *end || v < 0)
                return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: tensor '%s': bad external %s '%s'",
                                   t->name, e->key, e->value);
            if (e->key[0] == 'o')
                offset = v;
            else
                length = v;
        }
    }
    if (!im->dir)
        return FAIL(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_graph_import_onnx: tensor '%s' has external data but the model was given as a "
                           "buffer without options.base_dir", t->name);
    if (!loc || !loc[0] || loc[0] == '/' || strstr(loc, ".."))
        return FAIL(PDNN_ERR_CORRUPT,
                           "pdnn_graph_import_onnx: tensor '%s': external data location '%s' must be a relative "
                           "path inside the model's directory", t->name, loc ? loc : "(none)");
    if (length >= 0 && (uint64_t)length != bytes)
        return FAIL(PDNN_ERR_CORRUPT,
                           "pdnn_graph_import_onnx: tensor '%s': external length %lld, its dims need %zu bytes",
                           t->name, (long long)length, bytes);
    char path[PATH_MAX], real_dir[PATH_MAX], real_file[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", im->dir, loc) >= (int)sizeof path)
        return FAIL(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_import_onnx: tensor '%s': path too long", t->name);
    if (!realpath(im->dir, real_dir) || !realpath(path, real_file))
        return FAIL(PDNN_ERR_NOT_FOUND, "pdnn_graph_import_onnx: tensor '%s': external data file '%s': %s",
                           t->name, path, strerror(errno));
    size_t dl = strlen(real_dir);
    if (strncmp(real_file, real_dir, dl) != 0 || real_file[dl] != '/')
        return FAIL(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_graph_import_onnx: tensor '%s': external data '%s' leads out of the model's "
                           "directory %s", t->name, loc, real_dir);
    FILE *f = fopen(real_file, "rb");
    if (!f)
        return FAIL(PDNN_ERR_IO, "pdnn_graph_import_onnx: tensor '%s': cannot open %s: %s", t->name,
                           real_file, strerror(errno));
    struct stat sb;
    pdnn_status st = PDNN_SUCCESS;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode))
        st = FAIL(PDNN_ERR_IO, "pdnn_graph_import_onnx: tensor '%s': %s is not a regular file", t->name,
                         real_file);
    else if ((uint64_t)offset > (uint64_t)sb.st_size || (uint64_t)sb.st_size - (uint64_t)offset < bytes)
        st = FAIL(PDNN_ERR_CORRUPT,
                         "pdnn_graph_import_onnx: tensor '%s': %s holds %lld bytes, the tensor needs %zu at "
                         "offset %lld", t->name, real_file, (long long)sb.st_size, bytes, (long long)offset);
    else if (!(*out = malloc(bytes ? bytes : 1)))
        st = FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: tensor '%s': out of host memory (%zu bytes)",
                  t->name, bytes);
    else if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(*out, 1, bytes, f) != bytes)
        st = FAIL(PDNN_ERR_IO, "pdnn_graph_import_onnx: tensor '%s': reading %s failed", t->name, real_file);
    fclose(f);
    if (st != PDNN_SUCCESS) {
        free(*out);
        *out = NULL;
    }
    return st;
}

/* A TensorProto (float or int64) into a host constant value named name. */
static pdnn_status tensor_value(importer *im, const Onnx__TensorProto *t, const char *name)
{
    value v = {.name = name, .node = -1};
    if (!name || !name[0])
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: a tensor has no name");
    if (t->n_dims > 8)
        return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: tensor '%s' has rank %zu (at most 8)",
                           name, t->n_dims);
    v.rank = (int)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++)
        v.dims[i] = t->dims[i];
    v.count = dims_count(v.dims, t->n_dims);
    if (v.count < 0)
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: tensor '%s': dims are negative or overflow",
                           name);
    int dt = t->has_data_type ? t->data_type : 0;
    if (dt != ONNX_FLOAT && dt != ONNX_INT64)
        return FAIL(PDNN_ERR_UNSUPPORTED,
                           "pdnn_graph_import_onnx: tensor '%s' has ONNX data type %d; only float (1) and int64 "
                           "(7) are supported", name, dt);
    size_t esz = dt == ONNX_FLOAT ? 4 : 8;
    size_t bytes = (size_t)v.count * esz;
    int external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const void *src = NULL;
    /* Sizes are checked before allocating, so a file cannot make us
     * allocate what it does not hold (external data: read_external). */
    if (external) {
    } else if (t->has_raw_data) {
        if (t->raw_data.len != bytes)
            return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: tensor '%s': raw_data holds %zu bytes, its "
                        "dims need %zu", name, t->raw_data.len, bytes);
        src = t->raw_data.data; /* little-endian, as ONNX stores it */
    } else if (dt == ONNX_FLOAT) {
        if (t->n_float_data != (size_t)v.count)
            return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: tensor '%s': %zu floats, its dims need %lld",
                        name, t->n_float_data, (long long)v.count);
        src = t->float_data;
    } else {
        if (t->n_int64_data != (size_t)v.count)
            return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: tensor '%s': %zu int64s, its dims need %lld",
                        name, t->n_int64_data, (long long)v.count);
        src = t->int64_data;
    }
    void *buf = NULL;
    pdnn_status st = PDNN_SUCCESS;
    if (external) {
        st = read_external(im, t, bytes, &buf);
    } else {
        /* The parsed model outlives the values and nothing writes them:
         * read its bytes in place (protobuf-c allocates each field apart,
         * aligned for any type), one copy of the weights less. */
        static int64_t empty[1]; /* a zero-sized tensor's data: not NULL, never read */
        buf = bytes ? (void *)src : (void *)empty;
        v.alias = 1;
    }
    if (st == PDNN_SUCCESS) {
        if (dt == ONNX_FLOAT)
            v.data = buf;
        else
            v.i64 = buf;
        st = add_value(im, &v);
    }
    if (st != PDNN_SUCCESS && !v.alias)
        free(buf);
    return st;
}

/* ---- graph nodes ---- */

static pdnn_status check_name(const Onnx__NodeProto *n, const char *name)
{
    if (strlen(name) >= sizeof(((pdnn__node *)0)->name))
        return node_error(PDNN_ERR_UNSUPPORTED, n, "value name '%.40s...' is longer than %zu characters", name,
                          sizeof(((pdnn__node *)0)->name) - 1);
    return PDNN_SUCCESS;
}

/* The graph node of a host constant (made on first use, NCHW {d0..} or a
 * vector). */
static pdnn_status const_node(importer *im, const Onnx__NodeProto *n, value *v, const pdnn_tensor_desc *d,
                              int *out)
{
    if (!v->data)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "constant '%s' is not float", v->name);
    if (pdnn_tensor_desc_elements(d) != v->count)
        return node_error(PDNN_ERR_INVALID_ARGUMENT, n, "constant '%s' has %lld elements, %lld expected", v->name,
                          (long long)v->count, (long long)pdnn_tensor_desc_elements(d));
    return pdnn_graph_constant(im->graph, NULL, im->device, d, v->data, out);
}

/* The input value i of n, which must be an activation of rank 2 or 4. */
static value *act_input(importer *im, const Onnx__NodeProto *n, size_t i, pdnn_status *st)
{
    *st = PDNN_SUCCESS;
    if (i >= n->n_input || !n->input[i][0]) {
        *st = node_error(PDNN_ERR_CORRUPT, n, "input %zu is missing", i);
        return NULL;
    }
    value *v = find_value(im, n->input[i]);
    if (!v) {
        *st = node_error(PDNN_ERR_CORRUPT, n, "input '%s' is neither a graph input, an initializer nor an earlier "
                         "node's output", n->input[i]);
        return NULL;
    }
    if (v->node < 0) {
        /* A constant where an activation is expected: make it a node. */
        if (v->rank != 2 && v->rank != 4) {
            *st = node_error(PDNN_ERR_UNSUPPORTED, n, "constant input '%s' of rank %d", v->name, v->rank);
            return NULL;
        }
        pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_NCHW, {v->dims[0], v->dims[1], v->rank == 4 ? v->dims[2] : 1,
                                                         v->rank == 4 ? v->dims[3] : 1}};
        if ((*st = const_node(im, n, v, &d, &v->node)) != PDNN_SUCCESS)
            return NULL;
    }
    return v;
}

static value *const_input(importer *im, const Onnx__NodeProto *n, size_t i)
{
    if (i >= n->n_input || !n->input[i][0])
        return NULL;
    value *v = find_value(im, n->input[i]);
    return v && v->node < 0 ? v : NULL;
}

/* Records output 0 of n as graph node id with the given ONNX rank. */
static pdnn_status set_output(importer *im, const Onnx__NodeProto *n, const char *name, int id, int rank)
{
    pdnn_tensor_desc d;
    pdnn_status st = pdnn_graph_node_desc(im->graph, id, &d);
    if (st != PDNN_SUCCESS)
        return st;
    value v = {.name = name, .node = id, .rank = rank};
    for (int i = 0; i < rank && i < 4; i++)
        v.dims[i] = d.dims[i];
    (void)n;
    return add_value(im, &v);
}

static int64_t div_up(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* pads[4] = {top, left, bottom, right} (ONNX order) from pads/auto_pad. */
static pdnn_status spatial_pads(const Onnx__NodeProto *n, const int64_t in[2], const int64_t k[2],
                                const int64_t s[2], const int64_t d[2], int64_t pads[4])
{
    char ap[32];
    attr_str(n, "auto_pad", ap, sizeof ap);
    pads[0] = pads[1] = pads[2] = pads[3] = 0;
    if (!ap[0] || strcmp(ap, "NOTSET") == 0) {
        pdnn_status st = attr_ints(n, "pads", 4, pads);
        if (st != PDNN_SUCCESS)
            return st;
        for (int i = 0; i < 4; i++)
            if (pads[i] < 0 || pads[i] > INT_MAX / 4)
                return node_error(PDNN_ERR_INVALID_ARGUMENT, n, "pads[%d] = %lld is out of range", i,
                                  (long long)pads[i]);
        return PDNN_SUCCESS;
    }
    if (strcmp(ap, "VALID") == 0)
        return PDNN_SUCCESS;
    int upper = strcmp(ap, "SAME_UPPER") == 0;
    if (!upper && strcmp(ap, "SAME_LOWER") != 0)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "auto_pad '%s' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", ap);
    for (int a = 0; a < 2; a++) {
        /* Bounded so the products below cannot overflow. */
        if (in[a] > INT_MAX || k[a] > INT_MAX)
            return node_error(PDNN_ERR_UNSUPPORTED, n, "auto_pad on a dim or window over %d", INT_MAX);
        int64_t outd = div_up(in[a], s[a]);
        int64_t total = (outd - 1) * s[a] + (k[a] - 1) * d[a] + 1 - in[a];
        if (total < 0)
            total = 0;
        int64_t small = total / 2, big = total - small;
        pads[a] = upper ? small : big;       /* begin */
        pads[a + 2] = upper ? big : small;   /* end: SAME_UPPER puts the odd pixel here */
        if (big > INT_MAX / 4)
            return node_error(PDNN_ERR_UNSUPPORTED, n, "auto_pad needs a padding of %lld", (long long)big);
    }
    return PDNN_SUCCESS;
}

/* The unique reader of value name among nodes after index from, or -1
 * (none, several, or a graph output). */
static int sole_reader(importer *im, size_t from, const char *name)
{
    for (size_t i = 0; i < im->g->n_output; i++)
        if (im->g->output[i]->name && strcmp(im->g->output[i]->name, name) == 0)
            return -1;
    int found = -1;
    for (size_t i = from; i < im->g->n_node; i++) {
        const Onnx__NodeProto *m = im->g->node[i];
        for (size_t j = 0; j < m->n_input; j++)
            if (strcmp(m->input[j], name) == 0) {
                if (found >= 0)
                    return -1;
                found = (int)i;
            }
    }
    return found;
}

static int has_valid_ints(const Onnx__NodeProto *n, const char *name, int64_t lo)
{
    const Onnx__AttributeProto *a = attr(n, name);
    if (!a)
        return 1;
    for (size_t i = 0; i < a->n_ints; i++)
        if (a->ints[i] < lo || a->ints[i] > INT_MAX / 4)
            return 0;
    return 1;
}

/* dst = src, a row-major array of logical dims d (ONNX's NCHW or OIHW),
 * in memory order of layout (NHWC's, OHWI's). */
static void relayout(const float *src, const int64_t d[4], pdnn_layout layout, float *dst)
{
    int64_t st[4];
    pdnn__layout_strides(layout, d, st);
    for (int64_t i = 0, a = 0; a < d[0]; a++)
        for (int64_t b = 0; b < d[1]; b++)
            for (int64_t h = 0; h < d[2]; h++)
                for (int64_t w = 0; w < d[3]; w++)
                    dst[a * st[0] + b * st[1] + h * st[2] + w * st[3]] = src[i++];
}

/* A Clip's bounds: attributes before opset 11, constant scalar inputs
 * from it (either may be absent: +-inf). With report 0, a failure sets no
 * error (the conv fusion only asks). */
static pdnn_status clip_bounds(importer *im, const Onnx__NodeProto *n, int report, float *lo, float *hi)
{
    *lo = -INFINITY, *hi = INFINITY;
    if (im->opset < 11) {
        *lo = attr_float(n, "min", -INFINITY);
        *hi = attr_float(n, "max", INFINITY);
    }
    for (size_t i = 1; i < 3 && i < n->n_input; i++) {
        if (!n->input[i][0])
            continue;
        value *b = const_input(im, n, i);
        if (!b || !b->data || b->count != 1)
            return report ? node_error(PDNN_ERR_UNSUPPORTED, n, "the %s bound '%s' must be a constant float scalar",
                                       i == 1 ? "min" : "max", n->input[i])
                          : PDNN_ERR_UNSUPPORTED;
        *(i == 1 ? lo : hi) = b->data[0];
    }
    if (isnan(*lo) || isnan(*hi) || *lo > *hi)
        return report ? node_error(PDNN_ERR_INVALID_ARGUMENT, n, "clip bounds [%g, %g]: NaN, or min above max",
                                   (double)*lo, (double)*hi)
                      : PDNN_ERR_INVALID_ARGUMENT;
    return PDNN_SUCCESS;
}

static pdnn_status import_conv(importer *im, size_t idx, const Onnx__NodeProto *n)
{
    value *x, *w = const_input(im, n, 1), *b = const_input(im, n, 2);
    pdnn_status st;
    if (!(x = act_input(im, n, 0, &st)))
        return st;
    if (x->rank != 4)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "only 2-D convolution of a rank-4 NCHW input (rank %d given)",
                          x->rank);
    if (!w || !w->data || w->rank != 4 || w->count < 1)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "the weights must be a non-empty float initializer of rank 4");
    if (n->n_input > 2 && n->input[2][0] && (!b || !b->data || b->count != w->dims[0]))
        return node_error(PDNN_ERR_UNSUPPORTED, n, "the bias must be a float initializer of %lld values",
                          (long long)w->dims[0]);
    if (!has_valid_ints(n, "strides", 1) || !has_valid_ints(n, "dilations", 1))
        return node_error(PDNN_ERR_INVALID_ARGUMENT, n, "strides and dilations must be >= 1");
    int64_t s[2] = {1, 1}, d[2] = {1, 1}, k[2] = {w->dims[2], w->dims[3]}, ks[2] = {k[0], k[1]}, pads[4];
    if ((st = attr_ints(n, "strides", 2, s)) != PDNN_SUCCESS || (st = attr_ints(n, "dilations", 2, d)) != PDNN_SUCCESS ||
        (st = attr_ints(n, "kernel_shape", 2, ks)) != PDNN_SUCCESS)
        return st;
    if (ks[0] != k[0] || ks[1] != k[1])
        return node_error(PDNN_ERR_CORRUPT, n, "kernel_shape %lldx%lld differs from the weights' %lldx%lld",
                          (long long)ks[0], (long long)ks[1], (long long)k[0], (long long)k[1]);
    int64_t group = attr_int(n, "group", 1);
    if (group < 1 || group > INT_MAX)
        return node_error(PDNN_ERR_INVALID_ARGUMENT, n, "group %lld is out of range", (long long)group);
    if ((st = spatial_pads(n, &x->dims[2], k, s, d, pads)) != PDNN_SUCCESS)
        return st;
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.stride_h = (int)s[0], p.stride_w = (int)s[1], p.dilation_h = (int)d[0], p.dilation_w = (int)d[1];
    p.pad_top = (int)pads[0], p.pad_left = (int)pads[1], p.pad_bottom = (int)pads[2], p.pad_right = (int)pads[3];
    p.groups = (int)group;

    /* Fold a BatchNormalization that is the conv output's only reader. */
    int64_t K = w->dims[0], per = w->count / (K ? K : 1);
    if (K < 1)
        return node_error(PDNN_ERR_CORRUPT, n, "the weights have no output channel");
    float *wf = malloc((size_t)w->count * sizeof *wf), *bf = calloc((size_t)K, sizeof *bf);
    if (!wf || !bf) {
        free(wf), free(bf);
        return node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
    }
    memcpy(wf, w->data, (size_t)w->count * sizeof *wf);
    int has_bias = b != NULL;
    if (b)
        memcpy(bf, b->data, (size_t)K * sizeof *bf);
    const char *out_name = n->n_output ? n->output[0] : "";
    int r = n->n_output == 1 ? sole_reader(im, idx + 1, out_name) : -1;
    size_t from = idx + 1; /* where the result's readers start */
    if (r >= 0 && im->g->node[r]->op_type && strcmp(im->g->node[r]->op_type, "BatchNormalization") == 0) {
        const Onnx__NodeProto *bn = im->g->node[r];
        value *sc = const_input(im, bn, 1), *bb = const_input(im, bn, 2), *mu = const_input(im, bn, 3),
              *var = const_input(im, bn, 4);
        int ok = bn->n_output >= 1 && attr_int(bn, "training_mode", 0) == 0 && sc && bb && mu && var;
        ok = ok && sc->data && bb->data && mu->data && var->data && sc->count == K && bb->count == K &&
             mu->count == K && var->count == K && strcmp(bn->input[0], out_name) == 0;
        for (size_t j = 1; ok && j < bn->n_output; j++)
            ok = !bn->output[j][0];
        if (ok) {
            float eps = attr_float(bn, "epsilon", 1e-5f);
            for (int64_t o = 0; o < K; o++) {
                double inv = 1.0 / sqrt((double)var->data[o] + (double)eps);
                double scale = (double)sc->data[o] * inv;
                for (int64_t j = 0; j < per; j++)
                    wf[o * per + j] = (float)((double)wf[o * per + j] * scale);
                bf[o] = (float)(((double)bf[o] - (double)mu->data[o]) * scale + (double)bb->data[o]);
            }
            has_bias = 1;
            out_name = bn->output[0];
            im->absorbed[r] = 1;
            from = (size_t)r + 1;
        }
    }
    /* Fuse a residual Add that alone reads the result, when its other
     * operand is an activation computed already with the output's shape
     * (a ResNet block's shortcut): y = conv + bias + z, the Relu below then
     * reading the Add. */
    int z = -1;
    r = im->fuse && n->n_output == 1 ? sole_reader(im, from, out_name) : -1;
    if (r >= 0 && im->g->node[r]->op_type && strcmp(im->g->node[r]->op_type, "Add") == 0 &&
        im->g->node[r]->n_input == 2 && im->g->node[r]->n_output == 1 && im->g->node[r]->output[0][0]) {
        const Onnx__NodeProto *add = im->g->node[r];
        const int mine = strcmp(add->input[0], out_name) == 0 ? 0 : 1;
        value *zv = strcmp(add->input[1 - mine], out_name) != 0 ? find_value(im, add->input[1 - mine]) : NULL;
        pdnn_tensor_desc xd, zd;
        const pdnn_tensor_desc wdl = {PDNN_FLOAT32, PDNN_OIHW, {w->dims[0], w->dims[1], w->dims[2], w->dims[3]}};
        int64_t od[4];
        if (zv && zv->node >= 0 && zv->rank == 4 && pdnn_graph_node_desc(im->graph, x->node, &xd) == PDNN_SUCCESS &&
            pdnn_conv2d_output_dims(&xd, &wdl, &p, od) == PDNN_SUCCESS &&
            pdnn_graph_node_desc(im->graph, zv->node, &zd) == PDNN_SUCCESS && zd.layout == xd.layout &&
            zd.dtype == PDNN_FLOAT32 && memcmp(od, zd.dims, sizeof od) == 0) {
            z = zv->node;
            out_name = add->output[0];
            im->absorbed[r] = 1;
            from = (size_t)r + 1;
        }
    }
    /* Fuse a Relu, or a Clip from 0 to a positive finite bound (ReLU6),
     * that alone reads the result (the conv epilogue's relu, capped). */
    r = im->fuse && n->n_output == 1 ? sole_reader(im, from, out_name) : -1;
    const Onnx__NodeProto *act = r >= 0 ? im->g->node[r] : NULL;
    if (act && act->op_type && act->n_input >= 1 && strcmp(act->input[0], out_name) == 0 && act->n_output == 1 &&
        act->output[0][0]) {
        float lo = 0.0f, hi = 0.0f;
        const int relu = strcmp(act->op_type, "Relu") == 0 && act->n_input == 1;
        const int relu6 = strcmp(act->op_type, "Clip") == 0 && clip_bounds(im, act, 0, &lo, &hi) == PDNN_SUCCESS &&
                          lo == 0.0f && hi > 0.0f && isfinite(hi);
        if (relu || relu6) {
            p.relu = 1;
            p.relu_cap = relu6 ? hi : 0.0f;
            out_name = act->output[0];
            im->absorbed[r] = 1;
        }
    }
    if ((st = check_name(n, out_name)) != PDNN_SUCCESS) {
        free(wf), free(bf);
        return st;
    }
    pdnn_tensor_desc wd = {PDNN_FLOAT32, PDNN_OIHW, {w->dims[0], w->dims[1], w->dims[2], w->dims[3]}};
    if (im->layout == PDNN_NHWC) {
        /* OHWI, the NHWC kernels' filter order; a depthwise filter (one
         * input channel per group) HWIO, where a tap's output channels are
         * contiguous and the depthwise kernel reads them as one vector. */
        const int dwise = p.groups > 1 && w->dims[1] == 1;
        float *t = malloc((size_t)w->count * sizeof *t);
        if (!t) {
            free(wf), free(bf);
            return node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
        }
        relayout(wf, wd.dims, dwise ? PDNN_HWIO : PDNN_OHWI, t);
        free(wf);
        wf = t;
        wd.layout = dwise ? PDNN_HWIO : PDNN_OHWI;
    }
    pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {K, 1, 1, 1}};
    int wn = -1, bn_ = -1, y = -1;
    st = pdnn__graph_constant_adopt(im->graph, im->device, &wd, wf, &wn); /* wf is the node's now */
    if (st == PDNN_SUCCESS && has_bias)
        st = pdnn_graph_constant(im->graph, NULL, im->device, &bd, bf, &bn_);
    free(bf);
    if (st == PDNN_SUCCESS)
        st = z >= 0 ? pdnn_graph_conv2d_residual(im->graph, out_name, im->device, x->node, wn, bn_, z, &p, &y)
                    : pdnn_graph_conv2d(im->graph, out_name, im->device, x->node, wn, bn_, &p, &y);
    if (st != PDNN_SUCCESS)
        return node_error(st, n, "%s", pdnn_last_error());
    return set_output(im, n, out_name, y, 4);
}

static pdnn_status import_pool(importer *im, const Onnx__NodeProto *n, int max, int global)
{
    value *x;
    pdnn_status st;
    if (!(x = act_input(im, n, 0, &st)))
        return st;
    if (x->rank != 4)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "only 2-D pooling of a rank-4 NCHW input (rank %d given)",
                          x->rank);
    if (n->n_output != 1)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "only one output (no Indices) is supported");
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    if (global) {
        if (x->dims[2] > INT_MAX || x->dims[3] > INT_MAX)
            return node_error(PDNN_ERR_UNSUPPORTED, n, "the image is too large");
        p.mode = PDNN_POOL_AVG_EXCLUDE_PADDING;
        p.window_h = (int)x->dims[2], p.window_w = (int)x->dims[3];
        p.stride_h = p.stride_w = 1;
    } else {
        int64_t k[2] = {0, 0}, s[2] = {1, 1}, d[2] = {1, 1}, pads[4];
        if (!has_valid_ints(n, "kernel_shape", 1) || !has_valid_ints(n, "strides", 1) ||
            !has_valid_ints(n, "dilations", 1))
            return node_error(PDNN_ERR_INVALID_ARGUMENT, n, "kernel_shape, strides and dilations must be >= 1");
        if (!attr(n, "kernel_shape"))
            return node_error(PDNN_ERR_CORRUPT, n, "kernel_shape is missing");
        if ((st = attr_ints(n, "kernel_shape", 2, k)) != PDNN_SUCCESS ||
            (st = attr_ints(n, "strides", 2, s)) != PDNN_SUCCESS || (st = attr_ints(n, "dilations", 2, d)) != PDNN_SUCCESS)
            return st;
        if (d[0] != 1 || d[1] != 1)
            return node_error(PDNN_ERR_UNSUPPORTED, n, "dilated pooling is not supported");
        if (attr_int(n, "storage_order", 0) != 0)
            return node_error(PDNN_ERR_UNSUPPORTED, n, "storage_order 1 is not supported");
        if ((st = spatial_pads(n, &x->dims[2], k, s, d, pads)) != PDNN_SUCCESS)
            return st;
        p.mode = max ? PDNN_POOL_MAX
                     : attr_int(n, "count_include_pad", 0) ? PDNN_POOL_AVG_INCLUDE_PADDING : PDNN_POOL_AVG_EXCLUDE_PADDING;
        p.window_h = (int)k[0], p.window_w = (int)k[1], p.stride_h = (int)s[0], p.stride_w = (int)s[1];
        p.pad_top = (int)pads[0], p.pad_left = (int)pads[1], p.pad_bottom = (int)pads[2], p.pad_right = (int)pads[3];
        p.ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
    }
    if ((st = check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_pool2d(im->graph, n->output[0], im->device, x->node, &p, &y);
    if (st != PDNN_SUCCESS)
        return node_error(st, n, "%s", pdnn_last_error());
    return set_output(im, n, n->output[0], y, 4);
}

/* Output 0 of a node that maps onto a single graph call. */
static pdnn_status finish(importer *im, const Onnx__NodeProto *n, pdnn_status st, int y, int rank)
{
    if (st != PDNN_SUCCESS)
        return node_error(st, n, "%s", pdnn_last_error());
    return set_output(im, n, n->output[0], y, rank);
}

/* a (op) b for Add and Mul beyond their fast paths, with ONNX's
 * (NumPy's) broadcasting of b: its dims are aligned to a's from the right
 * and each must equal a's or be 1. a must not be the one broadcast (the
 * caller puts a constant second, as both ops commute). A constant b is
 * laid out like a (its NCHW data permuted for NHWC). */
static pdnn_status import_binary(importer *im, const Onnx__NodeProto *n, value *a, pdnn_binary_op op)
{
    pdnn_status st;
    value *cb = const_input(im, n, 1), *b = NULL;
    if (!cb && !(b = act_input(im, n, 1, &st)))
        return st;
    const value *bv = cb ? cb : b;
    if (bv->rank > a->rank)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "input '%s' (rank %d) would broadcast '%s' (rank %d); only the "
                          "second input may be broadcast", a->name, a->rank, bv->name, bv->rank);
    int64_t bd[4] = {1, 1, 1, 1};
    for (int k = 0; k < bv->rank; k++)
        bd[a->rank - bv->rank + k] = bv->dims[k];
    for (int k = 0; k < a->rank; k++)
        if (bd[k] != a->dims[k] && bd[k] != 1)
            return node_error(PDNN_ERR_UNSUPPORTED, n, "inputs '%s' and '%s' do not broadcast: axis %d is %lld and %lld "
                              "(it must be equal, or 1 in the second)", a->name, bv->name, k, (long long)a->dims[k],
                              (long long)bd[k]);
    pdnn_tensor_desc ad;
    if ((st = pdnn_graph_node_desc(im->graph, a->node, &ad)) != PDNN_SUCCESS)
        return node_error(st, n, "%s", pdnn_last_error());
    pdnn_tensor_desc want = {PDNN_FLOAT32, ad.layout, {bd[0], bd[1], bd[2], bd[3]}};
    int bnode = b ? b->node : -1;
    if (cb) {
        if (!cb->data)
            return node_error(PDNN_ERR_UNSUPPORTED, n, "constant '%s' is not float", cb->name);
        float *data = malloc((size_t)(cb->count ? cb->count : 1) * sizeof *data);
        if (!data)
            return node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
        relayout(cb->data, bd, ad.layout, data);
        st = pdnn_graph_constant(im->graph, NULL, im->device, &want, data, &bnode);
        free(data);
        if (st != PDNN_SUCCESS)
            return node_error(st, n, "%s", pdnn_last_error());
    } else {
        pdnn_tensor_desc bdesc;
        if ((st = pdnn_graph_node_desc(im->graph, b->node, &bdesc)) != PDNN_SUCCESS)
            return node_error(st, n, "%s", pdnn_last_error());
        if (memcmp(bdesc.dims, want.dims, sizeof want.dims) != 0 || bdesc.layout != want.layout)
            return node_error(PDNN_ERR_UNSUPPORTED, n, "input '%s' cannot be broadcast to '%s' here", b->name,
                              a->name);
    }
    if ((st = check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    if (op == PDNN_BINARY_ADD && memcmp(want.dims, ad.dims, sizeof ad.dims) == 0)
        st = pdnn_graph_add(im->graph, n->output[0], im->device, a->node, bnode, &y);
    else
        st = pdnn_graph_binary(im->graph, n->output[0], im->device, a->node, bnode, op, &y);
    return finish(im, n, st, y, a->rank);
}

/* For a commutative op of two inputs: a constant first input swaps with
 * the second; returns the second when it is a constant (NULL if not). */
static value *constant_second(importer *im, const Onnx__NodeProto *n)
{
    value *ca = const_input(im, n, 0), *cb = const_input(im, n, 1);
    if (ca && !cb) {
        char *t = n->input[0];
        n->input[0] = n->input[1];
        n->input[1] = t;
        cb = ca;
    }
    return cb;
}

static pdnn_status import_add(importer *im, const Onnx__NodeProto *n)
{
    if (n->n_input != 2)
        return node_error(PDNN_ERR_CORRUPT, n, "Add takes 2 inputs, %zu given", n->n_input);
    value *cb = constant_second(im, n), *a;
    pdnn_status st;
    int y = -1;
    if (!(a = act_input(im, n, 0, &st)))
        return st;
    if (cb && cb->data) {
        /* x + per-channel vector ({C}, {1,C}, {C,1,1}, {1,C,1,1}): bias_add. */
        int64_t C = a->dims[1];
        int per_channel = cb->count == C &&
                          ((a->rank == 2 && (cb->rank == 1 || (cb->rank == 2 && cb->dims[0] == 1))) ||
                           (a->rank == 4 && ((cb->rank == 3 && cb->dims[1] == 1 && cb->dims[2] == 1) ||
                                             (cb->rank == 4 && cb->dims[0] == 1 && cb->dims[2] == 1 &&
                                              cb->dims[3] == 1))));
        if (per_channel) {
            pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {C, 1, 1, 1}};
            int bn = -1;
            if ((st = check_name(n, n->output[0])) != PDNN_SUCCESS)
                return st;
            st = pdnn_graph_constant(im->graph, NULL, im->device, &bd, cb->data, &bn);
            if (st == PDNN_SUCCESS)
                st = pdnn_graph_bias_add(im->graph, n->output[0], im->device, a->node, bn, &y);
            return finish(im, n, st, y, a->rank);
        }
    }
    return import_binary(im, n, a, PDNN_BINARY_ADD);
}

/* Gemm: y = alpha * op(A) op(B) + beta * C, with B a constant when alpha
 * != 1 and C a per-column vector (bias_add) or absent. */
static pdnn_status import_gemm(importer *im, const Onnx__NodeProto *n, int matmul)
{
    value *a, *b;
    pdnn_status st;
    if (!(a = act_input(im, n, 0, &st)))
        return st;
    int ta = matmul ? 0 : attr_int(n, "transA", 0) != 0, tb = matmul ? 0 : attr_int(n, "transB", 0) != 0;
    float alpha = matmul ? 1.0f : attr_float(n, "alpha", 1.0f), beta = matmul ? 1.0f : attr_float(n, "beta", 1.0f);
    value *cb = const_input(im, n, 1);
    if (n->n_input < 2)
        return node_error(PDNN_ERR_CORRUPT, n, "input B is missing");
    if (a->rank != 2)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "only 2-D matrices are supported (A has rank %d)", a->rank);
    if (cb && cb->rank == 2 && cb->data) {
        float *scaled = malloc((size_t)cb->count * sizeof *scaled);
        if (!scaled)
            return node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
        for (int64_t i = 0; i < cb->count; i++)
            scaled[i] = cb->data[i] * alpha;
        pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_NCHW, {cb->dims[0], cb->dims[1], 1, 1}};
        int bnode = -1;
        st = pdnn_graph_constant(im->graph, NULL, im->device, &d, scaled, &bnode);
        free(scaled);
        if (st != PDNN_SUCCESS)
            return node_error(st, n, "%s", pdnn_last_error());
        int has_c = !matmul && n->n_input > 2 && n->input[2][0];
        int64_t N = tb ? cb->dims[0] : cb->dims[1];
        int y = -1, mm = -1;
        const char *out = n->output[0];
        if ((st = check_name(n, out)) != PDNN_SUCCESS)
            return st;
        if (!has_c) {
            st = pdnn_graph_matmul(im->graph, out, im->device, a->node, bnode, ta, tb, &y);
            return finish(im, n, st, y, 2);
        }
        value *c = const_input(im, n, 2);
        if (!c || !c->data || c->count != N || (c->rank != 1 && !(c->rank == 2 && c->dims[0] == 1)))
            return node_error(PDNN_ERR_UNSUPPORTED, n, "C must be a constant vector of %lld values", (long long)N);
        float *cs = malloc((size_t)N * sizeof *cs);
        if (!cs)
            return node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
        for (int64_t i = 0; i < N; i++)
            cs[i] = c->data[i] * beta;
        pdnn_tensor_desc cd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {N, 1, 1, 1}};
        int cnode = -1;
        st = pdnn_graph_constant(im->graph, NULL, im->device, &cd, cs, &cnode);
        free(cs);
        if (st == PDNN_SUCCESS)
            st = pdnn_graph_matmul(im->graph, NULL, im->device, a->node, bnode, ta, tb, &mm);
        if (st == PDNN_SUCCESS)
            st = pdnn_graph_bias_add(im->graph, out, im->device, mm, cnode, &y);
        return finish(im, n, st, y, 2);
    }
    if (!(b = act_input(im, n, 1, &st)))
        return st;
    if (b->rank != 2)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "only 2-D matrices are supported (B has rank %d)", b->rank);
    if (alpha != 1.0f)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "alpha != 1 needs a constant B");
    if (!matmul && n->n_input > 2 && n->input[2][0])
        return node_error(PDNN_ERR_UNSUPPORTED, n, "C needs a constant B");
    if ((st = check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_matmul(im->graph, n->output[0], im->device, a->node, b->node, ta, tb, &y);
    return finish(im, n, st, y, 2);
}

/* A reshape of x to rank r dims (NCHW memory order, so a plain copy). */
static pdnn_status reshape_to(importer *im, const Onnx__NodeProto *n, value *x, int r, const int64_t *dims)
{
    if (r < 1 || r > 4)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "results of rank %d are not supported (1 to 4)", r);
    int src = x->node;
    pdnn_tensor_desc xd;
    pdnn_status ts = pdnn_graph_node_desc(im->graph, src, &xd);
    if (ts == PDNN_SUCCESS && xd.layout == PDNN_NHWC && xd.dims[2] * xd.dims[3] > 1)
        ts = pdnn_graph_transform(im->graph, NULL, im->device, src, PDNN_NCHW, &src); /* ONNX's element order */
    if (ts != PDNN_SUCCESS)
        return node_error(ts, n, "%s", pdnn_last_error());
    int64_t d4[4] = {1, 1, 1, 1};
    for (int i = 0; i < r; i++)
        d4[i] = dims[i];
    pdnn_status st = check_name(n, n->output[0]);
    if (st != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_reshape(im->graph, n->output[0], im->device, src, d4, &y);
    if (st != PDNN_SUCCESS)
        return node_error(st, n, "%s", pdnn_last_error());
    value v = {.name = n->output[0], .node = y, .rank = r};
    memcpy(v.dims, d4, sizeof d4);
    return add_value(im, &v);
}

static pdnn_status import_flatten(importer *im, const Onnx__NodeProto *n)
{
    value *x;
    pdnn_status st;
    if (!(x = act_input(im, n, 0, &st)))
        return st;
    int64_t axis = attr_int(n, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis %lld is out of range for rank %d",
                          (long long)attr_int(n, "axis", 1), x->rank);
    int64_t d[2] = {1, 1};
    for (int i = 0; i < x->rank; i++)
        d[i >= axis] *= x->dims[i];
    return reshape_to(im, n, x, 2, d);
}

static pdnn_status import_reshape(importer *im, const Onnx__NodeProto *n)
{
    value *x, *sh = const_input(im, n, 1);
    pdnn_status st;
    if (!(x = act_input(im, n, 0, &st)))
        return st;
    if (!sh || !sh->i64 || sh->rank != 1)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "the shape must be a constant int64 vector");
    if (sh->count < 1 || sh->count > 4)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "results of rank %lld are not supported (1 to 4)",
                          (long long)sh->count);
    if (attr_int(n, "allowzero", 0) != 0)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "allowzero=1 is not supported");
    int64_t d[4], total = 1, known = 1;
    int infer = -1;
    for (int i = 0; i < x->rank; i++)
        total *= x->dims[i];
    for (int i = 0; i < (int)sh->count; i++) {
        d[i] = sh->i64[i];
        if (d[i] == 0) {
            if (i >= x->rank)
                return node_error(PDNN_ERR_INVALID_ARGUMENT, n, "shape[%d] = 0 copies a dim the input lacks", i);
            d[i] = x->dims[i];
        }
        if (d[i] == -1) {
            if (infer >= 0)
                return node_error(PDNN_ERR_INVALID_ARGUMENT, n, "the shape has two -1");
            infer = i;
            continue;
        }
        if (d[i] < 1 || d[i] > total || known > total / d[i])
            return node_error(PDNN_ERR_INVALID_ARGUMENT, n, "shape[%d] = %lld does not fit the input's %lld elements",
                              i, (long long)sh->i64[i], (long long)total);
        known *= d[i];
    }
    if (infer >= 0) {
        if (total % known)
            return node_error(PDNN_ERR_INVALID_ARGUMENT, n, "the shape does not divide the input's %lld elements",
                              (long long)total);
        d[infer] = total / known;
    }
    return reshape_to(im, n, x, (int)sh->count, d);
}

static pdnn_status import_softmax(importer *im, const Onnx__NodeProto *n)
{
    value *x;
    pdnn_status st;
    if (!(x = act_input(im, n, 0, &st)))
        return st;
    int64_t axis = attr_int(n, "axis", im->opset >= 13 ? -1 : 1);
    if (axis < 0)
        axis += x->rank;
    /* polydnn's softmax runs over C of {N, C, 1, 1}. Before opset 13 the
     * input is coerced to 2-D at axis, which is the same when the rest is 1. */
    int ok = axis == 1 && (x->rank == 2 || (x->dims[2] == 1 && x->dims[3] == 1));
    if (!ok)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "softmax over axis %lld of a rank-%d input; only over the columns "
                          "of a matrix {N, C} (or {N, C, 1, 1}) is supported", (long long)attr_int(n, "axis", -1),
                          x->rank);
    if ((st = check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_softmax(im->graph, n->output[0], im->device, x->node, &y);
    return finish(im, n, st, y, x->rank);
}

/* Clip (bounds as attributes before opset 11, as optional constant scalar
 * inputs since), LeakyRelu, Sigmoid: one activation node. */
static pdnn_status import_activation(importer *im, const Onnx__NodeProto *n, pdnn_activation mode)
{
    value *x;
    pdnn_status st;
    if (!(x = act_input(im, n, 0, &st)))
        return st;
    float alpha = 0.0f, beta = 0.0f;
    if (mode == PDNN_ACTIVATION_LEAKY_RELU)
        alpha = attr_float(n, "alpha", 0.01f);
    else if (mode == PDNN_ACTIVATION_CLIP && (st = clip_bounds(im, n, 1, &alpha, &beta)) != PDNN_SUCCESS)
        return st;
    if ((st = check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_activation(im->graph, n->output[0], im->device, x->node, mode, alpha, beta, &y);
    return finish(im, n, st, y, x->rank);
}

/* Mul by a constant scalar (either side): a scale node. */
static pdnn_status import_mul(importer *im, const Onnx__NodeProto *n)
{
    if (n->n_input != 2)
        return node_error(PDNN_ERR_CORRUPT, n, "Mul takes 2 inputs, %zu given", n->n_input);
    value *cb = constant_second(im, n), *x;
    pdnn_status st;
    if (!(x = act_input(im, n, 0, &st)))
        return st;
    if (!(cb && cb->data && cb->count == 1)) /* not a scalar: elementwise, b broadcast */
        return import_binary(im, n, x, PDNN_BINARY_MUL);
    const float alpha = cb->data[0];
    if (!isfinite(alpha))
        return node_error(PDNN_ERR_UNSUPPORTED, n, "the scalar is %g; only a finite one is supported", (double)alpha);
    if ((st = check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_scale(im->graph, n->output[0], im->device, x->node, alpha, &y);
    return finish(im, n, st, y, x->rank);
}

static pdnn_status import_concat(importer *im, const Onnx__NodeProto *n)
{
    if (n->n_input < 1)
        return node_error(PDNN_ERR_CORRUPT, n, "Concat has no input");
    if (!attr(n, "axis"))
        return node_error(PDNN_ERR_CORRUPT, n, "Concat's axis is missing");
    if (n->n_input > 1024)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "%zu inputs; at most 1024 are supported", n->n_input);
    pdnn_status st;
    value *first = act_input(im, n, 0, &st);
    if (!first)
        return st;
    const int rank = first->rank;
    int64_t axis = attr_int(n, "axis", 0);
    if (axis < -rank || axis >= rank)
        return node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis %lld is out of range for rank %d", (long long)axis, rank);
    if (axis < 0)
        axis += rank;
    pdnn_node *in = malloc(n->n_input * sizeof *in);
    if (!in)
        return node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
    for (size_t i = 0; i < n->n_input; i++) {
        value *v = act_input(im, n, i, &st);
        if (!v)
            break;
        if (v->rank != rank) {
            st = node_error(PDNN_ERR_INVALID_ARGUMENT, n, "input '%s' has rank %d but input 0 has rank %d", v->name,
                            v->rank, rank);
            break;
        }
        in[i] = v->node;
    }
    if (st == PDNN_SUCCESS)
        st = check_name(n, n->output[0]);
    int y = -1;
    if (st == PDNN_SUCCESS) {
        /* Ranks 2 and 4 are stored as {d0, d1, 1, 1} and NCHW: axis is the dims' own. */
        st = pdnn_graph_concat(im->graph, n->output[0], im->device, in, (int)n->n_input, (int)axis, &y);
        if (st != PDNN_SUCCESS)
            st = node_error(st, n, "%s", pdnn_last_error());
    }
    free(in);
    return st == PDNN_SUCCESS ? set_output(im, n, n->output[0], y, rank) : st;
}

static pdnn_status import_node(importer *im, size_t idx)
{
    Onnx__NodeProto *n = im->g->node[idx];
    const char *op = n->op_type;
    if (!op)
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: node '%s' has no op_type", node_name(n));
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return node_error(PDNN_ERR_UNSUPPORTED, n, "operator domain '%s' is not supported; supported: %s", n->domain,
                          SUPPORTED_OPS);
    if (im->absorbed[idx])
        return PDNN_SUCCESS;
    if (n->n_output < 1 || !n->output[0][0])
        return node_error(PDNN_ERR_CORRUPT, n, "the node has no output");
    for (size_t i = 0; i < n->n_input; i++)
        if (!n->input[i])
            return node_error(PDNN_ERR_CORRUPT, n, "input %zu has no name", i);
    if (strcmp(op, "Conv") == 0)
        return import_conv(im, idx, n);
    if (strcmp(op, "MaxPool") == 0 || strcmp(op, "AveragePool") == 0)
        return import_pool(im, n, op[0] == 'M', 0);
    if (strcmp(op, "GlobalAveragePool") == 0)
        return import_pool(im, n, 0, 1);
    if (strcmp(op, "Relu") == 0) {
        pdnn_status st;
        value *x = act_input(im, n, 0, &st);
        if (!x)
            return st;
        if ((st = check_name(n, n->output[0])) != PDNN_SUCCESS)
            return st;
        int y = -1;
        st = pdnn_graph_relu(im->graph, n->output[0], im->device, x->node, &y);
        return finish(im, n, st, y, x->rank);
    }
    if (strcmp(op, "Clip") == 0)
        return import_activation(im, n, PDNN_ACTIVATION_CLIP);
    if (strcmp(op, "LeakyRelu") == 0)
        return import_activation(im, n, PDNN_ACTIVATION_LEAKY_RELU);
    if (strcmp(op, "Sigmoid") == 0)
        return import_activation(im, n, PDNN_ACTIVATION_SIGMOID);
    if (strcmp(op, "Mul") == 0)
        return import_mul(im, n);
    if (strcmp(op, "Concat") == 0)
        return import_concat(im, n);
    if (strcmp(op, "Add") == 0)
        return import_add(im, n);
    if (strcmp(op, "Gemm") == 0 || strcmp(op, "MatMul") == 0)
        return import_gemm(im, n, op[0] == 'M');
    if (strcmp(op, "Flatten") == 0)
        return import_flatten(im, n);
    if (strcmp(op, "Reshape") == 0)
        return import_reshape(im, n);
    if (strcmp(op, "Softmax") == 0)
        return import_softmax(im, n);
    if (strcmp(op, "Dropout") == 0 || strcmp(op, "Identity") == 0) {
        /* Inference: the output is the input; a Dropout mask is refused. */
        if (n->n_output > 1 && n->output[1][0])
            return node_error(PDNN_ERR_UNSUPPORTED, n, "the Dropout mask output is not supported");
        /* A constant stays a host constant (exporters put Identity on
         * shared initializers), so it can still fold or be a weight. */
        value *c = const_input(im, n, 0), *x = c;
        pdnn_status st;
        if (!c && !(x = act_input(im, n, 0, &st)))
            return st;
        value v = *x;
        v.name = n->output[0];
        v.alias = 1; /* the original owns any host data */
        return add_value(im, &v);
    }
    if (strcmp(op, "Constant") == 0) {
        const Onnx__AttributeProto *a = attr(n, "value");
        if (!a || !a->t)
            return node_error(PDNN_ERR_UNSUPPORTED, n, "only a Constant with a tensor 'value' is supported");
        return tensor_value(im, a->t, n->output[0]);
    }
    if (strcmp(op, "BatchNormalization") == 0)
        return node_error(PDNN_ERR_UNSUPPORTED, n,
                          "BatchNormalization is only supported folded into a Conv whose output it alone reads "
                          "(inference mode, constant parameters); polydnn's graph has no batch-norm node yet");
    return node_error(PDNN_ERR_UNSUPPORTED, n, "operator '%s' is not supported; supported: %s", op, SUPPORTED_OPS);
}

static pdnn_status import_inputs(importer *im, const pdnn_onnx_options *opts, pdnn_onnx_io *io)
{
    for (size_t i = 0; i < im->g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = im->g->input[i];
        if (!vi->name || !vi->name[0])
            return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: graph input %zu has no name", i);
        if (find_value(im, vi->name))
            continue; /* an initializer listed as an input (IR < 4) */
        const Onnx__TypeProto *t = vi->type;
        if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type ||
            !t->tensor_type->shape)
            return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: graph input '%s' is not a tensor "
                               "with a shape", vi->name);
        const Onnx__TypeProto__Tensor *tt = t->tensor_type;
        if (!tt->has_elem_type || tt->elem_type != ONNX_FLOAT)
            return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: graph input '%s' is not float32",
                               vi->name);
        size_t r = tt->shape->n_dim;
        if (r != 2 && r != 4)
            return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: graph input '%s' has rank %zu; "
                               "rank 4 (NCHW) or 2 is supported", vi->name, r);
        value v = {.name = vi->name, .rank = (int)r};
        for (size_t j = 0; j < r; j++) {
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[j];
            int has = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            if (j == 0 && opts->batch > 0)
                v.dims[0] = opts->batch;
            else if (has)
                v.dims[j] = d->dim_value;
            else if (j == 0)
                v.dims[0] = 1;
            else
                return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: graph input '%s': dim %zu is "
                                   "symbolic; only the batch may be", vi->name, j);
        }
        pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_NCHW, {v.dims[0], v.dims[1], r == 4 ? v.dims[2] : 1,
                                                        r == 4 ? v.dims[3] : 1}};
        if (strlen(vi->name) >= sizeof(((pdnn__node *)0)->name))
            return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: graph input name '%.40s...' is too "
                               "long", vi->name);
        pdnn_status st = pdnn_graph_placeholder(im->graph, vi->name, im->device, &d, &v.node);
        const int placeholder = v.node;
        if (st == PDNN_SUCCESS && r == 4 && im->layout == PDNN_NHWC)
            st = pdnn_graph_transform(im->graph, NULL, im->device, placeholder, PDNN_NHWC, &v.node);
        if (st != PDNN_SUCCESS)
            return FAIL(st, "pdnn_graph_import_onnx: graph input '%s': %s", vi->name, pdnn_last_error());
        if ((st = add_value(im, &v)) != PDNN_SUCCESS)
            return st;
        if (io->n_inputs == PDNN_ONNX_MAX_IO)
            return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: more than %d graph inputs",
                               PDNN_ONNX_MAX_IO);
        io->input_rank[io->n_inputs] = (int)r;
        io->inputs[io->n_inputs++] = placeholder;
    }
    return PDNN_SUCCESS;
}

static pdnn_status import_outputs(importer *im, pdnn_onnx_io *io)
{
    if (im->g->n_output < 1)
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: the graph has no output");
    for (size_t i = 0; i < im->g->n_output; i++) {
        const char *name = im->g->output[i]->name;
        value *v = find_value(im, name);
        if (!v)
            return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: graph output '%s' is computed by no node",
                               name ? name : "");
        if (v->node < 0)
            return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: graph output '%s' is a constant",
                               name);
        if (io->n_outputs == PDNN_ONNX_MAX_IO)
            return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: more than %d graph outputs",
                               PDNN_ONNX_MAX_IO);
        int y = v->node;
        pdnn_tensor_desc yd;
        pdnn_status st = pdnn_graph_node_desc(im->graph, y, &yd);
        if (st == PDNN_SUCCESS && yd.layout == PDNN_NHWC) { /* outputs are the file's NCHW */
            char nm[sizeof(((pdnn__node *)0)->name)];
            if ((size_t)snprintf(nm, sizeof nm, "%s/nchw", name) >= sizeof nm)
                return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: graph output name '%.40s...' is too "
                            "long", name);
            st = pdnn_graph_transform(im->graph, nm, im->device, y, PDNN_NCHW, &y);
        }
        if (st != PDNN_SUCCESS)
            return FAIL(st, "pdnn_graph_import_onnx: graph output '%s': %s", name, pdnn_last_error());
        io->output_rank[io->n_outputs] = v->rank;
        io->outputs[io->n_outputs++] = y;
    }
    return PDNN_SUCCESS;
}

static pdnn_status read_file(const char *path, uint8_t **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return FAIL(errno == ENOENT ? PDNN_ERR_NOT_FOUND : PDNN_ERR_IO,
                           "pdnn_graph_import_onnx: cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return FAIL(PDNN_ERR_IO, "pdnn_graph_import_onnx: %s is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > MAX_MODEL_BYTES) {
        fclose(f);
        return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: %s is larger than 2 GiB (weights over "
                           "2 GiB go in external data)", path);
    }
    *len = (size_t)sb.st_size;
    *buf = malloc(*len ? *len : 1);
    if (!*buf) {
        fclose(f);
        return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory reading %s", path);
    }
    size_t got = fread(*buf, 1, *len, f);
    fclose(f);
    if (got != *len) {
        free(*buf);
        *buf = NULL;
        return FAIL(PDNN_ERR_IO, "pdnn_graph_import_onnx: reading %s failed", path);
    }
    return PDNN_SUCCESS;
}

/* Protobuf-c's unpack recurses once per nested message; ONNX nests graphs
 * in attributes and types in types, so a small hostile file could exhaust
 * the stack. This walks the wire format first, guided by the generated
 * descriptors, and refuses nesting deeper than MAX_DEPTH or a field that
 * runs past its message. */
#define MAX_DEPTH 64

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return 0;
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 1;
    }
    return 0;
}

static int nesting_ok(const ProtobufCMessageDescriptor *desc, const uint8_t *p, const uint8_t *end, int depth)
{
    if (depth > MAX_DEPTH)
        return 0;
    while (p < end) {
        uint64_t key, len;
        if (!read_varint(&p, end, &key))
            return 0;
        switch (key & 7) {
        case 0:
            if (!read_varint(&p, end, &len))
                return 0;
            break;
        case 1:
            if (end - p < 8)
                return 0;
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return 0;
            p += 4;
            break;
        case 2: {
            if (!read_varint(&p, end, &len) || len > (uint64_t)(end - p))
                return 0;
            uint64_t num = key >> 3;
            const ProtobufCFieldDescriptor *f =
                desc && num <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(desc, (unsigned)num) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && !nesting_ok(f->descriptor, p, p + len, depth + 1))
                return 0;
            p += len;
            break;
        }
        default: /* groups: not in ONNX */
            return 0;
        }
    }
    return 1;
}

pdnn_status pdnn_graph_import_onnx(const char *path, const void *data, size_t size,
                                   const pdnn_onnx_options *opts, pdnn_graph **out, pdnn_onnx_io *io)
{
    if (!out)
        return FAIL(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_import_onnx: out is NULL");
    *out = NULL;
    if (!path == !data)
        return FAIL(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_graph_import_onnx: give exactly one of path and data (got %s)",
                           path ? "both" : "neither");
    pdnn_onnx_options defaults;
    pdnn_onnx_options_init(&defaults);
    if (!opts)
        opts = &defaults;
    if (opts->batch < 0)
        return FAIL(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_import_onnx: options.batch %lld is negative",
                           (long long)opts->batch);
    if (opts->layout != PDNN_NCHW && opts->layout != PDNN_NHWC)
        return FAIL(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_import_onnx: options.layout %d is neither NCHW (%d) nor "
                    "NHWC (%d)", (int)opts->layout, (int)PDNN_NCHW, (int)PDNN_NHWC);
    pdnn_onnx_io local_io;
    if (!io)
        io = &local_io;
    memset(io, 0, sizeof *io);

    uint8_t *buf = NULL;
    size_t len = size;
    char dir[PATH_MAX];
    importer im = {0};
    pdnn_status st = PDNN_SUCCESS;
    if (path) {
        if ((st = read_file(path, &buf, &len)) != PDNN_SUCCESS)
            return st;
        const char *slash = strrchr(path, '/');
        size_t dl = slash ? (size_t)(slash - path) : 1;
        if (dl >= sizeof dir)
            dl = sizeof dir - 1;
        memcpy(dir, slash ? path : ".", dl);
        dir[dl] = 0;
        if (slash && dl == 0)
            strcpy(dir, "/");
        im.dir = dir;
    } else {
        if (size > MAX_MODEL_BYTES)
            return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: the buffer is larger than 2 GiB");
        im.dir = opts->base_dir;
    }
    const uint8_t *bytes = path ? buf : data;
    if (!nesting_ok(&onnx__model_proto__descriptor, bytes, bytes + len, 0)) {
        free(buf);
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: %s is not a valid ONNX model (malformed protobuf, "
                    "or messages nested deeper than %d)", path ? path : "the buffer", MAX_DEPTH);
    }
    im.model = onnx__model_proto__unpack(NULL, len, bytes);
    free(buf);
    if (!im.model)
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: %s is not a valid ONNX model (the protobuf "
                           "does not parse: truncated or not ONNX)", path ? path : "the buffer");
    im.g = im.model->graph;
    if (!im.g) {
        st = FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: %s has no graph", path ? path : "the buffer");
        goto done;
    }
    im.opset = 1;
    for (size_t i = 0; i < im.model->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = im.model->opset_import[i];
        if ((!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0) && o->has_version)
            im.opset = o->version;
    }
    im.device = opts->device;
    im.fuse = !opts->no_fusion;
    im.layout = opts->layout;
    im.absorbed = calloc(im.g->n_node + 1, 1);
    if (!im.absorbed || (st = pdnn_graph_create(&im.graph)) != PDNN_SUCCESS) {
        st = FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
        goto done;
    }
    for (size_t i = 0; i < im.g->n_initializer && st == PDNN_SUCCESS; i++)
        st = tensor_value(&im, im.g->initializer[i], im.g->initializer[i]->name);
    if (st == PDNN_SUCCESS)
        st = import_inputs(&im, opts, io);
    /* Constant nodes first: they read nothing, and exporters put each just
     * before its reader, e.g. a Clip's bounds after the Conv that the Clip
     * follows, where that Conv's fusion would not see them yet. */
    for (size_t i = 0; i < im.g->n_node && st == PDNN_SUCCESS; i++) {
        const Onnx__NodeProto *n = im.g->node[i];
        if (n->op_type && strcmp(n->op_type, "Constant") == 0 && n->n_input == 0 &&
            (!n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0)) {
            st = import_node(&im, i);
            im.absorbed[i] = 1;
        }
    }
    for (size_t i = 0; i < im.g->n_node && st == PDNN_SUCCESS; i++)
        st = import_node(&im, i);
    if (st == PDNN_SUCCESS)
        st = import_outputs(&im, io);
done:
    for (int i = 0; i < im.n_vals; i++)
        if (!im.vals[i].alias) {
            free(im.vals[i].data);
            free(im.vals[i].i64);
        }
    free(im.vals);
    free(im.absorbed);
    onnx__model_proto__free_unpacked(im.model, NULL);
    if (st != PDNN_SUCCESS) {
        pdnn_graph_destroy(im.graph);
        memset(io, 0, sizeof *io);
        return st;
    }
    *out = im.graph;
    return PDNN_SUCCESS;
}

#endif
