/* Shared test helpers: helpers.c (Criterion suites: they abort the test
 * on failure) and tensor_data.c (no Criterion: data and layouts, also
 * used by the parity harness). */
#ifndef POLYDNN_TEST_HELPERS_H
#define POLYDNN_TEST_HELPERS_H

#include "polydnn.h"

#include <stdbool.h>
#include <stdint.h>

/* A context with allow_growth on, so a test process does not reserve the
 * whole device; aborts the test on failure. */
pdnn_context *th_context(void);


/* Creates a tensor on dev holding data (in desc's layout order). */
pdnn_tensor *th_upload(pdnn_device *dev, const pdnn_tensor_desc *desc, const float *data);

/* Reads a whole tensor into a new malloc'd array. */
float *th_download(const pdnn_tensor *t);

/* Devices other than the host reference (OpenCL, CUDA). n = 0 if none. */
int th_accelerators(pdnn_context *ctx, pdnn_device **out, int max);

/* A context and its accelerators (at most 8); skips the test when there
 * are none, as on a machine without OpenCL or CUDA devices. */
pdnn_context *th_accel_context(pdnn_device **devs, int *ndev);

/* The same, for a context created with opts. */
pdnn_context *th_accel_context_opts(const pdnn_context_options *opts, pdnn_device **devs, int *ndev);
/* The first device of ctx whose backend is named backend, or NULL. */
pdnn_device *th_find_backend(pdnn_context *ctx, const char *backend);

/* Whether dev's backend has convolution algorithm algo (asked on a small
 * valid shape). */
bool th_has_algo(pdnn_device *dev, pdnn_conv_algo algo);

/* The same as th_accel_context, keeping only the accelerators whose
 * backend has convolution algorithm algo (the OpenCL kernels are not
 * CUDA's); skips the test when none has it. */
pdnn_context *th_accel_context_with(pdnn_conv_algo algo, pdnn_device **devs, int *ndev);

/* Deterministic uniform values in [-1, 1) (xorshift32). */
void th_fill(float *v, int64_t n, uint32_t seed);

/* Converts between a layout's memory order and logical row-major order
 * ({N,C,H,W} or {O,I,H,W}), independently of the library's code. */
void th_to_layout(const float *logical, float *out, pdnn_layout l, const int64_t d[4]);
void th_from_layout(const float *in, float *logical, pdnn_layout l, const int64_t d[4]);

pdnn_tensor_desc th_desc(pdnn_layout l, int64_t d0, int64_t d1, int64_t d2, int64_t d3);

#endif
