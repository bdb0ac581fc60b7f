/* The OpenCL backend's device table (backends/opencl/cl_device_table.c):
 * each device class finds its row and the thresholds and default
 * configurations the plans chose by before they were data (the classes
 * PoCL here cannot be: AVX2 CPUs, GPUs, other accelerators), and every
 * row names only kernels and configurations the build has. */
#include "backend.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#ifdef PDNN_HAVE_OPENCL
#include "backends/opencl/cl_device_table.h"

/* The index of the class's default for kernel (variant first). */
static int dflt(const pdnn__cl_device_class *cls, const char *kernel, const char *variant)
{
    return pdnn__cl_default_index(cls, kernel, variant);
}

Test(cl_device_table, every_row_names_real_kernels_and_configurations)
{
    for (int r = 0; r < pdnn__cl_n_device_rows; r++) {
        const pdnn__cl_device_row *row = &pdnn__cl_device_rows[r];
        for (int i = 0; i < PDNN__CL_MAX_DEFAULTS && row->configs[i].kernel; i++) {
            const char *k = row->configs[i].kernel, *slash = strchr(k, '/');
            const pdnn__algo *a = pdnn__cl_tunable_algo(k, slash ? (size_t)(slash - k) : strlen(k));
            cr_assert(a, "row '%s': %s is no tunable kernel", row->name, k);
            cr_expect(!slash || strcmp(slash, "/nchw") == 0 || strcmp(slash, "/nt") == 0 || strcmp(slash, "/tn") == 0,
                      "row '%s': %s: no plan asks for that variant", row->name, k);
            cr_expect_geq(pdnn__cl_config_index(a, row->configs[i].config), 0, "row '%s': %s has no configuration '%s'",
                          row->name, k, row->configs[i].config);
        }
    }
}

/* The fields that size launches are never 0 once a class is looked up. */
static void expect_sizes(const pdnn__cl_thresholds *t)
{
    cr_expect(t->gemm_wg_pixels > 0 && t->wino_tt > 0 && t->wino_kb > 0 && t->dw_nhwc_vw > 0 && t->dw_columns > 0 &&
              t->dw_wide_min_q > 0 && t->dw_nchw_rows > 0 && t->dw_nchw_items > 0 && t->pool_wg > 0 &&
              t->g1_rows_min_pixels > 0 && t->g1_rows_max_c > 0 && t->wino_first_max_ck > 0);
}

Test(cl_device_table, avx512_cpu)
{
    pdnn__cl_device_class c;
    pdnn__cl_device_class_of("AuthenticAMD", CL_DEVICE_TYPE_CPU, 16, &c);
    cr_assert(c.row && c.generic);
    cr_expect_str_eq(c.row->name, "CPU with 16-float vectors (AVX-512)");
    cr_expect_str_eq(c.generic->name, "CPU");
    const pdnn__cl_thresholds *t = &c.t;
    expect_sizes(t);
    cr_expect(t->wino_tt == 12 && t->wino_kb == 2 && t->dw_nhwc_vw == 16 && t->dw_columns == 16 &&
              t->dw_nchw_rows == 4);
    /* and the CPUs' own */
    cr_expect(t->sweep_tiles == 1 && t->sweep_floats == 32768 && t->gemm_wg_pixels == 1 &&
              t->ig_relayout_floats == 384 * 1024 && t->wino_first_min_tiles == 49 &&
              t->wino_first_max_ck == 65536 && t->dw_wide_min_q == 14 && t->dw_nchw_items == 512 &&
              t->dw_plane_max_pixels == 56 * 56 && t->pool_sweep == 1 && t->pool_wg == 4 &&
              t->matmul_tiled_first == 1 && t->bwd_filter_gemm_auto == 1 && t->g1_rows_min_pixels == 784 &&
              t->g1_rows_max_c == 256);
    cr_expect_eq(dflt(&c, "conv2d_tiled", NULL), 2);
    cr_expect_eq(dflt(&c, "conv2d_tiled", "nchw"), 2);
    cr_expect_eq(dflt(&c, "conv2d_gemm_1x1", NULL), 4);
    cr_expect_eq(dflt(&c, "conv2d_gemm_1x1", "nchw"), 8);
    cr_expect_eq(dflt(&c, "conv2d_implicit_gemm", NULL), 0);
    cr_expect_eq(dflt(&c, "conv2d_implicit_gemm", "nchw"), 7);
    cr_expect_eq(dflt(&c, "conv2d_bwd_filter_gemm", "nt"), 0);
    cr_expect_eq(dflt(&c, "conv2d_bwd_filter_gemm", "tn"), 1);
    cr_expect_eq(dflt(&c, "conv2d_bwd_data_igemm", NULL), -1);
}

Test(cl_device_table, other_cpu)
{
    pdnn__cl_device_class c;
    pdnn__cl_device_class_of("GenuineIntel", CL_DEVICE_TYPE_CPU, 8, &c);
    cr_assert(c.generic);
    cr_expect_null(c.row);
    cr_expect_str_eq(c.generic->name, "CPU");
    const pdnn__cl_thresholds *t = &c.t;
    expect_sizes(t);
    cr_expect(t->wino_tt == 8 && t->wino_kb == 1 && t->dw_nhwc_vw == 8 && t->dw_columns == 8 && t->dw_nchw_rows == 2);
    cr_expect(t->sweep_tiles == 1 && t->ig_relayout_floats == 384 * 1024 && t->dw_plane_max_pixels == 56 * 56 &&
              t->pool_sweep == 1 && t->matmul_tiled_first == 1 && t->bwd_filter_gemm_auto == 1);
    cr_expect_eq(dflt(&c, "conv2d_tiled", NULL), 2);
    cr_expect_eq(dflt(&c, "conv2d_gemm_1x1", NULL), 0);
    cr_expect_eq(dflt(&c, "conv2d_gemm_1x1", "nchw"), 0);
    cr_expect_eq(dflt(&c, "conv2d_implicit_gemm", NULL), 1);
    cr_expect_eq(dflt(&c, "conv2d_implicit_gemm", "nchw"), 1);
    cr_expect_eq(dflt(&c, "conv2d_bwd_filter_gemm", "nt"), 2);
    cr_expect_eq(dflt(&c, "conv2d_bwd_filter_gemm", "tn"), 3);
}

/* GPUs, accelerators and a device without a type bit of a vendor with no
 * row of its own (AMD's and Intel's GPUs have theirs, below): the non-CPU
 * row. */
Test(cl_device_table, gpu_and_others)
{
    const cl_device_type types[] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_CUSTOM, 0};
    for (int i = 0; i < 4; i++) {
        pdnn__cl_device_class c;
        pdnn__cl_device_class_of("ARM", types[i], 16, &c);
        cr_assert(c.generic);
        cr_expect_null(c.row, "type %d", i);
        cr_expect_str_eq(c.generic->name, "GPU or other accelerator");
        const pdnn__cl_thresholds *t = &c.t;
        expect_sizes(t);
        cr_expect(t->sweep_tiles == 0 && t->gemm_wg_pixels == 8 && t->ig_relayout_floats == 0 && t->wino_tt == 8 &&
                  t->wino_kb == 1 && t->wino_first_min_tiles == 0 && t->dw_nhwc_vw == 8 && t->dw_columns == 8 &&
                  t->dw_nchw_rows == 1 && t->dw_nchw_items == 65536 && t->dw_plane_max_pixels == 0 &&
                  t->pool_sweep == 0 && t->pool_wg == 64 && t->matmul_tiled_first == 0 &&
                  t->bwd_filter_gemm_auto == 0);
        cr_expect_eq(dflt(&c, "conv2d_tiled", NULL), 1);
        cr_expect_eq(dflt(&c, "conv2d_gemm_1x1", "nchw"), 6);
        cr_expect_eq(dflt(&c, "conv2d_implicit_gemm", "nchw"), 4);
        cr_expect_eq(dflt(&c, "conv2d_bwd_filter_gemm", "nt"), 7);
        cr_expect_eq(dflt(&c, "conv2d_bwd_filter_gemm", "tn"), 7);
        cr_expect_eq(dflt(&c, "conv2d_wg_gemm", NULL), 0); /* 64 x 64 */
    }
}

/* NVIDIA's GPUs take their row's wg_gemm tiles and the generic GPU row's
 * everything else; an NVIDIA device that is no GPU does not. */
Test(cl_device_table, nvidia_gpu)
{
    pdnn__cl_device_class c;
    pdnn__cl_device_class_of("NVIDIA Corporation", CL_DEVICE_TYPE_GPU, 1, &c);
    cr_assert(c.row && c.generic);
    cr_expect_str_eq(c.row->name, "NVIDIA GPU");
    cr_expect_str_eq(c.generic->name, "GPU or other accelerator");
    cr_expect_eq(dflt(&c, "conv2d_wg_gemm", NULL), 1); /* 128 x 64 */
    cr_expect_eq(dflt(&c, "conv2d_implicit_gemm", "nchw"), 4);
    cr_expect(c.t.sweep_tiles == 0 && c.t.pool_wg == 64 && c.t.wino_tt == 8);
    pdnn__cl_device_class_of("NVIDIA Corporation", CL_DEVICE_TYPE_ACCELERATOR, 1, &c);
    cr_expect_null(c.row);
    cr_expect_eq(dflt(&c, "conv2d_wg_gemm", NULL), 0);
}

/* AMD's and Intel's GPUs take their rows' wg_gemm tiles (starting points
 * from the vendors' and CLBlast's numbers) and the generic GPU row's
 * thresholds; Intel's CPU runtime (the same vendor) keeps the CPU rows. */
Test(cl_device_table, amd_and_intel_gpus)
{
    pdnn__cl_device_class c;
    pdnn__cl_device_class_of("Advanced Micro Devices, Inc.", CL_DEVICE_TYPE_GPU, 1, &c);
    cr_assert(c.row && c.generic);
    cr_expect_str_eq(c.row->name, "AMD GPU");
    cr_expect_eq(dflt(&c, "conv2d_wg_gemm", NULL), 1); /* 128 x 64 */
    cr_expect(c.t.sweep_tiles == 0 && c.t.pool_wg == 64);
    pdnn__cl_device_class_of("Intel(R) Corporation", CL_DEVICE_TYPE_GPU, 1, &c);
    cr_assert(c.row && c.generic);
    cr_expect_str_eq(c.row->name, "Intel GPU");
    cr_expect_eq(dflt(&c, "conv2d_wg_gemm", NULL), 0); /* 64 x 64 */
    cr_expect(c.t.sweep_tiles == 0 && c.t.pool_wg == 64);
    pdnn__cl_device_class_of("Intel(R) Corporation", CL_DEVICE_TYPE_CPU, 8, &c);
    cr_expect(!c.row || strcmp(c.row->name, "Intel GPU") != 0);
    cr_expect_str_eq(c.generic->name, "CPU");
}

/* Every wg_gemm configuration's work-group is a whole number of 64
 * work-items, so the preferred multiples of the classes the table names
 * (NVIDIA 32, AMD 64 or 32, Intel 16) all divide it; wg_enqueue refuses
 * one that a device's preferred multiple does not divide. */
Test(cl_device_table, wg_gemm_groups_are_whole_simd_widths)
{
    const pdnn__algo *a = pdnn__cl_tunable_algo("conv2d_wg_gemm", strlen("conv2d_wg_gemm"));
    cr_assert(a && a->n_configs > 0 && a->config_name);
    for (int i = 0; i < a->n_configs; i++) {
        char name[PDNN__CONFIG_LEN];
        int tm = 0, tn = 0, tk = 0, rm = 0, rn = 0;
        a->config_name(i, name, sizeof name);
        cr_assert_eq(sscanf(name, "tm=%d tn=%d tk=%d rm=%d rn=%d", &tm, &tn, &tk, &rm, &rn), 5, "%s", name);
        cr_expect_eq((tm / rm) * (tn / rn) % 64, 0, "configuration %d (%s): %d work-items", i, name,
                     (tm / rm) * (tn / rn));
    }
}

#else
Test(cl_device_table, skipped) { cr_skip_test("built without OpenCL"); }
#endif
