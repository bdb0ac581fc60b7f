/*
 * The backend interface: what core asks of a device family. A backend
 * fills the function pointers it supports; a NULL op entry means "no
 * kernel for this op here". Core validates every argument before calling
 * an op, so backends may assume consistent shapes, non-NULL buffers and
 * sizes that fit in int64.
 *
 * Storage is (region, byte offset): a region is whatever the backend hands
 * out from region_alloc (a cl_mem, a CUDA pointer, a host pointer); the
 * allocator carves regions into chunks. Kernels take buffer + offset.
 */
#ifndef POLYDNN_BACKEND_H
#define POLYDNN_BACKEND_H

/* configure's results (PDNN_HAVE_OPENCL, ...) decide the registry. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "polydnn.h"

#include <stddef.h>
#include <stdint.h>

/* What a backend reports about a device it found. */
typedef enum pdnn__device_kind {
    PDNN__KIND_HOST = 0,  /* the process's own CPU (host backend)      */
    PDNN__KIND_CPU = 1,   /* a CPU driven through a runtime (PoCL)     */
    PDNN__KIND_GPU = 2,
    PDNN__KIND_ACCELERATOR = 3
} pdnn__device_kind;

typedef struct pdnn__device_props {
    pdnn__device_kind kind;
    char vendor[128];
    char name[256];
    char driver_version[128];
    uint64_t memory_bytes;
    uint64_t max_alloc_bytes;  /* largest region the driver allows       */
    uint64_t base_align;       /* required region offset alignment, bytes */
    int compute_units;
    /* How DLPack names this device (polydnn_dlpack.h): a DLDeviceType
     * value (kDLCPU 1, kDLCUDA 2, kDLOpenCL 4) and its device_id. */
    int dlpack_type;
    int dlpack_id;
} pdnn__device_props;

/* A tensor's storage as backends see it. */
typedef struct pdnn__buf {
    void *region;   /* NULL: absent (e.g. no bias) */
    size_t offset;  /* bytes from the region's start */
} pdnn__buf;

/* Element strides of the logical axes of a 4-D tensor in a layout:
 * st[0..3] are the strides of dims[0..3] ({N,C,H,W} or {O,I,H,W}). */
static inline void pdnn__layout_strides(pdnn_layout layout, const int64_t d[4],
                                        int64_t st[4])
{
    switch (layout) {
    case PDNN_NHWC: /* N H W C */
    case PDNN_OHWI: /* O H W I */
        st[1] = 1; st[3] = d[1]; st[2] = d[3] * d[1]; st[0] = d[2] * d[3] * d[1];
        break;
    case PDNN_HWIO: /* H W I O */
        st[0] = 1; st[1] = d[0]; st[3] = d[1] * d[0]; st[2] = d[3] * d[1] * d[0];
        break;
    case PDNN_NCHW:
    case PDNN_OIHW:
    case PDNN_LAYOUT_X:
    default: /* row-major in logical order */
        st[3] = 1; st[2] = d[3]; st[1] = d[2] * d[3]; st[0] = d[1] * d[2] * d[3];
        break;
    }
}

/* A validated 2-D convolution. Sizes use cuDNN's letters: input N,C,H,W;
 * filter K (out channels), C/groups, R (height), S (width); output N,K,P,Q.
 * pad_bottom/pad_right are implied by P and Q. */
typedef struct pdnn__conv2d_call {
    int64_t n, c, h, w;
    int64_t k, r, s;
    int64_t p, q;
    int64_t groups;
    int stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
    int relu;
    pdnn_layout x_layout, w_layout, y_layout;
    int64_t xs[4], ws[4], ys[4]; /* element strides, see layout_strides */
    pdnn__buf x_buf, w_buf, bias_buf, y_buf; /* bias_buf.region NULL: none */
    pdnn_conv_algo algo;         /* never AUTO: core has chosen */
    pdnn__buf workspace;         /* workspace_bytes from conv2d_workspace */
    size_t workspace_bytes;
    pdnn_tuning_mode tuning;     /* the context's: may the backend tune now? */
    /* Where a backend with tunable kernels says what tuning did (zeroed by
     * core; the backend may leave it so: nothing tunable ran). */
    pdnn_conv2d_tuning *tuning_out;
} pdnn__conv2d_call;

/* A validated 2-D pooling. Input N,C,H,W; output N,C,P,Q. */
typedef struct pdnn__pool2d_call {
    int64_t n, c, h, w, p, q;
    pdnn_pool_mode mode;
    int win_h, win_w, stride_h, stride_w, pad_top, pad_left;
    int pad_bottom, pad_right;
    pdnn_layout x_layout, y_layout;
    int64_t xs[4], ys[4];
    pdnn__buf x_buf, y_buf;
    pdnn__buf workspace;         /* workspace_bytes from pool2d_workspace */
    size_t workspace_bytes;
} pdnn__pool2d_call;

typedef struct pdnn__backend pdnn__backend;

struct pdnn__backend {
    const char *name; /* "host", "opencl", "cuda" */

    /* Finds this backend's devices. On success *devs is an array of *n
     * opaque device handles and *props their properties, both malloc'd
     * (caller frees the arrays, and each handle with device_close). A
     * backend with no devices returns success with *n = 0; *why may then
     * point at a static string saying why (no platform, no driver). */
    pdnn_status (*enumerate)(void ***devs, pdnn__device_props **props, int *n,
                             const char **why);
    void (*device_close)(void *dev);

    /* Memory. Regions are what the allocator carves into tensors. */
    pdnn_status (*region_alloc)(void *dev, size_t bytes, void **region);
    void (*region_free)(void *dev, void *region);
    pdnn_status (*write)(void *dev, pdnn__buf dst, const void *src, size_t bytes);
    pdnn_status (*read)(void *dev, pdnn__buf src, void *dst, size_t bytes);
    pdnn_status (*copy)(void *dev, pdnn__buf dst, pdnn__buf src, size_t bytes);
    pdnn_status (*synchronize)(void *dev);

    /* Ops (NULL: not supported on this backend). */
    pdnn_status (*conv2d_forward)(void *dev, const pdnn__conv2d_call *call);
    /* Workspace bytes algo needs for call, or SIZE_MAX if this backend
     * cannot run algo for it. NULL: only PDNN_CONV_ALGO_DIRECT, no
     * workspace. */
    size_t (*conv2d_workspace)(void *dev, const pdnn__conv2d_call *call, pdnn_conv_algo algo);
    pdnn_status (*pool2d_forward)(void *dev, const pdnn__pool2d_call *call);
    /* Workspace bytes pool2d_forward needs for call (cuDNN: a padded copy
     * of the input where its own padding cannot express the call). NULL:
     * none. */
    size_t (*pool2d_workspace)(void *dev, const pdnn__pool2d_call *call);

    /* The ops around convolution (ops_nn.c validates; float32; buffers of
     * one call may alias only where said). Elements are addressed in
     * memory order, so layouts enter only through outer/c/inner. */
    /* y[i] = a[i] + b[i], i < n. y may alias a or b. */
    pdnn_status (*add)(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf y, int64_t n);
    /* y[i] = relu?(x[i] + bias[(i / inner) % c]), i < n. y may alias x. */
    pdnn_status (*bias_add)(void *dev, pdnn__buf x, pdnn__buf bias, pdnn__buf y, int64_t n, int64_t c,
                            int64_t inner, int relu);
    /* y[i] = max(x[i], 0), i < n; NaN stays NaN. y may alias x. */
    pdnn_status (*relu)(void *dev, pdnn__buf x, pdnn__buf y, int64_t n);
    /* Softmax over the middle axis of x viewed as [outer][c][inner]:
     * y[o,k,i] = exp(x[o,k,i] - m) / sum_j exp(x[o,j,i] - m), m the max
     * over j. No aliasing. */
    pdnn_status (*softmax)(void *dev, pdnn__buf x, pdnn__buf y, int64_t outer, int64_t c, int64_t inner);
    /* Row-major C[m x n] = op(A) op(B), op(A) m x k, op(B) k x n; A is
     * stored k x m when trans_a, B n x k when trans_b. No aliasing. */
    pdnn_status (*matmul)(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf c, int64_t m, int64_t n, int64_t k,
                          int trans_a, int trans_b);

    /* Measures the device's fp32 FMA rate (GFLOP/s, 2 per FMA) and copy
     * bandwidth (GB/s, bytes read + written) with small kernels of its
     * own, outside the allocator; takes up to a few seconds. NULL:
     * unknown (pdnn_device_measure_peak says unsupported). */
    pdnn_status (*measure_peak)(void *dev, double *gflops, double *gbytes_per_s);
};

/* The registry: compiled-in backends in enumeration order. */
extern const pdnn__backend pdnn__host_backend;
#ifdef PDNN_HAVE_CUDA
extern const pdnn__backend pdnn__cuda_backend;
#endif
#ifdef PDNN_HAVE_OPENCL
extern const pdnn__backend pdnn__opencl_backend;
/* The tiled configuration this thread's last tiled conv ran ("tq=8 kb=1"),
 * for tests of the tuner. */
const char *pdnn__opencl_last_tiled(void);
/* Test hooks: the tiled configurations ({tq, kb}, returns how many), and
 * forcing one for every tiled conv where it applies (unknown: none). */
int pdnn__opencl_tiled_configs(int (*out)[2], int max);
void pdnn__opencl_force_tiled(int tq, int kb);
/* Test hook: the bytes of workspace above which winograd transforms the
 * batch's tiles a chunk at a time (0: its default, 64 MiB). */
void pdnn__opencl_winograd_chunk_bytes(int64_t bytes);
/* Test hook: what the OpenCL program cache did in this process so far
 * (programs loaded from disk, looked up and not usable, written, and
 * files found but ignored as invalid). */
typedef struct pdnn__program_cache_stats {
    long hits, misses, stores, rejected;
} pdnn__program_cache_stats;
void pdnn__opencl_program_cache_stats(pdnn__program_cache_stats *out);
/* The same for gemm_1x1: its configurations ({vw, kb, pt}), forcing one,
 * and the one this thread's last gemm_1x1 conv ran ("vw=16 kb=1 pt=6"). */
int pdnn__opencl_gemm1x1_configs(int (*out)[3], int max);
void pdnn__opencl_force_gemm1x1(int vw, int kb, int pt);
const char *pdnn__opencl_last_gemm1x1(void);
/* Which gemm_1x1 kernel that was: "rows" (NCHW in and out) or "tiles". */
const char *pdnn__opencl_last_gemm1x1_kernel(void);
/* The same for implicit_gemm ({vw, kb, pt}; forcing 0, 0, 0 clears). */
int pdnn__opencl_igemm_configs(int (*out)[3], int max);
void pdnn__opencl_force_igemm(int vw, int kb, int pt);
const char *pdnn__opencl_last_igemm(void);
#endif

/* Errors (src/error.c): records the message for pdnn_last_error() and
 * returns status, so failures read `return pdnn__error(...)`. */
pdnn_status pdnn__error(pdnn_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prints "polydnn: debug: ..." to stderr when POLYDNN_DEBUG=1. */
void pdnn__debug(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Formats a byte count for messages, e.g. "3.8 GiB" ("1 KiB", "512 B"). */
const char *pdnn__format_bytes(uint64_t bytes, char *buf, size_t len);

#endif /* POLYDNN_BACKEND_H */
