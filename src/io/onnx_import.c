/* ONNX import into polydnn's graph (pdnn_graph_import_onnx). The file is
 * parsed by protobuf-c code generated at build time from the system's
 * onnx.proto (Makefile.am); the importer maps the parsed nodes onto graph
 * nodes. Initializers stay host arrays until an op needs them, so a
 * BatchNormalization can be folded into its Conv's weights first. This
 * file holds the entry point and the graph's inputs and outputs; the
 * others are listed in onnx_internal.h. */
#include "config.h"

#include "graph/graph.h"
#include "graph/graph_batch.h"
#include "polydnn.h"

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

#include "io/onnx_internal.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static pdnn_status import_inputs(importer *im, const pdnn_onnx_options *opts, pdnn_onnx_io *io)
{
    for (size_t i = 0; i < im->g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = im->g->input[i];
        if (!vi->name || !vi->name[0])
            return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: graph input %zu has no name", i);
        if (pdnn__onnx_find_value(im, vi->name))
            continue; /* an initializer listed as an input (IR < 4) */
        const Onnx__TypeProto *t = vi->type;
        if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type ||
            !t->tensor_type->shape)
            return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: graph input '%s' is not a tensor "
                               "with a shape", vi->name);
        const Onnx__TypeProto__Tensor *tt = t->tensor_type;
        const pdnn_dtype red = tt->has_elem_type ? pdnn__onnx_reduced_type(tt->elem_type) : PDNN_FLOAT32;
        if (!tt->has_elem_type || (tt->elem_type != ONNX_FLOAT && red == PDNN_FLOAT32))
            return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: graph input '%s' is not float32, float16 "
                        "or bfloat16", vi->name);
        /* a reduced input is fed float32 (keep_io_types): the policy casts it */
        pdnn_status rst = pdnn__onnx_saw_reduced(im, red, vi->name);
        if (rst != PDNN_SUCCESS)
            return rst;
        size_t r = tt->shape->n_dim;
        if (r > PDNN_MAX_RANK)
            return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: graph input '%s' has rank %zu; "
                               "ranks 0 to %d are supported", vi->name, r, PDNN_MAX_RANK);
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
        pdnn_tensor_desc d; /* NCHW at ranks 2 and 4, ND at the others */
        pdnn__onnx_value_desc(&v, &d);
        if (strlen(vi->name) >= sizeof(((pdnn__node *)0)->name))
            return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: graph input name '%.40s...' is too "
                               "long", vi->name);
        pdnn_status st = pdnn_graph_placeholder(im->graph, vi->name, im->device, &d, &v.node);
        const int placeholder = v.node;
        if (st == PDNN_SUCCESS && r == 4 && im->layout == PDNN_NHWC)
            st = pdnn_graph_transform(im->graph, NULL, im->device, placeholder, PDNN_NHWC, &v.node);
        if (st != PDNN_SUCCESS)
            return FAIL(st, "pdnn_graph_import_onnx: graph input '%s': %s", vi->name, pdnn_last_error());
        if ((st = pdnn__onnx_add_value(im, &v)) != PDNN_SUCCESS)
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
        value *v = pdnn__onnx_find_value(im, name);
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
        if (st == PDNN_SUCCESS)
            st = pdnn__onnx_output_float32(im->graph, name, im->device, &y);
        if (st != PDNN_SUCCESS)
            return FAIL(st, "pdnn_graph_import_onnx: graph output '%s': %s", name, pdnn_last_error());
        io->output_rank[io->n_outputs] = v->rank;
        io->outputs[io->n_outputs++] = y;
    }
    return PDNN_SUCCESS;
}

/* One import of the parsed model (its graph present) with opts. */
static pdnn_status import_parsed(Onnx__ModelProto *model, const char *dir, const pdnn_onnx_options *opts,
                                 pdnn_graph **out, pdnn_onnx_io *io)
{
    importer im = {0};
    pdnn_status st = PDNN_SUCCESS;
    im.dir = dir;
    im.model = model;
    im.g = im.model->graph;
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
    if (!im.absorbed || pdnn_graph_create(&im.graph) != PDNN_SUCCESS) {
        st = FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
        goto done;
    }
    st = pdnn__onnx_check_ops(&im);
    im.precision_given = opts->precision != PDNN_FLOAT32;
    if (st == PDNN_SUCCESS && im.precision_given) /* keep_io_types: see import_outputs */
        st = pdnn_graph_set_precision(im.graph, opts->precision);
    if (st == PDNN_SUCCESS)
        st = pdnn__onnx_train_begin(&im, opts);
    for (size_t i = 0; i < im.g->n_initializer && st == PDNN_SUCCESS; i++)
        st = pdnn__onnx_tensor_value(&im, im.g->initializer[i], im.g->initializer[i]->name);
    for (size_t i = 0; i < im.g->n_node && st == PDNN_SUCCESS; i++)
        st = pdnn__onnx_check_node(im.g->node[i]);
    if (st == PDNN_SUCCESS)
        st = import_inputs(&im, opts, io);
    /* Constant nodes first: they read nothing, and exporters put each just
     * before its reader, e.g. a Clip's bounds after the Conv that the Clip
     * follows, where that Conv's fusion would not see them yet. */
    for (size_t i = 0; i < im.g->n_node && st == PDNN_SUCCESS; i++) {
        const Onnx__NodeProto *n = im.g->node[i];
        if (n->op_type && strcmp(n->op_type, "Constant") == 0 && n->n_input == 0 &&
            (!n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0)) {
            st = pdnn__onnx_import_node(&im, i);
            im.absorbed[i] = 1;
        }
    }
    for (size_t i = 0; i < im.g->n_node && st == PDNN_SUCCESS; i++)
        st = pdnn__onnx_import_node(&im, i);
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
    pdnn__onnx_train_end(&im);
    if (st != PDNN_SUCCESS) {
        pdnn_graph_destroy(im.graph);
        memset(io, 0, sizeof *io);
        return st;
    }
    *out = im.graph;
    return PDNN_SUCCESS;
}

/* Whether some graph input (not an initializer) has a symbolic first dim. */
static int symbolic_batch(const Onnx__GraphProto *g)
{
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        int init = 0;
        for (size_t k = 0; k < g->n_initializer && !init; k++)
            init = vi->name && g->initializer[k]->name && strcmp(vi->name, g->initializer[k]->name) == 0;
        const Onnx__TypeProto *t = vi->type;
        if (!init && t && t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && t->tensor_type &&
            t->tensor_type->shape && t->tensor_type->shape->n_dim > 0 &&
            t->tensor_type->shape->dim[0]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            return 1;
    }
    return 0;
}

/* g's batch plan (graph_batch.c): the model imported again, from the one
 * parse, at two batches other than g's (the first two of 2, 3, 4) for the
 * fit, which g's own batch then checks. Two imports, not more: each costs
 * what the first did (the weights are copied each time). An import that
 * fails there leaves g at its batch, saying why. */
static pdnn_status plan_batches(Onnx__ModelProto *model, const char *dir, const pdnn_onnx_options *opts,
                                pdnn_graph *g)
{
    const int64_t b0 = opts->batch > 0 ? opts->batch : 1;
    int64_t at[2];
    for (int64_t b = 2, k = 0; k < 2; b++)
        if (b != b0)
            at[k++] = b;
    pdnn_graph *gs[2] = {NULL, NULL};
    pdnn_status st = PDNN_SUCCESS;
    for (int k = 0; k < 2; k++) {
        pdnn_onnx_options o = *opts;
        o.batch = at[k];
        pdnn_onnx_io io = {0};
        if (import_parsed(model, dir, &o, &gs[k], &io) != PDNN_SUCCESS) {
            char why[512];
            snprintf(why, sizeof why, "the model's shape arithmetic does not hold at batch %lld (not affine in the "
                     "batch, or a batch it cannot take): importing it there fails: %s", (long long)at[k],
                     pdnn_last_error());
            pdnn__batch_plan_refuse(g, b0, why);
            break;
        }
    }
    if (gs[0] && gs[1])
        st = pdnn__batch_plan_fit(g, b0, gs[0], at[0], gs[1], at[1]);
    pdnn_graph_destroy(gs[0]);
    pdnn_graph_destroy(gs[1]);
    return st;
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
    if (path) {
        pdnn_status st = pdnn__onnx_read_file(path, &buf, &len);
        if (st != PDNN_SUCCESS)
            return st;
        const char *slash = strrchr(path, '/');
        size_t dl = slash ? (size_t)(slash - path) : 1;
        if (dl >= sizeof dir)
            dl = sizeof dir - 1;
        memcpy(dir, slash ? path : ".", dl);
        dir[dl] = 0;
        if (slash && dl == 0)
            strcpy(dir, "/");
    } else if (size > MAX_MODEL_BYTES) {
        return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: the buffer is larger than 2 GiB");
    }
    const uint8_t *bytes = path ? buf : data;
    if (!pdnn__onnx_nesting_ok(&onnx__model_proto__descriptor, bytes, bytes + len, 0)) {
        free(buf);
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: %s is not a valid ONNX model (malformed protobuf, "
                    "or messages nested deeper than %d)", path ? path : "the buffer", MAX_DEPTH);
    }
    Onnx__ModelProto *model = onnx__model_proto__unpack(NULL, len, bytes);
    free(buf);
    if (!model)
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: %s is not a valid ONNX model (the protobuf "
                           "does not parse: truncated or not ONNX)", path ? path : "the buffer");
    if (!model->graph) {
        onnx__model_proto__free_unpacked(model, NULL);
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: %s has no graph", path ? path : "the buffer");
    }
    const char *where = path ? dir : opts->base_dir;
    pdnn_status st = import_parsed(model, where, opts, out, io);
    if (st == PDNN_SUCCESS && !opts->trainable && symbolic_batch(model->graph))
        st = plan_batches(model, where, opts, *out);
    if (st != PDNN_SUCCESS) {
        pdnn_graph_destroy(*out);
        *out = NULL;
        memset(io, 0, sizeof *io);
    }
    onnx__model_proto__free_unpacked(model, NULL);
    return st;
}

#endif
