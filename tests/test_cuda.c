/* The CUDA backend on a device: every op it has matches the host
 * reference. Without a CUDA device every test skips, and the suite
 * reports SKIP (what needs no device is in test_device and
 * test_pool_math). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "helpers.h"
#include "polydnn.h"
#ifdef PDNN_HAVE_CUDA
#include "backend.h" /* white-box: the backend's registry and plans */
#endif

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parity with the host ---------------------------------------------- */

typedef struct pair {
    pdnn_device *host, *cuda;
} pair;

/* The same tensor (same layout and bytes) on both devices; data NULL
 * fills it with values from seed. */
static void upload2(const pair *d, pdnn_tensor_desc desc, uint32_t seed, pdnn_tensor *t[2])
{
    int64_t n = pdnn_tensor_desc_elements(&desc);
    float *v = malloc(sizeof(float) * (size_t)n);
    cr_assert_not_null(v);
    th_fill(v, n, seed);
    t[0] = th_upload(d->host, &desc, v);
    t[1] = th_upload(d->cuda, &desc, v);
    free(v);
}

static void release2(pdnn_tensor *t[2])
{
    pdnn_tensor_release(t[0]);
    pdnn_tensor_release(t[1]);
}

/* Compares the CUDA result t[1] with the host's t[0], 1e-4 relative. */
static void same2(pdnn_tensor *t[2], const char *what)
{
    pdnn_tensor_desc desc;
    cr_assert_eq(pdnn_tensor_get_desc(t[0], &desc), PDNN_SUCCESS);
    int64_t n = pdnn_tensor_desc_elements(&desc);
    float *want = th_download(t[0]), *got = th_download(t[1]);
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - (double)want[i]);
        if (isnan(want[i]) ? !isnan(got[i]) : !(e <= 1e-4 * fmax(1.0, fabs((double)want[i]))))
            cr_assert_fail("%s: element %lld is %.7g on CUDA, %.7g on the host", what, (long long)i,
                           (double)got[i], (double)want[i]);
    }
    free(want);
    free(got);
}

static pair cuda_pair(pdnn_context *ctx)
{
    pair d = {th_find_backend(ctx, "host"), th_find_backend(ctx, "cuda")};
    cr_assert_not_null(d.host);
    if (!d.cuda) {
        pdnn_context_destroy(ctx);
        cr_skip_test("no CUDA device");
    }
    return d;
}

typedef struct conv_case {
    int64_t n, c, h, w, k, r, s;
    int sh, sw, dh, dw, pt, pb, pl, pr, groups, bias, relu;
} conv_case;


typedef struct pool_case {
    int64_t n, c, h, w;
    int wh, ww, sh, sw, pt, pb, pl, pr, ceil;
} pool_case;


Test(cuda, elementwise_softmax_matmul_match_host)
{
    pdnn_context *ctx = th_context();
    pair d = cuda_pair(ctx);
    for (int li = 0; li < 2; li++) {
        pdnn_tensor_desc desc = th_desc(li ? PDNN_NHWC : PDNN_NCHW, 2, 3, 4, 5);
        pdnn_tensor_desc bdesc = th_desc(PDNN_LAYOUT_X, 3, 1, 1, 1);
        pdnn_tensor *a[2], *b[2], *y[2], *bias[2];
        upload2(&d, desc, 1, a);
        upload2(&d, desc, 2, b);
        upload2(&d, desc, 3, y);
        upload2(&d, bdesc, 4, bias);
        for (int i = 0; i < 2; i++) {
            cr_assert_eq(pdnn_add(a[i], b[i], y[i]), PDNN_SUCCESS, "%s", pdnn_last_error());
            cr_assert_eq(pdnn_add(y[i], b[i], b[i]), PDNN_SUCCESS, "%s", pdnn_last_error()); /* y aliases b */
            cr_assert_eq(pdnn_add(a[i], a[i], a[i]), PDNN_SUCCESS, "%s", pdnn_last_error()); /* all alias */
        }
        same2(y, "add");
        same2(b, "add into b");
        same2(a, "add a+a in place");
        for (int relu = 0; relu < 2; relu++) {
            for (int i = 0; i < 2; i++) {
                cr_assert_eq(pdnn_bias_add(a[i], bias[i], y[i]), PDNN_SUCCESS, "%s", pdnn_last_error());
                cr_assert_eq(pdnn_bias_add(b[i], bias[i], b[i]), PDNN_SUCCESS, "%s", pdnn_last_error());
                if (relu)
                    cr_assert_eq(pdnn_relu(y[i], y[i]), PDNN_SUCCESS, "%s", pdnn_last_error());
            }
            same2(y, relu ? "bias_add + relu" : "bias_add");
            same2(b, "bias_add in place");
        }
        for (int i = 0; i < 2; i++)
            cr_assert_eq(pdnn_softmax(a[i], y[i]), PDNN_SUCCESS, "%s", pdnn_last_error());
        same2(y, "softmax");
        release2(a);
        release2(b);
        release2(y);
        release2(bias);
    }
    /* relu keeps NaN */
    pdnn_tensor_desc vd = th_desc(PDNN_NCHW, 1, 7, 1, 1);
    const float v[7] = {-1, 0, 2, NAN, -0.5f, 3, -INFINITY};
    pdnn_tensor *r[2] = {th_upload(d.host, &vd, v), th_upload(d.cuda, &vd, v)};
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pdnn_relu(r[i], r[i]), PDNN_SUCCESS, "%s", pdnn_last_error());
    same2(r, "relu with NaN");
    release2(r);
    /* matmul, every transpose combination: c (5 x 7) = op(a) op(b), k = 3 */
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            pdnn_tensor_desc ad = ta ? th_desc(PDNN_NCHW, 3, 5, 1, 1) : th_desc(PDNN_NCHW, 5, 3, 1, 1);
            pdnn_tensor_desc bd = tb ? th_desc(PDNN_NCHW, 7, 3, 1, 1) : th_desc(PDNN_NCHW, 3, 7, 1, 1);
            pdnn_tensor_desc cd = th_desc(PDNN_NCHW, 5, 7, 1, 1);
            pdnn_tensor *ma[2], *mb[2], *mc[2];
            upload2(&d, ad, 5, ma);
            upload2(&d, bd, 6, mb);
            upload2(&d, cd, 0, mc);
            for (int i = 0; i < 2; i++)
                cr_assert_eq(pdnn_matmul(ma[i], mb[i], ta, tb, mc[i]), PDNN_SUCCESS, "%s", pdnn_last_error());
            char what[48];
            snprintf(what, sizeof what, "matmul trans_a %d trans_b %d", ta, tb);
            same2(mc, what);
            release2(ma);
            release2(mb);
            release2(mc);
        }
    pdnn_context_destroy(ctx);
}

/* ---- backward ---------------------------------------------------------- */

/* With a device: conv backward data, filter and bias and pool backward
 * match the host across layouts, filter layouts, groups, dilation and
 * asymmetric padding. */
Test(cuda, backward_matches_host)
{
    pdnn_context *ctx = th_context();
    pair d = cuda_pair(ctx);
    static const conv_case cases[] = {
        {2, 4, 9, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0},
        {2, 4, 9, 8, 6, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0, 2, 0, 0}, /* asymmetric pad, groups */
        {1, 3, 10, 9, 4, 3, 2, 1, 2, 2, 1, 2, 2, 0, 1, 1, 0, 0}, /* dilation */
    };
    static const pdnn_layout wls[] = {PDNN_OIHW, PDNN_OHWI, PDNN_HWIO};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int li = 0; li < 2; li++)
            for (int wi = 0; wi < 3; wi++) {
                const conv_case *k = &cases[ci];
                pdnn_conv2d_params p;
                pdnn_conv2d_params_init(&p);
                p.stride_h = k->sh, p.stride_w = k->sw, p.dilation_h = k->dh, p.dilation_w = k->dw;
                p.pad_top = k->pt, p.pad_bottom = k->pb, p.pad_left = k->pl, p.pad_right = k->pr;
                p.groups = k->groups;
                const int64_t oh = (k->h + k->pt + k->pb - (k->r - 1) * k->dh - 1) / k->sh + 1;
                const int64_t ow = (k->w + k->pl + k->pr - (k->s - 1) * k->dw - 1) / k->sw + 1;
                const pdnn_layout al = li ? PDNN_NHWC : PDNN_NCHW;
                const int64_t cg = k->c / k->groups;
                pdnn_tensor_desc xd = th_desc(al, k->n, k->c, k->h, k->w);
                pdnn_tensor_desc wd = th_desc(wls[wi], k->k, cg, k->r, k->s); /* dims are logical: OIHW */
                pdnn_tensor_desc yd = th_desc(al, k->n, k->k, oh, ow);
                pdnn_tensor_desc bd = th_desc(PDNN_LAYOUT_X, k->k, 1, 1, 1);
                pdnn_tensor *x[2], *w[2], *dy[2], *dx[2], *dw[2], *db[2];
                upload2(&d, xd, 11, x);
                upload2(&d, wd, 12, w);
                upload2(&d, yd, 13, dy);
                upload2(&d, xd, 0, dx);
                upload2(&d, wd, 0, dw);
                upload2(&d, bd, 0, db);
                for (int i = 0; i < 2; i++) {
                    cr_assert_eq(pdnn_conv2d_backward_data(&p, dy[i], w[i], dx[i]), PDNN_SUCCESS, "%s",
                                 pdnn_last_error());
                    cr_assert_eq(pdnn_conv2d_backward_filter(&p, x[i], dy[i], dw[i]), PDNN_SUCCESS, "%s",
                                 pdnn_last_error());
                    cr_assert_eq(pdnn_conv2d_backward_bias(dy[i], db[i]), PDNN_SUCCESS, "%s", pdnn_last_error());
                }
                char what[96];
                snprintf(what, sizeof what, "case %zu %s %s dx", ci, pdnn_layout_name(al),
                         pdnn_layout_name(wls[wi]));
                same2(dx, what);
                snprintf(what, sizeof what, "case %zu %s %s dw", ci, pdnn_layout_name(al),
                         pdnn_layout_name(wls[wi]));
                same2(dw, what);
                same2(db, "db");
                release2(x);
                release2(w);
                release2(dy);
                release2(dx);
                release2(dw);
                release2(db);
            }
    /* pooling backward: max and both averages, symmetric padding */
    static const pdnn_pool_mode modes[] = {PDNN_POOL_MAX, PDNN_POOL_AVG_INCLUDE_PADDING,
                                           PDNN_POOL_AVG_EXCLUDE_PADDING};
    for (int li = 0; li < 2; li++)
        for (int m = 0; m < 3; m++) {
            pdnn_pool2d_params pp;
            pdnn_pool2d_params_init(&pp);
            pp.mode = modes[m];
            pp.window_h = pp.window_w = 3;
            pp.pad_top = pp.pad_bottom = pp.pad_left = pp.pad_right = 1;
            const pdnn_layout al = li ? PDNN_NHWC : PDNN_NCHW;
            pdnn_tensor_desc xd = th_desc(al, 2, 3, 9, 9), yd = th_desc(al, 2, 3, 5, 5);
            pdnn_tensor *x[2], *dy[2], *dx[2];
            upload2(&d, xd, 21, x);
            upload2(&d, yd, 22, dy);
            upload2(&d, xd, 0, dx);
            for (int i = 0; i < 2; i++)
                cr_assert_eq(pdnn_pool2d_backward(&pp, x[i], dy[i], dx[i]), PDNN_SUCCESS, "%s", pdnn_last_error());
            char what[64];
            snprintf(what, sizeof what, "pool backward mode %d %s", (int)modes[m], pdnn_layout_name(al));
            same2(dx, what);
            release2(x);
            release2(dy);
            release2(dx);
        }
    pdnn_context_destroy(ctx);
}

/* CUDA refuses Adam at plan time (no cuDNN or cuBLAS form). The placer
 * asks the plans: a variable pinned to the CUDA device, with an Adam
 * update, is an error naming allow_soft_placement without it, and with it
 * the variable, its slots and its update move together to a device that
 * runs Adam, and the step trains. */
Test(cuda, adam_moves_its_pinned_variable_off_cuda_under_soft_placement)
{
    pdnn_context *ctx = NULL;
    cr_assert_eq(pdnn_context_create(NULL, &ctx), PDNN_SUCCESS, "%s", pdnn_last_error());
    pair d = cuda_pair(ctx);
    pdnn_device_info info;
    cr_assert_eq(pdnn_device_get_info(d.cuda, &info), PDNN_SUCCESS);
    pdnn_graph *g = NULL;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 4, 3, 1, 1), wd = th_desc(PDNN_NCHW, 3, 2, 1, 1);
    pdnn_tensor_desc ld = th_desc(PDNN_LAYOUT_X, 4, 1, 1, 1);
    ld.dtype = PDNN_INT32;
    pdnn_node x, lab, w, logits, loss, grad, train;
    cr_assert_eq(pdnn_graph_placeholder(g, "x", info.name, &xd, &x), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_placeholder(g, "labels", "/cpu:0", &ld, &lab), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_variable(g, "w", info.name, &wd, PDNN_INIT_GLOROT_UNIFORM, 3, NULL, &w), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_matmul(g, "logits", info.name, x, w, 0, 0, &logits), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_softmax_cross_entropy(g, "loss", "/cpu:0", logits, lab, &loss), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_gradients(g, loss, &w, 1, &grad), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_optimizer_params p;
    pdnn_optimizer_params_init(&p, PDNN_OPTIMIZER_ADAM);
    cr_assert_eq(pdnn_graph_apply_gradients(g, NULL, &p, &w, &grad, 1, &train), PDNN_SUCCESS, "%s",
                 pdnn_last_error());

    pdnn_session_config c;
    pdnn_session_config_init(&c);
    c.context = ctx;
    pdnn_session *s = NULL;
    cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "allow_soft_placement") && strstr(pdnn_last_error(), "w"), "%s",
              pdnn_last_error());
    c.allow_soft_placement = 1;
    cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
    const char *group[] = {"w", "w/Adam", "w/Adam_1", "Adam/update_w"};
    pdnn_device *dw = NULL;
    for (int i = 0; i < 4; i++) {
        pdnn_node n;
        pdnn_device *dev = NULL;
        cr_assert_eq(pdnn_graph_find(g, group[i], &n), PDNN_SUCCESS, "%s", group[i]);
        cr_assert_eq(pdnn_session_node_device(s, n, &dev), PDNN_SUCCESS);
        cr_assert(dev != d.cuda, "%s stayed on the CUDA device", group[i]);
        if (i == 0)
            dw = dev;
        cr_assert(dev == dw, "%s is not on w's device", group[i]);
    }
    float xs[12], before[6], after[6];
    int32_t ls[4] = {0, 1, 1, 0};
    th_fill(xs, 12, 5);
    pdnn_tensor *xt = NULL, *lt = NULL, *out = NULL;
    cr_assert_eq(pdnn_tensor_create(d.cuda, &xd, &xt), PDNN_SUCCESS);
    cr_assert_eq(pdnn_tensor_write(xt, xs, sizeof xs), PDNN_SUCCESS);
    cr_assert_eq(pdnn_tensor_create(d.host, &ld, &lt), PDNN_SUCCESS);
    cr_assert_eq(pdnn_tensor_write(lt, ls, sizeof ls), PDNN_SUCCESS);
    cr_assert_eq(pdnn_session_variable_read(s, w, before, sizeof before), PDNN_SUCCESS);
    pdnn_node feeds[2] = {x, lab};
    pdnn_tensor *vals[2] = {xt, lt};
    cr_assert_eq(pdnn_session_run(s, feeds, vals, 2, &train, 1, &out), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_session_variable_read(s, w, after, sizeof after), PDNN_SUCCESS);
    int moved = 0;
    for (int i = 0; i < 6; i++)
        moved += before[i] != after[i];
    cr_assert_eq(moved, 6, "the Adam step changed %d of 6 weights", moved);
    pdnn_tensor_release(xt);
    pdnn_tensor_release(lt);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
    pdnn_context_destroy(ctx);
}

/* enable_tensor_float_32_execution on a CUDA matmul: off, float32 within
 * float32's bound of the exact product; on (TensorFlow's default), within
 * TF32's: its inputs rounded to 10 fraction bits, about 2^-10 of each
 * element's sum of |terms| (4e-3 leaves 4x). Either way the same op runs;
 * only the math mode differs. */
static void tf32_matmul_within(int tf32, double tol)
{
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = 1;
    o.enable_tensor_float_32_execution = tf32;
    char *saved = NULL;
    const char *var = "POLYDNN_ENABLE_TENSOR_FLOAT_32_EXECUTION", *cur = getenv(var);
    if (cur)
        saved = strdup(cur); /* make check sets it false: the option decides here */
    unsetenv(var);
    pdnn_context *ctx = NULL;
    cr_assert_eq(pdnn_context_create(&o, &ctx), PDNN_SUCCESS, "%s", pdnn_last_error());
    if (saved) {
        setenv(var, saved, 1);
        free(saved);
    }
    cr_assert_eq(pdnn_context_tensor_float_32_enabled(ctx), tf32);
    pair d = cuda_pair(ctx);
    enum { M = 48, K = 512, N = 40 };
    pdnn_tensor_desc ad = {PDNN_FLOAT32, PDNN_ND, {M, K}, 2}, bd = {PDNN_FLOAT32, PDNN_ND, {K, N}, 2};
    pdnn_tensor_desc cd = {PDNN_FLOAT32, PDNN_ND, {M, N}, 2};
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
    cr_assert(a && b);
    th_fill(a, M * K, 43u);
    th_fill(b, K * N, 44u);
    pdnn_tensor *ta = th_upload(d.cuda, &ad, a), *tb = th_upload(d.cuda, &bd, b), *tc = th_upload(d.cuda, &cd, NULL);
    cr_assert_eq(pdnn_matmul(ta, tb, 0, 0, tc), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *c = th_download(tc);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                s += (double)a[i * K + k] * b[k * N + j];
                mag += fabs((double)a[i * K + k] * b[k * N + j]);
            }
            cr_assert(fabs(c[i * N + j] - s) <= tol * mag, "TF32 %s: c[%d,%d] is %.9g, exactly %.9g (sum of |terms| %g)",
                      tf32 ? "on" : "off", i, j, (double)c[i * N + j], s, mag);
        }
    free(a);
    free(b);
    free(c);
    pdnn_tensor_release(ta);
    pdnn_tensor_release(tb);
    pdnn_tensor_release(tc);
    pdnn_context_destroy(ctx);
}

Test(cuda, matmul_follows_the_tensor_float_32_option)
{
    tf32_matmul_within(0, 1e-5);
    tf32_matmul_within(1, 4e-3);
}
