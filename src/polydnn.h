/*
 * polydnn — vendor-neutral deep-learning primitives in C.
 *
 * The one public header. Every function returns pdnn_status (0 = success);
 * on failure pdnn_last_error() holds a message for the calling thread that
 * says what was asked, what was wrong and what is available.
 *
 * Objects:
 *   pdnn_context  options + the devices of every compiled-in backend
 *   pdnn_device   one device, owned by its context (never freed by callers)
 *   pdnn_tensor   a descriptor plus storage on one device
 *
 * Ops run on the device that holds their tensors; all tensors of one call
 * must live on the same device.
 *
 * Ownership: a context is reference-counted. pdnn_context_destroy drops
 * the creator's reference; every tensor (created or imported), every
 * session and, through its tensor, every DLPack export holds one more, and
 * the last to go frees the devices. So objects may be released in any
 * order (as a garbage collector does), and a device pointer stays valid as
 * long as something holds its context.
 */
#ifndef POLYDNN_H
#define POLYDNN_H

#include <stddef.h>
#include <stdint.h>

/* Marks the library's exported symbols. The library is compiled with
 * -fvisibility=hidden and PDNN_BUILDING, so only declarations carrying
 * PDNN_API leave libpolydnn.so; its internal pdnn__ functions do not.
 * Every function (and any data) declared in the public headers needs it,
 * or programs fail to link against the shared library; tests/
 * test_exports.sh checks that nothing else is exported. Users of the
 * library see an empty macro. */
#if defined(PDNN_BUILDING) && defined(__GNUC__)
#define PDNN_API __attribute__((visibility("default")))
#else
#define PDNN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define PDNN_VERSION_MAJOR 0
#define PDNN_VERSION_MINOR 1
#define PDNN_VERSION_PATCH 0

/* ------------------------------------------------------------------ */
/* Status and errors                                                    */
/* ------------------------------------------------------------------ */

typedef enum pdnn_status {
    PDNN_SUCCESS = 0,
    PDNN_ERR_INVALID_ARGUMENT = 1, /* NULL, bad value, mismatched shapes  */
    PDNN_ERR_NOT_FOUND = 2,        /* unknown device, missing file        */
    PDNN_ERR_UNSUPPORTED = 3,      /* valid request this build cannot run */
    PDNN_ERR_OUT_OF_MEMORY = 4,    /* device or host memory exhausted     */
    PDNN_ERR_BACKEND = 5,          /* the driver/runtime reported failure */
    PDNN_ERR_IO = 6,               /* reading or writing a file failed    */
    PDNN_ERR_CORRUPT = 7,          /* a file's contents are malformed     */
    PDNN_ERR_INTERNAL = 8
} pdnn_status;

/* Message of the last failure on the calling thread ("" if none). The
 * pointer stays valid until the next failing call on this thread. */
PDNN_API const char *pdnn_last_error(void);

/* Short constant name of a status, e.g. "PDNN_ERR_OUT_OF_MEMORY". */
PDNN_API const char *pdnn_status_string(pdnn_status status);

/* Library version as "MAJOR.MINOR.PATCH". */
PDNN_API const char *pdnn_version(void);

/* The layout of a public struct as this build of the library compiled it,
 * for bindings that mirror the structs by hand (the Python module checks
 * its ctypes copies with it when it loads). struct_name is the C name:
 * "pdnn_context_options", "pdnn_device_info", "pdnn_device_spec",
 * "pdnn_memory_stats", "pdnn_tensor_desc", "pdnn_conv2d_params",
 * "pdnn_conv2d_tuning", "pdnn_pool2d_params", "pdnn_session_config",
 * "pdnn_optimizer_params", "pdnn_batch_norm_params", and
 * the DLPack structs of polydnn_dlpack.h: "DLPackVersion", "DLDevice",
 * "DLDataType", "DLTensor", "DLManagedTensor", "DLManagedTensorVersioned".
 * field NULL: *offset = 0 and *size = sizeof the struct; else the named
 * member's offsetof and sizeof. offset and size may each be NULL.
 * PDNN_ERR_NOT_FOUND for a struct or member it does not know. */
PDNN_API pdnn_status pdnn_struct_layout(const char *struct_name, const char *field,
                                        size_t *offset, size_t *size);

/* ------------------------------------------------------------------ */
/* Context and devices                                                  */
/* ------------------------------------------------------------------ */

typedef struct pdnn_context pdnn_context;
typedef struct pdnn_device pdnn_device;
typedef struct pdnn_tensor pdnn_tensor;

/* Kernel autotuning (see docs/tuning.md). OFF: built-in defaults per
 * device class; CACHED (default): results from the tuning cache file where
 * there are some, defaults elsewhere; SEARCH: also tune a shape on its first
 * use (a few candidate kernels are checked against the default and timed;
 * the best is used and stored in the cache); FORCE: as SEARCH, but results
 * already in the cache file are ignored: each shape is tuned again the
 * first time this process runs it, and its entry replaced (what
 * `polydnn tune --force` uses). */
typedef enum pdnn_tuning_mode {
    PDNN_TUNING_CACHED = 0,
    PDNN_TUNING_OFF = 1,
    PDNN_TUNING_SEARCH = 2,
    PDNN_TUNING_FORCE = 3
} pdnn_tuning_mode;

/* The tuning cache file this process reads and writes
 * ($POLYDNN_CACHE_DIR/tuning-v1.tsv, else under $XDG_CACHE_HOME or
 * ~/.cache), written into buf. PDNN_ERR_NOT_FOUND when no directory is
 * known (results then stay in memory), PDNN_ERR_INVALID_ARGUMENT when buf
 * is NULL or too short. */
PDNN_API pdnn_status pdnn_tuning_cache_file(char *buf, size_t len);

/* Says whether every tuning result this process stored is in the tuning
 * cache file, first writing again those that are not (a store whose write
 * failed keeps its result in memory: the directory is not writable, the
 * disk is full, the path is not a regular file, there is no cache
 * directory). PDNN_SUCCESS when all are written (or none was stored);
 * PDNN_ERR_IO when some are in memory only, the message naming the file
 * and why. *unsaved (may be NULL) receives how many are in memory only. */
PDNN_API pdnn_status pdnn_tuning_cache_flush(size_t *unsaved);

/* How allow_growth sizes each new region (docs/memory.md). */
typedef enum pdnn_growth_policy {
    /* Each new region is the request or 1/16 of what is already reserved,
     * whichever is larger (at least 2 MiB, in whole MiB): at most about
     * 6% reserved beyond what the largest request needed. */
    PDNN_GROWTH_GRADUAL = 0,
    /* TensorFlow's rule: 2 MiB, then each region doubles the previous
     * one; up to 2x what is in use stays reserved. */
    PDNN_GROWTH_DOUBLE = 1
} pdnn_growth_policy;

typedef struct pdnn_context_options {
    /* Memory (see docs/memory.md). allow_growth: 1 grow regions on
     * demand, 0 reserve the device's whole limit on first use. */
    int allow_growth;
    /* Region sizes with allow_growth; POLYDNN_GROWTH_POLICY=gradual|double
     * overrides. */
    pdnn_growth_policy growth_policy;
    /* Fraction of each accelerator's total memory this context may use,
     * 0 < f <= 1; 0 means unset. */
    double memory_fraction;
    /* Byte limit per accelerator; 0 means unset. Wins over the fraction.
     * A limit above a device's total memory is clamped to it with a
     * warning on stderr (so UINT64_MAX means "all of it"). */
    uint64_t memory_limit;
    /* Print one line per op placement (used by sessions). */
    int log_device_placement;
    /* Comma-separated GPU indices to expose, like CUDA_VISIBLE_DEVICES;
     * NULL exposes all. The kept GPUs are renumbered from 0. */
    const char *visible_devices;
    /* Kernel autotuning; POLYDNN_TUNING=off|cached|search|force overrides. */
    pdnn_tuning_mode tuning;
    /* TensorFlow's enable_tensor_float_32_execution, with its default
     * (1, set by pdnn_context_options_init): float32 convolutions and
     * matmuls on CUDA devices may run on TF32 tensor cores (Ampere and
     * later), which round their inputs to 10 fraction bits (results off
     * by ~1e-3 relative). 0: plain float32 (FMA) arithmetic. The host and
     * OpenCL backends ignore it. POLYDNN_ENABLE_TENSOR_FLOAT_32_EXECUTION=
     * true|false|1|0 overrides. */
    int enable_tensor_float_32_execution;
} pdnn_context_options;

/* Fills the defaults: no growth (gradual when enabled), no fraction, no limit, no logging, all
 * devices visible, cached tuning, TF32 enabled. */
PDNN_API void pdnn_context_options_init(pdnn_context_options *opts);

/* Creates a context. opts may be NULL for defaults. Environment variables
 * override options (POLYDNN_ALLOW_GROWTH=true|false,
 * POLYDNN_GROWTH_POLICY=gradual|double,
 * POLYDNN_MEMORY_FRACTION, POLYDNN_MEMORY_LIMIT_MB,
 * POLYDNN_LOG_DEVICE_PLACEMENT=0|1, POLYDNN_VISIBLE_DEVICES,
 * POLYDNN_TUNING=off|cached|search|force,
 * POLYDNN_ENABLE_TENSOR_FLOAT_32_EXECUTION=true|false|1|0, and POLYDNN_PROGRAM_CACHE=off|on
 * for the on-disk cache of compiled OpenCL programs); an invalid
 * value fails with PDNN_ERR_INVALID_ARGUMENT naming the variable. */
PDNN_API pdnn_status pdnn_context_create(const pdnn_context_options *opts,
                                         pdnn_context **out);

/* 1 if the context lets float32 work use TF32 tensor cores (its
 * enable_tensor_float_32_execution after the environment's override),
 * else 0; 0 for NULL. */
PDNN_API int pdnn_context_tensor_float_32_enabled(const pdnn_context *ctx);

/* Drops the creator's reference: the devices are freed now, or when the
 * last tensor, session or DLPack export still holding the context goes.
 * ctx may not be used afterwards (those objects still work); a second call
 * is refused with a message on stderr. NULL is ignored. */
PDNN_API void pdnn_context_destroy(pdnn_context *ctx);

typedef enum pdnn_device_type {
    PDNN_DEVICE_CPU = 0, /* the host, and CPU OpenCL devices when a GPU exists */
    PDNN_DEVICE_GPU = 1  /* accelerators; PoCL too when no real GPU exists */
} pdnn_device_type;

typedef struct pdnn_device_info {
    char name[64];            /* canonical, e.g. "/device:GPU:0"          */
    pdnn_device_type type;
    int index;                /* N in /device:TYPE:N                       */
    char backend[16];         /* "host", "opencl", "cuda"                  */
    char vendor[128];
    char device_name[256];
    char driver_version[128];
    uint64_t memory_bytes;    /* total global memory                       */
    uint64_t max_alloc_bytes; /* largest single allocation the driver allows */
    int compute_units;
} pdnn_device_info;

/* Why compiled-in backends found no devices, one line per backend (e.g.
 * "opencl: no devices (no OpenCL platform is installed)"); "" if all found
 * some. For `polydnn devices --verbose`. */
PDNN_API const char *pdnn_context_notes(const pdnn_context *ctx);

/* Number of devices in the context (the host is always one of them). */
PDNN_API int pdnn_device_count(const pdnn_context *ctx);

/* The index-th device, in TensorFlow's order: /device:CPU:0 first, then
 * GPUs by index, then further CPU devices. */
PDNN_API pdnn_status pdnn_device_get(pdnn_context *ctx, int index, pdnn_device **out);

/* Looks a device up by name ("/cpu:0", "/gpu:1", "/device:GPU:1",
 * "/job:localhost/replica:0/task:0/device:GPU:1", case-insensitive).
 * PDNN_ERR_NOT_FOUND if well-formed but absent (the message lists the
 * devices that exist), PDNN_ERR_INVALID_ARGUMENT if malformed. */
PDNN_API pdnn_status pdnn_device_find(pdnn_context *ctx, const char *name,
                                      pdnn_device **out);

/* The device an op without an explicit device runs on: /device:GPU:0 when
 * one exists, else /device:CPU:0. */
PDNN_API pdnn_status pdnn_device_default(pdnn_context *ctx, pdnn_device **out);

PDNN_API pdnn_status pdnn_device_get_info(const pdnn_device *dev, pdnn_device_info *out);

/* Blocks until all work queued on the device has finished. */
PDNN_API pdnn_status pdnn_device_synchronize(pdnn_device *dev);

/* Measures the device's peak rates with small kernels of the backend's
 * own (outside the device's allocator; up to a few seconds): *gflops the
 * fp32 fused multiply-add rate in GFLOP/s (2 per FMA), *gbytes_per_s the
 * streaming copy bandwidth in GB/s (bytes read + written). On OpenCL the
 * best of float4/8/16 FMA chains and a float4 copy over buffers of up to
 * 1/8 of the device's memory; on the host, one core's plain C loop and
 * memcpy. Waits for the device's queued work first. Both are 0 on
 * failure; PDNN_ERR_UNSUPPORTED when the device's backend cannot measure
 * them (CUDA for now). */
PDNN_API pdnn_status pdnn_device_measure_peak(pdnn_device *dev, double *gflops, double *gbytes_per_s);

/* A parsed device name. Fields left unspecified in a partial name are
 * -1 (type, index) or empty (job). */
typedef struct pdnn_device_spec {
    char job[32];
    int replica;  /* -1 if absent */
    int task;     /* -1 if absent */
    int type;     /* pdnn_device_type, or -1 if absent */
    int index;    /* -1 if absent or "*" */
} pdnn_device_spec;

/* Parses a full device name (type and index both present). */
PDNN_API pdnn_status pdnn_device_name_parse(const char *name, pdnn_device_spec *out);

/* ------------------------------------------------------------------ */
/* Device memory                                                        */
/* ------------------------------------------------------------------ */

/* Each device owns one best-fit-with-coalescing allocator. Requests are
 * rounded up to 256 bytes; regions come from the driver and are kept
 * until pdnn_device_release_unused() or the context's end. */
typedef struct pdnn_memory_stats {
    uint64_t bytes_in_use;       /* held by live tensors (rounded sizes)  */
    uint64_t peak_bytes_in_use;
    uint64_t bytes_reserved;     /* obtained from the driver              */
    uint64_t peak_bytes_reserved;
    uint64_t num_allocs;         /* successful allocations so far         */
    uint64_t largest_alloc;
    uint64_t num_regions;
    uint64_t largest_free_chunk; /* within reserved memory                */
    uint64_t limit;              /* most bytes this context may reserve   */
} pdnn_memory_stats;

PDNN_API pdnn_status pdnn_device_get_memory_stats(pdnn_device *dev, pdnn_memory_stats *out);

/* Sets peak_bytes_in_use and peak_bytes_reserved to their current values. */
PDNN_API pdnn_status pdnn_device_reset_peak_stats(pdnn_device *dev);

/* Changes this context's limit for dev at run time. Lowering below the
 * bytes in use fails with PDNN_ERR_INVALID_ARGUMENT and changes nothing;
 * lowering below the bytes reserved first returns free regions. A limit
 * above the device's total memory is clamped to it with a warning. */
PDNN_API pdnn_status pdnn_device_set_memory_limit(pdnn_device *dev, uint64_t bytes);

/* Returns regions that hold no tensor to the driver (like PyTorch's
 * empty_cache). *freed (may be NULL) receives the bytes returned. */
PDNN_API pdnn_status pdnn_device_release_unused(pdnn_device *dev, uint64_t *freed);

/* Writes a per-bin dump of the allocator (free and used chunks, regions,
 * stats, and why the first-use reservation took less than the limit
 * where it did) into buf, truncated to len. With POLYDNN_MEMORY_SUMMARY_ON_OOM=1
 * the same dump goes to stderr whenever a tensor allocation runs out of
 * memory. */
PDNN_API pdnn_status pdnn_device_memory_summary(pdnn_device *dev, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Tensors                                                              */
/* ------------------------------------------------------------------ */

/* Storage dtypes. float16 (IEEE binary16) and bfloat16 (float32's top 16
 * bits) are 2 bytes: an op takes them where an algorithm of the tensors'
 * device has a path for them (the host's reference has one for every op
 * that dispatches through the registry: it widens the inputs to float32,
 * computes in float32 and rounds each output once to nearest even;
 * docs/precision.md), and refuses them otherwise, naming the op, the
 * algorithm and the dtype. One call's float tensors share one dtype
 * unless the op says otherwise (pdnn_cast converts). */
typedef enum pdnn_dtype {
    PDNN_FLOAT32 = 0,
    PDNN_FLOAT16 = 1,  /* 2 bytes, IEEE binary16 */
    PDNN_BFLOAT16 = 2, /* 2 bytes, bfloat16 */
    PDNN_INT32 = 3     /* 4 bytes; labels: only the ops that say so accept it */
} pdnn_dtype;

/* Memory order of a tensor. dims[] are always given in the logical order
 * named below, whatever the layout:
 *   activations NCHW, NHWC       dims = {N, C, H, W}
 *   filters OIHW, OHWI, HWIO     dims = {O, I, H, W} (I = input channels
 *                                 per group); HWIO is TensorFlow's
 *   vector X                     dims = {length, 1, 1, 1} (bias)
 *   PDNN_ND                      dims[0..rank): any rank 0..PDNN_MAX_RANK,
 *                                 row-major (C order, the last dim
 *                                 fastest), as numpy and torch store them
 * Image ops (convolution, pooling, batch norm) take the image layouts;
 * every other op also takes PDNN_ND. An NCHW tensor's bytes are those of
 * a rank-4 ND tensor {N, C, H, W}; an NHWC tensor's those of {N, H, W, C}
 * (pdnn_tensor_view gives the one as the other without a copy).         */
typedef enum pdnn_layout {
    PDNN_NCHW = 0,
    PDNN_NHWC = 1,
    PDNN_OIHW = 2,
    PDNN_OHWI = 3,
    PDNN_HWIO = 4,
    PDNN_LAYOUT_X = 5,
    PDNN_ND = 6
} pdnn_layout;

#define PDNN_MAX_RANK 8

/* rank comes after dims so that a descriptor written {dtype, layout,
 * {n, c, h, w}} (before ranks existed) still means what it meant: rank is
 * read for PDNN_ND only (the image layouts have rank 4, X rank 1, whatever
 * the field says, so a copy given another layout stays valid) and dims
 * past the layout's rank may be 0 or 1. For PDNN_ND, rank is the number
 * of dims (0: a scalar of one element).
 * Descriptors the library hands back (pdnn_tensor_get_desc, a node's
 * output) are canonical: rank set (4, X: 1) and the dims past it 1, so the
 * product of all PDNN_MAX_RANK dims is the element count. */
typedef struct pdnn_tensor_desc {
    pdnn_dtype dtype;
    pdnn_layout layout;
    int64_t dims[PDNN_MAX_RANK];
    int rank;
} pdnn_tensor_desc;

/* Checks a descriptor: known dtype and layout, an ND rank of 0 to
 * PDNN_MAX_RANK, every dim below the rank >= 1, the dims past it 0 or 1 (trailing dims of LAYOUT_X
 * exactly 1), and a byte size that fits in int64. */
PDNN_API pdnn_status pdnn_tensor_desc_validate(const pdnn_tensor_desc *desc);

/* The descriptor's rank: PDNN_ND's rank, 4 for the image layouts, 1 for X
 * (-1 if desc is NULL or its layout unknown). */
PDNN_API int pdnn_tensor_desc_rank(const pdnn_tensor_desc *desc);

/* Elements and bytes a descriptor describes (0 if invalid). */
PDNN_API int64_t pdnn_tensor_desc_elements(const pdnn_tensor_desc *desc);
PDNN_API int64_t pdnn_tensor_desc_bytes(const pdnn_tensor_desc *desc);

/* Parses "NCHW", "nhwc", "OIHW", "OHWI", "HWIO", "X", "ND"; returns -1 if unknown. */
PDNN_API int pdnn_layout_parse(const char *name);
PDNN_API const char *pdnn_layout_name(pdnn_layout layout);

/* Creates an uninitialised tensor on dev. */
PDNN_API pdnn_status pdnn_tensor_create(pdnn_device *dev, const pdnn_tensor_desc *desc,
                                        pdnn_tensor **out);

/* Copies bytes from host memory into the tensor. The host data is in the
 * tensor's layout order; bytes must equal the tensor's size. */
PDNN_API pdnn_status pdnn_tensor_write(pdnn_tensor *t, const void *src, size_t bytes);

/* Marks t constant, as a session marks its constants: from now on its
 * contents change only through pdnn_tensor_write (which drops what was
 * kept). Convolution algorithms may then keep a filter (pdnn_conv2d_
 * forward's w) packed in their own order across calls, packed once. Do
 * not use a frozen tensor as an op's output or write it through a DLPack
 * export: the kept copies would go stale. NULL: PDNN_ERR_INVALID_ARGUMENT. */
PDNN_API pdnn_status pdnn_tensor_freeze(pdnn_tensor *t);

/* Copies the tensor into host memory (waits for pending work). */
PDNN_API pdnn_status pdnn_tensor_read(const pdnn_tensor *t, void *dst, size_t bytes);

PDNN_API pdnn_status pdnn_tensor_get_desc(const pdnn_tensor *t, pdnn_tensor_desc *out);

/* *out: a new handle on x's memory (no copy) described by desc, which has
 * x's dtype and element count and any layout and rank: an NCHW tensor
 * viewed as ND {N, C, H, W}, an ND matrix {M, K} as NCHW {M, K, 1, 1}, a
 * reshape. The bytes are read in desc's memory order, as they lie. The
 * view keeps x's memory alive; release each handle. */
PDNN_API pdnn_status pdnn_tensor_view(pdnn_tensor *x, const pdnn_tensor_desc *desc, pdnn_tensor **out);
PDNN_API pdnn_device *pdnn_tensor_device(const pdnn_tensor *t);

/* y = x converted to y's dtype (float32, float16, bfloat16; x's dims,
 * layout and device): narrowing rounds to nearest, ties to even (numpy's
 * astype, ml_dtypes' bfloat16), overflow gives infinity, NaN stays NaN;
 * widening is exact. x and y may not share memory. */
PDNN_API pdnn_status pdnn_cast(const pdnn_tensor *x, pdnn_tensor *y);

/* Returns the tensor's memory to its device (when its last DLPack export
 * is deleted, if it has any) and drops its reference on the context. NULL
 * is ignored. */
PDNN_API void pdnn_tensor_release(pdnn_tensor *t);

/* ------------------------------------------------------------------ */
/* Convolution                                                          */
/* ------------------------------------------------------------------ */

/* Convolution algorithms. AUTO takes the fastest one whose workspace
 * fits in the device's free memory (falling back to one that needs none),
 * preferring those within pdnn_conv2d_params.workspace_limit;
 * naming one runs exactly that one or fails. Each backend registers the
 * algorithms it has (src/backend.h); the values below are the stable ids
 * of those this release has, not a list of what a build or a device
 * runs. Ask the build: pdnn_conv_algo_count and pdnn_conv_algo_name list
 * every id and name (an algorithm added later without an enum value here
 * gets the next free id; pdnn_conv_algo_parse finds it by name), and
 * pdnn_conv2d_query_algorithm says whether one runs a given convolution
 * on a device, with what workspace, or why not. */
typedef enum pdnn_conv_algo {
    PDNN_CONV_ALGO_AUTO = 0,
    PDNN_CONV_ALGO_DIRECT = 1,        /* a plain sum per output          */
    PDNN_CONV_ALGO_IM2COL_GEMM = 2,   /* im2col, then a GEMM             */
    PDNN_CONV_ALGO_VENDOR = 3,        /* the vendor library's own choice */
    PDNN_CONV_ALGO_TILED = 4,         /* register-tiled direct           */
    PDNN_CONV_ALGO_WINOGRAD = 5,      /* Winograd F(4x4,3x3)             */
    PDNN_CONV_ALGO_DEPTHWISE = 6,     /* one filter per input channel    */
    PDNN_CONV_ALGO_GEMM_1X1 = 7,      /* 1x1 as a GEMM in place          */
    PDNN_CONV_ALGO_IMPLICIT_GEMM = 8  /* a GEMM reading the input in place */
} pdnn_conv_algo;
/* The ids the enum above names; pdnn_conv_algo_count() may be larger. */
#define PDNN_CONV_ALGO_COUNT 9

/* One more than the largest algorithm id of this build (AUTO is 0). An
 * id below it with no algorithm in this build (vendor without the CUDA
 * backend) is named "unknown". */
PDNN_API int pdnn_conv_algo_count(void);

/* The algorithm's name ("auto", "direct", "im2col_gemm", "vendor",
 * "tiled", ...), as the backends register it; "unknown" for an id this
 * build has no algorithm for. */
PDNN_API const char *pdnn_conv_algo_name(pdnn_conv_algo algo);

/* The algorithm named name (as pdnn_conv_algo_name writes it, any case);
 * -1 if name is NULL or no algorithm's name. */
PDNN_API int pdnn_conv_algo_parse(const char *name);

/* The backward convolutions' algorithms, numbered per direction as the
 * forward's are (cuDNN has one enum per direction too): 0 is "auto", then
 * the names every compiled-in backend registers for that direction, in
 * backend order. The build says which: pdnn_conv_bwd_algo_count and
 * pdnn_conv_bwd_algo_name list them. */
typedef enum pdnn_conv_bwd_dir {
    PDNN_CONV_BWD_DATA = 0,
    PDNN_CONV_BWD_FILTER = 1
} pdnn_conv_bwd_dir;
/* One more than the largest id of dir in this build; 0 if dir is unknown. */
PDNN_API int pdnn_conv_bwd_algo_count(pdnn_conv_bwd_dir dir);
/* The id's name; "unknown" outside [0, count). */
PDNN_API const char *pdnn_conv_bwd_algo_name(pdnn_conv_bwd_dir dir, int id);
/* The id named name (any case); -1 if none. */
PDNN_API int pdnn_conv_bwd_algo_parse(pdnn_conv_bwd_dir dir, const char *name);

typedef struct pdnn_conv2d_params {
    int stride_h, stride_w;       /* >= 1 */
    int dilation_h, dilation_w;   /* >= 1 */
    int pad_top, pad_bottom;      /* >= 0, explicit per side */
    int pad_left, pad_right;
    int groups;                   /* >= 1; C and K both divisible */
    int relu;                     /* 1: fuse max(0, y) after the bias */
    pdnn_conv_algo algorithm;     /* default PDNN_CONV_ALGO_AUTO */
    /* The backward ops' algorithms, ids of pdnn_conv_bwd_algo_parse for
     * PDNN_CONV_BWD_DATA and _FILTER; 0 (default): auto. */
    int bwd_data_algorithm;
    int bwd_filter_algorithm;
    /* With relu: y = min(max(0, y), relu_cap) when relu_cap > 0 (ReLU6:
     * 6, cuDNN's clipped relu); 0 (default): no upper bound. Finite and
     * not negative; only with relu = 1. Forward only: a graph's gradients
     * refuse a capped relu. */
    float relu_cap;
    /* AUTO's workspace limit in bytes, a preference; 0 (default): none.
     * AUTO tries the algorithms whose workspace is within it first (on
     * CUDA, cuDNN's first proposal within it), and a larger one only
     * where none of those runs. A named algorithm ignores it. A session
     * sets it for each convolution to what keeps the device's memory in
     * use within 1.2x of the largest live set it has measured. */
    size_t workspace_limit;
} pdnn_conv2d_params;

/* stride 1, dilation 1, no padding, one group, no ReLU, AUTO algorithm,
 * no workspace limit. */
PDNN_API void pdnn_conv2d_params_init(pdnn_conv2d_params *p);

/* TensorFlow's padding helpers for an input of in_h x in_w and a filter of
 * kh x kw, using p's strides and dilations. SAME: output = ceil(in /
 * stride), the odd pixel of padding goes to the bottom/right. VALID: no
 * padding. */
PDNN_API pdnn_status pdnn_conv2d_set_padding_same(pdnn_conv2d_params *p, int64_t in_h,
                                                  int64_t in_w, int64_t kh, int64_t kw);
PDNN_API void pdnn_conv2d_set_padding_valid(pdnn_conv2d_params *p);

/* Output dims {N, K, OH, OW} of x (activation) convolved with w (filter). */
PDNN_API pdnn_status pdnn_conv2d_output_dims(const pdnn_tensor_desc *x,
                                             const pdnn_tensor_desc *w,
                                             const pdnn_conv2d_params *p,
                                             int64_t out_dims[4]);

/* y = relu?(conv(x, w) + bias). x, y: NCHW or NHWC (may differ); w: OIHW,
 * OHWI or HWIO with I = C / groups; bias: LAYOUT_X of length K, or NULL.
 * y must already exist with the dims pdnn_conv2d_output_dims gives, and
 * share no memory with x, w or bias. */
PDNN_API pdnn_status pdnn_conv2d_forward(const pdnn_conv2d_params *p,
                                         const pdnn_tensor *x, const pdnn_tensor *w,
                                         const pdnn_tensor *bias, pdnn_tensor *y);

/* y = relu?(conv(x, w) + bias + z): the convolution with a residual z
 * added before the relu (cuDNN's z of cudnnConvolutionBiasActivationForward,
 * a ResNet block's shortcut). z has y's dims and layout and shares no
 * memory with y. Algorithms with the residual epilogue (host direct;
 * OpenCL implicit_gemm, gemm_1x1 and winograd) add z as they store y;
 * CUDA's run conv, bias, z and relu as one
 * cudnnConvolutionBiasActivationForward where there are a bias and a
 * relu, else add z in a cuDNN call after the convolution; the others run as for
 * pdnn_conv2d_forward and then add z and apply the relu (two passes over
 * y), so the algorithm AUTO picks is the same as without z. */
PDNN_API pdnn_status pdnn_conv2d_forward_residual(const pdnn_conv2d_params *p, const pdnn_tensor *x,
                                                  const pdnn_tensor *w, const pdnn_tensor *bias,
                                                  const pdnn_tensor *z, pdnn_tensor *y);

/* Backward convolution (training). p and the tensors' dims are the
 * forward's: x {N,C,H,W}, w {K,C/groups,R,S}, y {N,K,P,Q}; dx has x's
 * dims, dw w's, dy y's; each may be in any layout its role allows (dx,
 * dy NCHW or NHWC; dw OIHW, OHWI or HWIO). The output is overwritten (no
 * accumulation); it must be a tensor of its own, sharing no memory with
 * an input. p->relu must be 0 (ReLU's gradient is applied to dy first);
 * p->algorithm is the forward's and is ignored: backward data runs
 * p->bwd_data_algorithm and backward filter p->bwd_filter_algorithm, and
 * with auto (0) choose among their own algorithms (tuned like the
 * forward's when the context tunes). An algorithm that does not apply, or
 * that the device's backend lacks, is an error naming why.
 *   backward_data:   dx = dL/dx of y = conv(x, w), given dy = dL/dy
 *   backward_filter: dw = dL/dw, given x and dy
 *   backward_bias:   db[k] = sum over n, p, q of dy[n,k,p,q]; db is a
 *                    LAYOUT_X vector of length K */
PDNN_API pdnn_status pdnn_conv2d_backward_data(const pdnn_conv2d_params *p, const pdnn_tensor *dy,
                                               const pdnn_tensor *w, pdnn_tensor *dx);
PDNN_API pdnn_status pdnn_conv2d_backward_filter(const pdnn_conv2d_params *p, const pdnn_tensor *x,
                                                 const pdnn_tensor *dy, pdnn_tensor *dw);
PDNN_API pdnn_status pdnn_conv2d_backward_bias(const pdnn_tensor *dy, pdnn_tensor *db);

/* The algorithm the calling thread's last successful pdnn_conv2d_forward
 * ran (never AUTO after a call); AUTO before any call. */
PDNN_API pdnn_conv_algo pdnn_conv2d_last_algorithm(void);

/* What tuning did for the calling thread's last successful
 * pdnn_conv2d_forward (all zero before any call). */
typedef struct pdnn_conv2d_tuning {
    int tunable;           /* the kernel that ran has tunable parameters,
                              or AUTO's algorithm choice was measured */
    int cached;            /* its configuration (and AUTO's choice) came
                              from the tuning cache */
    int searched;          /* this call searched (and stored the result) */
    double search_seconds; /* how long that search took; 0 if none */
    char config[48];       /* the configuration that ran, e.g. "tq=8 kb=2";
                              "" when not tunable */
    int algo_measured;     /* AUTO ran the algorithm measured fastest for
                              this device and shape (from the cache, or
                              measured by this call) */
    int algo_searched;     /* this call measured the algorithms (tuning
                              search or force, no stored choice) */
} pdnn_conv2d_tuning;
PDNN_API pdnn_status pdnn_conv2d_last_tuning(pdnn_conv2d_tuning *out);

/* Whether and how one algorithm runs a convolution on a device (what
 * `polydnn conv --algo help` prints). */
typedef struct pdnn_conv_algo_info {
    pdnn_conv_algo algo;
    char name[32];
    int available;         /* the device's backend has this algorithm    */
    int applies;           /* it runs this convolution on this device     */
    int auto_candidate;    /* AUTO's fixed order would consider it (it
                              applies and is not passed over here)        */
    int rank;              /* its place in that order, lower first        */
    int tunable;           /* it has configurations `polydnn tune` searches
                              (0 for a GPU-class algorithm on a CPU, which
                              AUTO, its find and tune pass over)          */
    uint64_t workspace_bytes; /* workspace it needs here (when it applies) */
    char config[48];       /* the configuration it would run ("" if none) */
    char why[256];         /* why it does not apply, why AUTO passes
                              over it, or that it needs more than
                              p's workspace_limit; "" otherwise          */
} pdnn_conv_algo_info;

/* Fills *out for algorithm algo (1 <= algo < pdnn_conv_algo_count()) and
 * the convolution of x by w with p, writing y in y_layout (NCHW or NHWC),
 * on dev. Runs nothing; reads the tuning cache. */
PDNN_API pdnn_status pdnn_conv2d_query_algorithm(pdnn_device *dev, const pdnn_conv2d_params *p,
                                        const pdnn_tensor_desc *x, const pdnn_tensor_desc *w,
                                        pdnn_layout y_layout, pdnn_conv_algo algo,
                                        pdnn_conv_algo_info *out);

/* ------------------------------------------------------------------ */
/* Pooling                                                              */
/* ------------------------------------------------------------------ */

typedef enum pdnn_pool_mode {
    PDNN_POOL_MAX = 0,
    PDNN_POOL_AVG_INCLUDE_PADDING = 1, /* divide by the window's size     */
    PDNN_POOL_AVG_EXCLUDE_PADDING = 2  /* divide by in-image elements only */
} pdnn_pool_mode;

typedef struct pdnn_pool2d_params {
    pdnn_pool_mode mode;
    int window_h, window_w;      /* >= 1 */
    int stride_h, stride_w;      /* >= 1 */
    int pad_top, pad_bottom;     /* 0 <= pad < window on each axis */
    int pad_left, pad_right;
    int ceil_mode;               /* 1: round the output size up (PyTorch) */
} pdnn_pool2d_params;

/* Max pooling, window 2x2, stride 2, no padding, floor mode. */
PDNN_API void pdnn_pool2d_params_init(pdnn_pool2d_params *p);

/* Output dims {N, C, OH, OW}. With ceil_mode, a last window that would
 * start inside the bottom/right padding is dropped, as in PyTorch. */
PDNN_API pdnn_status pdnn_pool2d_output_dims(const pdnn_tensor_desc *x,
                                             const pdnn_pool2d_params *p,
                                             int64_t out_dims[4]);

/* y = pool(x). x, y: NCHW or NHWC (may differ). For AVG_INCLUDE_PADDING
 * the divisor counts padding but not the part of a ceil-mode window that
 * lies beyond the padding (PyTorch's rule). y shares no memory with x. */
PDNN_API pdnn_status pdnn_pool2d_forward(const pdnn_pool2d_params *p,
                                         const pdnn_tensor *x, pdnn_tensor *y);

/* dx = dL/dx of y = pool(x), given dy = dL/dy (y's dims). x is the
 * forward's input: max pooling finds each window's maximum there again
 * and sends the window's gradient to it; with ties, to the first maximum
 * in the window's row-major order (TensorFlow's and PyTorch's rule); a
 * window holding NaN sends it to its last NaN, the element the forward
 * returned. Average pooling spreads each gradient evenly over the window's
 * in-image elements, divided by the forward's divisor. dx (x's dims, NCHW
 * or NHWC) is overwritten and must share no memory with x or dy. */
PDNN_API pdnn_status pdnn_pool2d_backward(const pdnn_pool2d_params *p, const pdnn_tensor *x,
                                          const pdnn_tensor *dy, pdnn_tensor *dx);

/* ---- batch normalization ---- */

/* Batch normalization over N, H, W per channel C (both activation
 * layouts), PyTorch's BatchNorm2d / cuDNN's spatial mode. */
typedef struct pdnn_batch_norm_params {
    int training;     /* 1: batch statistics (and running stats updated); 0: running statistics */
    float epsilon;    /* > 0; default 1e-5 */
    float momentum;   /* in [0, 1]: running = (1 - momentum) * running + momentum * batch; default 0.1
                         (PyTorch); the running variance takes the unbiased batch variance, as PyTorch does */
} pdnn_batch_norm_params;

/* training 1, epsilon 1e-5, momentum 0.1. */
PDNN_API void pdnn_batch_norm_params_init(pdnn_batch_norm_params *p);

/* y = gamma * (x - mean) / sqrt(var + epsilon) + beta per channel.
 * x, y: float32, same dims and layout (NCHW or NHWC); y shares no memory
 * with any other argument. gamma, beta, running_mean, running_var,
 * saved_mean, saved_inv_std: float32 layout X {C,1,1,1}.
 * training: mean and var are the batch's (var biased, over N*H*W values);
 * saved_mean/saved_inv_std (may be NULL) receive the batch mean and
 * 1/sqrt(var + epsilon), for pdnn_batch_norm_backward; running_mean and
 * running_var (both or neither may be NULL) are updated in place, the
 * variance with the unbiased batch variance, so they need N*H*W > 1 (one
 * value per channel is refused, as PyTorch does; without running stats it
 * normalizes to beta). inference: running_mean/var are required and read
 * as mean and var; saved_* are ignored. */
PDNN_API pdnn_status pdnn_batch_norm_forward(const pdnn_batch_norm_params *p, const pdnn_tensor *x,
                                             const pdnn_tensor *gamma, const pdnn_tensor *beta,
                                             pdnn_tensor *running_mean, pdnn_tensor *running_var,
                                             pdnn_tensor *saved_mean, pdnn_tensor *saved_inv_std, pdnn_tensor *y);

/* The training-mode gradient from the forward's saved statistics, given
 * dy (x's dims and layout): dx (x's desc), dgamma = sum dy * xhat and
 * dbeta = sum dy (layout X {C}), with xhat = (x - saved_mean) *
 * saved_inv_std. Any of the three outputs may be NULL (not computed), not
 * all; each is overwritten and shares no memory with an input or another
 * output. p's epsilon and momentum are checked but unused (the saved
 * statistics hold epsilon); p->training must be 1. */
PDNN_API pdnn_status pdnn_batch_norm_backward(const pdnn_batch_norm_params *p, const pdnn_tensor *x,
                                              const pdnn_tensor *dy, const pdnn_tensor *gamma,
                                              const pdnn_tensor *saved_mean, const pdnn_tensor *saved_inv_std,
                                              pdnn_tensor *dx, pdnn_tensor *dgamma, pdnn_tensor *dbeta);

/* ------------------------------------------------------------------ */
/* The ops around convolution                                           */
/* ------------------------------------------------------------------ */

/* A matrix is an activation tensor {rows, cols, 1, 1} (NCHW or NHWC: with
 * H = W = 1 both are row-major). Elementwise ops need all tensors of the
 * call to have the same dims and layout. Outputs must already exist.
 * Memory: an output may share no byte with an input (two tensors can
 * share a buffer through DLPack imports) except where an op says "y may
 * be x", which also accepts another tensor over exactly x's bytes; a
 * partial overlap is refused with PDNN_ERR_INVALID_ARGUMENT naming both. */

/* y = a + b. y may be a or b. */
PDNN_API pdnn_status pdnn_add(const pdnn_tensor *a, const pdnn_tensor *b, pdnn_tensor *y);

/* y = inputs[0] + ... + inputs[n-1], n >= 1. y may be inputs[0]. */
PDNN_API pdnn_status pdnn_add_n(const pdnn_tensor *const *inputs, int n, pdnn_tensor *y);

/* y = x + bias broadcast over C (the columns of a matrix); bias is a
 * layout-X vector of length C. y may be x. */
PDNN_API pdnn_status pdnn_bias_add(const pdnn_tensor *x, const pdnn_tensor *bias, pdnn_tensor *y);

/* y = max(x, 0); NaN stays NaN. y may be x. */
PDNN_API pdnn_status pdnn_relu(const pdnn_tensor *x, pdnn_tensor *y);

/* Elementwise activations besides relu (cuDNN's cudnnActivationForward,
 * ONNX's Clip, LeakyRelu, Sigmoid, HardSigmoid, HardSwish and SiLU, the
 * Mul of x by Sigmoid(x)). One registry op: host "direct", OpenCL
 * "direct", CUDA "cudnn" (sigmoid, swish, and clip with alpha 0, which is
 * cuDNN's clipped relu; leaky relu and other clips through cudnnOpTensor's
 * max and min; it refuses hard sigmoid and hard swish, which cuDNN lacks,
 * so a graph places those elsewhere). */
typedef enum pdnn_activation {
    PDNN_ACTIVATION_CLIP = 0,         /* min(max(x, alpha), beta); alpha <= beta (ReLU6: 0, 6); NaN stays NaN */
    PDNN_ACTIVATION_LEAKY_RELU = 1,   /* x >= 0 ? x : alpha * x */
    PDNN_ACTIVATION_SIGMOID = 2,      /* 1 / (1 + exp(-x)); alpha, beta unused */
    PDNN_ACTIVATION_HARD_SIGMOID = 3, /* max(0, min(1, alpha * x + beta)); ONNX's defaults 0.2, 0.5 */
    PDNN_ACTIVATION_HARD_SWISH = 4,   /* x * max(0, min(1, x / 6 + 1 / 2)); alpha, beta unused */
    PDNN_ACTIVATION_SILU = 5,         /* x / (1 + exp(-x)) (swish); alpha, beta unused */
    /* The unary math of ONNX and transformers (alpha, beta unused unless
     * said); CUDA runs TANH and NEG, and refuses the others (cuDNN lacks
     * them). */
    PDNN_ACTIVATION_ERF = 6,
    PDNN_ACTIVATION_GELU = 7,       /* x / 2 (1 + erf(x / sqrt 2)), the exact form */
    PDNN_ACTIVATION_GELU_TANH = 8,  /* x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
    PDNN_ACTIVATION_TANH = 9,
    PDNN_ACTIVATION_SQRT = 10,      /* NaN below 0 */
    PDNN_ACTIVATION_NEG = 11,
    PDNN_ACTIVATION_EXP = 12,
    PDNN_ACTIVATION_LOG = 13,       /* NaN below 0, -inf at 0 */
    PDNN_ACTIVATION_RECIPROCAL = 14,
    PDNN_ACTIVATION_ABS = 15,
    PDNN_ACTIVATION_POW = 16        /* x ^ alpha (C's pow: NaN for x < 0 and a fractional alpha); alpha finite */
} pdnn_activation;

/* y = f(x) for mode f. x and y: float32, the same dims and layout (any
 * layout), one device; y may be x. alpha and beta must not be NaN
 * (CLIP takes +-infinity for an open side; LEAKY_RELU needs a finite
 * alpha); an unknown mode is refused. */
PDNN_API pdnn_status pdnn_activation_forward(const pdnn_tensor *x, pdnn_activation mode, float alpha, float beta,
                                             pdnn_tensor *y);

/* y = a (op) b elementwise with NumPy's broadcasting within the four
 * dims (oneDNN's binary primitive, cuDNN's cudnnOpTensor, ONNX's Add,
 * Mul, Sub and Div): a, b and y float32 on one device, one layout; each
 * of y's dims is the larger of a's and b's there, and each of a's and
 * b's equals y's or is 1 (that dim repeats), e.g. a {N, C, H, W} times b
 * {N, C, 1, 1} scales each image's channels (squeeze-and-excitation),
 * and either side may be the broadcast one. y may be a or b where that
 * one has y's dims; it may not overlap an input otherwise. An unknown op
 * is refused. N-d: a, b and y all PDNN_ND (or X, rank 1) broadcast by
 * numpy's rule, the ranks aligned from the right (a {17, 1, 3} and b
 * {4, 1} give y {17, 4, 3}; a rank-0 side is a scalar), y of the larger
 * rank. CUDA's cudnnOpTensor broadcasts one side only and has no
 * division: it refuses DIV, calls where both sides repeat, and N-d
 * calls that need more than 4 axes once neighbours that broadcast alike
 * are merged. */
typedef enum pdnn_binary_op {
    PDNN_BINARY_ADD = 0,
    PDNN_BINARY_MUL = 1,
    PDNN_BINARY_SUB = 2, /* a - b */
    PDNN_BINARY_DIV = 3, /* a / b (IEEE: x / 0 is +-inf or NaN) */
    PDNN_BINARY_POW = 4  /* a ^ b (C's pow; CUDA refuses it) */
} pdnn_binary_op;
PDNN_API pdnn_status pdnn_binary(const pdnn_tensor *a, const pdnn_tensor *b, pdnn_binary_op op, pdnn_tensor *y);

/* y = x padded along H and W (ONNX's Pad, torch's F.pad of an image):
 * pads = {top, left, bottom, right}, each >= 0; x and y float32 NCHW or
 * NHWC, one layout, y {N, C, H + top + bottom, W + left + right}. CONSTANT
 * fills with value; REFLECT mirrors about the edge without repeating it
 * (each pad below that dim); EDGE repeats the edge. One registry op: host
 * and OpenCL "direct", CUDA "cudnn" (constant only: cudnnSetTensor, then
 * x copied into y's interior; it refuses the others). y may not overlap
 * x. */
typedef enum pdnn_pad_mode { PDNN_PAD_CONSTANT = 0, PDNN_PAD_REFLECT = 1, PDNN_PAD_EDGE = 2 } pdnn_pad_mode;
PDNN_API pdnn_status pdnn_pad(const pdnn_tensor *x, const int64_t pads[4], pdnn_pad_mode mode, float value,
                              pdnn_tensor *y);

/* Data movement on tensors of any rank (ONNX's Slice, Split, Expand,
 * Gather, Where, Pad and Resize). Tensors are float32 in any layout; axes
 * are the descriptor's logical dims (an NCHW or NHWC tensor's {N, C, H,
 * W}, read through its layout), negative axes count from the end. Each is
 * one of two registry ops: "index" (y reads x at per-axis indices: host
 * and OpenCL "direct"; CUDA "cudnn" runs the strided copies, steps >= 0
 * with no fill and no interpolation, as cudnnTransformTensor and refuses
 * the rest) and "where" (host and OpenCL; CUDA refuses it: cuDNN has no
 * select). y may not overlap an input.
 *
 * pdnn_slice: y = x[starts:ends:steps] along axes (n of each; axes NULL:
 * 0..n-1, steps NULL: 1), as ONNX's Slice: negative starts and ends count
 * from the end, both are clamped (to [0, dim] for positive steps, [-1,
 * dim - 1] for negative), a step may be negative, never 0. y's dims must
 * be the slice's and its rank x's. */
PDNN_API pdnn_status pdnn_slice(const pdnn_tensor *x, int n, const int64_t *starts, const int64_t *ends,
                                const int64_t *axes, const int64_t *steps, pdnn_tensor *y);
/* pdnn_split: x cut along axis into n outputs ys[i] of sizes[i] along it
 * (sizes NULL: equal parts, which must divide the dim); each a slice. */
PDNN_API pdnn_status pdnn_split(const pdnn_tensor *x, int axis, int n, const int64_t *sizes,
                                pdnn_tensor *const *ys);
/* pdnn_expand: y = x broadcast to y's dims by numpy's rules (the dims
 * aligned at the end; each of x's is 1 or y's; y's rank >= x's). */
PDNN_API pdnn_status pdnn_expand(const pdnn_tensor *x, pdnn_tensor *y);
/* pdnn_gather: y = x's slices at indices[0..n) along axis (ONNX's Gather
 * with constant indices; a negative index counts from the end, one out
 * of range is refused naming it). y holds x's dims with axis's replaced
 * by the indices' shape: any rank whose row-major elements are those of
 * x[:axis] + {n} + x[axis+1:]. */
PDNN_API pdnn_status pdnn_gather(const pdnn_tensor *x, int axis, const int64_t *indices, int64_t n,
                                 pdnn_tensor *y);
/* pdnn_where: y = mask != 0 ? a : b, mask, a and b broadcast to y's dims
 * by numpy's rules (ONNX's Where; the mask a float32 tensor of 0 and 1). */
PDNN_API pdnn_status pdnn_where(const pdnn_tensor *mask, const pdnn_tensor *a, const pdnn_tensor *b,
                                pdnn_tensor *y);
/* pdnn_pad_nd: y = x padded along every axis, pads ONNX's {begin_0 ..
 * begin_{r-1}, end_0 .. end_{r-1}} (2 x rank values, each >= 0; below the
 * dim for REFLECT, of a dim >= 1 for EDGE); y's dims x's plus the pads. */
PDNN_API pdnn_status pdnn_pad_nd(const pdnn_tensor *x, const int64_t *pads, pdnn_pad_mode mode, float value,
                                 pdnn_tensor *y);
/* pdnn_resize: y = x resized to y's dims (same rank), as ONNX's Resize:
 * NEAREST or LINEAR (per axis, so bilinear on H and W); coordinates
 * HALF_PIXEL ((i + 0.5) / scale - 0.5), ASYMMETRIC (i / scale),
 * ALIGN_CORNERS (i (in - 1) / (out - 1)) or PYTORCH_HALF_PIXEL (half
 * pixel, 0 where out is 1); nearest rounding ROUND_PREFER_FLOOR, FLOOR,
 * ROUND_PREFER_CEIL or CEIL. scales: one per axis (NULL: y's dim / x's),
 * as ONNX's scales input when given (its coordinates use them). LINEAR
 * reads the two neighbours clamped to the edge. */
typedef enum pdnn_resize_mode { PDNN_RESIZE_NEAREST = 0, PDNN_RESIZE_LINEAR = 1 } pdnn_resize_mode;
typedef enum pdnn_resize_coord {
    PDNN_RESIZE_HALF_PIXEL = 0,
    PDNN_RESIZE_ASYMMETRIC = 1,
    PDNN_RESIZE_ALIGN_CORNERS = 2,
    PDNN_RESIZE_PYTORCH_HALF_PIXEL = 3
} pdnn_resize_coord;
typedef enum pdnn_resize_nearest {
    PDNN_RESIZE_ROUND_PREFER_FLOOR = 0,
    PDNN_RESIZE_FLOOR = 1,
    PDNN_RESIZE_ROUND_PREFER_CEIL = 2,
    PDNN_RESIZE_CEIL = 3
} pdnn_resize_nearest;
PDNN_API pdnn_status pdnn_resize(const pdnn_tensor *x, pdnn_resize_mode mode, pdnn_resize_coord coord,
                                 pdnn_resize_nearest nearest, const float *scales, pdnn_tensor *y);

/* y = x in y's layout (TensorFlow's Transpose between NCHW and NHWC,
 * cuDNN's cudnnTransformTensor): x and y float32 with the same dims, any
 * two layouts (activations, filters or X); the same layout is a copy.
 * With a PDNN_ND side it is a copy only, refused unless both sides hold
 * their elements in the same memory order (ND {N, C, H, W} and NCHW,
 * ND {N, H, W, C} and NHWC, ND and ND of the same dims).
 * One registry op: host and OpenCL "direct", CUDA "cudnn". y may not
 * overlap x. */
PDNN_API pdnn_status pdnn_transform(const pdnn_tensor *x, pdnn_tensor *y);

/* Concatenates n >= 1 tensors along logical axis (0 N, 1 C, 2 H, 3 W of
 * pdnn_tensor_desc's dims; for a matrix {M, K, 1, 1}, 1 is the columns;
 * for PDNN_ND any axis below the rank, all of one rank):
 * every xs[i] has y's dtype and layout and y's dims except along axis,
 * where y's dim is their sum. Runs as device copies of contiguous blocks
 * (one per input and slice above the axis in memory order), so any
 * device with a copy has it. y may overlap no input. */
PDNN_API pdnn_status pdnn_concat(const pdnn_tensor *const *xs, int n, int axis, pdnn_tensor *y);

/* Softmax over C (the columns of a matrix), computed stably. */
PDNN_API pdnn_status pdnn_softmax(const pdnn_tensor *x, pdnn_tensor *y);

/* c = op(a) op(b) for matrices: op(a) is m x k (a is k x m when trans_a),
 * op(b) is k x n; c is m x n. CLBlast SGEMM on OpenCL when built with it.
 * Matrices are {rows, cols, 1, 1} NCHW or NHWC, or, where any of a, b, c
 * is PDNN_ND, numpy's matmul: the last two dims are the matrices
 * (trans_a / trans_b transpose them), the dims before them a batch that
 * broadcasts as numpy's does, a rank-1 a a row and a rank-1 b a column
 * (that dim dropped from c: {K} @ {K} is a scalar); an image-layout
 * {R, C, 1, 1} operand then counts as rank 2 and X as rank 1. The batch
 * runs as strided batches of GEMMs, one launch each: one in all where
 * the batch dims collapse to one stride per operand (attention's
 * {B,H,S,D} @ {B,H,D,S}, or either side broadcast), one per element of
 * the dims a broadcast keeps apart ({B,1,..} @ {1,H,..}: B of H); one
 * GEMM of a's rows where b is a single matrix and a is not transposed. */
PDNN_API pdnn_status pdnn_matmul(const pdnn_tensor *a, const pdnn_tensor *b, int trans_a, int trans_b,
                                 pdnn_tensor *c);

/* Copies x into y, which has the same number of elements and any dims,
 * layout and rank (ND included): elements keep their memory order
 * (TensorFlow's reshape of the stored tensor), so flattening an NHWC
 * tensor gives H, W, C order. pdnn_tensor_view is the same without a
 * copy. */
PDNN_API pdnn_status pdnn_reshape(const pdnn_tensor *x, pdnn_tensor *y);

/* ---- N-d math (any rank; docs/c-api.md "N-d math") ----
 * These take tensors of any layout by their logical dims (PDNN_ND's
 * dims[0..rank), {N, C, H, W} for the image layouts, {length} for X),
 * float32, one device; axes are logical axes, a negative axis counts from
 * the end (-1 the last). Their outputs may overlap no input. Each is a
 * registry op: host "direct" (the reference, sums in double), OpenCL
 * "direct" (and transpose "tiled"), CUDA "cudnn" where cuDNN has it. */

/* y = x with its axes permuted (numpy.transpose, ONNX's Transpose):
 * y's logical axis k is x's axis perm[k] (perm NULL: reversed), so y's
 * dims are x's permuted; x and y may have different layouts (x NCHW, y
 * ND {N, H, W, C} is NCHW -> NHWC bytes; the same dims in two layouts is
 * pdnn_transform). rank <= PDNN_MAX_RANK; perm a permutation of 0..rank-1.
 * CUDA: cudnnTransformTensor. */
PDNN_API pdnn_status pdnn_transpose(const pdnn_tensor *x, const int *perm, pdnn_tensor *y);

/* y = softmax of x along one axis (ONNX Softmax / LogSoftmax from opset
 * 13), max-subtracted; log: log-softmax, x - max - log(sum exp(x - max)).
 * y has x's desc. CUDA: cudnnSoftmaxForward (ACCURATE or LOG). */
PDNN_API pdnn_status pdnn_softmax_axis(const pdnn_tensor *x, int axis, int log, pdnn_tensor *y);

/* ONNX's LayerNormalization (Y only): each row of the dims from axis on
 * is normalized by its mean and biased variance (in float; the host
 * reference in double), y = (x - mean) / sqrt(var + epsilon) * scale +
 * bias, scale and bias (bias may be NULL) of one element per element of
 * a row (any desc: the normalized dims' shape, packed). x's layout must
 * store its logical dims in order (ND, NCHW, OIHW, X); y has x's desc;
 * epsilon >= 0 (ONNX's default 1e-5). CUDA: none (cuDNN's legacy API has
 * no layer norm): it refuses. */
PDNN_API pdnn_status pdnn_layer_norm(const pdnn_tensor *x, int axis, float epsilon, const pdnn_tensor *scale,
                                     const pdnn_tensor *bias, pdnn_tensor *y);

/* y = x reduced over n_axes axes (ONNX ReduceSum, ReduceMean, ReduceMax,
 * ReduceMin): n_axes 0 reduces every axis. y is x's desc with those dims
 * 1 (keepdims) or any tensor holding x's other dims in x's memory order
 * (a PDNN_ND tensor of x's dims without them, for x in ND or NCHW). An empty reduction gives sum
 * 0, mean NaN, max -inf, min +inf; max and min propagate NaN. CUDA:
 * cudnnReduceTensor. */
typedef enum pdnn_reduction {
    PDNN_REDUCTION_SUM = 0,
    PDNN_REDUCTION_MEAN = 1,
    PDNN_REDUCTION_MAX = 2,
    PDNN_REDUCTION_MIN = 3
} pdnn_reduction;
PDNN_API pdnn_status pdnn_reduce(const pdnn_tensor *x, const int *axes, int n_axes, pdnn_reduction op,
                                 pdnn_tensor *y);

/* ------------------------------------------------------------------ */
/* Training ops: activation gradient, loss, optimizers                  */
/* ------------------------------------------------------------------ */

/* dx = dy where y > 0, else 0 (NaN in y gives 0). y is relu's output (or
 * its input: the same positive set). All three float32 with the same dims
 * and layout (any layout). dx may be dy; dx may not overlap y. */
PDNN_API pdnn_status pdnn_relu_backward(const pdnn_tensor *y, const pdnn_tensor *dy, pdnn_tensor *dx);

/* y = alpha * x elementwise (TensorFlow's x * constant, "Mul"): x and y of
 * one descriptor (float32, any layout) on one device; y may be x (in
 * place). alpha must be finite. Towers average their gradients with it
 * (AddN, then 1/N). Host, OpenCL and CUDA (cudnnScaleTensor in place,
 * else cudnnAddTensor). */
PDNN_API pdnn_status pdnn_scale(const pdnn_tensor *x, float alpha, pdnn_tensor *y);

/* Fused softmax cross-entropy with integer labels (TensorFlow's
 * sparse_softmax_cross_entropy_with_logits followed by reduce_mean).
 * logits: float32 matrix {N, K, 1, 1} (NCHW or NHWC); labels: PDNN_INT32,
 * layout X, {N, 1, 1, 1}, each in [0, K); loss: float32 layout X
 * {1, 1, 1, 1}: the batch mean of -log softmax(logits)[label], computed
 * stably for large logits; dlogits (may be NULL): logits' desc,
 * (softmax(logits) - onehot(label)) / N. A label outside [0, K) fails
 * with PDNN_ERR_INVALID_ARGUMENT naming the row and the value (device
 * kernels flag it and the call reads the flag). Outputs may not overlap
 * inputs or each other. */
PDNN_API pdnn_status pdnn_softmax_cross_entropy(const pdnn_tensor *logits, const pdnn_tensor *labels,
                                                pdnn_tensor *loss, pdnn_tensor *dlogits);

/* Optimizers, applied in place on the variable's device. */
typedef enum pdnn_optimizer_kind {
    PDNN_OPTIMIZER_SGD = 0,
    PDNN_OPTIMIZER_ADAM = 1,
    PDNN_OPTIMIZER_ADAMW = 2 /* Adam with decoupled weight decay (torch.optim.AdamW) */
} pdnn_optimizer_kind;

typedef struct pdnn_optimizer_params {
    pdnn_optimizer_kind kind;
    float learning_rate;
    float momentum;              /* SGD */
    float weight_decay;          /* SGD, Adam: g' = g + weight_decay * w (L2, PyTorch's weight_decay);
                                    AdamW: w *= 1 - lr * weight_decay before the step (decoupled) */
    float beta1, beta2, epsilon; /* Adam, AdamW */
    int nesterov;                /* SGD: 1 for Nesterov momentum (needs momentum > 0) */
} pdnn_optimizer_params;

/* SGD: lr 0.01, momentum 0, weight decay 0, nesterov 0. Adam: lr 0.001,
 * beta1 0.9, beta2 0.999, epsilon 1e-8, weight decay 0. AdamW: Adam's with
 * weight decay 0.01 (PyTorch's default). Unknown kinds get SGD's. */
PDNN_API void pdnn_optimizer_params_init(pdnn_optimizer_params *p, pdnn_optimizer_kind kind);

/* One step on w with gradient g (PyTorch's torch.optim forms):
 *   SGD:  v = momentum * v + g'; w -= lr * v     (slot1 = v; slot1 may be
 *         NULL iff momentum == 0, and is then not read or written);
 *         Nesterov: w -= lr * (g' + momentum * v)
 *   Adam: m = b1 m + (1 - b1) g'; v = b2 v + (1 - b2) g'^2;
 *         w -= lr * (m / (1 - b1^step)) / (sqrt(v / (1 - b2^step)) + eps)
 *         (slot1 = m, slot2 = v)
 *   AdamW: w *= 1 - lr * weight_decay, then Adam's step with g' = g
 * step >= 1 counts updates (1 for the first). All tensors float32, the
 * same dims and layout, on one device, none overlapping another; slots
 * start at zero. Parameters: lr, momentum and weight decay finite and
 * >= 0, beta1 and beta2 in [0, 1), epsilon > 0. */
PDNN_API pdnn_status pdnn_optimizer_update(const pdnn_optimizer_params *p, int64_t step, pdnn_tensor *w,
                                           const pdnn_tensor *g, pdnn_tensor *slot1, pdnn_tensor *slot2);

/* ------------------------------------------------------------------ */
/* Graphs and sessions (TensorFlow 1.x style)                           */
/* ------------------------------------------------------------------ */

/* A graph of nodes, each an op with a unique name and an optional device
 * specification; a session places it on a context's devices and runs it.
 * Nodes are numbered from 0 in the order they are added and may only take
 * earlier nodes as inputs, so the order is a valid execution order.
 *
 * name: NULL or "" generates TensorFlow's names ("MatMul", "MatMul_1");
 * a name already in the graph is an error.
 * device: NULL or "" lets the session choose; else a full or partial
 * device name: "/device:GPU:1", "/gpu:0", "/cpu:0", "GPU:1",
 * "/device:GPU:*", "/job:localhost/replica:0/task:0/device:CPU:0".
 * Every op works on every layout, so placement never fails for layout
 * reasons (TensorFlow's "Default MaxPoolingOp only supports NHWC on device
 * type CPU" cannot happen). Output shapes are inferred when a node is
 * added; a mismatch fails then, naming the node. */
typedef struct pdnn_graph pdnn_graph;
typedef struct pdnn_session pdnn_session;
typedef int pdnn_node;

PDNN_API pdnn_status pdnn_graph_create(pdnn_graph **out);
PDNN_API void pdnn_graph_destroy(pdnn_graph *g);
PDNN_API int pdnn_graph_node_count(const pdnn_graph *g);
/* The node's name, op type ("Conv2D", "MatMul", ...), requested device
 * ("" if none) and output descriptor. */
PDNN_API const char *pdnn_graph_node_name(const pdnn_graph *g, pdnn_node n);
PDNN_API const char *pdnn_graph_node_op(const pdnn_graph *g, pdnn_node n);
PDNN_API pdnn_status pdnn_graph_node_desc(const pdnn_graph *g, pdnn_node n, pdnn_tensor_desc *out);
/* PDNN_ERR_NOT_FOUND if no node has that name. */
PDNN_API pdnn_status pdnn_graph_find(const pdnn_graph *g, const char *name, pdnn_node *out);

/* A value fed at run time. */
PDNN_API pdnn_status pdnn_graph_placeholder(pdnn_graph *g, const char *name, const char *device,
                                            const pdnn_tensor_desc *desc, pdnn_node *out);
/* A constant; data (desc's layout order, float32) is copied. */
PDNN_API pdnn_status pdnn_graph_constant(pdnn_graph *g, const char *name, const char *device,
                                         const pdnn_tensor_desc *desc, const float *data, pdnn_node *out);
/* bias may be -1 (none). The output has x's layout. */
PDNN_API pdnn_status pdnn_graph_conv2d(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                       pdnn_node w, pdnn_node bias, const pdnn_conv2d_params *p, pdnn_node *out);
/* pdnn_conv2d_forward_residual as a node (op type "Conv2D"): z is a node
 * with the output's dims and layout, added before the fused relu; bias may
 * be -1. pdnn_graph_gradients passes dy (masked by the relu) to z. */
PDNN_API pdnn_status pdnn_graph_conv2d_residual(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                                pdnn_node w, pdnn_node bias, pdnn_node z,
                                                const pdnn_conv2d_params *p, pdnn_node *out);
/* Op type "MaxPool" or "AvgPool". */
PDNN_API pdnn_status pdnn_graph_pool2d(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                       const pdnn_pool2d_params *p, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_matmul(pdnn_graph *g, const char *name, const char *device, pdnn_node a,
                                       pdnn_node b, int trans_a, int trans_b, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_add(pdnn_graph *g, const char *name, const char *device, pdnn_node a,
                                    pdnn_node b, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_add_n(pdnn_graph *g, const char *name, const char *device,
                                      const pdnn_node *inputs, int n, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_bias_add(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                         pdnn_node bias, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_relu(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                     pdnn_node *out);
/* pdnn_activation_forward as a node: op type "Clip", "LeakyRelu",
 * "Sigmoid", "HardSigmoid", "HardSwish" or "Silu" by mode; every mode is
 * differentiable (Clip: dy where alpha < y < beta; the others dy f'(x),
 * built of elementwise nodes; Abs's derivative at 0 is 0). */
PDNN_API pdnn_status pdnn_graph_activation(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                           pdnn_activation mode, float alpha, float beta, pdnn_node *out);

/* pdnn_binary as a node: op type "AddV2", "Mul", "Sub" or "RealDiv"
 * (either input broadcast where its dims are 1; the output takes the
 * larger dim of each axis). Differentiable with respect to both
 * inputs for every op (a broadcast input's gradient is summed over the
 * dims it repeats; Pow's with respect to b takes log(a)). */
PDNN_API pdnn_status pdnn_graph_binary(pdnn_graph *g, const char *name, const char *device, pdnn_node a,
                                       pdnn_node b, pdnn_binary_op op, pdnn_node *out);

/* pdnn_batch_norm_forward in inference mode as a node
 * ("FusedBatchNormV3"): params = {gamma, beta, running mean, running
 * variance}, each a float32 layout-X {C} node; x an NCHW or NHWC
 * activation; epsilon > 0. Not differentiable (pdnn_graph_gradients
 * refuses a path through it). */
PDNN_API pdnn_status pdnn_graph_batch_norm(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                           const pdnn_node params[4], float epsilon, pdnn_node *out);

/* pdnn_pad as a node ("Pad"); not differentiable yet. */
PDNN_API pdnn_status pdnn_graph_pad(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                    const int64_t pads[4], pdnn_pad_mode mode, float value, pdnn_node *out);

/* The N-d math ops as nodes (docs/graphs.md). The output keeps x's
 * layout: pdnn_graph_transpose's has x's dims permuted ("TransposeNd";
 * its gradient is the inverse permutation); pdnn_graph_softmax_axis
 * ("SoftmaxNd", "LogSoftmax") and pdnn_graph_layer_norm
 * ("LayerNormalization"; bias -1: none) x's desc; pdnn_graph_reduce
 * ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin") x's dims with
 * the reduced ones 1 (keepdims) or dropped (ND drops them from the
 * rank; NCHW moves the kept ones forward, 1s after). All are
 * differentiable: the transpose (the inverse permutation), the softmaxes,
 * layer norm (x, scale and bias: "LayerNormalizationGrad" nodes, a
 * registry op of their own) and the reductions (Max and Min give dy to
 * the elements equal to the result, shared among ties; built of binary,
 * reduce and activation nodes). */
PDNN_API pdnn_status pdnn_graph_transpose(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                          const int *perm, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_softmax_axis(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                             int axis, int log, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_layer_norm(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                           int axis, float epsilon, pdnn_node scale, pdnn_node bias, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_reduce(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                       const int *axes, int n_axes, pdnn_reduction op, int keepdims, pdnn_node *out);

/* The data-movement ops as nodes ("Slice", "Gather", "Expand", "Where",
 * "PadND", "Resize"; differentiable, but a strided slice, a reflect or
 * edge pad and a resize of an NHWC tensor: a slice's gradient pads, a
 * constant pad's slices, a gather's scatter-adds, an expand's sums, a
 * where's masks (the mask gets none), a resize, a strided slice and a
 * reflect or edge pad multiply by each axis's selection or interpolation
 * matrix transposed): the arguments of pdnn_slice,
 * pdnn_gather (at most 64 indices; y of x's rank), pdnn_expand (the
 * shape: rank dims), pdnn_where, pdnn_pad_nd and pdnn_resize (y's dims, of
 * x's rank). The result keeps x's image layout where it has rank 4, else
 * is ND. */
PDNN_API pdnn_status pdnn_graph_slice(pdnn_graph *g, const char *name, const char *device, pdnn_node x, int n,
                                      const int64_t *starts, const int64_t *ends, const int64_t *axes,
                                      const int64_t *steps, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_gather(pdnn_graph *g, const char *name, const char *device, pdnn_node x, int axis,
                                       const int64_t *indices, int n, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_expand(pdnn_graph *g, const char *name, const char *device, pdnn_node x, int rank,
                                       const int64_t *dims, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_where(pdnn_graph *g, const char *name, const char *device, pdnn_node mask,
                                      pdnn_node a, pdnn_node b, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_pad_nd(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                       const int64_t *pads, pdnn_pad_mode mode, float value, pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_resize(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                       pdnn_resize_mode mode, pdnn_resize_coord coord, pdnn_resize_nearest nearest,
                                       const float *scales, const int64_t *dims, pdnn_node *out);

/* pdnn_transform as a node ("Transpose"): x in layout (its gradient is
 * the transform back). */
PDNN_API pdnn_status pdnn_graph_transform(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                          pdnn_layout layout, pdnn_node *out);

/* pdnn_concat as a node ("ConcatV2"): inputs[0..n-1] along axis. In a
 * session, where the output in memory order is its inputs one after
 * another (NCHW along channels at batch 1, any layout along axis 0), each
 * input computed on the concat's device for it alone is written in place
 * and the concat copies nothing; a run that fetches such an input copies. */
PDNN_API pdnn_status pdnn_graph_concat(pdnn_graph *g, const char *name, const char *device, const pdnn_node *inputs,
                                       int n, int axis, pdnn_node *out);

/* Data-parallel training: the mean of x over the ranks of the session's
 * communicator (op type "AllReduce", Horovod's averaging allreduce), a
 * float32 tensor of x's shape on this node's device. Only a session with
 * cfg.distributed = PDNN_DISTRIBUTED_MPI runs it (others refuse it at
 * creation). Every rank must build the same AllReduce nodes, in the same
 * order and with the same shapes: the session packs them into buckets
 * (cfg.allreduce_bucket_bytes) in the order their inputs are computed and
 * starts each bucket's MPI_Iallreduce as soon as its last input exists,
 * while the rest of the graph (the backward pass) still runs. A run that
 * needs one AllReduce runs its whole bucket. */
PDNN_API pdnn_status pdnn_graph_allreduce(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                          pdnn_node *out);

/* x * alpha (pdnn_scale), op type "Mul"; alpha finite, x float32. */
PDNN_API pdnn_status pdnn_graph_scale(pdnn_graph *g, const char *name, const char *device, pdnn_node x, float alpha,
                                      pdnn_node *out);
PDNN_API pdnn_status pdnn_graph_softmax(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                        pdnn_node *out);
/* dims: the new logical dims (NCHW), same element count; see pdnn_reshape.
 * In a session the result of reshaping a computed value (not a feed,
 * constant or variable) shares that value's bytes: no copy runs. */
PDNN_API pdnn_status pdnn_graph_reshape(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                        const int64_t dims[4], pdnn_node *out);
/* pdnn_graph_reshape to an ND tensor of rank 0..PDNN_MAX_RANK with dims
 * dims[0..rank) (dims may be NULL for rank 0), same element count; the
 * same op ("Reshape"), the same sharing of bytes in a session. */
PDNN_API pdnn_status pdnn_graph_reshape_nd(pdnn_graph *g, const char *name, const char *device, pdnn_node x, int rank,
                                           const int64_t *dims, pdnn_node *out);
/* {N, C*H*W, 1, 1}: a matrix with one row per image. Op type "Reshape". */
PDNN_API pdnn_status pdnn_graph_flatten(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                        pdnn_node *out);

/* ---- ONNX import ---- */

/* At most this many graph inputs and outputs in an imported model. */
#define PDNN_ONNX_MAX_IO 16

typedef struct pdnn_onnx_options {
    /* > 0: the first dim of every graph input (the batch), overriding the
     * file's; 0: the file's (a symbolic batch dim becomes 1). A symbolic
     * batch can change later: pdnn_graph_set_batch. */
    int64_t batch;
    /* Directory that external-data tensors of a model given as a buffer
     * are read from; NULL: such a model is refused. A model given by path
     * reads them from its own directory. Either way a location must stay
     * inside that directory (no absolute path, no "..", no symbolic link
     * leading out). */
    const char *base_dir;
    /* Requested device of every node (a pdnn_graph_* device string); NULL
     * or "": the session places them. */
    const char *device;
    /* 1: no fusion at import (for debugging): a residual Add, a Relu or a
     * Clip (ReLU6) that alone reads a Conv's output stays a node of its
     * own instead of the convolution's fused epilogue (pdnn_conv2d_params
     * z, relu, relu_cap). BatchNormalization is folded into its Conv
     * either way. */
    int no_fusion;
    /* PDNN_NCHW (0, the file's) or PDNN_NHWC: the whole network runs in
     * NHWC (weights in OHWI), with a Transpose node after each rank-4
     * input, before a Flatten/Reshape of an image larger than 1x1 (so
     * elements keep ONNX's order) and before each rank-4 output, which
     * is then the node "<output name>/nchw". */
    pdnn_layout layout;
    /* 1: a trainable graph (docs/training.md; under layout NHWC a conv's
     * filter variable is OHWI, a depthwise one's HWIO, and the export
     * writes them back as OIHW). The float
     * initializers that Conv, Gemm (alpha and beta 1) and MatMul read as
     * weights and bias, and those of 2 or more elements that other ops
     * read (an Add's, LayerNormalization's, a Transpose's or Expand's,
     * which then stays a node) become variables named after the initializer
     * (pdnn_session_export_onnx writes them back); BatchNormalization is
     * not folded but a node of its own in training mode (batch statistics,
     * its scale and bias variables, its running mean and variance
     * variables updated with momentum 1 - the node's momentum attribute,
     * the variance unbiased, as PyTorch does), while the variable
     * "polydnn/training" (float32 X {1}, on /cpu:0) is 1, and in inference
     * mode with the running statistics while it is 0; Dropout is active
     * while it is 1, its mask drawn from (seed, global_step, element).
     * The graph also holds "global_step" (the one pdnn_graph_apply_gradients
     * uses). pdnn_graph_add_training then adds a loss and an optimizer. An
     * initializer that two nodes read (tied weights) is refused. */
    int trainable;
    uint64_t seed; /* Dropout masks of a trainable import */
    /* With trainable, PDNN_DISTRIBUTED_MPI: pdnn_graph_add_training
     * averages each gradient over the MPI ranks before the optimizer (an
     * AllReduce node per variable, pdnn_graph_allreduce: Horovod's
     * DistributedOptimizer), for a session created with cfg.distributed =
     * PDNN_DISTRIBUTED_MPI (docs/distributed.md). Batch norm's statistics
     * stay each rank's own (no SyncBN). */
    int distributed; /* pdnn_distributed */
    /* PDNN_FLOAT32 (0): as the file says; PDNN_FLOAT16 or PDNN_BFLOAT16:
     * the graph computes under that mixed precision policy
     * (pdnn_graph_set_precision: initializers stay float32 constants or
     * variables, each op casts what it reads) with its inputs and outputs
     * float32, as ONNX Runtime's float16 converter's keep_io_types: each
     * output that the policy made reduced is the node "<output>/float32",
     * a Cast. */
    pdnn_dtype precision;
} pdnn_onnx_options;

/* batch 0, base_dir NULL, device NULL, no_fusion 0 (fusion on), layout NCHW,
 * trainable 0, seed 0, distributed NONE, precision float32. */
PDNN_API void pdnn_onnx_options_init(pdnn_onnx_options *o);

/* What an import made: the placeholders fed for the model's inputs and
 * the nodes computing its outputs (graph order, at most PDNN_ONNX_MAX_IO
 * each), and their ONNX ranks (2: a matrix {rows, cols, 1, 1}; 4: NCHW;
 * the node's descriptor holds the dims). Nodes carry the names of the
 * ONNX values they compute. */
typedef struct pdnn_onnx_io {
    int n_inputs;
    pdnn_node inputs[PDNN_ONNX_MAX_IO];
    int input_rank[PDNN_ONNX_MAX_IO];
    int n_outputs;
    pdnn_node outputs[PDNN_ONNX_MAX_IO];
    int output_rank[PDNN_ONNX_MAX_IO];
} pdnn_onnx_io;

/* Reads an ONNX model (float32, NCHW as in the file) into a new graph:
 * graph inputs become placeholders, initializers constants, nodes ops.
 * Exactly one of path and (data, size) is given. Operators: Conv (group,
 * dilations, strides, pads, auto_pad, bias), BatchNormalization (inference;
 * folded into the Conv whose only reader it is, else a node of its own),
 * Relu (fused into the Conv whose only reader it is, unless no_fusion),
 * Clip, LeakyRelu, Sigmoid, HardSigmoid, HardSwish (a Mul of x by
 * Sigmoid(x) or by HardSigmoid(x; 1/6, 1/2) becomes one SiLU or hard
 * swish node, unless no_fusion), Add, Mul, Sub, Div (NumPy broadcasting
 * within rank 4, either side), Concat, MaxPool, AveragePool (pads,
 * ceil_mode, count_include_pad), GlobalAveragePool, ReduceMean,
 * ReduceMax, ReduceSum (over H and W), Pad (constant, reflect, edge, of
 * any axis; zeros of H and W that an AveragePool alone reads become its
 * padding), Gemm, MatMul, Flatten, Reshape (constant shape),
 * Softmax, Dropout and Identity (removed), Constant; Transpose, Softmax
 * and LogSoftmax on any axis, LayerNormalization (Y only), Erf (torch's
 * GELU pattern fused into one node), Tanh, Sqrt, Exp, Log, Neg,
 * Reciprocal, Abs, Pow, ReduceMean/Sum/Max/Min over any axes.
 * ConvTranspose (as
 * convolution backward data), Slice, Split, Gather (constant indices),
 * Expand, Where (constant condition), Resize, Upsample, Squeeze,
 * Unsqueeze; Shape, Cast, ConstantOfShape, Range, Transpose and the
 * arithmetic of constants folded at import (the batch of the import then
 * holds in them). Opsets' attributes that became inputs are read either
 * way. A model holding other
 * operators is refused with PDNN_ERR_UNSUPPORTED listing every one with
 * its count ("unsupported operators: Transpose x12, Erf x4"), the first
 * such node and the supported ops; a malformed file is PDNN_ERR_CORRUPT; a
 * build without protobuf-c gives PDNN_ERR_UNSUPPORTED. io may be NULL. */
PDNN_API pdnn_status pdnn_graph_import_onnx(const char *path, const void *data, size_t size,
                                            const pdnn_onnx_options *opts, pdnn_graph **out,
                                            pdnn_onnx_io *io);

/* Dynamic batch: a model whose graph inputs have a symbolic first dim,
 * imported without trainable, can run at another batch without importing
 * it again. The import also imports the model at two other batches (the
 * first two of 2, 3, 4) from the one parsed file, fits every dim and
 * data-movement argument (Reshape targets, Slice ends, Expand shapes, the
 * folded shape arithmetic) as a * batch + c, and checks the fit at the
 * import's batch (the file is read and parsed once: measured 1.2x to
 * 1.9x the time of a fixed-batch import, docs/onnx.md).
 * pdnn_graph_set_batch then
 * rewrites them for batch: every input's first dim becomes batch and the
 * nodes follow. Sessions made before keep their batch; create a new one
 * to run at the new batch. PDNN_ERR_UNSUPPORTED naming the node when the
 * model's shape arithmetic is not affine in the batch (or a constant's
 * values depend on it), or for a graph without a symbolic batch, or one
 * that nodes were added to after the import: import it again with
 * options.batch then. PDNN_ERR_INVALID_ARGUMENT for batch < 1 or a
 * batch at which a node's shape is invalid. */
PDNN_API pdnn_status pdnn_graph_set_batch(pdnn_graph *g, int64_t batch);

/* Training an imported model (pdnn_onnx_options.trainable = 1). */
typedef enum pdnn_loss_kind {
    PDNN_LOSS_CROSS_ENTROPY = 0, /* softmax cross-entropy of the output (logits {N, K}) on int32 labels */
    PDNN_LOSS_MSE = 1            /* mean of (output - target)^2 over every element, PyTorch's MSELoss */
} pdnn_loss_kind;

/* What pdnn_graph_add_training added. */
typedef struct pdnn_onnx_training {
    pdnn_node targets;       /* placeholder "labels": int32 X {N, 1, 1, 1} (cross-entropy) or the output's
                                desc (MSE) */
    pdnn_node loss;          /* float32, one element: the batch mean */
    pdnn_node train_op;      /* fetch it to run one optimizer step */
    pdnn_node training;      /* the 0/1 variable "polydnn/training" */
    pdnn_node learning_rate; /* float32 X {1} variable "learning_rate" read at every step (assign it for a
                                schedule) */
    int n_params;            /* trainable variables (weights, biases, BatchNormalization's scale and bias) */
} pdnn_onnx_training;

/* Adds to a trainable import's graph g (io from the import) the loss of
 * the output io->outputs[0] against a "labels" placeholder, its gradients
 * with respect to every trainable variable (pdnn_graph_gradients) and the
 * optimizer p (pdnn_graph_apply_gradients, reading the variable
 * "learning_rate", which starts at p->learning_rate). Cross-entropy needs a
 * rank-2 output. */
PDNN_API pdnn_status pdnn_graph_add_training(pdnn_graph *g, const pdnn_onnx_io *io, pdnn_loss_kind loss,
                                             const pdnn_optimizer_params *p, pdnn_onnx_training *out);

/* Towers: one copy of the network per device, TensorFlow's multi-GPU
 * pattern. n devices (1 to PDNN_MAX_TOWERS); param_device (NULL:
 * "/cpu:0") holds the trainable variables, the averaged gradients and the
 * update. */
#define PDNN_MAX_TOWERS 8
typedef struct pdnn_training_towers {
    int n;
    const char *devices[PDNN_MAX_TOWERS];
    const char *param_device;
} pdnn_training_towers;

/* pdnn_graph_add_training over towers. The import's nodes that depend on
 * its inputs are tower 0, moved to devices[0]; tower t > 0 is a copy of
 * them on devices[t] (nodes "tower_T/<name>", its inputs the placeholders
 * "tower_T/<input>"), reading the same variables. Each tower has its own
 * labels ("labels", "tower_T/labels") and loss ("loss", "tower_T/loss", its
 * batch mean); each variable's gradient is the towers' mean (AddN then
 * Mul by 1/n on param_device, then the mean over the ranks with
 * pdnn_onnx_options.distributed), and one optimizer step applies it. With
 * equal tower batches that is the gradient of the whole batch's mean loss.
 * BatchNormalization normalizes each tower by its own batch; tower 0
 * alone updates the running statistics, which live on devices[0] (the
 * copies run with momentum 0). Dropout's copy in tower t draws its mask
 * from seed + t. io and out are arrays of n: io[0] is the import's
 * (read), io[1..n) receive the copies' inputs and outputs, out[t] tower
 * t's labels and loss, and every out[t] the same train_op, training,
 * learning_rate and n_params. Evaluation runs tower 0 (io[0]). On failure
 * g is left as it was. */
PDNN_API pdnn_status pdnn_graph_add_training_towers(pdnn_graph *g, pdnn_onnx_io *io,
                                                    const pdnn_training_towers *towers, pdnn_loss_kind loss,
                                                    const pdnn_optimizer_params *p, pdnn_onnx_training *out);

/* Writes the ONNX model read from model_path to out_path (through a
 * temporary file and a rename) with every initializer that names a
 * variable of the session (a trainable import's weights and BatchNorm
 * running statistics) replaced by the variable's value: the trained
 * model, which polydnn and ONNX Runtime run as they run the original.
 * Each such initializer is written as float32 raw data; a variable whose
 * element count differs from its initializer's is refused. n_written
 * (may be NULL) receives how many initializers were replaced. */
PDNN_API pdnn_status pdnn_session_export_onnx(pdnn_session *s, const char *model_path, const char *out_path,
                                              int *n_written);

/* Variables: graph nodes whose value lives in the session, on the device
 * the node is placed on, and persists across pdnn_session_run calls (and
 * changes only by pdnn_session_variable_assign or an optimizer). desc is
 * float32, any layout. The initial value is drawn when the node is added:
 *   PDNN_INIT_ZEROS           zeros (data and seed ignored)
 *   PDNN_INIT_DATA            a copy of data (desc's memory order)
 *   PDNN_INIT_HE_NORMAL       normal, mean 0, stddev sqrt(2 / fan_in)
 *   PDNN_INIT_GLOROT_UNIFORM  uniform in +-sqrt(6 / (fan_in + fan_out))
 * fan_in/fan_out: filters {O,I,H,W}: I*H*W / O*H*W; matrices {R,C,1,1}
 * (NCHW or NHWC, a matmul's b): R / C; other activations {N,C,H,W}:
 * C*H*W / N*H*W; vectors X {L}: L / L. The draws come from a counter-based
 * generator that gives the same numbers on every platform: element e (in
 * desc's memory order) uses u_k = (splitmix64(seed + k * 0x9E3779B97F4A7C15)
 * >> 11) * 2^-53 for k = 2e and 2e + 1; uniform: lo + (hi - lo) * u_2e;
 * normal: Box-Muller, sqrt(-2 ln(1 - u_2e)) * cos(2 pi u_2e+1), in double,
 * rounded to float (plain normal, not TensorFlow's truncated one). To start
 * from a .npy file, read it (numpy, or the CLI's reader) and pass PDNN_INIT_DATA. */
typedef enum pdnn_initializer {
    PDNN_INIT_ZEROS = 0,
    PDNN_INIT_DATA = 1,
    PDNN_INIT_HE_NORMAL = 2,
    PDNN_INIT_GLOROT_UNIFORM = 3
} pdnn_initializer;
/* Op type "VariableV2". */
PDNN_API pdnn_status pdnn_graph_variable(pdnn_graph *g, const char *name, const char *device,
                                         const pdnn_tensor_desc *desc, pdnn_initializer init, uint64_t seed,
                                         const float *data, pdnn_node *out);

/* Softmax cross-entropy loss (pdnn_softmax_cross_entropy): logits a matrix
 * {N,K,1,1}, labels an int32 layout-X {N,1,1,1} node (a placeholder);
 * the output is the float32 layout-X {1,1,1,1} batch-mean loss. Op type
 * "SparseSoftmaxCrossEntropyWithLogits". */
PDNN_API pdnn_status pdnn_graph_softmax_cross_entropy(pdnn_graph *g, const char *name, const char *device,
                                                      pdnn_node logits, pdnn_node labels, pdnn_node *out);

/* tf.gradients: adds the nodes computing d(sum of loss's elements)/d xs[i]
 * (a loss that is not a scalar is seeded with ones, as TensorFlow does)
 * and stores them in grads[i]. Gradients reaching a node by several paths
 * are summed by an AddN. Nodes are named "gradients/<op name>_grad/<Op>"
 * (a "_1", "_2" suffix when gradients is called again). Each gradient node
 * without a device of its own is placed on the device its forward op was
 * placed on (TensorFlow's colocate_gradients_with_ops); the placement log
 * lists them. grads[i] is -1 (TensorFlow's None) when loss does not
 * depend on xs[i]. Differentiable ops: Mul (pdnn_graph_scale), Conv2D (its fused relu too, capped
 * or not), MaxPool, AvgPool, MatMul, Add, AddN, BiasAdd, Relu, Clip, Reshape, Transpose, the
 * binary ops but division, a trainable import's batch norm and Dropout (docs/training.md), and
 * SparseSoftmaxCrossEntropyWithLogits as the loss itself. A path through
 * Softmax, or a cross-entropy that is not the loss, fails naming the node. */
PDNN_API pdnn_status pdnn_graph_gradients(pdnn_graph *g, pdnn_node loss, const pdnn_node *xs, int n,
                                          pdnn_node *grads);

/* An optimizer step over vars (variables) with their gradients grads
 * (from pdnn_graph_gradients; same descs). Adds, TensorFlow-style:
 *  - slot variables, zero-initialised and colocated with their variable:
 *    "<var>/Momentum" (SGD with momentum != 0), or "<var>/Adam" (m) and
 *    "<var>/Adam_1" (v);
 *  - "global_step", a float32 X {1} variable on /cpu:0 counting the steps
 *    (created by the first call, shared by later ones; exact to 2^24);
 *  - one "<name>/update_<var>" node per variable (op ApplyMomentum or
 *    ApplyAdam), placed with its variable, that runs pdnn_optimizer_update
 *    in place with step = global_step + 1;
 *  - *train_op (op "NoOp", named name or "Momentum"/"Adam"), which runs
 *    every update and then adds 1 to global_step.
 * Fetching train_op in pdnn_session_run runs the step; its fetch value is
 * NULL (no value). A checkpoint holds every "VariableV2" node: the model's
 * variables, the slots and global_step, each under its stable name. */
PDNN_API pdnn_status pdnn_graph_apply_gradients(pdnn_graph *g, const char *name, const pdnn_optimizer_params *p,
                                                const pdnn_node *vars, const pdnn_node *grads, int n,
                                                pdnn_node *train_op);

/* Mixed precision in the graph (docs/precision.md).
 *
 * pdnn_graph_cast: x converted to dtype (float32, float16, bfloat16; round
 * to nearest even, as pdnn_cast). Its gradient casts back. Node dtypes
 * are inferred: an op's value takes its data inputs' dtype, and inputs of
 * two float dtypes in one node are refused naming both. Where the node's
 * device has no path for an op in a reduced dtype, the session runs that
 * op in float32 on widened copies and rounds its output once, logging it
 * as it logs soft placements. */
PDNN_API pdnn_status pdnn_graph_cast(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                     pdnn_dtype dtype, pdnn_node *out);

/* Keras's mixed precision policy ("mixed_float16": compute float16,
 * "mixed_bfloat16": compute bfloat16; float32: no policy, the default)
 * for the nodes built after it: variables stay float32 (the master
 * weights); convolution, pooling, matmul, the elementwise ops, bias and
 * most activations take their float inputs cast to the compute dtype,
 * one Cast node per value ("<value>/Cast_float16", placed with it, so a
 * variable is cast once per step); softmax, the cross-entropy, batch
 * norm, the N-d reductions, Exp, Log, Pow and the all-reduce take theirs
 * cast to float32; reshapes and moves keep their input's dtype. The
 * nodes that pdnn_graph_gradients and pdnn_graph_apply_gradients add are
 * not recast: a gradient has its forward value's dtype, and a variable's
 * gradient is float32 through its Cast's gradient. */
PDNN_API pdnn_status pdnn_graph_set_precision(pdnn_graph *g, pdnn_dtype compute);

/* Dynamic loss scaling, as TensorFlow's LossScaleOptimizer (for float16:
 * gradients too small for it are scaled up into its range). Adds two
 * float32 X {1} variables on /cpu:0, "loss_scale" (initial_scale, at
 * least 1; TensorFlow's default 32768) and "loss_scale/good_steps"
 * (checkpoints hold both). pdnn_graph_gradients called later multiplies
 * the loss's gradient by the scale; pdnn_graph_apply_gradients called
 * later adds "<name>/LossScaleUpdate", which checks every gradient: all
 * finite, the updates take them divided by the scale, and after
 * growth_interval (TensorFlow: 2000) such steps in a row the scale
 * doubles; an inf or NaN anywhere skips every update of the step
 * (global_step still counts it, as TensorFlow's does) and halves the
 * scale, not below 1. */
PDNN_API pdnn_status pdnn_graph_set_loss_scale(pdnn_graph *g, float initial_scale, int growth_interval);

typedef struct pdnn_session_config {
    /* Run on this context's devices (the session holds a reference: the
     * context may be destroyed first); NULL: the session creates its own
     * from options, which lives as long as the session and its tensors. */
    pdnn_context *context;
    pdnn_context_options options;
    /* One line per node at session creation, TensorFlow's format:
     * "MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0",
     * after a "Device mapping:" block. Also on when the context's
     * log_device_placement (or POLYDNN_LOG_DEVICE_PLACEMENT=1) is. */
    int log_device_placement;
    /* A node whose explicit device does not exist, or has no kernel for
     * its op, goes to a supported device (same type first, then any)
     * instead of failing; the log says so. */
    int allow_soft_placement;
    /* Where log lines go (one call per line, no newline); NULL: stderr. */
    void (*log)(void *user, const char *line);
    void *log_user;
    /* Time every node of every run: the node's device is synchronized after
     * it (so runs are slower, and a node's time is its own, not queued
     * work of earlier nodes'). Read with pdnn_session_node_profile. */
    int profile;
    /* Data-parallel training over MPI (docs/distributed.md):
     * PDNN_DISTRIBUTED_MPI runs the graph's AllReduce nodes across the
     * ranks of mpi_comm. MPI must be initialized by the caller with at
     * least MPI_THREAD_SERIALIZED (a session thread starts the
     * all-reduces; call MPI yourself only between runs). Creating the
     * session is collective: every rank creates its sessions in the same
     * order. Placement logs name devices /job:worker/replica:0/task:RANK.
     * PDNN_ERR_UNSUPPORTED when polydnn was built without MPI. */
    int distributed;  /* pdnn_distributed */
    /* A pointer to the MPI_Comm to use (the session duplicates it); NULL:
     * MPI_COMM_WORLD. */
    void *mpi_comm;
    /* Gradient bucket size in bytes; 0: 4 MiB. A tensor larger than a
     * bucket is a bucket of its own. */
    int64_t allreduce_bucket_bytes;
    /* 1 (default): start each bucket as soon as its inputs exist; 0:
     * start them all when the first AllReduce node runs (for measuring
     * what the overlap gains). */
    int allreduce_overlap;
    /* Seconds a collective may wait for the other ranks before the run
     * fails naming it (a rank that stopped or hangs); 0: 120, or
     * POLYDNN_COLLECTIVE_TIMEOUT. */
    double collective_timeout;
} pdnn_session_config;

typedef enum pdnn_distributed { PDNN_DISTRIBUTED_NONE = 0, PDNN_DISTRIBUTED_MPI = 1 } pdnn_distributed;

/* Defaults: own context with default options, no logging, no soft
 * placement, log to stderr. */
PDNN_API void pdnn_session_config_init(pdnn_session_config *cfg);

/* Places every node (rules in docs/devices.md), uploads the
 * constants and logs the placement. The graph is copied: it may be
 * changed or destroyed afterwards. Placement errors name the node, the
 * requested device and the devices that exist. */
PDNN_API pdnn_status pdnn_session_create(const pdnn_graph *g, const pdnn_session_config *cfg,
                                         pdnn_session **out);
PDNN_API void pdnn_session_destroy(pdnn_session *s);
PDNN_API pdnn_context *pdnn_session_context(pdnn_session *s);

/* The largest live set on dev: the most bytes of tensors the session held
 * there at once over every run so far (its constants and variables, each
 * run's fed, computed and copied values from creation until their last
 * consumer has run, concat inputs written in place counted once, in the
 * concat's output; exact sizes). It is what a perfect memory planner
 * would need; the allocator's peak (pdnn_device_get_memory_stats) exceeds it
 * by its rounding and fragmentation, the ops' workspaces and what else
 * holds memory on dev. `polydnn run --memory-stats` prints both. */
PDNN_API pdnn_status pdnn_session_memory_live_peak(const pdnn_session *s, const pdnn_device *dev, int64_t *bytes);
/* The device node n was placed on. */
PDNN_API pdnn_status pdnn_session_node_device(const pdnn_session *s, pdnn_node n, pdnn_device **out);
/* With cfg.profile: how many runs executed node n, their total seconds
 * (wall time to the end of the node's device work, transfers of its
 * inputs included) and the first run's seconds (which include building
 * kernels and tuning-cache lookups; first may be NULL). Nodes that hold a
 * value (placeholders, constants, variables) count 0.
 * PDNN_ERR_INVALID_ARGUMENT if profiling is off. */
PDNN_API pdnn_status pdnn_session_node_profile(const pdnn_session *s, pdnn_node n, int64_t *runs, double *seconds,
                                               double *first);

/* With cfg.profile: the work of node n's last run: algorithm, the
 * convolution algorithm that ran (pdnn_conv_algo_name's; "" for other ops
 * and for backward convolutions, whose choice is not reported), and flops,
 * its floating-point operations (2 per multiply-add; counted for Conv2D,
 * its backward data and filter, and MatMul; 0 for the rest and for nodes
 * that have not run). PDNN_ERR_INVALID_ARGUMENT if profiling is off. */
PDNN_API pdnn_status pdnn_session_node_work(const pdnn_session *s, pdnn_node n, const char **algorithm,
                                            double *flops);

/* Runs what the fetches need. feed_values[i] (any device; copied to the
 * placeholder's device if elsewhere) feeds placeholder feeds[i] and must
 * match its descriptor. fetch_values[i] receives a new tensor, owned by
 * the caller, on the device of fetches[i]. Intermediate tensors return to
 * their device's allocator as soon as their last consumer has run; values
 * cross devices by device-to-device copies (through the host only between
 * devices with no direct path, e.g. OpenCL devices in different contexts). */
PDNN_API pdnn_status pdnn_session_run(pdnn_session *s, const pdnn_node *feeds,
                                      pdnn_tensor *const *feed_values, int n_feeds,
                                      const pdnn_node *fetches, int n_fetches,
                                      pdnn_tensor **fetch_values);

/* Distributed sessions: this process's rank and the communicator's size
 * (0 and 1 for a session that is not distributed). */
PDNN_API pdnn_status pdnn_session_rank(const pdnn_session *s, int *rank, int *size);

/* Collective: every variable (weights, optimizer slots, global_step)
 * takes root's value, in one broadcast. Call it on every rank after
 * creating the session (initial values may differ by seed or device) and
 * after restoring a checkpoint. PDNN_ERR_INVALID_ARGUMENT for a session
 * that is not distributed or a root outside [0, size). */
PDNN_API pdnn_status pdnn_session_broadcast_variables(pdnn_session *s, int root);

/* Collective, between runs: values[0..n) combined over the ranks by op
 * (sum, min or max), in place on every rank, with the session's
 * collective timeout: a rank that stopped gives the others an error, not
 * a hang. For the numbers a program shares beside the gradients (a loss
 * to print, evaluation counts, checksums). A session that is not
 * distributed is one rank: values are left as they are. */
typedef enum pdnn_reduce_op { PDNN_REDUCE_SUM = 0, PDNN_REDUCE_MIN = 1, PDNN_REDUCE_MAX = 2 } pdnn_reduce_op;
PDNN_API pdnn_status pdnn_session_allreduce_values(pdnn_session *s, double *values, int n, pdnn_reduce_op op);

/* What the session's all-reduces cost so far: buckets all-reduced, their
 * bytes, the seconds from each bucket's start to its end (comm), and the
 * seconds runs waited for them (wait: the part the graph did not hide). */
typedef struct pdnn_allreduce_stats {
    int64_t buckets;
    int64_t bytes;
    double comm_seconds;
    double wait_seconds;
} pdnn_allreduce_stats;
PDNN_API pdnn_status pdnn_session_allreduce_stats(const pdnn_session *s, pdnn_allreduce_stats *out);

/* A variable's current value, as float32 in its desc's memory order:
 * bytes must be the variable's size. Reading copies it to dst; assigning
 * replaces it (on its device). Not a variable: PDNN_ERR_INVALID_ARGUMENT. */
PDNN_API pdnn_status pdnn_session_variable_read(pdnn_session *s, pdnn_node var, float *dst, size_t bytes);
PDNN_API pdnn_status pdnn_session_variable_assign(pdnn_session *s, pdnn_node var, const float *src, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* POLYDNN_H */
