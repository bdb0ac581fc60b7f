/* What the OpenCL backend's files share. Layering, top to bottom, with
 * calls only downwards:
 *
 *   opencl.c          device glue, the vtable and the algorithm tables
 *   cl_<algorithm>.c  one file per algorithm (conv: direct, tiled, im2col,
 *                     winograd, depthwise, gemm_1x1, implicit_gemm; pool:
 *                     cl_pool.c), the elementwise ops, the peak measurement
 *   cl_common.c       errors, launches, kernel sources, the kernel cache,
 *                     the tunable algorithms' shared plan and run
 *   cl_device_table.c the defaults and thresholds per device class
 *   cl_binary_cache.c the on-disk cache of compiled programs
 *
 * Every kernel comes from the kernel cache (pdnn__cl_kernel): one program
 * per (kernels_cl/ file, build options) and device, built on first use and
 * kept until the device closes. Kernels are shared, so setting arguments
 * and enqueueing happen under cl_dev.lock. */
#ifndef POLYDNN_CL_INTERNAL_H
#define POLYDNN_CL_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include "backend.h"
#include "backends/opencl/cl_device_table.h"
#include "backends/opencl/cl_hooks.h"

#include <CL/cl.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

/* A program of the kernel cache (cl_common.c). */
typedef struct pdnn__cl_program_entry pdnn__cl_program_entry;

typedef struct cl_dev {
    cl_device_id id;
    cl_context ctx;
    cl_command_queue queue;
    size_t max_wg;
    cl_ulong local_mem; /* CL_DEVICE_LOCAL_MEM_SIZE: bounds wg_gemm's tiles */
    cl_device_type type;
    cl_uint cu;        /* compute units: sizes the CPU kernels' work split */
    cl_uint vec_float; /* the preferred float vector width (16: AVX-512) */
    /* Its row of cl_device_table.c: the untuned configurations and the
     * thresholds the plans read (cls.t). */
    pdnn__cl_device_class cls;
    /* Guards the kernel cache and every kernel's arguments and launch. */
    pthread_mutex_t lock;
    pdnn__cl_program_entry *programs;
    /* "vendor|name|driver": the device in the on-disk program cache's key
     * (the tuning cache has its own, call->device_key). */
    char program_key[384];
    /* The compiler refused the device's CPU with another LLVM in the
     * process (pdnn__cl_foreign_llvm): the first build's error, which
     * every later build from source returns without running it again. */
    char *compiler_refused;
    /* wg_gemm's reduction tables, most recently used first (cl_wg_gemm.c). */
    struct pdnn__cl_wg_table *wg_tables;
} cl_dev;

/* Whether another LLVM's symbols (TensorFlow's) were global in the process
 * when the OpenCL ICDs were first loaded (opencl.c). */
int pdnn__cl_foreign_llvm(void);

static inline int pdnn__cl_is_cpu(const cl_dev *d) { return (d->type & CL_DEVICE_TYPE_CPU) != 0; }
/* Whether AUTO passes over GPU-class algorithms on d: a CPU device, unless
 * the parity harness's --gpu-class asked for them (cl_wg_gemm.c). */
int pdnn__cl_gpu_class_passes(const cl_dev *d);
/* cl_pool_bwd.c: a pool backward kernel (x, dy, dx with their offsets and
 * strides, the dims, window and padding) built for dtype t over total
 * work-items, dx zeroed first where zero_first; acc (plane's float32
 * sums) the last two arguments unless NULL. */
struct pdnn__pool2d_call;
pdnn_status pdnn__cl_pool_bwd_launch(void *dev, const struct pdnn__pool2d_call *c, pdnn_dtype t, const char *file,
                                     const char *name, int64_t total, int zero_first, const pdnn__buf *acc);

/* Sets argument i of k unless an earlier one failed (err, a cl_int in
 * scope, keeps the first error). */
#define SET_ARG(k, i, v)                                                                          \
    do {                                                                                          \
        if (err == CL_SUCCESS)                                                                    \
            err = clSetKernelArg((k), (i), sizeof(v), &(v));                                      \
    } while (0)

/* Element offset of a buffer; core guarantees 4-byte alignment. */
static inline cl_long elem_off(pdnn__buf b) { return (cl_long)(b.offset / sizeof(float)); }

/* Kernels written over the prelude's REAL_T storage (float16, bfloat16:
 * issue 43): the build options for a call's dtype (NULL: float32) and a
 * buffer's offset in elements of it. */
static inline const char *pdnn__cl_real_opts(pdnn_dtype t)
{
    return t == PDNN_FLOAT16 ? "-DPDNN_REAL=1" : t == PDNN_BFLOAT16 ? "-DPDNN_REAL=2" : NULL;
}
static inline cl_long pdnn__cl_real_off(pdnn__buf b, pdnn_dtype t)
{
    return (cl_long)(b.offset / (t == PDNN_FLOAT16 || t == PDNN_BFLOAT16 ? 2 : 4));
}

/* The dtype a convolution of dtype t packs its filter in on d
 * (gemm_1x1, implicit_gemm): a float16 or bfloat16 call's own on GPU-class
 * devices (kernels_cl/conv2d_tile.cl's TILE_WR: half float32's bytes, the
 * values widened as they load), float32 on CPUs (PoCL: the loads'
 * conversions made those kernels 10-20% slower, bench/results-lowp.md)
 * unless the parity harness's --gpu-class asked for GPU-class paths. */
static inline pdnn_dtype pdnn__cl_pack_dtype(const cl_dev *d, pdnn_dtype t)
{
    return (t == PDNN_FLOAT16 || t == PDNN_BFLOAT16) && !pdnn__cl_gpu_class_passes(d) ? t : PDNN_FLOAT32;
}

static inline cl_long4 strides4(const int64_t s[4])
{
    cl_long4 v;
    for (int i = 0; i < 4; i++)
        v.s[i] = s[i];
    return v;
}

static inline cl_int4 int4_of(int a, int b, int c, int d)
{
    cl_int4 v;
    v.s[0] = a;
    v.s[1] = b;
    v.s[2] = c;
    v.s[3] = d;
    return v;
}

/* The relu word of the kernels with a capped relu epilogue (gemm_1x1,
 * implicit_gemm, depthwise): 0 no relu, else the bits of the float upper
 * bound (+inf for a plain relu), which the kernel reads back with
 * as_float: y = min(max(y, 0), cap) costs one more instruction and no
 * new argument. */
static inline int pdnn__cl_relu_word(const pdnn__conv2d_call *c)
{
    if (!c->relu)
        return 0;
    const float cap = c->relu_cap > 0.0f ? c->relu_cap : INFINITY;
    int bits;
    memcpy(&bits, &cap, sizeof bits);
    return bits;
}

/* ---- cl_common.c ---------------------------------------------------------- */

/* "CL_OUT_OF_RESOURCES" etc. */
const char *pdnn__cl_error_name(cl_int e);

/* Maps a failed call to a status: allocation failures are out-of-memory,
 * everything else is a backend error naming the call. */
pdnn_status pdnn__cl_fail(const char *call, cl_int err);

/* Enqueues a 1-D launch of k over total work-items, rounded up to the
 * work-group size (the kernels bound-check). Called with d->lock held. */
pdnn_status pdnn__cl_launch(cl_dev *d, cl_kernel k, const char *name, int64_t total);

/* Work-items that keep d's compute units balanced where a CPU kernel
 * sizes its own split: 8 per compute unit. */
int64_t pdnn__cl_balanced_items(const cl_dev *d);

/* want (a power of two) halved until k's and d's work-group limits take
 * it (1 where k's limit cannot be read). */
size_t pdnn__cl_wg_cap(const cl_dev *d, cl_kernel k, size_t want);

/* pdnn__cl_launch unless setting k's arguments failed (err: the OR of
 * the SET_ARGs, reported as clSetKernelArg(name)); total 0 launches
 * nothing, as an empty launch is invalid in OpenCL. d->lock held. */
pdnn_status pdnn__cl_launch_checked(cl_dev *d, cl_kernel k, const char *name, cl_int err, int64_t total);

#ifdef PDNN_HAVE_CLBLAST
/* cl_im2col.c: the plan the forward and backward im2col_gemm share (1 if
 * they run c), and a CLBlast status (CLBlastStatusCode) as polydnn's. */
int pdnn__cl_im2col_plan(const cl_dev *d, const pdnn__conv2d_call *c, pdnn__plan *plan);
pdnn_status pdnn__cl_blast_status(int bs);
/* 1 if CLBlast's SGEMM can take a batch (1: one) of m x n x k products
 * whose matrices reach element last (offsets included) of their buffers
 * (its strided batch pads every matrix of the batch into temporaries);
 * else plan refused, saying which limit (CLBlast aborts the process past
 * them). */
int pdnn__cl_blast_fits(const cl_dev *d, int64_t m, int64_t n, int64_t k, int64_t batch, int64_t last,
                        pdnn__plan *plan);
/* The same check at run time, for a workspace whose offset plan did not
 * know: an error instead of the call. */
pdnn_status pdnn__cl_blast_reach(int64_t last);
#endif

/* The kernel named kernel of kernels_cl/ file (or its copy in
 * $POLYDNN_KERNEL_DIR) built for d with build options opts (NULL: none;
 * -cl-std=CL1.2 is added, and no -w: the kernels build warning-free, which
 * tests/test_kernel_build checks, and a build log is shown only in a
 * failed build's error or with POLYDNN_DEBUG=1). The program is built on first use,
 * through the on-disk program cache, and kept with its kernels until d
 * closes; a failed build keeps nothing, so a later call tries again.
 * Called with d->lock held. */
pdnn_status pdnn__cl_kernel(cl_dev *d, const char *file, const char *opts, const char *kernel, cl_kernel *out);

/* Releases every program and kernel of d's kernel cache, after writing
 * the binaries built from source to the on-disk cache (dev_free). */
void pdnn__cl_kernels_release(cl_dev *d);

/* A conv algorithm with tunable configurations (tiled, gemm_1x1,
 * implicit_gemm): what the shared plan and run below need of it. */
typedef struct pdnn__cl_tunable {
    const pdnn__algo *algo;
    const char *kernel; /* the tuning cache's kernel name, e.g. "conv2d_tiled" */
    /* Configuration i can run call. */
    int (*applies)(void *dev, const pdnn__op_call *call, int i);
    /* The workspace bytes i needs for call (i applies). */
    size_t (*workspace)(void *dev, const pdnn__op_call *call, int i);
    /* The bytes of the workspace's tail that i packs the filter into (0:
     * it reads the filter in place), which run_config takes from the
     * call's wpack instead where the dispatcher gives one. NULL: none. */
    size_t (*packed)(void *dev, const pdnn__op_call *call, int i);
    /* Builds (once, through the kernel cache) and enqueues i on call with
     * workspace ws. Called with d->lock held. */
    pdnn_status (*run_config)(void *dev, const pdnn__op_call *call, int i, pdnn__buf ws);
} pdnn__cl_tunable;

/* Why the register- and work-group-tiled convolution kernels
 * (implicit_gemm, wg_gemm) cannot run c: they compute input rows and
 * columns, pixel indices and channels in int (NULL: they can). */
const char *pdnn__cl_conv_int_why(const pdnn__conv2d_call *c);

/* y channel-major (NCHW-like: w stride 1, channels apart): the "/nchw"
 * variant of a kernel's default configuration. */
static inline int pdnn__cl_y_channel_major(const pdnn__conv2d_call *c) { return c->ys[3] == 1 && c->ys[1] != 1; }

/* The configuration of t that d's row of cl_device_table.c names as the
 * untuned default for t->kernel (with variant first, where not NULL); -1
 * where it names none or one this build does not offer. */
int pdnn__cl_default_config(const cl_dev *d, const pdnn__cl_tunable *t, const char *variant);

/* Picks t's configuration for call (pdnn__plan_pick_config; the default
 * is dflt, usually pdnn__cl_default_config's, or where dflt is -1 or does
 * not apply to call the first configuration that does) and sizes the workspace: the pick's, or, when
 * run is to search, the largest any applicable configuration needs. A
 * frozen filter (w_const) that the pick packs is kept packed (wpack)
 * unless run is to search: the workspace then leaves out the packed part.
 * Returns the configuration, -1 when none applies (the caller refuses). */
int pdnn__cl_plan_tunable(const pdnn__cl_tunable *t, void *dev, const pdnn__op_call *call, int dflt,
                          pdnn__plan *plan);

/* Runs t as planned: searches first when plan->search
 * (pdnn__search_configs), then runs the planned or found configuration
 * and reports it in rep (may be NULL). Takes d->lock. */
pdnn_status pdnn__cl_run_tunable(const pdnn__cl_tunable *t, void *dev, const pdnn__op_call *call,
                                 const pdnn__plan *plan, pdnn__buf ws, pdnn__run_report *rep);

/* Plans the forward convolution in (an inner call of a backward or
 * matmul algorithm) into ip and returns the algorithm that runs it:
 * wg_gemm where AUTO would run it (GPU-class devices), else gemm_1x1
 * where with_1x1 and it takes the shape, else implicit_gemm
 * (cl_wg_gemm.c). */
const pdnn__algo *pdnn__cl_plan_fwd_inner(void *dev, const pdnn__op_call *in, pdnn__plan *ip, int with_1x1);

/* Frees d's wg_gemm tables (dev_free). */
typedef struct pdnn__cl_wg_table pdnn__cl_wg_table;
void pdnn__cl_wg_tables_release(cl_dev *d);

/* ---- cl_binary_cache.c -------------------------------------------------- */

/* A program's place in the on-disk cache (its file and key): where a
 * program loaded from the cache came from, or where one built from source
 * is to be stored. */
typedef struct pdnn__cl_cache_slot pdnn__cl_cache_slot;

/* Looks up the binary of the n sources built for d with the full build
 * options opts (what names the program in messages and in the file's
 * name) and sets *slot to the program's place in the cache (NULL: the
 * cache is off, there is no cache directory, or out of memory). A valid
 * cached binary is loaded, built and returned: keep *slot for
 * pdnn__cl_program_cache_drop, then free it. Otherwise returns NULL: build
 * from source and pass *slot to pdnn__cl_program_cache_add. Failing to
 * read the cache is never an error. */
cl_program pdnn__cl_program_cache_find(cl_dev *d, const char *const *texts, const size_t *lens, cl_uint n,
                                       const char *opts, const char *what, pdnn__cl_cache_slot **slot);

/* Queues prog's binary to be written to slot's file when d is torn down,
 * and takes slot; prog NULL (the build failed) only frees slot. */
void pdnn__cl_program_cache_add(cl_dev *d, pdnn__cl_cache_slot *slot, cl_program prog);

/* A program loaded from slot's file turned out not to be the program of
 * its key (why: e.g. a kernel its sources define is missing): deletes the
 * file, if it is still the one loaded, and says so on stderr naming it.
 * The slot stays valid, for pdnn__cl_program_cache_add once the program is
 * rebuilt from source. */
void pdnn__cl_program_cache_drop(pdnn__cl_cache_slot *slot, const char *why);

void pdnn__cl_program_cache_slot_free(pdnn__cl_cache_slot *slot);

/* Writes the binaries queued for d and drops its references to them;
 * called once, as d is torn down. */
void pdnn__cl_program_cache_flush(cl_dev *d);

/* ---- the ops without algorithm tables (cl_elementwise.c, cl_peak.c) ----- */

pdnn_status pdnn__cl_add(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf y, int64_t n);
pdnn_status pdnn__cl_bias_add(void *dev, pdnn__buf x, pdnn__buf bias, pdnn__buf y, int64_t n, int64_t c,
                              int64_t inner, int relu);
pdnn_status pdnn__cl_relu(void *dev, pdnn__buf x, pdnn__buf y, int64_t n);
pdnn_status pdnn__cl_softmax(void *dev, pdnn__buf x, pdnn__buf y, int64_t outer, int64_t c, int64_t inner);
pdnn_status pdnn__cl_copy_rows(void *dev, pdnn__buf dst, size_t dst_pitch, pdnn__buf src, size_t src_pitch,
                               size_t width, size_t rows);
/* y = x in y's memory order (the transform op's kernel); d->lock held. */
pdnn_status pdnn__cl_transform_locked(cl_dev *d, const pdnn__transform_call *c);
/* dst (float32, strides ds) = src (dtype t: a 4-d view, strides ss),
 * widened; d->lock held (cl_cast.c). */
pdnn_status pdnn__cl_widen_locked(cl_dev *d, pdnn_dtype t, pdnn__buf src, const int64_t dims[4],
                                  const int64_t ss[4], pdnn__buf dst, const int64_t ds[4]);
/* A reduced-dtype convolution's x widened into dst (channels-last where
 * nhwc); the kernel's x arguments set to the copy's; d->lock held. */
pdnn_status pdnn__cl_widen_conv_x(cl_dev *d, const pdnn__op_call *call, int nhwc, pdnn__buf dst, cl_mem *x,
                                  cl_long *xo, cl_long4 *xs);
/* 1 if the 4-d view (dims, element strides s) has no gaps or overlaps. */
int pdnn__cl_dense(const int64_t dims[4], const int64_t s[4]);

/* Measures the fp32 FMA rate (*gflops, 2 FLOP per FMA: the best of
 * float4, float8 and float16 chains) and the float4 copy bandwidth
 * (*gbytes_per_s, bytes read + written) with kernels_cl/peak.cl, after
 * the queue's earlier work; holds d->lock throughout. Its buffers come
 * from the driver directly: at most 1/8 of the device's memory. */
pdnn_status pdnn__cl_measure_peak(void *dev, double *gflops, double *gbytes_per_s);

#endif
