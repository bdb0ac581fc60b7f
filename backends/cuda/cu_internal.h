/* What the CUDA backend's files share.
 *
 *   cuda.c         devices, memory and copies, the descriptor helpers,
 *                  the vtable and the algorithm tables
 *   cu_loader.c    libcudart, libcudnn and libcublas, opened with dlopen:
 *                  their function tables and error messages
 *
 * Nothing links against CUDA: every CUDA, cuDNN and cuBLAS call goes
 * through the tables pdnn__cu_rt, pdnn__cu_dnn and pdnn__cu_blas, filled
 * once by pdnn__cu_load. */
#ifndef POLYDNN_CU_INTERNAL_H
#define POLYDNN_CU_INTERNAL_H

#include "backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

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
    X(cudnnBatchNormalizationBackward)

#define CUBLAS_FUNCS(X)                                                                            \
    X(cublasCreate)                                                                                \
    X(cublasDestroy)                                                                               \
    X(cublasSetStream)                                                                             \
    X(cublasSetMathMode)                                                                           \
    X(cublasGetStatusString)                                                                       \
    X(cublasSgemm)

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

#define RETURN_IF_FAILED(expr)                                                                     \
    do {                                                                                           \
        pdnn_status st_ = (expr);                                                                  \
        if (st_ != PDNN_SUCCESS)                                                                   \
            return st_;                                                                            \
    } while (0)

#endif
