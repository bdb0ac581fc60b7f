/* What the OpenCL backend's files share: the per-device state, argument
 * and launch helpers, and building an embedded kernels_cl/ source into a
 * program of its own. Each algorithm beyond the main program (tiled,
 * Winograd, depthwise, 1x1 GEMM) lives in its own file and keeps its
 * programs in cl_dev's slots, which dev_free releases. */
#ifndef POLYDNN_CL_INTERNAL_H
#define POLYDNN_CL_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include "backend.h"

#include <CL/cl.h>
#include <pthread.h>
#include <time.h>

enum kernel_id {
    K_CONV_DIRECT, K_POOL_DIRECT, K_PACK_FILTER, K_IM2COL, K_GEMM_EPILOGUE,
    K_ADD, K_BIAS_ADD, K_RELU, K_SOFTMAX, K_MATMUL, K_POOL_FAST, K_POOL_NHWC_ROWS, K_POOL_NCHW_ROWS, K_COUNT
};

/* Number of tiled configurations (tiled_cands in opencl.c). */
#define N_TILED 9

/* Number of gemm_1x1 configurations (g1_cands in cl_gemm_1x1.c). */
#define N_GEMM1X1 8

/* Number of implicit_gemm configurations (ig_cands in cl_implicit_gemm.c). */
#define N_IGEMM 6

/* Programs of the algorithms in files of their own, built on first use:
 * one program and up to CL_SLOT_KERNELS kernels each. */
enum cl_slot { CL_SLOT_WINOGRAD, CL_SLOT_DEPTHWISE, CL_SLOT_GEMM1X1, CL_SLOT_COUNT };
#define CL_SLOT_KERNELS 4

typedef struct cl_dev {
    cl_device_id id;
    cl_context ctx;
    cl_command_queue queue;
    size_t max_wg;
    cl_device_type type;
    /* The program is built on first use; kernels are shared, so setting
     * arguments and enqueueing happen under the lock. */
    pthread_mutex_t lock;
    cl_program program;
    cl_kernel kernels[K_COUNT];
    /* One program per tiled configuration, built when first used. */
    cl_program tiled_prog[N_TILED];
    cl_kernel tiled_pack[N_TILED], tiled_conv[N_TILED];
    int tiled_default; /* index into tiled_cands for this device class */
    cl_program slot_prog[CL_SLOT_COUNT];
    cl_kernel slot_kernels[CL_SLOT_COUNT][CL_SLOT_KERNELS];
    char tune_key[384]; /* "vendor|name|driver": the tuning cache's device */
    /* gemm_1x1 (cl_gemm_1x1.c): one program per tile configuration, built
     * when first used, released by pdnn__cl_gemm1x1_release; cu (compute
     * units, which size its work split) and g1_default (the untuned
     * configuration) are set by pdnn__cl_gemm1x1_init when the device opens. */
    cl_program g1_prog[N_GEMM1X1];
    cl_kernel g1_pack[N_GEMM1X1], g1_conv[N_GEMM1X1], g1_rows[N_GEMM1X1];
    cl_uint cu;
    int g1_default;
    /* implicit_gemm (cl_implicit_gemm.c): likewise one program per tile
     * configuration; ig_default is set by pdnn__cl_igemm_init. */
    cl_program ig_prog[N_IGEMM];
    cl_kernel ig_pack[N_IGEMM], ig_conv[N_IGEMM];
    int ig_default;
} cl_dev;

/* Sets argument i of k unless an earlier one failed (err, a cl_int in
 * scope, keeps the first error). */
#define SET_ARG(k, i, v)                                                                          \
    do {                                                                                          \
        if (err == CL_SUCCESS)                                                                    \
            err = clSetKernelArg((k), (i), sizeof(v), &(v));                                      \
    } while (0)

/* Element offset of a buffer; core guarantees 4-byte alignment. */
static inline cl_long elem_off(pdnn__buf b) { return (cl_long)(b.offset / sizeof(float)); }

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

/* Monotonic seconds, for the tuners' timings. */
static inline double pdnn__cl_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* "CL_OUT_OF_RESOURCES" etc. */
const char *pdnn__cl_error_name(cl_int e);

/* Maps a failed call to a status: allocation failures are out-of-memory,
 * everything else is a backend error naming the call. */
pdnn_status pdnn__cl_fail(const char *call, cl_int err);

/* Enqueues a 1-D launch of k over total work-items, rounded up to the
 * work-group size (the kernels bound-check). Called with d->lock held. */
pdnn_status pdnn__cl_launch(cl_dev *d, cl_kernel k, const char *name, int64_t total);

/* Builds a program for d from n sources with the full build options opts,
 * through the on-disk program cache (cl_binary_cache.c): a valid cached
 * binary for this device, options and source bytes is loaded instead of
 * compiled; otherwise the sources are built and the binary stored. what
 * names the program in messages and in the cache file's name. A failed
 * build is PDNN_ERR_BACKEND with the log; failing to read or write the
 * cache never is an error. The binary is written when d is torn down
 * (pdnn__cl_program_cache_flush). Called with d->lock held. */
pdnn_status pdnn__cl_program_cached(cl_dev *d, const char *const *texts, const size_t *lens, cl_uint n,
                                    const char *opts, const char *what, cl_program *out);

/* Writes the binaries of the programs d built from source this time and
 * drops its references to them; called once, as d is torn down. */
void pdnn__cl_program_cache_flush(cl_dev *d);

/* Builds the embedded kernels_cl/ source `file` (or its copy in
 * $POLYDNN_KERNEL_DIR) for d with build options opts (-cl-std=CL1.2 is
 * added) into *out, through the program cache. A failed build is
 * PDNN_ERR_BACKEND with the log. */
pdnn_status pdnn__cl_build_source(cl_dev *d, const char *file, const char *opts, cl_program *out);

/* Builds `file` with opts into *prog and creates the n named kernels in
 * kernels[0..n); on failure nothing is kept and *prog is untouched. */
pdnn_status pdnn__cl_build_kernels(cl_dev *d, const char *file, const char *opts, const char *const *names, int n,
                                   cl_program *prog, cl_kernel *kernels);

/* Builds `file` into slot (once; later calls return at once) and creates
 * the n named kernels in d->slot_kernels[slot]. Called with d->lock held. */
pdnn_status pdnn__cl_build_slot(cl_dev *d, enum cl_slot slot, const char *file, const char *opts,
                                const char *const *names, int n);

/* A kernel's tunable configurations 0..count-1, for pdnn__cl_tune. */
typedef struct pdnn__cl_tunable {
    const char *kernel; /* the tuning cache's kernel name, e.g. "conv2d_tiled" */
    int count;
    /* Configuration i can run c; and can with c->workspace_bytes. */
    int (*applies)(const pdnn__conv2d_call *c, int i);
    int (*usable)(const pdnn__conv2d_call *c, int i);
    /* Builds i's program (once) and enqueues i on c. */
    pdnn_status (*build)(cl_dev *d, int i);
    pdnn_status (*enqueue)(cl_dev *d, const pdnn__conv2d_call *c, int i);
    /* The cache's value for i, e.g. "tq=8 kb=1", and the shape's key. */
    void (*name)(int i, char *buf, size_t len);
    void (*shape_key)(const pdnn__conv2d_call *c, char *buf, size_t len);
} pdnn__cl_tunable;

/* Which of t's configurations runs c (cl_tuner.c): forced (>= 0) where it
 * applies; else, unless tuning is off, the tuning cache's entry for the
 * shape (under FORCE only one this process stored) where it names a
 * configuration that applies, with *cached = 1; else dflt, with *search =
 * 1 when the context may tune now. dflt < 0: nothing applies. */
int pdnn__cl_pick(const cl_dev *d, const pdnn__conv2d_call *c, const pdnn__cl_tunable *t, int dflt, int forced,
                  int *search, int *cached);

/* Searches t's configurations for c (cl_tuner.c): each usable one is run
 * and checked against dflt's output, the survivors timed in rounds; the
 * fastest is stored in the tuning cache and returned (dflt when nothing
 * else ran). Reports the search in c->tuning_out. d->lock held. */
int pdnn__cl_tune(cl_dev *d, const pdnn__conv2d_call *c, const pdnn__cl_tunable *t, int dflt);

/* Winograd F(4x4, 3x3) (cl_winograd.c). The workspace c needs, or
 * SIZE_MAX (with the reason as the last error) when c is not a 3x3,
 * stride-1, dilation-1, ungrouped convolution it runs. */
size_t pdnn__cl_winograd_workspace(cl_dev *d, const pdnn__conv2d_call *c);
/* Runs c with c->workspace; called with d->lock held. */
pdnn_status pdnn__cl_winograd(cl_dev *d, const pdnn__conv2d_call *c);
/* gemm_1x1 (cl_gemm_1x1.c). The workspace c needs (the packed filter; 0
 * when read in place), or SIZE_MAX when gemm_1x1 cannot run c. */
size_t pdnn__cl_gemm1x1_workspace(cl_dev *d, const pdnn__conv2d_call *c);
/* Runs c; called with d->lock held. */
pdnn_status pdnn__cl_gemm1x1(cl_dev *d, const pdnn__conv2d_call *c);
/* Sets d->cu and d->g1_default (dev_open). */
void pdnn__cl_gemm1x1_init(cl_dev *d);
/* Releases the programs and kernels it built (dev_free). */
void pdnn__cl_gemm1x1_release(cl_dev *d);
/* Depthwise convolution (cl_depthwise.c): 0 bytes of workspace where it
 * applies (groups == C), SIZE_MAX where it does not. */
size_t pdnn__cl_depthwise_workspace(cl_dev *d, const pdnn__conv2d_call *c);

/* Runs c as a depthwise convolution. Called with d->lock held. */
pdnn_status pdnn__cl_depthwise(cl_dev *d, const pdnn__conv2d_call *c);

/* implicit_gemm (cl_implicit_gemm.c): any filter, stride, dilation and
 * padding, groups 1 or whole channel blocks per group. The workspace c
 * needs (64 bytes of zeros, and the packed filter unless it is read in
 * place), or SIZE_MAX (with the reason as the last error) when it cannot
 * run c. */
size_t pdnn__cl_igemm_workspace(cl_dev *d, const pdnn__conv2d_call *c);
/* Runs c; called with d->lock held. */
pdnn_status pdnn__cl_igemm(cl_dev *d, const pdnn__conv2d_call *c);
/* Sets d->ig_default (dev_open, after pdnn__cl_gemm1x1_init). */
void pdnn__cl_igemm_init(cl_dev *d);
/* Releases the programs and kernels it built (dev_free). */
void pdnn__cl_igemm_release(cl_dev *d);

#endif
