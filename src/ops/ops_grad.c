/* Backward convolution and pooling (training): validate in core, build
 * the op call (the forward's sizes, see backend.h), dispatch. */
#include "ops/dispatch.h"

#include <stdio.h>
#include <string.h>

/* The output must share no memory with any input: backward kernels read
 * their inputs while writing the output. */
static pdnn_status check_no_alias(const char *op, const pdnn_tensor *out, const char *out_name,
                                  const pdnn_tensor *const *in, const char *const *in_names, int n)
{
    for (int i = 0; i < n; i++) {
        const pdnn_status st = pdnn__check_alias(op, out, out_name, in[i], in_names[i], 0);
        if (st != PDNN_SUCCESS)
            return st;
    }
    return PDNN_SUCCESS;
}

static pdnn_status check_bwd_params(const char *op, const pdnn_conv2d_params *p, pdnn_conv_bwd_dir dir)
{
    if (p->relu != 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: params relu is %d; the backward ops take relu 0 (apply ReLU's gradient to dy "
                           "first)",
                           op, p->relu);
    const int id = dir == PDNN_CONV_BWD_DATA ? p->bwd_data_algorithm : p->bwd_filter_algorithm;
    if (id < 0 || id >= pdnn_conv_bwd_algo_count(dir)) {
        char names[256];
        size_t used = 0;
        names[0] = '\0';
        for (int i = 0; i < pdnn_conv_bwd_algo_count(dir) && used < sizeof names; i++) {
            const int w = snprintf(names + used, sizeof names - used, "%s%d %s", i ? ", " : "", i,
                                   pdnn_conv_bwd_algo_name(dir, i));
            if (w < 0)
                break;
            used += (size_t)w;
        }
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: params %s is %d, which is no algorithm; they are %s", op,
                           dir == PDNN_CONV_BWD_DATA ? "bwd_data_algorithm" : "bwd_filter_algorithm", id, names);
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn_conv2d_backward_data(const pdnn_conv2d_params *p, const pdnn_tensor *dy, const pdnn_tensor *w,
                                      pdnn_tensor *dx)
{
    static const char op[] = "conv2d_backward_data";
    if (!p || !dy || !w || !dx)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_conv2d_backward_data: %s is NULL",
                           !p ? "params" : !dy ? "dy" : !w ? "w" : "dx");
    const pdnn_tensor *ts[] = {dy, w, dx};
    const char *names[] = {"dy", "w", "dx"};
    pdnn_status st = pdnn__same_device(op, ts, names, 3);
    if (st == PDNN_SUCCESS)
        st = check_bwd_params(op, p, PDNN_CONV_BWD_DATA);
    if (st == PDNN_SUCCESS)
        st = check_no_alias(op, dx, "dx", ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    int64_t od[4] = {0};
    /* dx has the forward input's dims: they and w give the output's. */
    if ((st = pdnn_conv2d_output_dims(&dx->desc, &w->desc, p, od)) != PDNN_SUCCESS ||
        (st = pdnn__check_output(op, "dy", dy, od)) != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_CONV2D_BWD_DATA;
    call.dtype = dx->desc.dtype;
    pdnn__conv2d_call *c = &call.u.conv2d;
    pdnn__conv_call_from(p, &dx->desc, &w->desc, dy->desc.layout, od, c);
    c->relu = 0;
    c->x_buf = dx->block.buf;
    c->w_buf = w->block.buf;
    c->y_buf = dy->block.buf;
    const pdnn__algo *want = NULL;
    if ((st = pdnn__algo_for_id(dx->dev, call.op, p->bwd_data_algorithm, &want)) != PDNN_SUCCESS)
        return st;
    return pdnn__dispatch(dx->dev, &call, want, NULL);
}

pdnn_status pdnn_conv2d_backward_filter(const pdnn_conv2d_params *p, const pdnn_tensor *x, const pdnn_tensor *dy,
                                        pdnn_tensor *dw)
{
    static const char op[] = "conv2d_backward_filter";
    if (!p || !x || !dy || !dw)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_conv2d_backward_filter: %s is NULL",
                           !p ? "params" : !x ? "x" : !dy ? "dy" : "dw");
    const pdnn_tensor *ts[] = {x, dy, dw};
    const char *names[] = {"x", "dy", "dw"};
    pdnn_status st = pdnn__same_device(op, ts, names, 3);
    if (st == PDNN_SUCCESS)
        st = check_bwd_params(op, p, PDNN_CONV_BWD_FILTER);
    if (st == PDNN_SUCCESS)
        st = check_no_alias(op, dw, "dw", ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    int64_t od[4] = {0};
    if ((st = pdnn_conv2d_output_dims(&x->desc, &dw->desc, p, od)) != PDNN_SUCCESS ||
        (st = pdnn__check_output(op, "dy", dy, od)) != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_CONV2D_BWD_FILTER;
    call.dtype = x->desc.dtype;
    pdnn__conv2d_call *c = &call.u.conv2d;
    pdnn__conv_call_from(p, &x->desc, &dw->desc, dy->desc.layout, od, c);
    c->relu = 0;
    c->x_buf = x->block.buf;
    c->w_buf = dw->block.buf;
    c->y_buf = dy->block.buf;
    const pdnn__algo *want = NULL;
    if ((st = pdnn__algo_for_id(x->dev, call.op, p->bwd_filter_algorithm, &want)) != PDNN_SUCCESS)
        return st;
    return pdnn__dispatch(x->dev, &call, want, NULL);
}

pdnn_status pdnn_conv2d_backward_bias(const pdnn_tensor *dy, pdnn_tensor *db)
{
    static const char op[] = "conv2d_backward_bias";
    if (!dy || !db)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_conv2d_backward_bias: %s is NULL", !dy ? "dy" : "db");
    const pdnn_tensor *ts[] = {dy, db};
    const char *names[] = {"dy", "db"};
    pdnn_status st = pdnn__same_device(op, ts, names, 2);
    if (st == PDNN_SUCCESS)
        st = check_no_alias(op, db, "db", ts, names, 1);
    if (st != PDNN_SUCCESS)
        return st;
    char d[96], b[96];
    const int lay = pdnn__act_layout(&dy->desc);
    if (lay < 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: dy %s must be NCHW, NHWC or ND of rank 2 to 4", op,
                           pdnn__desc_string(&dy->desc, d, sizeof d));
    if (db->desc.layout != PDNN_LAYOUT_X || db->desc.dims[0] != dy->desc.dims[1])
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: db %s must be a layout-X vector of length %lld (dy %s's channels)",
                           op, pdnn__desc_string(&db->desc, b, sizeof b), (long long)dy->desc.dims[1],
                           pdnn__desc_string(&dy->desc, d, sizeof d));
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_CONV2D_BWD_BIAS;
    call.dtype = dy->desc.dtype;
    pdnn__conv2d_call *c = &call.u.conv2d;
    /* Only the output side of the call is meaningful: N, K, P, Q of dy. A
     * 1x1 filter over a same-sized input keeps the other fields
     * consistent for code that reads them (the key, the FLOP count). */
    c->n = dy->desc.dims[0];
    c->k = c->c = dy->desc.dims[1];
    c->p = c->h = dy->desc.dims[2];
    c->q = c->w = dy->desc.dims[3];
    c->r = c->s = 1;
    c->groups = 1;
    c->stride_h = c->stride_w = c->dil_h = c->dil_w = 1;
    c->x_layout = c->y_layout = (pdnn_layout)lay;
    c->w_layout = PDNN_OIHW;
    pdnn__layout_strides((pdnn_layout)lay, dy->desc.dims, c->ys);
    pdnn__layout_strides((pdnn_layout)lay, dy->desc.dims, c->xs);
    c->y_buf = dy->block.buf;
    c->bias_buf = db->block.buf;
    return pdnn__dispatch(dy->dev, &call, NULL, NULL);
}

pdnn_status pdnn_pool2d_backward(const pdnn_pool2d_params *p, const pdnn_tensor *x, const pdnn_tensor *dy,
                                 pdnn_tensor *dx)
{
    static const char op[] = "pool2d_backward";
    if (!p || !x || !dy || !dx)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_pool2d_backward: %s is NULL",
                           !p ? "params" : !x ? "x" : !dy ? "dy" : "dx");
    const pdnn_tensor *ts[] = {x, dy, dx};
    const char *names[] = {"x", "dy", "dx"};
    pdnn_status st = pdnn__same_device(op, ts, names, 3);
    if (st == PDNN_SUCCESS)
        st = check_no_alias(op, dx, "dx", ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    int64_t od[4] = {0};
    if ((st = pdnn_pool2d_output_dims(&x->desc, p, od)) != PDNN_SUCCESS ||
        (st = pdnn__check_output(op, "dy", dy, od)) != PDNN_SUCCESS ||
        (st = pdnn__check_output(op, "dx", dx, x->desc.dims)) != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_POOL2D_BWD;
    call.dtype = x->desc.dtype;
    pdnn__pool2d_call *c = &call.u.pool2d;
    pdnn__pool_call_from(p, &x->desc, dy->desc.layout, od, c);
    c->x_buf = x->block.buf;
    c->dy_buf = dy->block.buf;
    c->dx_buf = dx->block.buf;
    c->dx_layout = dx->desc.layout;
    pdnn__layout_strides(dx->desc.layout, dx->desc.dims, c->dxs);
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}
