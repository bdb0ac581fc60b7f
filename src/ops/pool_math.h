/*
 * Per-axis arithmetic of PyTorch-style pooling, for backends that build a
 * pooling the vendor library cannot express (asymmetric padding, ceil mode,
 * the clipped include-padding divisor) from an explicitly padded copy and
 * an unpadded vendor pooling, and for the tests that check that
 * decomposition against the host reference on machines without the
 * vendor's device.
 *
 * The decomposition: copy the input into a buffer of padded_length rows
 * (columns) with the image at pad_a and the fill value (-inf for max, 0 for
 * averages) elsewhere; pool that with no padding, floor mode and, for
 * averages, the full window as divisor; multiply each average by
 * avg_scale, which swaps the full-window divisor for the call's own.
 */
#ifndef POLYDNN_POOL_MATH_H
#define POLYDNN_POOL_MATH_H

#include "backend.h"

#include <stdint.h>

/* One spatial axis of a validated pooling: input and output lengths,
 * window, stride, leading and trailing padding. */
typedef struct pdnn__pool_axis {
    int64_t in, out;
    int win, stride, pad_a, pad_b;
} pdnn__pool_axis;

/* The height and width axes of call c. */
void pdnn__pool_axes(const pdnn__pool2d_call *c, pdnn__pool_axis *h, pdnn__pool_axis *w);

/* How many positions of output o's window the divisor counts on this
 * axis: for AVG_INCLUDE_PADDING the window clipped at the end of the
 * trailing padding (PyTorch), otherwise only its in-image part. At least 1
 * for a validated call (every window sees the image). */
int64_t pdnn__pool_divisor_extent(const pdnn__pool_axis *a, pdnn_pool_mode mode, int64_t o);

/* Length of the explicitly padded axis: (out - 1) * stride + win, so that
 * an unpadded floor-mode pooling of it gives exactly out windows. The
 * image starts at pad_a; *copied (if not NULL) is how many of its leading
 * elements fit, the rest being read by no window. */
int64_t pdnn__pool_padded_length(const pdnn__pool_axis *a, int64_t *copied);

/* scale[p * w->out + q] = h->win * w->win / (extent_h(p) * extent_w(q)),
 * the factor that turns a full-window average into the average mode
 * asks for. scale holds h->out * w->out floats. */
void pdnn__pool_avg_scale(const pdnn__pool_axis *h, const pdnn__pool_axis *w, pdnn_pool_mode mode,
                          float *scale);

#endif /* POLYDNN_POOL_MATH_H */
