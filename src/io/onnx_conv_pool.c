/* Conv and pooling, the windowed ops. A Conv absorbs what follows it:
 * a BatchNormalization folded into its weights, a residual Add, a Relu or
 * a ReLU6 Clip as its epilogue; with NHWC its filter is relaid out. */
#include "core/half.h"
#include "io/onnx_internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t div_up(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* pads[4] = {top, left, bottom, right} (ONNX order) from pads/auto_pad. */
static pdnn_status spatial_pads(const Onnx__NodeProto *n, const int64_t in[2], const int64_t k[2],
                                const int64_t s[2], const int64_t d[2], int64_t pads[4])
{
    char ap[32];
    pdnn__onnx_attr_str(n, "auto_pad", ap, sizeof ap);
    pads[0] = pads[1] = pads[2] = pads[3] = 0;
    if (!ap[0] || strcmp(ap, "NOTSET") == 0) {
        pdnn_status st = pdnn__onnx_attr_ints(n, "pads", 4, pads);
        if (st != PDNN_SUCCESS)
            return st;
        for (int i = 0; i < 4; i++)
            if (pads[i] < 0 || pads[i] > INT_MAX / 4)
                return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "pads[%d] = %lld is out of range", i,
                                             (long long)pads[i]);
        return PDNN_SUCCESS;
    }
    if (strcmp(ap, "VALID") == 0)
        return PDNN_SUCCESS;
    int upper = strcmp(ap, "SAME_UPPER") == 0;
    if (!upper && strcmp(ap, "SAME_LOWER") != 0)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n,
                                     "auto_pad '%s' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", ap);
    for (int a = 0; a < 2; a++) {
        /* Bounded so the products below cannot overflow. */
        if (in[a] > INT_MAX || k[a] > INT_MAX)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "auto_pad on a dim or window over %d", INT_MAX);
        int64_t outd = div_up(in[a], s[a]);
        int64_t total = (outd - 1) * s[a] + (k[a] - 1) * d[a] + 1 - in[a];
        if (total < 0)
            total = 0;
        int64_t small = total / 2, big = total - small;
        pads[a] = upper ? small : big;       /* begin */
        pads[a + 2] = upper ? big : small;   /* end: SAME_UPPER puts the odd pixel here */
        if (big > INT_MAX / 4)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "auto_pad needs a padding of %lld", (long long)big);
    }
    return PDNN_SUCCESS;
}

int pdnn__onnx_sole_reader(importer *im, size_t from, const char *name)
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

pdnn_status pdnn__onnx_import_conv(importer *im, size_t idx, const Onnx__NodeProto *n)
{
    value *x, *w = pdnn__onnx_const_input(im, n, 1), *b = pdnn__onnx_const_input(im, n, 2), xi;
    pdnn_status st;
    if (!(x = pdnn__onnx_image_input(im, n, 0, &xi, &st)))
        return st;
    if (x->rank != 4)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n,
                                     "only 2-D convolution of a rank-4 NCHW input (rank %d given)", x->rank);
    if (!w || !w->data || w->rank != 4 || w->count < 1)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n,
                                     "the weights must be a non-empty float initializer of rank 4");
    if (n->n_input > 2 && n->input[2][0] && (!b || !b->data || b->count != w->dims[0]))
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the bias must be a float initializer of %lld values",
                                     (long long)w->dims[0]);
    if (!has_valid_ints(n, "strides", 1) || !has_valid_ints(n, "dilations", 1))
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "strides and dilations must be >= 1");
    int64_t s[2] = {1, 1}, d[2] = {1, 1}, k[2] = {w->dims[2], w->dims[3]}, ks[2] = {k[0], k[1]}, pads[4];
    if ((st = pdnn__onnx_attr_ints(n, "strides", 2, s)) != PDNN_SUCCESS ||
        (st = pdnn__onnx_attr_ints(n, "dilations", 2, d)) != PDNN_SUCCESS ||
        (st = pdnn__onnx_attr_ints(n, "kernel_shape", 2, ks)) != PDNN_SUCCESS)
        return st;
    if (ks[0] != k[0] || ks[1] != k[1])
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "kernel_shape %lldx%lld differs from the weights' %lldx%lld",
                                     (long long)ks[0], (long long)ks[1], (long long)k[0], (long long)k[1]);
    int64_t group = attr_int(n, "group", 1);
    if (group < 1 || group > INT_MAX)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "group %lld is out of range", (long long)group);
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
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "the weights have no output channel");
    float *wf = malloc((size_t)w->count * sizeof *wf), *bf = calloc((size_t)K, sizeof *bf);
    if (!wf || !bf) {
        free(wf), free(bf);
        return pdnn__onnx_node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
    }
    memcpy(wf, w->data, (size_t)w->count * sizeof *wf);
    int has_bias = b != NULL;
    if (b)
        memcpy(bf, b->data, (size_t)K * sizeof *bf);
    const char *out_name = n->n_output ? n->output[0] : "";
    int r = n->n_output == 1 ? pdnn__onnx_sole_reader(im, idx + 1, out_name) : -1;
    size_t from = idx + 1; /* where the result's readers start */
    if (r >= 0 && im->g->node[r]->op_type && strcmp(im->g->node[r]->op_type, "BatchNormalization") == 0) {
        const Onnx__NodeProto *bn = im->g->node[r];
        value *sc = pdnn__onnx_const_input(im, bn, 1), *bb = pdnn__onnx_const_input(im, bn, 2),
              *mu = pdnn__onnx_const_input(im, bn, 3), *var = pdnn__onnx_const_input(im, bn, 4);
        int ok = !im->train && bn->n_output >= 1 && attr_int(bn, "training_mode", 0) == 0 && sc && bb && mu && var;
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
     * reading the Add. z may be float16 or bfloat16 (a precision policy's
     * value): the policy casts it to the conv's dtype like x, and the sum
     * is rounded once instead of twice. */
    int z = -1;
    r = im->fuse && n->n_output == 1 ? pdnn__onnx_sole_reader(im, from, out_name) : -1;
    if (r >= 0 && im->g->node[r]->op_type && strcmp(im->g->node[r]->op_type, "Add") == 0 &&
        im->g->node[r]->n_input == 2 && im->g->node[r]->n_output == 1 && im->g->node[r]->output[0][0]) {
        const Onnx__NodeProto *add = im->g->node[r];
        const int mine = strcmp(add->input[0], out_name) == 0 ? 0 : 1;
        value *zv =
            strcmp(add->input[1 - mine], out_name) != 0 ? pdnn__onnx_find_value(im, add->input[1 - mine]) : NULL;
        pdnn_tensor_desc xd, zd;
        const pdnn_tensor_desc wdl = {PDNN_FLOAT32, PDNN_OIHW, {w->dims[0], w->dims[1], w->dims[2], w->dims[3]}, 0};
        int64_t od[4];
        if (zv && zv->node >= 0 && zv->rank == 4 && pdnn_graph_node_desc(im->graph, x->node, &xd) == PDNN_SUCCESS &&
            pdnn_conv2d_output_dims(&xd, &wdl, &p, od) == PDNN_SUCCESS &&
            pdnn_graph_node_desc(im->graph, zv->node, &zd) == PDNN_SUCCESS && zd.layout == xd.layout &&
            pdnn__dtype_is_float(zd.dtype) && memcmp(od, zd.dims, sizeof od) == 0) {
            z = zv->node;
            out_name = add->output[0];
            im->absorbed[r] = 1;
            from = (size_t)r + 1;
        }
    }
    /* Fuse a Relu, or a Clip from 0 to a positive finite bound (ReLU6),
     * that alone reads the result (the conv epilogue's relu, capped). */
    r = im->fuse && n->n_output == 1 ? pdnn__onnx_sole_reader(im, from, out_name) : -1;
    const Onnx__NodeProto *act = r >= 0 ? im->g->node[r] : NULL;
    if (act && act->op_type && act->n_input >= 1 && strcmp(act->input[0], out_name) == 0 && act->n_output == 1 &&
        act->output[0][0]) {
        float lo = 0.0f, hi = 0.0f;
        const int relu = strcmp(act->op_type, "Relu") == 0 && act->n_input == 1;
        const int relu6 = strcmp(act->op_type, "Clip") == 0 &&
                          pdnn__onnx_clip_bounds(im, act, 0, &lo, &hi) == PDNN_SUCCESS && lo == 0.0f && hi > 0.0f &&
                          isfinite(hi);
        if (relu || relu6) {
            p.relu = 1;
            p.relu_cap = relu6 ? hi : 0.0f;
            out_name = act->output[0];
            im->absorbed[r] = 1;
        }
    }
    if ((st = pdnn__onnx_check_name(n, out_name)) != PDNN_SUCCESS) {
        free(wf), free(bf);
        return st;
    }
    pdnn_tensor_desc wd = {PDNN_FLOAT32, PDNN_OIHW, {w->dims[0], w->dims[1], w->dims[2], w->dims[3]}, 0};
    if (im->layout == PDNN_NHWC) {
        /* OHWI, the NHWC kernels' filter order; a depthwise filter (one
         * input channel per group) HWIO, where a tap's output channels are
         * contiguous and the depthwise kernel reads them as one vector. */
        const int dwise = p.groups > 1 && w->dims[1] == 1;
        float *t = malloc((size_t)w->count * sizeof *t);
        if (!t) {
            free(wf), free(bf);
            return pdnn__onnx_node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
        }
        pdnn__onnx_relayout(wf, wd.dims, dwise ? PDNN_HWIO : PDNN_OHWI, t);
        free(wf);
        wf = t;
        wd.layout = dwise ? PDNN_HWIO : PDNN_OHWI;
    }
    pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {K, 1, 1, 1}, 0};
    int wn = -1, bn_ = -1, y = -1;
    st = pdnn__graph_constant_adopt(im->graph, im->device, &wd, wf, &wn); /* wf is the node's now */
    if (st == PDNN_SUCCESS && has_bias)
        st = pdnn_graph_constant(im->graph, NULL, im->device, &bd, bf, &bn_);
    free(bf);
    if (st == PDNN_SUCCESS && im->train && (st = pdnn__onnx_train_param(im, wn, w, 1.0f)) == PDNN_SUCCESS)
        st = pdnn__onnx_train_param(im, bn_, b, 1.0f);
    if (st == PDNN_SUCCESS)
        st = z >= 0 ? pdnn_graph_conv2d_residual(im->graph, out_name, im->device, x->node, wn, bn_, z, &p, &y)
                    : pdnn_graph_conv2d(im->graph, out_name, im->device, x->node, wn, bn_, &p, &y);
    if (st != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    return pdnn__onnx_set_output(im, n, out_name, y, 4);
}

/* Pooling node n of x; extra (NULL: none) = {top, left, bottom, right}
 * zeros padded before it by an absorbed Pad, which the window then
 * counts (the pool counts padding). */
static pdnn_status import_pool_of(importer *im, const Onnx__NodeProto *n, const value *x, int max, int global,
                                  const int64_t *extra)
{
    pdnn_status st;
    if (x->rank != 4)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "only 2-D pooling of a rank-4 NCHW input (rank %d given)",
                                     x->rank);
    if (n->n_output != 1)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "only one output (no Indices) is supported");
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    if (global) {
        if (x->dims[2] > INT_MAX || x->dims[3] > INT_MAX)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the image is too large");
        p.mode = PDNN_POOL_AVG_EXCLUDE_PADDING;
        p.window_h = (int)x->dims[2], p.window_w = (int)x->dims[3];
        p.stride_h = p.stride_w = 1;
    } else {
        int64_t k[2] = {0, 0}, s[2] = {1, 1}, d[2] = {1, 1}, pads[4];
        if (!has_valid_ints(n, "kernel_shape", 1) || !has_valid_ints(n, "strides", 1) ||
            !has_valid_ints(n, "dilations", 1))
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n,
                                         "kernel_shape, strides and dilations must be >= 1");
        if (!attr(n, "kernel_shape"))
            return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "kernel_shape is missing");
        if ((st = pdnn__onnx_attr_ints(n, "kernel_shape", 2, k)) != PDNN_SUCCESS ||
            (st = pdnn__onnx_attr_ints(n, "strides", 2, s)) != PDNN_SUCCESS ||
            (st = pdnn__onnx_attr_ints(n, "dilations", 2, d)) != PDNN_SUCCESS)
            return st;
        if (d[0] != 1 || d[1] != 1)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "dilated pooling is not supported");
        if (attr_int(n, "storage_order", 0) != 0)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "storage_order 1 is not supported");
        if ((st = spatial_pads(n, &x->dims[2], k, s, d, pads)) != PDNN_SUCCESS)
            return st;
        p.mode = max ? PDNN_POOL_MAX
                     : attr_int(n, "count_include_pad", 0) ? PDNN_POOL_AVG_INCLUDE_PADDING : PDNN_POOL_AVG_EXCLUDE_PADDING;
        p.window_h = (int)k[0], p.window_w = (int)k[1], p.stride_h = (int)s[0], p.stride_w = (int)s[1];
        if (extra) {
            for (int i = 0; i < 4; i++)
                pads[i] += extra[i];
            p.mode = PDNN_POOL_AVG_INCLUDE_PADDING;
        }
        p.pad_top = (int)pads[0], p.pad_left = (int)pads[1], p.pad_bottom = (int)pads[2], p.pad_right = (int)pads[3];
        p.ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
    }
    if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_pool2d(im->graph, n->output[0], im->device, x->node, &p, &y);
    if (st != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    return pdnn__onnx_set_output(im, n, n->output[0], y, 4);
}

pdnn_status pdnn__onnx_import_pool(importer *im, const Onnx__NodeProto *n, int max, int global)
{
    pdnn_status st;
    value xi;
    const value *x = pdnn__onnx_image_input(im, n, 0, &xi, &st);
    return x ? import_pool_of(im, n, x, max, global, NULL) : st;
}

/* ReduceMean and ReduceMax over H and W of a rank-4 input: global pooling
 * (the window the whole image); ReduceSum the mean times H * W. keepdims
 * 0 gives the rank-2 {N, C}, stored as {N, C, 1, 1} all the same. Axes
 * are an attribute, or an input from opset 18 (ReduceSum: 13). */
pdnn_status pdnn__onnx_import_reduce(importer *im, const Onnx__NodeProto *n, const char *kind)
{
    pdnn_status st;
    const value *x = pdnn__onnx_act_input(im, n, 0, &st);
    if (!x)
        return st;
    const int sum = kind[0] == 'S', max = kind[0] == 'M' && kind[1] == 'a';
    int64_t axes[4];
    size_t na = 0;
    const value *ax = n->n_input > 1 && n->input[1][0] ? pdnn__onnx_const_input(im, n, 1) : NULL;
    const Onnx__AttributeProto *aa = attr(n, "axes");
    if (n->n_input > 1 && n->input[1][0] && (!ax || !ax->i64))
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the axes must be a constant int64 vector");
    if (ax && ax->count > 4)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "%lld axes for a rank-%d input",
                                     (long long)ax->count, x->rank);
    if (ax)
        for (na = 0; na < (size_t)ax->count; na++)
            axes[na] = ax->i64[na];
    else if (aa && aa->n_ints <= 4)
        for (na = 0; na < aa->n_ints; na++)
            axes[na] = aa->ints[na];
    else if (aa)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "%zu axes for a rank-%d input", aa->n_ints, x->rank);
    unsigned mask = 0;
    for (size_t i = 0; i < na; i++) {
        const int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
        if (a < 0 || a >= x->rank)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis %lld is out of range for rank %d",
                                         (long long)axes[i], x->rank);
        mask |= 1u << a;
    }
    if (na == 0 && attr_int(n, "noop_with_empty_axes", 0) == 0)
        mask = (1u << x->rank) - 1; /* every axis */
    if (x->rank != 4 || mask != 0xcu || kind[1] == 'i') /* not pooling's: the N-d op */
        return pdnn__onnx_import_reduce_nd(im, n, x, mask, attr_int(n, "keepdims", 1) != 0, kind);
    value xi;
    if (!(x = pdnn__onnx_image_input(im, n, 0, &xi, &st)))
        return st;
    if (x->dims[2] > INT_MAX || x->dims[3] > INT_MAX)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the image is too large");
    const int keep = attr_int(n, "keepdims", 1) != 0;
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    p.mode = max ? PDNN_POOL_MAX : PDNN_POOL_AVG_EXCLUDE_PADDING;
    p.window_h = (int)x->dims[2], p.window_w = (int)x->dims[3];
    p.stride_h = p.stride_w = 1;
    if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_pool2d(im->graph, sum ? NULL : n->output[0], im->device, x->node, &p, &y);
    if (st == PDNN_SUCCESS && sum)
        st = pdnn_graph_scale(im->graph, n->output[0], im->device, y, (float)(x->dims[2] * x->dims[3]), &y);
    if (st != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    return pdnn__onnx_set_output(im, n, n->output[0], y, keep ? 4 : 2);
}

/* Pad of a rank-4 input along H and W: nothing where every pad is 0;
 * constant zeros that an AveragePool (no pads of its own, floor mode)
 * alone reads become that pool's padding, counted (exporters write
 * count_include_pad so); else a pad node (constant, reflect, edge). Pads
 * come as an attribute before opset 11, as an int64 input since. */
pdnn_status pdnn__onnx_import_pad(importer *im, size_t idx, const Onnx__NodeProto *n)
{
    pdnn_status st;
    value *x = pdnn__onnx_act_input(im, n, 0, &st);
    if (!x)
        return st;
    int64_t pads[8] = {0};
    char mode[16];
    pdnn__onnx_attr_str(n, "mode", mode, sizeof mode);
    float cval = attr_float(n, "value", 0.0f);
    if (im->opset >= 11) {
        const value *pv = n->n_input > 1 ? pdnn__onnx_const_input(im, n, 1) : NULL;
        if (!pv || !pv->i64 || pv->count != 2 * (int64_t)x->rank)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the pads must be a constant int64 vector of %d",
                                         2 * x->rank);
        for (int i = 0; i < 2 * x->rank && x->rank <= 4; i++) /* stored as rank 4: {.., 0, 0} */
            pads[(i / x->rank) * 4 + i % x->rank] = pv->i64[i];
        const value *cv = n->n_input > 2 && n->input[2][0] ? pdnn__onnx_const_input(im, n, 2) : NULL;
        if (n->n_input > 2 && n->input[2][0] && (!cv || !cv->data || cv->count != 1))
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the constant_value must be a float scalar constant");
        if (cv)
            cval = cv->data[0];
        if (n->n_input > 3 && n->input[3][0])
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the axes input (opset 18) is not supported");
    } else if ((st = pdnn__onnx_attr_ints(n, "pads", 8, pads)) != PDNN_SUCCESS)
        return st;
    if (x->rank != 4 && (x->rank != 2 || im->opset < 11))
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "only a rank-4 input is supported (rank %d)", x->rank);
    if (mode[0] && strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "mode '%s' is not constant, reflect or edge", mode);
    int zero = 1, nc = x->rank != 4; /* nc: pads of N or C (or rank 2), an N-d pad node */
    for (int i = 0; i < 8; i++) {
        if (pads[i] < 0 || pads[i] > INT_MAX / 4)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "pads[%d] = %lld; only non-negative pads are supported",
                                         i, (long long)pads[i]);
        zero &= pads[i] == 0;
        nc |= (i & 3) < 2 && pads[i] != 0;
    }
    if (zero) { /* the output is the input */
        value v = *x;
        v.name = n->output[0];
        v.alias = 1;
        return pdnn__onnx_add_value(im, &v);
    }
    const int r = (!mode[0] || strcmp(mode, "constant") == 0) && cval == 0.0f && !nc
                      ? pdnn__onnx_sole_reader(im, idx + 1, n->output[0])
                      : -1;
    const Onnx__NodeProto *m = r >= 0 ? im->g->node[r] : NULL;
    value xi;
    if (!nc && !(x = pdnn__onnx_image_input(im, n, 0, &xi, &st))) /* pooling's and pdnn_graph_pad's H and W */
        return st;
    char ap[32];
    int64_t own[4] = {0, 0, 0, 0};
    if (m && m->op_type && strcmp(m->op_type, "AveragePool") == 0 && m->n_input == 1 &&
        (!pdnn__onnx_attr_str(m, "auto_pad", ap, sizeof ap)[0] || strcmp(ap, "NOTSET") == 0) && attr_int(m, "ceil_mode", 0) == 0 &&
        pdnn__onnx_attr_ints(m, "pads", 4, own) == PDNN_SUCCESS && !own[0] && !own[1] && !own[2] && !own[3]) {
        const int64_t extra[4] = {pads[2], pads[3], pads[6], pads[7]};
        im->absorbed[r] = 1;
        return import_pool_of(im, m, x, 0, 0, extra);
    }
    const int64_t hw[4] = {pads[2], pads[3], pads[6], pads[7]};
    const pdnn_pad_mode pm = !mode[0] || strcmp(mode, "constant") == 0 ? PDNN_PAD_CONSTANT
                             : strcmp(mode, "reflect") == 0            ? PDNN_PAD_REFLECT
                                                                       : PDNN_PAD_EDGE;
    if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = nc ? pdnn_graph_pad_nd(im->graph, n->output[0], im->device, x->node, pads, pm, cval, &y)
            : pdnn_graph_pad(im->graph, n->output[0], im->device, x->node, hw, pm, cval, &y);
    if (st != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    return pdnn__onnx_set_output(im, n, n->output[0], y, x->rank);
}
