/* The backward ops of the N-d ops that are registry ops of their own:
 * layer norm's (PDNN__OP_ND_LAYER_NORM_BWD), which the graph's gradient
 * of a LayerNormalization node runs (graph_grad_nd.c). */
#include "core/context.h"
#include "ops/dispatch.h"
#include "ops/dispatch_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

pdnn_status pdnn__layer_norm_backward(const pdnn_tensor *x, const pdnn_tensor *dy, const pdnn_tensor *scale,
                                      int axis, float epsilon, int which, pdnn_tensor *y)
{
    static const char op[] = "pdnn__layer_norm_backward";
    const pdnn_tensor *ts[] = {x, dy, scale, y};
    const char *names[] = {"x", "dy", "scale", "y"};
    pdnn_status st = pdnn__ops_need(op, ts, names, 4);
    if (st != PDNN_SUCCESS)
        return st;
    const int r = pdnn_tensor_desc_rank(&x->desc);
    const pdnn_layout l = x->desc.layout;
    char dx[96], dd[96];
    if (l == PDNN_NHWC || l == PDNN_OHWI || l == PDNN_HWIO || axis < 0 || axis > r || which < 0 || which > 2)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: x is %s, axis %d, which %d; x's layout must store its dims "
                           "in order, axis lie in [0, rank], which be 0, 1 or 2", op,
                           pdnn__desc_string(&x->desc, dx, sizeof dx), axis, which);
    if (!(epsilon >= 0.0f) || isinf(epsilon))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: epsilon is %g; it must be finite and >= 0", op,
                           (double)epsilon);
    int64_t cols = 1;
    for (int k = axis; k < r; k++)
        cols *= x->desc.dims[k];
    const int64_t n = pdnn_tensor_desc_elements(&x->desc);
    const int64_t want = which ? cols : n;
    if (pdnn_tensor_desc_elements(&dy->desc) != n || pdnn_tensor_desc_elements(&scale->desc) != cols ||
        pdnn_tensor_desc_elements(&y->desc) != want)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: x is %s and dy %s; dy must have x's %lld elements, "
                           "scale %lld (a normalized row's) and y %lld", op,
                           pdnn__desc_string(&x->desc, dx, sizeof dx), pdnn__desc_string(&dy->desc, dd, sizeof dd),
                           (long long)n, (long long)cols, (long long)want);
    for (int i = 0; i < 3; i++)
        if ((st = pdnn__check_alias(op, y, "y", ts[i], names[i], 0)) != PDNN_SUCCESS)
            return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_ND_LAYER_NORM_BWD;
    pdnn__layer_norm_bwd_call *c = &call.u.layer_norm_bwd;
    c->cols = cols;
    c->rows = cols ? n / cols : 0;
    c->epsilon = epsilon;
    c->which = which;
    c->x_buf = x->block.buf;
    c->dy_buf = dy->block.buf;
    c->scale_buf = scale->block.buf;
    c->y_buf = y->block.buf;
    if (c->rows * c->cols == 0)
        return PDNN_SUCCESS;
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}

int pdnn__nd_grad_describe(const pdnn__op_call *call, char *key, size_t len, double *flops, pdnn__buf *out,
                           size_t *n)
{
    if (call->op != PDNN__OP_ND_LAYER_NORM_BWD)
        return 0;
    const pdnn__layer_norm_bwd_call *c = &call->u.layer_norm_bwd;
    const int64_t y_elems = c->which ? c->cols : c->rows * c->cols;
    if (key)
        snprintf(key, len, "layer_norm_bwd f32 %lldx%lld w%d", (long long)c->rows, (long long)c->cols, c->which);
    if (flops) /* elements touched: x and dy read, y written */
        *flops = 2.0 * (double)(c->rows * c->cols) + (double)y_elems;
    if (out) {
        *out = c->y_buf;
        *n = (size_t)y_elems;
    }
    return 1;
}
