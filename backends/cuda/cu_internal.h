/* What the CUDA backend's files share. Layering, top to bottom, with
 * calls only downwards:
 *
 *   cu_<family>.c  one file per op family, each with its algorithms:
 *                  cu_conv.c (forward, and the per-device plan cache the
 *                  backward plans through too), cu_conv_bwd.c (data,
 *                  filter and their algorithm choice; bias), cu_pool.c
 *                  (forward and backward), cu_bn.c, cu_nn.c (the ops
 *                  around convolution: the vtable's add, bias_add, relu
 *                  and softmax; activation, transform, binary, scale;
 *                  matmul through cuBLAS), cu_train.c (relu backward, SGD)
 *   cuda.c         devices, memory and copies, the handles, the
 *                  descriptor helpers, pdnn__cu_run; the vtable and the
 *                  algorithm tables, which name the families' algorithms
 *   cu_loader.c    libcudart, libcudnn and libcublas, opened with dlopen:
 *                  their function tables and error messages
 *
 * Nothing links against CUDA: every CUDA, cuDNN and cuBLAS call goes
 * through the tables pdnn__cu_rt, pdnn__cu_dnn and pdnn__cu_blas, filled
 * once by pdnn__cu_load. A device's handles and descriptors are shared by
 * its ops, so every use of them holds cu_dev.lock: a cuDNN op's run takes
 * it through pdnn__cu_run, which also readies cuDNN and then calls the
 * op's body. */
#ifndef POLYDNN_CU_INTERNAL_H
#define POLYDNN_CU_INTERNAL_H

#include "backend.h"
#include "core/half.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <limits.h>
#include <pthread.h>

/* ---- the libraries' function tables (cu_loader.c) ------------------------ */

/* Names go through one more macro level so that the headers' renames
 * (cublasSgemm -> cublasSgemm_v2) apply to both the field and the symbol. */
#define CUDART_FUNCS(X)                                                                            \
    X(cudaGetDeviceCount)                                                                          \
    X(cudaSetDevice)                                                                               \
    X(cudaDeviceGetAttribute)                                                                      \
    X(cudaDriverGetVersion)                                                                        \
    X(cudaRuntimeGetVersion)                                                                       \
    X(cudaGetErrorString)                                                                          \
    X(cudaGetErrorName)                                                                            \
    X(cudaGetLastError)                                                                            \
    X(cudaMalloc)                                                                                  \
    X(cudaFree)                                                                                    \
    X(cudaMemGetInfo)                                                                              \
    X(cudaMemcpyAsync)                                                                             \
    X(cudaMemcpy2DAsync)                                                                           \
    X(cudaMemsetAsync)                                                                             \
    X(cudaStreamCreate)                                                                            \
    X(cudaStreamDestroy)                                                                           \
    X(cudaStreamSynchronize)

#define CUDNN_FUNCS(X)                                                                             \
    X(cudnnGetVersion)                                                                             \
    X(cudnnGetErrorString)                                                                         \
    X(cudnnCreate)                                                                                 \
    X(cudnnDestroy)                                                                                \
    X(cudnnSetStream)                                                                              \
    X(cudnnCreateTensorDescriptor)                                                                 \
    X(cudnnDestroyTensorDescriptor)                                                                \
    X(cudnnSetTensor4dDescriptorEx)                                                                \
    X(cudnnSetTensorNdDescriptor)                                                                  \
    X(cudnnCreateFilterDescriptor)                                                                 \
    X(cudnnDestroyFilterDescriptor)                                                                \
    X(cudnnSetFilter4dDescriptor)                                                                  \
    X(cudnnCreateConvolutionDescriptor)                                                            \
    X(cudnnDestroyConvolutionDescriptor)                                                           \
    X(cudnnSetConvolution2dDescriptor)                                                             \
    X(cudnnSetConvolutionGroupCount)                                                               \
    X(cudnnSetConvolutionMathType)                                                                 \
    X(cudnnGetConvolutionForwardAlgorithm_v7)                                                      \
    X(cudnnGetConvolutionForwardWorkspaceSize)                                                     \
    X(cudnnConvolutionForward)                                                                     \
    X(cudnnConvolutionBiasActivationForward)                                                       \
    X(cudnnTransformTensor)                                                                        \
    X(cudnnSetTensor)                                                                              \
    X(cudnnAddTensor)                                                                              \
    X(cudnnScaleTensor)                                                                            \
    X(cudnnCreateOpTensorDescriptor)                                                               \
    X(cudnnDestroyOpTensorDescriptor)                                                              \
    X(cudnnSetOpTensorDescriptor)                                                                  \
    X(cudnnOpTensor)                                                                               \
    X(cudnnCreateActivationDescriptor)                                                             \
    X(cudnnDestroyActivationDescriptor)                                                            \
    X(cudnnSetActivationDescriptor)                                                                \
    X(cudnnSetActivationDescriptorSwishBeta)                                                       \
    X(cudnnActivationForward)                                                                      \
    X(cudnnActivationBackward)                                                                     \
    X(cudnnCreatePoolingDescriptor)                                                                \
    X(cudnnDestroyPoolingDescriptor)                                                               \
    X(cudnnSetPooling2dDescriptor)                                                                 \
    X(cudnnPoolingForward)                                                                         \
    X(cudnnPoolingBackward)                                                                        \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                                                 \
    X(cudnnGetConvolutionBackwardDataWorkspaceSize)                                                \
    X(cudnnConvolutionBackwardData)                                                                \
    X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                                               \
    X(cudnnGetConvolutionBackwardFilterWorkspaceSize)                                              \
    X(cudnnConvolutionBackwardFilter)                                                              \
    X(cudnnConvolutionBackwardBias)                                                                \
    X(cudnnSoftmaxForward)                                                                         \
    X(cudnnDeriveBNTensorDescriptor)                                                               \
    X(cudnnBatchNormalizationForwardTraining)                                                      \
    X(cudnnBatchNormalizationForwardInference)                                                     \
    X(cudnnBatchNormalizationBackward)                                                             \
    X(cudnnCreateReduceTensorDescriptor)                                                           \
    X(cudnnDestroyReduceTensorDescriptor)                                                          \
    X(cudnnSetReduceTensorDescriptor)                                                              \
    X(cudnnGetReductionWorkspaceSize)                                                              \
    X(cudnnReduceTensor)

#define CUBLAS_FUNCS(X)                                                                            \
    X(cublasCreate)                                                                                \
    X(cublasDestroy)                                                                               \
    X(cublasSetStream)                                                                             \
    X(cublasSetMathMode)                                                                           \
    X(cublasGetStatusString)                                                                       \
    X(cublasSgemm)                                                                                 \
    X(cublasSgemmStridedBatched)                                                                   \
    X(cublasGemmEx)                                                                                \
    X(cublasGemmStridedBatchedEx)

#define DECLARE_FN(fn) __typeof__(&fn) fn;
#define DECLARE(fn) DECLARE_FN(fn)

typedef struct pdnn__cu_rt_fns {
    CUDART_FUNCS(DECLARE)
    /* Read through an oversized buffer: its layout changed across CUDA
     * versions, but name and totalGlobalMem lead in all of them. */
    __typeof__(&cudaGetDeviceProperties) getDeviceProperties;
} pdnn__cu_rt_fns;
typedef struct pdnn__cu_dnn_fns {
    CUDNN_FUNCS(DECLARE)
} pdnn__cu_dnn_fns;
typedef struct pdnn__cu_blas_fns {
    CUBLAS_FUNCS(DECLARE)
} pdnn__cu_blas_fns;

extern pdnn__cu_rt_fns pdnn__cu_rt;
extern pdnn__cu_dnn_fns pdnn__cu_dnn;
extern pdnn__cu_blas_fns pdnn__cu_blas;

/* Opens the libraries, once per process; NULL when they are ready, else
 * why not (a static string). */
const char *pdnn__cu_load(void);
/* "CUDA driver X.Y / runtime X.Y / cuDNN X.Y.Z", once pdnn__cu_load succeeded. */
const char *pdnn__cu_versions(void);

/* ---- errors (cu_loader.c) -------------------------------------------------- */

pdnn_status pdnn__cu_cuda_fail(const char *call, cudaError_t e);
pdnn_status pdnn__cu_dnn_fail(const char *call, cudnnStatus_t s);
pdnn_status pdnn__cu_blas_fail(const char *call, cublasStatus_t s);

/* Early-return checks for functions returning pdnn_status. */
#define CU(fn, ...)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = pdnn__cu_rt.fn(__VA_ARGS__);                                              \
        if (e_ != cudaSuccess)                                                                     \
            return pdnn__cu_cuda_fail(#fn, e_);                                                    \
    } while (0)
#define DNN(fn, ...)                                                                               \
    do {                                                                                           \
        cudnnStatus_t s_ = pdnn__cu_dnn.fn(__VA_ARGS__);                                           \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                            \
            return pdnn__cu_dnn_fail(#fn, s_);                                                     \
    } while (0)

/* Returns a failed pdnn_status expression's status. */
#define RETURN_IF_FAILED(expr)                                                                     \
    do {                                                                                           \
        pdnn_status st_ = (expr);                                                                  \
        if (st_ != PDNN_SUCCESS)                                                                   \
            return st_;                                                                            \
    } while (0)

/* ---- devices (cuda.c) ---------------------------------------------------- */

#define N_TDESC 6      /* tensor descriptors per device */
/* Convolution plans remembered per device, hashed (a power of two).
 * Core plans every CUDA algorithm of a call on every call (three entries
 * per shape and op). The first 96-entry FIFO held 32 forward shapes;
 * GoogLeNet has 49 (147 entries), which a FIFO cycles through without a
 * hit, asking cuDNN again each time (likely why it took 90-112 ms per run
 * on an H200, where PyTorch took 5 ms). 1024 holds a network's forward
 * and backward passes; a full table overwrites an entry's home slot. */
#define PLAN_CACHE 1024

/* How one convolution runs: the cuDNN algorithm and which operands are
 * first copied into the workspace (a zero-padded input where cuDNN's
 * symmetric padding cannot express the call, a repacked filter, an NCHW
 * output) and where in the workspace each part lies. plan() writes it into
 * pdnn__plan.state, run() reads it back. */
typedef struct conv_plan {
    cudnnConvolutionFwdAlgo_t algo;
    int bwd_algo; /* backward data/filter: cuDNN's cudnnConvolutionBwd{Data,Filter}Algo_t */
    int x_copy, w_copy, y_copy;
    pdnn_layout x_copy_layout, w_copy_layout;
    int64_t hp, wp; /* padded input size when x_copy */
    size_t x_off, w_off, y_off, algo_off, algo_bytes, total;
    /* Forward vendor: cuDNN's sizable proposals in its order (algo is the
     * first), for a call's workspace limit to pick among. */
    int n_alt;
    cudnnConvolutionFwdAlgo_t alt[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    size_t alt_bytes[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
} conv_plan;

_Static_assert(sizeof(conv_plan) <= sizeof(((pdnn__plan *)0)->state), "conv_plan must fit in pdnn__plan.state");

/* Every call field that decides the plan, and the algorithm asked for.
 * Only an in-process memo of cuDNN's answers, never stored, so it need
 * not follow the tuning cache's key format. */
typedef struct conv_key {
    int64_t n, c, h, w, k, r, s, p, q, groups;
    int stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right;
    int x_layout, w_layout, y_layout, algo;
    int dtype, tf32; /* the storage dtype and the math type it allows change cuDNN's answers */
} conv_key;

typedef struct plan_entry {
    int used, supported;
    conv_key key;
    conv_plan plan;
    char why[PDNN__WHY_LEN]; /* the refusal, when !supported */
} plan_entry;

typedef struct cu_dev {
    int ordinal;
    pthread_mutex_t lock; /* guards everything below and the use of the handles */
    cudaStream_t stream;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    cudnnTensorDescriptor_t t[N_TDESC];
    cudnnFilterDescriptor_t filt;
    cudnnConvolutionDescriptor_t conv;
    cudnnPoolingDescriptor_t pool;
    cudnnActivationDescriptor_t relu, act; /* act: set per call (sigmoid, clipped relu) */
    cudnnOpTensorDescriptor_t add, mul, max, min;
    float *scalars; /* 2 floats of device memory: clip's bounds, broadcast */
    plan_entry plans[PLAN_CACHE];
} cu_dev;

/* ---- small helpers --------------------------------------------------------- */

/* cuDNN's storage type of a float dtype: float16 is CUDNN_DATA_HALF,
 * bfloat16 CUDNN_DATA_BFLOAT16 (cuDNN 8.1 and later), float32 the rest. */
static inline cudnnDataType_t cu_dnn_type(pdnn_dtype t)
{
    return t == PDNN_FLOAT16 ? CUDNN_DATA_HALF : t == PDNN_BFLOAT16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

/* cuBLAS's (cudaDataType) for the same. */
static inline cudaDataType cu_blas_type(pdnn_dtype t)
{
    return t == PDNN_FLOAT16 ? CUDA_R_16F : t == PDNN_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* 1 for float16 and bfloat16: stored in 16 bits, computed in float32. */
static inline int cu_reduced(pdnn_dtype t) { return t == PDNN_FLOAT16 || t == PDNN_BFLOAT16; }

/* A buffer's device address. */
static inline void *ptr(pdnn__buf b) { return (char *)b.region + b.offset; }

static inline int fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

static inline size_t align256(size_t v) { return (v + 255) & ~(size_t)255; }

/* Whether cuDNN's int descriptors can hold dims and element strides st. */
static inline int dims_fit(const int64_t dims[4], const int64_t st[4])
{
    for (int i = 0; i < 4; i++)
        if (!fits_int(dims[i]) || !fits_int(st[i]))
            return 0;
    return 1;
}

/* Tensor descriptor slots used by a convolution (and by the ops that
 * borrow two of them: TX, TY). */
enum { TX, TY, TW_SRC, TW_DST, TX_SRC, TB };

/* Elementwise ops run over chunks of at most this many elements, viewed
 * as 1 x 1 x 1 x len tensors. */
#define EW_CHUNK ((int64_t)1 << 30)

/* ---- shared by the op files (cuda.c unless a comment names another) ------ */

/* Locks d, readies cuDNN; on success the caller holds the lock. */
pdnn_status pdnn__cu_lock_dnn(cu_dev *d);
/* The stream and the cuBLAS handle on the right device. Called with d->lock held. */
pdnn_status pdnn__cu_ensure_blas(cu_dev *d);
/* A 4-D float tensor descriptor with the given logical dims and element strides. */
pdnn_status pdnn__cu_set_4d(cudnnTensorDescriptor_t t, const int64_t dims[4], const int64_t st[4]);
/* A packed tensor of dims in layout l. */
pdnn_status pdnn__cu_set_packed(cudnnTensorDescriptor_t t, pdnn_layout l, const int64_t dims[4]);
/* The same two in storage type dt (the float ones above are these with
 * CUDNN_DATA_FLOAT). */
pdnn_status pdnn__cu_set_4d_as(cudnnTensorDescriptor_t t, cudnnDataType_t dt, const int64_t dims[4],
                               const int64_t st[4]);
pdnn_status pdnn__cu_set_packed_as(cudnnTensorDescriptor_t t, cudnnDataType_t dt, pdnn_layout l,
                                   const int64_t dims[4]);
/* y = x between two descriptors of equal dims whose storage types may
 * differ (float32, float16, bfloat16), rounding to nearest even: see
 * cu_cast.c for the documented combinations. Called with d->lock held. */
pdnn_status pdnn__cu_convert(cu_dev *d, cudnnTensorDescriptor_t xd, const void *x, cudnnTensorDescriptor_t yd,
                             void *y);
/* Fills rep (if not NULL) for an algorithm whose kernel cuDNN chose in plan. */
void pdnn__cu_report_untuned(const pdnn__plan *plan, pdnn__run_report *rep);

/* The part of a run that differs by op, called with d->lock held and d's
 * cuDNN handle ready on its stream; arg is what the run gave
 * pdnn__cu_run: the plan's state copied out, or the op's arguments. */
typedef pdnn_status (*pdnn__cu_body)(cu_dev *d, const pdnn__op_call *call, const void *arg, pdnn__buf ws);

/* What every cuDNN run does around its body: copies state_bytes of
 * plan->state into arg (nothing when 0), locks d and readies cuDNN, runs
 * body, unlocks, then fills rep (if not NULL) as pdnn__cu_report_untuned
 * does. A failure to ready cuDNN returns before rep is touched. */
pdnn_status pdnn__cu_run(void *dev, pdnn__cu_body body, const pdnn__op_call *call, const pdnn__plan *plan,
                         void *arg, size_t state_bytes, pdnn__buf ws, pdnn__run_report *rep);

/* Defines name, an algorithm's run (pdnn__algo.run) that is pdnn__cu_run
 * with body: the plan's state copied into a state_type first
 * (CU_DEFINE_RUN), or nothing copied (CU_DEFINE_RUN_NO_STATE). */
#define CU_DEFINE_RUN(name, body, state_type) CU_DEFINE_RUN_(name, body, state_type state, &state, sizeof state)
#define CU_DEFINE_RUN_NO_STATE(name, body) CU_DEFINE_RUN_(name, body, (void)0, NULL, 0)
#define CU_DEFINE_RUN_(name, body, declare, arg, state_bytes)                                      \
    static pdnn_status name(void *dev, const pdnn__op_call *call, const pdnn__plan *plan,          \
                            pdnn__buf ws, pdnn__run_report *rep)                                   \
    {                                                                                              \
        declare;                                                                                   \
        return pdnn__cu_run(dev, body, call, plan, arg, state_bytes, ws, rep);                     \
    }

/* cu_conv.c: the descriptors of plan pl for call (a convolution), and the
 * convolution plans that forward and backward share (want: the algorithm
 * asked for). */
pdnn_status pdnn__cu_set_conv_descriptors(cu_dev *d, const pdnn__op_call *call, const conv_plan *pl);
void pdnn__cu_vendor_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan);
void pdnn__cu_direct_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan);

/* cu_conv_bwd.c: the backward algorithm of op for the current descriptors
 * (1, or 0 with why), and its name. */
int pdnn__cu_bwd_select(cu_dev *d, pdnn__op op, pdnn_conv_algo want, conv_plan *pl, size_t *ws, char *why,
                        size_t len);
const char *pdnn__cu_bwd_algo_name(pdnn__op op, int a);

/* cu_nn.c: a 1 x 1 x 1 x len view, for the elementwise ops' chunks; the
 * vtable's elementwise ops. */
pdnn_status pdnn__cu_set_vec(cudnnTensorDescriptor_t t, int64_t len);
pdnn_status pdnn__cu_add(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf y, int64_t n);
pdnn_status pdnn__cu_bias_add(void *dev, pdnn__buf x, pdnn__buf bias, pdnn__buf y, int64_t n, int64_t c,
                              int64_t inner, int relu);
pdnn_status pdnn__cu_relu(void *dev, pdnn__buf x, pdnn__buf y, int64_t n);
pdnn_status pdnn__cu_softmax(void *dev, pdnn__buf x, pdnn__buf y, int64_t outer, int64_t c, int64_t inner);

#endif
