/* ONNX import: models built here with the generated protobuf-c code and
 * packed, then imported: a small Conv model runs right on the host
 * (initializer and external-data weights), and bad files fail with clear
 * messages: unsupported ops (all of them counted at once, the first
 * node named, the supported list), truncated and garbage bytes, missing
 * initializer, overflowing dims, external data leaving the model's
 * directory, a standalone BatchNorm without its parameters. */
#include "helpers.h"
#include "onnx.pb-c.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A model: x {1,2,4,4} -> Conv(w {3,2,1,1}, b) -> op2 (Relu or another
 * op type) -> y. Owned pieces live in the struct. */
typedef struct built {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__NodeProto conv, op2, *nodes[2];
    char *conv_in[3], *op2_in[1], *conv_out[1], *op2_out[1];
    Onnx__TensorProto w, b, *inits[2];
    int64_t wdims[4], bdims[1];
    float wdata[6], bdata[3];
    Onnx__ValueInfoProto xin, yout, *ins[1], *outs[1];
    Onnx__TypeProto xt, yt;
    Onnx__TypeProto__Tensor xtt, ytt;
    Onnx__TensorShapeProto xs;
    Onnx__TensorShapeProto__Dimension xd[4], *xdp[4];
    Onnx__StringStringEntryProto loc, *ext[1];
} built;

static void build(built *b, const char *op2)
{
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->m);
    onnx__graph_proto__init(&b->g);
    onnx__operator_set_id_proto__init(&b->opset);
    b->opset.domain = "";
    b->opset.has_version = 1;
    b->opset.version = 13;
    b->opsets[0] = &b->opset;
    b->m.n_opset_import = 1;
    b->m.opset_import = b->opsets;
    b->m.has_ir_version = 1;
    b->m.ir_version = 8;
    b->m.graph = &b->g;
    b->g.name = "g";

    onnx__node_proto__init(&b->conv);
    b->conv.op_type = "Conv";
    b->conv.name = "conv0";
    b->conv_in[0] = "x", b->conv_in[1] = "w", b->conv_in[2] = "b";
    b->conv.n_input = 3, b->conv.input = b->conv_in;
    b->conv_out[0] = "c";
    b->conv.n_output = 1, b->conv.output = b->conv_out;
    onnx__node_proto__init(&b->op2);
    b->op2.op_type = (char *)op2;
    b->op2.name = "second_node";
    b->op2_in[0] = "c";
    b->op2.n_input = 1, b->op2.input = b->op2_in;
    b->op2_out[0] = "y";
    b->op2.n_output = 1, b->op2.output = b->op2_out;
    b->nodes[0] = &b->conv, b->nodes[1] = &b->op2;
    b->g.n_node = 2, b->g.node = b->nodes;

    onnx__tensor_proto__init(&b->w);
    b->w.name = "w";
    b->w.has_data_type = 1, b->w.data_type = 1;
    int64_t wd[4] = {3, 2, 1, 1};
    memcpy(b->wdims, wd, sizeof wd);
    b->w.n_dims = 4, b->w.dims = b->wdims;
    for (int i = 0; i < 6; i++)
        b->wdata[i] = (float)(i + 1) * (i % 2 ? -0.5f : 0.25f);
    b->w.n_float_data = 6, b->w.float_data = b->wdata;
    onnx__tensor_proto__init(&b->b);
    b->b.name = "b";
    b->b.has_data_type = 1, b->b.data_type = 1;
    b->bdims[0] = 3;
    b->b.n_dims = 1, b->b.dims = b->bdims;
    b->bdata[0] = 0.5f, b->bdata[1] = -1.0f, b->bdata[2] = 2.0f;
    b->b.n_float_data = 3, b->b.float_data = b->bdata;
    b->inits[0] = &b->w, b->inits[1] = &b->b;
    b->g.n_initializer = 2, b->g.initializer = b->inits;

    onnx__value_info_proto__init(&b->xin);
    onnx__type_proto__init(&b->xt);
    onnx__type_proto__tensor__init(&b->xtt);
    onnx__tensor_shape_proto__init(&b->xs);
    int64_t xd[4] = {1, 2, 4, 4};
    for (int i = 0; i < 4; i++) {
        onnx__tensor_shape_proto__dimension__init(&b->xd[i]);
        b->xd[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        b->xd[i].dim_value = xd[i];
        b->xdp[i] = &b->xd[i];
    }
    b->xs.n_dim = 4, b->xs.dim = b->xdp;
    b->xtt.has_elem_type = 1, b->xtt.elem_type = 1, b->xtt.shape = &b->xs;
    b->xt.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, b->xt.tensor_type = &b->xtt;
    b->xin.name = "x", b->xin.type = &b->xt;
    b->ins[0] = &b->xin;
    b->g.n_input = 1, b->g.input = b->ins;
    onnx__value_info_proto__init(&b->yout);
    onnx__type_proto__init(&b->yt);
    onnx__type_proto__tensor__init(&b->ytt);
    b->ytt.has_elem_type = 1, b->ytt.elem_type = 1;
    b->yt.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, b->yt.tensor_type = &b->ytt;
    b->yout.name = "y", b->yout.type = &b->yt;
    b->outs[0] = &b->yout;
    b->g.n_output = 1, b->g.output = b->outs;
}

static uint8_t *pack(const built *b, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = malloc(*len);
    cr_assert(buf);
    cr_assert_eq(onnx__model_proto__pack(&b->m, buf), *len);
    return buf;
}

static pdnn_status import(const built *b, const pdnn_onnx_options *o, pdnn_graph **g, pdnn_onnx_io *io)
{
    size_t len;
    uint8_t *buf = pack(b, &len);
    pdnn_status st = pdnn_graph_import_onnx(NULL, buf, len, o, g, io);
    free(buf);
    return st;
}

/* Runs the imported graph on /cpu:0 with x = 0..31 / 8 and checks
 * y = relu(conv1x1(x) + b) against a loop. */
static void check_runs(pdnn_graph *g, const pdnn_onnx_io *io)
{
    cr_assert_eq(io->n_inputs, 1);
    cr_assert_eq(io->n_outputs, 1);
    cr_assert_eq(io->output_rank[0], 4);
    pdnn_session_config c;
    pdnn_session_config_init(&c);
    pdnn_session *s = NULL;
    cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_device *host = NULL;
    cr_assert_eq(pdnn_device_find(pdnn_session_context(s), "/cpu:0", &host), PDNN_SUCCESS);
    pdnn_tensor_desc xd = {PDNN_FLOAT32, PDNN_NCHW, {1, 2, 4, 4}, 0};
    float x[32], y[48];
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i - 12) / 8.0f;
    pdnn_tensor *xt = NULL, *yt = NULL;
    cr_assert_eq(pdnn_tensor_create(host, &xd, &xt), PDNN_SUCCESS);
    cr_assert_eq(pdnn_tensor_write(xt, x, sizeof x), PDNN_SUCCESS);
    cr_assert_eq(pdnn_session_run(s, io->inputs, &xt, 1, io->outputs, 1, &yt), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    cr_assert_eq(pdnn_tensor_read(yt, y, sizeof y), PDNN_SUCCESS);
    static const float w[6] = {0.25f, -1.0f, 0.75f, -2.0f, 1.25f, -3.0f}, b[3] = {0.5f, -1.0f, 2.0f};
    for (int k = 0; k < 3; k++)
        for (int p = 0; p < 16; p++) {
            float want = w[k * 2] * x[p] + w[k * 2 + 1] * x[16 + p] + b[k];
            want = want > 0 ? want : 0;
            cr_assert_float_eq(y[k * 16 + p], want, 1e-5f, "y[%d][%d] = %g, want %g", k, p, (double)y[k * 16 + p],
                               (double)want);
        }
    pdnn_tensor_release(xt);
    pdnn_tensor_release(yt);
    pdnn_session_destroy(s);
}

Test(onnx, conv_relu_imports_and_runs)
{
    built b;
    build(&b, "Relu");
    pdnn_graph *g = NULL;
    pdnn_onnx_io io;
    cr_assert_eq(import(&b, NULL, &g, &io), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_node n;
    cr_assert_eq(pdnn_graph_find(g, "y", &n), PDNN_SUCCESS, "nodes carry the ONNX value names");
    cr_assert_eq(n, io.outputs[0]);
    /* Fused: the Relu is the convolution's epilogue, so "y" is the Conv2D. */
    cr_assert_str_eq(pdnn_graph_node_op(g, n), "Conv2D");
    cr_assert_eq(pdnn_graph_find(g, "c", &n), PDNN_ERR_NOT_FOUND);
    check_runs(g, &io);
    pdnn_graph_destroy(g);
    /* Without fusion the Relu is a node of its own reading "c". */
    pdnn_onnx_options o;
    pdnn_onnx_options_init(&o);
    o.no_fusion = 1;
    cr_assert_eq(import(&b, &o, &g, &io), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_find(g, "y", &n), PDNN_SUCCESS);
    cr_assert_str_eq(pdnn_graph_node_op(g, n), "Relu");
    cr_assert_eq(pdnn_graph_find(g, "c", &n), PDNN_SUCCESS);
    cr_assert_str_eq(pdnn_graph_node_op(g, n), "Conv2D");
    check_runs(g, &io);
    pdnn_graph_destroy(g);
}

/* layout NHWC: a Transpose after the input, OHWI weights, the output
 * transposed back as "y/nchw"; an unknown layout is refused. */
Test(onnx, nhwc_layout_runs_inside_with_nchw_edges)
{
    built b;
    build(&b, "Relu");
    pdnn_onnx_options o;
    pdnn_onnx_options_init(&o);
    o.layout = PDNN_NHWC;
    pdnn_graph *g = NULL;
    pdnn_onnx_io io;
    cr_assert_eq(import(&b, &o, &g, &io), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_node n;
    pdnn_tensor_desc d;
    cr_assert_eq(pdnn_graph_find(g, "y", &n), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_node_desc(g, n, &d), PDNN_SUCCESS);
    cr_assert_eq(d.layout, PDNN_NHWC, "the network runs in NHWC");
    cr_assert_str_eq(pdnn_graph_node_name(g, io.outputs[0]), "y/nchw");
    cr_assert_str_eq(pdnn_graph_node_op(g, io.outputs[0]), "Transpose");
    cr_assert_eq(pdnn_graph_node_desc(g, io.outputs[0], &d), PDNN_SUCCESS);
    cr_assert_eq(d.layout, PDNN_NCHW);
    cr_assert_eq(pdnn_graph_node_desc(g, io.inputs[0], &d), PDNN_SUCCESS);
    cr_assert_eq(d.layout, PDNN_NCHW, "the input stays the file's NCHW");
    check_runs(g, &io);
    pdnn_graph_destroy(g);
    o.layout = PDNN_HWIO;
    cr_assert_eq(import(&b, &o, &g, &io), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "options.layout"), "%s", pdnn_last_error());
}

Test(onnx, batch_option_overrides_the_files_batch)
{
    built b;
    build(&b, "Relu");
    pdnn_onnx_options o;
    pdnn_onnx_options_init(&o);
    o.batch = 5;
    pdnn_graph *g = NULL;
    pdnn_onnx_io io;
    cr_assert_eq(import(&b, &o, &g, &io), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_desc d;
    cr_assert_eq(pdnn_graph_node_desc(g, io.outputs[0], &d), PDNN_SUCCESS);
    cr_assert_eq(d.dims[0], 5);
    pdnn_graph_destroy(g);
}

Test(onnx, unsupported_op_names_op_node_and_list)
{
    built b;
    build(&b, "LRN");
    pdnn_graph *g = (pdnn_graph *)1;
    cr_assert_eq(import(&b, NULL, &g, NULL), PDNN_ERR_UNSUPPORTED);
    cr_assert_null(g);
    const char *e = pdnn_last_error();
    cr_assert(strstr(e, "unsupported operators: LRN x1 (") && strstr(e, "second_node") &&
                  strstr(e, "supported: Abs, Add, AveragePool"),
              "%s", e);
}

/* An attribute of the wrong type, or an op given too many inputs, is
 * refused naming the node and the attribute: they used to be ignored
 * (Gemm's transB as a float computed x @ w, LeakyRelu's alpha as the
 * string "0.5" used 0.01, a Relu with three inputs ran on the first). */
Test(onnx, wrong_attribute_types_and_input_counts_are_refused)
{
    static const struct {
        const char *op, *attr;
        Onnx__AttributeProto__AttributeType type;
        const char *want;
    } bad[] = {
        {"Gemm", "transB", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "attribute transB is a float; it must be an int"},
        {"LeakyRelu", "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING,
         "attribute alpha is a string; it must be a float"},
        {"Softmax", "axis", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, "attribute axis is ints; it must be an int"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        built b;
        build(&b, bad[i].op);
        Onnx__AttributeProto a, *ap[1] = {&a};
        onnx__attribute_proto__init(&a);
        a.name = (char *)bad[i].attr;
        a.has_type = 1, a.type = bad[i].type;
        int64_t one = 1;
        if (a.type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
            a.has_f = 1, a.f = 1.0f;
        else if (a.type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
            a.has_s = 1, a.s.data = (uint8_t *)"0.5", a.s.len = 3;
        else
            a.n_ints = 1, a.ints = &one;
        b.op2.n_attribute = 1, b.op2.attribute = ap;
        char *two[2] = {"c", "w"};
        if (i == 0) /* Gemm takes two */
            b.op2.n_input = 2, b.op2.input = two;
        pdnn_graph *g = NULL;
        cr_assert_eq(import(&b, NULL, &g, NULL), PDNN_ERR_CORRUPT, "%s.%s", bad[i].op, bad[i].attr);
        const char *e = pdnn_last_error();
        cr_assert(strstr(e, "node 'second_node'") && strstr(e, bad[i].want), "%s", e);
        /* The right type imports (Gemm needs more than this model has). */
        if (i == 1) {
            a.has_s = 0, a.has_f = 1, a.f = 0.5f, a.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
            cr_assert_eq(import(&b, NULL, &g, NULL), PDNN_SUCCESS, "%s", pdnn_last_error());
            pdnn_graph_destroy(g);
        }
    }
    built b;
    build(&b, "Relu");
    char *three[3] = {"c", "w", "b"};
    b.op2.n_input = 3, b.op2.input = three;
    pdnn_graph *g = NULL;
    cr_assert_eq(import(&b, NULL, &g, NULL), PDNN_ERR_CORRUPT);
    cr_assert(strstr(pdnn_last_error(), "node 'second_node' (Relu): Relu takes 1 to 1 inputs, 3 given"), "%s",
              pdnn_last_error());
}

/* Every unknown operator at once, counted, in the order they first
 * appear; the first node is named. */
Test(onnx, unsupported_ops_are_all_counted)
{
    built b;
    build(&b, "NonZero");
    b.conv.op_type = "NonZero";
    pdnn_graph *g = NULL;
    cr_assert_eq(import(&b, NULL, &g, NULL), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "unsupported operators: NonZero x2 (the first at node 'conv0')"), "%s",
              pdnn_last_error());
    build(&b, "TopK");
    b.conv.op_type = "NonMaxSuppression";
    cr_assert_eq(import(&b, NULL, &g, NULL), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "unsupported operators: NonMaxSuppression x1, TopK x1 (the first at node "
                                        "'conv0')"),
              "%s", pdnn_last_error());
    build(&b, "Relu");
    b.op2.domain = "com.microsoft";
    cr_assert_eq(import(&b, NULL, &g, NULL), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "unsupported operators: com.microsoft.Relu x1"), "%s", pdnn_last_error());
}

Test(onnx, standalone_batch_norm_needs_its_parameters)
{
    built b;
    build(&b, "BatchNormalization");
    /* Its input is the graph's input, not a Conv it could fold into, and
     * it has none of its four parameters. */
    b.op2_in[0] = "x";
    b.op2_out[0] = "y";
    b.conv_out[0] = "unused";
    pdnn_graph *g = NULL;
    cr_assert_eq(import(&b, NULL, &g, NULL), PDNN_ERR_CORRUPT);
    cr_assert(strstr(pdnn_last_error(), "BatchNormalization takes 5 inputs, 1 given"), "%s", pdnn_last_error());
}

Test(onnx, truncated_model_never_crashes)
{
    built b;
    build(&b, "Relu");
    size_t len;
    uint8_t *buf = pack(&b, &len);
    int failed = 0;
    for (size_t cut = 0; cut < len; cut++) {
        pdnn_graph *g = NULL;
        pdnn_status st = pdnn_graph_import_onnx(NULL, buf, cut, NULL, &g, NULL);
        if (st != PDNN_SUCCESS) {
            failed++;
            cr_assert_null(g);
            cr_assert(pdnn_last_error()[0], "a failure at %zu bytes has a message", cut);
        }
        pdnn_graph_destroy(g);
    }
    /* The graph is the model's last big field: cutting inside it fails. */
    cr_assert_gt(failed, (int)len / 2, "%d of %zu prefixes failed", failed, len);
    pdnn_graph *g = NULL;
    cr_assert_eq(pdnn_graph_import_onnx(NULL, buf, len / 2, NULL, &g, NULL), PDNN_ERR_CORRUPT);
    cr_assert(strstr(pdnn_last_error(), "not a valid ONNX model"), "%s", pdnn_last_error());
    free(buf);
}

Test(onnx, garbage_and_missing_files)
{
    uint8_t junk[512];
    unsigned s = 12345;
    for (int trial = 0; trial < 200; trial++) {
        for (size_t i = 0; i < sizeof junk; i++)
            junk[i] = (uint8_t)((s = s * 1103515245u + 12345u) >> 16);
        pdnn_graph *g = NULL;
        pdnn_status st = pdnn_graph_import_onnx(NULL, junk, sizeof junk, NULL, &g, NULL);
        cr_assert_neq(st, PDNN_SUCCESS);
        cr_assert_null(g);
    }
    pdnn_graph *g = NULL;
    cr_assert_eq(pdnn_graph_import_onnx("/nonexistent/model.onnx", NULL, 0, NULL, &g, NULL), PDNN_ERR_NOT_FOUND);
    cr_assert(strstr(pdnn_last_error(), "/nonexistent/model.onnx"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_import_onnx(NULL, NULL, 0, NULL, &g, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_graph_import_onnx("/dev/null", junk, 1, NULL, &g, NULL), PDNN_ERR_INVALID_ARGUMENT);
}

Test(onnx, missing_initializer_is_named)
{
    built b;
    build(&b, "Relu");
    b.g.n_initializer = 1; /* drops b */
    pdnn_graph *g = NULL;
    cr_assert_neq(import(&b, NULL, &g, NULL), PDNN_SUCCESS);
    cr_assert(strstr(pdnn_last_error(), "conv0") && strstr(pdnn_last_error(), "bias"), "%s", pdnn_last_error());
    build(&b, "Relu");
    b.op2_in[0] = "nowhere";
    cr_assert_eq(import(&b, NULL, &g, NULL), PDNN_ERR_CORRUPT);
    cr_assert(strstr(pdnn_last_error(), "'nowhere'"), "%s", pdnn_last_error());
}

Test(onnx, overflowing_dims_are_refused)
{
    built b;
    build(&b, "Relu");
    b.wdims[0] = INT64_C(1) << 40;
    b.wdims[1] = INT64_C(1) << 40;
    pdnn_graph *g = NULL;
    cr_assert_eq(import(&b, NULL, &g, NULL), PDNN_ERR_CORRUPT);
    cr_assert(strstr(pdnn_last_error(), "overflow"), "%s", pdnn_last_error());
    build(&b, "Relu");
    b.wdims[0] = 4; /* 8 floats needed, 6 given */
    cr_assert_eq(import(&b, NULL, &g, NULL), PDNN_ERR_CORRUPT);
    cr_assert(strstr(pdnn_last_error(), "6 floats"), "%s", pdnn_last_error());
    /* 4 TiB declared, 6 floats held: refused before allocating anything. */
    build(&b, "Relu");
    b.wdims[0] = INT64_C(1) << 20;
    b.wdims[1] = INT64_C(1) << 20;
    cr_assert_eq(import(&b, NULL, &g, NULL), PDNN_ERR_CORRUPT, "%s", pdnn_last_error());
    cr_assert(strstr(pdnn_last_error(), "6 floats"), "%s", pdnn_last_error());
}

/* Weights in a side file next to the model, located relative to it. */
static void external_weights(built *b, const char *location)
{
    b->w.n_float_data = 0;
    b->w.has_data_location = 1;
    b->w.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    onnx__string_string_entry_proto__init(&b->loc);
    b->loc.key = "location";
    b->loc.value = (char *)location;
    b->ext[0] = &b->loc;
    b->w.n_external_data = 1;
    b->w.external_data = b->ext;
}

Test(onnx, external_data_inside_the_models_directory)
{
    char dir[] = "/tmp/pdnn-onnx-XXXXXX";
    cr_assert(mkdtemp(dir));
    char wpath[256], mpath[256];
    snprintf(wpath, sizeof wpath, "%s/weights.bin", dir);
    snprintf(mpath, sizeof mpath, "%s/model.onnx", dir);
    built b;
    build(&b, "Relu");
    FILE *f = fopen(wpath, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(b.wdata, sizeof b.wdata, 1, f), 1);
    fclose(f);
    external_weights(&b, "weights.bin");
    size_t len;
    uint8_t *buf = pack(&b, &len);
    f = fopen(mpath, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(buf, len, 1, f), 1);
    fclose(f);

    pdnn_graph *g = NULL;
    pdnn_onnx_io io;
    cr_assert_eq(pdnn_graph_import_onnx(mpath, NULL, 0, NULL, &g, &io), PDNN_SUCCESS, "%s", pdnn_last_error());
    check_runs(g, &io);
    pdnn_graph_destroy(g);
    g = NULL;
    /* A buffer has no directory unless one is given. */
    cr_assert_eq(pdnn_graph_import_onnx(NULL, buf, len, NULL, &g, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "base_dir"), "%s", pdnn_last_error());
    pdnn_onnx_options o;
    pdnn_onnx_options_init(&o);
    o.base_dir = dir;
    cr_assert_eq(pdnn_graph_import_onnx(NULL, buf, len, &o, &g, &io), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_graph_destroy(g);
    free(buf);

    /* Leaving the directory: by "..", by an absolute path, by a link. */
    const char *bad[] = {"../weights.bin", "/etc/passwd", "link.bin"};
    char lpath[256];
    snprintf(lpath, sizeof lpath, "%s/link.bin", dir);
    cr_assert_eq(symlink("/etc/passwd", lpath), 0);
    for (int i = 0; i < 3; i++) {
        build(&b, "Relu");
        external_weights(&b, bad[i]);
        buf = pack(&b, &len);
        g = NULL;
        cr_assert_neq(pdnn_graph_import_onnx(NULL, buf, len, &o, &g, NULL), PDNN_SUCCESS, "%s accepted", bad[i]);
        cr_assert(strstr(pdnn_last_error(), "directory"), "%s: %s", bad[i], pdnn_last_error());
        free(buf);
    }
    unlink(lpath);
    unlink(wpath);
    unlink(mpath);
    rmdir(dir);
}

/* A FIFO as the model or as its external data is refused at once, never
 * waited on (opening a FIFO for reading blocks until a writer comes). */
Test(onnx, fifos_are_refused, .timeout = 20)
{
    char dir[] = "/tmp/pdnn-onnx-XXXXXX";
    cr_assert(mkdtemp(dir));
    char fpath[256], wpath[256];
    snprintf(fpath, sizeof fpath, "%s/model.onnx", dir);
    snprintf(wpath, sizeof wpath, "%s/weights.bin", dir);
    cr_assert_eq(mkfifo(fpath, 0600), 0);
    cr_assert_eq(mkfifo(wpath, 0600), 0);
    pdnn_graph *g = NULL;
    cr_assert_eq(pdnn_graph_import_onnx(fpath, NULL, 0, NULL, &g, NULL), PDNN_ERR_IO);
    cr_assert(strstr(pdnn_last_error(), "it is a FIFO, not a regular file"), "%s", pdnn_last_error());
    cr_assert(strstr(pdnn_last_error(), fpath), "%s", pdnn_last_error());
    built b;
    build(&b, "Relu");
    external_weights(&b, "weights.bin");
    size_t len;
    uint8_t *buf = pack(&b, &len);
    pdnn_onnx_options o;
    pdnn_onnx_options_init(&o);
    o.base_dir = dir;
    cr_assert_eq(pdnn_graph_import_onnx(NULL, buf, len, &o, &g, NULL), PDNN_ERR_IO);
    cr_assert(strstr(pdnn_last_error(), "weights.bin: it is a FIFO, not a regular file"), "%s", pdnn_last_error());
    cr_assert_null(g);
    free(buf);
    unlink(fpath);
    unlink(wpath);
    rmdir(dir);
}

/* Prepends a length-delimited field (number, the len bytes at *pos..) in
 * a buffer written backwards from its end. */
static size_t wrap(uint8_t *buf, size_t pos, size_t len, unsigned field)
{
    uint8_t v[10];
    int n = 0;
    size_t l = len;
    do {
        v[n++] = (uint8_t)((l & 0x7f) | (l > 0x7f ? 0x80 : 0));
        l >>= 7;
    } while (l);
    while (n)
        buf[--pos] = v[--n];
    buf[--pos] = (uint8_t)(field << 3 | 2);
    return pos;
}

Test(onnx, deep_nesting_is_refused_not_a_stack_overflow)
{
    /* graph.node.attribute.g.node.attribute.g... 200000 levels deep:
     * protobuf-c alone would recurse once per level. */
    enum { LEVELS = 200000 };
    size_t cap = (size_t)LEVELS * 3 * 6 + 16, pos = cap;
    uint8_t *buf = malloc(cap);
    cr_assert(buf);
    for (int i = 0; i < LEVELS; i++) {
        pos = wrap(buf, pos, cap - pos, 6); /* AttributeProto.g */
        pos = wrap(buf, pos, cap - pos, 5); /* NodeProto.attribute */
        pos = wrap(buf, pos, cap - pos, 1); /* GraphProto.node */
    }
    pos = wrap(buf, pos, cap - pos, 7);     /* ModelProto.graph */
    pdnn_graph *g = NULL;
    cr_assert_eq(pdnn_graph_import_onnx(NULL, buf + pos, cap - pos, NULL, &g, NULL), PDNN_ERR_CORRUPT);
    cr_assert(strstr(pdnn_last_error(), "nested deeper than"), "%s", pdnn_last_error());
    free(buf);
}

Test(onnx, a_symbolic_batch_changes_without_importing_again)
{
    built b;
    build(&b, "Relu");
    b.xd[0].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    b.xd[0].dim_param = "N";
    pdnn_graph *g = NULL;
    pdnn_onnx_io io;
    cr_assert_eq(import(&b, NULL, &g, &io), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_desc d;
    cr_assert_eq(pdnn_graph_node_desc(g, io.inputs[0], &d), PDNN_SUCCESS);
    cr_assert_eq(d.dims[0], 1);
    cr_assert_eq(pdnn_graph_set_batch(g, 3), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_node_desc(g, io.inputs[0], &d), PDNN_SUCCESS);
    cr_assert_eq(d.dims[0], 3);
    cr_assert_eq(pdnn_graph_node_desc(g, io.outputs[0], &d), PDNN_SUCCESS);
    cr_assert(d.dims[0] == 3 && d.dims[1] == 3 && d.dims[2] == 4 && d.dims[3] == 4);
    cr_assert_eq(pdnn_graph_set_batch(g, 1), PDNN_SUCCESS, "%s", pdnn_last_error());
    check_runs(g, &io); /* back at batch 1, the values are the import's */
    cr_assert_eq(pdnn_graph_set_batch(g, 0), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_graph_set_batch(NULL, 2), PDNN_ERR_INVALID_ARGUMENT);
    /* a node added after the import: the plan no longer covers the graph */
    pdnn_node r;
    cr_assert_eq(pdnn_graph_relu(g, "extra", NULL, io.outputs[0], &r), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_set_batch(g, 2), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "added to the graph after the import"), "%s", pdnn_last_error());
    pdnn_graph_destroy(g);
    /* a fixed batch in the file: no plan, and the way round named */
    build(&b, "Relu");
    cr_assert_eq(import(&b, NULL, &g, &io), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_set_batch(g, 2), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "options.batch = 2"), "%s", pdnn_last_error());
    pdnn_graph_destroy(g);
}
