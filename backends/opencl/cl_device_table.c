/* The OpenCL backend's per-device-class defaults and selection thresholds
 * (see cl_device_table.h). Rows are matched in order: the specific rows
 * first, then the generic row of each type. Each value says why it is
 * what it is; "measured" means on PoCL on the machines named, unless a
 * GPU is named. To add a device class, paste the row `polydnn tune
 * --emit-defaults` prints on it above the generic rows and review it. */
#include "backends/opencl/cl_device_table.h"

#include <stdio.h>
#include <string.h>

extern const pdnn__algo pdnn__cl_algo_tiled, pdnn__cl_algo_gemm_1x1, pdnn__cl_algo_implicit_gemm, pdnn__cl_algo_wg_gemm,
    pdnn__cl_algo_bwd_filter_gemm, pdnn__cl_algo_bwd_data_igemm;

/* The tunable algorithms by their kernel's name in the tuning cache
 * (their pdnn__cl_tunable.kernel), which the rows name. */
static const struct {
    const char *kernel;
    const pdnn__algo *algo;
} tunables[] = {{"conv2d_tiled", &pdnn__cl_algo_tiled},
                {"conv2d_gemm_1x1", &pdnn__cl_algo_gemm_1x1},
                {"conv2d_implicit_gemm", &pdnn__cl_algo_implicit_gemm},
                {"conv2d_wg_gemm", &pdnn__cl_algo_wg_gemm},
                {"conv2d_bwd_filter_gemm", &pdnn__cl_algo_bwd_filter_gemm},
                {"conv2d_bwd_data_igemm", &pdnn__cl_algo_bwd_data_igemm}};

const pdnn__algo *pdnn__cl_tunable_algo(const char *kernel, size_t len)
{
    for (size_t i = 0; i < sizeof tunables / sizeof tunables[0]; i++)
        if (strlen(tunables[i].kernel) == len && strncmp(tunables[i].kernel, kernel, len) == 0)
            return tunables[i].algo;
    return NULL;
}

int pdnn__cl_config_index(const pdnn__algo *algo, const char *name)
{
    char buf[64];
    for (int i = 0; algo && name && i < algo->n_configs; i++) {
        algo->config_name(i, buf, sizeof buf);
        if (strcmp(buf, name) == 0)
            return i;
    }
    return -1;
}

const pdnn__cl_device_row pdnn__cl_device_rows[] = {
    {
        /* PoCL reports 16-float vectors on AVX-512 (32 zmm registers). */
        .name = "CPU with 16-float vectors (AVX-512)",
        .type = CL_DEVICE_TYPE_CPU,
        .min_vec_float = 16,
        .configs =
            {
                /* 12 of 32 zmm registers accumulate: 1.6-1.8x {16, 1, 6}
                 * on res5 at batch 1 on an AVX-512 EPYC. */
                {"conv2d_gemm_1x1", "vw=16 kb=2 pt=6"},
                /* The tiles kernel writing a channel-major y (NCHW; not
                 * where the rows kernel runs): the 8x32 tile, whose rows
                 * it stores transposed (conv2d_tile.cl). */
                {"conv2d_gemm_1x1/nchw", "vw=16 kb=2 pt=8"},
                /* 6 pixels x 32 channels: 12 zmm accumulators. */
                {"conv2d_implicit_gemm", "vw=16 kb=2 pt=6"},
                /* For a channel-major y, 8 pixels x 32 channels, whose
                 * rows the epilogue stores transposed (conv2d_tile.cl):
                 * c64 56x56 k256 1x1 0.75 -> 0.57 ms. */
                {"conv2d_implicit_gemm/nchw", "vw=16 kb=2 pt=8"},
                /* 16 of the 32 registers in accumulators, with "cache"
                 * chunks (the plan takes "few" where they would cut the
                 * pixels into fewer than 4 chunks: gb_chunk). */
                {"conv2d_bwd_filter_gemm/nt", "vw=16 kt=4 ct=4 chunks=cache"},
                {"conv2d_bwd_filter_gemm/tn", "vw=16 kt=8 ct=2 chunks=cache"},
            },
        .t =
            {
                /* 12 x 2 ran c256 56x56 b1 NHWC in 5.5-6.4 ms against
                 * 7.7-8.4 ms for 8 x 1, c256 14x14 b8 in 3.5-4.3 ms
                 * against 4.0-6.0 (the two alternated). */
                .wino_tt = 12,
                .wino_kb = 2,
                /* 16 channels per dw_nhwc work-item: one vector. */
                .dw_nhwc_vw = 16,
                /* dw_nchw: on MobileNetV2's depthwise layers (AVX-512
                 * EPYC) 16 columns ran 1.03-1.39x faster than 8 at widths
                 * 14-112, and 0.65-0.85x at width 7, where a 16-column
                 * chunk is more than half padding lanes (dw_wide_min_q). */
                .dw_columns = 16,
                /* 32 vector registers hold the 4 x R partial sums of a 3x3
                 * or 5x5 filter. On MobileNetV2's 3x3 layers (AVX-512
                 * Xeon, best of 4 alternated runs) 4 rows ran 1.1-1.5x
                 * faster than one chain of FMAs per chunk, e.g. c144 56x56
                 * 0.353 -> 0.239 ms, c32 112x112 0.244 -> 0.182 ms. */
                .dw_nchw_rows = 4,
            },
    },
    {
        /* NVIDIA's OpenCL driver (H100, H200). */
        .name = "NVIDIA GPU",
        .vendor = "NVIDIA",
        .type = CL_DEVICE_TYPE_GPU,
        .configs =
            {
                /* 128 x 64 tiles (8 x 4 per work-item, 43 multiply-adds
                 * per global float): the tuner's pick on 35 of ResNet-50's
                 * 46 layer/layout cases at batch 32 on an H200, where
                 * tuning took the geomean from 10.1/14.0 to 13.9/15.9
                 * TFLOP/s (NCHW/NHWC; bench/results-gpu.md). */
                {"conv2d_wg_gemm", "tm=128 tn=64 tk=16 rm=8 rn=4 db=1 pad=1"},
            },
    },
    {
        /* AMD's OpenCL (ROCm: "Advanced Micro Devices, Inc."), CDNA and
         * RDNA alike: a starting point, not measured here (no such
         * device has been lent). CDNA, like GCN before it, runs
         * wavefronts of 64 with 64 KiB of LDS per compute unit; RDNA
         * prefers wave32 (it also runs wave64) with 128 KiB per work-group
         * processor, 64 KiB at most to one work-group (Codeplay's
         * "Performance on AMD" guide for oneAPI; LLVM's AMDGPUUsage).
         * Every wg_gemm configuration's work-group (64, 128 or 256
         * work-items) is a whole number of waves of either width. */
        .name = "AMD GPU",
        .vendor = "Advanced Micro Devices",
        .type = CL_DEVICE_TYPE_GPU,
        .configs =
            {
                /* 128 x 64 tiles, steps of 16, 256 work-items (4 waves of
                 * 64): CLBlast's tuned Xgemm for GCN "Hawaii" (MWG 128,
                 * NWG 64, KWG 16, 32 x 8 threads), CDNA's ancestor; 29 KiB
                 * of LDS, within the 64 KiB a work-group may have on CDNA
                 * and RDNA. NVIDIA's pick too (the row above). */
                {"conv2d_wg_gemm", "tm=128 tn=64 tk=16 rm=8 rn=4 db=1 pad=1"},
            },
    },
    {
        /* Intel's GPU OpenCL (NEO: "Intel(R) Corporation"), Xe: a starting
         * point, not measured here. Sub-groups of 8, 16 or 32 (16 the
         * usual); 64 KiB of shared local memory per Xe-core (sub-slice),
         * at most 16 work-groups resident on one, so with local memory
         * and barriers Intel advises power-of-two work-groups of 64 to 256
         * (Intel's OpenCL developer guide for processor graphics, "Work-
         * Group Size Recommendations Summary"; oneAPI GPU optimization
         * guide, "Shared Local Memory"). */
        .name = "Intel GPU",
        .vendor = "Intel",
        .type = CL_DEVICE_TYPE_GPU,
        .configs =
            {
                /* 64 x 64 tiles (CLBlast's Xgemm default for Intel GPUs:
                 * MWG = NWG = 64) with 256 work-items, 21 KiB of local
                 * memory: two work-groups per Xe-core. */
                {"conv2d_wg_gemm", "tm=64 tn=64 tk=16 rm=4 rn=4 db=1 pad=1"},
            },
    },
    {
        .name = "CPU",
        .type = CL_DEVICE_TYPE_CPU,
        .configs =
            {
                /* 12 pixels x 16 channels: the tuner's most frequent pick
                 * over ResNet-50 (bench/results-conv.md). */
                {"conv2d_tiled", "tq=12 kb=1"},
                /* AVX2's 6x16 micro-kernel (12 ymm accumulators, 2 for
                 * the filter, 1 for the broadcast). */
                {"conv2d_gemm_1x1", "vw=16 kb=1 pt=6"},
                {"conv2d_implicit_gemm", "vw=16 kb=1 pt=6"},
                /* 8 and 12 accumulators: fit AVX2's 16 registers. */
                {"conv2d_bwd_filter_gemm/nt", "vw=8 kt=4 ct=2 chunks=cache"},
                {"conv2d_bwd_filter_gemm/tn", "vw=8 kt=6 ct=2 chunks=cache"},
            },
        .t =
            {
                /* A work-item sweeps several pixel tiles with the same
                 * filter rows, which are then read from memory once: what
                 * lifts the small late layers (7x7 and 14x14 images,
                 * large C), where a one-tile work-item re-reads its filter
                 * rows for every 6 pixels. */
                .sweep_tiles = 1,
                /* gemm_1x1's sweep keeps its input within 128 KiB. */
                .sweep_floats = 32768,
                /* Each work-item fills the SIMD width itself. */
                .gemm_wg_pixels = 1,
                /* The rows kernel measured faster than the tiles kernel on
                 * ResNet-50's NCHW 1x1 layers (AVX-512, batch 1 and 8) on
                 * images of 28x28 or more with C <= 256, 1.1-3x (its
                 * vector stores and in-place filter win where the tiles
                 * kernel scatters many output rows per input channel); on
                 * 14x14 and 7x7 images and C >= 512 the tiles kernel was
                 * up to 2.5x faster (partial pixel tiles; filter rows
                 * re-read per tile). */
                .g1_rows_min_pixels = 784,
                .g1_rows_max_c = 256,
                /* 1.5 MiB and more (more than a core's L2), channels not
                 * innermost: the reduction steps through channels a page
                 * or more apart, which the prefetchers do not follow once
                 * the image has left L2. 3x3 layers ran 1.1-1.25x faster
                 * reading the copy at 28x28x512, 56x56x256, 112x112x64 and
                 * 112x112x128, the copy included; at 800 KiB and less
                 * (56x56x64, 28x28x128, 14x14x256) it cost what it saved
                 * or more. */
                .ig_relayout_floats = 384 * 1024,
                /* 8 x 1 keeps the register tile within AVX2's 16. */
                .wino_tt = 8,
                .wino_kb = 1,
                /* With the transforms 16 channels per work-item and the
                 * GEMM's tile in registers, winograd ran 1.3-1.8x
                 * implicit_gemm (filter transformed per call, NHWC,
                 * AVX-512 Xeon) from 49 tiles up where C x K <= 256 x 256
                 * (56x56 c64, 28x28 c128/c256 at batch 1, 14x14 c256 at
                 * batch 8), and 0.6-0.8x at C = K = 512, whose transformed
                 * filter is 37 MB. */
                .wino_first_min_tiles = 49,
                .wino_first_max_ck = 256 * 256,
                /* 8 channels: a tail of 8 in 16 would take the per-lane
                 * path. */
                .dw_nhwc_vw = 8,
                .dw_columns = 8,
                .dw_wide_min_q = 14,
                /* 16 AVX2 registers hold 2 x R partial sums. */
                .dw_nchw_rows = 2,
                /* 512 let the threads share the launch evenly while each
                 * work-item's setup is spread over whole rows (128 to 2048
                 * timed alike on MobileNetV2). */
                .dw_nchw_items = 512,
                /* dw_plane up to 56x56 planes: on MobileNetV2's 3x3 layers
                 * (AVX-512 EPYC, alternated runs) against dw_nchw: c576
                 * 7x7 0.030 vs 0.040-0.049 ms, c576 14x14 0.051 vs 0.084,
                 * c384 14x14 0.039 vs 0.064, c192 28x28 0.060 vs 0.084,
                 * c144 56x56 0.142 vs 0.180, and at 112x112 1.0-1.1x
                 * dw_nchw's time. */
                .dw_plane_max_pixels = 56 * 56,
                /* PoCL pays per work-group and per item, and one row is a
                 * few hundred bytes to a few KB: a plane per item ran
                 * SqueezeNet's and GoogLeNet's strided max pools (27x27 to
                 * 56x56) 1.3-1.5x faster than an item per row. */
                .pool_sweep = 1,
                /* Measured best of 1/4/16/64. */
                .pool_wg = 4,
                /* matmul's tiled kernel's one-item tiles are for CPUs. */
                .matmul_tiled_first = 1,
                /* bench/results-conv-bwd.md. Where most of a tile's vector
                 * lanes would idle the plan still passes it over. */
                .bwd_filter_gemm_auto = 1,
            },
    },
    {
        /* Every device that is not a CPU: GPUs and other accelerators. */
        .name = "GPU or other accelerator",
        .type = ~(cl_device_type)CL_DEVICE_TYPE_CPU,
        .configs =
            {
                /* The small tiles keep GPU register use low and the most
                 * work-items resident. */
                {"conv2d_tiled", "tq=4 kb=1"},
                {"conv2d_gemm_1x1", "vw=4 kb=1 pt=8"},
                {"conv2d_implicit_gemm", "vw=4 kb=1 pt=8"},
                {"conv2d_bwd_filter_gemm", "vw=4 kt=4 ct=4 chunks=cache"},
                /* 256 work-items of 4 x 4: 32 multiply-adds per global
                 * float, 21 KB of local memory (tiles double-buffered, and
                 * the table's two chunks), within every GPU's work-group
                 * and local-memory limits. */
                {"conv2d_wg_gemm", "tm=64 tn=64 tk=16 rm=4 rn=4 db=1 pad=1"},
            },
        .t =
            {
                /* One tile per work-item: parallelism matters more than
                 * reuse. */
                .sweep_tiles = 0,
                .sweep_floats = 0,
                .gemm_wg_pixels = 8,
                /* Not measured on GPUs: the CPUs' values. */
                .g1_rows_min_pixels = 784,
                .g1_rows_max_c = 256,
                /* Neighbouring work-items read neighbouring pixels: NCHW
                 * is read as it is. */
                .ig_relayout_floats = 0,
                /* 8 x 1 keeps a work-item's registers fewer. */
                .wino_tt = 8,
                .wino_kb = 1,
                /* On an H100 (NVIDIA's OpenCL) winograd ran 1.4-2.9x
                 * implicit_gemm and 1.1-2.1x tiled on every 3x3 layer
                 * measured, from c64 56x56 at batch 1 to c256 14x14 at
                 * batch 32 (bench/results-gpu.md): first for every call
                 * it takes. */
                .wino_first_min_tiles = 0,
                .wino_first_max_ck = INT64_MAX,
                .dw_nhwc_vw = 8,
                .dw_columns = 8,
                .dw_wide_min_q = 14,
                /* A GPU work-item's registers are scarcer and many
                 * work-items hide the FMA latency (not measured). */
                .dw_nchw_rows = 1,
                /* A GPU needs many more work-items than a CPU. */
                .dw_nchw_items = 65536,
                /* dw_plane was measured on CPUs only. */
                .dw_plane_max_pixels = 0,
                /* One 16-output chunk (NCHW) or 2 pixels of 8 channels
                 * (NHWC) per item: tens of thousands of items in flight. */
                .pool_sweep = 0,
                .pool_wg = 64,
                /* After conv_gemm. */
                .matmul_tiled_first = 0,
                /* Not measured on GPUs. */
                .bwd_filter_gemm_auto = 0,
            },
    },
};

const int pdnn__cl_n_device_rows = (int)(sizeof pdnn__cl_device_rows / sizeof pdnn__cl_device_rows[0]);

static int row_matches(const pdnn__cl_device_row *r, const char *vendor, cl_device_type type, cl_uint vec_float)
{
    return (r->type & type) != 0 && vec_float >= r->min_vec_float &&
           (!r->vendor || (vendor && strstr(vendor, r->vendor)));
}

static int row_generic(const pdnn__cl_device_row *r) { return !r->vendor && r->min_vec_float == 0; }

/* dst's zero fields from src. */
static void inherit(pdnn__cl_thresholds *dst, const pdnn__cl_thresholds *src)
{
#define TAKE(f)                                                                                                    \
    do {                                                                                                           \
        if (!dst->f)                                                                                               \
            dst->f = src->f;                                                                                       \
    } while (0)
    TAKE(sweep_tiles);
    TAKE(sweep_floats);
    TAKE(gemm_wg_pixels);
    TAKE(g1_rows_min_pixels);
    TAKE(g1_rows_max_c);
    TAKE(ig_relayout_floats);
    TAKE(wino_tt);
    TAKE(wino_kb);
    TAKE(wino_first_min_tiles);
    TAKE(wino_first_max_ck);
    TAKE(dw_nhwc_vw);
    TAKE(dw_columns);
    TAKE(dw_wide_min_q);
    TAKE(dw_nchw_rows);
    TAKE(dw_nchw_items);
    TAKE(dw_plane_max_pixels);
    TAKE(pool_sweep);
    TAKE(pool_wg);
    TAKE(matmul_tiled_first);
    TAKE(bwd_filter_gemm_auto);
#undef TAKE
}

/* Resolves row r's configs into index (all -1 without a row). */
static void resolve(const pdnn__cl_device_row *r, int *index)
{
    for (int i = 0; i < PDNN__CL_MAX_DEFAULTS; i++) {
        index[i] = -1;
        if (!r || !r->configs[i].kernel)
            continue;
        const char *k = r->configs[i].kernel, *slash = strchr(k, '/');
        index[i] = pdnn__cl_config_index(pdnn__cl_tunable_algo(k, slash ? (size_t)(slash - k) : strlen(k)),
                                         r->configs[i].config);
        if (index[i] < 0)
            pdnn__debug("OpenCL: the device table's row '%s' names '%s' for %s, which this build does not offer",
                        r->name, r->configs[i].config, k);
    }
}

void pdnn__cl_device_class_of(const char *vendor, cl_device_type type, cl_uint vec_float, pdnn__cl_device_class *out)
{
    memset(out, 0, sizeof *out);
    /* A device that reports no type bit at all is taken as the last
     * generic row's (not a CPU). */
    for (int i = 0; i < pdnn__cl_n_device_rows; i++) {
        const pdnn__cl_device_row *r = &pdnn__cl_device_rows[i];
        if (!row_matches(r, vendor, type ? type : CL_DEVICE_TYPE_GPU, vec_float))
            continue;
        if (!row_generic(r) && !out->row)
            out->row = r;
        else if (row_generic(r) && !out->generic)
            out->generic = r;
    }
    if (!out->generic)
        out->generic = &pdnn__cl_device_rows[pdnn__cl_n_device_rows - 1];
    if (out->row)
        out->t = out->row->t;
    inherit(&out->t, &out->generic->t);
    resolve(out->row, out->row_index);
    resolve(out->generic, out->generic_index);
}

/* Where in r's configs kernel (with "/variant" where not NULL) is; -1
 * where it is not. */
static int row_config(const pdnn__cl_device_row *r, const char *kernel, const char *variant)
{
    const size_t kl = strlen(kernel);
    for (int i = 0; r && i < PDNN__CL_MAX_DEFAULTS && r->configs[i].kernel; i++) {
        const char *k = r->configs[i].kernel;
        if (strncmp(k, kernel, kl) != 0)
            continue;
        if (variant ? k[kl] == '/' && strcmp(k + kl + 1, variant) == 0 : k[kl] == '\0')
            return i;
    }
    return -1;
}

int pdnn__cl_default_index(const pdnn__cl_device_class *cls, const char *kernel, const char *variant)
{
    const pdnn__cl_device_row *rows[2] = {cls->row, cls->generic};
    const int *index[2] = {cls->row_index, cls->generic_index};
    for (int i = 0; i < 2; i++) {
        int at = variant ? row_config(rows[i], kernel, variant) : -1;
        if (at < 0)
            at = row_config(rows[i], kernel, NULL);
        if (at >= 0)
            return index[i][at];
    }
    return -1;
}
