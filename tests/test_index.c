/* The data-movement ops' refusals (their values are the parity harness's
 * sets slice ... resize) and their graph nodes in a session: each bad
 * argument refused with a message naming it, a Slice -> Gather -> PadND
 * graph against the eager calls. */
#include "helpers.h"

#include <criterion/criterion.h>
#include <string.h>

static pdnn_tensor *nd(pdnn_device *dev, int r, const int64_t *d)
{
    pdnn_tensor_desc desc = {PDNN_FLOAT32, PDNN_ND, {1, 1, 1, 1, 1, 1, 1, 1}, r};
    memcpy(desc.dims, d, (size_t)r * sizeof *d);
    pdnn_tensor *t = NULL;
    cr_assert_eq(pdnn_tensor_create(dev, &desc, &t), PDNN_SUCCESS, "%s", pdnn_last_error());
    return t;
}

#define REFUSED(call, text)                                                                                    \
    do {                                                                                                       \
        cr_assert_eq((call), PDNN_ERR_INVALID_ARGUMENT, "%s", #call);                                          \
        cr_assert(strstr(pdnn_last_error(), (text)), "%s: %s", #call, pdnn_last_error());                      \
    } while (0)

Test(index, bad_arguments_are_refused_naming_them)
{
    pdnn_context *ctx = th_context();
    pdnn_device *dev = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &dev), PDNN_SUCCESS);
    const int64_t xd[3] = {2, 5, 3}, yd[3] = {2, 2, 3}, bad[3] = {2, 4, 3};
    pdnn_tensor *x = nd(dev, 3, xd), *y = nd(dev, 3, yd), *z = nd(dev, 3, bad);
    const int64_t idx[2] = {4, -6}, ok_idx[2] = {4, -5};
    REFUSED(pdnn_gather(x, 1, idx, 2, y), "indices[1] = -6 is out of range for axis 1 of 5");
    REFUSED(pdnn_gather(x, 3, ok_idx, 2, y), "axis 3 is out of range");
    cr_assert_eq(pdnn_gather(x, 1, ok_idx, 2, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    const int64_t s[1] = {0}, e[1] = {2}, a[1] = {1}, zero[1] = {0}, empty_e[1] = {0};
    REFUSED(pdnn_slice(x, 1, s, e, a, zero, y), "steps[0] is 0");
    REFUSED(pdnn_slice(x, 1, s, empty_e, a, NULL, y), "the slice is empty along axis 1");
    REFUSED(pdnn_slice(x, 1, s, e, a, NULL, z), "it must have dims [2, 2, 3]");
    const int64_t three[1] = {3};
    REFUSED(pdnn_slice(x, 1, s, e, three, NULL, y), "axes[0] = 3");
    REFUSED(pdnn_expand(z, x), "must be 1 or y's");
    const int64_t pads[6] = {0, 5, 0, 0, 0, 0};
    REFUSED(pdnn_pad_nd(x, pads, PDNN_PAD_REFLECT, 0.0f, z), "pads[1] = 5");
    const int64_t sizes[2] = {3, 3};
    pdnn_tensor *parts[2] = {y, z};
    REFUSED(pdnn_split(x, 1, 2, sizes, parts), "does not fit axis 1's 5");
    REFUSED(pdnn_slice(x, 1, s, e, a, NULL, x), "y");
    const float scales[3] = {1.0f, -1.0f, 1.0f};
    REFUSED(pdnn_resize(x, PDNN_RESIZE_NEAREST, PDNN_RESIZE_HALF_PIXEL, PDNN_RESIZE_FLOOR, scales, y),
            "scales[1] = -1");
    REFUSED(pdnn_where(x, y, x, z), "mask is [2,5,3] ND float32 and y [2,4,3]");
    pdnn_tensor_release(x);
    pdnn_tensor_release(y);
    pdnn_tensor_release(z);
    pdnn_context_destroy(ctx);
}

/* A graph of Slice (a reversed step), Gather and PadND nodes gives what
 * the eager calls give, and its nodes' op types and shapes are right. */
Test(index, graph_nodes_match_the_eager_ops)
{
    pdnn_context *ctx = th_context();
    pdnn_device *dev = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &dev), PDNN_SUCCESS);
    const int64_t xd[3] = {3, 4, 5};
    float xv[60];
    for (int i = 0; i < 60; i++)
        xv[i] = (float)i;
    pdnn_graph *g = NULL;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc xdesc = {PDNN_FLOAT32, PDNN_ND, {3, 4, 5}, 3};
    pdnn_node px = -1, sl = -1, ga = -1, pa = -1;
    const int64_t st[1] = {-1}, en[1] = {-100}, ax[1] = {2}, sp[1] = {-2}, ix[3] = {3, 0, -1}, pads[6] = {1, 0, 0,
                                                                                                        0, 2, 1};
    cr_assert_eq(pdnn_graph_placeholder(g, "x", "/cpu:0", &xdesc, &px), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_slice(g, "s", NULL, px, 1, st, en, ax, sp, &sl), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_gather(g, "g", NULL, sl, 1, ix, 3, &ga), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_pad_nd(g, "p", NULL, ga, pads, PDNN_PAD_EDGE, 0.0f, &pa), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    cr_assert_str_eq(pdnn_graph_node_op(g, sl), "Slice");
    cr_assert_str_eq(pdnn_graph_node_op(g, pa), "PadND");
    pdnn_tensor_desc pd;
    cr_assert_eq(pdnn_graph_node_desc(g, pa, &pd), PDNN_SUCCESS);
    cr_assert(pd.layout == PDNN_ND && pd.rank == 3 && pd.dims[0] == 4 && pd.dims[1] == 5 && pd.dims[2] == 4,
              "PadND is [%lld, %lld, %lld]", (long long)pd.dims[0], (long long)pd.dims[1], (long long)pd.dims[2]);
    REFUSED(pdnn_graph_gather(g, NULL, NULL, sl, 1, (const int64_t[]){4}, 1, &ga), "indices[0] = 4");
    /* eager */
    const int64_t sd[3] = {3, 4, 3}, gd[3] = {3, 3, 3}, od[3] = {4, 5, 4};
    pdnn_tensor *x = nd(dev, 3, xd), *ts = nd(dev, 3, sd), *tg = nd(dev, 3, gd), *tp = nd(dev, 3, od);
    cr_assert_eq(pdnn_tensor_write(x, xv, sizeof xv), PDNN_SUCCESS);
    cr_assert_eq(pdnn_slice(x, 1, st, en, ax, sp, ts), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_gather(ts, 1, ix, 3, tg), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_pad_nd(tg, pads, PDNN_PAD_EDGE, 0.0f, tp), PDNN_SUCCESS, "%s", pdnn_last_error());
    float want[80], got[80];
    cr_assert_eq(pdnn_tensor_read(tp, want, sizeof want), PDNN_SUCCESS);
    /* the slice reverses the last axis by 2 (4, 2, 0): element [0][0][0] of y is x[0][3][4] after the pad's
     * edge copy of row 0 */
    cr_assert_float_eq(want[0], xv[0 * 20 + 3 * 5 + 4], 0.0f);
    pdnn_session_config c;
    pdnn_session_config_init(&c);
    c.context = ctx;
    pdnn_session *sess = NULL;
    cr_assert_eq(pdnn_session_create(g, &c, &sess), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor *out = NULL;
    cr_assert_eq(pdnn_session_run(sess, &px, &x, 1, &pa, 1, &out), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_tensor_read(out, got, sizeof got), PDNN_SUCCESS);
    cr_assert_arr_eq(got, want, sizeof want);
    pdnn_tensor_release(out);
    pdnn_session_destroy(sess);
    pdnn_graph_destroy(g);
    pdnn_tensor_release(x);
    pdnn_tensor_release(ts);
    pdnn_tensor_release(tg);
    pdnn_tensor_release(tp);
    pdnn_context_destroy(ctx);
}
