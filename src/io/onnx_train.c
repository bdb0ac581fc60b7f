/* Training an imported ONNX model: the trainable import's parts (weights
 * as variables, BatchNormalization in training mode, active Dropout), the
 * loss and optimizer added after it (pdnn_graph_add_training), and the
 * trained model written back (pdnn_session_export_onnx). Built with ONNX
 * import only; the stubs below refuse without it. */
#include "config.h"

#include "graph/graph.h"
#include "polydnn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Trainable variables of g, in graph order (NULL vars: count only). */
static int trainable_vars(const pdnn_graph *g, pdnn_node *vars)
{
    int n = 0;
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i].op == PDNN__OP_VARIABLE && g->nodes[i].trainable) {
            if (vars)
                vars[n] = i;
            n++;
        }
    return n;
}

/* MSE: the mean of (y - t)^2 as an average pool over the whole flattened
 * matrix, built from ops that have gradients. */
static pdnn_status mse_loss(pdnn_graph *g, const char *name, const char *dev, pdnn_node y, pdnn_node t,
                           pdnn_node *loss)
{
    char sub[sizeof g->nodes[0].name + 8], squ[sizeof sub], flt[sizeof sub];
    snprintf(sub, sizeof sub, "%s/sub", name);
    snprintf(squ, sizeof squ, "%s/square", name);
    snprintf(flt, sizeof flt, "%s/flat", name);
    pdnn_tensor_desc d;
    pdnn_node diff = -1, sq = -1, flat = -1;
    pdnn_status st = pdnn_graph_node_desc(g, y, &d);
    const int64_t n = pdnn_tensor_desc_elements(&d), rows = d.dims[0], cols = n / (d.dims[0] ? d.dims[0] : 1);
    if (st == PDNN_SUCCESS && (rows > 1 << 30 || cols > 1 << 30))
        st = pdnn__error(PDNN_ERR_UNSUPPORTED, "pdnn_graph_add_training: the output is too large for the MSE loss");
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_binary(g, sub, dev, y, t, PDNN_BINARY_SUB, &diff);
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_binary(g, squ, dev, diff, diff, PDNN_BINARY_MUL, &sq);
    const int64_t dims[4] = {1, 1, rows, cols};
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_reshape(g, flt, dev, sq, dims, &flat);
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    p.mode = PDNN_POOL_AVG_EXCLUDE_PADDING;
    p.window_h = (int)rows, p.window_w = (int)cols;
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_pool2d(g, name, dev, flat, &p, loss);
    return st;
}

/* Tower t's name for a node named nm: nm itself for tower 0. */
static void tower_name(char *buf, size_t len, int t, const char *nm)
{
    if (t)
        snprintf(buf, len, "tower_%d/%.*s", t, (int)len - 20, nm); /* t < 10 */
    else
        snprintf(buf, len, "%s", nm);
}

/* The loss of tower t's output y against a new labels placeholder, on dev. */
static pdnn_status add_loss(pdnn_graph *g, int t, const char *dev, pdnn_node y, int rank, pdnn_loss_kind loss,
                            pdnn_onnx_training *out)
{
    char ln[sizeof g->nodes[0].name], lo[sizeof g->nodes[0].name];
    tower_name(ln, sizeof ln, t, "labels");
    tower_name(lo, sizeof lo, t, "loss");
    const pdnn_tensor_desc yd = g->nodes[y].out;
    pdnn_status st;
    if (loss == PDNN_LOSS_CROSS_ENTROPY) {
        if (rank != 2)
            return pdnn__error(PDNN_ERR_UNSUPPORTED, "pdnn_graph_add_training: the cross-entropy loss needs a "
                                                     "rank-2 output (logits {N, K}); '%s' has rank %d",
                               g->nodes[y].name, rank);
        pdnn_tensor_desc ld = {PDNN_INT32, PDNN_LAYOUT_X, {yd.dims[0], 1, 1, 1}, 0};
        st = pdnn_graph_placeholder(g, ln, dev, &ld, &out->targets);
        if (st == PDNN_SUCCESS)
            st = pdnn_graph_softmax_cross_entropy(g, lo, dev, y, out->targets, &out->loss);
    } else {
        st = pdnn_graph_placeholder(g, ln, dev, &yd, &out->targets);
        if (st == PDNN_SUCCESS)
            st = mse_loss(g, lo, dev, y, out->targets, &out->loss);
    }
    return st;
}

/* Whether node i depends on one of the import's inputs: the part of the
 * graph a tower copies (marks in reach, nodes [0, n)). */
static void mark_reach(const pdnn_graph *g, const pdnn_onnx_io *io, int n, unsigned char *reach)
{
    for (int i = 0; i < n; i++) {
        reach[i] = 0;
        for (int k = 0; k < io->n_inputs; k++)
            reach[i] |= io->inputs[k] == i;
        for (int k = 0; k < g->nodes[i].n_inputs && !reach[i]; k++)
            reach[i] = g->nodes[i].inputs[k] >= 0 && reach[g->nodes[i].inputs[k]];
    }
}

/* Copies the reached nodes [0, n) for tower t on dev (map: old -> new);
 * io's nodes mapped into tio. BatchNormalization's copies normalize by
 * their batch and leave the running statistics to tower 0 (momentum 0:
 * no update, TensorFlow's towers run the first tower's update ops only);
 * Dropout's copies draw from seed + t. */
static pdnn_status copy_tower(pdnn_graph *g, int n, const unsigned char *reach, int t, const char *dev, int *map,
                              const pdnn_onnx_io *io, pdnn_onnx_io *tio)
{
    pdnn_status st = PDNN_SUCCESS;
    int ins[PDNN__MOVE_ARGS], *in = ins, cap = PDNN__MOVE_ARGS;
    for (int i = 0; i < n && st == PDNN_SUCCESS; i++) {
        map[i] = i;
        if (!reach[i])
            continue;
        pdnn__node proto = g->nodes[i]; /* a copy: adding may move the table */
        if (proto.n_inputs > cap) {
            int *bigger = malloc(sizeof *bigger * (size_t)proto.n_inputs);
            if (!bigger) {
                st = pdnn__host_oom("pdnn_graph_add_training_towers", "a node's inputs",
                                    sizeof *bigger * (size_t)proto.n_inputs);
                break;
            }
            if (in != ins)
                free(in);
            in = bigger;
            cap = proto.n_inputs;
        }
        for (int k = 0; k < proto.n_inputs; k++)
            in[k] = proto.inputs[k] < 0 ? -1 : map[proto.inputs[k]];
        snprintf(proto.device, sizeof proto.device, "%s", dev);
        if (proto.colocate > 0 && reach[proto.colocate - 1])
            proto.colocate = map[proto.colocate - 1] + 1;
        if (proto.op == PDNN__OP_BN_TRAIN)
            proto.beta = 0.0f;
        if (proto.op == PDNN__OP_DROPOUT)
            proto.seed += (uint64_t)t;
        /* the policy's casts of the original are tower 0's: the copy's own
         * are made when a builder asks for them */
        memset(proto.cast_of, 0, sizeof proto.cast_of);
        proto.cast32 = 0;
        char nm[sizeof proto.name];
        tower_name(nm, sizeof nm, t, proto.name);
        st = pdnn__graph_add(g, nm, &proto, in, proto.n_inputs, &map[i]);
    }
    if (in != ins)
        free(in);
    *tio = *io;
    for (int k = 0; k < io->n_inputs; k++)
        tio->inputs[k] = map[io->inputs[k]];
    for (int k = 0; k < io->n_outputs; k++)
        tio->outputs[k] = map[io->outputs[k]];
    return st;
}

/* pdnn_graph_add_training, over nt towers (devs NULL: one, where the
 * import put it). */
static pdnn_status add_training(pdnn_graph *g, pdnn_onnx_io *io, int nt, const char *const *devs, const char *pdev,
                                pdnn_loss_kind loss, const pdnn_optimizer_params *p, pdnn_onnx_training *out)
{
    const char *fn = devs ? "pdnn_graph_add_training_towers" : "pdnn_graph_add_training";
    if (!g || !io || !p || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: an argument is NULL", fn);
    memset(out, 0, sizeof *out * (size_t)nt);
    if (loss != PDNN_LOSS_CROSS_ENTROPY && loss != PDNN_LOSS_MSE)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: unknown loss %d", fn, (int)loss);
    if (io->n_outputs < 1 || io->outputs[0] < 0 || io->outputs[0] >= g->n || io->n_inputs < 1 ||
        io->n_inputs > PDNN_ONNX_MAX_IO || io->n_outputs > PDNN_ONNX_MAX_IO)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: io names no input or output of this graph", fn);
    for (int k = 0; k < io->n_inputs; k++)
        if (io->inputs[k] < 0 || io->inputs[k] >= g->n)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: io's input %d is no node of this graph", fn, k);
    pdnn_node training;
    if (pdnn_graph_find(g, "polydnn/training", &training) != PDNN_SUCCESS)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: the graph is not a trainable import (set "
                                                      "pdnn_onnx_options.trainable)", fn);
    const int n = trainable_vars(g, NULL);
    if (n < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: the model has no trainable initializer (Conv, Gemm or "
                                                      "BatchNormalization parameters)", fn);
    const int n0 = g->n;
    pdnn_status st = PDNN_SUCCESS;
    unsigned char *reach = NULL;
    int *map = NULL;
    if (devs) {
        /* Tower 0 is the import's own nodes, moved to devs[0]; the
         * variables go to pdev, but for the running statistics, which a
         * training batch norm updates in place beside it. */
        reach = malloc((size_t)n0);
        map = malloc(sizeof *map * (size_t)n0);
        if (!reach || !map)
            st = pdnn__host_oom(fn, "the tower map", sizeof *map * (size_t)n0 + (size_t)n0);
        if (st == PDNN_SUCCESS)
            mark_reach(g, io, n0, reach);
        for (int i = 0; st == PDNN_SUCCESS && i < n0; i++) {
            pdnn__node *nd = &g->nodes[i];
            if (reach[i])
                snprintf(nd->device, sizeof nd->device, "%s", devs[0]);
            else if (nd->op == PDNN__OP_VARIABLE && nd->trainable)
                snprintf(nd->device, sizeof nd->device, "%s", pdev);
            if (reach[i] && nd->op == PDNN__OP_BN_TRAIN)
                for (int q = 3; q < 5; q++)
                    snprintf(g->nodes[nd->inputs[q]].device, sizeof nd->device, "%s", devs[0]);
        }
        for (int t = 1; st == PDNN_SUCCESS && t < nt; t++)
            st = copy_tower(g, n0, reach, t, devs[t], map, &io[0], &io[t]);
    }
    for (int t = 0; st == PDNN_SUCCESS && t < nt; t++)
        st = add_loss(g, t, devs ? devs[t] : NULL, io[t].outputs[0], io[0].output_rank[0], loss, &out[t]);
    pdnn_tensor_desc sd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {1, 1, 1, 1}, 0};
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_variable(g, "learning_rate", "/cpu:0", &sd, PDNN_INIT_DATA, 0, &p->learning_rate,
                                 &out[0].learning_rate);
    /* vars: n variables, then nt x n gradients, then n averages */
    pdnn_node *vars = malloc(sizeof *vars * (size_t)n * (size_t)(nt + 2));
    if (!vars) {
        if (st == PDNN_SUCCESS)
            st = pdnn__host_oom(fn, "the variable list", sizeof *vars * (size_t)n * (size_t)(nt + 2));
    } else if (st == PDNN_SUCCESS) {
        pdnn_node *avg = vars + (size_t)n * (size_t)(nt + 1);
        for (int k = 0; k < (nt + 2) * n; k++)
            vars[k] = -1;
        trainable_vars(g, vars);
        for (int t = 0; st == PDNN_SUCCESS && t < nt; t++) {
            pdnn_node *gr = vars + (size_t)n * (size_t)(t + 1);
            st = pdnn_graph_gradients(g, out[t].loss, vars, n, gr);
            for (int k = 0; st == PDNN_SUCCESS && k < n; k++)
                if (gr[k] < 0)
                    st = pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: the loss does not depend on variable '%s'",
                                     fn, g->nodes[vars[k]].name);
        }
        /* Towers: each gradient's mean over the towers, on its variable's
         * device (AddN, then Mul by 1/nt: TensorFlow's multi-GPU pattern),
         * in the gradients' own dtype (float32, as the variables): the
         * precision policy is for the network's compute. */
        const pdnn_dtype policy = g->compute;
        g->compute = PDNN_FLOAT32;
        for (int k = 0; st == PDNN_SUCCESS && k < n; k++) {
            avg[k] = vars[n + k];
            if (nt == 1)
                continue;
            char nm[sizeof g->nodes[0].name];
            pdnn_node in[PDNN_MAX_TOWERS], sum = -1;
            for (int t = 0; t < nt; t++)
                in[t] = vars[(size_t)n * (size_t)(t + 1) + (size_t)k];
            snprintf(nm, sizeof nm, "tower_sum/%.*s", (int)sizeof nm - 11, g->nodes[vars[k]].name);
            st = pdnn_graph_add_n(g, nm, pdev, in, nt, &sum);
            snprintf(nm, sizeof nm, "tower_mean/%.*s", (int)sizeof nm - 12, g->nodes[vars[k]].name);
            if (st == PDNN_SUCCESS)
                st = pdnn_graph_scale(g, nm, pdev, sum, 1.0f / (float)nt, &avg[k]);
        }
        g->compute = policy;
        /* Data-parallel: each gradient's mean over the ranks, on its
         * variable's device, started by the session as soon as it exists. */
        for (int k = 0; st == PDNN_SUCCESS && g->train_allreduce && k < n; k++) {
            char nm[sizeof g->nodes[0].name];
            snprintf(nm, sizeof nm, "allreduce/%.*s", (int)sizeof nm - 11, g->nodes[vars[k]].name);
            st = pdnn_graph_allreduce(g, nm, g->nodes[vars[k]].device[0] ? g->nodes[vars[k]].device : NULL,
                                      avg[k], &avg[k]);
        }
        if (st == PDNN_SUCCESS)
            st = pdnn_graph_apply_gradients(g, NULL, p, vars, avg, n, &out[0].train_op);
    }
    free(vars);
    free(reach);
    free(map);
    if (st != PDNN_SUCCESS) {
        pdnn__graph_truncate(g, n0);
        memset(out, 0, sizeof *out * (size_t)nt);
        for (int t = 1; devs && t < nt; t++)
            memset(&io[t], 0, sizeof io[t]);
        return st;
    }
    for (int t = 0; t < nt; t++) {
        out[t].train_op = out[0].train_op;
        out[t].training = training;
        out[t].learning_rate = out[0].learning_rate;
        out[t].n_params = n;
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn_graph_add_training(pdnn_graph *g, const pdnn_onnx_io *io, pdnn_loss_kind loss,
                                    const pdnn_optimizer_params *p, pdnn_onnx_training *out)
{
    /* one tower where the import put it: io is only read */
    return add_training(g, (pdnn_onnx_io *)io, 1, NULL, NULL, loss, p, out);
}

pdnn_status pdnn_graph_add_training_towers(pdnn_graph *g, pdnn_onnx_io *io, const pdnn_training_towers *towers,
                                           pdnn_loss_kind loss, const pdnn_optimizer_params *p,
                                           pdnn_onnx_training *out)
{
    const char *fn = "pdnn_graph_add_training_towers";
    if (!towers)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: towers is NULL", fn);
    if (towers->n < 1 || towers->n > PDNN_MAX_TOWERS)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %d towers (1 to %d)", fn, towers->n, PDNN_MAX_TOWERS);
    const char *pdev = towers->param_device ? towers->param_device : "/cpu:0";
    for (int t = -1; t < towers->n; t++) {
        const char *d = t < 0 ? pdev : towers->devices[t];
        const char *why = !d ? "NULL" : !d[0] ? "empty" : strlen(d) >= sizeof g->nodes[0].device ? "too long" : NULL;
        if (why && t < 0)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: the parameter device is %s", fn, why);
        if (why)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: tower %d's device is %s", fn, t, why);
    }
    return add_training(g, io, towers->n, towers->devices, pdev, loss, p, out);
}

#ifndef PDNN_HAVE_ONNX

pdnn_status pdnn_session_export_onnx(pdnn_session *s, const char *model_path, const char *out_path, int *n_written)
{
    (void)s, (void)model_path, (void)out_path;
    if (n_written)
        *n_written = 0;
    return pdnn__error(PDNN_ERR_UNSUPPORTED, "pdnn_session_export_onnx: this polydnn was built without ONNX import");
}

#else

#include "core/fileio.h"
#include "graph/session_internal.h"
#include "io/onnx_internal.h"

struct onnx_train {
    int flag, step;
    uint64_t seed;
};

pdnn_status pdnn__onnx_train_begin(importer *im, const pdnn_onnx_options *opts)
{
    if (!opts->trainable)
        return PDNN_SUCCESS;
    im->train = calloc(1, sizeof *im->train);
    if (!im->train)
        return pdnn__host_oom("pdnn_graph_import_onnx", "the training state", sizeof *im->train);
    im->train->seed = opts->seed;
    if (opts->distributed != PDNN_DISTRIBUTED_NONE && opts->distributed != PDNN_DISTRIBUTED_MPI)
        return FAIL(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_import_onnx: options.distributed is %d (expected %d, none, "
                                               "or %d, MPI)", opts->distributed, (int)PDNN_DISTRIBUTED_NONE,
                    (int)PDNN_DISTRIBUTED_MPI);
    im->graph->train_allreduce = opts->distributed == PDNN_DISTRIBUTED_MPI;
    pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_LAYOUT_X, {1, 1, 1, 1}, 0};
    const float one = 1.0f;
    pdnn_status st = pdnn_graph_variable(im->graph, "polydnn/training", "/cpu:0", &d, PDNN_INIT_DATA, 0, &one,
                                         &im->train->flag);
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_variable(im->graph, "global_step", "/cpu:0", &d, PDNN_INIT_ZEROS, 0, NULL, &im->train->step);
    return st;
}

void pdnn__onnx_train_end(importer *im)
{
    free(im->train);
    im->train = NULL;
}

static Onnx__TensorProto *find_initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name && strcmp(g->initializer[i]->name, name) == 0)
            return g->initializer[i];
    return NULL;
}


/* The Identity node of g computing value name, or -1. */
static int identity_of(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (n->op_type && strcmp(n->op_type, "Identity") == 0 && n->n_input == 1 && n->n_output >= 1 &&
            n->output[0] && strcmp(n->output[0], name) == 0)
            return (int)i;
    }
    return -1;
}

/* The initializer value name is, directly or through Identity nodes
 * (exporters share equal initializers that way: torch.onnx's fresh
 * batch-norm-folded zero biases), or NULL. */
static Onnx__TensorProto *initializer_of(const Onnx__GraphProto *g, const char *name)
{
    for (int hop = 0; hop < 64 && name; hop++) {
        Onnx__TensorProto *t = find_initializer(g, name);
        if (t)
            return t;
        const int k = identity_of(g, name);
        name = k >= 0 ? g->node[k]->input[0] : NULL;
    }
    return NULL;
}

/* Constant node `node` becomes the variable named after initializer v. */
static pdnn_status make_variable(importer *im, int node, const value *v, int trainable)
{
    pdnn_node other;
    pdnn__node *nd = &im->graph->nodes[node];
    if (strlen(v->name) >= sizeof nd->name)
        return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: initializer name '%.40s...' is too long for a "
                                          "variable", v->name);
    if (pdnn_graph_find(im->graph, v->name, &other) == PDNN_SUCCESS)
        return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: initializer '%s' is read by two nodes (tied "
                                          "weights), which a trainable import does not support", v->name);
    nd->op = PDNN__OP_VARIABLE;
    snprintf(nd->name, sizeof nd->name, "%s", v->name);
    nd->trainable = trainable;
    return PDNN_SUCCESS;
}

pdnn_status pdnn__onnx_train_param(importer *im, int node, const value *v, float scale)
{
    /* An initializer read through an Identity becomes a variable of the
     * Identity's output's name: its own weight, which the export writes
     * as an initializer of that name (untying what the exporter shared). */
    if (!im->train || node < 0 || !v || scale != 1.0f || !initializer_of(im->g, v->name))
        return PDNN_SUCCESS; /* not an initializer (a Constant node's output), or scaled: stays a constant */
    return make_variable(im, node, v, 1);
}

pdnn_status pdnn__onnx_train_weight(importer *im, int node, const value *v)
{
    return v && v->count >= 2 ? pdnn__onnx_train_param(im, node, v, 1.0f) : PDNN_SUCCESS;
}

int pdnn__onnx_train_unfolded(importer *im, const Onnx__NodeProto *n)
{
    if (!im->train || strcmp(n->op_type, "Shape") == 0)
        return 0;
    for (size_t i = 0; i < n->n_input; i++) {
        const value *v = n->input[i][0] ? pdnn__onnx_find_value(im, n->input[i]) : NULL;
        if (v && v->node < 0 && v->data && initializer_of(im->g, v->name))
            return 1;
    }
    return 0;
}

/* Whether a node or the graph's outputs read value name: the extra
 * outputs of a training-mode export (BatchNormalization's running
 * statistics, Dropout's mask) are accepted where nothing does. */
static int is_read(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_output; i++)
        if (g->output[i]->name && strcmp(g->output[i]->name, name) == 0)
            return 1;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t j = 0; j < g->node[i]->n_input; j++)
            if (strcmp(g->node[i]->input[j], name) == 0)
                return 1;
    return 0;
}

static pdnn_status extra_outputs_unread(const importer *im, const Onnx__NodeProto *n, const char *what)
{
    for (size_t j = 1; j < n->n_output; j++)
        if (n->output[j][0] && is_read(im->g, n->output[j]))
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "output %zu ('%s', %s) is read; only an unread "
                                         "one is supported", j, n->output[j], what);
    return PDNN_SUCCESS;
}

/* nd (its op and fields set) as the node computing n's output from x,
 * whose descriptor it takes. */
static pdnn_status add_node(importer *im, const Onnx__NodeProto *n, pdnn__node *nd, const value *x,
                            const pdnn_node *in, int n_in)
{
    pdnn_status st = pdnn__onnx_check_name(n, n->output[0]);
    if (st != PDNN_SUCCESS)
        return st;
    if (pdnn_graph_node_desc(im->graph, x->node, &nd->out) != PDNN_SUCCESS)
        return pdnn__onnx_node_error(PDNN_ERR_INTERNAL, n, "no descriptor for its input");
    snprintf(nd->device, sizeof nd->device, "%s", im->device ? im->device : "");
    /* The import's precision policy, as the public builders apply it:
     * batch norm in float32, Dropout in its input's dtype. */
    pdnn_node ins[8];
    if (n_in > (int)(sizeof ins / sizeof ins[0]))
        return pdnn__onnx_node_error(PDNN_ERR_INTERNAL, n, "%d inputs", n_in);
    memcpy(ins, in, sizeof *in * (size_t)n_in);
    if ((st = pdnn__graph_autocast(im->graph, nd, ins, n_in)) != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    int y = -1;
    if ((st = pdnn__graph_add(im->graph, n->output[0], nd, ins, n_in, &y)) != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    return pdnn__onnx_set_output(im, n, n->output[0], y, x->rank);
}

pdnn_status pdnn__onnx_train_batch_norm(importer *im, const Onnx__NodeProto *n)
{
    value *x;
    pdnn_status st;
    if (n->n_input != 5)
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "BatchNormalization takes 5 inputs, %zu given", n->n_input);
    if (!(x = pdnn__onnx_act_input(im, n, 0, &st)))
        return st;
    if ((st = extra_outputs_unread(im, n, "a running statistic")) != PDNN_SUCCESS)
        return st;
    if (x->rank != 4)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "training needs a rank-4 input (rank %d given)",
                                     x->rank);
    const float eps = attr_float(n, "epsilon", 1e-5f), mom = attr_float(n, "momentum", 0.9f);
    if (!(mom >= 0.0f && mom <= 1.0f))
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "momentum %g is outside [0, 1]", (double)mom);
    const int64_t C = x->dims[1];
    pdnn_node in[6];
    pdnn_tensor_desc pd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {C, 1, 1, 1}, 0};
    in[0] = x->node;
    for (size_t i = 0; i < 4; i++) {
        const value *c = pdnn__onnx_const_input(im, n, i + 1);
        if (!c || !c->data || c->count != C || !initializer_of(im->g, c->name))
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n,
                                         "input %zu must be a float initializer of C = %lld values", i + 1,
                                         (long long)C);
        if ((st = pdnn_graph_constant(im->graph, NULL, im->device, &pd, c->data, &in[i + 1])) != PDNN_SUCCESS ||
            (st = make_variable(im, in[i + 1], c, i < 2)) != PDNN_SUCCESS)
            return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    }
    in[5] = im->train->flag;
    pdnn__node nd;
    memset(&nd, 0, sizeof nd);
    nd.op = PDNN__OP_BN_TRAIN;
    nd.alpha = eps;
    nd.beta = 1.0f - mom; /* ONNX keeps mom of the running value; polydnn's momentum weighs the batch */
    return add_node(im, n, &nd, x, in, 6);
}

pdnn_status pdnn__onnx_train_dropout(importer *im, const Onnx__NodeProto *n)
{
    pdnn_status st;
    value *x = pdnn__onnx_act_input(im, n, 0, &st);
    if (!x)
        return st;
    if ((st = extra_outputs_unread(im, n, "the mask")) != PDNN_SUCCESS)
        return st;
    /* input 2, training_mode, is ignored: polydnn/training decides */
    float ratio = attr_float(n, "ratio", 0.5f); /* opset < 12; an input from 12 */
    if (n->n_input > 1 && n->input[1][0]) {
        const value *r = pdnn__onnx_const_input(im, n, 1);
        if (!r || !r->data || r->count != 1)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the ratio must be a float constant scalar");
        ratio = r->data[0];
    }
    if (!(ratio >= 0.0f && ratio < 1.0f))
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "ratio %g is outside [0, 1)", (double)ratio);
    pdnn__node nd;
    memset(&nd, 0, sizeof nd);
    nd.op = PDNN__OP_DROPOUT;
    nd.alpha = ratio;
    /* each Dropout its own stream: the seed mixed with the node's index */
    nd.seed = im->train->seed * 0x9E3779B97F4A7C15ull + (uint64_t)im->graph->n;
    const pdnn_node in[3] = {x->node, im->train->flag, im->train->step};
    return add_node(im, n, &nd, x, in, 3);
}

/* ---- export ---- */

typedef struct packed {
    uint8_t *buf;
    size_t len;
} packed;

static int write_packed(FILE *f, void *arg)
{
    const packed *p = arg;
    return fwrite(p->buf, 1, p->len, f) == p->len ? 0 : -1;
}

/* Initializer t's data replaced by n floats as raw_data (in the host's
 * byte order, as the importer reads raw_data). */
static pdnn_status replace_data(Onnx__TensorProto *t, float *data, size_t n)
{
    free(t->raw_data.data);
    t->raw_data.data = (uint8_t *)data;
    t->raw_data.len = n * sizeof *data;
    t->has_raw_data = 1;
    t->n_float_data = 0; /* the array stays for free_unpacked */
    t->has_data_type = 1;
    t->data_type = ONNX_FLOAT;
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        for (size_t i = 0; i < t->n_external_data; i++)
            protobuf_c_message_free_unpacked(&t->external_data[i]->base, NULL);
        free(t->external_data);
        t->external_data = NULL;
        t->n_external_data = 0;
        t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT;
    }
    return PDNN_SUCCESS;
}

/* Identity nodes whose output the session holds as a variable (an
 * initializer shared through them, untied by the import) become
 * initializers of their own: a copy of the source's dims, the data
 * written below; the node is removed. */
static pdnn_status untie(Onnx__GraphProto *g, const pdnn_graph *pg)
{
    for (size_t i = 0; i < g->n_node;) {
        Onnx__NodeProto *n = g->node[i];
        pdnn_node v;
        Onnx__TensorProto *src = NULL;
        if (!n->op_type || strcmp(n->op_type, "Identity") != 0 || n->n_output < 1 || !n->output[0] ||
            find_initializer(g, n->output[0]) || pdnn_graph_find(pg, n->output[0], &v) != PDNN_SUCCESS ||
            pg->nodes[v].op != PDNN__OP_VARIABLE || !(src = initializer_of(g, n->input[0]))) {
            i++;
            continue;
        }
        Onnx__TensorProto *t = malloc(sizeof *t), **arr = realloc(g->initializer, sizeof *arr * (g->n_initializer + 1));
        if (arr)
            g->initializer = arr;
        const size_t len = strlen(n->output[0]) + 1;
        char *name = t && arr ? malloc(len) : NULL;
        if (name)
            memcpy(name, n->output[0], len);
        int64_t *dims = name ? malloc(sizeof *dims * (src->n_dims + 1)) : NULL;
        if (!dims) {
            free(t), free(name);
            return pdnn__host_oom("pdnn_session_export_onnx", "an untied initializer", sizeof *t);
        }
        onnx__tensor_proto__init(t);
        t->name = name;
        t->n_dims = src->n_dims;
        t->dims = dims;
        memcpy(dims, src->dims, sizeof *dims * src->n_dims);
        g->initializer[g->n_initializer++] = t;
        onnx__node_proto__free_unpacked(n, NULL);
        memmove(&g->node[i], &g->node[i + 1], sizeof *g->node * (g->n_node - i - 1));
        g->n_node--;
    }
    return PDNN_SUCCESS;
}

/* The training-mode parts of a training export made inference ones, as
 * the exported model is for running: BatchNormalization's extra outputs
 * (which select training mode before opset 14) and its training_mode,
 * Dropout's training_mode input and its mask output dropped (nothing read
 * them: the import checked). */
static void for_inference(Onnx__GraphProto *g)
{
    for (size_t i = 0; i < g->n_node; i++) {
        Onnx__NodeProto *n = g->node[i];
        const int bn = n->op_type && strcmp(n->op_type, "BatchNormalization") == 0;
        if (!bn && !(n->op_type && strcmp(n->op_type, "Dropout") == 0))
            continue;
        while (n->n_output > 1)
            free(n->output[--n->n_output]);
        while (!bn && n->n_input > 2)
            free(n->input[--n->n_input]);
        for (size_t a = 0; bn && a < n->n_attribute; a++)
            if (n->attribute[a]->name && strcmp(n->attribute[a]->name, "training_mode") == 0)
                n->attribute[a]->i = 0;
    }
}

pdnn_status pdnn_session_export_onnx(pdnn_session *s, const char *model_path, const char *out_path, int *n_written)
{
    if (n_written)
        *n_written = 0;
    if (!s || !model_path || !out_path)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_export_onnx: an argument is NULL");
    uint8_t *buf = NULL;
    size_t len = 0;
    pdnn_status st = pdnn__onnx_read_file(model_path, &buf, &len);
    if (st != PDNN_SUCCESS)
        return st;
    Onnx__ModelProto *m = pdnn__onnx_nesting_ok(&onnx__model_proto__descriptor, buf, buf + len, 0)
                              ? onnx__model_proto__unpack(NULL, len, buf)
                              : NULL;
    free(buf);
    if (!m || !m->graph) {
        if (m)
            onnx__model_proto__free_unpacked(m, NULL);
        return pdnn__error(PDNN_ERR_CORRUPT, "pdnn_session_export_onnx: %s is not a valid ONNX model", model_path);
    }
    int written = 0;
    const pdnn_graph *g = s->g;
    st = untie(m->graph, g);
    for_inference(m->graph);
    for (size_t i = 0; i < m->graph->n_initializer && st == PDNN_SUCCESS; i++) {
        Onnx__TensorProto *t = m->graph->initializer[i];
        pdnn_node v;
        if (!t->name || pdnn_graph_find(g, t->name, &v) != PDNN_SUCCESS || g->nodes[v].op != PDNN__OP_VARIABLE)
            continue;
        int64_t want = 1;
        for (size_t k = 0; k < t->n_dims; k++)
            want *= t->dims[k];
        const int64_t have = pdnn_tensor_desc_elements(&g->nodes[v].out);
        if (want != have) {
            st = pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_export_onnx: initializer '%s' has %lld "
                                                        "elements but the variable has %lld",
                             t->name, (long long)want, (long long)have);
            break;
        }
        float *data = malloc((size_t)have * sizeof *data + 1);
        if (!data) {
            st = pdnn__host_oom("pdnn_session_export_onnx", t->name, (uint64_t)have * sizeof *data);
            break;
        }
        if ((st = pdnn_session_variable_read(s, v, data, (size_t)have * sizeof *data)) != PDNN_SUCCESS) {
            free(data);
            break;
        }
        const pdnn_tensor_desc *vd = &g->nodes[v].out;
        if (vd->layout == PDNN_OHWI || vd->layout == PDNN_HWIO) {
            /* A filter an NHWC import holds in the NHWC kernels' order:
             * back to ONNX's OIHW. */
            float *o = malloc((size_t)have * sizeof *o + 1);
            if (!o) {
                free(data);
                st = pdnn__host_oom("pdnn_session_export_onnx", t->name, (uint64_t)have * sizeof *o);
                break;
            }
            pdnn__onnx_relayout_back(data, vd->dims, vd->layout, o);
            free(data);
            data = o;
        }
        replace_data(t, data, (size_t)have);
        written++;
    }
    if (st == PDNN_SUCCESS) {
        packed p = {NULL, onnx__model_proto__get_packed_size(m)};
        p.buf = malloc(p.len ? p.len : 1);
        char why[512];
        if (!p.buf)
            st = pdnn__host_oom("pdnn_session_export_onnx", "the packed model", p.len);
        else if (onnx__model_proto__pack(m, p.buf) != p.len)
            st = pdnn__error(PDNN_ERR_INTERNAL, "pdnn_session_export_onnx: packing the model failed");
        else if (pdnn__file_replace_named(out_path, write_packed, &p, why, sizeof why) != 0)
            st = pdnn__error(PDNN_ERR_IO, "pdnn_session_export_onnx: %s", why);
        free(p.buf);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    if (st == PDNN_SUCCESS && n_written)
        *n_written = written;
    return st;
}

#endif
