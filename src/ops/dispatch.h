/* Core's side of the algorithm registries: choosing an algorithm for an
 * op call on a device and running it with a workspace from the device's
 * allocator (dispatch.c, with algo_ids.c, plan.c, choose.c and run.c;
 * what they share is dispatch_internal.h). Used by ops.c, graph sessions,
 * the CLI's white-box helpers and the tests. */
#ifndef POLYDNN_DISPATCH_H
#define POLYDNN_DISPATCH_H

#include "core/context.h"

/* dev's backend's algorithms for op (NULL-terminated; an empty list when
 * the backend has none). */
const pdnn__algo *const *pdnn__algos(const pdnn_device *dev, pdnn__op op);

/* The entry of dev's backend named name for op (any case), or NULL. By
 * name: for the test hook and the tests; calls go by id. */
const pdnn__algo *pdnn__algo_find(const pdnn_device *dev, pdnn__op op, const char *name);

/* Public algorithm ids: conv2d forward's are pdnn_conv_algo, backward
 * data's and filter's the direction's (pdnn_conv_bwd_algo_*); no other op
 * has any. The entry of dev's backend that runs id, resolved by index
 * (built once from the names); NULL for 0 (AUTO), an unknown id or one
 * dev's backend lacks. */
const pdnn__algo *pdnn__algo_by_id(const pdnn_device *dev, pdnn__op op, int id);
/* The same for a call: *out NULL for AUTO; an id dev's backend lacks is
 * PDNN_ERR_UNSUPPORTED naming the algorithms it has. */
pdnn_status pdnn__algo_for_id(const pdnn_device *dev, pdnn__op op, int id, const pdnn__algo **out);
/* Whether id is one of op's public ids in this build (0, AUTO, included). */
int pdnn__algo_id_known(pdnn__op op, int id);
/* The public id of op's entry a (of any backend), or -1. */
int pdnn__algo_id(pdnn__op op, const pdnn__algo *a);

/* Fills the fields core owns in call (tuning mode, device key, forced
 * configuration) for a call on dev. */
void pdnn__call_prepare(pdnn_device *dev, pdnn__op_call *call);

/* Plans algo for call (prepared) on dev: zeroes plan, sets config = -1
 * and rank, then asks the backend. */
void pdnn__plan_for(pdnn_device *dev, const pdnn__algo *algo, const pdnn__op_call *call, pdnn__plan *plan);

/* The same where only the verdict is wanted (AUTO's candidates, planned
 * on every call): refusals and skips are not worded (plan.why stays
 * empty); every other field is as pdnn__plan_for leaves it. Wording them
 * was a tenth of the host's time per node in a batch-1 network; the rare
 * caller that reports why plans again with pdnn__plan_for. */
void pdnn__plan_verdict(pdnn_device *dev, const pdnn__algo *algo, const pdnn__op_call *call, pdnn__plan *plan);

/* What a dispatched call ran. */
typedef struct pdnn__dispatch_result {
    const pdnn__algo *algo;
    pdnn_conv2d_tuning tuning;  /* as pdnn_conv2d_last_tuning reports it */
} pdnn__dispatch_result;

/* Runs call (its op and u filled, the rest prepared here) on dev with the
 * algorithm want (an entry of dev's backend for call's op, as
 * pdnn__algo_for_id resolves a public id), or AUTO's choice when want is
 * NULL: applicable and its workspace fits in what the allocator can give,
 * then the tuning cache's measured choice (searched now under
 * SEARCH/FORCE), else the lowest rank. A wanted algorithm that does not
 * apply fails with PDNN_ERR_UNSUPPORTED and the backend's reason. res may
 * be NULL. */
pdnn_status pdnn__dispatch(pdnn_device *dev, pdnn__op_call *call, const pdnn__algo *want, pdnn__dispatch_result *res);

/* Test hook: the calling thread's next calls of op run the algorithm
 * named name (where it applies; as if asked for by name) with
 * configuration config (>= 0, where it applies; -1: the algorithm's own
 * pick). name NULL clears. */
void pdnn__dispatch_force(pdnn__op op, const char *name, int config);

/* The conv2d algorithm names of every compiled-in backend, indexed by
 * pdnn_conv_algo (index 0 is "auto"); *n their count. */
const char *const *pdnn__conv_algo_names(int *n);

/* An op's name in messages and tuning keys: "conv2d", "pool2d",
 * "conv2d_bwd_data", ... */
const char *pdnn__op_name(pdnn__op op);

/* ops.c's helpers, shared with the backward ops (ops_grad.c). */
/* Every non-NULL tensor of ts is on ts[0]'s device, and all are of one
 * float dtype (pdnn__one_dtype); else an error naming op and the tensors
 * (names[i]). */
pdnn_status pdnn__same_device(const char *op, const pdnn_tensor *const *ts, const char *const *names, int n);
/* The error for tensors a and b (named an, bn) on two devices, naming the
 * contexts when they differ. */
pdnn_status pdnn__device_mismatch(const char *op, const char *an, const pdnn_tensor *a, const char *bn,
                                  const pdnn_tensor *b);
/* y is an activation with dims want; else an error naming op and y's
 * role (name: "output", "dy", ...). */
pdnn_status pdnn__check_output(const char *op, const char *name, const pdnn_tensor *y, const int64_t want[4]);
/* The sizes, layouts and strides of a conv2d call from validated
 * descriptors and the output dims od (buffers are the caller's). */
void pdnn__conv_call_from(const pdnn_conv2d_params *p, const pdnn_tensor_desc *x, const pdnn_tensor_desc *w,
                          pdnn_layout y_layout, const int64_t od[4], pdnn__conv2d_call *c);
/* The same for a pool2d call (zeroes c first). */
void pdnn__pool_call_from(const pdnn_pool2d_params *p, const pdnn_tensor_desc *x, pdnn_layout y_layout,
                          const int64_t od[4], pdnn__pool2d_call *c);

/* Whether y may hold x reduced over the axes in mask (pdnn_reduce's rule;
 * the graph's node checks it too). */
int pdnn__reduce_shape_ok(const pdnn_tensor_desc *x, unsigned mask, const pdnn_tensor_desc *y);

/* ops_nn.c: ts[0..n) non-NULL (names[i] in messages), on one device,
 * float32. */
pdnn_status pdnn__ops_need(const char *op, const pdnn_tensor *const *ts, const char *const *names, int n);

/* ops_index.c: how many elements x[b:e:s] takes of an axis of d (ONNX's
 * Slice: negative b and e from the end, clamped), and the first in *first. */
int64_t pdnn__slice_axis(int64_t d, int64_t b, int64_t e, int64_t s, int64_t *first);
/* ops_nd_grad.c: layer norm's backward (the graph's LayerNormalizationGrad
 * node): x and dy of one desc, normalized over the dims from axis on (x's
 * layout storing them in order), scale one element per element of a
 * normalized row; which 0: y = dx (x's element count), 1: y = dscale, 2:
 * y = dbias (scale's). */
pdnn_status pdnn__layer_norm_backward(const pdnn_tensor *x, const pdnn_tensor *dy, const pdnn_tensor *scale,
                                      int axis, float epsilon, int which, pdnn_tensor *y);
/* ops_index.c: pdnn_resize along one axis (in -> out, scale s) as an
 * {out, in} matrix m: y[i] = sum_j m[i in + j] x[j] (the graph's resize
 * gradient multiplies dy by its transpose). */
void pdnn__resize_matrix(pdnn_resize_mode mode, pdnn_resize_coord coord, pdnn_resize_nearest how, int64_t in,
                         int64_t out, float s, float *m);

/* float16 and bfloat16 (ops_cast.c). The non-NULL tensors of ts share one
 * float dtype (float32, float16 or bfloat16): else an error naming op,
 * the first tensor and the one that differs with both dtypes, or the one
 * that is not a float dtype (int32). The op's call then carries that
 * dtype (pdnn__op_call.dtype), and dispatch runs only algorithms that take
 * it. */
pdnn_status pdnn__one_dtype(const char *op, const pdnn_tensor *const *ts, const char *const *names, int n);

#endif
