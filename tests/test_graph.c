/* Graphs and sessions: names, shape errors, every placement rule, soft
 * placement, the placement log, device-to-device copies, memory freed
 * after the last consumer, the multi-tower example on two PoCL devices,
 * and a small CNN on the accelerator against the host. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include "helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FULL(t, i) "/job:localhost/replica:0/task:0/device:" t ":" #i

typedef struct logbuf {
    char text[16384];
} logbuf;

static void capture(void *user, const char *line)
{
    logbuf *b = user;
    size_t used = strlen(b->text);
    snprintf(b->text + used, sizeof b->text - used, "%s\n", line);
}

static pdnn_session *session(const pdnn_graph *g, int soft, logbuf *log)
{
    pdnn_session_config c;
    pdnn_session_config_init(&c);
    c.options.allow_growth = 1;
    c.allow_soft_placement = soft;
    c.log_device_placement = log != NULL;
    c.log = log ? capture : NULL;
    c.log_user = log;
    pdnn_session *s = NULL;
    cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
    return s;
}

static const char *placed(pdnn_session *s, pdnn_node n)
{
    static _Thread_local pdnn_device_info info;
    pdnn_device *d;
    cr_assert_eq(pdnn_session_node_device(s, n, &d), PDNN_SUCCESS);
    cr_assert_eq(pdnn_device_get_info(d, &info), PDNN_SUCCESS);
    return info.name;
}

static int has_gpu(pdnn_session *s)
{
    pdnn_device *d;
    return pdnn_device_find(pdnn_session_context(s), "/gpu:0", &d) == PDNN_SUCCESS;
}

static pdnn_node matrix_const(pdnn_graph *g, const char *name, const char *dev, int64_t r, int64_t c,
                              const float *v)
{
    pdnn_tensor_desc d = th_desc(PDNN_NCHW, r, c, 1, 1);
    pdnn_node n;
    cr_assert_eq(pdnn_graph_constant(g, name, dev, &d, v, &n), PDNN_SUCCESS, "%s", pdnn_last_error());
    return n;
}

Test(graph, names_are_generated_tensorflow_style_and_checked)
{
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    const float v[6] = {1, 2, 3, 4, 5, 6};
    pdnn_node a = matrix_const(g, NULL, NULL, 2, 3, v), b = matrix_const(g, NULL, NULL, 3, 2, v);
    cr_assert_str_eq(pdnn_graph_node_name(g, a), "Const");
    cr_assert_str_eq(pdnn_graph_node_name(g, b), "Const_1");
    pdnn_node m0, m1, m2;
    cr_assert_eq(pdnn_graph_matmul(g, NULL, NULL, a, b, 0, 0, &m0), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_matmul(g, "", NULL, a, b, 0, 0, &m1), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_matmul(g, "MatMul_2", NULL, a, b, 0, 0, &m2), PDNN_SUCCESS);
    cr_assert_str_eq(pdnn_graph_node_name(g, m0), "MatMul");
    cr_assert_str_eq(pdnn_graph_node_name(g, m1), "MatMul_1");
    cr_assert_str_eq(pdnn_graph_node_op(g, m2), "MatMul");
    pdnn_node x;
    cr_assert_eq(pdnn_graph_matmul(g, NULL, NULL, a, b, 0, 0, &x), PDNN_SUCCESS);
    cr_assert_str_eq(pdnn_graph_node_name(g, x), "MatMul_3", "generated names skip taken ones");
    cr_assert_eq(pdnn_graph_matmul(g, "MatMul", NULL, a, b, 0, 0, &x), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "already has a node named 'MatMul'"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_matmul(g, "bad", NULL, a, a, 0, 0, &x), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "node 'bad' (MatMul): inner dimensions differ"), "%s",
                     pdnn_last_error());
    cr_assert_eq(pdnn_graph_add(g, "bad", NULL, a, 99, &x), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "input 1 is node 99"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_relu(g, "bad", "/device:TPU:0", a, &x), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "node 'bad'"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_find(g, "Const_1", &x), PDNN_SUCCESS);
    cr_assert_eq(x, b);
    cr_assert_eq(pdnn_graph_find(g, "nope", &x), PDNN_ERR_NOT_FOUND);
    cr_assert_eq(pdnn_graph_node_count(g), 6, "failed adds leave nothing behind");
    pdnn_graph_destroy(g);
}

Test(graph, placement_rules_and_log)
{
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    const float v[6] = {1, 2, 3, 4, 5, 6};
    pdnn_node a = matrix_const(g, "a", NULL, 2, 3, v);
    pdnn_node b = matrix_const(g, "b", "/cpu:0", 3, 2, v);
    pdnn_node m, r1, r2, r3;
    cr_assert_eq(pdnn_graph_matmul(g, NULL, NULL, a, b, 0, 0, &m), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, "r1", "CPU:0", m, &r1), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, "r2", "/job:localhost/replica:0/task:0/device:CPU:0", m, &r2), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, "r3", "/device:GPU:*", m, &r3), PDNN_SUCCESS);
    logbuf log = {{0}};
    pdnn_session *s = session(g, 0, &log);
    int gpu = has_gpu(s);
    const char *accel = gpu ? "/device:GPU:0" : "/device:CPU:0";
    cr_assert_str_eq(placed(s, a), accel, "no device given: the accelerator first");
    cr_assert_str_eq(placed(s, m), accel);
    cr_assert_str_eq(placed(s, b), "/device:CPU:0");
    cr_assert_str_eq(placed(s, r1), "/device:CPU:0");
    cr_assert_str_eq(placed(s, r2), "/device:CPU:0");
    cr_assert(strncmp(log.text, "Device mapping:\n", 16) == 0, "%s", log.text);
    cr_assert_not_null(strstr(log.text, FULL("CPU", 0) " -> device: 0, name: "), "%s", log.text);
    if (gpu) {
        cr_assert_str_eq(placed(s, r3), "/device:GPU:0");
        cr_assert_not_null(strstr(log.text, "MatMul: (MatMul): " FULL("GPU", 0) "\n"), "%s", log.text);
        cr_assert_not_null(strstr(log.text, "b/_copy_to_GPU_0: (_Copy): " FULL("GPU", 0) "\n"), "%s", log.text);
        cr_assert_not_null(strstr(log.text, "MatMul/_copy_to_CPU_0: (_Copy): " FULL("CPU", 0) "\n"), "%s",
                           log.text);
        const char *first = strstr(log.text, "MatMul/_copy_to_CPU_0");
        cr_assert_null(strstr(first + 1, "MatMul/_copy_to_CPU_0"), "one copy per producer and device");
    }
    cr_assert_not_null(strstr(log.text, "r1: (Relu): " FULL("CPU", 0) "\n"), "%s", log.text);
    /* The values are right whatever crossed which device. */
    pdnn_node fetch[3] = {r1, r2, m};
    pdnn_tensor *out[3];
    cr_assert_eq(pdnn_session_run(s, NULL, NULL, 0, fetch, 3, out), PDNN_SUCCESS, "%s", pdnn_last_error());
    const float want[4] = {22, 28, 49, 64};
    for (int k = 0; k < 3; k++) {
        float *got = th_download(out[k]);
        for (int i = 0; i < 4; i++)
            cr_assert_float_eq(got[i], want[i], 1e-4);
        free(got);
        pdnn_tensor_release(out[k]);
    }
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

Test(graph, missing_device_fails_or_falls_back_softly)
{
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    const float v[4] = {1, -2, 3, -4};
    pdnn_node a = matrix_const(g, "a", NULL, 2, 2, v), r, c;
    cr_assert_eq(pdnn_graph_relu(g, "far", "/device:GPU:7", a, &r), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, "other", "/job:worker/task:0/device:CPU:0", a, &c), PDNN_SUCCESS);
    pdnn_session_config cfg;
    pdnn_session_config_init(&cfg);
    cfg.options.allow_growth = 1;
    pdnn_session *s = NULL;
    cr_assert_eq(pdnn_session_create(g, &cfg, &s), PDNN_ERR_NOT_FOUND);
    cr_assert_null(s);
    const char *e = pdnn_last_error();
    cr_assert_not_null(strstr(e, "Cannot assign a device for operation far"), "%s", e);
    cr_assert_not_null(strstr(e, "explicitly assigned to /device:GPU:7"), "%s", e);
    cr_assert_not_null(strstr(e, "available devices are [" FULL("CPU", 0)), "%s", e);

    logbuf log = {{0}};
    s = session(g, 1, &log);
    const char *want = has_gpu(s) ? "/device:GPU:0" : "/device:CPU:0";
    cr_assert_str_eq(placed(s, r), want, "same type first, then any");
    cr_assert_str_eq(placed(s, c), "/device:CPU:0");
    cr_assert_not_null(strstr(log.text, "Soft placement: far (Relu): requested /device:GPU:7, which does not exist"),
                       "%s", log.text);
    pdnn_node f[1] = {r};
    pdnn_tensor *o;
    cr_assert_eq(pdnn_session_run(s, NULL, NULL, 0, f, 1, &o), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *got = th_download(o);
    cr_assert(got[0] == 1 && got[1] == 0 && got[2] == 3 && got[3] == 0);
    free(got);
    pdnn_tensor_release(o);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

Test(graph, env_turns_on_the_placement_log)
{
    setenv("POLYDNN_LOG_DEVICE_PLACEMENT", "1", 1);
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    const float v[1] = {1};
    matrix_const(g, "only", "/cpu:0", 1, 1, v);
    pdnn_session_config c;
    pdnn_session_config_init(&c);
    logbuf log = {{0}};
    c.log = capture;
    c.log_user = &log;
    pdnn_session *s = NULL;
    cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_not_null(strstr(log.text, "only: (Const): " FULL("CPU", 0)), "%s", log.text);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
    unsetenv("POLYDNN_LOG_DEVICE_PLACEMENT");
}

Test(graph, nchw_pool_and_conv_pinned_to_the_cpu)
{
    /* TensorFlow: "Default MaxPoolingOp only supports NHWC on device type
     * CPU". Here every layout runs everywhere. */
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 2, 3, 8, 8), wd = th_desc(PDNN_OIHW, 4, 3, 3, 3);
    float w[108];
    th_fill(w, 108, 1);
    pdnn_node x, wn, c, p;
    cr_assert_eq(pdnn_graph_placeholder(g, "x", "/cpu:0", &xd, &x), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_constant(g, "w", "/cpu:0", &wd, w, &wn), PDNN_SUCCESS);
    pdnn_conv2d_params cp;
    pdnn_conv2d_params_init(&cp);
    cr_assert_eq(pdnn_graph_conv2d(g, NULL, "/cpu:0", x, wn, -1, &cp, &c), PDNN_SUCCESS);
    pdnn_pool2d_params pp;
    pdnn_pool2d_params_init(&pp);
    cr_assert_eq(pdnn_graph_pool2d(g, NULL, "/cpu:0", c, &pp, &p), PDNN_SUCCESS);
    cr_assert_str_eq(pdnn_graph_node_name(g, p), "MaxPool");
    pdnn_session *s = session(g, 0, NULL);
    cr_assert_str_eq(placed(s, p), "/device:CPU:0");
    pdnn_device *h;
    cr_assert_eq(pdnn_device_find(pdnn_session_context(s), "/cpu:0", &h), PDNN_SUCCESS);
    float xv[384];
    th_fill(xv, 384, 2);
    pdnn_tensor *xt = th_upload(h, &xd, xv), *o;
    cr_assert_eq(pdnn_session_run(s, &x, &xt, 1, &p, 1, &o), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_desc od;
    cr_assert_eq(pdnn_tensor_get_desc(o, &od), PDNN_SUCCESS);
    cr_assert(od.layout == PDNN_NCHW && od.dims[1] == 4 && od.dims[2] == 3);
    pdnn_tensor_release(o);
    /* Run-time errors: a missing feed, a wrongly shaped one. */
    cr_assert_eq(pdnn_session_run(s, NULL, NULL, 0, &p, 1, &o), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "You must feed a value for placeholder tensor 'x'"), "%s",
                       pdnn_last_error());
    cr_assert_null(o);
    pdnn_tensor_desc wrong = th_desc(PDNN_NHWC, 2, 3, 8, 8);
    pdnn_tensor *wt = th_upload(h, &wrong, NULL);
    cr_assert_eq(pdnn_session_run(s, &x, &wt, 1, &p, 1, &o), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "placeholder 'x' is [2,3,8,8] NCHW float32 but was fed"), "%s",
                       pdnn_last_error());
    cr_assert_eq(pdnn_session_run(s, &c, &xt, 1, &p, 1, &o), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "is a Conv2D, not a Placeholder"), "%s", pdnn_last_error());
    pdnn_tensor_release(wt);
    pdnn_tensor_release(xt);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

Test(graph, intermediates_are_freed_after_their_last_consumer)
{
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc d = th_desc(PDNN_NCHW, 1, 16, 32, 32); /* 64 KiB, a multiple of 256 */
    const uint64_t bytes = 16 * 32 * 32 * 4;
    pdnn_node x, r[4];
    cr_assert_eq(pdnn_graph_placeholder(g, "x", NULL, &d, &x), PDNN_SUCCESS);
    r[0] = x;
    for (int i = 1; i < 4; i++)
        cr_assert_eq(pdnn_graph_relu(g, NULL, NULL, r[i - 1], &r[i]), PDNN_SUCCESS);
    pdnn_session *s = session(g, 0, NULL);
    pdnn_device *dev;
    cr_assert_eq(pdnn_session_node_device(s, x, &dev), PDNN_SUCCESS);
    pdnn_tensor *xt = th_upload(dev, &d, NULL), *o;
    pdnn_memory_stats st;
    cr_assert_eq(pdnn_device_reset_peak_stats(dev), PDNN_SUCCESS);
    cr_assert_eq(pdnn_session_run(s, &x, &xt, 1, &r[3], 1, &o), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_device_get_memory_stats(dev, &st), PDNN_SUCCESS);
    /* x (fed), and at most two of Relu, Relu_1, Relu_2 at once. */
    cr_assert_eq(st.peak_bytes_in_use, 3 * bytes, "peak %llu, want %llu", (unsigned long long)st.peak_bytes_in_use,
                 (unsigned long long)(3 * bytes));
    cr_assert_eq(st.bytes_in_use, 2 * bytes, "only the feed and the fetched result remain");
    /* The session's own count of the same: the largest live set. */
    int64_t live = -1;
    cr_assert_eq(pdnn_session_memory_live_peak(s, dev, &live), PDNN_SUCCESS);
    cr_assert_eq(live, (int64_t)(3 * bytes), "largest live set %lld", (long long)live);
    pdnn_device *h;
    cr_assert_eq(pdnn_device_find(pdnn_session_context(s), "/cpu:0", &h), PDNN_SUCCESS);
    if (h != dev) {
        cr_assert_eq(pdnn_session_memory_live_peak(s, h, &live), PDNN_SUCCESS);
        cr_assert_eq(live, 0, "nothing ran on the host");
    }
    cr_assert_eq(pdnn_session_memory_live_peak(s, NULL, &live), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_tensor_release(o);
    pdnn_tensor_release(xt);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

/* One run of concat(relu(x), relu(relu(x))) along channels (x NCHW or
 * NHWC, 1x16x32x32, 64 KiB a tensor) fetching the concat, and with
 * fetch_a its first input too: checks the values and returns the
 * allocator's peak in tensors of 64 KiB. */
static int concat_run(pdnn_layout layout, int fetch_a)
{
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc d = th_desc(layout, 1, 16, 32, 32);
    const int64_t n = 16 * 32 * 32, bytes = n * 4;
    pdnn_node x, a, b1, b, in[2], cat;
    cr_assert_eq(pdnn_graph_placeholder(g, "x", NULL, &d, &x), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, "a", NULL, x, &a), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, "b1", NULL, x, &b1), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, "b", NULL, b1, &b), PDNN_SUCCESS);
    in[0] = a;
    in[1] = b;
    cr_assert_eq(pdnn_graph_concat(g, "cat", NULL, in, 2, 1, &cat), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_session *s = session(g, 0, NULL);
    pdnn_device *dev;
    cr_assert_eq(pdnn_session_node_device(s, x, &dev), PDNN_SUCCESS);
    float *xv = malloc((size_t)bytes);
    cr_assert_not_null(xv);
    th_fill(xv, n, 5);
    pdnn_tensor *xt = th_upload(dev, &d, xv), *o[2] = {NULL, NULL};
    const pdnn_node fetch[2] = {cat, a};
    pdnn_memory_stats st;
    cr_assert_eq(pdnn_device_reset_peak_stats(dev), PDNN_SUCCESS);
    cr_assert_eq(pdnn_session_run(s, &x, &xt, 1, fetch, fetch_a ? 2 : 1, o), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_device_get_memory_stats(dev, &st), PDNN_SUCCESS);
    float *cv = th_download(o[0]), *av = fetch_a ? th_download(o[1]) : NULL;
    /* Memory order: NCHW puts a's 16 channels, then b's; NHWC interleaves
     * them pixel by pixel. Both halves are relu(x). */
    for (int64_t e = 0; e < 2 * n; e++) {
        const int64_t src = layout == PDNN_NCHW ? e % n : (e / 32) * 16 + e % 16;
        const float want = xv[src] > 0.0f ? xv[src] : 0.0f;
        cr_assert_eq(cv[e], want, "cat[%lld] = %g, want %g", (long long)e, (double)cv[e], (double)want);
    }
    for (int64_t e = 0; av && e < n; e++)
        cr_assert_eq(av[e], xv[e] > 0.0f ? xv[e] : 0.0f);
    free(xv);
    free(cv);
    free(av);
    cr_assert_eq(st.peak_bytes_in_use % (uint64_t)bytes, 0);
    for (int k = 0; k < 2; k++)
        pdnn_tensor_release(o[k]);
    pdnn_tensor_release(xt);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
    return (int)(st.peak_bytes_in_use / (uint64_t)bytes);
}

/* NCHW at batch 1: relu and relu_1 write their halves of the concat in
 * place, so the run holds x, the concat (two) and b1 at most; copying
 * holds a, b1 and b besides x and then the concat too. A fetched input,
 * and NHWC (the halves interleave), copy. */
Test(graph, concat_inputs_are_written_in_place)
{
    cr_assert_eq(concat_run(PDNN_NCHW, 0), 4);
    cr_assert_eq(concat_run(PDNN_NCHW, 1), 5);
    cr_assert_eq(concat_run(PDNN_NHWC, 0), 5);
}

/* A Reshape of a computed value is a view of its bytes (no copy: the run
 * holds x and relu(x) at most); of a feed, a copy (the caller's tensor
 * may change after the run); and of a value the run also hands over, a
 * copy (two fetched tensors never share bytes). The view outlives the
 * run's own tensor. */
Test(graph, reshape_of_a_computed_value_shares_its_bytes)
{
    for (int v = 0; v < 3; v++) { /* computed, a feed, computed and fetched */
        pdnn_graph *g;
        cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
        pdnn_tensor_desc d = th_desc(PDNN_NCHW, 1, 16, 32, 32);
        const int64_t n = 16 * 32 * 32, bytes = n * 4, flat[4] = {1, n, 1, 1};
        pdnn_node x, a, b;
        cr_assert_eq(pdnn_graph_placeholder(g, "x", NULL, &d, &x), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_relu(g, "a", NULL, x, &a), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_reshape(g, "b", NULL, v == 1 ? x : a, flat, &b), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        pdnn_session *s = session(g, 0, NULL);
        pdnn_device *dev;
        cr_assert_eq(pdnn_session_node_device(s, x, &dev), PDNN_SUCCESS);
        float *xv = malloc((size_t)bytes);
        cr_assert_not_null(xv);
        th_fill(xv, n, 9);
        pdnn_tensor *xt = th_upload(dev, &d, xv), *o[2] = {NULL, NULL};
        const pdnn_node fetch[2] = {b, a};
        pdnn_memory_stats st;
        cr_assert_eq(pdnn_device_reset_peak_stats(dev), PDNN_SUCCESS);
        cr_assert_eq(pdnn_session_run(s, &x, &xt, 1, fetch, v == 2 ? 2 : 1, o), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        cr_assert_eq(pdnn_device_get_memory_stats(dev, &st), PDNN_SUCCESS);
        const int64_t want = (v == 2 ? 3 : 2) * bytes;
        cr_assert_eq(st.peak_bytes_in_use, (uint64_t)want, "variant %d: peak %llu B, want %lld", v,
                     (unsigned long long)st.peak_bytes_in_use, (long long)want);
        pdnn_session_destroy(s);
        pdnn_graph_destroy(g);
        pdnn_tensor_release(xt);
        pdnn_tensor_desc od;
        cr_assert_eq(pdnn_tensor_get_desc(o[0], &od), PDNN_SUCCESS);
        cr_assert_eq(od.dims[1], n);
        float *ov = th_download(o[0]);
        for (int64_t e = 0; e < n; e++)
            cr_assert_eq(ov[e], v == 1 || xv[e] > 0.0f ? xv[e] : 0.0f, "b[%lld]", (long long)e);
        free(ov);
        free(xv);
        pdnn_tensor_release(o[0]);
        pdnn_tensor_release(o[1]);
    }
}

/* The seeds' multi-tower example: a matmul per GPU, add_n on the CPU. */
Test(graph, two_towers_on_two_pocl_devices)
{
    setenv("POCL_DEVICES", "pthread pthread", 1);
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    const float av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {1, 2, 3, 4, 5, 6};
    pdnn_node towers[2];
    for (int t = 0; t < 2; t++) {
        char dev[32], an[16], bn[16];
        snprintf(dev, sizeof dev, "/device:GPU:%d", t);
        snprintf(an, sizeof an, "a%d", t);
        snprintf(bn, sizeof bn, "b%d", t);
        pdnn_node a = matrix_const(g, an, dev, 2, 3, av), b = matrix_const(g, bn, dev, 3, 2, bv);
        cr_assert_eq(pdnn_graph_matmul(g, NULL, dev, a, b, 0, 0, &towers[t]), PDNN_SUCCESS);
    }
    pdnn_node sum;
    cr_assert_eq(pdnn_graph_add_n(g, NULL, "/cpu:0", towers, 2, &sum), PDNN_SUCCESS);
    pdnn_session_config c;
    pdnn_session_config_init(&c);
    c.options.allow_growth = 1;
    c.log_device_placement = 1;
    logbuf log = {{0}};
    c.log = capture;
    c.log_user = &log;
    pdnn_session *s = NULL;
    pdnn_status st = pdnn_session_create(g, &c, &s);
    if (st == PDNN_ERR_NOT_FOUND) {
        pdnn_graph_destroy(g);
        cr_skip_test("two GPU-class devices are needed (POCL_DEVICES=\"pthread pthread\" gives them)");
    }
    cr_assert_eq(st, PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_not_null(strstr(log.text, "MatMul: (MatMul): " FULL("GPU", 0) "\n"), "%s", log.text);
    cr_assert_not_null(strstr(log.text, "MatMul_1: (MatMul): " FULL("GPU", 1) "\n"), "%s", log.text);
    cr_assert_not_null(strstr(log.text, "AddN: (AddN): " FULL("CPU", 0) "\n"), "%s", log.text);
    cr_assert_not_null(strstr(log.text, "MatMul_1/_copy_to_CPU_0: (_Copy): " FULL("CPU", 0)), "%s", log.text);
    pdnn_tensor *o;
    cr_assert_eq(pdnn_session_run(s, NULL, NULL, 0, &sum, 1, &o), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *got = th_download(o);
    const float want[4] = {44, 56, 98, 128};
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(got[i], want[i], 1e-4, "element %d: %g", i, (double)got[i]);
    free(got);
    pdnn_tensor_release(o);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

/* conv-relu-pool twice, flatten, matmul, bias, softmax; device = NULL
 * (the accelerator) or "/cpu:0" for every node. */
static pdnn_graph *small_cnn(const char *dev, pdnn_layout layout, pdnn_node *x, pdnn_node *y)
{
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc xd = th_desc(layout, 3, 3, 16, 16);
    cr_assert_eq(pdnn_graph_placeholder(g, "x", dev, &xd, x), PDNN_SUCCESS);
    pdnn_node h = *x;
    int64_t cin = 3;
    for (int l = 0; l < 2; l++) {
        int64_t cout = l ? 16 : 8;
        pdnn_tensor_desc wd = th_desc(PDNN_OIHW, cout, cin, 3, 3), bd = th_desc(PDNN_LAYOUT_X, cout, 1, 1, 1);
        float *w = malloc(sizeof(float) * (size_t)(cout * cin * 9)), b[16];
        th_fill(w, cout * cin * 9, (uint32_t)(l + 1));
        th_fill(b, cout, (uint32_t)(l + 50));
        for (int64_t i = 0; i < cout * cin * 9; i++)
            w[i] *= 0.3f; /* keep activations O(1) so the softmax is not saturated */
        pdnn_node wn, bn, c, r, p;
        cr_assert_eq(pdnn_graph_constant(g, NULL, dev, &wd, w, &wn), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_constant(g, NULL, dev, &bd, b, &bn), PDNN_SUCCESS);
        free(w);
        pdnn_conv2d_params cp;
        pdnn_conv2d_params_init(&cp);
        cp.pad_top = cp.pad_bottom = cp.pad_left = cp.pad_right = 1;
        cr_assert_eq(pdnn_graph_conv2d(g, NULL, dev, h, wn, -1, &cp, &c), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_node cb;
        cr_assert_eq(pdnn_graph_bias_add(g, NULL, dev, c, bn, &cb), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_graph_relu(g, NULL, dev, cb, &r), PDNN_SUCCESS);
        pdnn_pool2d_params pp;
        pdnn_pool2d_params_init(&pp);
        cr_assert_eq(pdnn_graph_pool2d(g, NULL, dev, r, &pp, &p), PDNN_SUCCESS);
        h = p;
        cin = cout;
    }
    pdnn_node f, fw, m, s;
    cr_assert_eq(pdnn_graph_flatten(g, NULL, dev, h, &f), PDNN_SUCCESS);
    float *wv = malloc(sizeof(float) * 256 * 10);
    th_fill(wv, 256 * 10, 77);
    for (int i = 0; i < 256 * 10; i++)
        wv[i] *= 0.05f;
    fw = matrix_const(g, "fc", dev, 256, 10, wv);
    free(wv);
    cr_assert_eq(pdnn_graph_matmul(g, NULL, dev, f, fw, 0, 0, &m), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_graph_softmax(g, NULL, dev, m, &s), PDNN_SUCCESS);
    *y = s;
    return g;
}

Test(graph, small_cnn_on_the_accelerator_matches_the_host)
{
    for (int li = 0; li < 2; li++) {
        pdnn_layout l = li ? PDNN_NHWC : PDNN_NCHW;
        pdnn_node xa, ya, xh, yh;
        pdnn_graph *ga = small_cnn(NULL, l, &xa, &ya), *gh = small_cnn("/cpu:0", l, &xh, &yh);
        pdnn_session *sa = session(ga, 0, NULL), *sh = session(gh, 0, NULL);
        if (!has_gpu(sa)) {
            pdnn_session_destroy(sa);
            pdnn_session_destroy(sh);
            pdnn_graph_destroy(ga);
            pdnn_graph_destroy(gh);
            cr_skip_test("no accelerator device");
        }
        cr_assert_str_eq(placed(sa, ya), "/device:GPU:0");
        pdnn_device *h;
        cr_assert_eq(pdnn_device_find(pdnn_session_context(sh), "/cpu:0", &h), PDNN_SUCCESS);
        pdnn_tensor_desc xd = th_desc(l, 3, 3, 16, 16);
        float xv[3 * 3 * 16 * 16];
        th_fill(xv, 3 * 3 * 256, 5);
        pdnn_tensor *xt = th_upload(h, &xd, xv), *oa, *oh;
        /* The host tensor feeds the accelerator graph too (copied over). */
        cr_assert_eq(pdnn_session_run(sa, &xa, &xt, 1, &ya, 1, &oa), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_session_run(sh, &xh, &xt, 1, &yh, 1, &oh), PDNN_SUCCESS, "%s", pdnn_last_error());
        float *a = th_download(oa), *b = th_download(oh);
        double sum = 0;
        int spread = 0; /* a saturated softmax (all 0 and 1) would compare nothing */
        for (int i = 0; i < 30; i++) {
            spread += a[i] > 0.01f && a[i] < 0.9f;
            cr_assert_float_eq(a[i], b[i], 1e-5, "%s element %d: %g vs %g", pdnn_layout_name(l), i, (double)a[i],
                               (double)b[i]);
            sum += a[i];
        }
        cr_assert_float_eq(sum, 3.0, 1e-4, "three rows of probabilities");
        cr_assert_geq(spread, 10, "only %d probabilities are away from 0 and 1", spread);
        free(a);
        free(b);
        pdnn_tensor_release(oa);
        pdnn_tensor_release(oh);
        pdnn_tensor_release(xt);
        pdnn_session_destroy(sa);
        pdnn_session_destroy(sh);
        pdnn_graph_destroy(ga);
        pdnn_graph_destroy(gh);
    }
}

/* A session holds its context: the caller may destroy the context right
 * after creating the session, run it, destroy the session and release
 * the fetched and fed tensors last, in either order. */
Test(graph, session_and_tensors_outlive_a_destroyed_context)
{
    for (int order = 0; order < 2; order++) {
        pdnn_graph *g;
        cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
        pdnn_tensor_desc d = th_desc(PDNN_NCHW, 1, 1, 2, 2);
        const float kv[4] = {1, -2, 3, -4};
        pdnn_node x, k, sum, r;
        cr_assert_eq(pdnn_graph_placeholder(g, "x", "/cpu:0", &d, &x), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_constant(g, "k", "/cpu:0", &d, kv, &k), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_node in[2] = {x, k};
        cr_assert_eq(pdnn_graph_add_n(g, NULL, NULL, in, 2, &sum), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_graph_relu(g, NULL, NULL, sum, &r), PDNN_SUCCESS);
        pdnn_context *ctx = th_context();
        pdnn_session_config c;
        pdnn_session_config_init(&c);
        c.context = ctx;
        pdnn_session *s = NULL;
        cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_graph_destroy(g);
        pdnn_device *host = NULL;
        cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
        pdnn_context_destroy(ctx);
        const float xv[4] = {1, 1, 1, 1};
        pdnn_tensor *xt = th_upload(host, &d, xv), *out = NULL;
        cr_assert_eq(pdnn_session_run(s, &x, &xt, 1, &r, 1, &out), PDNN_SUCCESS, "%s", pdnn_last_error());
        if (order == 0)
            pdnn_session_destroy(s);
        float *got = th_download(out);
        const float want[4] = {2, 0, 4, 0};
        cr_assert_eq(memcmp(got, want, sizeof want), 0, "%g %g %g %g", got[0], got[1], got[2], got[3]);
        free(got);
        pdnn_tensor_release(out);
        pdnn_tensor_release(xt);
        if (order == 1)
            pdnn_session_destroy(s); /* the last holder: frees the context */
    }
}

/* Profiling counts each computing node once per run that executed it,
 * with a positive time no smaller than its first run's, and nothing for
 * value-holding nodes; without cfg.profile it is an error that says so. */
Test(graph, session_profile_times_each_node)
{
    pdnn_graph *g = NULL;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc d = th_desc(PDNN_NCHW, 8, 16, 1, 1);
    float w[16 * 4];
    th_fill(w, 16 * 4, 7);
    pdnn_node x, m, r, unused;
    cr_assert_eq(pdnn_graph_placeholder(g, "x", NULL, &d, &x), PDNN_SUCCESS);
    pdnn_node wc = matrix_const(g, "w", NULL, 16, 4, w);
    cr_assert_eq(pdnn_graph_matmul(g, "mm", NULL, x, wc, 0, 0, &m), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, "r", NULL, m, &r), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_relu(g, "unused", NULL, x, &unused), PDNN_SUCCESS);

    pdnn_session *plain = session(g, 0, NULL);
    int64_t runs = -1;
    double sec = -1, first = -1;
    cr_assert_eq(pdnn_session_node_profile(plain, r, &runs, &sec, &first), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "without profile"), "%s", pdnn_last_error());
    const char *pa = NULL;
    double pf = 0;
    cr_assert_eq(pdnn_session_node_work(plain, r, &pa, &pf), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "without profile"), "%s", pdnn_last_error());
    pdnn_session_destroy(plain);

    pdnn_session_config c;
    pdnn_session_config_init(&c);
    c.profile = 1;
    pdnn_session *s = NULL;
    cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_device *dev = NULL;
    cr_assert_eq(pdnn_session_node_device(s, x, &dev), PDNN_SUCCESS);
    pdnn_tensor *xv = NULL;
    cr_assert_eq(pdnn_tensor_create(dev, &d, &xv), PDNN_SUCCESS);
    float xs[8 * 16];
    th_fill(xs, 8 * 16, 8);
    cr_assert_eq(pdnn_tensor_write(xv, xs, sizeof xs), PDNN_SUCCESS);
    for (int i = 0; i < 3; i++) {
        pdnn_tensor *out = NULL;
        cr_assert_eq(pdnn_session_run(s, &x, &xv, 1, &r, 1, &out), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_tensor_release(out);
    }
    pdnn_node ran[] = {m, r};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(pdnn_session_node_profile(s, ran[i], &runs, &sec, &first), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        cr_assert_eq(runs, 3, "node %d ran %lld times", ran[i], (long long)runs);
        cr_assert(first > 0 && sec >= first, "node %d: %g s in all, %g first", ran[i], sec, first);
    }
    pdnn_node idle[] = {x, wc, unused};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pdnn_session_node_profile(s, idle[i], &runs, &sec, NULL), PDNN_SUCCESS);
        cr_assert(runs == 0 && sec == 0, "node %d: %lld runs, %g s", idle[i], (long long)runs, sec);
    }
    cr_assert_eq(pdnn_session_node_profile(s, 99, &runs, &sec, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_session_node_profile(s, r, NULL, &sec, NULL), PDNN_ERR_INVALID_ARGUMENT);
    /* The work: the matmul's 8 x 4 outputs of 16 multiply-adds; no flops
     * or algorithm for relu or for a node that never ran. */
    const char *algo = NULL;
    double flops = -1;
    cr_assert_eq(pdnn_session_node_work(s, m, &algo, &flops), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert(flops == 2.0 * 8 * 4 * 16 && strcmp(algo, "") == 0, "matmul: %g flops, algorithm '%s'", flops, algo);
    cr_assert_eq(pdnn_session_node_work(s, r, &algo, &flops), PDNN_SUCCESS);
    cr_assert(flops == 0, "relu: %g flops", flops);
    cr_assert_eq(pdnn_session_node_work(s, unused, &algo, &flops), PDNN_SUCCESS);
    cr_assert(flops == 0, "a node that never ran: %g flops", flops);
    cr_assert_eq(pdnn_session_node_work(s, 99, &algo, &flops), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_session_node_work(s, m, NULL, &flops), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "algorithm"), "%s", pdnn_last_error());
    pdnn_tensor_release(xv);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

/* The activation and concat nodes (ONNX's Clip, LeakyRelu, Sigmoid,
 * Concat): op types in the placement log, shape errors, and a run on the
 * default device that matches the host's. */
Test(graph, activation_and_concat_nodes)
{
    float out[2][2 * 7 * 3 * 3];
    for (int pass = 0; pass < 2; pass++) {
        const char *dev = pass ? "/cpu:0" : NULL;
        pdnn_graph *g = NULL;
        cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
        pdnn_tensor_desc xd = th_desc(PDNN_NHWC, 2, 3, 3, 3), od = th_desc(PDNN_NHWC, 2, 4, 3, 3);
        pdnn_node x, o, a, b, c, y, bad;
        float ov[2 * 4 * 9];
        th_fill(ov, 2 * 4 * 9, 3);
        cr_assert_eq(pdnn_graph_placeholder(g, "x", dev, &xd, &x), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_constant(g, "o", dev, &od, ov, &o), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_activation(g, NULL, dev, x, PDNN_ACTIVATION_SIGMOID, 0, 0, &a), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_activation(g, NULL, dev, o, PDNN_ACTIVATION_LEAKY_RELU, 0.1f, 0, &b), PDNN_SUCCESS);
        cr_assert_str_eq(pdnn_graph_node_name(g, a), "Sigmoid");
        cr_assert_str_eq(pdnn_graph_node_op(g, b), "LeakyRelu");
        pdnn_node in[2] = {a, b}, mism[2] = {a, x};
        cr_assert_eq(pdnn_graph_concat(g, "cat", dev, in, 2, 1, &c), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_tensor_desc cd;
        cr_assert_eq(pdnn_graph_node_desc(g, c, &cd), PDNN_SUCCESS);
        cr_assert_eq(cd.dims[1], 7);
        cr_assert_eq(cd.layout, PDNN_NHWC);
        cr_assert_eq(pdnn_graph_activation(g, "y", dev, c, PDNN_ACTIVATION_CLIP, -0.2f, 0.6f, &y), PDNN_SUCCESS);
        cr_assert_str_eq(pdnn_graph_node_op(g, y), "Clip");
        cr_assert_eq(pdnn_graph_concat(g, NULL, dev, in, 2, 0, &bad), PDNN_ERR_INVALID_ARGUMENT);
        cr_assert_not_null(strstr(pdnn_last_error(), "every dim but axis 0"), "%s", pdnn_last_error());
        cr_assert_eq(pdnn_graph_concat(g, NULL, dev, mism, 2, 4, &bad), PDNN_ERR_INVALID_ARGUMENT);
        cr_assert_eq(pdnn_graph_activation(g, NULL, dev, x, PDNN_ACTIVATION_CLIP, 1, 0, &bad),
                     PDNN_ERR_INVALID_ARGUMENT);
        cr_assert_eq(pdnn_graph_activation(g, NULL, dev, x, (pdnn_activation)99, 0, 0, &bad),
                     PDNN_ERR_INVALID_ARGUMENT);
        logbuf log = {{0}};
        pdnn_session *s = session(g, 0, &log);
        cr_assert_not_null(strstr(log.text, "Sigmoid"), "%s", log.text);
        cr_assert_not_null(strstr(log.text, "cat: (ConcatV2)"), "%s", log.text);
        pdnn_device *h;
        cr_assert_eq(pdnn_device_find(pdnn_session_context(s), "/cpu:0", &h), PDNN_SUCCESS);
        float xv[2 * 27];
        th_fill(xv, 2 * 27, 4);
        for (int i = 0; i < 2 * 27; i++)
            xv[i] *= 4.0f;
        pdnn_tensor *xt = th_upload(h, &xd, xv), *yt = NULL;
        cr_assert_eq(pdnn_session_run(s, &x, &xt, 1, &y, 1, &yt), PDNN_SUCCESS, "%s", pdnn_last_error());
        float *got = th_download(yt);
        memcpy(out[pass], got, sizeof out[pass]);
        /* NHWC: element (n, c, h, w) at ((n*3 + h)*3 + w)*7 + c; check one pixel's 7 channels here. */
        for (int ch = 0; ch < 7; ch++) {
            const double v = ch < 3 ? 1.0 / (1.0 + exp(-(double)xv[ch])) : (ov[ch - 3] >= 0 ? ov[ch - 3] : 0.1 * ov[ch - 3]);
            const double want = v < -0.2 ? -0.2 : v > 0.6 ? 0.6 : v;
            cr_assert_float_eq(got[ch], want, 1e-6, "channel %d: %g, want %g", ch, (double)got[ch], want);
        }
        free(got);
        pdnn_tensor_release(xt);
        pdnn_tensor_release(yt);
        pdnn_session_destroy(s);
        pdnn_graph_destroy(g);
    }
    for (int i = 0; i < 2 * 7 * 9; i++)
        cr_assert_float_eq(out[0][i], out[1][i], 1e-6, "element %d: placed %g, host %g", i, (double)out[0][i],
                           (double)out[1][i]);
}

/* A chain of convolutions whose constant filters OpenCL's algorithms keep
 * packed after the first run: the packed copies count in the live set, and
 * under a memory limit with room for the filters but not their copies the
 * session still runs, to the same output (the copies give way). */
static float *run_conv_chain(uint64_t limit, int64_t squeeze, int64_t *live, int *opencl)
{
    enum { L = 6, C = 256, HW = 4 };
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    const pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, C, HW, HW), wd = th_desc(PDNN_OIHW, C, C, 3, 3);
    float *w = malloc((size_t)C * C * 9 * sizeof *w);
    pdnn_node x, y;
    cr_assert_eq(pdnn_graph_placeholder(g, "x", NULL, &xd, &x), PDNN_SUCCESS);
    y = x;
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
    for (int i = 0; i < L; i++) {
        th_fill(w, (int64_t)C * C * 9, 40 + (uint32_t)i);
        for (int64_t e = 0; e < (int64_t)C * C * 9; e++)
            w[e] /= 48.0f;
        pdnn_node wn;
        cr_assert_eq(pdnn_graph_constant(g, NULL, NULL, &wd, w, &wn), PDNN_SUCCESS);
        cr_assert_eq(pdnn_graph_conv2d(g, NULL, NULL, y, wn, -1, &p, &y), PDNN_SUCCESS, "%s", pdnn_last_error());
    }
    free(w);
    pdnn_session_config c;
    pdnn_session_config_init(&c);
    c.options.allow_growth = squeeze == 0; /* squeeze: one region, no growth */
    c.options.memory_limit = limit;
    pdnn_session *s = NULL;
    cr_assert_eq(pdnn_session_create(g, &c, &s), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_device *dev;
    cr_assert_eq(pdnn_session_node_device(s, y, &dev), PDNN_SUCCESS);
    pdnn_device_info info;
    cr_assert_eq(pdnn_device_get_info(dev, &info), PDNN_SUCCESS);
    *opencl = strcmp(info.backend, "opencl") == 0;
    float *xv = malloc((size_t)C * HW * HW * sizeof *xv);
    th_fill(xv, (int64_t)C * HW * HW, 7);
    pdnn_tensor *xt = th_upload(dev, &xd, xv), *o = NULL;
    free(xv);
    for (int run = 0; run < 2; run++) {
        pdnn_tensor_release(o);
        o = NULL;
        cr_assert_eq(pdnn_session_run(s, &x, &xt, 1, &y, 1, &o), PDNN_SUCCESS, "run %d under a limit of %llu B: %s",
                     run, (unsigned long long)limit, pdnn_last_error());
    }
    cr_assert_eq(pdnn_session_memory_live_peak(s, dev, live), PDNN_SUCCESS);
    if (squeeze > 0 && *opencl) {
        /* A filler over all but 512 KiB of the largest free chunk, then a
         * tensor of squeeze bytes: room for it only where copies give
         * way. Then a run, which makes them again. */
        pdnn_memory_stats ms;
        cr_assert_eq(pdnn_device_get_memory_stats(dev, &ms), PDNN_SUCCESS);
        cr_assert_gt(ms.largest_free_chunk, (uint64_t)1 << 20);
        const pdnn_tensor_desc fd = th_desc(PDNN_LAYOUT_X, (int64_t)(ms.largest_free_chunk - (1 << 19)) / 4, 1, 1, 1);
        const pdnn_tensor_desc bd = th_desc(PDNN_LAYOUT_X, squeeze / 4, 1, 1, 1);
        pdnn_tensor *filler = NULL, *big = NULL;
        cr_assert_eq(pdnn_tensor_create(dev, &fd, &filler), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_tensor_create(dev, &bd, &big), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_tensor_release(big);
        pdnn_tensor_release(filler);
        pdnn_tensor_release(o);
        o = NULL;
        cr_assert_eq(pdnn_session_run(s, &x, &xt, 1, &y, 1, &o), PDNN_SUCCESS, "%s", pdnn_last_error());
    }
    float *out = th_download(o);
    pdnn_tensor_release(o);
    pdnn_tensor_release(xt);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
    return out;
}

static void check_chain(const float *got, const float *want, int64_t n)
{
    float worst = 0.0f, scale = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        worst = fmaxf(worst, fabsf(got[i] - want[i]));
        scale = fmaxf(scale, fabsf(want[i]));
    }
    cr_assert_gt(scale, 0.0f);
    cr_assert_leq(worst, 1e-4f * scale, "differs by %g (largest output %g)", (double)worst, (double)scale);
}

Test(graph, packed_constants_count_and_give_way)
{
    const int64_t filters = 6 * (int64_t)256 * 256 * 9 * 4, yn = 256 * 4 * 4;
    int64_t live_free = 0, live_tight = 0;
    int opencl = 0;
    float *want = run_conv_chain(0, 0, &live_free, &opencl);
    if (!opencl) {
        free(want);
        cr_skip_test("no OpenCL device");
    }
    /* The filters and their kept copies, both live. */
    cr_assert_geq(live_free, 2 * filters, "largest live set %lld B, filters %lld B", (long long)live_free,
                  (long long)filters);
    /* Room for the filters and a few copies, not for all of them. */
    float *got = run_conv_chain((uint64_t)filters * 3 / 2, 0, &live_tight, &opencl);
    cr_assert_lt(live_tight, 2 * filters, "more copies than fit: largest live set %lld B", (long long)live_tight);
    check_chain(got, want, yn);
    free(got);
    /* Room for the filters and all of their copies, one of which a 2 MiB
     * tensor then needs. */
    got = run_conv_chain((uint64_t)filters * 2 + ((uint64_t)16 << 20), (int64_t)2 << 20, &live_tight, &opencl);
    cr_assert_geq(live_tight, 2 * filters, "the copies were not all kept: largest live set %lld B",
                  (long long)live_tight);
    check_chain(got, want, yn);
    free(got);
    free(want);
}

/* One 64-channel 3x3 convolution of a 56x56 image (0.23 GFLOP); with
 * gradients of x where train is set. */
static pdnn_graph *conv_graph(int train, pdnn_node *y)
{
    pdnn_graph *g;
    cr_assert_eq(pdnn_graph_create(&g), PDNN_SUCCESS);
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, 64, 56, 56), wd = th_desc(PDNN_OIHW, 64, 64, 3, 3);
    float *w = calloc(64 * 64 * 9, sizeof *w);
    cr_assert_not_null(w);
    pdnn_node x, wn;
    cr_assert_eq(pdnn_graph_placeholder(g, "x", NULL, &xd, &x), PDNN_SUCCESS);
    cr_assert_eq(pdnn_graph_constant(g, "w", NULL, &wd, w, &wn), PDNN_SUCCESS);
    free(w);
    pdnn_conv2d_params cp;
    pdnn_conv2d_params_init(&cp);
    cp.pad_top = cp.pad_bottom = cp.pad_left = cp.pad_right = 1;
    cr_assert_eq(pdnn_graph_conv2d(g, "conv", NULL, x, wn, -1, &cp, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_node dx;
    if (train)
        cr_assert_eq(pdnn_graph_gradients(g, *y, &x, 1, &dx), PDNN_SUCCESS, "%s", pdnn_last_error());
    return g;
}

/* AUTO placement on a CPU-only machine (PoCL as /device:GPU:0 beside the
 * host built with oneDNN, issue 45): with OMP_WAIT_POLICY=passive an
 * inference and a training graph of real work go to /cpu:0 and a small one
 * stays on PoCL; without it all stay on PoCL; each says why in the
 * placement log. Anywhere else no such line and the default order. */
Test(graph, auto_placement_between_the_host_and_pocl)
{
    pdnn_node y, ys, xs, yt;
    pdnn_graph *g = conv_graph(0, &y), *gs = small_cnn(NULL, PDNN_NCHW, &xs, &ys), *gt = conv_graph(1, &yt);
    logbuf *log = calloc(4, sizeof *log);
    cr_assert_not_null(log);
    cr_assert_eq(setenv("OMP_WAIT_POLICY", "PASSIVE", 1), 0); /* read at placement only */
    pdnn_session *s = session(g, 0, &log[0]), *ss = session(gs, 0, &log[1]), *st = session(gt, 0, &log[2]);
    cr_assert_eq(unsetenv("OMP_WAIT_POLICY"), 0);
    pdnn_session *sa = session(g, 0, &log[3]);
    pdnn_device *gd;
    pdnn_device_info gi;
    const int pocl = pdnn_device_count(pdnn_session_context(s)) == 2 &&
                     pdnn_device_find(pdnn_session_context(s), "/gpu:0", &gd) == PDNN_SUCCESS &&
                     pdnn_device_get_info(gd, &gi) == PDNN_SUCCESS && strcmp(gi.backend, "opencl") == 0 &&
                     (strncmp(gi.device_name, "pthread", 7) == 0 || strncmp(gi.device_name, "cpu", 3) == 0);
    if (pocl && pdnn_conv_algo_parse("onednn") >= 0) {
        cr_assert_str_eq(placed(s, y), "/device:CPU:0");
        cr_assert_not_null(strstr(log[0].text, "AUTO placement: " FULL("CPU", 0) " (oneDNN) ahead of " FULL("GPU", 0)),
                           "%s", log[0].text);
        cr_assert_not_null(strstr(log[0].text, "an inference graph of 0.23 GFLOP a run"), "%s", log[0].text);
        cr_assert_str_eq(placed(ss, ys), "/device:GPU:0");
        cr_assert_not_null(strstr(log[1].text, "AUTO placement: " FULL("GPU", 0)), "%s", log[1].text);
        cr_assert_not_null(strstr(log[1].text, "under 0.1 GFLOP a run"), "%s", log[1].text);
        cr_assert_str_eq(placed(st, yt), "/device:CPU:0");
        cr_assert_not_null(strstr(log[2].text, "(oneDNN) ahead of " FULL("GPU", 0)), "%s", log[2].text);
        cr_assert_not_null(strstr(log[2].text, "a training graph of"), "%s", log[2].text);
        cr_assert_str_eq(placed(sa, y), "/device:GPU:0");
        cr_assert_not_null(strstr(log[3].text, "OMP_WAIT_POLICY is not passive"), "%s", log[3].text);
    } else {
        for (int i = 0; i < 4; i++)
            cr_assert_null(strstr(log[i].text, "AUTO placement"), "%s", log[i].text);
        cr_assert_str_eq(placed(s, y), has_gpu(s) ? "/device:GPU:0" : "/device:CPU:0");
    }
    pdnn_session_destroy(s);
    pdnn_session_destroy(ss);
    pdnn_session_destroy(st);
    pdnn_session_destroy(sa);
    pdnn_graph_destroy(g);
    pdnn_graph_destroy(gs);
    pdnn_graph_destroy(gt);
    free(log);
}
