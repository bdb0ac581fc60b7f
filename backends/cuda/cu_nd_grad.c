/* The N-d ops' backward registry ops on CUDA: layer norm's is refused by
 * name (cuDNN's legacy API has no layer normalization, and the backend
 * has no kernels of its own), so AUTO passes over it and the placer puts
 * the node elsewhere under soft placement, as the forward's. */
#include "backend.h"

static void layer_norm_bwd_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev, (void)call;
    pdnn__plan_refuse(plan, "cuDNN's legacy API has no layer normalization (nor its backward) and the CUDA backend "
                            "has no kernels of its own");
}

static pdnn_status layer_norm_bwd_refused(void *dev, const pdnn__op_call *call, const pdnn__plan *plan,
                                          pdnn__buf ws, pdnn__run_report *rep)
{
    (void)dev, (void)call, (void)plan, (void)ws, (void)rep;
    return pdnn__error(PDNN_ERR_UNSUPPORTED, "CUDA: layer norm's backward has no CUDA algorithm");
}

const pdnn__algo pdnn__cu_algo_layer_norm_bwd_none = {
    .op = PDNN__OP_ND_LAYER_NORM_BWD, .name = "none", .rank = 0, .plan = layer_norm_bwd_plan,
    .run = layer_norm_bwd_refused};
