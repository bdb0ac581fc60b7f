/* Training in the graph: variables (initialisers, persistence, read and
 * assign), pdnn_graph_gradients against finite differences of the loss,
 * the accelerator against the host, colocation of gradient nodes and
 * their placement log lines, memory during a training step, the
 * out-of-memory message, and bad input. */
#include "helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FULL(t, i) "/job:localhost/replica:0/task:0/device:" t ":" #i

typedef struct logbuf {
    char text[65536];
} logbuf;

static void capture(void *user, const char *line)
{
    logbuf *b = user;
    size_t used = strlen(b->text);
    snprintf(b->text + used, sizeof b->text - used, "%s\n", line);
}

static pdnn_session *session(const pdnn_graph *g, logbuf *log)
{
    pdnn_session_config c;
    pdnn_session_config_init(&c);
    c.options.allow_growth = 1;
    c.log_device_placement = log != NULL;
    c.log = log ? capture : NULL;
    c.log_user = log;
    pdnn_session *s = NULL;
    cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
    return s;
}

static int has_gpu(pdnn_session *s)
{
    pdnn_device *d;
    return pdnn_device_find(pdnn_session_context(s), "/gpu:0", &d) == PDNN_SUCCESS;
}

static const char *placed(pdnn_session *s, pdnn_node n)
{
    static _Thread_local pdnn_device_info info;
    pdnn_device *d;
    cr_assert_eq(pdnn_session_node_device(s, n, &d), PDNN_SUCCESS);
    cr_assert_eq(pdnn_device_get_info(d, &info), PDNN_SUCCESS);
    return info.name;
}

static pdnn_device *host_of(pdnn_session *s)
{
    pdnn_device *h;
    cr_assert_eq(pdnn_device_find(pdnn_session_context(s), "/cpu:0", &h), PDNN_SUCCESS);
    return h;
}

static pdnn_tensor *labels_on(pdnn_device *dev, const int32_t *v, int64_t n)
{
    pdnn_tensor_desc d = th_desc(PDNN_LAYOUT_X, n, 1, 1, 1);
    d.dtype = PDNN_INT32;
    pdnn_tensor *t = NULL;
    cr_assert_eq(pdnn_tensor_create(dev, &d, &t), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_tensor_write(t, v, (size_t)n * sizeof *v), PDNN_SUCCESS, "%s", pdnn_last_error());
    return t;
}

Test(train_graph, initialisers_are_seeded_scaled_and_the_same_everywhere)
{
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc wd = th_desc(PDNN_OIHW, 64, 32, 3, 3), md = th_desc(PDNN_NCHW, 200, 100, 1, 1);
    pdnn_node he, he2, he_other, gl, z, dat;
    cr_assert_eq(pdnn_graph_variable(g, "he", NULL, &wd, PDNN_INIT_HE_NORMAL, 42, NULL, &he), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    cr_assert_eq(pdnn_graph_variable(g, "he2", NULL, &wd, PDNN_INIT_HE_NORMAL, 42, NULL, &he2), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_variable(g, "he3", NULL, &wd, PDNN_INIT_HE_NORMAL, 43, NULL, &he_other), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_variable(g, "gl", NULL, &md, PDNN_INIT_GLOROT_UNIFORM, 7, NULL, &gl), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_variable(g, "z", NULL, &md, PDNN_INIT_ZEROS, 7, NULL, &z), PDNN_SUCCESS);
    const float v[3] = {1.5f, -2, 3};
    pdnn_tensor_desc vd = th_desc(PDNN_LAYOUT_X, 3, 1, 1, 1);
    cr_assert_eq(pdnn_graph_variable(g, "d", NULL, &vd, PDNN_INIT_DATA, 0, v, &dat), PDNN_SUCCESS);
    cr_assert_str_eq(pdnn_graph_node_op(g, he), "VariableV2");
    pdnn_node bad;
    cr_assert_eq(pdnn_graph_variable(g, "nodata", NULL, &vd, PDNN_INIT_DATA, 0, NULL, &bad),
                 PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "nodata"), "%s", pdnn_last_error());
    pdnn_session *s = session(g, NULL);
    size_t nw = 64 * 32 * 9, nm = 200 * 100;
    float *a = malloc(nw * 4), *b = malloc(nw * 4), *c = malloc(nw * 4), *m = malloc(nm * 4), *zz = malloc(nm * 4);
    cr_assert_eq(pdnn_session_variable_read(s, he, a, nw * 4), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_session_variable_read(s, he2, b, nw * 4), PDNN_SUCCESS);
    cr_assert_eq(pdnn_session_variable_read(s, he_other, c, nw * 4), PDNN_SUCCESS);
    cr_assert_eq(memcmp(a, b, nw * 4), 0, "the same seed gives the same values");
    cr_assert_neq(memcmp(a, c, nw * 4), 0, "another seed gives other values");
    double sum = 0, sq = 0;
    for (size_t i = 0; i < nw; i++) {
        sum += a[i];
        sq += (double)a[i] * a[i];
    }
    double mean = sum / (double)nw, sd = sqrt(sq / (double)nw - mean * mean), want = sqrt(2.0 / (32 * 9));
    cr_assert_lt(fabs(mean), 0.05 * want, "mean %g", mean);
    cr_assert_lt(fabs(sd - want) / want, 0.03, "stddev %g, want %g", sd, want);
    /* The generator is documented (splitmix64 + Box-Muller): these are
     * its first values for seed 42, so any platform must give them. */
    const double u0 = 0.6537157389870545, u1 = 0.7415648787718233;
    double first = want * sqrt(-2.0 * log(1.0 - u0)) * cos(6.283185307179586 * u1);
    cr_assert_float_eq(a[0], first, 1e-6, "%.9g vs %.9g", (double)a[0], first);
    cr_assert_eq(pdnn_session_variable_read(s, gl, m, nm * 4), PDNN_SUCCESS);
    double lim = sqrt(6.0 / 300.0), lo = 0, hi = 0;
    for (size_t i = 0; i < nm; i++) {
        cr_assert(m[i] >= -lim && m[i] <= lim, "%g outside +-%g", (double)m[i], lim);
        lo = fmin(lo, m[i]);
        hi = fmax(hi, m[i]);
    }
    cr_assert_gt(hi, 0.95 * lim);
    cr_assert_lt(lo, -0.95 * lim);
    cr_assert_eq(pdnn_session_variable_read(s, z, zz, nm * 4), PDNN_SUCCESS);
    for (size_t i = 0; i < nm; i++)
        cr_assert_eq(zz[i], 0.0f);
    float got[3];
    cr_assert_eq(pdnn_session_variable_read(s, dat, got, sizeof got), PDNN_SUCCESS);
    cr_assert_eq(memcmp(got, v, sizeof v), 0);
    free(a);
    free(b);
    free(c);
    free(m);
    free(zz);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

/* Assigned values persist across runs; read/assign check their node and size. */
Test(train_graph, variables_persist_across_runs_and_assign_checks_its_arguments)
{
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc d = th_desc(PDNN_NCHW, 1, 4, 1, 1);
    const float v0[4] = {1, -1, 2, -2};
    pdnn_node v, r, x;
    cr_assert_eq(pdnn_graph_placeholder(g, "x", NULL, &d, &x), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_variable(g, "v", NULL, &d, PDNN_INIT_DATA, 0, v0, &v), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, NULL, NULL, v, &r), PDNN_SUCCESS);
    pdnn_session *s = session(g, NULL);
    for (int step = 0; step < 3; step++) {
        pdnn_tensor *out = NULL;
        cr_assert_eq(pdnn_session_run(s, NULL, NULL, 0, &r, 1, &out), PDNN_SUCCESS, "%s", pdnn_last_error());
        float *got = th_download(out);
        for (int i = 0; i < 4; i++) {
            float want = (float)(step + 1) * v0[i];
            cr_assert_eq(got[i], want > 0 ? want : 0.0f, "step %d element %d: %g", step, i, (double)got[i]);
        }
        free(got);
        pdnn_tensor_release(out);
        float nv[4];
        for (int i = 0; i < 4; i++)
            nv[i] = (float)(step + 2) * v0[i];
        cr_assert_eq(pdnn_session_variable_assign(s, v, nv, sizeof nv), PDNN_SUCCESS, "%s", pdnn_last_error());
    }
    float buf[4];
    cr_assert_eq(pdnn_session_variable_read(s, v, buf, 8), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "holds 16 bytes, not 8"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_session_variable_assign(s, x, buf, sizeof buf), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "not a variable"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_session_variable_read(s, 99, buf, sizeof buf), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

/* conv(+bias) -> relu -> maxpool -> flatten -> matmul -> bias_add, plus
 * a skip branch that uses the flattened activations twice (an AddN of
 * gradients), -> softmax cross-entropy. */
typedef struct net {
    pdnn_graph *g;
    pdnn_node x, labels, loss, vars[4], grads[5];
} net;

enum { N = 4, C = 2, H = 6, K = 5, F = 3 };

/* residual: conv1 also adds z = conv(x, a constant 1x1 filter) before
 * its fused relu (pdnn_graph_conv2d_residual), so x's gradient flows
 * through the residual too. */
static net build_net(const char *dev, pdnn_layout l, int residual)
{
    net n;
    cr_assert_eq(pdnn_graph_create(&n.g), PDNN_SUCCESS);
    pdnn_tensor_desc xd = th_desc(l, N, C, H, H), ld = th_desc(PDNN_LAYOUT_X, N, 1, 1, 1);
    ld.dtype = PDNN_INT32;
    cr_assert_eq(pdnn_graph_placeholder(n.g, "x", dev, &xd, &n.x), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_placeholder(n.g, "labels", dev, &ld, &n.labels), PDNN_SUCCESS);
    pdnn_tensor_desc wd = th_desc(PDNN_OIHW, F, C, 3, 3), bd = th_desc(PDNN_LAYOUT_X, F, 1, 1, 1);
    pdnn_tensor_desc w2d = th_desc(PDNN_NCHW, F * (H / 2) * (H / 2), K, 1, 1), b2d = th_desc(PDNN_LAYOUT_X, K, 1, 1, 1);
    cr_assert_eq(pdnn_graph_variable(n.g, "conv1/w", dev, &wd, PDNN_INIT_HE_NORMAL, 1, NULL, &n.vars[0]),
                 PDNN_SUCCESS);
    float b1[F] = {0.1f, -0.05f, 0.2f}, b2[K] = {0.05f, -0.1f, 0, 0.1f, 0.02f};
    cr_assert_eq(pdnn_graph_variable(n.g, "conv1/b", dev, &bd, PDNN_INIT_DATA, 0, b1, &n.vars[1]), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_variable(n.g, "fc/w", dev, &w2d, PDNN_INIT_GLOROT_UNIFORM, 2, NULL, &n.vars[2]),
                 PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_variable(n.g, "fc/b", dev, &b2d, PDNN_INIT_DATA, 0, b2, &n.vars[3]), PDNN_SUCCESS);
    pdnn_conv2d_params cp;
    pdnn_conv2d_params_init(&cp);
    cp.pad_top = cp.pad_bottom = cp.pad_left = cp.pad_right = 1;
    pdnn_node c, r, p, f, sum, m, lg;
    if (residual) {
        const float zw[F * C] = {0.5f, -0.25f, 0.75f, 0.125f, -0.5f, 1.0f};
        pdnn_tensor_desc zwd = th_desc(PDNN_OIHW, F, C, 1, 1);
        pdnn_conv2d_params zp;
        pdnn_conv2d_params_init(&zp);
        pdnn_node zwn, z;
        cr_assert_eq(pdnn_graph_constant(n.g, "shortcut/w", dev, &zwd, zw, &zwn), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_conv2d(n.g, "shortcut", dev, n.x, zwn, -1, &zp, &z), PDNN_SUCCESS);
        cp.relu = 1;
        cr_assert_eq(pdnn_graph_conv2d_residual(n.g, "conv1", dev, n.x, n.vars[0], n.vars[1], z, &cp, &r),
                     PDNN_SUCCESS, "%s", pdnn_last_error());
    } else {
        cr_assert_eq(pdnn_graph_conv2d(n.g, "conv1", dev, n.x, n.vars[0], n.vars[1], &cp, &c), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        cr_assert_eq(pdnn_graph_relu(n.g, "relu1", dev, c, &r), PDNN_SUCCESS);
    }
    pdnn_pool2d_params pp;
    pdnn_pool2d_params_init(&pp);
    cr_assert_eq(pdnn_graph_pool2d(n.g, "pool1", dev, r, &pp, &p), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_flatten(n.g, "flat", dev, p, &f), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_add(n.g, "twice", dev, f, f, &sum), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_matmul(n.g, "fc", dev, sum, n.vars[2], 0, 0, &m), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_bias_add(n.g, "logits", dev, m, n.vars[3], &lg), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_softmax_cross_entropy(n.g, "loss", dev, lg, n.labels, &n.loss), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    pdnn_node xs[5] = {n.vars[0], n.vars[1], n.vars[2], n.vars[3], n.x};
    cr_assert_eq(pdnn_graph_gradients(n.g, n.loss, xs, 5, n.grads), PDNN_SUCCESS, "%s", pdnn_last_error());
    for (int k = 0; k < 5; k++)
        cr_assert_geq(n.grads[k], 0, "gradient %d missing", k);
    return n;
}

static net build(const char *dev, pdnn_layout l) { return build_net(dev, l, 0); }

static const int32_t the_labels[N] = {0, 3, 4, 1};

static double loss_of(pdnn_session *s, const net *n, pdnn_tensor *xt, pdnn_tensor *lt)
{
    pdnn_node feeds[2] = {n->x, n->labels};
    pdnn_tensor *fv[2] = {xt, lt}, *out = NULL;
    cr_assert_eq(pdnn_session_run(s, feeds, fv, 2, &n->loss, 1, &out), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *v = th_download(out);
    double r = v[0];
    free(v);
    pdnn_tensor_release(out);
    return r;
}

/* All five gradients of one run, concatenated. */
static int64_t elems(const pdnn_tensor *t)
{
    pdnn_tensor_desc d;
    cr_assert_eq(pdnn_tensor_get_desc(t, &d), PDNN_SUCCESS);
    return pdnn_tensor_desc_elements(&d);
}

static float *grads_of(pdnn_session *s, const net *n, pdnn_tensor *xt, pdnn_tensor *lt, int64_t *count)
{
    pdnn_node feeds[2] = {n->x, n->labels};
    pdnn_tensor *fv[2] = {xt, lt}, *out[5];
    cr_assert_eq(pdnn_session_run(s, feeds, fv, 2, n->grads, 5, out), PDNN_SUCCESS, "%s", pdnn_last_error());
    int64_t total = 0;
    for (int k = 0; k < 5; k++)
        total += elems(out[k]);
    float *all = malloc(sizeof(float) * (size_t)total);
    int64_t at = 0;
    for (int k = 0; k < 5; k++) {
        int64_t e = elems(out[k]);
        float *v = th_download(out[k]);
        memcpy(all + at, v, sizeof(float) * (size_t)e);
        at += e;
        free(v);
        pdnn_tensor_release(out[k]);
    }
    *count = total;
    return all;
}

Test(train_graph, gradients_match_finite_differences_of_the_loss)
{
    for (int li = 0; li < 4; li++) { /* NCHW, NHWC; then both with the residual conv */
        pdnn_layout l = li % 2 ? PDNN_NHWC : PDNN_NCHW;
        net n = build_net("/cpu:0", l, li >= 2);
        pdnn_session *s = session(n.g, NULL);
        pdnn_device *h = host_of(s);
        pdnn_tensor_desc xd = th_desc(l, N, C, H, H);
        float xv[N * C * H * H];
        th_fill(xv, N * C * H * H, 9);
        pdnn_tensor *xt = th_upload(h, &xd, xv), *lt = labels_on(h, the_labels, N);
        int64_t total;
        float *grad = grads_of(s, &n, xt, lt, &total);
        /* Central differences in float with a step of 1e-4 (larger steps cross
         * kinks of relu and max pooling in this small net): error O(1e-4)
         * from curvature and about 1e-5 from rounding; a kink of relu or
         * max pooling inside the step is rare and gets the loose bound. */
        const double eps = 1e-4;
        int64_t at = 0, checked = 0, bad = 0;
        for (int k = 0; k < 5; k++) {
            pdnn_tensor_desc d;
            cr_assert_eq(pdnn_graph_node_desc(n.g, k < 4 ? n.vars[k] : n.x, &d), PDNN_SUCCESS);
            int64_t e = pdnn_tensor_desc_elements(&d);
            float *val = malloc(sizeof(float) * (size_t)e);
            if (k < 4)
                cr_assert_eq(pdnn_session_variable_read(s, n.vars[k], val, (size_t)e * 4), PDNN_SUCCESS);
            else
                memcpy(val, xv, sizeof xv);
            for (int64_t i = 0; i < e; i += (e > 12 ? e / 12 : 1)) {
                double lp, lm;
                float keep = val[i];
                for (int side = 0; side < 2; side++) {
                    val[i] = (float)(keep + (side ? -eps : eps));
                    double loss;
                    if (k < 4) {
                        cr_assert_eq(pdnn_session_variable_assign(s, n.vars[k], val, (size_t)e * 4), PDNN_SUCCESS);
                        loss = loss_of(s, &n, xt, lt);
                    } else {
                        pdnn_tensor *xp = th_upload(h, &xd, val);
                        loss = loss_of(s, &n, xp, lt);
                        pdnn_tensor_release(xp);
                    }
                    *(side ? &lm : &lp) = loss;
                }
                val[i] = keep;
                if (k < 4)
                    cr_assert_eq(pdnn_session_variable_assign(s, n.vars[k], val, (size_t)e * 4), PDNN_SUCCESS);
                double fd = (lp - lm) / (2 * eps), an = grad[at + i];
                checked++;
                if (fabs(fd - an) > 2e-3 + 0.02 * fabs(fd)) {
                    bad++;
                    cr_assert_lt(fabs(fd - an), 0.05 + 0.3 * fabs(fd), "%s gradient %d element %lld: %g vs fd %g",
                                 pdnn_layout_name(l), k, (long long)i, an, fd);
                }
            }
            at += e;
            free(val);
        }
        cr_assert_geq(checked, 40);
        cr_assert_leq(bad, 2, "%lld of %lld elements are off", (long long)bad, (long long)checked);
        /* Not all zero: a gradient that lost its seed would pass above only if fd were 0 too. */
        double norm = 0;
        for (int64_t i = 0; i < total; i++)
            norm += fabs(grad[i]);
        cr_assert_gt(norm, 0.1);
        free(grad);
        pdnn_tensor_release(xt);
        pdnn_tensor_release(lt);
        pdnn_session_destroy(s);
        pdnn_graph_destroy(n.g);
    }
}

/* The same network with no devices named: on the accelerator (PoCL here)
 * every gradient node goes where its forward op went, the log shows them,
 * and the numbers match the host's. */
Test(train_graph, gradients_on_the_accelerator_match_the_host_and_are_logged)
{
    for (int li = 0; li < 4; li++) { /* the residual conv in the last two */
        pdnn_layout l = li % 2 ? PDNN_NHWC : PDNN_NCHW;
        net na = build_net(NULL, l, li >= 2), nh = build_net("/cpu:0", l, li >= 2);
        logbuf *log = calloc(1, sizeof *log);
        cr_assert_not_null(log);
        pdnn_session *sa = session(na.g, log), *sh = session(nh.g, NULL);
        if (!has_gpu(sa)) {
            pdnn_session_destroy(sa);
            pdnn_session_destroy(sh);
            pdnn_graph_destroy(na.g);
            pdnn_graph_destroy(nh.g);
            free(log);
            cr_skip_test("no accelerator device");
        }
        cr_assert_not_null(strstr(log->text, "gradients/conv1_grad/Conv2DBackpropFilter: (Conv2DBackpropFilter): "
                                             FULL("GPU", 0) "\n"), "%s", log->text);
        cr_assert_not_null(strstr(log->text, "gradients/pool1_grad/MaxPoolGrad: (MaxPoolGrad): " FULL("GPU", 0)),
                           "%s", log->text);
        if (li >= 2) /* the shortcut's own gradient reaches x too */
            cr_assert_not_null(strstr(log->text, "gradients/shortcut_grad/Conv2DBackpropInput: "), "%s", log->text);
        cr_assert_not_null(strstr(log->text, "gradients/flat_grad/AddN: (AddN): " FULL("GPU", 0)), "%s", log->text);
        cr_assert_not_null(strstr(log->text, "gradients/loss_grad/SparseSoftmaxCrossEntropyWithLogitsGrad: "), "%s",
                           log->text);
        pdnn_device *h = host_of(sh);
        pdnn_tensor_desc xd = th_desc(l, N, C, H, H);
        float xv[N * C * H * H];
        th_fill(xv, N * C * H * H, 9);
        pdnn_tensor *xt = th_upload(h, &xd, xv), *lt = labels_on(h, the_labels, N);
        int64_t ta, th;
        float *ga = grads_of(sa, &na, xt, lt, &ta), *gh = grads_of(sh, &nh, xt, lt, &th);
        cr_assert_eq(ta, th);
        for (int64_t i = 0; i < ta; i++)
            cr_assert_float_eq(ga[i], gh[i], 1e-4 + 1e-3 * fabs(gh[i]), "%s element %lld: %g vs %g",
                               pdnn_layout_name(l), (long long)i, (double)ga[i], (double)gh[i]);
        free(ga);
        free(gh);
        free(log);
        pdnn_tensor_release(xt);
        pdnn_tensor_release(lt);
        pdnn_session_destroy(sa);
        pdnn_session_destroy(sh);
        pdnn_graph_destroy(na.g);
        pdnn_graph_destroy(nh.g);
    }
}

/* A forward op pinned to /cpu:0 pulls its gradient there although the
 * gradient names no device and an accelerator comes first by default. */
Test(train_graph, gradient_nodes_are_colocated_with_their_forward_op)
{
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc ad = th_desc(PDNN_NCHW, 2, 3, 1, 1), bd = th_desc(PDNN_NCHW, 3, 2, 1, 1);
    pdnn_node a, b, m, r, grads[2];
    cr_assert_eq(pdnn_graph_variable(g, "a", NULL, &ad, PDNN_INIT_GLOROT_UNIFORM, 3, NULL, &a), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_variable(g, "b", NULL, &bd, PDNN_INIT_GLOROT_UNIFORM, 4, NULL, &b), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_matmul(g, "mm", "/cpu:0", a, b, 0, 0, &m), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, "r", NULL, m, &r), PDNN_SUCCESS);
    pdnn_node xs[2] = {a, b};
    cr_assert_eq(pdnn_graph_gradients(g, r, xs, 2, grads), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_str_eq(pdnn_graph_node_name(g, grads[0]), "gradients/mm_grad/MatMul");
    cr_assert_str_eq(pdnn_graph_node_name(g, grads[1]), "gradients/mm_grad/MatMul_1");
    /* A second call gets its own name scope, as in TensorFlow. */
    pdnn_node again[2];
    cr_assert_eq(pdnn_graph_gradients(g, r, xs, 2, again), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_str_eq(pdnn_graph_node_name(g, again[0]), "gradients_1/mm_grad/MatMul");
    pdnn_node relu_grad;
    cr_assert_eq(pdnn_graph_find(g, "gradients/r_grad/ReluGrad", &relu_grad), PDNN_SUCCESS);
    logbuf *log = calloc(1, sizeof *log);
        cr_assert_not_null(log);
    pdnn_session *s = session(g, log);
    const char *fwd = has_gpu(s) ? "/device:GPU:0" : "/device:CPU:0";
    cr_assert_str_eq(placed(s, r), fwd);
    cr_assert_str_eq(placed(s, relu_grad), fwd);
    cr_assert_str_eq(placed(s, grads[0]), "/device:CPU:0");
    cr_assert_str_eq(placed(s, grads[1]), "/device:CPU:0");
    cr_assert_not_null(strstr(log->text, "gradients/mm_grad/MatMul: (MatMul): " FULL("CPU", 0) "\n"), "%s",
                       log->text);
    /* d(sum relu(ab))/da = mask(ab) b^T, checked by hand. */
    float av[6], bv[6];
    cr_assert_eq(pdnn_session_variable_read(s, a, av, sizeof av), PDNN_SUCCESS);
    cr_assert_eq(pdnn_session_variable_read(s, b, bv, sizeof bv), PDNN_SUCCESS);
    pdnn_tensor *out[2];
    cr_assert_eq(pdnn_session_run(s, NULL, NULL, 0, grads, 2, out), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *da = th_download(out[0]), *db = th_download(out[1]);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            double want_a = 0, want_b_unused = 0;
            for (int j = 0; j < 2; j++) {
                double y = 0;
                for (int q = 0; q < 3; q++)
                    y += av[i * 3 + q] * bv[q * 2 + j];
                want_a += y > 0 ? bv[k * 2 + j] : 0;
            }
            (void)want_b_unused;
            cr_assert_float_eq(da[i * 3 + k], want_a, 1e-5, "da[%d][%d]", i, k);
        }
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 2; j++) {
            double want = 0;
            for (int i = 0; i < 2; i++) {
                double y = 0;
                for (int q = 0; q < 3; q++)
                    y += av[i * 3 + q] * bv[q * 2 + j];
                want += y > 0 ? av[i * 3 + k] : 0;
            }
            cr_assert_float_eq(db[k * 2 + j], want, 1e-5, "db[%d][%d]", k, j);
        }
    free(da);
    free(db);
    pdnn_tensor_release(out[0]);
    pdnn_tensor_release(out[1]);
    free(log);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

Test(train_graph, gradients_reject_bad_input_and_give_none_for_unconnected_nodes)
{
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc d = th_desc(PDNN_NCHW, 2, 3, 1, 1), ld = th_desc(PDNN_LAYOUT_X, 2, 1, 1, 1);
    ld.dtype = PDNN_INT32;
    pdnn_node a, other, lab, sm, r, loss, gr[2];
    cr_assert_eq(pdnn_graph_variable(g, "a", NULL, &d, PDNN_INIT_ZEROS, 0, NULL, &a), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_variable(g, "other", NULL, &d, PDNN_INIT_ZEROS, 0, NULL, &other), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_placeholder(g, "lab", NULL, &ld, &lab), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_softmax(g, "sm", NULL, a, &sm), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, "r", NULL, a, &r), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_softmax_cross_entropy(g, "loss", NULL, r, lab, &loss), PDNN_SUCCESS);
    pdnn_node xs[2] = {a, other};
    /* Unconnected: TensorFlow's None, here -1, with success. */
    cr_assert_eq(pdnn_graph_gradients(g, loss, xs, 2, gr), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_geq(gr[0], 0);
    cr_assert_eq(gr[1], -1);
    int before = pdnn_graph_node_count(g);
    /* Through softmax: no gradient defined; the graph is left unchanged. */
    cr_assert_eq(pdnn_graph_gradients(g, sm, xs, 1, gr), PDNN_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(pdnn_last_error(), "node 'sm' (Softmax)"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_node_count(g), before);
    cr_assert_eq(gr[0], -1);
    /* Labels are int32: not differentiable, and not a loss. */
    cr_assert_eq(pdnn_graph_gradients(g, loss, &lab, 1, gr), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "'lab' is int32, not a float"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_gradients(g, lab, xs, 1, gr), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_graph_gradients(g, 1000, xs, 1, gr), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_node bogus = 1000;
    cr_assert_eq(pdnn_graph_gradients(g, loss, &bogus, 1, gr), PDNN_ERR_INVALID_ARGUMENT);
    /* A cross-entropy that is not the loss itself. */
    pdnn_node sum;
    pdnn_node ls[2] = {loss, loss};
    cr_assert_eq(pdnn_graph_add_n(g, "sum", NULL, ls, 2, &sum), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_gradients(g, sum, xs, 1, gr), PDNN_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(pdnn_last_error(), "'loss'"), "%s", pdnn_last_error());
    /* Bad cross-entropy inputs. */
    pdnn_node bad;
    cr_assert_eq(pdnn_graph_softmax_cross_entropy(g, "x2", NULL, r, a, &bad), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "labels must be int32"), "%s", pdnn_last_error());
    pdnn_graph_destroy(g);
}

/* One training step's gradients on the host: the activations the
 * backward pass reads are freed after their last gradient consumer, so
 * the peak stays well below the sum of every node's output. */
Test(train_graph, a_step_frees_activations_after_their_last_gradient_consumer)
{
    net n = build("/cpu:0", PDNN_NCHW);
    pdnn_session *s = session(n.g, NULL);
    pdnn_device *h = host_of(s);
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, N, C, H, H);
    float xv[N * C * H * H];
    th_fill(xv, N * C * H * H, 9);
    pdnn_tensor *xt = th_upload(h, &xd, xv), *lt = labels_on(h, the_labels, N);
    uint64_t all = 0;
    for (int i = 0; i < pdnn_graph_node_count(n.g); i++) {
        pdnn_tensor_desc d;
        cr_assert_eq(pdnn_graph_node_desc(n.g, i, &d), PDNN_SUCCESS);
        const char *op = pdnn_graph_node_op(n.g, i);
        if (strcmp(op, "Placeholder") != 0 && strcmp(op, "VariableV2") != 0)
            all += ((uint64_t)pdnn_tensor_desc_bytes(&d) + 255) / 256 * 256;
    }
    pdnn_memory_stats before, after;
    cr_assert_eq(pdnn_device_get_memory_stats(h, &before), PDNN_SUCCESS);
    cr_assert_eq(pdnn_device_reset_peak_stats(h), PDNN_SUCCESS);
    int64_t total;
    float *gv = grads_of(s, &n, xt, lt, &total);
    free(gv);
    cr_assert_eq(pdnn_device_get_memory_stats(h, &after), PDNN_SUCCESS);
    uint64_t peak = after.peak_bytes_in_use - before.bytes_in_use;
    cr_assert_lt(peak, all, "peak %llu bytes, all outputs %llu", (unsigned long long)peak, (unsigned long long)all);
    cr_assert_eq(after.bytes_in_use, before.bytes_in_use, "the run left tensors behind");
    pdnn_tensor_release(xt);
    pdnn_tensor_release(lt);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(n.g);
}

/* With a memory limit that leaves no room for an activation, the error
 * names the node and the output it was allocating (on the accelerator,
 * where limits apply). */
Test(train_graph, out_of_memory_in_a_step_names_the_node_and_its_output)
{
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc d = th_desc(PDNN_NCHW, 1, 1, 2048, 2048); /* 16 MiB */
    pdnn_node v, r, dv;
    cr_assert_eq(pdnn_graph_variable(g, "v", NULL, &d, PDNN_INIT_GLOROT_UNIFORM, 5, NULL, &v), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, "act", NULL, v, &r), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_gradients(g, r, &v, 1, &dv), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_session *s = session(g, NULL);
    pdnn_device *dev;
    cr_assert_eq(pdnn_session_node_device(s, r, &dev), PDNN_SUCCESS);
    if (!has_gpu(s)) {
        pdnn_session_destroy(s);
        pdnn_graph_destroy(g);
        cr_skip_test("no accelerator device");
    }
    pdnn_tensor *out = NULL;
    cr_assert_eq(pdnn_session_run(s, NULL, NULL, 0, &dv, 1, &out), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_release(out);
    out = NULL;
    pdnn_memory_stats st;
    cr_assert_eq(pdnn_device_release_unused(dev, NULL), PDNN_SUCCESS);
    cr_assert_eq(pdnn_device_get_memory_stats(dev, &st), PDNN_SUCCESS);
    cr_assert_eq(pdnn_device_set_memory_limit(dev, st.bytes_in_use + (4u << 20)), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    cr_assert_eq(pdnn_session_run(s, NULL, NULL, 0, &dv, 1, &out), PDNN_ERR_OUT_OF_MEMORY);
    const char *e = pdnn_last_error();
    cr_assert_not_null(strstr(e, "node 'act' (Relu)"), "%s", e);
    cr_assert_not_null(strstr(e, "allocating its output [1,1,2048,2048] NCHW float32"), "%s", e);
    cr_assert_null(out);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

static float *read_var(pdnn_session *s, const pdnn_graph *g, pdnn_node v, int64_t *count)
{
    pdnn_tensor_desc d;
    cr_assert_eq(pdnn_graph_node_desc(g, v, &d), PDNN_SUCCESS);
    int64_t e = pdnn_tensor_desc_elements(&d);
    float *out = malloc(sizeof(float) * (size_t)e);
    cr_assert_eq(pdnn_session_variable_read(s, v, out, (size_t)e * 4), PDNN_SUCCESS, "%s", pdnn_last_error());
    if (count)
        *count = e;
    return out;
}

static void run_train(pdnn_session *s, const net *n, pdnn_node train, pdnn_tensor *xt, pdnn_tensor *lt)
{
    pdnn_node feeds[2] = {n->x, n->labels};
    pdnn_tensor *fv[2] = {xt, lt}, *out = (pdnn_tensor *)1;
    cr_assert_eq(pdnn_session_run(s, feeds, fv, 2, &train, 1, &out), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_null(out, "a train op has no value");
}

/* One SGD step by hand (w -= lr (g + wd w), the momentum slot = g + wd w,
 * global_step 1), then several steps on the accelerator equal the host's. */
Test(train_graph, sgd_steps_update_variables_in_place_the_same_on_every_device)
{
    pdnn_optimizer_params p;
    pdnn_optimizer_params_init(&p, PDNN_OPTIMIZER_SGD);
    p.learning_rate = 0.05f;
    p.momentum = 0.9f;
    p.weight_decay = 1e-3f;
    float *final[2][4] = {{0}};
    int ran = 0;
    for (int on = 0; on < 2; on++) {
        net n = build(on ? NULL : "/cpu:0", PDNN_NCHW);
        pdnn_node train;
        cr_assert_eq(pdnn_graph_apply_gradients(n.g, "train", &p, n.vars, n.grads, 4, &train), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        cr_assert_str_eq(pdnn_graph_node_op(n.g, train), "NoOp");
        pdnn_node mom, step, upd;
        cr_assert_eq(pdnn_graph_find(n.g, "conv1/w/Momentum", &mom), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_find(n.g, "global_step", &step), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_find(n.g, "train/update_conv1/w", &upd), PDNN_SUCCESS);
        cr_assert_str_eq(pdnn_graph_node_op(n.g, upd), "ApplyMomentum");
        logbuf *log = calloc(1, sizeof *log);
        cr_assert_not_null(log);
        pdnn_session *s = session(n.g, log);
        if (on && !has_gpu(s)) {
            free(log);
            pdnn_session_destroy(s);
            pdnn_graph_destroy(n.g);
            break;
        }
        const char *want_dev = on ? FULL("GPU", 0) : FULL("CPU", 0);
        char line[256];
        snprintf(line, sizeof line, "train/update_conv1/w: (ApplyMomentum): %s\n", want_dev);
        cr_assert_not_null(strstr(log->text, line), "%s", log->text);
        snprintf(line, sizeof line, "conv1/w/Momentum: (VariableV2): %s\n", want_dev);
        cr_assert_not_null(strstr(log->text, line), "%s", log->text);
        cr_assert_not_null(strstr(log->text, "global_step: (VariableV2): " FULL("CPU", 0) "\n"), "%s", log->text);
        pdnn_device *h = host_of(s);
        pdnn_tensor_desc xd = th_desc(PDNN_NCHW, N, C, H, H);
        float xv[N * C * H * H];
        th_fill(xv, N * C * H * H, 9);
        pdnn_tensor *xt = th_upload(h, &xd, xv), *lt = labels_on(h, the_labels, N);
        int64_t total, e;
        float *grad = grads_of(s, &n, xt, lt, &total), *w0 = read_var(s, n.g, n.vars[0], &e);
        double loss0 = loss_of(s, &n, xt, lt);
        run_train(s, &n, train, xt, lt);
        float *w1 = read_var(s, n.g, n.vars[0], NULL), *v1 = read_var(s, n.g, mom, NULL),
              *st = read_var(s, n.g, step, NULL);
        cr_assert_eq(st[0], 1.0f);
        for (int64_t i = 0; i < e; i++) {
            double gp = grad[i] + 1e-3 * w0[i];
            cr_assert_float_eq(v1[i], gp, 1e-5 + 1e-4 * fabs(gp), "slot %lld", (long long)i);
            cr_assert_float_eq(w1[i], w0[i] - 0.05 * gp, 1e-5 + 1e-4 * fabs(w0[i]), "w %lld", (long long)i);
        }
        for (int k = 0; k < 4; k++)
            run_train(s, &n, train, xt, lt);
        free(st);
        st = read_var(s, n.g, step, NULL);
        cr_assert_eq(st[0], 5.0f);
        double loss5 = loss_of(s, &n, xt, lt);
        cr_assert_lt(loss5, loss0 * 0.9, "training on one batch lowers its loss: %g -> %g", loss5, loss0);
        for (int k = 0; k < 4; k++)
            final[on][k] = read_var(s, n.g, n.vars[k], NULL);
        ran = on + 1;
        free(grad);
        free(w0);
        free(w1);
        free(v1);
        free(st);
        free(log);
        pdnn_tensor_release(xt);
        pdnn_tensor_release(lt);
        pdnn_session_destroy(s);
        pdnn_graph_destroy(n.g);
    }
    if (ran == 2) {
        const int64_t sizes[4] = {F * C * 9, F, F * (H / 2) * (H / 2) * K, K};
        for (int k = 0; k < 4; k++)
            for (int64_t i = 0; i < sizes[k]; i++)
                cr_assert_float_eq(final[1][k][i], final[0][k][i], 1e-4 + 1e-3 * fabs(final[0][k][i]),
                                   "variable %d element %lld: %g vs host %g", k, (long long)i,
                                   (double)final[1][k][i], (double)final[0][k][i]);
    }
    for (int on = 0; on < 2; on++)
        for (int k = 0; k < 4; k++)
            free(final[on][k]);
}

/* Adam's first step moves each weight by lr * g'/(|g'| + eps): m/(1-b1) =
 * g' and v/(1-b2) = g'^2. Its slots have TensorFlow's names. */
Test(train_graph, adam_creates_named_slots_and_takes_a_first_step)
{
    pdnn_optimizer_params p;
    pdnn_optimizer_params_init(&p, PDNN_OPTIMIZER_ADAM);
    p.learning_rate = 0.01f;
    net n = build("/cpu:0", PDNN_NHWC);
    pdnn_node train, m, v;
    cr_assert_eq(pdnn_graph_apply_gradients(n.g, NULL, &p, n.vars, n.grads, 4, &train), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    cr_assert_str_eq(pdnn_graph_node_name(n.g, train), "Adam");
    cr_assert_eq(pdnn_graph_find(n.g, "fc/w/Adam", &m), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_find(n.g, "fc/w/Adam_1", &v), PDNN_SUCCESS);
    pdnn_node mom;
    cr_assert_eq(pdnn_graph_find(n.g, "fc/w/Momentum", &mom), PDNN_ERR_NOT_FOUND);
    pdnn_session *s = session(n.g, NULL);
    pdnn_device *h = host_of(s);
    pdnn_tensor_desc xd = th_desc(PDNN_NHWC, N, C, H, H);
    float xv[N * C * H * H];
    th_fill(xv, N * C * H * H, 9);
    pdnn_tensor *xt = th_upload(h, &xd, xv), *lt = labels_on(h, the_labels, N);
    int64_t total, e;
    float *grad = grads_of(s, &n, xt, lt, &total);
    float *w0 = read_var(s, n.g, n.vars[2], &e);
    run_train(s, &n, train, xt, lt);
    float *w1 = read_var(s, n.g, n.vars[2], NULL), *m1 = read_var(s, n.g, m, NULL);
    int64_t off = F * C * 9 + F; /* fc/w's gradient in the concatenation */
    for (int64_t i = 0; i < e; i++) {
        double g = grad[off + i];
        cr_assert_float_eq(m1[i], 0.1 * g, 1e-6 + 1e-4 * fabs(g), "m %lld", (long long)i);
        cr_assert_float_eq(w1[i], w0[i] - 0.01 * g / (fabs(g) + 1e-8), 1e-5, "w %lld: g %g", (long long)i, g);
    }
    free(grad);
    free(w0);
    free(w1);
    free(m1);
    pdnn_tensor_release(xt);
    pdnn_tensor_release(lt);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(n.g);
}

Test(train_graph, apply_gradients_rejects_bad_input_and_leaves_the_graph_unchanged)
{
    net n = build("/cpu:0", PDNN_NCHW);
    pdnn_optimizer_params p;
    pdnn_optimizer_params_init(&p, PDNN_OPTIMIZER_SGD);
    int before = pdnn_graph_node_count(n.g);
    pdnn_node train;
    /* x is a placeholder, not a variable. */
    pdnn_node vars[2] = {n.vars[0], n.x}, grads[2] = {n.grads[0], n.grads[4]};
    cr_assert_eq(pdnn_graph_apply_gradients(n.g, NULL, &p, vars, grads, 2, &train), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "x) is not a variable"), "%s", pdnn_last_error());
    /* A gradient of another shape. */
    pdnn_node mism[1] = {n.grads[2]};
    cr_assert_eq(pdnn_graph_apply_gradients(n.g, NULL, &p, n.vars, mism, 1, &train), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "does not match variable 'conv1/w'"), "%s", pdnn_last_error());
    pdnn_node none[1] = {-1};
    cr_assert_eq(pdnn_graph_apply_gradients(n.g, NULL, &p, n.vars, none, 1, &train), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_node twice[2] = {n.vars[1], n.vars[1]}, tg[2] = {n.grads[1], n.grads[1]};
    cr_assert_eq(pdnn_graph_apply_gradients(n.g, NULL, &p, twice, tg, 2, &train), PDNN_ERR_INVALID_ARGUMENT);
    p.kind = (pdnn_optimizer_kind)7;
    cr_assert_eq(pdnn_graph_apply_gradients(n.g, NULL, &p, n.vars, n.grads, 4, &train), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_graph_node_count(n.g), before);
    /* Bad hyperparameters surface when the step runs, naming the update node. */
    pdnn_optimizer_params_init(&p, PDNN_OPTIMIZER_SGD);
    p.learning_rate = -1;
    cr_assert_eq(pdnn_graph_apply_gradients(n.g, NULL, &p, n.vars, n.grads, 4, &train), PDNN_SUCCESS);
    pdnn_session *s = session(n.g, NULL);
    pdnn_device *h = host_of(s);
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, N, C, H, H);
    float xv[N * C * H * H];
    th_fill(xv, N * C * H * H, 9);
    pdnn_tensor *xt = th_upload(h, &xd, xv), *lt = labels_on(h, the_labels, N), *out = NULL;
    pdnn_node feeds[2] = {n.x, n.labels};
    pdnn_tensor *fv[2] = {xt, lt};
    cr_assert_neq(pdnn_session_run(s, feeds, fv, 2, &train, 1, &out), PDNN_SUCCESS);
    cr_assert_not_null(strstr(pdnn_last_error(), "node 'Momentum/update_conv1/w'"), "%s", pdnn_last_error());
    pdnn_tensor_release(xt);
    pdnn_tensor_release(lt);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(n.g);
}

/* The shared model of the towers test: conv(+bias) -> relu -> maxpool ->
 * flatten -> matmul -> cross-entropy, on dev, reading vars. */
static pdnn_node tower(pdnn_graph *g, const char *dev, int t, int64_t batch, const pdnn_node vars[3], pdnn_node *x,
                       pdnn_node *labels)
{
    char nm[64];
    pdnn_tensor_desc xd = th_desc(PDNN_NHWC, batch, C, H, H), ld = th_desc(PDNN_LAYOUT_X, batch, 1, 1, 1);
    ld.dtype = PDNN_INT32;
    snprintf(nm, sizeof nm, "tower_%d/x", t);
    cr_assert_eq(pdnn_graph_placeholder(g, nm, dev, &xd, x), PDNN_SUCCESS);
    snprintf(nm, sizeof nm, "tower_%d/labels", t);
    cr_assert_eq(pdnn_graph_placeholder(g, nm, dev, &ld, labels), PDNN_SUCCESS);
    pdnn_conv2d_params cp;
    pdnn_conv2d_params_init(&cp);
    cp.pad_top = cp.pad_bottom = cp.pad_left = cp.pad_right = 1;
    pdnn_pool2d_params pp;
    pdnn_pool2d_params_init(&pp);
    pdnn_node c, r, p, f, m, loss;
    cr_assert_eq(pdnn_graph_conv2d(g, NULL, dev, *x, vars[0], vars[1], &cp, &c), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    cr_assert_eq(pdnn_graph_relu(g, NULL, dev, c, &r), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_pool2d(g, NULL, dev, r, &pp, &p), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_flatten(g, NULL, dev, p, &f), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_matmul(g, NULL, dev, f, vars[2], 0, 0, &m), PDNN_SUCCESS, "%s", pdnn_last_error());
    snprintf(nm, sizeof nm, "tower_%d/loss", t);
    cr_assert_eq(pdnn_graph_softmax_cross_entropy(g, nm, dev, m, *labels, &loss), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    return loss;
}

/* TensorFlow's multi-GPU CIFAR-10 pattern on POCL_DEVICES="pthread
 * pthread": variables on /cpu:0, one tower per device on half the batch,
 * the towers' gradients averaged on /cpu:0 (AddN, then Mul by 1/2, as
 * tf.reduce_mean does), one update with the same learning rate. Each
 * tower's loss is the mean over its half, so the average is the full
 * batch's gradient. Weight decay makes the update depend on the gradient's
 * scale apart from the learning rate (halving lr instead of averaging
 * would be wrong there). */
Test(train_graph, two_towers_on_two_devices_equal_one_device_at_the_full_batch)
{
    setenv("POCL_DEVICES", "pthread pthread", 1);
    enum { B = 8 };
    const int32_t lab[B] = {0, 3, 4, 1, 2, 2, 0, 4};
    float xv[B * C * H * H];
    th_fill(xv, B * C * H * H, 21);
    pdnn_tensor_desc wd = th_desc(PDNN_OIHW, F, C, 3, 3), bd = th_desc(PDNN_LAYOUT_X, F, 1, 1, 1);
    pdnn_tensor_desc fd = th_desc(PDNN_NCHW, F * (H / 2) * (H / 2), K, 1, 1);
    float *final[2][3], *init[3] = {0};
    for (int towers = 0; towers < 2; towers++) {
        pdnn_graph *g;
        cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
        const char *vdev = towers ? "/cpu:0" : "/gpu:0";
        pdnn_node vars[3], x[2], l[2], train;
        cr_assert_eq(pdnn_graph_variable(g, "w", vdev, &wd, PDNN_INIT_HE_NORMAL, 11, NULL, &vars[0]), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_variable(g, "b", vdev, &bd, PDNN_INIT_GLOROT_UNIFORM, 13, NULL, &vars[1]),
                     PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_variable(g, "fc", vdev, &fd, PDNN_INIT_GLOROT_UNIFORM, 12, NULL, &vars[2]),
                     PDNN_SUCCESS);
        pdnn_optimizer_params p;
        pdnn_optimizer_params_init(&p, PDNN_OPTIMIZER_SGD);
        p.momentum = 0.9f;
        p.learning_rate = 0.1f;
        p.weight_decay = 0.05f;
        if (towers) {
            pdnn_node grads[2][3], sums[3];
            for (int t = 0; t < 2; t++) {
                char dev[16];
                snprintf(dev, sizeof dev, "/gpu:%d", t);
                pdnn_node loss = tower(g, dev, t, B / 2, vars, &x[t], &l[t]);
                cr_assert_eq(pdnn_graph_gradients(g, loss, vars, 3, grads[t]), PDNN_SUCCESS, "%s", pdnn_last_error());
            }
            for (int k = 0; k < 3; k++) {
                pdnn_node in[2] = {grads[0][k], grads[1][k]};
                char nm[32];
                snprintf(nm, sizeof nm, "average/%d", k);
                pdnn_node sum;
                cr_assert_eq(pdnn_graph_add_n(g, nm, "/cpu:0", in, 2, &sum), PDNN_SUCCESS);
                snprintf(nm, sizeof nm, "average/%d/mean", k);
                cr_assert_eq(pdnn_graph_scale(g, nm, "/cpu:0", sum, 0.5f, &sums[k]), PDNN_SUCCESS);
            }
            cr_assert_eq(pdnn_graph_apply_gradients(g, "train", &p, vars, sums, 3, &train), PDNN_SUCCESS, "%s",
                         pdnn_last_error());
        } else {
            pdnn_node loss = tower(g, "/gpu:0", 0, B, vars, &x[0], &l[0]), grads[3];
            cr_assert_eq(pdnn_graph_gradients(g, loss, vars, 3, grads), PDNN_SUCCESS, "%s", pdnn_last_error());
            cr_assert_eq(pdnn_graph_apply_gradients(g, "train", &p, vars, grads, 3, &train), PDNN_SUCCESS, "%s",
                         pdnn_last_error());
        }
        logbuf *log = calloc(1, sizeof *log);
        cr_assert_not_null(log);
        pdnn_session_config c;
        pdnn_session_config_init(&c);
        c.options.allow_growth = 1;
        c.log_device_placement = 1;
        c.log = capture;
        c.log_user = log;
        c.allow_soft_placement = 0;
        pdnn_session *s = NULL;
        pdnn_status st = pdnn_session_create(g, &c, &s);
        if (st != PDNN_SUCCESS) {
            pdnn_graph_destroy(g);
            free(log);
            if (towers)
                for (int k = 0; k < 3; k++) {
                    free(final[0][k]);
                    free(init[k]);
                }
            cr_skip_test("two GPU-class devices are needed (POCL_DEVICES=\"pthread pthread\" gives them): %s",
                         pdnn_last_error());
        }
        if (towers) {
            cr_assert_not_null(strstr(log->text, "gradients/Conv2D_grad/Conv2DBackpropFilter: (Conv2DBackpropFilter): "
                                                 FULL("GPU", 0) "\n"), "%s", log->text);
            cr_assert_not_null(strstr(log->text, "gradients_1/Conv2D_1_grad/Conv2DBackpropFilter: "
                                                 "(Conv2DBackpropFilter): " FULL("GPU", 1) "\n"), "%s", log->text);
            cr_assert_not_null(strstr(log->text, "train/update_w: (ApplyMomentum): " FULL("CPU", 0) "\n"), "%s",
                               log->text);
            cr_assert_not_null(strstr(log->text, "average/0/mean: (Mul): " FULL("CPU", 0) "\n"), "%s", log->text);
        }
        pdnn_device *h = host_of(s);
        int parts = towers ? 2 : 1;
        pdnn_tensor *xt[2], *lt[2];
        for (int t = 0; t < parts; t++) {
            int64_t rows = B / parts;
            pdnn_tensor_desc xd = th_desc(PDNN_NHWC, rows, C, H, H);
            xt[t] = th_upload(h, &xd, xv + t * rows * C * H * H);
            lt[t] = labels_on(h, lab + t * rows, rows);
        }
        pdnn_node feeds[4] = {x[0], l[0], x[1], l[1]};
        pdnn_tensor *fv[4] = {xt[0], lt[0], towers ? xt[1] : NULL, towers ? lt[1] : NULL};
        for (int k = 0; k < 3 && !towers; k++)
            init[k] = read_var(s, g, vars[k], NULL);
        for (int step = 0; step < 4; step++) {
            pdnn_tensor *out = NULL;
            cr_assert_eq(pdnn_session_run(s, feeds, fv, 2 * parts, &train, 1, &out), PDNN_SUCCESS, "%s",
                         pdnn_last_error());
        }
        for (int k = 0; k < 3; k++)
            final[towers][k] = read_var(s, g, vars[k], NULL);
        for (int t = 0; t < parts; t++) {
            pdnn_tensor_release(xt[t]);
            pdnn_tensor_release(lt[t]);
        }
        free(log);
        pdnn_session_destroy(s);
        pdnn_graph_destroy(g);
    }
    const int64_t sizes[3] = {F * C * 9, F, F * (H / 2) * (H / 2) * K};
    for (int k = 0; k < 3; k++) {
        for (int64_t i = 0; i < sizes[k]; i++)
            cr_assert_float_eq(final[1][k][i], final[0][k][i], 1e-5 + 1e-4 * fabs(final[0][k][i]),
                               "variable %d element %lld: towers %g, one device %g", k, (long long)i,
                               (double)final[1][k][i], (double)final[0][k][i]);
        double moved = 0; /* equal because nothing trained would prove nothing */
        for (int64_t i = 0; i < sizes[k]; i++)
            moved += fabs(final[0][k][i] - init[k][i]);
        cr_assert_gt(moved, 1e-3, "variable %d did not move", k);
        free(init[k]);
        free(final[0][k]);
        free(final[1][k]);
    }
}

/* Mul's gradient: with logits = x (alpha w), dL/dw is alpha times dL/dw'
 * of the same network written with w' = alpha w, on every device. */
Test(train_graph, scale_gradient_is_alpha_times_the_upstream_gradient)
{
    enum { N = 3, D = 5, K = 4 };
    const float alpha = -0.75f;
    float xv[N * D], wv[D * K], w2v[D * K];
    const int32_t lab[N] = {1, 3, 0};
    th_fill(xv, N * D, 31);
    th_fill(wv, D * K, 32);
    for (int i = 0; i < D * K; i++)
        w2v[i] = alpha * wv[i];
    pdnn_context *ctx = th_context();
    for (int di = 0; di < pdnn_device_count(ctx); di++) {
        pdnn_device *dev = NULL;
        pdnn_device_info info;
        cr_assert_eq(pdnn_device_get(ctx, di, &dev), PDNN_SUCCESS);
        cr_assert_eq(pdnn_device_get_info(dev, &info), PDNN_SUCCESS);
        float *grad[2];
        for (int v = 0; v < 2; v++) {
            pdnn_graph *g = NULL;
            cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
            pdnn_tensor_desc xd = th_desc(PDNN_NCHW, N, D, 1, 1), wd = th_desc(PDNN_NCHW, D, K, 1, 1);
            pdnn_tensor_desc ld = th_desc(PDNN_LAYOUT_X, N, 1, 1, 1);
            ld.dtype = PDNN_INT32;
            pdnn_node x, l, w, ws, logits, loss, dw;
            cr_assert_eq(pdnn_graph_placeholder(g, "x", info.name, &xd, &x), PDNN_SUCCESS);
            cr_assert_eq(pdnn_graph_placeholder(g, "labels", info.name, &ld, &l), PDNN_SUCCESS);
            cr_assert_eq(pdnn_graph_variable(g, "w", info.name, &wd, PDNN_INIT_DATA, 0, v ? w2v : wv, &w),
                         PDNN_SUCCESS);
            ws = w;
            if (!v)
                cr_assert_eq(pdnn_graph_scale(g, "scaled", info.name, w, alpha, &ws), PDNN_SUCCESS, "%s",
                             pdnn_last_error());
            cr_assert_eq(pdnn_graph_matmul(g, "logits", info.name, x, ws, 0, 0, &logits), PDNN_SUCCESS);
            cr_assert_eq(pdnn_graph_softmax_cross_entropy(g, "loss", info.name, logits, l, &loss), PDNN_SUCCESS);
            cr_assert_eq(pdnn_graph_gradients(g, loss, &w, 1, &dw), PDNN_SUCCESS, "%s", pdnn_last_error());
            pdnn_session_config c;
            pdnn_session_config_init(&c);
            c.context = ctx;
            c.allow_soft_placement = 1; /* CUDA has no Mul kernel: the node moves */
            pdnn_session *s = NULL;
            cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
            pdnn_tensor *xt = th_upload(dev, &xd, xv), *lt = labels_on(dev, lab, N), *out = NULL;
            pdnn_node feeds[2] = {x, l};
            pdnn_tensor *fv[2] = {xt, lt};
            cr_assert_eq(pdnn_session_run(s, feeds, fv, 2, &dw, 1, &out), PDNN_SUCCESS, "%s", pdnn_last_error());
            grad[v] = th_download(out);
            pdnn_tensor_release(out);
            pdnn_tensor_release(xt);
            pdnn_tensor_release(lt);
            pdnn_session_destroy(s);
            pdnn_graph_destroy(g);
        }
        double mag = 0;
        for (int i = 0; i < D * K; i++) {
            cr_assert_float_eq(grad[0][i], alpha * grad[1][i], 1e-6, "%s dw[%d]: %g, alpha * %g", info.name, i,
                               (double)grad[0][i], (double)grad[1][i]);
            mag += fabs(grad[1][i]);
        }
        cr_assert_gt(mag, 1e-3, "the gradient is zero: the test would prove nothing");
        free(grad[0]);
        free(grad[1]);
    }
    pdnn_context_destroy(ctx);
}

/* Mul and Add of two tensors (pdnn_graph_binary): by the chain rule, with
 * w2 = w op m, dL/dw = m dL/dw2 (mul) or dL/dw2 (add) and dL/dm = w dL/dw2
 * or dL/dw2, where dL/dw2 comes from a graph that takes w2 as its
 * variable; m broadcast along the rows (one factor per column) for the
 * third case, whose dL/dm is the sum over the rows. Every device. */
Test(train_graph, binary_gradients_follow_the_chain_rule)
{
    enum { N = 3, D = 5, K = 4 };
    float xv[N * D], wv[D * K], mv[D * K];
    const int32_t lab[N] = {1, 3, 0};
    th_fill(xv, N * D, 41);
    th_fill(wv, D * K, 42);
    th_fill(mv, D * K, 43);
    pdnn_context *ctx = th_context();
    for (int di = 0; di < pdnn_device_count(ctx); di++) {
        pdnn_device *dev = NULL;
        pdnn_device_info info;
        cr_assert_eq(pdnn_device_get(ctx, di, &dev), PDNN_SUCCESS);
        cr_assert_eq(pdnn_device_get_info(dev, &info), PDNN_SUCCESS);
        for (int kase = 0; kase < 3; kase++) {
            const pdnn_binary_op op = kase == 1 ? PDNN_BINARY_ADD : PDNN_BINARY_MUL;
            const int bcast = kase == 2;
            float w2v[D * K];
            for (int i = 0; i < D * K; i++) {
                const float m = mv[bcast ? i % K : i];
                w2v[i] = op == PDNN_BINARY_MUL ? wv[i] * m : wv[i] + m;
            }
            float *grad[3] = {NULL, NULL, NULL}; /* dw, dm (binary graph), dw2 */
            for (int v = 0; v < 2; v++) {
                pdnn_graph *g = NULL;
                cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
                pdnn_tensor_desc xd = th_desc(PDNN_NCHW, N, D, 1, 1), wd = th_desc(PDNN_NCHW, D, K, 1, 1);
                pdnn_tensor_desc md = th_desc(PDNN_NCHW, bcast ? 1 : D, K, 1, 1);
                pdnn_tensor_desc ld = th_desc(PDNN_LAYOUT_X, N, 1, 1, 1);
                ld.dtype = PDNN_INT32;
                pdnn_node x, l, w, m, ws, logits, loss, d[2];
                cr_assert_eq(pdnn_graph_placeholder(g, "x", info.name, &xd, &x), PDNN_SUCCESS);
                cr_assert_eq(pdnn_graph_placeholder(g, "labels", info.name, &ld, &l), PDNN_SUCCESS);
                cr_assert_eq(pdnn_graph_variable(g, "w", info.name, &wd, PDNN_INIT_DATA, 0, v ? w2v : wv, &w),
                             PDNN_SUCCESS);
                ws = w;
                if (!v) {
                    cr_assert_eq(pdnn_graph_variable(g, "m", info.name, &md, PDNN_INIT_DATA, 0, mv, &m), PDNN_SUCCESS);
                    cr_assert_eq(pdnn_graph_binary(g, "wm", info.name, w, m, op, &ws), PDNN_SUCCESS, "%s",
                                 pdnn_last_error());
                }
                cr_assert_eq(pdnn_graph_matmul(g, "logits", info.name, x, ws, 0, 0, &logits), PDNN_SUCCESS);
                cr_assert_eq(pdnn_graph_softmax_cross_entropy(g, "loss", info.name, logits, l, &loss), PDNN_SUCCESS);
                pdnn_node wrt[2] = {w, v ? w : m};
                const int nw = !v ? 2 : 1;
                cr_assert_eq(pdnn_graph_gradients(g, loss, wrt, nw, d), PDNN_SUCCESS, "%s", pdnn_last_error());
                pdnn_session_config c;
                pdnn_session_config_init(&c);
                c.context = ctx;
                c.allow_soft_placement = 1; /* the cross-entropy has no CUDA kernel */
                pdnn_session *s = NULL;
                cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
                pdnn_tensor *xt = th_upload(dev, &xd, xv), *lt = labels_on(dev, lab, N), *out[2] = {NULL, NULL};
                pdnn_node feeds[2] = {x, l};
                pdnn_tensor *fv[2] = {xt, lt};
                cr_assert_eq(pdnn_session_run(s, feeds, fv, 2, d, nw, out), PDNN_SUCCESS, "%s", pdnn_last_error());
                for (int k = 0; k < nw; k++) {
                    grad[v ? 2 : k] = th_download(out[k]);
                    pdnn_tensor_release(out[k]);
                }
                pdnn_tensor_release(xt);
                pdnn_tensor_release(lt);
                pdnn_session_destroy(s);
                pdnn_graph_destroy(g);
            }
            double mag = 0, want_sum[K] = {0};
            for (int i = 0; i < D * K; i++) {
                const float m = mv[bcast ? i % K : i], g2 = grad[2][i];
                const float want_w = op == PDNN_BINARY_MUL ? m * g2 : g2;
                cr_assert_float_eq(grad[0][i], want_w, 1e-6, "%s case %d dw[%d]: %g, want %g", info.name, kase, i,
                                   (double)grad[0][i], (double)want_w);
                if (bcast)
                    want_sum[i % K] += (double)wv[i] * g2;
                if (grad[1] && !bcast) {
                    const float want_m = op == PDNN_BINARY_MUL ? wv[i] * g2 : g2;
                    cr_assert_float_eq(grad[1][i], want_m, 1e-6, "%s case %d dm[%d]: %g, want %g", info.name, kase, i,
                                       (double)grad[1][i], (double)want_m);
                }
                mag += fabs(g2);
            }
            cr_assert_gt(mag, 1e-3, "the gradient is zero: the test would prove nothing");
            for (int k = 0; k < K && bcast; k++) /* the broadcast m's: summed over the rows it repeats along */
                cr_assert_float_eq(grad[1][k], want_sum[k], 1e-5, "%s dm[%d] (broadcast): %g, want %g", info.name, k,
                                   (double)grad[1][k], want_sum[k]);
            for (int k = 0; k < 3; k++)
                free(grad[k]);
        }
    }
    pdnn_context_destroy(ctx);
}

/* Transpose's gradient is the transform back: dw (NCHW) holds dt (NHWC)
 * element for element, on every device. */
Test(train_graph, transpose_gradient_is_the_transform_back)
{
    enum { N = 2, C = 3, H = 2, W = 2 };
    float wv[N * C * H * W];
    const int32_t lab[N] = {5, 11};
    th_fill(wv, N * C * H * W, 41);
    pdnn_context *ctx = th_context();
    for (int di = 0; di < pdnn_device_count(ctx); di++) {
        pdnn_device *dev = NULL;
        pdnn_device_info info;
        cr_assert_eq(pdnn_device_get(ctx, di, &dev), PDNN_SUCCESS);
        cr_assert_eq(pdnn_device_get_info(dev, &info), PDNN_SUCCESS);
        pdnn_graph *g = NULL;
        cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
        pdnn_tensor_desc wd = th_desc(PDNN_NCHW, N, C, H, W), ld = th_desc(PDNN_LAYOUT_X, N, 1, 1, 1);
        ld.dtype = PDNN_INT32;
        const int64_t md[4] = {N, C * H * W, 1, 1};
        pdnn_node l, w, t, logits, loss, grads[2];
        cr_assert_eq(pdnn_graph_placeholder(g, "labels", info.name, &ld, &l), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_variable(g, "w", info.name, &wd, PDNN_INIT_DATA, 0, wv, &w), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_transform(g, "t", info.name, w, PDNN_NHWC, &t), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_str_eq(pdnn_graph_node_op(g, t), "Transpose");
        cr_assert_eq(pdnn_graph_reshape(g, "logits", info.name, t, md, &logits), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_softmax_cross_entropy(g, "loss", info.name, logits, l, &loss), PDNN_SUCCESS);
        pdnn_node xs[2] = {w, t};
        cr_assert_eq(pdnn_graph_gradients(g, loss, xs, 2, grads), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_session_config c;
        pdnn_session_config_init(&c);
        c.context = ctx;
        pdnn_session *s = NULL;
        cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_tensor *lt = labels_on(dev, lab, N), *out[2] = {NULL, NULL};
        cr_assert_eq(pdnn_session_run(s, &l, &lt, 1, grads, 2, out), PDNN_SUCCESS, "%s", pdnn_last_error());
        float *dw = th_download(out[0]), *dt = th_download(out[1]);
        double mag = 0;
        for (int n = 0; n < N; n++)
            for (int ch = 0; ch < C; ch++)
                for (int h = 0; h < H; h++)
                    for (int x = 0; x < W; x++) {
                        const float a = dw[((n * C + ch) * H + h) * W + x], b = dt[((n * H + h) * W + x) * C + ch];
                        cr_assert_eq(a, b, "%s dw[%d,%d,%d,%d] = %g but dt there is %g", info.name, n, ch, h, x,
                                     (double)a, (double)b);
                        mag += fabs(a);
                    }
        cr_assert_gt(mag, 1e-3, "the gradient is zero: the test would prove nothing");
        free(dw);
        free(dt);
        pdnn_tensor_release(out[0]);
        pdnn_tensor_release(out[1]);
        pdnn_tensor_release(lt);
        pdnn_session_destroy(s);
        pdnn_graph_destroy(g);
    }
    pdnn_context_destroy(ctx);
}

/* A convolution whose relu is capped (ReLU6, as ONNX import fuses Clip):
 * the gradient of sum(y) with respect to w is the filter gradient of the
 * mask 0 < y < 6, so outputs at the cap pass nothing back. */
Test(train_graph, gradient_of_a_capped_relu_masks_both_ends)
{
    pdnn_graph *g = NULL;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, 2, 5, 5), wd = th_desc(PDNN_OIHW, 3, 2, 3, 3);
    float wv[54], xv[50];
    th_fill(wv, 54, 61);
    th_fill(xv, 50, 62);
    for (int i = 0; i < 50; i++)
        xv[i] *= 8.0f; /* outputs on both sides of the cap */
    pdnn_node x, w, y, dw;
    cr_assert_eq(pdnn_graph_placeholder(g, "x", "/cpu:0", &xd, &x), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_variable(g, "w", "/cpu:0", &wd, PDNN_INIT_DATA, 0, wv, &w), PDNN_SUCCESS);
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.relu = 1;
    p.relu_cap = 6.0f;
    cr_assert_eq(pdnn_graph_conv2d(g, "conv6", "/cpu:0", x, w, -1, &p, &y), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_gradients(g, y, &w, 1, &dw), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_str_eq(pdnn_graph_node_op(g, dw - 1), "ClipGrad");
    pdnn_session *s = session(g, NULL);
    pdnn_device *h = host_of(s);
    pdnn_tensor *xt = th_upload(h, &xd, xv), *out[2] = {NULL, NULL};
    pdnn_node fetch[2] = {y, dw};
    cr_assert_eq(pdnn_session_run(s, &x, &xt, 1, fetch, 2, out), PDNN_SUCCESS, "%s", pdnn_last_error());
    float yv[27], mv[27], got[54], want[54];
    cr_assert_eq(pdnn_tensor_read(out[0], yv, sizeof yv), PDNN_SUCCESS);
    int low = 0, high = 0;
    for (int i = 0; i < 27; i++) {
        mv[i] = yv[i] > 0.0f && yv[i] < 6.0f ? 1.0f : 0.0f;
        low += yv[i] == 0.0f;
        high += yv[i] == 6.0f;
    }
    cr_assert(low > 0 && high > 0, "the input reaches neither end of the cap (%d at 0, %d at 6)", low, high);
    pdnn_tensor_desc yd = th_desc(PDNN_NCHW, 1, 3, 3, 3);
    pdnn_tensor *mt = th_upload(h, &yd, mv), *dt = NULL;
    cr_assert_eq(pdnn_tensor_create(h, &wd, &dt), PDNN_SUCCESS);
    pdnn_conv2d_params q;
    pdnn_conv2d_params_init(&q);
    cr_assert_eq(pdnn_conv2d_backward_filter(&q, xt, mt, dt), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_tensor_read(dt, want, sizeof want), PDNN_SUCCESS);
    cr_assert_eq(pdnn_tensor_read(out[1], got, sizeof got), PDNN_SUCCESS);
    for (int i = 0; i < 54; i++)
        cr_assert_float_eq(got[i], want[i], 1e-4f * (1.0f + fabsf(want[i])), "dw[%d] %g, want %g", i, (double)got[i],
                           (double)want[i]);
    p.relu_cap = NAN;
    cr_assert_eq(pdnn_graph_conv2d(g, "bad", NULL, x, w, -1, &p, &y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "relu_cap"), "%s", pdnn_last_error());
    for (int i = 0; i < 2; i++)
        pdnn_tensor_release(out[i]);
    pdnn_tensor_release(xt);
    pdnn_tensor_release(mt);
    pdnn_tensor_release(dt);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}
