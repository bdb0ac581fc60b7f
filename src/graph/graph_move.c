/* The data-movement ops as graph nodes (PDNN__OP_MOVE): pdnn_graph_slice,
 * gather, expand, where, pad_nd, resize; their shapes, their run in a
 * session and the probe the placer asks a backend's plan with. Not
 * differentiable yet. */
#include "graph/graph.h"
#include "ops/dispatch.h"

#include <stdio.h>
#include <string.h>

#define R PDNN_MAX_RANK

const char *pdnn__move_type(const pdnn__node *n)
{
    static const char *const names[] = {"Slice", "Gather", "Expand", "Where", "PadND", "Resize"};
    return (unsigned)n->move_kind < sizeof names / sizeof *names ? names[n->move_kind] : "Move";
}

/* Checks the graph, name, device and inputs, and starts nd. */
static pdnn_status move_begin(pdnn_graph *g, const char *fn, const char *name, const char *device,
                              const pdnn_node *in, int n_in, pdnn_node *out, pdnn__node *nd, pdnn__move_kind kind)
{
    memset(nd, 0, sizeof *nd);
    nd->op = PDNN__OP_MOVE;
    nd->move_kind = kind;
    if (!g || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !g ? "graph" : "out");
    pdnn_node dup;
    if (name && *name && (strlen(name) >= sizeof nd->name || pdnn_graph_find(g, name, &dup) == PDNN_SUCCESS))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: node name '%.40s' is too long or taken", fn, name);
    pdnn_device_spec spec;
    if (device && *device &&
        (strlen(device) >= sizeof nd->device || pdnn__device_spec_parse(device, 1, &spec) != PDNN_SUCCESS))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: device '%.60s' is not a device name", fn, device);
    snprintf(nd->device, sizeof nd->device, "%s", device ? device : "");
    for (int i = 0; i < n_in; i++)
        if (in[i] < 0 || in[i] >= pdnn_graph_node_count(g))
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: input %d is node %d, but the graph has nodes 0..%d",
                               fn, i, in[i], pdnn_graph_node_count(g) - 1);
    return pdnn_graph_node_desc(g, in[0], &nd->out);
}

static pdnn_status move_finish(pdnn_graph *g, const char *name, pdnn__node *nd, const pdnn_node *in, int n_in,
                               pdnn_node *out)
{
    return pdnn__graph_add(g, name && *name ? name : pdnn__move_type(nd), nd, in, n_in, out);
}

/* y's descriptor: x's layout where y keeps an image layout's rank 4, else ND. */
static void out_desc(pdnn_tensor_desc *d, int r, const int64_t *dims)
{
    const int image = d->layout != PDNN_ND && d->layout != PDNN_LAYOUT_X && r == 4;
    d->layout = image ? d->layout : PDNN_ND;
    d->rank = r;
    for (int k = 0; k < R; k++)
        d->dims[k] = k < r ? dims[k] : 1;
}

static pdnn_status bad(const char *fn, const char *what)
{
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s", fn, what);
}

pdnn_status pdnn_graph_slice(pdnn_graph *g, const char *name, const char *device, pdnn_node x, int n,
                             const int64_t *starts, const int64_t *ends, const int64_t *axes, const int64_t *steps,
                             pdnn_node *out)
{
    static const char fn[] = "pdnn_graph_slice";
    pdnn__node nd;
    pdnn_status st = move_begin(g, fn, name, device, &x, 1, out, &nd, PDNN__MOVE_SLICE);
    if (st != PDNN_SUCCESS)
        return st;
    const int r = pdnn_tensor_desc_rank(&nd.out);
    if (n < 0 || n > r || (n && (!starts || !ends)))
        return bad(fn, "n must be 0 to x's rank, with starts and ends");
    int64_t d[R];
    memcpy(d, nd.out.dims, sizeof d);
    for (int i = 0; i < n; i++) {
        const int64_t a = axes ? axes[i] : i, s = steps ? steps[i] : 1;
        int64_t first;
        if (a < -r || a >= r || s == 0)
            return bad(fn, "an axis is out of range or a step is 0");
        const int ax = (int)(a < 0 ? a + r : a);
        d[ax] = pdnn__slice_axis(nd.out.dims[ax], starts[i], ends[i], s, &first);
        if (d[ax] < 1)
            return bad(fn, "the slice is empty along an axis");
        nd.move[i] = starts[i], nd.move[n + i] = ends[i], nd.move[2 * n + i] = a, nd.move[3 * n + i] = s;
    }
    nd.move_n = n;
    out_desc(&nd.out, r, d);
    return move_finish(g, name, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_gather(pdnn_graph *g, const char *name, const char *device, pdnn_node x, int axis,
                              const int64_t *indices, int n, pdnn_node *out)
{
    static const char fn[] = "pdnn_graph_gather";
    pdnn__node nd;
    pdnn_status st = move_begin(g, fn, name, device, &x, 1, out, &nd, PDNN__MOVE_GATHER);
    if (st != PDNN_SUCCESS)
        return st;
    const int r = pdnn_tensor_desc_rank(&nd.out);
    if (axis < -r || axis >= r || !indices || n < 1 || n > PDNN__MOVE_ARGS)
        return bad(fn, "axis out of range, or not 1 to 64 indices");
    axis += axis < 0 ? r : 0;
    for (int i = 0; i < n; i++)
        if (indices[i] < -nd.out.dims[axis] || indices[i] >= nd.out.dims[axis])
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: indices[%d] = %lld is out of range for axis %d of %lld",
                               fn, i, (long long)indices[i], axis, (long long)nd.out.dims[axis]);
    int64_t d[R];
    memcpy(d, nd.out.dims, sizeof d);
    d[axis] = n;
    memcpy(nd.move, indices, (size_t)n * sizeof *indices);
    nd.move_n = n;
    nd.axis = axis;
    out_desc(&nd.out, r, d);
    return move_finish(g, name, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_expand(pdnn_graph *g, const char *name, const char *device, pdnn_node x, int rank,
                              const int64_t *dims, pdnn_node *out)
{
    static const char fn[] = "pdnn_graph_expand";
    pdnn__node nd;
    pdnn_status st = move_begin(g, fn, name, device, &x, 1, out, &nd, PDNN__MOVE_EXPAND);
    if (st != PDNN_SUCCESS)
        return st;
    const int r = pdnn_tensor_desc_rank(&nd.out);
    if (rank < r || rank > R || !dims)
        return bad(fn, "the shape's rank must be x's to 8");
    for (int k = 0; k < rank; k++) {
        const int xk = k - (rank - r);
        if (dims[k] < 1 || (xk >= 0 && nd.out.dims[xk] != 1 && nd.out.dims[xk] != dims[k]))
            return bad(fn, "each of x's dims (aligned at the end) must be 1 or the shape's");
    }
    out_desc(&nd.out, rank, dims);
    return move_finish(g, name, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_where(pdnn_graph *g, const char *name, const char *device, pdnn_node mask, pdnn_node a,
                             pdnn_node b, pdnn_node *out)
{
    static const char fn[] = "pdnn_graph_where";
    const pdnn_node in[3] = {mask, a, b};
    pdnn__node nd;
    pdnn_status st = move_begin(g, fn, name, device, in, 3, out, &nd, PDNN__MOVE_WHERE);
    if (st != PDNN_SUCCESS)
        return st;
    int64_t d[R];
    int yr = 0;
    pdnn_tensor_desc ds[3];
    for (int i = 0; i < 3; i++) {
        pdnn_graph_node_desc(g, in[i], &ds[i]);
        const int r = pdnn_tensor_desc_rank(&ds[i]);
        yr = r > yr ? r : yr;
    }
    for (int k = 0; k < yr; k++) {
        d[k] = 1;
        for (int i = 0; i < 3; i++) {
            const int r = pdnn_tensor_desc_rank(&ds[i]), j = k - (yr - r);
            const int64_t v = j >= 0 ? ds[i].dims[j] : 1;
            if (v != 1 && d[k] != 1 && v != d[k])
                return bad(fn, "mask, a and b do not broadcast to one shape");
            d[k] = v != 1 ? v : d[k];
        }
    }
    /* An image layout where a or b has the result's shape in one. */
    nd.out = pdnn_tensor_desc_rank(&ds[1]) == yr ? ds[1] : ds[2];
    out_desc(&nd.out, yr, d);
    return move_finish(g, name, &nd, in, 3, out);
}

pdnn_status pdnn_graph_pad_nd(pdnn_graph *g, const char *name, const char *device, pdnn_node x, const int64_t *pads,
                              pdnn_pad_mode mode, float value, pdnn_node *out)
{
    static const char fn[] = "pdnn_graph_pad_nd";
    pdnn__node nd;
    pdnn_status st = move_begin(g, fn, name, device, &x, 1, out, &nd, PDNN__MOVE_PAD);
    if (st != PDNN_SUCCESS)
        return st;
    const int r = pdnn_tensor_desc_rank(&nd.out);
    if ((!pads && r) || (unsigned)mode > PDNN_PAD_EDGE)
        return bad(fn, "pads is NULL or the mode unknown");
    int64_t d[R];
    for (int k = 0; k < r; k++) {
        if (pads[k] < 0 || pads[r + k] < 0 || pads[k] > 1 << 30 || pads[r + k] > 1 << 30 ||
            (mode == PDNN_PAD_REFLECT && (pads[k] >= nd.out.dims[k] || pads[r + k] >= nd.out.dims[k])))
            return bad(fn, "pads must be >= 0 (below the dim for REFLECT)");
        d[k] = nd.out.dims[k] + pads[k] + pads[r + k];
    }
    if (r)
        memcpy(nd.move, pads, 2 * (size_t)r * sizeof *pads);
    nd.move_n = 2 * r;
    nd.pad_mode = mode;
    nd.alpha = value;
    out_desc(&nd.out, r, d);
    return move_finish(g, name, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_resize(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                              pdnn_resize_mode mode, pdnn_resize_coord coord, pdnn_resize_nearest nearest,
                              const float *scales, const int64_t *dims, pdnn_node *out)
{
    static const char fn[] = "pdnn_graph_resize";
    pdnn__node nd;
    pdnn_status st = move_begin(g, fn, name, device, &x, 1, out, &nd, PDNN__MOVE_RESIZE);
    if (st != PDNN_SUCCESS)
        return st;
    const int r = pdnn_tensor_desc_rank(&nd.out);
    if (!dims || (unsigned)mode > PDNN_RESIZE_LINEAR || (unsigned)coord > PDNN_RESIZE_PYTORCH_HALF_PIXEL ||
        (unsigned)nearest > PDNN_RESIZE_CEIL)
        return bad(fn, "dims is NULL, or the mode, coordinates or rounding unknown");
    for (int k = 0; k < r; k++)
        if (dims[k] < 1 || (scales && !(scales[k] > 0.0f)))
            return bad(fn, "dims must be >= 1 and scales positive");
    nd.move[0] = mode, nd.move[1] = coord, nd.move[2] = nearest, nd.move[3] = scales != NULL;
    for (int k = 0; k < r && scales; k++) {
        uint32_t bits;
        memcpy(&bits, &scales[k], sizeof bits);
        nd.move[4 + k] = bits;
    }
    nd.move_n = 4 + r;
    out_desc(&nd.out, r, dims);
    return move_finish(g, name, &nd, &x, 1, out);
}

pdnn_status pdnn__move_run(const pdnn__node *n, const pdnn_tensor *const *in, pdnn_tensor *y)
{
    const int64_t *m = n->move;
    const int k = n->move_n;
    switch (n->move_kind) {
    case PDNN__MOVE_SLICE: return pdnn_slice(in[0], k, m, m + k, m + 2 * k, m + 3 * k, y);
    case PDNN__MOVE_GATHER: return pdnn_gather(in[0], n->axis, m, k, y);
    case PDNN__MOVE_EXPAND: return pdnn_expand(in[0], y);
    case PDNN__MOVE_WHERE: return pdnn_where(in[0], in[1], in[2], y);
    case PDNN__MOVE_PAD: return pdnn_pad_nd(in[0], m, n->pad_mode, n->alpha, y);
    case PDNN__MOVE_RESIZE: {
        float s[R];
        for (int i = 0; i < k - 4; i++) {
            const uint32_t bits = (uint32_t)m[4 + i];
            memcpy(&s[i], &bits, sizeof bits);
        }
        return pdnn_resize(in[0], (pdnn_resize_mode)m[0], (pdnn_resize_coord)m[1], (pdnn_resize_nearest)m[2],
                           m[3] ? s : NULL, y);
    }
    }
    return pdnn__error(PDNN_ERR_INTERNAL, "a Move node of kind %d", (int)n->move_kind);
}

void pdnn__move_probe(const pdnn__node *n, pdnn__op_call *call, int64_t tbl[2])
{
    memset(call, 0, sizeof *call);
    call->op = n->move_kind == PDNN__MOVE_WHERE ? PDNN__OP_WHERE : PDNN__OP_INDEX;
    pdnn__index_call *c = &call->u.index;
    c->rank = 1, c->dims[0] = 2, c->xs[0] = c->ys[0] = 1, c->n_idx = 2, c->lerp = -1;
    /* A forward slice is a strided copy; a backward one, a gather, a
     * broadcast, a pad, a resize are not (the linear one interpolates). */
    int forward = n->move_kind == PDNN__MOVE_SLICE;
    for (int i = 0; forward && i < n->move_n; i++)
        forward = n->move[3 * n->move_n + i] > 0;
    tbl[0] = n->move_kind == PDNN__MOVE_PAD ? -1 : 0;
    tbl[1] = forward ? 1 : 0;
    c->idx = tbl;
    if (n->move_kind == PDNN__MOVE_RESIZE && n->move[0] == PDNN_RESIZE_LINEAR)
        c->lerp = 0, c->idx1 = tbl, c->wt = NULL;
}
