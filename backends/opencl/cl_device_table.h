/* The OpenCL backend's per-device-class defaults and selection
 * thresholds, as data (cl_device_table.c): one table keyed by device
 * class (vendor, device type, preferred float vector width), whose rows
 * name each tunable kernel's untuned configuration and hold the numbers
 * the plans and launches choose by. A device takes the first specific row
 * its class matches over the generic row of its type (looked up once, as
 * the device opens, and kept in cl_dev). A new device class's tuning
 * results (`polydnn tune --emit-defaults` prints them as a row) go here as
 * a new row, not as new ifs in the plans. Included by cl_internal.h. */
#ifndef POLYDNN_CL_DEVICE_TABLE_H
#define POLYDNN_CL_DEVICE_TABLE_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include "backend.h"

#include <CL/cl.h>
#include <stddef.h>
#include <stdint.h>

/* A kernel's untuned configuration, by name: kernel is the tuning cache's
 * kernel name (pdnn__cl_tunable.kernel, e.g. "conv2d_tiled"), with a
 * "/variant" the plan asks for first where it has one ("/nchw": y
 * channel-major; "/nt", "/tn": bwd_filter_gemm's two GEMMs); config is
 * the algorithm's configuration name (what config_name gives, what the
 * tuning cache stores). */
typedef struct pdnn__cl_config_default {
    const char *kernel;
    const char *config;
} pdnn__cl_config_default;

#define PDNN__CL_MAX_DEFAULTS 16

/* The numbers the plans read. A generic row sets every field (0 is a
 * value there); a specific row leaves 0 what it takes from the generic
 * row of its type. Why each value is what it is: at the generic rows in
 * cl_device_table.c. */
typedef struct pdnn__cl_thresholds {
    /* gemm_1x1, implicit_gemm: 1 where a work-item sweeps several pixel
     * tiles with the same filter rows, 0 one tile per work-item. */
    int sweep_tiles;
    /* gemm_1x1: the input floats a sweep keeps in cache. */
    int64_t sweep_floats;
    /* gemm_1x1, implicit_gemm: work-items per work-group along the
     * pixels. */
    int gemm_wg_pixels;
    /* gemm_1x1's transposed (rows) kernel: images of at least this many
     * pixels with at most this many input channels. */
    int64_t g1_rows_min_pixels, g1_rows_max_c;
    /* implicit_gemm: an NCHW image of at least this many floats (C*H*W)
     * is copied channels-last first; 0 never. */
    int64_t ig_relayout_floats;
    /* winograd's GEMM register tile: tiles x float16 channel blocks. */
    int wino_tt, wino_kb;
    /* AUTO tries winograd before implicit_gemm (rank 25) from this many
     * 4x4 output tiles where C x K is at most wino_first_max_ck. */
    int64_t wino_first_min_tiles, wino_first_max_ck;
    /* depthwise: dw_nhwc's channels per work-item (where K is whole
     * vectors of it; else 8); dw_nchw's and dw_plane's output columns per
     * chunk (dw_nchw: where rows are dw_wide_min_q wide or more; else 8);
     * dw_nchw's output rows per block and work-items per launch; dw_plane
     * for planes up to this many pixels (0: never). */
    int dw_nhwc_vw, dw_columns, dw_wide_min_q, dw_nchw_rows;
    int64_t dw_nchw_items, dw_plane_max_pixels;
    /* pool2d rows and plane kernels: 1 where an item sweeps a whole row
     * or plane (all of a pixel's channels), 0 one chunk per item; their
     * work-group size. */
    int pool_sweep, pool_wg;
    /* AUTO's order: matmul's tiled before conv_gemm (1) or after it (0);
     * bwd_filter_gemm a candidate (1) or passed over (0). */
    int matmul_tiled_first, bwd_filter_gemm_auto;
} pdnn__cl_thresholds;

typedef struct pdnn__cl_device_row {
    const char *name;
    /* The class: CL_DEVICE_VENDOR containing vendor (NULL: any), a type
     * bit in common with type, a preferred float vector width of at least
     * min_vec_float. A row with neither vendor nor min_vec_float is its
     * type's generic row. */
    const char *vendor;
    cl_device_type type;
    cl_uint min_vec_float;
    pdnn__cl_config_default configs[PDNN__CL_MAX_DEFAULTS];
    pdnn__cl_thresholds t;
} pdnn__cl_device_row;

/* A device's class: its specific row (NULL: none), its generic row, the
 * thresholds the two give, and each row's configs resolved to the
 * algorithm's configuration indices (-1: a name this build does not
 * offer), so that plans compare names only with kernel names. */
typedef struct pdnn__cl_device_class {
    const pdnn__cl_device_row *row, *generic;
    pdnn__cl_thresholds t;
    int row_index[PDNN__CL_MAX_DEFAULTS], generic_index[PDNN__CL_MAX_DEFAULTS];
} pdnn__cl_device_class;

/* The class of a device of this vendor, type and vector width (a debug
 * message names any configuration its rows name that the build lacks). */
void pdnn__cl_device_class_of(const char *vendor, cl_device_type type, cl_uint vec_float, pdnn__cl_device_class *out);

/* The configuration index of kernel's untuned default in the class (with
 * variant first where not NULL), looked up in the specific row, then the
 * generic one; -1 where neither names one this build offers. */
int pdnn__cl_default_index(const pdnn__cl_device_class *cls, const char *kernel, const char *variant);

/* The algorithm whose tuning cache kernel name is the first len
 * characters of kernel (NULL: none is). */
const pdnn__algo *pdnn__cl_tunable_algo(const char *kernel, size_t len);

/* The algorithm's configuration named name; -1 where none is. */
int pdnn__cl_config_index(const pdnn__algo *algo, const char *name);

/* The table itself, for the checks (tests/test_cl_device_table). */
extern const pdnn__cl_device_row pdnn__cl_device_rows[];
extern const int pdnn__cl_n_device_rows;

#endif
