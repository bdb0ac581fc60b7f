/* What the host backend's files share: the device's state. host.c's
 * reference needs none; oneDNN's algorithms (host_dnnl.c, built with
 * PDNN_HAVE_DNNL_HOST) keep their engine, stream and primitive cache on
 * it, made at the first oneDNN call and freed with the device. */
#ifndef POLYDNN_HOST_INTERNAL_H
#define POLYDNN_HOST_INTERNAL_H

#include "backend.h"

typedef struct pdnn__host_dnnl pdnn__host_dnnl;

typedef struct pdnn__host_dev {
    pdnn__host_dnnl *dnnl; /* NULL without oneDNN */
} pdnn__host_dev;

/* host.c's reference pooling, forward or backward by call->op. */
pdnn_status pdnn__host_pool2d_ref(void *dev, const pdnn__op_call *call);

/* host_lowp.c: float16 and bfloat16 through the float32 algorithms
 * (pdnn__backend.run_reduced) for the ops below; Cast's algorithm. */
pdnn_status pdnn__host_run_reduced(void *dev, const pdnn__algo *a, const pdnn__op_call *call, const pdnn__plan *plan,
                                   pdnn__buf ws, pdnn__run_report *rep);
#define PDNN__HOST_OP_BIT(o) (1ull << (o))
#define PDNN__HOST_REDUCED_OPS                                                                                       \
    (PDNN__HOST_OP_BIT(PDNN__OP_CONV2D_FWD) | PDNN__HOST_OP_BIT(PDNN__OP_POOL2D_FWD) |                             \
     PDNN__HOST_OP_BIT(PDNN__OP_CONV2D_BWD_DATA) | PDNN__HOST_OP_BIT(PDNN__OP_CONV2D_BWD_FILTER) |                 \
     PDNN__HOST_OP_BIT(PDNN__OP_CONV2D_BWD_BIAS) | PDNN__HOST_OP_BIT(PDNN__OP_POOL2D_BWD) |                        \
     PDNN__HOST_OP_BIT(PDNN__OP_BN_FWD_TRAIN) | PDNN__HOST_OP_BIT(PDNN__OP_BN_FWD_INFER) |                         \
     PDNN__HOST_OP_BIT(PDNN__OP_BN_BWD) | PDNN__HOST_OP_BIT(PDNN__OP_RELU_BWD) |                                   \
     PDNN__HOST_OP_BIT(PDNN__OP_SOFTMAX_XENT) | PDNN__HOST_OP_BIT(PDNN__OP_OPTIMIZER) |                            \
     PDNN__HOST_OP_BIT(PDNN__OP_GEMM) | PDNN__HOST_OP_BIT(PDNN__OP_SCALE) | PDNN__HOST_OP_BIT(PDNN__OP_ACTIVATION) | \
     PDNN__HOST_OP_BIT(PDNN__OP_TRANSFORM) | PDNN__HOST_OP_BIT(PDNN__OP_BINARY) | PDNN__HOST_OP_BIT(PDNN__OP_PAD) |  \
     PDNN__HOST_OP_BIT(PDNN__OP_ND_TRANSPOSE) | PDNN__HOST_OP_BIT(PDNN__OP_ND_SOFTMAX) |                           \
     PDNN__HOST_OP_BIT(PDNN__OP_ND_LAYER_NORM) | PDNN__HOST_OP_BIT(PDNN__OP_ND_REDUCE) |                           \
     PDNN__HOST_OP_BIT(PDNN__OP_INDEX) | PDNN__HOST_OP_BIT(PDNN__OP_WHERE))
extern const pdnn__algo pdnn__host_cast_direct;

#ifdef PDNN_HAVE_DNNL_HOST
/* The state of one device (nothing of oneDNN's is made yet); NULL when
 * out of memory. */
pdnn__host_dnnl *pdnn__host_dnnl_new(void);
/* Frees the primitives, the engine and the stream. */
void pdnn__host_dnnl_free(pdnn__host_dnnl *s);

extern const pdnn__algo pdnn__host_dnnl_conv, pdnn__host_dnnl_conv_bwd_data, pdnn__host_dnnl_conv_bwd_filter,
    pdnn__host_dnnl_conv_bwd_bias, pdnn__host_dnnl_pool, pdnn__host_dnnl_pool_bwd, pdnn__host_dnnl_matmul;
/* Batch norm, the elementwise ops and softmax on oneDNN (host_dnnl.c),
 * and the references they fall back on for NaN (host_train.c,
 * host_nd_math.c). */
extern const pdnn__algo pdnn__host_dnnl_bn_fwd_train, pdnn__host_dnnl_bn_fwd_infer, pdnn__host_dnnl_bn_bwd,
    pdnn__host_dnnl_scale, pdnn__host_dnnl_activation, pdnn__host_dnnl_relu_bwd, pdnn__host_dnnl_softmax;
/* host_dw.c: depthwise convolution in NCHW. */
extern const pdnn__algo pdnn__host_dw_nchw;
extern const pdnn__algo pdnn__host_relu_bwd_direct, pdnn__host_activation_direct, pdnn__host_softmax_direct;
#endif

#endif /* POLYDNN_HOST_INTERNAL_H */
