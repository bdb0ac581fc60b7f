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

#ifdef PDNN_HAVE_DNNL_HOST
/* The state of one device (nothing of oneDNN's is made yet); NULL when
 * out of memory. */
pdnn__host_dnnl *pdnn__host_dnnl_new(void);
/* Frees the primitives, the engine and the stream. */
void pdnn__host_dnnl_free(pdnn__host_dnnl *s);

extern const pdnn__algo pdnn__host_dnnl_conv, pdnn__host_dnnl_conv_bwd_data, pdnn__host_dnnl_conv_bwd_filter,
    pdnn__host_dnnl_conv_bwd_bias, pdnn__host_dnnl_pool, pdnn__host_dnnl_pool_bwd, pdnn__host_dnnl_matmul;
#endif

#endif /* POLYDNN_HOST_INTERNAL_H */
