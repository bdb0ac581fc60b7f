/* Device memory through the public API on real devices: limits from a
 * fraction, allow_growth, out-of-memory that leaves the process working,
 * run-time limits, release_unused, and two processes sharing one device. */
#include "helpers.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* growth: 0 reserve the limit, 1 gradual growth, 2 doubling growth. */
static pdnn_context *ctx_with(int growth, double fraction, pdnn_device **gpu)
{
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = growth != 0;
    o.growth_policy = growth == 2 ? PDNN_GROWTH_DOUBLE : PDNN_GROWTH_GRADUAL;
    o.memory_fraction = fraction;
    pdnn_device *accel[8];
    int naccel;
    pdnn_context *ctx = th_accel_context_opts(&o, accel, &naccel);
    *gpu = accel[0];
    return ctx;
}

/* The first accelerator of ctx whose backend has algorithm algo (the
 * OpenCL kernels' workspaces are what some tests count); skips without. */
static pdnn_device *with_algo(pdnn_context *ctx, pdnn_conv_algo algo)
{
    pdnn_device *accel[8];
    const int n = th_accelerators(ctx, accel, 8);
    for (int i = 0; i < n; i++)
        if (th_has_algo(accel[i], algo))
            return accel[i];
    pdnn_context_destroy(ctx);
    cr_skip_test("no accelerator has algorithm %s", pdnn_conv_algo_name(algo));
}

static pdnn_memory_stats stats(pdnn_device *d)
{
    pdnn_memory_stats s;
    cr_assert_eq(pdnn_device_get_memory_stats(d, &s), PDNN_SUCCESS);
    return s;
}

Test(memory, stats_are_exact_and_growth_is_gradual)
{
    pdnn_device *d;
    pdnn_context *ctx = ctx_with(1, 0.0, &d);
    pdnn_memory_stats s = stats(d);
    cr_assert_eq(s.bytes_reserved, 0, "nothing is reserved before first use");
    pdnn_tensor_desc small = th_desc(PDNN_NCHW, 1, 1, 1, 250); /* 1000 B -> 1024 */
    pdnn_tensor *a = th_upload(d, &small, NULL);
    s = stats(d);
    cr_assert_eq(s.bytes_in_use, 1024);
    cr_assert_eq(s.bytes_reserved, 2u << 20, "first region is 2 MiB with allow_growth");
    cr_assert_eq(s.num_allocs, 1);
    /* 3 MiB does not fit in what is left: the next region is the request
     * (more than 1/16 of the 2 MiB reserved). */
    pdnn_tensor_desc big = th_desc(PDNN_NCHW, 3, 256, 256, 4);
    pdnn_tensor *b = th_upload(d, &big, NULL);
    s = stats(d);
    cr_assert_eq(s.bytes_in_use, 1024 + (3u << 20));
    cr_assert_eq(s.bytes_reserved, (2u << 20) + (3u << 20));
    cr_assert_eq(s.num_regions, 2);
    cr_assert_eq(s.largest_alloc, 3u << 20);
    pdnn_tensor_release(b);
    s = stats(d);
    cr_assert_eq(s.bytes_in_use, 1024);
    cr_assert_eq(s.peak_bytes_in_use, 1024 + (3u << 20));
    cr_assert_eq(s.bytes_reserved, 5u << 20, "regions are kept after tensors die");
    cr_assert_eq(pdnn_device_reset_peak_stats(d), PDNN_SUCCESS);
    cr_assert_eq(stats(d).peak_bytes_in_use, 1024);
    uint64_t freed = 0;
    cr_assert_eq(pdnn_device_release_unused(d, &freed), PDNN_SUCCESS);
    cr_assert_eq(freed, 3u << 20, "only the empty 3 MiB region goes back");
    cr_assert_eq(stats(d).bytes_reserved, 2u << 20);
    char dump[4096];
    cr_assert_eq(pdnn_device_memory_summary(d, dump, sizeof dump), PDNN_SUCCESS);
    cr_assert_gt(strlen(dump), 0);
    pdnn_tensor_release(a);
    pdnn_context_destroy(ctx);
}

/* TensorFlow's rule on request: the second region doubles to 4 MiB. */
Test(memory, growth_doubles_on_request)
{
    pdnn_device *d;
    pdnn_context *ctx = ctx_with(2, 0.0, &d);
    pdnn_tensor_desc small = th_desc(PDNN_NCHW, 1, 1, 1, 250);
    pdnn_tensor_desc big = th_desc(PDNN_NCHW, 3, 256, 256, 4);
    pdnn_tensor *a = th_upload(d, &small, NULL), *b = th_upload(d, &big, NULL);
    pdnn_memory_stats s = stats(d);
    cr_assert_eq(s.bytes_reserved, (2u << 20) + (4u << 20));
    cr_assert_eq(s.num_regions, 2);
    pdnn_tensor_release(b);
    pdnn_tensor_release(a);
    pdnn_context_destroy(ctx);
}

/* With fraction 0.1 a conv whose tensors fit runs, one whose tensors do
 * not fails with a message a person can act on, and the process goes on. */
Test(memory, fraction_limit_oom_then_recovery)
{
    pdnn_device *d;
    pdnn_context *ctx = ctx_with(1, 0.1, &d);
    pdnn_device_info info;
    cr_assert_eq(pdnn_device_get_info(d, &info), PDNN_SUCCESS);
    uint64_t limit = stats(d).limit;
    cr_assert_eq(limit, (uint64_t)((double)info.memory_bytes * 0.1));

    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
    /* Fits: 2 x 16x32x32 activations and a small filter. */
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 2, 16, 32, 32), wd = th_desc(PDNN_OIHW, 16, 16, 3, 3);
    pdnn_tensor *x = th_upload(d, &xd, NULL), *w = th_upload(d, &wd, NULL), *y = th_upload(d, &xd, NULL);
    cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());

    /* Does not fit: an activation larger than the whole limit. */
    int64_t n = (int64_t)(limit / (64 * 56 * 56 * 4)) + 1;
    pdnn_tensor_desc hd = th_desc(PDNN_NCHW, n, 64, 56, 56);
    pdnn_tensor *h = NULL;
    pdnn_status st = pdnn_tensor_create(d, &hd, &h);
    cr_assert_eq(st, PDNN_ERR_OUT_OF_MEMORY, "got %s: %s", pdnn_status_string(st), pdnn_last_error());
    const char *msg = pdnn_last_error();
    cr_assert(strstr(msg, info.name) != NULL, "message names the device: %s", msg);
    cr_assert(strstr(msg, "memory_fraction 0.1") != NULL, "message names the limit's source: %s", msg);
    cr_assert(strstr(msg, "[") != NULL, "message names the tensor shape: %s", msg);
    cr_assert_null(h);

    /* The process keeps working. */
    cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_memory_stats s = stats(d);
    cr_assert_leq(s.bytes_reserved, limit);
    pdnn_tensor_release(x);
    pdnn_tensor_release(w);
    pdnn_tensor_release(y);
    pdnn_context_destroy(ctx);
}

Test(memory, growth_stays_below_the_limit)
{
    pdnn_device *d;
    pdnn_context *ctx = ctx_with(1, 0.02, &d);
    uint64_t limit = stats(d).limit;
    pdnn_tensor *ts[64];
    int n = 0;
    /* 4 MiB, or 1/32 of the limit where that is more: PoCL's memory (and
     * so 2% of it) follows the machine's free memory, and 64 tensors must
     * reach the limit on a large device too. */
    int64_t rows = 1024;
    if (limit / 32 > ((uint64_t)4 << 20))
        rows = (int64_t)(limit / 32 / 4096);
    pdnn_tensor_desc td = th_desc(PDNN_NCHW, 1, 1, rows, 1024);
    uint64_t last = 0;
    while (n < 64) {
        pdnn_status st = pdnn_tensor_create(d, &td, &ts[n]);
        if (st != PDNN_SUCCESS) {
            cr_assert_eq(st, PDNN_ERR_OUT_OF_MEMORY, "%s", pdnn_last_error());
            break;
        }
        n++;
        pdnn_memory_stats s = stats(d);
        cr_assert_geq(s.bytes_reserved, last, "reserved never shrinks while growing");
        cr_assert_leq(s.bytes_reserved, limit);
        last = s.bytes_reserved;
    }
    cr_assert_gt(n, 2, "several %lld-row tensors fit in %llu bytes", (long long)rows, (unsigned long long)limit);
    cr_assert_lt(n, 64, "the limit was never reached");
    for (int i = 0; i < n; i++)
        pdnn_tensor_release(ts[i]);
    pdnn_context_destroy(ctx);
}

Test(memory, without_growth_the_whole_limit_is_reserved_on_first_use)
{
    pdnn_device *d;
    pdnn_context *ctx = ctx_with(0, 0.05, &d);
    uint64_t limit = stats(d).limit;
    pdnn_tensor_desc td = th_desc(PDNN_NCHW, 1, 1, 1, 64);
    pdnn_tensor *t = th_upload(d, &td, NULL);
    pdnn_memory_stats s = stats(d);
    char sum[8192] = "";
    cr_assert_eq(pdnn_device_memory_summary(d, sum, sizeof sum), PDNN_SUCCESS);
    /* Less only where the driver had less free than the limit (CUDA,
     * which leaves it keep_free), and then the summary says so. */
    if (!strstr(sum, "the first-use reservation took"))
        cr_assert_geq(s.bytes_reserved, limit - 256 * 1024, "reserved %llu of limit %llu",
                      (unsigned long long)s.bytes_reserved, (unsigned long long)limit);
    cr_assert_leq(s.bytes_reserved, limit);
    pdnn_tensor_release(t);
    pdnn_context_destroy(ctx);
}

Test(memory, run_time_limit_changes)
{
    pdnn_device *d;
    pdnn_context *ctx = ctx_with(1, 0.0, &d);
    pdnn_tensor_desc td = th_desc(PDNN_NCHW, 1, 1, 1024, 1024); /* 4 MiB */
    pdnn_tensor *a = th_upload(d, &td, NULL);
    pdnn_status st = pdnn_device_set_memory_limit(d, 1u << 20);
    cr_assert_eq(st, PDNN_ERR_INVALID_ARGUMENT, "lowering below what is in use must fail");
    cr_assert_eq(pdnn_device_set_memory_limit(d, 0), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_device_set_memory_limit(d, 8u << 20), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(stats(d).limit, 8u << 20);
    pdnn_tensor *b = NULL, *c = NULL;
    cr_assert_eq(pdnn_tensor_create(d, &td, &b), PDNN_SUCCESS, "%s", pdnn_last_error());
    st = pdnn_tensor_create(d, &td, &c);
    cr_assert_eq(st, PDNN_ERR_OUT_OF_MEMORY, "a third 4 MiB tensor exceeds 8 MiB");
    cr_assert(strstr(pdnn_last_error(), "set at run time") != NULL, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_device_set_memory_limit(d, 64u << 20), PDNN_SUCCESS);
    cr_assert_eq(pdnn_tensor_create(d, &td, &c), PDNN_SUCCESS, "raising the limit lets it fit: %s",
                 pdnn_last_error());
    pdnn_tensor_release(a);
    pdnn_tensor_release(b);
    pdnn_tensor_release(c);
    cr_assert_eq(pdnn_device_get_memory_stats(NULL, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_device_release_unused(NULL, NULL), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_context_destroy(ctx);
}

/* Two contexts in one process keep their own limits on the same device. */
Test(memory, two_contexts_have_their_own_limits)
{
    pdnn_device *d1, *d2;
    pdnn_context *c1 = ctx_with(1, 0.1, &d1);
    pdnn_context *c2 = ctx_with(1, 0.3, &d2);
    cr_assert_lt(stats(d1).limit, stats(d2).limit);
    pdnn_context_destroy(c1);
    pdnn_context_destroy(c2);
}

/* Two processes on one device, each with fraction 0.4, both run and each
 * stays within its own limit. */
Test(memory, two_processes_with_fraction_0_4)
{
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        cr_assert_neq(kids[k], -1);
        if (kids[k] == 0) {
            pdnn_context_options o;
            pdnn_context_options_init(&o);
            o.allow_growth = 1;
            o.memory_fraction = 0.4;
            pdnn_context *ctx = NULL;
            if (pdnn_context_create(&o, &ctx) != PDNN_SUCCESS)
                _exit(10);
            pdnn_device *d = NULL;
            if (pdnn_device_default(ctx, &d) != PDNN_SUCCESS)
                _exit(11);
            pdnn_tensor_desc td = th_desc(PDNN_NCHW, 1, 16, 1024, 1024); /* 64 MiB */
            pdnn_tensor *ts[64];
            int n = 0;
            pdnn_memory_stats s;
            while (n < 64 && pdnn_tensor_create(d, &td, &ts[n]) == PDNN_SUCCESS)
                n++;
            pdnn_device_get_memory_stats(d, &s);
            int ok = n > 0 && s.bytes_reserved <= s.limit;
            for (int i = 0; i < n; i++)
                pdnn_tensor_release(ts[i]);
            pdnn_context_destroy(ctx);
            _exit(ok ? 0 : 12);
        }
    }
    for (int k = 0; k < 2; k++) {
        int status = 0;
        cr_assert_eq(waitpid(kids[k], &status, 0), kids[k]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d exited with %d", k,
                  WEXITSTATUS(status));
    }
}

/* Convolution workspace comes from the device's allocator: AUTO takes the
 * fastest algorithm whose workspace fits (tiled, whose workspace is the
 * packed filter, on OpenCL) and falls back down to direct (no workspace)
 * when none does; naming an algorithm whose workspace does not fit then
 * fails cleanly. The workspace is returned after the call. */
Test(memory, conv_workspace_fits_or_falls_back)
{
    pdnn_device *d;
    pdnn_context *ctx = ctx_with(1, 0.0, &d);
    d = with_algo(ctx, PDNN_CONV_ALGO_TILED);
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
    /* x, y: 1x32x32x32 (128 KiB each), w: 32x32x3x3 (36 KiB); tiled needs
     * the packed filter (36 KiB), im2col about 1.3 MiB. */
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, 32, 32, 32), wd = th_desc(PDNN_OIHW, 32, 32, 3, 3);
    pdnn_tensor *x = th_upload(d, &xd, NULL), *w = th_upload(d, &wd, NULL), *y = th_upload(d, &xd, NULL);
    pdnn_status st = pdnn_conv2d_forward(&p, x, w, NULL, y);
    cr_assert_eq(st, PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_conv_algo roomy = pdnn_conv2d_last_algorithm();
    cr_assert_neq(roomy, PDNN_CONV_ALGO_DIRECT, "with room AUTO takes an algorithm with a workspace");
    pdnn_memory_stats s = stats(d);
    cr_assert_eq(s.bytes_in_use, 2 * 131072 + 36864, "the workspace was returned");
    cr_assert_geq(s.peak_bytes_in_use, s.bytes_in_use + 36864, "the workspace came from the allocator");
    /* With room for im2col's workspace too, naming it works. */
    p.algorithm = PDNN_CONV_ALGO_IM2COL_GEMM;
    st = pdnn_conv2d_forward(&p, x, w, NULL, y);
    cr_assert(st == PDNN_SUCCESS || st == PDNN_ERR_UNSUPPORTED, "%s", pdnn_last_error());
    if (st == PDNN_SUCCESS)
        cr_assert_gt(stats(d).peak_bytes_in_use, s.bytes_in_use + 1000000, "im2col's workspace came from the allocator");
    p.algorithm = PDNN_CONV_ALGO_AUTO;

    pdnn_tensor_release(x);
    pdnn_tensor_release(w);
    pdnn_tensor_release(y);
    pdnn_context_destroy(ctx);

    /* A second context whose limit holds the tensors and 16 KiB more: no
     * workspace fits. */
    ctx = ctx_with(1, 0.0, &d);
    d = with_algo(ctx, PDNN_CONV_ALGO_TILED);
    cr_assert_eq(pdnn_device_set_memory_limit(d, 2 * 131072 + 36864 + 16384), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    x = th_upload(d, &xd, NULL);
    w = th_upload(d, &wd, NULL);
    y = th_upload(d, &xd, NULL);
    cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_conv2d_last_algorithm(), PDNN_CONV_ALGO_DIRECT, "AUTO fell back to direct");
    p.algorithm = PDNN_CONV_ALGO_IM2COL_GEMM;
    st = pdnn_conv2d_forward(&p, x, w, NULL, y);
    cr_assert_eq(st, PDNN_ERR_OUT_OF_MEMORY, "got %s", pdnn_status_string(st));
    cr_assert(strstr(pdnn_last_error(), "conv2d workspace") != NULL, "%s", pdnn_last_error());
    p.algorithm = PDNN_CONV_ALGO_DIRECT;
    cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_SUCCESS, "still working: %s", pdnn_last_error());
    pdnn_tensor_release(x);
    pdnn_tensor_release(w);
    pdnn_tensor_release(y);
    pdnn_context_destroy(ctx);
}

/* Many threads creating tensors, running convolutions and releasing on one
 * device at once: every result is right and the allocator ends empty. */
typedef struct conv_worker {
    pdnn_device *dev;
    int iters;
    int bad;
} conv_worker;

static void *conv_thread(void *arg)
{
    conv_worker *cw = arg;
    pdnn_tensor_desc xd = th_desc(PDNN_NHWC, 1, 4, 6, 6), wd = th_desc(PDNN_OHWI, 1, 4, 1, 1);
    pdnn_tensor_desc yd = th_desc(PDNN_NCHW, 1, 1, 6, 6);
    float x[144], w[4] = {1, 1, 1, 1}, y[36];
    for (int i = 0; i < 144; i++)
        x[i] = (float)(i / 4); /* every pixel's 4 channels hold the pixel index */
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    for (int it = 0; it < cw->iters; it++) {
        pdnn_tensor *tx = NULL, *tw = NULL, *ty = NULL;
        if (pdnn_tensor_create(cw->dev, &xd, &tx) || pdnn_tensor_create(cw->dev, &wd, &tw) ||
            pdnn_tensor_create(cw->dev, &yd, &ty) || pdnn_tensor_write(tx, x, sizeof x) ||
            pdnn_tensor_write(tw, w, sizeof w) || pdnn_conv2d_forward(&p, tx, tw, NULL, ty) ||
            pdnn_tensor_read(ty, y, sizeof y))
            cw->bad++;
        else
            for (int i = 0; i < 36; i++)
                if (y[i] != 4.0f * (float)i)
                    cw->bad++;
        pdnn_tensor_release(tx);
        pdnn_tensor_release(tw);
        pdnn_tensor_release(ty);
    }
    return NULL;
}

Test(memory, threads_share_a_device)
{
    pdnn_device *d;
    pdnn_context *ctx = ctx_with(1, 0.0, &d);
    pthread_t th[4];
    conv_worker cw[4];
    for (int i = 0; i < 4; i++) {
        cw[i] = (conv_worker){d, 50, 0};
        cr_assert_eq(pthread_create(&th[i], NULL, conv_thread, &cw[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(cw[i].bad, 0, "thread %d saw %d wrong results or failures", i, cw[i].bad);
    }
    pdnn_memory_stats s = stats(d);
    cr_assert_eq(s.bytes_in_use, 0);
    /* Three tensors per call, plus im2col's workspace where CLBlast is built. */
    cr_assert(s.num_allocs == 4 * 50 * 3 || s.num_allocs == 4 * 50 * 4, "%llu allocations",
              (unsigned long long)s.num_allocs);
    pdnn_context_destroy(ctx);
}

/* ---- limits above the device's memory (issue 14, item 2) ------------- */

static int count_lines_with(FILE *f, const char *needle)
{
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    return n;
}

/* Resident host memory of this process in KiB, from /proc. */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    long kib = -1;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 4 PiB through the environment: clamped to the device with a warning
 * naming the device, not 4 PiB of "limit" (the old code reported 4 PiB
 * reserved in 2 million regions on PoCL). */
Test(memory, env_limit_above_the_device_is_clamped_with_a_warning, .init = cr_redirect_stderr)
{
    setenv("POLYDNN_MEMORY_LIMIT_MB", "4294967296", 1);
    pdnn_device *d;
    pdnn_context *ctx = ctx_with(1, 0.0, &d);
    unsetenv("POLYDNN_MEMORY_LIMIT_MB");
    pdnn_device_info info;
    cr_assert_eq(pdnn_device_get_info(d, &info), PDNN_SUCCESS);
    cr_assert_gt(info.memory_bytes, 0);
    pdnn_memory_stats s = stats(d);
    cr_assert_leq(s.limit, info.memory_bytes, "limit %llu > device memory %llu", (unsigned long long)s.limit,
                  (unsigned long long)info.memory_bytes);
    cr_assert_eq(s.limit, info.memory_bytes, "clamped to the device's memory, not below it");
    pdnn_context_destroy(ctx);
    fflush(stderr);
    char want[128];
    snprintf(want, sizeof want, "warning: memory_limit 4 PiB exceeds the");
    FILE *err = cr_get_redirected_stderr();
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof line, err))
        found += strstr(line, want) != NULL && strstr(line, info.name) != NULL;
    cr_assert_eq(found, 1, "one warning naming the limit and %s", info.name);
}

/* The option at its largest value (Python's memory_limit=-1) with
 * allow_growth off: the first tensor reserves the clamped limit in a few
 * regions, quickly and without touching host memory (the old code asked
 * the driver for 2 GiB regions without end). */
Test(memory, huge_option_without_growth_reserves_quickly_and_boundedly, .init = cr_redirect_stderr,
     .timeout = 60)
{
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = 0;
    o.memory_limit = UINT64_MAX;
    pdnn_device *accel[8];
    int naccel;
    pdnn_context *ctx = th_accel_context_opts(&o, accel, &naccel);
    pdnn_device *d = accel[0];
    pdnn_device_info info;
    cr_assert_eq(pdnn_device_get_info(d, &info), PDNN_SUCCESS);
    long rss0 = rss_kib();
    double t0 = now_s();
    pdnn_tensor_desc td = th_desc(PDNN_NCHW, 1, 1, 1, 64);
    pdnn_tensor *t = NULL;
    pdnn_status st = pdnn_tensor_create(d, &td, &t);
    double secs = now_s() - t0;
    long grew = rss_kib() - rss0;
    cr_assert_lt(secs, 10.0, "reserving took %.1f s", secs);
    cr_assert_lt(grew, 256 * 1024, "host memory grew by %ld KiB while reserving", grew);
    pdnn_memory_stats s = stats(d);
    cr_assert_leq(s.limit, info.memory_bytes);
    cr_assert_leq(s.bytes_reserved, info.memory_bytes);
    cr_assert_leq(s.num_regions, 1024);
    if (st == PDNN_SUCCESS)
        pdnn_tensor_release(t);
    else /* a driver that refuses the reservation: a clear message */
        cr_assert(st == PDNN_ERR_OUT_OF_MEMORY && strstr(pdnn_last_error(), info.name), "%s", pdnn_last_error());
    pdnn_context_destroy(ctx);
    fflush(stderr);
    /* one clamp warning per accelerator (CUDA's and PoCL's on a GPU machine) */
    cr_assert_eq(count_lines_with(cr_get_redirected_stderr(), "exceeds the"), naccel);
}

/* The same clamp at run time. */
Test(memory, run_time_limit_above_the_device_is_clamped, .init = cr_redirect_stderr)
{
    pdnn_device *d;
    pdnn_context *ctx = ctx_with(1, 0.0, &d);
    pdnn_device_info info;
    cr_assert_eq(pdnn_device_get_info(d, &info), PDNN_SUCCESS);
    cr_assert_eq(pdnn_device_set_memory_limit(d, UINT64_MAX), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(stats(d).limit, info.memory_bytes);
    char dump[4096];
    cr_assert_eq(pdnn_device_memory_summary(d, dump, sizeof dump), PDNN_SUCCESS);
    cr_assert(strstr(dump, "clamped to the device's") != NULL, "%s", dump);
    pdnn_context_destroy(ctx);
    fflush(stderr);
    cr_assert_eq(count_lines_with(cr_get_redirected_stderr(), "a limit set at run time"), 1);
}
