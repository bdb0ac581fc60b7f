/* Mixed precision in the graph (issue 43): Cast nodes and their
 * gradient, node dtypes inferred and mixed ones refused, a session's
 * buffers and live bytes by dtype, an op without a reduced path kept in
 * float32 with casts around it (and logged), Keras's policy (casts once
 * per value, float32 for the loss), dynamic loss scaling (growth, the
 * skipped step, the scale's floor). */
#include "core/half.h"
#include "helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OK(call) cr_assert_eq((call), PDNN_SUCCESS, "%s", pdnn_last_error())

static pdnn_session *session(pdnn_graph *g, void (*log)(void *, const char *), void *user)
{
    pdnn_session_config cfg;
    pdnn_session_config_init(&cfg);
    setenv("POLYDNN_BACKEND", "host", 1); /* the host's reference: the contract */
    cfg.log = log;
    cfg.log_user = user;
    pdnn_session *s = NULL;
    OK(pdnn_session_create(g, &cfg, &s));
    return s;
}

/* Runs s feeding x (float32 values of the placeholder's dtype) and
 * fetching out, widened to float32 into y (n values). */
static void run1(pdnn_session *s, pdnn_node ph, const pdnn_tensor_desc *pd, const float *x, pdnn_node out, float *y,
                 int64_t n)
{
    pdnn_device *host = NULL;
    OK(pdnn_device_get(pdnn_session_context(s), 0, &host));
    pdnn_tensor *t = NULL, *v = NULL;
    OK(pdnn_tensor_create(host, pd, &t));
    const size_t es = pdnn__dtype_size(pd->dtype), m = (size_t)pdnn_tensor_desc_elements(pd);
    void *raw = malloc(m * 4);
    pdnn__from_f32(pd->dtype, x, raw, m);
    OK(pdnn_tensor_write(t, raw, m * es));
    OK(pdnn_session_run(s, &ph, &t, 1, &out, 1, &v));
    pdnn_tensor_desc vd;
    pdnn_tensor_get_desc(v, &vd);
    cr_assert_eq(pdnn_tensor_desc_elements(&vd), n);
    void *back = malloc((size_t)n * 4);
    OK(pdnn_tensor_read(v, back, (size_t)n * pdnn__dtype_size(vd.dtype)));
    pdnn__to_f32(vd.dtype, back, y, (size_t)n);
    free(raw);
    free(back);
    pdnn_tensor_release(t);
    pdnn_tensor_release(v);
}

Test(graph_precision, cast_rounds_and_widens)
{
    pdnn_graph *g = NULL;
    OK(pdnn_graph_create(&g));
    pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_ND, {5}, 1};
    pdnn_node x, h, b, back, bad;
    OK(pdnn_graph_placeholder(g, "x", NULL, &d, &x));
    OK(pdnn_graph_cast(g, "h", NULL, x, PDNN_FLOAT16, &h));
    OK(pdnn_graph_cast(g, "b", NULL, h, PDNN_BFLOAT16, &b));
    OK(pdnn_graph_cast(g, NULL, NULL, b, PDNN_FLOAT32, &back));
    cr_assert_str_eq(pdnn_graph_node_op(g, h), "Cast");
    pdnn_tensor_desc hd;
    OK(pdnn_graph_node_desc(g, h, &hd));
    cr_assert_eq(hd.dtype, PDNN_FLOAT16);
    cr_assert_eq(pdnn_tensor_desc_bytes(&hd), 10);
    /* int32 is no Cast's */
    cr_assert_eq(pdnn_graph_cast(g, NULL, NULL, x, PDNN_INT32, &bad), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "to an unknown dtype") || strstr(pdnn_last_error(), "int32"), "%s",
              pdnn_last_error());
    pdnn_session *s = session(g, NULL, NULL);
    const float v[5] = {0.1f, 70000.0f, -1e-8f, 3.14159265f, 1.0f / 3.0f};
    float y[5], z[5];
    run1(s, x, &d, v, h, y, 5);
    run1(s, x, &d, v, back, z, 5);
    for (int i = 0; i < 5; i++) {
        const float want = pdnn__f16_to_f32(pdnn__f32_to_f16(v[i]));
        cr_assert(memcmp(&y[i], &want, 4) == 0, "%d: %g, want %g", i, (double)y[i], (double)want);
        const float want2 = pdnn__bf16_to_f32(pdnn__f32_to_bf16(want));
        cr_assert(memcmp(&z[i], &want2, 4) == 0, "%d: %g, want %g", i, (double)z[i], (double)want2);
    }
    cr_assert(isinf(y[1]));
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

Test(graph_precision, dtypes_inferred_and_mixed_refused)
{
    pdnn_graph *g = NULL;
    OK(pdnn_graph_create(&g));
    pdnn_tensor_desc d = {PDNN_FLOAT16, PDNN_NCHW, {2, 3, 4, 4}, 4}, d32 = d;
    d32.dtype = PDNN_FLOAT32;
    pdnn_node a, b, r, p, bad;
    OK(pdnn_graph_placeholder(g, "a", NULL, &d, &a));
    OK(pdnn_graph_placeholder(g, "b", NULL, &d32, &b));
    OK(pdnn_graph_relu(g, "r", NULL, a, &r));
    pdnn_pool2d_params pp;
    pdnn_pool2d_params_init(&pp);
    OK(pdnn_graph_pool2d(g, "p", NULL, r, &pp, &p));
    pdnn_tensor_desc od;
    OK(pdnn_graph_node_desc(g, p, &od));
    cr_assert_eq(od.dtype, PDNN_FLOAT16);
    const int n = pdnn_graph_node_count(g);
    cr_assert_eq(pdnn_graph_add(g, "mixed", NULL, a, b, &bad), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "'a') is float16") && strstr(pdnn_last_error(), "'b') is float32"), "%s",
              pdnn_last_error());
    cr_assert_eq(pdnn_graph_node_count(g), n);
    /* the loss takes float32 (no policy casts here) */
    const pdnn_tensor_desc ld = {PDNN_INT32, PDNN_LAYOUT_X, {2, 1, 1, 1}, 0};
    const pdnn_tensor_desc md = {PDNN_FLOAT16, PDNN_NCHW, {2, 3, 1, 1}, 4};
    pdnn_node lab, m;
    OK(pdnn_graph_placeholder(g, "lab", NULL, &ld, &lab));
    OK(pdnn_graph_placeholder(g, "m", NULL, &md, &m));
    cr_assert_eq(pdnn_graph_softmax_cross_entropy(g, NULL, NULL, m, lab, &bad), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "is float16; it takes float32"), "%s", pdnn_last_error());
    pdnn_graph_destroy(g);
}

typedef struct {
    int lines;
    char last[1024];
} log_seen;

static void keep_log(void *user, const char *line)
{
    log_seen *l = user;
    if (strstr(line, "float32 with casts around it")) {
        l->lines++;
        snprintf(l->last, sizeof l->last, "%s", line);
    }
}

/* bias_add and relu are float32 only on the host: in float16 they run on
 * widened copies, rounded once, and the log says so once per node. */
Test(graph_precision, float32_only_op_runs_with_casts_around_it)
{
    pdnn_graph *g = NULL;
    OK(pdnn_graph_create(&g));
    pdnn_tensor_desc d = {PDNN_FLOAT16, PDNN_NCHW, {2, 3, 1, 1}, 4};
    pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {3, 1, 1, 1}, 0};
    const float bias[3] = {0.1f, -0.2f, 0.3f};
    pdnn_node x, b, bh, y;
    OK(pdnn_graph_placeholder(g, "x", NULL, &d, &x));
    OK(pdnn_graph_constant(g, "bias", NULL, &bd, bias, &b));
    OK(pdnn_graph_cast(g, NULL, NULL, b, PDNN_FLOAT16, &bh));
    OK(pdnn_graph_bias_add(g, "y", NULL, x, bh, &y));
    log_seen l = {0, ""};
    pdnn_session *s = session(g, keep_log, &l);
    const float v[6] = {1.0f, 2.5f, -3.0f, 0.333f, 1e-3f, 65500.0f};
    float out[6];
    for (int rep = 0; rep < 2; rep++) {
        run1(s, x, &d, v, y, out, 6);
        for (int i = 0; i < 6; i++) {
            const float xv = pdnn__f16_to_f32(pdnn__f32_to_f16(v[i]));
            const float bv = pdnn__f16_to_f32(pdnn__f32_to_f16(bias[i % 3]));
            const float want = pdnn__f16_to_f32(pdnn__f32_to_f16(xv + bv));
            cr_assert(memcmp(&out[i], &want, 4) == 0, "%d: %g, want %g", i, (double)out[i], (double)want);
        }
    }
    cr_assert_eq(l.lines, 1, "%d lines: %s", l.lines, l.last);
    cr_assert(strstr(l.last, "y (BiasAdd) on /device:CPU:0: no float16 path"), "%s", l.last);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

/* The live set counts 2 bytes an element: a float16 chain's peak is about
 * half the float32 one's. */
Test(graph_precision, live_bytes_by_dtype)
{
    int64_t peak[2];
    for (int k = 0; k < 2; k++) {
        pdnn_graph *g = NULL;
        OK(pdnn_graph_create(&g));
        pdnn_tensor_desc d = {k ? PDNN_FLOAT16 : PDNN_FLOAT32, PDNN_NCHW, {4, 8, 32, 32}, 4};
        pdnn_node x, a, b;
        OK(pdnn_graph_placeholder(g, "x", NULL, &d, &x));
        OK(pdnn_graph_activation(g, NULL, NULL, x, PDNN_ACTIVATION_SIGMOID, 0, 0, &a));
        OK(pdnn_graph_activation(g, NULL, NULL, a, PDNN_ACTIVATION_TANH, 0, 0, &b));
        pdnn_session *s = session(g, NULL, NULL);
        float *v = calloc(4 * 8 * 32 * 32, sizeof *v), *o = calloc(4 * 8 * 32 * 32, sizeof *o);
        run1(s, x, &d, v, b, o, 4 * 8 * 32 * 32);
        pdnn_device *host = NULL;
        OK(pdnn_device_get(pdnn_session_context(s), 0, &host));
        OK(pdnn_session_memory_live_peak(s, host, &peak[k]));
        free(v);
        free(o);
        pdnn_session_destroy(s);
        pdnn_graph_destroy(g);
    }
    cr_assert_gt(peak[1], 0);
    cr_assert_eq(peak[1] * 2, peak[0], "float16 %lld bytes, float32 %lld", (long long)peak[1], (long long)peak[0]);
}

/* A Cast of a constant is folded when the session is created: the
 * session holds the constant once, in the reduced dtype (its float32
 * copy dropped when only casts read it), the values are those a Cast
 * computes each run (a variable's), and fetching the dropped constant is
 * refused naming it. */
Test(graph_precision, constant_casts_folded)
{
    enum { K = 5, C = 3, H = 6 };
    const pdnn_tensor_desc xd = {PDNN_FLOAT32, PDNN_NCHW, {2, C, H, H}, 4};
    const pdnn_tensor_desc wd = {PDNN_FLOAT32, PDNN_OIHW, {K, C, 3, 3}, 4};
    float w[K * C * 9], x[2 * C * H * H], y[2][2 * K * 4 * 4];
    for (int i = 0; i < K * C * 9; i++)
        w[i] = (float)((i * 37) % 23 - 11) / 7.0f; /* most not float16 values */
    for (int i = 0; i < 2 * C * H * H; i++)
        x[i] = (float)((i * 13) % 17 - 8) / 5.0f;
    int64_t base = 0;
    for (int variable = 0; variable < 2; variable++) {
        pdnn_graph *g = NULL;
        OK(pdnn_graph_create(&g));
        OK(pdnn_graph_set_precision(g, PDNN_FLOAT16));
        pdnn_node xn, wn, yn, cast;
        OK(pdnn_graph_placeholder(g, "x", NULL, &xd, &xn));
        if (variable)
            OK(pdnn_graph_variable(g, "w", NULL, &wd, PDNN_INIT_DATA, 0, w, &wn));
        else
            OK(pdnn_graph_constant(g, "w", NULL, &wd, w, &wn));
        pdnn_conv2d_params p;
        pdnn_conv2d_params_init(&p);
        OK(pdnn_graph_conv2d(g, "y", NULL, xn, wn, -1, &p, &yn));
        OK(pdnn_graph_find(g, "w/Cast_float16", &cast));
        pdnn_session *s = session(g, NULL, NULL);
        pdnn_device *host = NULL;
        OK(pdnn_device_get(pdnn_session_context(s), 0, &host));
        if (!variable) {
            OK(pdnn_session_memory_live_peak(s, host, &base));
            cr_assert_eq(base, K * C * 9 * 2, "the session holds %lld bytes of constants, want the float16 "
                         "copy's %d", (long long)base, K * C * 9 * 2);
            pdnn_tensor *v = NULL;
            cr_assert_eq(pdnn_session_run(s, NULL, NULL, 0, &wn, 1, &v), PDNN_ERR_INVALID_ARGUMENT);
            cr_assert(strstr(pdnn_last_error(), "constant 'w'"), "%s", pdnn_last_error());
            float wc[K * C * 9];
            run1(s, xn, &xd, x, cast, wc, K * C * 9);
            for (int i = 0; i < K * C * 9; i++) {
                const float want = pdnn__f16_to_f32(pdnn__f32_to_f16(w[i]));
                cr_assert(memcmp(&wc[i], &want, 4) == 0, "w[%d]: %g, want %g", i, (double)wc[i], (double)want);
            }
        }
        run1(s, xn, &xd, x, yn, y[variable], 2 * K * 4 * 4);
        pdnn_session_destroy(s);
        pdnn_graph_destroy(g);
    }
    cr_assert(memcmp(y[0], y[1], sizeof y[0]) == 0, "the folded constant's convolution differs from the cast "
              "variable's");
}

/* A constant read in float32 as well keeps its float32 copy. */
Test(graph_precision, constant_with_float32_reader_kept)
{
    const pdnn_tensor_desc wd = {PDNN_FLOAT32, PDNN_NCHW, {1, 4, 1, 1}, 4};
    const float w[4] = {0.1f, 1, -2, 3.3f};
    pdnn_graph *g = NULL;
    OK(pdnn_graph_create(&g));
    pdnn_node wn, h, out[2];
    OK(pdnn_graph_constant(g, "w", NULL, &wd, w, &wn));
    OK(pdnn_graph_cast(g, "h", NULL, wn, PDNN_BFLOAT16, &h));
    OK(pdnn_graph_activation(g, "r", NULL, h, PDNN_ACTIVATION_ABS, 0, 0, &out[0]));
    OK(pdnn_graph_activation(g, "r32", NULL, wn, PDNN_ACTIVATION_ABS, 0, 0, &out[1]));
    pdnn_session *s = session(g, NULL, NULL);
    pdnn_device *host = NULL;
    OK(pdnn_device_get(pdnn_session_context(s), 0, &host));
    int64_t base = 0;
    OK(pdnn_session_memory_live_peak(s, host, &base));
    cr_assert_eq(base, 4 * 4 + 4 * 2, "%lld bytes", (long long)base);
    pdnn_tensor *v[2] = {NULL, NULL};
    OK(pdnn_session_run(s, NULL, NULL, 0, out, 2, v));
    float got[4];
    OK(pdnn_tensor_read(v[1], got, sizeof got));
    for (int i = 0; i < 4; i++)
        cr_assert_eq(got[i], fabsf(w[i]));
    uint16_t r[4];
    OK(pdnn_tensor_read(v[0], r, sizeof r));
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pdnn__bf16_to_f32(r[i]), fabsf(pdnn__bf16_to_f32(pdnn__f32_to_bf16(w[i]))));
    pdnn_tensor_release(v[0]);
    pdnn_tensor_release(v[1]);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

/* A softmax regression: x {N, K} times w {K, C} plus bias, the loss. */
typedef struct {
    pdnn_graph *g;
    pdnn_node x, lab, w, bias, logits, loss, grads[2], train;
} model;

static void build(model *m, pdnn_dtype policy, float loss_scale, int interval)
{
    OK(pdnn_graph_create(&m->g));
    if (policy != PDNN_FLOAT32)
        OK(pdnn_graph_set_precision(m->g, policy));
    if (loss_scale > 0)
        OK(pdnn_graph_set_loss_scale(m->g, loss_scale, interval));
    const pdnn_tensor_desc xd = {PDNN_FLOAT32, PDNN_NCHW, {4, 6, 1, 1}, 4};
    const pdnn_tensor_desc ld = {PDNN_INT32, PDNN_LAYOUT_X, {4, 1, 1, 1}, 0};
    const pdnn_tensor_desc wd = {PDNN_FLOAT32, PDNN_NCHW, {6, 3, 1, 1}, 4};
    const pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {3, 1, 1, 1}, 0};
    pdnn_node mm;
    OK(pdnn_graph_placeholder(m->g, "x", NULL, &xd, &m->x));
    OK(pdnn_graph_placeholder(m->g, "lab", NULL, &ld, &m->lab));
    OK(pdnn_graph_variable(m->g, "w", NULL, &wd, PDNN_INIT_GLOROT_UNIFORM, 7, NULL, &m->w));
    OK(pdnn_graph_variable(m->g, "bias", NULL, &bd, PDNN_INIT_ZEROS, 0, NULL, &m->bias));
    OK(pdnn_graph_matmul(m->g, "mm", NULL, m->x, m->w, 0, 0, &mm));
    OK(pdnn_graph_bias_add(m->g, "logits", NULL, mm, m->bias, &m->logits));
    OK(pdnn_graph_softmax_cross_entropy(m->g, "loss", NULL, m->logits, m->lab, &m->loss));
    pdnn_node vars[2] = {m->w, m->bias};
    OK(pdnn_graph_gradients(m->g, m->loss, vars, 2, m->grads));
    pdnn_optimizer_params p;
    pdnn_optimizer_params_init(&p, PDNN_OPTIMIZER_SGD);
    p.learning_rate = 0.5f;
    OK(pdnn_graph_apply_gradients(m->g, NULL, &p, vars, m->grads, 2, &m->train));
}

static int count_op(const pdnn_graph *g, const char *op)
{
    int c = 0;
    for (int i = 0; i < pdnn_graph_node_count(g); i++)
        c += strcmp(pdnn_graph_node_op(g, i), op) == 0;
    return c;
}

static const float xs[24] = {0.5f, -1, 2, 0.25f, 1, -0.5f, 1, 1, -1, 0, 0.5f, 2, -2, 0.5f, 0.1f, 1, 1, -1, 0, 0, 1, 1, 2, -1};
static const int32_t label_vals[4] = {0, 1, 2, 1};

/* One training step of m (its loss before it). */
static float step(model *m, pdnn_session *s, float scale_inputs)
{
    pdnn_device *host = NULL;
    OK(pdnn_device_get(pdnn_session_context(s), 0, &host));
    const pdnn_tensor_desc xd = {PDNN_FLOAT32, PDNN_NCHW, {4, 6, 1, 1}, 4};
    const pdnn_tensor_desc ld = {PDNN_INT32, PDNN_LAYOUT_X, {4, 1, 1, 1}, 0};
    float xv[24];
    for (int i = 0; i < 24; i++)
        xv[i] = xs[i] * scale_inputs;
    pdnn_tensor *tx = NULL, *tl = NULL, *out[2] = {NULL, NULL};
    OK(pdnn_tensor_create(host, &xd, &tx));
    OK(pdnn_tensor_create(host, &ld, &tl));
    OK(pdnn_tensor_write(tx, xv, sizeof xv));
    OK(pdnn_tensor_write(tl, label_vals, sizeof label_vals));
    pdnn_node feeds[2] = {m->x, m->lab}, fetches[2] = {m->loss, m->train};
    pdnn_tensor *fv[2] = {tx, tl};
    OK(pdnn_session_run(s, feeds, fv, 2, fetches, 2, out));
    float loss = 0;
    OK(pdnn_tensor_read(out[0], &loss, sizeof loss));
    pdnn_tensor_release(out[0]);
    pdnn_tensor_release(tx);
    pdnn_tensor_release(tl);
    return loss;
}

static float var1(pdnn_session *s, const pdnn_graph *g, const char *name)
{
    pdnn_node n;
    OK(pdnn_graph_find(g, name, &n));
    float v = 0;
    OK(pdnn_session_variable_read(s, n, &v, sizeof v));
    return v;
}

Test(graph_precision, policy_casts_once_and_trains_like_float32)
{
    const pdnn_dtype pol[3] = {PDNN_FLOAT32, PDNN_FLOAT16, PDNN_BFLOAT16};
    float losses[3][20];
    for (int k = 0; k < 3; k++) {
        model m;
        build(&m, pol[k], 0, 0);
        pdnn_tensor_desc d;
        OK(pdnn_graph_node_desc(m.g, m.logits, &d));
        cr_assert_eq(d.dtype, pol[k]);
        OK(pdnn_graph_node_desc(m.g, m.grads[0], &d));
        cr_assert_eq(d.dtype, PDNN_FLOAT32, "a variable's gradient is float32");
        /* x, w, bias cast to the compute dtype and the logits back: one Cast
         * each, plus one gradient Cast per cast value that is differentiated */
        if (k) {
            int casts = count_op(m.g, "Cast");
            cr_assert_eq(casts, 4 + 3, "%d casts", casts);
            pdnn_node c;
            OK(pdnn_graph_find(m.g, k == 1 ? "w/Cast_float16" : "w/Cast_bfloat16", &c));
            OK(pdnn_graph_find(m.g, "logits/Cast_float32", &c));
        } else {
            cr_assert_eq(count_op(m.g, "Cast"), 0);
        }
        pdnn_session *s = session(m.g, NULL, NULL);
        for (int i = 0; i < 20; i++)
            losses[k][i] = step(&m, s, 1.0f);
        pdnn_session_destroy(s);
        pdnn_graph_destroy(m.g);
    }
    cr_assert_lt(losses[0][19], 0.5f * losses[0][0], "float32 trains: %g -> %g", (double)losses[0][0],
                 (double)losses[0][19]);
    for (int k = 1; k < 3; k++)
        for (int i = 0; i < 20; i++)
            cr_assert(fabsf(losses[k][i] - losses[0][i]) < (k == 1 ? 0.01f : 0.05f) * (1 + losses[0][i]),
                      "%s step %d: %g vs float32 %g", k == 1 ? "float16" : "bfloat16", i, (double)losses[k][i],
                      (double)losses[0][i]);
    /* the reduced runs differ from float32 somewhere: the policy did cast */
    int differs = 0;
    for (int i = 0; i < 20; i++)
        differs |= losses[1][i] != losses[0][i];
    cr_assert(differs);
}

Test(graph_precision, loss_scale_grows_backs_off_and_skips)
{
    model m;
    build(&m, PDNN_FLOAT16, 4.0f, 3);
    cr_assert_eq(count_op(m.g, "LossScaleUpdate"), 1);
    pdnn_session *s = session(m.g, NULL, NULL);
    float w0[18], w1[18];
    /* three clean steps: the scale doubles on the third, the counter resets */
    step(&m, s, 1.0f);
    cr_assert_eq(var1(s, m.g, "loss_scale"), 4.0f);
    cr_assert_eq(var1(s, m.g, "loss_scale/good_steps"), 1.0f);
    step(&m, s, 1.0f);
    step(&m, s, 1.0f);
    cr_assert_eq(var1(s, m.g, "loss_scale"), 8.0f);
    cr_assert_eq(var1(s, m.g, "loss_scale/good_steps"), 0.0f);
    /* inputs past float16's range: inf in the cast, NaN in the gradients:
     * the step is skipped (weights kept), the scale halves */
    OK(pdnn_session_variable_read(s, m.w, w0, sizeof w0));
    step(&m, s, 1e6f);
    OK(pdnn_session_variable_read(s, m.w, w1, sizeof w1));
    cr_assert(memcmp(w0, w1, sizeof w0) == 0, "the skipped step changed w");
    cr_assert_eq(var1(s, m.g, "loss_scale"), 4.0f);
    cr_assert_eq(var1(s, m.g, "global_step"), 4.0f, "a skipped step still counts");
    /* and not below 1 */
    for (int i = 0; i < 4; i++)
        step(&m, s, 1e6f);
    cr_assert_eq(var1(s, m.g, "loss_scale"), 1.0f);
    /* a clean step trains again, with the update divided by the scale:
     * the same as an unscaled float16 run from the same weights */
    step(&m, s, 1.0f);
    OK(pdnn_session_variable_read(s, m.w, w1, sizeof w1));
    cr_assert(memcmp(w0, w1, sizeof w0) != 0);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(m.g);
    /* bad arguments */
    pdnn_graph *g = NULL;
    OK(pdnn_graph_create(&g));
    cr_assert_eq(pdnn_graph_set_loss_scale(g, 0.5f, 10), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_graph_set_loss_scale(g, 8.0f, 0), PDNN_ERR_INVALID_ARGUMENT);
    OK(pdnn_graph_set_loss_scale(g, 8.0f, 10));
    cr_assert_eq(pdnn_graph_set_loss_scale(g, 8.0f, 10), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_graph_set_precision(g, PDNN_INT32), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_graph_destroy(g);
}

/* The scale changes the gradients' float16 values only through rounding:
 * scaled and unscaled float16 steps give weights within float16's error. */
Test(graph_precision, scaled_update_matches_unscaled)
{
    model a, b;
    build(&a, PDNN_FLOAT16, 0, 0);
    build(&b, PDNN_FLOAT16, 1024.0f, 2000);
    pdnn_session *sa = session(a.g, NULL, NULL), *sb = session(b.g, NULL, NULL);
    for (int i = 0; i < 3; i++) {
        step(&a, sa, 1.0f);
        step(&b, sb, 1.0f);
    }
    float wa[18], wb[18];
    OK(pdnn_session_variable_read(sa, a.w, wa, sizeof wa));
    OK(pdnn_session_variable_read(sb, b.w, wb, sizeof wb));
    for (int i = 0; i < 18; i++)
        cr_assert(fabsf(wa[i] - wb[i]) < 2e-3f * (1 + fabsf(wa[i])), "%d: %g vs %g", i, (double)wa[i],
                  (double)wb[i]);
    pdnn_session_destroy(sa);
    pdnn_session_destroy(sb);
    pdnn_graph_destroy(a.g);
    pdnn_graph_destroy(b.g);
}
