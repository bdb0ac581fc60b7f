/* What a session measures of its runs: per node (with cfg.profile) its
 * runs, time, algorithm and floating-point operations; per device the
 * largest live set. */
#include "graph/session_internal.h"

/* The floating-point operations of one run of nd (2 per multiply-add of
 * the convolutions and matmuls; 0 for the ops not counted), from its
 * inputs and output as they ran. */
double pdnn__session_node_flops(const pdnn__node *nd, const pdnn_tensor *const *in, const pdnn_tensor *y)
{
    if (!y)
        return 0;
    /* Every op counted below reads two inputs. */
    if (!in[0] || !in[1])
        return 0;
    const int64_t *o = y->desc.dims;
    switch (nd->op) {
    case PDNN__OP_CONV2D: /* y N,K,P,Q; w K,C/g,R,S */
        return 2.0 * (double)(o[0] * o[1] * o[2] * o[3]) * (double)(in[1]->desc.dims[1] * in[1]->desc.dims[2] *
                                                                    in[1]->desc.dims[3]);
    case PDNN__OP_G_CONV_BWD_DATA: { /* dy N,K,P,Q; w K,C/g,R,S */
        const int64_t *dy = in[0]->desc.dims, *w = in[1]->desc.dims;
        return 2.0 * (double)(dy[0] * dy[1] * dy[2] * dy[3]) * (double)(w[1] * w[2] * w[3]);
    }
    case PDNN__OP_G_CONV_BWD_FILTER: { /* dy N,K,P,Q; dw K,C/g,R,S */
        const int64_t *dy = in[1]->desc.dims;
        return 2.0 * (double)(dy[0] * dy[1] * dy[2] * dy[3]) * (double)(o[1] * o[2] * o[3]);
    }
    case PDNN__OP_MATMUL: { /* y M x N, a M x K (K x M transposed) */
        const int64_t *a = in[0]->desc.dims;
        return 2.0 * (double)(o[0] * o[1]) * (double)(nd->trans_a ? a[0] : a[1]);
    }
    default: return 0;
    }
}

pdnn_status pdnn_session_memory_live_peak(const pdnn_session *s, const pdnn_device *dev, int64_t *bytes)
{
    if (!s || !dev || !bytes)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_memory_live_peak: %s is NULL",
                           !s ? "session" : !dev ? "dev" : "bytes");
    if (dev < s->ctx->devices || dev >= s->ctx->devices + s->ctx->n_devices)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_memory_live_peak: %s is not a device of the "
                           "session's context", dev->name);
    *bytes = s->live_peak[dev_index(s, dev)];
    return PDNN_SUCCESS;
}

pdnn_status pdnn_session_node_work(const pdnn_session *s, pdnn_node n, const char **algorithm, double *flops)
{
    if (!s || !algorithm || !flops)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_work: %s is NULL",
                           !s ? "session" : !algorithm ? "algorithm" : "flops");
    if (n < 0 || n >= s->g->n)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_work: node %d does not exist (the graph "
                                                      "has %d)", n, s->g->n);
    if (!s->prof_runs)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_work: the session was created without "
                                                      "profile (set pdnn_session_config.profile)");
    *algorithm = s->prof_algo[n] ? s->prof_algo[n] : "";
    *flops = s->prof_flops[n];
    return PDNN_SUCCESS;
}

pdnn_status pdnn_session_node_profile(const pdnn_session *s, pdnn_node n, int64_t *runs, double *seconds,
                                      double *first)
{
    if (!s || !runs || !seconds)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_profile: %s is NULL",
                           !s ? "session" : !runs ? "runs" : "seconds");
    if (n < 0 || n >= s->g->n)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_profile: node %d does not exist (the graph "
                                                      "has %d)", n, s->g->n);
    if (!s->prof_runs)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_profile: the session was created without "
                                                      "profile (set pdnn_session_config.profile)");
    *runs = s->prof_runs[n];
    *seconds = s->prof_sec[n];
    if (first)
        *first = s->prof_first[n];
    return PDNN_SUCCESS;
}
