/* The N-d math ops' public edges: bad input refused with a message naming
 * it, their graph nodes running what the eager ops compute (on every
 * device), and the transpose's gradient (the inverse permutation). The
 * values themselves are the parity harness's (tests/parity_nd_math.c). */
#include "helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static pdnn_tensor_desc nd(int rank, const int64_t *dims)
{
    pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_ND, {1, 1, 1, 1, 1, 1, 1, 1}, rank};
    for (int k = 0; k < rank; k++)
        d.dims[k] = dims[k];
    return d;
}

static pdnn_tensor *filled(pdnn_device *dev, const pdnn_tensor_desc *d, uint32_t seed)
{
    const int64_t n = pdnn_tensor_desc_elements(d);
    float *v = malloc((size_t)n * sizeof *v);
    cr_assert(v);
    th_fill(v, n, seed);
    pdnn_tensor *t = th_upload(dev, d, v);
    free(v);
    return t;
}

static pdnn_tensor *empty(pdnn_device *dev, const pdnn_tensor_desc *d)
{
    pdnn_tensor *t = NULL;
    cr_assert_eq(pdnn_tensor_create(dev, d, &t), PDNN_SUCCESS, "%s", pdnn_last_error());
    return t;
}

static void refused(pdnn_status st, const char *words)
{
    cr_assert_eq(st, PDNN_ERR_INVALID_ARGUMENT, "got %s: %s", pdnn_status_string(st), pdnn_last_error());
    cr_assert(strstr(pdnn_last_error(), words), "'%s' lacks '%s'", pdnn_last_error(), words);
}

Test(nd_math, bad_input_is_refused_by_name)
{
    pdnn_context *ctx = th_context();
    pdnn_device *dev;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &dev), PDNN_SUCCESS);
    const int64_t xd[3] = {3, 5, 7}, td[3] = {7, 3, 5}, rd[2] = {3, 7};
    pdnn_tensor_desc dx = nd(3, xd), dt = nd(3, td), dr = nd(2, rd);
    pdnn_tensor *x = filled(dev, &dx, 1), *t = empty(dev, &dt), *y = empty(dev, &dx), *r = empty(dev, &dr);
    const int twice[3] = {0, 0, 1}, good[3] = {2, 0, 1}, wrong[3] = {1, 2, 0};
    refused(pdnn_transpose(x, twice, t), "perm must hold each of 0..2 once");
    refused(pdnn_transpose(x, wrong, t), "x's dims in perm's order");
    cr_assert_eq(pdnn_transpose(x, good, t), PDNN_SUCCESS, "%s", pdnn_last_error());
    refused(pdnn_transpose(x, good, x), "x's dims in perm's order");
    refused(pdnn_softmax_axis(x, 3, 0, y), "axis 3 is outside [-3, 3)");
    refused(pdnn_softmax_axis(x, -1, 0, x), "same memory");
    const int dup[2] = {1, -2}, ax1[1] = {1};
    refused(pdnn_reduce(x, dup, 2, PDNN_REDUCTION_SUM, r), "axis -2 is named twice");
    refused(pdnn_reduce(x, ax1, 1, (pdnn_reduction)7, r), "op 7 is not SUM");
    refused(pdnn_reduce(x, ax1, 1, PDNN_REDUCTION_MAX, y), "the reduced dims 1");
    cr_assert_eq(pdnn_reduce(x, ax1, 1, PDNN_REDUCTION_MAX, r), PDNN_SUCCESS, "%s", pdnn_last_error());
    const int64_t sd[1] = {6};
    pdnn_tensor_desc ds = nd(1, sd);
    pdnn_tensor *s = filled(dev, &ds, 2);
    refused(pdnn_layer_norm(x, -1, 1e-5f, s, NULL, y), "one element per element of a normalized row (7");
    refused(pdnn_layer_norm(x, -1, -1.0f, s, NULL, y), "epsilon is -1");
    pdnn_tensor_desc nhwc = th_desc(PDNN_NHWC, 1, 3, 2, 2);
    pdnn_tensor *im = filled(dev, &nhwc, 3), *imy = empty(dev, &nhwc);
    refused(pdnn_layer_norm(im, 1, 1e-5f, s, NULL, imy), "store the dims in order");
    pdnn_tensor *ts[] = {x, t, y, r, s, im, imy};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
        pdnn_tensor_release(ts[i]);
    pdnn_context_destroy(ctx);
}

/* Each node type in a session against the eager op on the same device,
 * bit for bit (the same algorithm runs), on the host and the default
 * device. */
Test(nd_math, graph_nodes_run_the_ops)
{
    pdnn_context *ctx = th_context();
    const int64_t xd[3] = {3, 5, 7}, sd[1] = {7};
    const pdnn_tensor_desc dx = nd(3, xd), ds = nd(1, sd);
    const int perm[3] = {2, 0, 1}, axes[2] = {0, 2};
    float sv[7], bv[7];
    for (int j = 0; j < 7; j++)
        sv[j] = 0.5f + 0.1f * (float)j, bv[j] = 0.25f - 0.05f * (float)j;
    const char *devices[] = {"/cpu:0", NULL};
    for (int di = 0; di < 2; di++) {
        pdnn_device *dev = NULL;
        if (devices[di] && pdnn_device_find(ctx, devices[di], &dev) != PDNN_SUCCESS)
            continue;
        if (!devices[di] && pdnn_device_find(ctx, "/gpu:0", &dev) != PDNN_SUCCESS)
            continue;
        pdnn_device_info info;
        pdnn_device_get_info(dev, &info);
        pdnn_graph *g = NULL;
        cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
        pdnn_node x, sc, bi, n[4];
        cr_assert_eq(pdnn_graph_placeholder(g, "x", info.name, &dx, &x), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_graph_constant(g, "scale", info.name, &ds, sv, &sc), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_constant(g, "bias", info.name, &ds, bv, &bi), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_transpose(g, NULL, info.name, x, perm, &n[0]), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_graph_softmax_axis(g, NULL, info.name, x, 1, 1, &n[1]), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        cr_assert_eq(pdnn_graph_layer_norm(g, NULL, info.name, x, -1, 1e-5f, sc, bi, &n[2]), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        cr_assert_eq(pdnn_graph_reduce(g, NULL, info.name, x, axes, 2, PDNN_REDUCTION_MEAN, 0, &n[3]), PDNN_SUCCESS,
                     "%s", pdnn_last_error());
        pdnn_tensor_desc od;
        cr_assert_eq(pdnn_graph_node_desc(g, n[3], &od), PDNN_SUCCESS);
        cr_assert(od.layout == PDNN_ND && od.rank == 1 && od.dims[0] == 5, "ReduceMean's output: rank %d", od.rank);
        pdnn_session_config c;
        pdnn_session_config_init(&c);
        pdnn_session *s = NULL;
        cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_tensor *xt = filled(dev, &dx, 11), *out[4] = {NULL};
        cr_assert_eq(pdnn_session_run(s, &x, &xt, 1, n, 4, out), PDNN_SUCCESS, "%s", pdnn_last_error());
        /* the eager ops */
        pdnn_tensor *st = th_upload(dev, &ds, sv), *bt = th_upload(dev, &ds, bv), *want[4];
        for (int k = 0; k < 4; k++) {
            pdnn_tensor_desc d;
            pdnn_tensor_get_desc(out[k], &d);
            want[k] = empty(dev, &d);
        }
        cr_assert_eq(pdnn_transpose(xt, perm, want[0]), PDNN_SUCCESS);
        cr_assert_eq(pdnn_softmax_axis(xt, 1, 1, want[1]), PDNN_SUCCESS);
        cr_assert_eq(pdnn_layer_norm(xt, -1, 1e-5f, st, bt, want[2]), PDNN_SUCCESS);
        cr_assert_eq(pdnn_reduce(xt, axes, 2, PDNN_REDUCTION_MEAN, want[3]), PDNN_SUCCESS);
        for (int k = 0; k < 4; k++) {
            float *a = th_download(out[k]), *b = th_download(want[k]);
            pdnn_tensor_desc d;
            pdnn_tensor_get_desc(out[k], &d);
            cr_assert(memcmp(a, b, (size_t)pdnn_tensor_desc_bytes(&d)) == 0, "node %d on %s differs from its op", k,
                      info.name);
            free(a);
            free(b);
            pdnn_tensor_release(out[k]);
            pdnn_tensor_release(want[k]);
        }
        pdnn_tensor_release(xt);
        pdnn_tensor_release(st);
        pdnn_tensor_release(bt);
        pdnn_session_destroy(s);
        pdnn_graph_destroy(g);
    }
    pdnn_context_destroy(ctx);
}

/* Runs g on /cpu:0 feeding x (desc d, values xv), fetching grad: its
 * values (the caller frees); destroys g. */
static float *run_gradient(pdnn_graph *g, pdnn_node x, const pdnn_tensor_desc *d, const float *xv, pdnn_node grad)
{
    pdnn_session_config c;
    pdnn_session_config_init(&c);
    pdnn_session *s = NULL;
    cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_device *host;
    cr_assert_eq(pdnn_device_find(pdnn_session_context(s), "/cpu:0", &host), PDNN_SUCCESS);
    pdnn_tensor *xt = th_upload(host, d, xv), *gt = NULL;
    cr_assert_eq(pdnn_session_run(s, &x, &xt, 1, &grad, 1, &gt), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *gv = th_download(gt);
    pdnn_tensor_release(xt);
    pdnn_tensor_release(gt);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
    return gv;
}

/* loss = transpose(x) * w elementwise (summed by the seed of ones), so
 * dL/dx = w transposed back: perm {0, 2, 3, 1} is not its own inverse. */
Test(nd_math, transpose_gradient_is_the_inverse_permutation)
{
    pdnn_context *ctx = th_context();
    pdnn_graph *g = NULL;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    const pdnn_tensor_desc dx = th_desc(PDNN_NCHW, 2, 3, 4, 5), dw = th_desc(PDNN_NCHW, 2, 4, 5, 3);
    float w[120], xv[120];
    th_fill(w, 120, 5);
    th_fill(xv, 120, 6);
    const int perm[4] = {0, 2, 3, 1};
    pdnn_node x, wn, t, loss, grad = -1;
    cr_assert_eq(pdnn_graph_placeholder(g, "x", "/cpu:0", &dx, &x), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_constant(g, "w", "/cpu:0", &dw, w, &wn), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_transpose(g, "t", "/cpu:0", x, perm, &t), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_desc td;
    pdnn_graph_node_desc(g, t, &td);
    cr_assert(memcmp(td.dims, dw.dims, 4 * sizeof td.dims[0]) == 0 && td.layout == PDNN_NCHW);
    cr_assert_eq(pdnn_graph_binary(g, "loss", "/cpu:0", t, wn, PDNN_BINARY_MUL, &loss), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    cr_assert_eq(pdnn_graph_gradients(g, loss, &x, 1, &grad), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *gv = run_gradient(g, x, &dx, xv, grad);
    for (int n = 0; n < 2; n++)
        for (int ch = 0; ch < 3; ch++)
            for (int h = 0; h < 4; h++)
                for (int wi = 0; wi < 5; wi++)
                    cr_assert_eq(gv[((n * 3 + ch) * 4 + h) * 5 + wi], w[((n * 4 + h) * 5 + wi) * 3 + ch],
                                 "dx[%d,%d,%d,%d]", n, ch, h, wi);
    free(gv);
    pdnn_context_destroy(ctx);
}

/* loss = softmax_axis(x) * w (the seed of ones sums it): dx = y (w -
 * sum_a(w y)); for log-softmax dx = w - softmax(x) sum_a(w); against those
 * formulas in double, along C and along W, NCHW and NHWC. */
Test(nd_math, softmax_gradients_match_their_formulas)
{
    pdnn_context *ctx = th_context();
    float xv[120], w[120];
    th_fill(xv, 120, 7);
    th_fill(w, 120, 8);
    const int64_t D[4] = {2, 3, 4, 5};
    for (int c = 0; c < 8; c++) {
        const int axis = c & 1 ? 3 : 1, log = c >> 1 & 1;
        const pdnn_layout lay = c >> 2 ? PDNN_NHWC : PDNN_NCHW;
        pdnn_graph *g = NULL;
        cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
        const pdnn_tensor_desc dx = th_desc(lay, 2, 3, 4, 5);
        pdnn_node x, wn, sm, loss, grad = -1;
        cr_assert_eq(pdnn_graph_placeholder(g, "x", "/cpu:0", &dx, &x), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_constant(g, "w", "/cpu:0", &dx, w, &wn), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_softmax_axis(g, "s", "/cpu:0", x, axis, log, &sm), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        cr_assert_eq(pdnn_graph_binary(g, "loss", "/cpu:0", sm, wn, PDNN_BINARY_MUL, &loss), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_gradients(g, loss, &x, 1, &grad), PDNN_SUCCESS, "%s", pdnn_last_error());
        float *gv = run_gradient(g, x, &dx, xv, grad);
        int64_t st[4];
        const int64_t nchw[4] = {60, 20, 5, 1}, nhwc[4] = {60, 1, 15, 3};
        memcpy(st, lay == PDNN_NHWC ? nhwc : nchw, sizeof st);
        for (int64_t i = 0; i < 120; i++) {
            int64_t idx[4], r = i;
            for (int k = 3; k >= 0; k--)
                idx[k] = r % D[k], r /= D[k];
            double m = -INFINITY, z = 0, sw = 0, swy = 0;
            int64_t j[4];
            memcpy(j, idx, sizeof j);
            for (j[axis] = 0; j[axis] < D[axis]; j[axis]++)
                m = fmax(m, xv[j[0] * st[0] + j[1] * st[1] + j[2] * st[2] + j[3] * st[3]]);
            for (j[axis] = 0; j[axis] < D[axis]; j[axis]++)
                z += exp(xv[j[0] * st[0] + j[1] * st[1] + j[2] * st[2] + j[3] * st[3]] - m);
            for (j[axis] = 0; j[axis] < D[axis]; j[axis]++) {
                const int64_t o = j[0] * st[0] + j[1] * st[1] + j[2] * st[2] + j[3] * st[3];
                sw += w[o];
                swy += w[o] * exp(xv[o] - m) / z;
            }
            const int64_t o = idx[0] * st[0] + idx[1] * st[1] + idx[2] * st[2] + idx[3] * st[3];
            const double y = exp(xv[o] - m) / z, want = log ? w[o] - y * sw : y * (w[o] - swy);
            cr_assert(fabs(gv[o] - want) < 1e-5, "case %d (axis %d, log %d, %s): dx at %lld is %g, expected %g", c,
                      axis, log, lay == PDNN_NHWC ? "NHWC" : "NCHW", (long long)i, gv[o], want);
        }
        free(gv);
    }
    pdnn_context_destroy(ctx);
}
