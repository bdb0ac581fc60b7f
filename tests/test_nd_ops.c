/* The ops that are not image ops on PDNN_ND tensors of any rank, on every
 * device: concat along every axis of ranks 1 to 6 against loops, reshape
 * between ND and image descriptors, and the refusals (broadcast, matmul
 * and transform shapes that do not fit, named in the message). Their
 * arithmetic is the parity harness's (tests/parity_nd.c). */
#include "helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static pdnn_tensor_desc nd(int rank, const int64_t *d)
{
    pdnn_tensor_desc t;
    memset(&t, 0, sizeof t);
    t.dtype = PDNN_FLOAT32;
    t.layout = PDNN_ND;
    t.rank = rank;
    for (int i = 0; i < PDNN_MAX_RANK; i++)
        t.dims[i] = i < rank ? d[i] : 1;
    return t;
}

Test(nd_ops, concat_every_axis_of_ranks_1_to_6)
{
    pdnn_context *ctx = th_context();
    const int ndev = pdnn_device_count(ctx);
    const int64_t base[6] = {2, 3, 1, 5, 4, 3};
    const int64_t parts[2] = {2, 3};
    for (int di = 0; di < ndev; di++) {
        pdnn_device *dev = NULL;
        cr_assert_eq(pdnn_device_get(ctx, di, &dev), PDNN_SUCCESS);
        for (int rank = 1; rank <= 6; rank++)
            for (int axis = 0; axis < rank; axis++) {
                int64_t xd[2][6], yd[6];
                pdnn_tensor *xs[2];
                float *xv[2];
                memcpy(yd, base, sizeof yd);
                yd[axis] = parts[0] + parts[1];
                for (int i = 0; i < 2; i++) {
                    memcpy(xd[i], base, sizeof xd[i]);
                    xd[i][axis] = parts[i];
                    const pdnn_tensor_desc d = nd(rank, xd[i]);
                    const int64_t n = pdnn_tensor_desc_elements(&d);
                    xv[i] = malloc(sizeof(float) * (size_t)n);
                    th_fill(xv[i], n, (uint32_t)(rank * 10 + axis + i * 100));
                    xs[i] = th_upload(dev, &d, xv[i]);
                }
                const pdnn_tensor_desc ydesc = nd(rank, yd);
                pdnn_tensor *y = th_upload(dev, &ydesc, NULL);
                cr_assert_eq(pdnn_concat((const pdnn_tensor *const *)xs, 2, axis, y), PDNN_SUCCESS, "%s",
                             pdnn_last_error());
                float *got = th_download(y);
                /* Row-major: inner = product of dims after the axis. */
                int64_t inner = 1, outer = 1;
                for (int k = axis + 1; k < rank; k++)
                    inner *= base[k];
                for (int k = 0; k < axis; k++)
                    outer *= base[k];
                for (int64_t o = 0; o < outer; o++)
                    for (int i = 0, off = 0; i < 2; off += (int)parts[i], i++)
                        for (int64_t e = 0; e < parts[i] * inner; e++)
                            cr_assert_eq(got[(o * yd[axis] + off) * inner + e], xv[i][o * parts[i] * inner + e],
                                         "rank %d axis %d input %d", rank, axis, i);
                free(got);
                for (int i = 0; i < 2; i++) {
                    free(xv[i]);
                    pdnn_tensor_release(xs[i]);
                }
                /* An axis past the rank is refused, naming it. */
                cr_assert_eq(pdnn_concat((const pdnn_tensor *const *)xs, 0, rank, y), PDNN_ERR_INVALID_ARGUMENT);
                pdnn_tensor_release(y);
            }
    }
    pdnn_context_destroy(ctx);
}

Test(nd_ops, reshape_and_transform_between_nd_and_images)
{
    pdnn_context *ctx = th_context();
    pdnn_device *dev = NULL;
    cr_assert_eq(pdnn_device_get(ctx, pdnn_device_count(ctx) - 1, &dev), PDNN_SUCCESS);
    float v[120];
    th_fill(v, 120, 7);
    const int64_t d5[] = {2, 3, 1, 4, 5}, d0[] = {0};
    const pdnn_tensor_desc x5 = nd(5, d5), s = nd(0, d0), img = th_desc(PDNN_NHWC, 2, 5, 3, 4);
    pdnn_tensor *x = th_upload(dev, &x5, v), *y = th_upload(dev, &img, NULL);
    cr_assert_eq(pdnn_reshape(x, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *got = th_download(y);
    cr_assert_eq(memcmp(got, v, sizeof v), 0);
    free(got);
    /* A transform with an ND side is a copy where the memory orders agree
     * (NHWC {2,5,3,4} is {2,3,4,5} in memory) and refused where not. */
    pdnn_tensor *z = th_upload(dev, &x5, NULL);
    cr_assert_eq(pdnn_transform(y, z), PDNN_SUCCESS, "%s", pdnn_last_error());
    got = th_download(z);
    cr_assert_eq(memcmp(got, v, sizeof v), 0);
    free(got);
    const pdnn_tensor_desc nchw = th_desc(PDNN_NCHW, 2, 5, 3, 4);
    pdnn_tensor *w = th_upload(dev, &nchw, NULL);
    cr_assert_eq(pdnn_transform(z, w), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "in memory order must match"), "%s", pdnn_last_error());
    /* A scalar reshapes to any one-element tensor and back. */
    const float one = 2.5f;
    const int64_t d3[] = {1, 1, 1};
    const pdnn_tensor_desc t3 = nd(3, d3);
    pdnn_tensor *a = th_upload(dev, &s, &one), *b = th_upload(dev, &t3, NULL);
    cr_assert_eq(pdnn_reshape(a, b), PDNN_SUCCESS, "%s", pdnn_last_error());
    got = th_download(b);
    cr_assert_eq(got[0], one);
    free(got);
    pdnn_tensor *ts[] = {x, y, z, w, a, b};
    for (int i = 0; i < 6; i++)
        pdnn_tensor_release(ts[i]);
    pdnn_context_destroy(ctx);
}

Test(nd_ops, shapes_that_do_not_fit_are_refused_by_name)
{
    pdnn_context *ctx = th_context();
    pdnn_device *dev = NULL;
    cr_assert_eq(pdnn_device_get(ctx, 0, &dev), PDNN_SUCCESS);
    const int64_t a[] = {2, 3, 4}, b[] = {3, 5}, y[] = {2, 3, 4}, m[] = {4, 6}, c[] = {2, 3, 6}, d0[] = {0};
    const pdnn_tensor_desc da = nd(3, a), db = nd(2, b), dy = nd(3, y), dm = nd(2, m), dc = nd(3, c), ds = nd(0, d0);
    pdnn_tensor *ta = th_upload(dev, &da, NULL), *tb = th_upload(dev, &db, NULL), *ty = th_upload(dev, &dy, NULL);
    pdnn_tensor *tm = th_upload(dev, &dm, NULL), *tc = th_upload(dev, &dc, NULL), *ts = th_upload(dev, &ds, NULL);
    /* {2,3,4} + {3,5}: 4 against 5 from the right. */
    cr_assert_eq(pdnn_binary(ta, tb, PDNN_BINARY_ADD, ty), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "[3,5] ND"), "%s", pdnn_last_error());
    /* y of the wrong rank. */
    cr_assert_eq(pdnn_binary(ta, ts, PDNN_BINARY_ADD, tm), PDNN_ERR_INVALID_ARGUMENT);
    /* {2,3,4} @ {4,6} = {2,3,6}; @ {3,5} does not fit; a scalar is no operand. */
    cr_assert_eq(pdnn_matmul(ta, tm, 0, 0, tc), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_matmul(ta, tb, 0, 0, tc), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "numpy's matmul"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_matmul(ts, tm, 0, 0, tc), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_tensor *all[] = {ta, tb, ty, tm, tc, ts};
    for (int i = 0; i < 6; i++)
        pdnn_tensor_release(all[i]);
    pdnn_context_destroy(ctx);
}

static pdnn_node nd_node(pdnn_graph *g, const char *name, int rank, const int64_t *d, const float *v)
{
    const pdnn_tensor_desc t = nd(rank, d);
    pdnn_node n;
    cr_assert_eq(v ? pdnn_graph_constant(g, name, NULL, &t, v, &n) : pdnn_graph_placeholder(g, name, NULL, &t, &n),
                 PDNN_SUCCESS, "%s", pdnn_last_error());
    return n;
}

static pdnn_session *new_session(const pdnn_graph *g)
{
    pdnn_session_config c;
    pdnn_session_config_init(&c);
    c.options.allow_growth = 1;
    c.allow_soft_placement = 1;
    pdnn_session *sess = NULL;
    cr_assert_eq(pdnn_session_create(g, &c, &sess), PDNN_SUCCESS, "%s", pdnn_last_error());
    return sess;
}

/* A graph whose middle is N-d: a rank-0 placeholder, a rank-3 one, a
 * broadcasting Mul, a batched MatMul, a Reshape to rank 5 and back, a
 * Concat along an inner axis, a sigmoid; the fetched values have the
 * nodes' ranks and match loops written here. */
Test(nd_ops, graph_and_session_carry_every_rank)
{
    pdnn_graph *g = NULL;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    const int64_t d0[] = {0}, dx[] = {2, 3, 4}, dw[] = {4, 5}, d5[] = {2, 3, 1, 5, 1}, dc[] = {2, 6, 5};
    float wv[20];
    th_fill(wv, 20, 3);
    pdnn_node s = nd_node(g, "s", 0, d0, NULL), x = nd_node(g, "x", 3, dx, NULL), w = nd_node(g, "w", 2, dw, wv);
    pdnn_node xs, xw, r5, r3, cat, sig;
    cr_assert_eq(pdnn_graph_binary(g, "xs", NULL, x, s, PDNN_BINARY_MUL, &xs), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_matmul(g, "xw", NULL, xs, w, 0, 0, &xw), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_reshape_nd(g, "r5", NULL, xw, 5, d5, &r5), PDNN_SUCCESS, "%s", pdnn_last_error());
    const int64_t d3[] = {2, 3, 5};
    cr_assert_eq(pdnn_graph_reshape_nd(g, "r3", NULL, r5, 3, d3, &r3), PDNN_SUCCESS, "%s", pdnn_last_error());
    const pdnn_node two[] = {r3, xw};
    cr_assert_eq(pdnn_graph_concat(g, "cat", NULL, two, 2, 1, &cat), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_activation(g, "sig", NULL, cat, PDNN_ACTIVATION_SIGMOID, 0, 0, &sig), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    pdnn_tensor_desc got_d;
    cr_assert_eq(pdnn_graph_node_desc(g, sig, &got_d), PDNN_SUCCESS);
    const pdnn_tensor_desc want_d = nd(3, dc);
    cr_assert_eq(memcmp(&got_d, &want_d, sizeof got_d), 0, "the node's desc is ND [2,6,5]");
    /* A matmul whose inner dims differ, a reshape to another count. */
    pdnn_node bad;
    cr_assert_eq(pdnn_graph_matmul(g, NULL, NULL, x, x, 0, 0, &bad), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_graph_reshape_nd(g, NULL, NULL, x, 2, dw, &bad), PDNN_ERR_INVALID_ARGUMENT);

    pdnn_session *sess = new_session(g);
    pdnn_device *host = NULL;
    cr_assert_eq(pdnn_device_find(pdnn_session_context(sess), "/cpu:0", &host), PDNN_SUCCESS);
    const float sv = 0.5f;
    float xv[24];
    th_fill(xv, 24, 4);
    const pdnn_tensor_desc ds = nd(0, d0), dxd = nd(3, dx);
    pdnn_tensor *ts = th_upload(host, &ds, &sv), *tx = th_upload(host, &dxd, xv);
    const pdnn_node feeds[] = {s, x}, fetch[] = {sig, xw};
    pdnn_tensor *const vals[] = {ts, tx};
    pdnn_tensor *out[2] = {NULL, NULL};
    cr_assert_eq(pdnn_session_run(sess, feeds, vals, 2, fetch, 2, out), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_desc od;
    cr_assert_eq(pdnn_tensor_get_desc(out[0], &od), PDNN_SUCCESS);
    cr_assert_eq(memcmp(&od, &want_d, sizeof od), 0, "the fetched value is ND [2,6,5]");
    float *y = th_download(out[0]), *m = th_download(out[1]);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 5; j++) {
                double acc = 0;
                for (int p = 0; p < 4; p++)
                    acc += (double)xv[(b * 3 + i) * 4 + p] * 0.5 * (double)wv[p * 5 + j];
                cr_assert_float_eq(m[(b * 3 + i) * 5 + j], acc, 1e-5 * (1 + fabs(acc)));
                const double sgm = 1.0 / (1.0 + exp(-acc));
                /* cat along axis 1: rows 0..2 from r3, 3..5 from xw; both acc */
                cr_assert_float_eq(y[(b * 6 + i) * 5 + j], sgm, 1e-5);
                cr_assert_float_eq(y[(b * 6 + 3 + i) * 5 + j], sgm, 1e-5);
            }
    free(y);
    free(m);
    /* A feed of the wrong rank (the same dims, rank 4) is refused. */
    const int64_t dx4[] = {2, 3, 4, 1};
    const pdnn_tensor_desc d4 = nd(4, dx4);
    pdnn_tensor *t4 = th_upload(host, &d4, xv);
    pdnn_tensor *const vals4[] = {ts, t4};
    pdnn_tensor *o4 = NULL;
    cr_assert_eq(pdnn_session_run(sess, feeds, vals4, 2, fetch, 1, &o4), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "[2,3,4,1] ND"), "%s", pdnn_last_error());
    pdnn_tensor *rel[] = {ts, tx, t4, out[0], out[1]};
    for (int i = 0; i < 5; i++)
        pdnn_tensor_release(rel[i]);
    pdnn_session_destroy(sess);
    pdnn_graph_destroy(g);
}

/* Gradients through N-d nodes: a batched MatMul of equal batches and an
 * elementwise Mul, then a broadcasting MatMul and a broadcasting Mul
 * (their gradients summed back over the repeated axes). */
Test(nd_ops, gradients_of_nd_nodes)
{
    pdnn_graph *g = NULL;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    const int64_t da[] = {2, 3, 4}, db[] = {2, 4, 5}, dw[] = {4, 5}, d0[] = {0};
    float av[24], bv[40];
    th_fill(av, 24, 5);
    th_fill(bv, 40, 6);
    pdnn_node a = nd_node(g, "a", 3, da, av), b = nd_node(g, "b", 3, db, bv), w = nd_node(g, "w", 2, dw, bv);
    pdnn_node ab, sq, grads[2];
    cr_assert_eq(pdnn_graph_matmul(g, "ab", NULL, a, b, 0, 0, &ab), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_binary(g, "sq", NULL, ab, ab, PDNN_BINARY_MUL, &sq), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    const pdnn_node wrt[] = {a, b};
    cr_assert_eq(pdnn_graph_gradients(g, sq, wrt, 2, grads), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_desc gd;
    cr_assert_eq(pdnn_graph_node_desc(g, grads[1], &gd), PDNN_SUCCESS);
    const pdnn_tensor_desc want = nd(3, db);
    cr_assert_eq(memcmp(&gd, &want, sizeof gd), 0, "d(sq)/db is ND [2,4,5]");
    pdnn_session *sess = new_session(g);
    pdnn_tensor *out = NULL;
    cr_assert_eq(pdnn_session_run(sess, NULL, NULL, 0, &grads[0], 1, &out), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *ga = th_download(out);
    /* d(sum of (AB)^2 weighted by dy = 1)/dA = 2 (AB) B^T, per batch. */
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 3; i++)
            for (int p = 0; p < 4; p++) {
                double want_g = 0;
                for (int j = 0; j < 5; j++) {
                    double abij = 0;
                    for (int q = 0; q < 4; q++)
                        abij += (double)av[(t * 3 + i) * 4 + q] * bv[(t * 4 + q) * 5 + j];
                    want_g += 2 * abij * bv[(t * 4 + p) * 5 + j];
                }
                cr_assert_float_eq(ga[(t * 3 + i) * 4 + p], want_g, 1e-4 * (1 + fabs(want_g)), "dA[%d,%d,%d]", t, i,
                                   p);
            }
    free(ga);
    pdnn_tensor_release(out);
    pdnn_session_destroy(sess);
    /* A broadcast batch (a {2,3,4} @ w {4,5}) and a broadcast Mul: the
     * gradients are summed over the axes the operand was repeated on. */
    pdnn_node aw, as, s = nd_node(g, "s", 0, d0, av), gr[2];
    cr_assert_eq(pdnn_graph_matmul(g, "aw", NULL, a, w, 0, 0, &aw), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_gradients(g, aw, &w, 1, &gr[0]), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_binary(g, "as", NULL, a, s, PDNN_BINARY_MUL, &as), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_gradients(g, as, &s, 1, &gr[1]), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_session *sess2 = new_session(g);
    pdnn_tensor *o2[2] = {NULL, NULL};
    cr_assert_eq(pdnn_session_run(sess2, NULL, NULL, 0, gr, 2, o2), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *gw = th_download(o2[0]), *gs = th_download(o2[1]);
    double sum_a = 0;
    for (int k = 0; k < 24; k++)
        sum_a += av[k];
    /* d(sum of a @ w)/dw[p][j] = sum over the batch and rows of a[t,i,p]. */
    for (int p = 0; p < 4; p++)
        for (int j = 0; j < 5; j++) {
            double want_w = 0;
            for (int t = 0; t < 2; t++)
                for (int i = 0; i < 3; i++)
                    want_w += av[(t * 3 + i) * 4 + p];
            cr_assert_float_eq(gw[p * 5 + j], want_w, 1e-4 * (1 + fabs(want_w)), "dW[%d,%d]", p, j);
        }
    cr_assert_float_eq(gs[0], sum_a, 1e-4 * (1 + fabs(sum_a)), "d(sum a*s)/ds");
    free(gw);
    free(gs);
    pdnn_tensor_release(o2[0]);
    pdnn_tensor_release(o2[1]);
    pdnn_session_destroy(sess2);
    pdnn_graph_destroy(g);
}
