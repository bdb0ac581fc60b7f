/* AUTO placement on a CPU-only machine (issue 45): whether the host
 * (/cpu:0, on oneDNN) goes ahead of PoCL (an OpenCL CPU device, which the
 * default order puts first as /device:GPU:0), and why.
 *
 * The rule comes from measurements on this project's machine, committed
 * in bench/results-host-onednn.md (2 CPUs shared with other jobs): with
 * OMP_WAIT_POLICY=passive, /cpu:0 on oneDNN ran ResNet-18 and MobileNetV2
 * inference and Deep MNIST training 1.6-2.7x faster than PoCL; without
 * it, libgomp's team spins at every barrier and the same ResNet-18 ran
 * 8-10x slower than PoCL. The variable is read by libgomp when it loads,
 * so the library cannot set it; it can only see whether the user did. So
 * the host goes first where OMP_WAIT_POLICY is passive and the graph does
 * real work; below PDNN__AUTO_MIN_FLOPS of convolution and matmul a run
 * nothing was measured, and the default order (PoCL first) stands, as it
 * does wherever a GPU or accelerator is present, or the host was built
 * without oneDNN. */
#include "core/context.h"
#include "graph/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PDNN__AUTO_MIN_FLOPS 1e8 /* 0.1 GFLOP a run: the smallest network measured is 0.3 */

/* The host's oneDNN: its convolution registry holds "onednn". */
static int host_has_onednn(const pdnn_device *d)
{
    const pdnn__algo *const *list = d->backend->algos[PDNN__OP_CONV2D_FWD];
    for (int i = 0; list && list[i]; i++)
        if (strcmp(list[i]->name, "onednn") == 0)
            return 1;
    return 0;
}

static double dim(int64_t v) { return v > 0 ? (double)v : 1.0; /* a symbolic batch counts as 1 */ }

/* Convolution and matmul FLOPs of one run of g (forward ops only). */
static double graph_flops(const pdnn_graph *g)
{
    double f = 0.0;
    for (int i = 0; i < g->n; i++) {
        const pdnn__node *n = &g->nodes[i];
        const int64_t *o = n->out.dims;
        if (n->op == PDNN__OP_CONV2D && n->n_inputs > 1 && n->inputs[1] >= 0) {
            const int64_t *w = g->nodes[n->inputs[1]].out.dims; /* K, C/g, R, S */
            f += 2.0 * dim(o[0]) * dim(o[1]) * dim(o[2]) * dim(o[3]) * dim(w[1]) * dim(w[2]) * dim(w[3]);
        } else if (n->op == PDNN__OP_MATMUL && n->n_inputs > 0 && n->inputs[0] >= 0) {
            const int64_t *a = g->nodes[n->inputs[0]].out.dims;
            f += 2.0 * dim(o[0]) * dim(o[1]) * dim(n->trans_a ? a[0] : a[1]);
        }
    }
    return f;
}

static int is_training(const pdnn_graph *g)
{
    for (int i = 0; i < g->n; i++)
        switch (g->nodes[i].op) {
        case PDNN__OP_APPLY:
        case PDNN__OP_TRAIN:
        case PDNN__OP_G_CONV_BWD_DATA:
        case PDNN__OP_G_CONV_BWD_FILTER:
        case PDNN__OP_G_POOL_BWD:
        case PDNN__OP_G_RELU_BWD:
        case PDNN__OP_G_BN_BWD:
        case PDNN__OP_XENT_GRAD: return 1;
        default: break;
        }
    return 0;
}

int pdnn__place_host_first(const pdnn_graph *g, const pdnn_context *ctx, char *why, size_t len)
{
    const pdnn_device *host = NULL, *pocl = NULL;
    if (why && len)
        why[0] = '\0';
    for (int i = 0; i < ctx->n_devices; i++) {
        const pdnn_device *d = &ctx->devices[i];
        if (d->props.kind == PDNN__KIND_HOST)
            host = d;
        else if (d->props.kind == PDNN__KIND_CPU && d->type == PDNN_DEVICE_GPU)
            pocl = pocl ? pocl : d;
        else if (d->type == PDNN_DEVICE_GPU)
            return 0; /* a GPU or an accelerator: the default order stands */
    }
    if (!host || !pocl || !host_has_onednn(host))
        return 0;
    char h[96], p[96];
    pdnn__full_device_name(host, h, sizeof h);
    pdnn__full_device_name(pocl, p, sizeof p);
    const double f = graph_flops(g);
    const char *kind = is_training(g) ? "a training graph" : "an inference graph";
    const char *wait = getenv("OMP_WAIT_POLICY");
    const int passive = wait && strcasecmp(wait, "passive") == 0;
    const int first = passive && f >= PDNN__AUTO_MIN_FLOPS;
    if (why && len) {
        if (first)
            snprintf(why, len,
                     "AUTO placement: %s (oneDNN) ahead of %s (%s, an OpenCL CPU device): %s of %.2f GFLOP a run "
                     "with OMP_WAIT_POLICY=passive, where oneDNN ran faster than PoCL on this project's "
                     "measurements (bench/results-host-onednn.md)",
                     h, p, pocl->props.name, kind, f * 1e-9);
        else if (!passive)
            snprintf(why, len,
                     "AUTO placement: %s (%s, an OpenCL CPU device) ahead of %s (oneDNN): OMP_WAIT_POLICY is not "
                     "passive, and oneDNN's OpenMP team spinning at its barriers ran 8-10x slower than PoCL on a "
                     "busy machine (bench/results-host-onednn.md); set OMP_WAIT_POLICY=passive to put /cpu:0 first",
                     p, pocl->props.name, h);
        else
            snprintf(why, len,
                     "AUTO placement: %s (%s, an OpenCL CPU device) ahead of %s (oneDNN): %s under 0.1 GFLOP a run, "
                     "where no measurement tells the two apart",
                     p, pocl->props.name, h, kind);
    }
    return first;
}
