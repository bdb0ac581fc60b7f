/* Context creation, environment overrides, device naming and lookup. */
#include "helpers.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

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
