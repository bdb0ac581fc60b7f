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
    K_ADD, K_BIAS_ADD, K_RELU, K_SOFTMAX, K_MATMUL, K_POOL_FAST, K_POOL_NHWC8, K_POOL_NCHW8, K_COUNT
};

/* Number of tiled configurations (tiled_cands in opencl.c). */
#define N_TILED 9

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

/* Builds the embedded kernels_cl/ source `file` (or its copy in
 * $POLYDNN_KERNEL_DIR) for d with build options opts (-cl-std=CL1.2 is
 * added) into *out. A failed build is PDNN_ERR_BACKEND with the log. */
pdnn_status pdnn__cl_build_source(cl_dev *d, const char *file, const char *opts, cl_program *out);

/* Builds `file` into slot (once; later calls return at once) and creates
 * the n named kernels in d->slot_kernels[slot]. Called with d->lock held. */
pdnn_status pdnn__cl_build_slot(cl_dev *d, enum cl_slot slot, const char *file, const char *opts,
                                const char *const *names, int n);

/* Depthwise convolution (cl_depthwise.c): 0 bytes of workspace where it
 * applies (groups == C), SIZE_MAX where it does not. */
size_t pdnn__cl_depthwise_workspace(cl_dev *d, const pdnn__conv2d_call *c);

/* Runs c as a depthwise convolution. Called with d->lock held. */
pdnn_status pdnn__cl_depthwise(cl_dev *d, const pdnn__conv2d_call *c);

#endif
