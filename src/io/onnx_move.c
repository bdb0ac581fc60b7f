/* The importer's data-movement ops and shape arithmetic: ConvTranspose (as
 * convolution backward data), and the folding of nodes whose inputs are
 * all known at import (Shape of an activation, and Gather, Unsqueeze,
 * Squeeze, Concat, Slice, Cast, ConstantOfShape, Range, Reshape, Add,
 * Sub, Mul, Div of constants): the Shape -> Gather -> Unsqueeze -> Concat
 * -> Reshape chains that torch exports for x.view(x.size(0), -1) become
 * constants here, at the batch the import was given. */
#include "io/onnx_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ConvTranspose ------------------------------------------------------ */

pdnn_status pdnn__onnx_import_conv_transpose(importer *im, const Onnx__NodeProto *n)
{
    value *x, *w = pdnn__onnx_const_input(im, n, 1), *b = pdnn__onnx_const_input(im, n, 2);
    pdnn_status st;
    if (!(x = pdnn__onnx_act_input(im, n, 0, &st)))
        return st;
    if (x->rank != 4)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "only 2-D transposed convolution of a rank-4 input "
                                     "(rank %d given)", x->rank);
    if (!w || !w->data || w->rank != 4 || w->count < 1 || w->dims[0] != x->dims[1])
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n,
                                     "the weights must be a float initializer {C_in = %lld, C_out / group, kH, kW}",
                                     (long long)x->dims[1]);
    const int64_t group = attr_int(n, "group", 1), cout = w->dims[1] * group;
    if (group < 1 || group > INT_MAX || x->dims[1] % group)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "group %lld does not divide C_in %lld",
                                     (long long)group, (long long)x->dims[1]);
    if (n->n_input > 2 && n->input[2][0] && (!b || !b->data || b->count != cout))
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the bias must be a float initializer of %lld values",
                                     (long long)cout);
    char ap[32];
    pdnn__onnx_attr_str(n, "auto_pad", ap, sizeof ap);
    if (ap[0] && strcmp(ap, "NOTSET") != 0)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "auto_pad '%s' is not supported (give pads)", ap);
    if (attr(n, "output_shape"))
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "output_shape is not supported (give pads and "
                                     "output_padding)");
    int64_t s[2] = {1, 1}, d[2] = {1, 1}, op[2] = {0, 0}, pads[4] = {0, 0, 0, 0}, out[2];
    if ((st = pdnn__onnx_attr_ints(n, "strides", 2, s)) != PDNN_SUCCESS ||
        (st = pdnn__onnx_attr_ints(n, "dilations", 2, d)) != PDNN_SUCCESS ||
        (st = pdnn__onnx_attr_ints(n, "output_padding", 2, op)) != PDNN_SUCCESS ||
        (st = pdnn__onnx_attr_ints(n, "pads", 4, pads)) != PDNN_SUCCESS)
        return st;
    for (int a = 0; a < 2; a++) {
        if (s[a] < 1 || s[a] > 1 << 20 || d[a] < 1 || d[a] > 1 << 20)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "strides and dilations must be 1 to 2^20");
        /* The forward convolution of the output gives back the input's
         * size only while output_padding is below the stride. */
        if (op[a] < 0 || op[a] >= s[a])
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n,
                                         "output_padding[%d] = %lld must be >= 0 and below the stride %lld", a,
                                         (long long)op[a], (long long)s[a]);
        if (pads[a] < 0 || pads[a + 2] < 0 || pads[a] > INT_MAX / 4 || pads[a + 2] > INT_MAX / 4)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "pads must be 0 to %d", INT_MAX / 4);
        out[a] = (x->dims[2 + a] - 1) * s[a] - pads[a] - pads[a + 2] + d[a] * (w->dims[2 + a] - 1) + 1 + op[a];
        if (out[a] < 1 || out[a] > INT_MAX)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "the output's spatial dim %d would be %lld", a,
                                         (long long)out[a]);
    }
    pdnn__node proto;
    memset(&proto, 0, sizeof proto);
    proto.op = PDNN__OP_G_CONV_BWD_DATA;
    pdnn_conv2d_params_init(&proto.conv);
    proto.conv.stride_h = (int)s[0], proto.conv.stride_w = (int)s[1];
    proto.conv.dilation_h = (int)d[0], proto.conv.dilation_w = (int)d[1];
    proto.conv.pad_top = (int)pads[0], proto.conv.pad_left = (int)pads[1];
    proto.conv.pad_bottom = (int)pads[2], proto.conv.pad_right = (int)pads[3];
    proto.conv.groups = (int)group;
    const pdnn_tensor_desc out_desc = {PDNN_FLOAT32, im->layout, {x->dims[0], cout, out[0], out[1]}, 4};
    proto.out = out_desc;
    if (im->device)
        snprintf(proto.device, sizeof proto.device, "%s", im->device);
    /* ONNX's weights {C_in, C_out / group, kH, kW} are the forward
     * convolution's filter {K, C / group, R, S}, OIHW (OHWI under NHWC). */
    pdnn_tensor_desc wd = {PDNN_FLOAT32, PDNN_OIHW, {w->dims[0], w->dims[1], w->dims[2], w->dims[3]}, 0};
    float *wf = malloc((size_t)w->count * sizeof *wf);
    if (!wf)
        return pdnn__onnx_node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
    if (im->layout == PDNN_NHWC) {
        pdnn__onnx_relayout(w->data, wd.dims, PDNN_OHWI, wf);
        wd.layout = PDNN_OHWI;
    } else {
        memcpy(wf, w->data, (size_t)w->count * sizeof *wf);
    }
    const char *bname = b ? NULL : n->output[0];
    char tmp[sizeof proto.name];
    if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
        return free(wf), st;
    if (b) {
        snprintf(tmp, sizeof tmp, "%.100s/convT", n->output[0]);
        bname = tmp;
    }
    int wn = -1, y = -1;
    st = pdnn__graph_constant_adopt(im->graph, im->device, &wd, wf, &wn);
    const pdnn_node in[2] = {x->node, wn};
    if (st == PDNN_SUCCESS)
        st = pdnn__graph_add(im->graph, bname, &proto, in, 2, &y);
    if (st == PDNN_SUCCESS && b) {
        const pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {cout, 1, 1, 1}, 0};
        int bn = -1;
        st = pdnn_graph_constant(im->graph, NULL, im->device, &bd, b->data, &bn);
        if (st == PDNN_SUCCESS)
            st = pdnn_graph_bias_add(im->graph, n->output[0], im->device, y, bn, &y);
    }
    if (st != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    return pdnn__onnx_set_output(im, n, n->output[0], y, 4);
}
