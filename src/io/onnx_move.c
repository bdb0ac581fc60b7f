/* The importer's data-movement ops and shape arithmetic: ConvTranspose (as
 * convolution backward data), and the folding of nodes whose inputs are
 * all known at import (Shape of an activation, and Gather, Unsqueeze,
 * Squeeze, Concat, Slice, Cast, ConstantOfShape, Range, Reshape, Add,
 * Sub, Mul, Div of constants): the Shape -> Gather -> Unsqueeze -> Concat
 * -> Reshape chains that torch exports for x.view(x.size(0), -1) become
 * constants here, at the batch the import was given. */
#include "core/half.h"
#include "io/onnx_internal.h"
#include "ops/dispatch.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ConvTranspose ------------------------------------------------------ */

pdnn_status pdnn__onnx_import_conv_transpose(importer *im, const Onnx__NodeProto *n)
{
    value *x, *w = pdnn__onnx_const_input(im, n, 1), *b = pdnn__onnx_const_input(im, n, 2), xi;
    pdnn_status st;
    if (!(x = pdnn__onnx_image_input(im, n, 0, &xi, &st)))
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

/* ---- constants known at import ---------------------------------------- */

/* A new host constant named name (its arrays owned: freed with the values). */
static pdnn_status add_const(importer *im, const char *name, int rank, const int64_t *dims, int64_t *i64, float *f)
{
    value v = {.name = name, .node = -1, .rank = rank, .i64 = i64, .data = f, .count = 1};
    for (int k = 0; k < rank; k++)
        v.dims[k] = dims[k], v.count *= dims[k];
    pdnn_status st = pdnn__onnx_add_value(im, &v);
    if (st != PDNN_SUCCESS)
        free(i64), free(f);
    return st;
}

/* Constant input i (absent: NULL), which must hold int64 or float data. */
static const value *cin(importer *im, const Onnx__NodeProto *n, size_t i)
{
    const value *v = pdnn__onnx_const_input(im, n, i);
    return v && (v->i64 || v->data) ? v : NULL;
}

/* A float as int64, saturated (NaN gives INT64_MIN): a hostile constant must
 * reach the range checks as a bad index, not as undefined behaviour. */
static int64_t f2i(double f)
{
    if (!(f == f))
        return INT64_MIN;
    if (f >= 9.2e18)
        return INT64_MAX;
    if (f <= -9.2e18)
        return INT64_MIN;
    return (int64_t)f;
}

/* Element j of a constant as int64 or as float. */
static int64_t ival(const value *v, int64_t j) { return v->i64 ? v->i64[j] : f2i(v->data[j]); }

/* A new constant of out's shape whose element j is v's element src[j] (the
 * type kept). */
static pdnn_status pick(importer *im, const char *name, const value *v, int rank, const int64_t *dims,
                        const int64_t *src, int64_t count)
{
    int64_t *i = v->i64 ? malloc((size_t)(count ? count : 1) * sizeof *i) : NULL;
    float *f = v->i64 ? NULL : malloc((size_t)(count ? count : 1) * sizeof *f);
    if (!i && !f)
        return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
    for (int64_t j = 0; j < count; j++) {
        if (i)
            i[j] = v->i64[src[j]];
        else
            f[j] = v->data[src[j]];
    }
    return add_const(im, name, rank, dims, i, f);
}

/* The axes of a node: the input (opsets 13+ for Squeeze/Unsqueeze/Split,
 * 18 for Reduce*), else the attribute; *n of them, normalised to rank r. */
static pdnn_status axes_of(importer *im, const Onnx__NodeProto *n, size_t input, const char *attr_name, int r,
                           int64_t *axes, int *count)
{
    const value *a = cin(im, n, input);
    const Onnx__AttributeProto *at = attr(n, attr_name);
    if (input < n->n_input && n->input[input][0] && !a)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the %s input must be a constant", attr_name);
    const int64_t c = a ? a->count : at ? (int64_t)at->n_ints : 0;
    if (c > 8)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "%lld %s", (long long)c, attr_name);
    for (int64_t i = 0; i < c; i++) {
        int64_t v = a ? ival(a, i) : at->ints[i];
        if (v < -r || v >= r)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "%s[%lld] = %lld is out of range for rank %d",
                                         attr_name, (long long)i, (long long)v, r);
        axes[i] = v < 0 ? v + r : v;
    }
    *count = (int)c;
    return PDNN_SUCCESS;
}

/* Row-major offsets of every element of dims (rank r) through strides st. */
static int64_t *offsets(int r, const int64_t *dims, const int64_t *st, int64_t *count)
{
    int64_t c = 1, at[8] = {0};
    for (int k = 0; k < r; k++)
        c *= dims[k];
    int64_t *o = malloc((size_t)(c ? c : 1) * sizeof *o);
    for (int64_t j = 0; o && j < c; j++) {
        int64_t off = 0;
        for (int k = 0; k < r; k++)
            off += at[k] * st[k];
        o[j] = off;
        for (int k = r - 1; k >= 0 && ++at[k] == dims[k]; k--)
            at[k] = 0;
    }
    *count = c;
    return o;
}

static void row_strides(int r, const int64_t *d, int64_t *st)
{
    int64_t s = 1;
    for (int k = r - 1; k >= 0; k--)
        st[k] = s, s *= d[k];
}

/* A new constant of dims d (rank r) read from v at base + the strides st. */
static pdnn_status pick_strided(importer *im, const char *name, const value *v, int r, const int64_t *d,
                                const int64_t *st, int64_t base)
{
    int64_t count;
    int64_t *o = offsets(r, d, st, &count);
    if (!o)
        return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
    for (int64_t j = 0; j < count; j++)
        o[j] += base;
    pdnn_status s = pick(im, name, v, r, d, o, count);
    free(o);
    return s;
}

/* Folds a gather of constant v along axis by constant indices ix. */
static pdnn_status fold_gather(importer *im, const Onnx__NodeProto *n, const value *v, const value *ix, int64_t axis)
{
    const int r = v->rank;
    if (axis < -r || axis >= r || r + ix->rank - 1 > 8)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis %lld of a rank-%d constant", (long long)axis,
                                     r);
    axis += axis < 0 ? r : 0;
    int64_t st[8] = {0}, d[8], od[8], count;
    row_strides(r, v->dims, st);
    int orank = 0;
    for (int k = 0; k < axis; k++)
        od[orank++] = v->dims[k];
    for (int k = 0; k < ix->rank; k++)
        od[orank++] = ix->dims[k];
    for (int k = (int)axis + 1; k < r; k++)
        od[orank++] = v->dims[k];
    /* offsets over {outer, index, inner}, then the index's replaced */
    d[0] = 1, d[1] = ix->count, d[2] = 1;
    for (int k = 0; k < axis; k++)
        d[0] *= v->dims[k];
    for (int k = (int)axis + 1; k < r; k++)
        d[2] *= v->dims[k];
    const int64_t s3[3] = {v->dims[axis] * st[axis], 0, 1};
    int64_t *o = offsets(3, d, s3, &count);
    if (!o)
        return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
    for (int64_t j = 0; j < count; j++) {
        const int64_t i = j / d[2] % d[1];
        int64_t g = ival(ix, i);
        if (g < -v->dims[axis] || g >= v->dims[axis]) {
            free(o);
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "index %lld is out of range for a dim of %lld",
                                         (long long)g, (long long)v->dims[axis]);
        }
        o[j] += (g < 0 ? g + v->dims[axis] : g) * st[axis];
    }
    pdnn_status s = pick(im, n->output[0], v, orank, od, o, count);
    free(o);
    return s;
}

/* Broadcast strides of v's elements over dims d of rank r (numpy's
 * rules: v's dims aligned at the end, each 1 or d's); 0 if they do not
 * broadcast so. */
static int bcast_strides(const value *v, int r, const int64_t *d, int64_t *st)
{
    int64_t own[8];
    row_strides(v->rank, v->dims, own);
    for (int k = 0; k < r; k++) {
        const int vk = k - (r - v->rank);
        const int64_t dv = vk >= 0 ? v->dims[vk] : 1;
        if (dv != 1 && dv != d[k])
            return 0;
        st[k] = dv == 1 ? 0 : own[vk];
    }
    return 1;
}

/* Elementwise Add, Sub, Mul, Div, Mod of two constants of one type, with
 * numpy's broadcasting (shape arithmetic; Swin's relative-position
 * indices: a column plus a row). */
static pdnn_status fold_arith(importer *im, const Onnx__NodeProto *n, const value *a, const value *b, char op)
{
    const int r = a->rank > b->rank ? a->rank : b->rank;
    int64_t d[8], sa[8], sb[8];
    for (int k = 0; k < r; k++) {
        const int ak = k - (r - a->rank), bk = k - (r - b->rank);
        const int64_t da = ak >= 0 ? a->dims[ak] : 1, db = bk >= 0 ? b->dims[bk] : 1;
        d[k] = da == 1 ? db : da;
    }
    if (!a->i64 != !b->i64 || !bcast_strides(a, r, d, sa) || !bcast_strides(b, r, d, sb))
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "constants of two types, or of shapes that do not "
                                     "broadcast");
    int64_t c = 0, cb = 0;
    int64_t *oa = offsets(r, d, sa, &c), *ob = offsets(r, d, sb, &cb);
    int64_t *i = a->i64 && oa && ob ? malloc((size_t)(c ? c : 1) * sizeof *i) : NULL;
    float *f = !a->i64 && oa && ob ? malloc((size_t)(c ? c : 1) * sizeof *f) : NULL;
    if (!i && !f) {
        free(oa), free(ob);
        return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
    }
    for (int64_t j = 0; j < c; j++) {
        const int64_t ja = oa[j], jb = ob[j];
        if (i) {
            const int64_t x = a->i64[ja], y = b->i64[jb];
            int64_t v = 0;
            const int bad = op == '+'   ? __builtin_add_overflow(x, y, &v)
                            : op == '-' ? __builtin_sub_overflow(x, y, &v)
                            : op == '*' ? __builtin_mul_overflow(x, y, &v)
                                        : y == 0 || (x == INT64_MIN && y == -1);
            if (bad) {
                free(i), free(oa), free(ob);
                return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "%s of the int64 constants %lld and %lld",
                                             y == 0 && (op == '/' || op == '%') ? "an integer division by 0"
                                                                                : "an overflowing integer result",
                                             (long long)x, (long long)y);
            }
            /* ONNX's integer Div truncates, as C's does; its Mod (fmod 0)
             * takes the divisor's sign, as Python's %. */
            const int64_t m = op == '%' ? x % y : 0;
            i[j] = op == '+' || op == '-' || op == '*' ? v : op == '/' ? x / y
                 : m != 0 && (m < 0) != (y < 0) ? m + y : m;
        } else {
            const float x = a->data[ja], y = b->data[jb];
            f[j] = op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : op == '/' ? x / y : fmodf(x, y);
        }
    }
    free(oa), free(ob);
    return add_const(im, n->output[0], r, d, i, f);
}

/* The dims (*r of them) of Squeeze or Unsqueeze node n of x: axes from
 * the input (opset 13+) or the attribute; Squeeze without axes drops
 * every 1. */
static pdnn_status squeezed(importer *im, const Onnx__NodeProto *n, const value *x, int64_t *d, int *r)
{
    const int un = n->op_type[0] == 'U';
    const value *av = cin(im, n, 1);
    const Onnx__AttributeProto *aa = attr(n, "axes");
    const int out_rank = un ? x->rank + (int)(av ? av->count : aa ? (int64_t)aa->n_ints : 0) : x->rank;
    int64_t axes[8], dims[8];
    int na = 0, mark[8] = {0};
    pdnn_status st;
    if (out_rank > 8)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "a result of rank %d", out_rank);
    if ((st = axes_of(im, n, 1, "axes", out_rank, axes, &na)) != PDNN_SUCCESS)
        return st;
    for (int i = 0; i < na; i++)
        mark[axes[i]] = 1;
    *r = 0;
    for (int k = 0, j = 0; k < (un ? out_rank : x->rank); k++) {
        if (un)
            dims[(*r)++] = mark[k] ? 1 : x->dims[j++];
        else if (!(na ? mark[k] : x->dims[k] == 1))
            dims[(*r)++] = x->dims[k];
        else if (x->dims[k] != 1)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis %d has %lld elements, not 1", k,
                                         (long long)x->dims[k]);
    }
    memcpy(d, dims, sizeof dims);
    return PDNN_SUCCESS;
}

/* Folds n when its result is known now: Shape of any value, and the shape
 * ops of constants. *done 0: n is not foldable here (an op on activations). */
pdnn_status pdnn__onnx_fold(importer *im, const Onnx__NodeProto *n, int *done)
{
    const char *op = n->op_type;
    *done = 0;
    if (strcmp(op, "Shape") == 0) {
        const value *v = pdnn__onnx_find_value(im, n->n_input ? n->input[0] : NULL);
        if (!v)
            return PDNN_SUCCESS; /* the act input's error names it */
        int64_t b = attr_int(n, "start", 0), e = attr_int(n, "end", v->rank);
        b += b < 0 ? v->rank : 0, e += e < 0 ? v->rank : 0;
        b = b < 0 ? 0 : b > v->rank ? v->rank : b, e = e < b ? b : e > v->rank ? v->rank : e;
        int64_t *d = malloc(8 * sizeof *d);
        if (!d)
            return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
        for (int64_t k = b; k < e; k++)
            d[k - b] = v->dims[k];
        const int64_t len = e - b;
        *done = 1;
        return add_const(im, n->output[0], 1, &len, d, NULL);
    }
    /* Every other op folds only when every input is a constant. */
    size_t given = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        if (!n->input[i][0])
            continue;
        if (!cin(im, n, i))
            return PDNN_SUCCESS;
        given++;
    }
    if (given == 0 && strcmp(op, "ConstantOfShape") != 0)
        return PDNN_SUCCESS;
    const value *x = cin(im, n, 0);
    if (!x)
        return PDNN_SUCCESS; /* an empty first input: the op's own importer names it */
    pdnn_status st = PDNN_SUCCESS;
    *done = 1;
    if (strcmp(op, "Gather") == 0 && cin(im, n, 1))
        return fold_gather(im, n, x, cin(im, n, 1), attr_int(n, "axis", 0));
    if (strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Squeeze") == 0) {
        value v = *x;
        if ((st = squeezed(im, n, x, v.dims, &v.rank)) != PDNN_SUCCESS)
            return st;
        v.name = n->output[0], v.alias = 1;
        return pdnn__onnx_add_value(im, &v);
    }
    if (strcmp(op, "Reshape") == 0 && cin(im, n, 1)) {
        const value *s = cin(im, n, 1);
        int64_t d[8], known = 1;
        int infer = -1;
        if (s->count > 8)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "a result of rank %lld", (long long)s->count);
        for (int k = 0; k < s->count; k++) {
            d[k] = ival(s, k);
            d[k] = d[k] == 0 && k < x->rank ? x->dims[k] : d[k];
            if (d[k] < -1 || (d[k] == -1 && infer >= 0))
                return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "a shape dim of %lld (one -1 at most)",
                                             (long long)d[k]);
            if (d[k] == -1)
                infer = k;
            else if (__builtin_mul_overflow(known, d[k], &known))
                return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "a shape whose size overflows");
        }
        if (infer >= 0 && known > 0)
            d[infer] = x->count / known, known *= d[infer];
        if (known != x->count)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "the shape does not hold the %lld elements",
                                         (long long)x->count);
        value v = *x;
        v.name = n->output[0], v.rank = (int)s->count, v.alias = 1;
        memcpy(v.dims, d, sizeof d);
        return pdnn__onnx_add_value(im, &v);
    }
    if (strcmp(op, "Concat") == 0) {
        int64_t axis = attr_int(n, "axis", 0), d[8], count = 0;
        const int r = x->rank;
        axis += axis < 0 ? r : 0;
        if (axis < 0 || axis >= r)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis out of range for rank %d", r);
        memcpy(d, x->dims, sizeof d);
        d[axis] = 0;
        for (size_t i = 0; i < n->n_input; i++) {
            const value *v = cin(im, n, i);
            if (v->rank != r || !v->i64 != !x->i64)
                return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "inputs of two ranks or types");
            for (int k = 0; k < r; k++)
                if (k != axis && v->dims[k] != x->dims[k])
                    return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n,
                                                 "inputs whose dim %d differs (%lld and %lld) off the axis", k,
                                                 (long long)x->dims[k], (long long)v->dims[k]);
            d[axis] += v->dims[axis];
            count += v->count;
        }
        int64_t *oi = x->i64 ? malloc((size_t)(count ? count : 1) * 8) : NULL;
        float *of = x->i64 ? NULL : malloc((size_t)(count ? count : 1) * 4);
        if (!oi && !of)
            return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
        int64_t outer = 1, at = 0;
        for (int k = 0; k < axis; k++)
            outer *= d[k];
        for (int64_t o = 0; o < outer; o++)
            for (size_t i = 0; i < n->n_input; i++) {
                const value *v = cin(im, n, i);
                const int64_t chunk = outer ? v->count / outer : 0;
                for (int64_t j = 0; j < chunk; j++, at++) {
                    if (oi)
                        oi[at] = v->i64[o * chunk + j];
                    else
                        of[at] = v->data[o * chunk + j];
                }
            }
        return add_const(im, n->output[0], r, d, oi, of);
    }
    if (strcmp(op, "Slice") == 0) {
        int64_t st8[8], d[8], first[8], step[8];
        const int r = x->rank;
        row_strides(r, x->dims, st8);
        memcpy(d, x->dims, sizeof d);
        for (int k = 0; k < 8; k++)
            first[k] = 0, step[k] = 1;
        const value *sv = cin(im, n, 1), *ev = cin(im, n, 2), *av = cin(im, n, 3), *pv = cin(im, n, 4);
        const Onnx__AttributeProto *sa = attr(n, "starts"), *ea = attr(n, "ends"), *aa = attr(n, "axes");
        const int64_t c = sv ? sv->count : sa ? (int64_t)sa->n_ints : 0;
        if (c > r || (ev ? ev->count : ea ? (int64_t)ea->n_ints : 0) != c)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "starts and ends of different counts");
        for (int64_t i = 0; i < c; i++) {
            int64_t a = av ? ival(av, i) : aa && (size_t)i < aa->n_ints ? aa->ints[i] : i;
            const int64_t s = pv ? ival(pv, i) : 1, b = sv ? ival(sv, i) : sa->ints[i],
                          e = ev ? ival(ev, i) : ea->ints[i];
            a += a < 0 ? r : 0;
            if (a < 0 || a >= r || s == 0)
                return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis out of range or step 0");
            d[a] = pdnn__slice_axis(x->dims[a], b, e, s, &first[a]);
            step[a] = s;
        }
        int64_t base = 0, sst[8];
        for (int k = 0; k < r; k++)
            base += first[k] * st8[k], sst[k] = st8[k] * step[k];
        return pick_strided(im, n->output[0], x, r, d, sst, base);
    }
    if (strcmp(op, "Transpose") == 0) { /* of a constant (torch's pads arithmetic) */
        int64_t perm[8], d[8], st8[8], pst[8];
        const int r = x->rank;
        for (int k = 0; k < r; k++)
            perm[k] = r - 1 - k;
        if ((st = pdnn__onnx_attr_ints(n, "perm", (size_t)r, perm)) != PDNN_SUCCESS)
            return st;
        row_strides(r, x->dims, st8);
        int seen[8] = {0};
        for (int k = 0; k < r; k++) {
            if (perm[k] < 0 || perm[k] >= r || seen[perm[k]]++)
                return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "perm is not a permutation of 0..%d", r - 1);
            d[k] = x->dims[perm[k]], pst[k] = st8[perm[k]];
        }
        return pick_strided(im, n->output[0], x, r, d, pst, 0);
    }
    if (strcmp(op, "Cast") == 0) {
        const int64_t to = attr_int(n, "to", 0);
        const pdnn_dtype red = pdnn__onnx_reduced_type(to); /* kept widened: float16's values in float32 */
        const int to_float = to == ONNX_FLOAT || red != PDNN_FLOAT32;
        int64_t *oi = !to_float ? malloc((size_t)(x->count ? x->count : 1) * 8) : NULL;
        float *of = to_float ? malloc((size_t)(x->count ? x->count : 1) * 4) : NULL;
        if (!oi && !of)
            return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
        for (int64_t j = 0; j < x->count; j++) {
            if (of && red != PDNN_FLOAT32) {
                const float f = x->i64 ? (float)x->i64[j] : x->data[j];
                of[j] = red == PDNN_FLOAT16 ? pdnn__f16_to_f32(pdnn__f32_to_f16(f))
                                            : pdnn__bf16_to_f32(pdnn__f32_to_bf16(f));
            } else if (of)
                of[j] = x->i64 ? (float)x->i64[j] : x->data[j];
            else if (to == ONNX_BOOL)
                oi[j] = x->i64 ? x->i64[j] != 0 : x->data[j] != 0.0f;
            else
                oi[j] = x->i64 ? x->i64[j] : f2i(x->data[j]);
        }
        return add_const(im, n->output[0], x->rank, x->dims, oi, of);
    }
    if (strcmp(op, "ConstantOfShape") == 0) {
        const value *s = x;
        const Onnx__AttributeProto *va = attr(n, "value");
        int64_t d[8], count = 1;
        if (!s || s->count > 8)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the shape must be a constant of at most 8 dims");
        for (int k = 0; k < s->count; k++) {
            d[k] = ival(s, k);
            /* checked per factor: the product must not overflow */
            if (d[k] < 0 || d[k] > (int64_t)1 << 28 || (d[k] && count > ((int64_t)1 << 28) / d[k]))
                return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "a shape dim of %lld", (long long)d[k]);
            count *= d[k];
        }
        const Onnx__TensorProto *t = va ? va->t : NULL;
        const int is_int = t && t->has_data_type && t->data_type == ONNX_INT64;
        double fill = 0.0;
        if (t && t->has_raw_data && t->raw_data.len == 8 && is_int) {
            int64_t v;
            memcpy(&v, t->raw_data.data, 8);
            fill = (double)v;
        } else if (t && t->has_raw_data && t->raw_data.len == 4) {
            float v;
            memcpy(&v, t->raw_data.data, 4);
            fill = v;
        } else if (t && t->n_int64_data == 1) {
            fill = (double)t->int64_data[0];
        } else if (t && t->n_float_data == 1) {
            fill = t->float_data[0];
        }
        if (count < 0 || count > (int64_t)1 << 28)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "a shape of %lld elements", (long long)count);
        int64_t *oi = is_int ? malloc((size_t)(count ? count : 1) * 8) : NULL;
        float *of = is_int ? NULL : malloc((size_t)(count ? count : 1) * 4);
        if (!oi && !of)
            return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
        for (int64_t j = 0; j < count; j++) {
            if (oi)
                oi[j] = f2i(fill);
            else
                of[j] = (float)fill;
        }
        return add_const(im, n->output[0], (int)s->count, d, oi, of);
    }
    if (strcmp(op, "Range") == 0 && n->n_input == 3) {
        const value *lim = cin(im, n, 1), *dl = cin(im, n, 2);
        const double b = x->i64 ? (double)x->i64[0] : x->data[0], e = lim->i64 ? (double)lim->i64[0] : lim->data[0],
                     s = dl->i64 ? (double)dl->i64[0] : dl->data[0];
        const double cnt = s != 0.0 ? ceil((e - b) / s) : -1.0;
        if (!(cnt <= (double)((int64_t)1 << 28)) || s == 0.0)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "a range of step 0 or too many elements");
        const int64_t c = cnt > 0 ? (int64_t)cnt : 0;
        int64_t *oi = x->i64 ? malloc((size_t)(c ? c : 1) * 8) : NULL;
        float *of = x->i64 ? NULL : malloc((size_t)(c ? c : 1) * 4);
        if (!oi && !of)
            return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
        for (int64_t j = 0; j < c; j++) {
            if (oi)
                oi[j] = x->i64[0] + j * dl->i64[0];
            else
                of[j] = x->data[0] + (float)j * dl->data[0];
        }
        return add_const(im, n->output[0], 1, &c, oi, of);
    }
    if (strcmp(op, "Expand") == 0 && cin(im, n, 1)) { /* a constant broadcast (ViT's class token) */
        const value *sv = cin(im, n, 1);
        int64_t d[8], st8[8], bst[8] = {0};
        const int r = (int)(sv->count > x->rank ? sv->count : x->rank);
        if (sv->count > 8)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "a result of rank %lld", (long long)sv->count);
        row_strides(x->rank, x->dims, st8);
        for (int k = 0; k < r; k++) {
            const int xk = k - (r - x->rank), sk = k - (r - (int)sv->count);
            const int64_t xv = xk >= 0 ? x->dims[xk] : 1, want = sk >= 0 ? ival(sv, sk) : 1;
            if (xv != 1 && want != 1 && xv != want)
                return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "the shape does not broadcast the input");
            d[k] = xv != 1 ? xv : want;
            bst[k] = xv != 1 ? st8[xk] : 0;
        }
        return pick_strided(im, n->output[0], x, r, d, bst, 0);
    }
    if (strcmp(op, "Not") == 0) {
        int64_t *oi = malloc((size_t)(x->count ? x->count : 1) * 8);
        if (!oi)
            return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
        for (int64_t j = 0; j < x->count; j++)
            oi[j] = x->i64 ? x->i64[j] == 0 : x->data[j] == 0.0f;
        return add_const(im, n->output[0], x->rank, x->dims, oi, NULL);
    }
    if (strcmp(op, "ScatterND") == 0 && n->n_input == 3) { /* Swin's shifted-window mask */
        const value *ix = cin(im, n, 1), *up = cin(im, n, 2);
        int64_t st8[8] = {0};
        const int64_t k = ix->rank ? ix->dims[ix->rank - 1] : 0, rows = k ? ix->count / k : 0;
        int64_t slice = 1;
        char red[16];
        if (!ix->i64 || ix->rank < 1 || k < 1 || k > x->rank || !up->i64 != !x->i64 ||
            pdnn__onnx_attr_str(n, "reduction", red, sizeof red)[0])
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "indices must be int64 of a last dim 1 to %d, "
                                         "updates of the data's type, no reduction", x->rank);
        row_strides(x->rank, x->dims, st8);
        for (int j = (int)k; j < x->rank; j++)
            slice *= x->dims[j];
        if (up->count != rows * slice)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "%lld updates for %lld rows of %lld",
                                         (long long)up->count, (long long)rows, (long long)slice);
        int64_t *src = malloc((size_t)(x->count ? x->count : 1) * sizeof *src);
        if (!src)
            return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
        for (int64_t j = 0; j < x->count; j++)
            src[j] = j;
        /* where each element comes from: data (j) or the updates (count + i) */
        for (int64_t r0 = 0; r0 < rows; r0++) {
            int64_t off = 0;
            for (int64_t j = 0; j < k; j++) {
                int64_t v = ix->i64[r0 * k + j];
                v += v < 0 ? x->dims[j] : 0;
                if (v < 0 || v >= x->dims[j]) {
                    free(src);
                    return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "index %lld is out of range",
                                                 (long long)ix->i64[r0 * k + j]);
                }
                off += v * st8[j];
            }
            for (int64_t e = 0; e < slice; e++)
                src[off + e] = x->count + r0 * slice + e;
        }
        int64_t *oi = x->i64 ? malloc((size_t)(x->count ? x->count : 1) * 8) : NULL;
        float *of = x->i64 ? NULL : malloc((size_t)(x->count ? x->count : 1) * 4);
        for (int64_t j = 0; (oi || of) && j < x->count; j++) {
            const int64_t f = src[j];
            if (oi)
                oi[j] = f < x->count ? x->i64[f] : up->i64[f - x->count];
            else
                of[j] = f < x->count ? x->data[f] : up->data[f - x->count];
        }
        free(src);
        if (!oi && !of)
            return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
        return add_const(im, n->output[0], x->rank, x->dims, oi, of);
    }
    if (strcmp(op, "Equal") == 0 || strcmp(op, "Where") == 0) { /* shape arithmetic: bools as int64 0 and 1 */
        const int where = op[0] == 'W';
        const value *a = cin(im, n, where ? 1 : 0), *b = cin(im, n, where ? 2 : 1);
        const value *big = x;
        for (size_t i = 1; i < n->n_input; i++)
            big = cin(im, n, i)->count > big->count ? cin(im, n, i) : big;
        for (size_t i = 0; i < n->n_input; i++) {
            const value *v = cin(im, n, i);
            if (v->count != 1 && (v->rank != big->rank ||
                                  memcmp(v->dims, big->dims, (size_t)big->rank * sizeof *v->dims) != 0))
                return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "constants that need more than a scalar's "
                                             "broadcast");
        }
        const int ints = where ? (a->i64 && b->i64) : 1;
        if (where && !a->i64 != !b->i64)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "branches of two types");
        int64_t *oi = ints ? malloc((size_t)(big->count ? big->count : 1) * 8) : NULL;
        float *of = ints ? NULL : malloc((size_t)(big->count ? big->count : 1) * 4);
        if (!oi && !of)
            return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
        for (int64_t j = 0; j < big->count; j++) {
            const int64_t ja = a->count == 1 ? 0 : j, jb = b->count == 1 ? 0 : j, jc = x->count == 1 ? 0 : j;
            if (!where)
                oi[j] = a->i64 && b->i64 ? a->i64[ja] == b->i64[jb]
                                         : (a->i64 ? (float)a->i64[ja] : a->data[ja]) ==
                                               (b->i64 ? (float)b->i64[jb] : b->data[jb]);
            else if (ints)
                oi[j] = ival(x, jc) ? a->i64[ja] : b->i64[jb];
            else
                of[j] = (x->i64 ? x->i64[jc] != 0 : x->data[jc] != 0.0f) ? a->data[ja] : b->data[jb];
        }
        return add_const(im, n->output[0], big->rank, big->dims, oi, of);
    }
    if ((strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0 ||
         strcmp(op, "Mod") == 0) &&
        n->n_input == 2) {
        /* Mod with fmod 1 (C's fmod) on integers is refused below: torch writes fmod 0. */
        if (op[1] == 'o' && (attr_int(n, "fmod", 0) != 0) != (x->i64 == NULL))
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "Mod with fmod %lld of %s constants",
                                         (long long)attr_int(n, "fmod", 0), x->i64 ? "int64" : "float");
        if (!cin(im, n, 1)) { /* an empty second input */
            *done = 0;
            return PDNN_SUCCESS;
        }
        return fold_arith(im, n, x, cin(im, n, 1),
                          op[0] == 'A' ? '+' : op[0] == 'S' ? '-' : op[1] == 'u' ? '*' : op[1] == 'o' ? '%' : '/');
    }
    *done = 0;
    return PDNN_SUCCESS;
}

/* ---- data movement of activations ------------------------------------- */

/* y = x's activation reshaped to Squeeze's or Unsqueeze's dims. */
static pdnn_status squeeze_act(importer *im, const Onnx__NodeProto *n, value *x)
{
    int64_t d[8];
    int r = 0;
    pdnn_status st = squeezed(im, n, x, d, &r);
    return st != PDNN_SUCCESS ? st : pdnn__onnx_reshape_to(im, n, x, r, d);
}

/* The value's graph node has 4 logical dims (rank 2: {a, b, 1, 1}): ONNX's
 * axes index them as they are. */
static pdnn_status set_out(importer *im, const Onnx__NodeProto *n, const char *name, pdnn_status st, int y, int rank)
{
    if (st != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    return pdnn__onnx_set_output(im, n, name, y, rank);
}

static pdnn_status import_split(importer *im, const Onnx__NodeProto *n, value *x)
{
    int64_t axis = attr_int(n, "axis", 0), sizes[64];
    axis += axis < 0 ? x->rank : 0;
    if (axis < 0 || axis >= x->rank)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis out of range for rank %d", x->rank);
    const size_t parts = n->n_output;
    const value *sv = cin(im, n, 1);
    const Onnx__AttributeProto *sa = attr(n, "split");
    if (parts > 64)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "%zu outputs (at most 64)", parts);
    if (n->n_input > 1 && n->input[1][0] && !sv)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the split input must be a constant");
    const int64_t d = x->dims[axis];
    int64_t total = 0;
    for (size_t i = 0; i < parts; i++) {
        /* opset 18's num_outputs: ceil-sized parts, the last smaller */
        const int64_t even = (d + (int64_t)parts - 1) / (int64_t)parts;
        sizes[i] = sv ? ival(sv, (int64_t)i) : sa && i < sa->n_ints ? sa->ints[i]
                                                 : (i + 1 < parts ? even : d - even * (int64_t)(parts - 1));
        total += sizes[i];
    }
    if ((sv && sv->count != (int64_t)parts) || (sa && sa->n_ints != parts) || total != d)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "the parts do not add up to axis %lld's %lld",
                                     (long long)axis, (long long)d);
    int64_t at = 0;
    for (size_t i = 0; i < parts; i++) {
        const int64_t e = at + sizes[i];
        pdnn_status st = pdnn__onnx_check_name(n, n->output[i]);
        int y = -1;
        if (st == PDNN_SUCCESS)
            st = pdnn_graph_slice(im->graph, n->output[i], im->device, x->node, 1, &at, &e, &axis, NULL, &y);
        if ((st = set_out(im, n, n->output[i], st, y, x->rank)) != PDNN_SUCCESS)
            return st;
        at = e;
    }
    return PDNN_SUCCESS;
}

static pdnn_status import_slice(importer *im, const Onnx__NodeProto *n, value *x)
{
    int64_t b[8], e[8], a[8], s[8];
    const value *sv = cin(im, n, 1), *ev = cin(im, n, 2), *av = cin(im, n, 3), *pv = cin(im, n, 4);
    const Onnx__AttributeProto *sa = attr(n, "starts"), *ea = attr(n, "ends"), *aa = attr(n, "axes");
    for (size_t i = 1; i < n->n_input; i++)
        if (n->input[i][0] && !cin(im, n, i))
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "starts, ends, axes and steps must be constants");
    const int64_t c = sv ? sv->count : sa ? (int64_t)sa->n_ints : 0;
    if (c > x->rank || (ev ? ev->count : ea ? (int64_t)ea->n_ints : 0) != c)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "starts and ends of different counts");
    for (int64_t i = 0; i < c; i++) {
        b[i] = sv ? ival(sv, i) : sa->ints[i];
        e[i] = ev ? ival(ev, i) : ea->ints[i];
        a[i] = av ? ival(av, i) : aa && (size_t)i < aa->n_ints ? aa->ints[i] : i;
        a[i] += a[i] < 0 ? x->rank : 0;
        s[i] = pv ? ival(pv, i) : 1;
    }
    pdnn_status st = pdnn__onnx_check_name(n, n->output[0]);
    int y = -1;
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_slice(im->graph, n->output[0], im->device, x->node, (int)c, b, e, a, s, &y);
    return set_out(im, n, n->output[0], st, y, x->rank);
}

static pdnn_status import_gather(importer *im, const Onnx__NodeProto *n, value *x)
{
    const value *ix = cin(im, n, 1);
    if (!ix || !ix->i64 || ix->rank > 1)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the indices must be a constant int64 scalar or vector");
    if (ix->count > PDNN__MOVE_ARGS)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "%lld indices (at most %d)", (long long)ix->count,
                                     PDNN__MOVE_ARGS);
    /* ONNX's axis counts the value's rank (a rank-2 value's node has 4 dims) */
    int64_t axis = attr_int(n, "axis", 0);
    if (axis < -x->rank || axis >= x->rank)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis %lld is outside [-%d, %d)", (long long)axis,
                                     x->rank, x->rank);
    axis += axis < 0 ? x->rank : 0;
    pdnn_status st = pdnn__onnx_check_name(n, n->output[0]);
    int y = -1;
    /* A scalar index drops the axis (rank r - 1 + 0): the gather of one,
     * then a reshape without it (x[:, 0], ViT's class token). */
    char tmp[sizeof(((pdnn__node *)0)->name)];
    snprintf(tmp, sizeof tmp, "%.100s/gather", n->output[0]);
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_gather(im->graph, ix->rank ? n->output[0] : tmp, im->device, x->node, (int)axis, ix->i64,
                               (int)ix->count, &y);
    if (st != PDNN_SUCCESS || ix->rank)
        return set_out(im, n, n->output[0], st, y, x->rank);
    value one = *x;
    one.node = y;
    int64_t d[PDNN_MAX_RANK];
    for (int k = 0, j = 0; k < x->rank; k++)
        if (k != axis)
            d[j++] = x->dims[k];
    return pdnn__onnx_reshape_to(im, n, &one, x->rank - 1, d);
}

static pdnn_status import_expand(importer *im, const Onnx__NodeProto *n, value *x)
{
    const value *sv = cin(im, n, 1);
    if (!sv || sv->count != x->rank)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the shape must be a constant of the input's rank %d",
                                     x->rank);
    int64_t d[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int k = 0; k < x->rank; k++) /* numpy: a 1 in the shape keeps x's dim */
        d[k] = ival(sv, k) == 1 ? x->dims[k] : ival(sv, k);
    pdnn_tensor_desc xd; /* an N-d node (a trainable parameter's) expands at its rank, an image one at 4 */
    pdnn_status st = pdnn_graph_node_desc(im->graph, x->node, &xd);
    int y = -1;
    if (st == PDNN_SUCCESS)
        st = pdnn__onnx_check_name(n, n->output[0]);
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_expand(im->graph, n->output[0], im->device, x->node, xd.layout == PDNN_ND ? x->rank : 4, d,
                               &y);
    return set_out(im, n, n->output[0], st, y, x->rank);
}

static pdnn_status import_where(importer *im, const Onnx__NodeProto *n)
{
    const value *m = cin(im, n, 0);
    pdnn_status st;
    value *a = pdnn__onnx_act_input(im, n, 1, &st), *b = a ? pdnn__onnx_act_input(im, n, 2, &st) : NULL;
    if (!b)
        return st;
    const int r = a->rank > b->rank ? a->rank : b->rank;
    if (!m || m->rank > r)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the condition must be a constant (of rank %d at most)",
                                     r);
    float *mf = malloc((size_t)(m->count ? m->count : 1) * sizeof *mf);
    if (!mf)
        return pdnn__onnx_node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
    for (int64_t j = 0; j < m->count; j++) /* a folded Equal's int64 0 and 1, or bools read as floats */
        mf[j] = m->i64 ? (float)(m->i64[j] != 0) : (float)(m->data[j] != 0.0f);
    /* The mask aligned to rank r from the end, stored as the importer
     * stores rank r: those dims, then 1s. */
    pdnn_tensor_desc md = {PDNN_FLOAT32, PDNN_ND, {1, 1, 1, 1}, 4};
    for (int k = 0; k < m->rank; k++)
        md.dims[r - m->rank + k] = m->dims[k];
    int mn = -1, y = -1;
    st = pdnn__graph_constant_adopt(im->graph, im->device, &md, mf, &mn); /* mf is the node's now */
    if (st == PDNN_SUCCESS)
        st = pdnn__onnx_check_name(n, n->output[0]);
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_where(im->graph, n->output[0], im->device, mn, a->node, b->node, &y);
    return set_out(im, n, n->output[0], st, y, r);
}

static pdnn_status import_resize(importer *im, const Onnx__NodeProto *n, value *x)
{
    char mode[32], ct[40], nm[32];
    const int upsample = strcmp(n->op_type, "Upsample") == 0;
    pdnn__onnx_attr_str(n, "mode", mode, sizeof mode);
    pdnn__onnx_attr_str(n, "coordinate_transformation_mode", ct, sizeof ct);
    pdnn__onnx_attr_str(n, "nearest_mode", nm, sizeof nm);
    const pdnn_resize_mode rm = !mode[0] || strcmp(mode, "nearest") == 0 ? PDNN_RESIZE_NEAREST
                                : strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0 ? PDNN_RESIZE_LINEAR
                                                                                             : (pdnn_resize_mode)-1;
    /* Before opset 11 (and Upsample) coordinates were asymmetric and the
     * nearest pixel the one below. */
    const int old = upsample || im->opset < 11;
    const pdnn_resize_coord rc = !ct[0] ? (old ? PDNN_RESIZE_ASYMMETRIC : PDNN_RESIZE_HALF_PIXEL)
                                 : strcmp(ct, "half_pixel") == 0         ? PDNN_RESIZE_HALF_PIXEL
                                 : strcmp(ct, "asymmetric") == 0         ? PDNN_RESIZE_ASYMMETRIC
                                 : strcmp(ct, "align_corners") == 0      ? PDNN_RESIZE_ALIGN_CORNERS
                                 : strcmp(ct, "pytorch_half_pixel") == 0 ? PDNN_RESIZE_PYTORCH_HALF_PIXEL
                                                                         : (pdnn_resize_coord)-1;
    const pdnn_resize_nearest rn = !nm[0] && old                                     ? PDNN_RESIZE_FLOOR
                                   : !nm[0] || strcmp(nm, "round_prefer_floor") == 0 ? PDNN_RESIZE_ROUND_PREFER_FLOOR
                                   : strcmp(nm, "floor") == 0                       ? PDNN_RESIZE_FLOOR
                                   : strcmp(nm, "round_prefer_ceil") == 0           ? PDNN_RESIZE_ROUND_PREFER_CEIL
                                   : strcmp(nm, "ceil") == 0                        ? PDNN_RESIZE_CEIL
                                                                                    : (pdnn_resize_nearest)-1;
    if ((int)rm < 0 || (int)rc < 0 || (int)rn < 0 || attr_int(n, "antialias", 0) != 0 ||
        attr_int(n, "exclude_outside", 0) != 0)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n,
                                     "mode '%s', coordinate_transformation_mode '%s', nearest_mode '%s' or antialias "
                                     "(nearest or linear; half_pixel, asymmetric, align_corners, pytorch_half_pixel; "
                                     "round_prefer_floor, floor, round_prefer_ceil, ceil are supported)",
                                     mode, ct, nm);
    /* Scales: Upsample's attribute (opsets 7, 8), else the input after X
     * (Upsample 9, Resize 10) or after the roi (Resize 11+); sizes last. */
    const size_t si = upsample || im->opset < 11 ? 1 : 2;
    const value *sv = cin(im, n, si), *zv = im->opset >= 11 && !upsample ? cin(im, n, 3) : NULL;
    const Onnx__AttributeProto *sa = attr(n, "scales");
    float sc[4] = {1, 1, 1, 1};
    int64_t d[4] = {1, 1, 1, 1};
    int has_scales = 0;
    if (sv && sv->count == 0)
        sv = NULL; /* an empty scales beside sizes */
    if (zv && zv->count == x->rank) {
        for (int k = 0; k < x->rank; k++)
            d[k] = ival(zv, k);
    } else if ((sv && sv->data && sv->count == x->rank) || (!sv && sa && sa->n_floats == (size_t)x->rank)) {
        for (int k = 0; k < x->rank; k++) {
            sc[k] = sv ? sv->data[k] : sa->floats[k];
            d[k] = f2i(floorf((float)x->dims[k] * sc[k]));
        }
        has_scales = 1;
    } else {
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the scales or sizes must be constants of %d values",
                                     x->rank);
    }
    pdnn_status st = pdnn__onnx_check_name(n, n->output[0]);
    int y = -1;
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_resize(im->graph, n->output[0], im->device, x->node, rm, rc, rn, has_scales ? sc : NULL, d,
                               &y);
    return set_out(im, n, n->output[0], st, y, x->rank);
}

pdnn_status pdnn__onnx_import_move(importer *im, const Onnx__NodeProto *n)
{
    const char *op = n->op_type;
    if (strcmp(op, "Where") == 0)
        return import_where(im, n);
    pdnn_status st;
    value *x = pdnn__onnx_act_input(im, n, 0, &st);
    if (!x)
        return st;
    if (strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0)
        return squeeze_act(im, n, x);
    if (strcmp(op, "Split") == 0)
        return import_split(im, n, x);
    if (strcmp(op, "Slice") == 0)
        return import_slice(im, n, x);
    if (strcmp(op, "Gather") == 0)
        return import_gather(im, n, x);
    if (strcmp(op, "Expand") == 0)
        return import_expand(im, n, x);
    if (strcmp(op, "Resize") == 0 || strcmp(op, "Upsample") == 0)
        return import_resize(im, n, x);
    return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "%s of an activation is not supported (of constants only, "
                                 "folded at import)", op);
}
