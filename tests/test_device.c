/* Context creation, environment overrides, device naming and lookup. */
#define _GNU_SOURCE /* sched_getaffinity, sched_setaffinity */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "helpers.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(device, host_is_cpu0_and_names_are_canonical)
{
    pdnn_context *ctx = th_context();
    cr_assert_geq(pdnn_device_count(ctx), 1);
    pdnn_device *d = NULL;
    pdnn_device_info info;
    cr_assert_eq(pdnn_device_get(ctx, 0, &d), PDNN_SUCCESS);
    cr_assert_eq(pdnn_device_get_info(d, &info), PDNN_SUCCESS);
    cr_assert_str_eq(info.name, "/device:CPU:0");
    cr_assert_str_eq(info.backend, "host");
    cr_assert_gt(info.memory_bytes, 0);
    cr_assert_geq(info.compute_units, 1);
    /* Every device's name round-trips through lookup. */
    for (int i = 0; i < pdnn_device_count(ctx); i++) {
        pdnn_device *a = NULL, *b = NULL;
        cr_assert_eq(pdnn_device_get(ctx, i, &a), PDNN_SUCCESS);
        cr_assert_eq(pdnn_device_get_info(a, &info), PDNN_SUCCESS);
        cr_assert_eq(pdnn_device_find(ctx, info.name, &b), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(a, b);
    }
    pdnn_context_destroy(ctx);
}

Test(device, name_forms_are_accepted_case_insensitively)
{
    const char *ok[] = {"/cpu:0", "/CPU:0", "/device:CPU:0", "/device:cpu:0",
                        "/job:localhost/replica:0/task:0/device:CPU:0",
                        "/job:localhost/replica:0/task:0/cpu:0", "/gpu:1", "/device:GPU:12"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        pdnn_device_spec s;
        cr_assert_eq(pdnn_device_name_parse(ok[i], &s), PDNN_SUCCESS, "%s: %s", ok[i], pdnn_last_error());
    }
    pdnn_device_spec s;
    cr_assert_eq(pdnn_device_name_parse("/job:localhost/replica:0/task:0/device:GPU:1", &s), PDNN_SUCCESS);
    cr_assert_eq(s.type, PDNN_DEVICE_GPU);
    cr_assert_eq(s.index, 1);
    cr_assert_eq(s.replica, 0);
    cr_assert_str_eq(s.job, "localhost");
}

Test(device, malformed_names_are_rejected_with_a_message)
{
    const char *bad[] = {"",       "cpu:0",      "/cpu",         "/tpu:0",          "/cpu:-1",
                         "/cpu:x", "/cpu:0/",    "//cpu:0",      "/device:GPU:*",   "/gpu:1234567",
                         "/device:GPU:1/cpu:0", "/job:a/job:b/cpu:0", "/replica:x/cpu:0", "/gpu: 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pdnn_device_spec s;
        cr_assert_eq(pdnn_device_name_parse(bad[i], &s), PDNN_ERR_INVALID_ARGUMENT, "'%s' was accepted",
                     bad[i]);
        cr_assert(strstr(pdnn_last_error(), "malformed") != NULL, "%s", pdnn_last_error());
    }
    cr_assert_eq(pdnn_device_name_parse(NULL, &(pdnn_device_spec){0}), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_str_eq(pdnn_last_error(), "pdnn_device_name_parse: name is NULL");
    /* The message names the argument that is NULL, not the name. */
    cr_assert_eq(pdnn_device_name_parse("/gpu:0", NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_str_eq(pdnn_last_error(), "pdnn_device_name_parse: out is NULL");
}

Test(device, unknown_devices_list_what_exists)
{
    pdnn_context *ctx = th_context();
    pdnn_device *d = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/device:GPU:99", &d), PDNN_ERR_NOT_FOUND);
    cr_assert(strstr(pdnn_last_error(), "/device:GPU:99") != NULL, "%s", pdnn_last_error());
    cr_assert(strstr(pdnn_last_error(), "/device:CPU:0") != NULL, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_device_find(ctx, "/job:worker/replica:0/task:0/cpu:0", &d), PDNN_ERR_NOT_FOUND);
    cr_assert_eq(pdnn_device_find(ctx, "/job:localhost/replica:0/task:1/cpu:0", &d), PDNN_ERR_NOT_FOUND);
    cr_assert_eq(pdnn_device_get(ctx, -1, &d), PDNN_ERR_NOT_FOUND);
    cr_assert_eq(pdnn_device_get(ctx, pdnn_device_count(ctx), &d), PDNN_ERR_NOT_FOUND);
    cr_assert_eq(pdnn_device_find(NULL, "/cpu:0", &d), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_device_find(ctx, NULL, &d), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_device_get_info(NULL, &(pdnn_device_info){0}), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_context_destroy(ctx);
}

/* On a machine with PoCL and no GPU the OpenCL CPU device is an
 * accelerator, so the default device is /device:GPU:0. */
Test(device, pocl_counts_as_gpu_when_no_gpu_exists)
{
    pdnn_context *ctx = th_context();
    pdnn_device *accel[8];
    int n = th_accelerators(ctx, accel, 8);
    if (n == 0) {
        pdnn_context_destroy(ctx);
        cr_skip_test("no OpenCL device present");
    }
    pdnn_device *d = NULL;
    pdnn_device_info info;
    cr_assert_eq(pdnn_device_default(ctx, &d), PDNN_SUCCESS);
    cr_assert_eq(pdnn_device_get_info(d, &info), PDNN_SUCCESS);
    cr_assert_str_eq(info.name, "/device:GPU:0");
    cr_assert_str_neq(info.backend, "host");
    cr_assert_eq(pdnn_device_find(ctx, "/gpu:0", &d), PDNN_SUCCESS);
    pdnn_context_destroy(ctx);
}

Test(device, two_pocl_devices_and_visible_devices, .init = NULL)
{
    setenv("POCL_DEVICES", "pthread pthread", 1);
    pdnn_context *ctx = th_context();
    pdnn_device *accel[8];
    int n = th_accelerators(ctx, accel, 8);
    pdnn_context_destroy(ctx);
    if (n < 2)
        cr_skip_test("fewer than two OpenCL devices (POCL_DEVICES not honoured?)");
    pdnn_device *d = NULL;
    cr_assert_eq(pdnn_device_find((ctx = th_context()), "/device:GPU:1", &d), PDNN_SUCCESS);
    pdnn_context_destroy(ctx);

    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = 1;
    o.visible_devices = "1";
    cr_assert_eq(pdnn_context_create(&o, &ctx), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(th_accelerators(ctx, accel, 8), 1);
    cr_assert_eq(pdnn_device_find(ctx, "/device:GPU:1", &d), PDNN_ERR_NOT_FOUND);
    pdnn_context_destroy(ctx);

    const char *bad[] = {"2", "0,0", "a", "0,", "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.visible_devices = bad[i];
        pdnn_status st = pdnn_context_create(&o, &ctx);
        cr_assert_neq(st, PDNN_SUCCESS, "visible_devices '%s' was accepted", bad[i]);
        cr_assert(strstr(pdnn_last_error(), bad[i]) != NULL, "%s", pdnn_last_error());
    }
    /* An empty list hides every GPU, as CUDA_VISIBLE_DEVICES does. */
    o.visible_devices = "";
    cr_assert_eq(pdnn_context_create(&o, &ctx), PDNN_SUCCESS);
    cr_assert_eq(pdnn_device_find(ctx, "/gpu:0", &d), PDNN_ERR_NOT_FOUND);
    pdnn_context_destroy(ctx);
}

Test(device, invalid_environment_values_are_errors)
{
    struct {
        const char *var, *val;
    } bad[] = {{"POLYDNN_ALLOW_GROWTH", "yes"},     {"POLYDNN_ALLOW_GROWTH", "1"},
               {"POLYDNN_MEMORY_FRACTION", "0"},    {"POLYDNN_MEMORY_FRACTION", "1.5"},
               {"POLYDNN_MEMORY_FRACTION", "abc"},  {"POLYDNN_MEMORY_FRACTION", "nan"},
               {"POLYDNN_MEMORY_LIMIT_MB", "-5"},   {"POLYDNN_MEMORY_LIMIT_MB", "12x"},
               {"POLYDNN_MEMORY_LIMIT_MB", "99999999999999999999"},
               {"POLYDNN_LOG_DEVICE_PLACEMENT", "maybe"}, {"POLYDNN_GROWTH_POLICY", "Double"},
               {"POLYDNN_GROWTH_POLICY", ""}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv(bad[i].var, bad[i].val, 1);
        pdnn_context *ctx = NULL;
        cr_assert_eq(pdnn_context_create(NULL, &ctx), PDNN_ERR_INVALID_ARGUMENT, "%s=%s accepted",
                     bad[i].var, bad[i].val);
        cr_assert_null(ctx);
        cr_assert(strstr(pdnn_last_error(), bad[i].var) != NULL, "%s", pdnn_last_error());
        unsetenv(bad[i].var);
    }
    setenv("POLYDNN_ALLOW_GROWTH", "true", 1);
    setenv("POLYDNN_MEMORY_FRACTION", "0.5", 1);
    pdnn_context *ctx = NULL;
    cr_assert_eq(pdnn_context_create(NULL, &ctx), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_context_destroy(ctx);

    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.memory_fraction = 2.0;
    cr_assert_eq(pdnn_context_create(&o, &ctx), PDNN_ERR_INVALID_ARGUMENT);
    o.memory_fraction = 0;
    o.growth_policy = (pdnn_growth_policy)2;
    cr_assert_eq(pdnn_context_create(&o, &ctx), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "growth_policy") != NULL, "%s", pdnn_last_error());
    o.growth_policy = PDNN_GROWTH_GRADUAL;
    o.allow_growth = 7;
    cr_assert_eq(pdnn_context_create(&o, &ctx), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_context_create(&o, NULL), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_context_destroy(NULL);
}

Test(device, status_strings)
{
    cr_assert_str_eq(pdnn_status_string(PDNN_ERR_OUT_OF_MEMORY), "PDNN_ERR_OUT_OF_MEMORY");
    cr_assert_str_eq(pdnn_status_string((pdnn_status)999), "PDNN_ERR_UNKNOWN");
    cr_assert_str_eq(pdnn_version(), "0.1.0");
}

/* ---- PoCL's worker threads (opencl.c, pin_pocl_workers) ----------------
 * Criterion runs each test in a process of its own, so each of these sees
 * the process's first context creation, where polydnn decides. */

/* This process's threads: their ids (up to 64) into tid, the count. */
static int thread_ids(int *tid)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    for (struct dirent *e = readdir(d); e; e = readdir(d))
        if (e->d_name[0] != '.' && n < 64)
            tid[n++] = atoi(e->d_name);
    closedir(d);
    return n;
}

/* Of the threads started since thread_ids gave old[0..nold), how many run
 * on one CPU only (*cpu: the last such CPU); *threads gets how many there
 * are. */
static int new_threads_on_one_cpu(const int *old, int nold, int *cpu, int *threads)
{
    int tid[64], n = 0;
    const int all = thread_ids(tid);
    *threads = 0;
    for (int t = 0; t < all; t++) {
        int seen = 0;
        for (int o = 0; o < nold; o++)
            seen |= old[o] == tid[t];
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%d/status", tid[t]);
        FILE *f = seen ? NULL : fopen(path, "r");
        if (!f)
            continue; /* an old thread, or one that ended meanwhile */
        ++*threads;
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
                const char *v = line + 18 + strspn(line + 18, " \t");
                if (!strpbrk(v, ",-")) {
                    n++;
                    *cpu = atoi(v);
                }
            }
        fclose(f);
    }
    return n;
}

/* A context with a PoCL CPU device, or NULL (the caller skips). */
static pdnn_context *pocl_context(void)
{
    pdnn_context *ctx = th_context();
    pdnn_device *accel[8];
    pdnn_device_info info;
    if (th_accelerators(ctx, accel, 8) == 0 || pdnn_device_get_info(accel[0], &info) != PDNN_SUCCESS ||
        (strncmp(info.device_name, "pthread", 7) != 0 && strncmp(info.device_name, "cpu", 3) != 0)) {
        pdnn_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

static int may_run_on_every_cpu(long *ncpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    *ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (*ncpu < 2 || *ncpu > CPU_SETSIZE || sched_getaffinity(0, sizeof set, &set) != 0)
        return 0;
    for (long i = 0; i < *ncpu; i++)
        if (!CPU_ISSET((int)i, &set))
            return 0;
    return 1;
}

/* The three tests' start: skips unless this process may run on every
 * CPU (ncpu of them, 2 or more) and, after bind (if not NULL) has run,
 * the first context has a PoCL CPU device; *nold: the threads before it
 * (old). */
static pdnn_context *first_pocl_context(long *ncpu, void (*bind)(long ncpu), int old[64], int *nold)
{
    if (!may_run_on_every_cpu(ncpu))
        cr_skip_test("this process may not run on every CPU, or there is one");
    if (bind)
        bind(*ncpu);
    *nold = thread_ids(old);
    pdnn_context *ctx = pocl_context();
    if (!ctx)
        cr_skip_test("no PoCL CPU device");
    return ctx;
}

static void bind_to_last_cpu(long ncpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET((int)ncpu - 1, &one);
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
}

Test(device, pocl_workers_are_pinned_one_per_cpu, .init = NULL)
{
    unsetenv("POCL_AFFINITY");
    unsetenv("POCL_MAX_PTHREAD_COUNT");
    long ncpu = 0;
    int old[64], nold = 0;
    pdnn_context *ctx = first_pocl_context(&ncpu, NULL, old, &nold);
    cr_assert_str_eq(getenv("POCL_AFFINITY") ? getenv("POCL_AFFINITY") : "(unset)", "1");
    int cpu = -1, threads = 0;
    const int pinned = new_threads_on_one_cpu(old, nold, &cpu, &threads);
    cr_assert_geq(pinned, ncpu, "%d of %d threads pinned to one CPU, expected PoCL's %ld workers", pinned, threads,
                  ncpu);
    pdnn_context_destroy(ctx);
}

/* A process bound to one CPU (taskset, an MPI rank's binding) keeps its
 * binding: no thread moves to another CPU. */
Test(device, a_bound_process_keeps_its_binding, .init = NULL)
{
    unsetenv("POCL_AFFINITY");
    long ncpu = 0;
    int old[64], nold = 0;
    pdnn_context *ctx = first_pocl_context(&ncpu, bind_to_last_cpu, old, &nold);
    cr_assert_null(getenv("POCL_AFFINITY"), "POCL_AFFINITY=%s was set in a bound process", getenv("POCL_AFFINITY"));
    int cpu = -1, threads = 0;
    const int pinned = new_threads_on_one_cpu(old, nold, &cpu, &threads);
    cr_assert_gt(threads, 0, "the context started no threads");
    cr_assert_eq(pinned, threads, "%d of %d threads left the binding", threads - pinned, threads);
    cr_assert_eq(cpu, (int)ncpu - 1);
    pdnn_context_destroy(ctx);
}

/* The user's POCL_AFFINITY=0 keeps PoCL's workers unpinned. */
Test(device, the_users_pocl_affinity_is_kept, .init = NULL)
{
    setenv("POCL_AFFINITY", "0", 1);
    long ncpu = 0;
    int old[64], nold = 0;
    pdnn_context *ctx = first_pocl_context(&ncpu, NULL, old, &nold);
    cr_assert_str_eq(getenv("POCL_AFFINITY"), "0");
    int cpu = -1, threads = 0;
    cr_assert_eq(new_threads_on_one_cpu(old, nold, &cpu, &threads), 0, "a thread was pinned (to CPU %d)", cpu);
    cr_assert_gt(threads, 0, "the context started no threads");
    pdnn_context_destroy(ctx);
}

/* Without a CUDA device the context still comes up, says why in its
 * notes, and the host runs. */
Test(device, context_without_a_cuda_device)
{
    pdnn_context *ctx = th_context();
    pdnn_device *cuda = th_find_backend(ctx, "cuda");
#ifdef PDNN_HAVE_CUDA
    const char *env = getenv("POLYDNN_BACKEND");
    if (!cuda && !(env && *env))
        cr_assert(strstr(pdnn_context_notes(ctx), "cuda: no devices (") != NULL, "notes: '%s'",
                  pdnn_context_notes(ctx));
#else
    cr_assert_null(cuda);
#endif
    /* The host runs a conv whatever CUDA did: 3x3 ones, 2x2 ones filter. */
    pdnn_device *host = th_find_backend(ctx, "host");
    cr_assert_not_null(host);
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, 1, 3, 3), wd = th_desc(PDNN_OIHW, 1, 1, 2, 2);
    pdnn_tensor_desc yd = th_desc(PDNN_NCHW, 1, 1, 2, 2);
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1};
    pdnn_tensor *tx = th_upload(host, &xd, x), *tw = th_upload(host, &wd, w), *ty = th_upload(host, &yd, NULL);
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    cr_assert_eq(pdnn_conv2d_forward(&p, tx, tw, NULL, ty), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *y = th_download(ty);
    const float want[4] = {12, 16, 24, 28};
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(y[i], want[i], 1e-6, "y[%d] = %g", i, y[i]);
    free(y);
    pdnn_tensor_release(tx);
    pdnn_tensor_release(tw);
    pdnn_tensor_release(ty);
    pdnn_context_destroy(ctx);
}

/* y = x w (4x6 by 6x3) on dev, its 12 floats into y. */
static void tf32_matmul(pdnn_device *dev, float y[12])
{
    pdnn_tensor_desc ad = {PDNN_FLOAT32, PDNN_ND, {4, 6}, 2}, bd = {PDNN_FLOAT32, PDNN_ND, {6, 3}, 2};
    pdnn_tensor_desc cd = {PDNN_FLOAT32, PDNN_ND, {4, 3}, 2};
    float a[24], b[18];
    for (int i = 0; i < 24; i++)
        a[i] = 1.0f + (float)i / 3.0f; /* thirds: not exact in TF32's 10 fraction bits */
    for (int i = 0; i < 18; i++)
        b[i] = 0.1f * (float)(i - 9);
    pdnn_tensor *ta = th_upload(dev, &ad, a), *tb = th_upload(dev, &bd, b), *tc = th_upload(dev, &cd, NULL);
    cr_assert_eq(pdnn_matmul(ta, tb, 0, 0, tc), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *c = th_download(tc);
    memcpy(y, c, 12 * sizeof *y);
    free(c);
    pdnn_tensor_release(ta);
    pdnn_tensor_release(tb);
    pdnn_tensor_release(tc);
}

/* enable_tensor_float_32_execution: TensorFlow's name and default (on),
 * checked as a boolean, reported by the context, overridden by
 * POLYDNN_ENABLE_TENSOR_FLOAT_32_EXECUTION; the host and OpenCL ignore it
 * (their float32 results are the same bits either way). CUDA's use of it
 * is checked on a GPU (bench/gpu_check.sh). */
Test(device, tensor_float_32_option_is_parsed_reported_and_ignored_off_cuda, .init = NULL)
{
    const char *var = "POLYDNN_ENABLE_TENSOR_FLOAT_32_EXECUTION";
    const char *cur = getenv(var);
    char *saved = cur ? strdup(cur) : NULL; /* make check sets it false */
    unsetenv(var);
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    cr_assert_eq(o.enable_tensor_float_32_execution, 1, "TensorFlow's default is on");
    pdnn_context *ctx = NULL;
    cr_assert_eq(pdnn_context_create(NULL, &ctx), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_context_tensor_float_32_enabled(ctx), 1);
    pdnn_context_destroy(ctx);
    cr_assert_eq(pdnn_context_tensor_float_32_enabled(NULL), 0);

    o.enable_tensor_float_32_execution = 2;
    cr_assert_eq(pdnn_context_create(&o, &ctx), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "enable_tensor_float_32_execution"), "%s", pdnn_last_error());

    /* the environment wins both ways; anything but a boolean is refused by name */
    const struct {
        const char *env;
        int opt, want;
    } env_cases[] = {{"false", 1, 0}, {"0", 1, 0}, {"true", 0, 1}, {"1", 0, 1}, {"true", 1, 1}};
    for (size_t i = 0; i < sizeof env_cases / sizeof env_cases[0]; i++) {
        setenv(var, env_cases[i].env, 1);
        o.enable_tensor_float_32_execution = env_cases[i].opt;
        cr_assert_eq(pdnn_context_create(&o, &ctx), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_context_tensor_float_32_enabled(ctx), env_cases[i].want, "option %d, %s=%s",
                     env_cases[i].opt, var, env_cases[i].env);
        pdnn_context_destroy(ctx);
    }
    setenv(var, "yes", 1);
    cr_assert_eq(pdnn_context_create(NULL, &ctx), PDNN_ERR_INVALID_ARGUMENT, "yes accepted");
    cr_assert(strstr(pdnn_last_error(), var), "%s", pdnn_last_error());
    unsetenv(var);

    /* off CUDA, the same bits with the option on and off */
    pdnn_context *on = NULL, *off = NULL;
    o.allow_growth = 1;
    o.enable_tensor_float_32_execution = 1;
    cr_assert_eq(pdnn_context_create(&o, &on), PDNN_SUCCESS, "%s", pdnn_last_error());
    o.enable_tensor_float_32_execution = 0;
    cr_assert_eq(pdnn_context_create(&o, &off), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_device_count(on), pdnn_device_count(off));
    int compared = 0;
    for (int i = 0; i < pdnn_device_count(on); i++) {
        pdnn_device *d_on = NULL, *d_off = NULL;
        pdnn_device_info info;
        cr_assert_eq(pdnn_device_get(on, i, &d_on), PDNN_SUCCESS);
        cr_assert_eq(pdnn_device_get(off, i, &d_off), PDNN_SUCCESS);
        cr_assert_eq(pdnn_device_get_info(d_on, &info), PDNN_SUCCESS);
        if (strcmp(info.backend, "cuda") == 0)
            continue;
        float y_on[12], y_off[12];
        tf32_matmul(d_on, y_on);
        tf32_matmul(d_off, y_off);
        cr_assert(memcmp(y_on, y_off, sizeof y_on) == 0, "%s (%s): the option changed a float32 matmul", info.name,
                  info.backend);
        compared++;
    }
    cr_assert_geq(compared, 1, "the host at least");
    pdnn_context_destroy(on);
    pdnn_context_destroy(off);
    if (saved) {
        setenv(var, saved, 1);
        free(saved);
    }
}
