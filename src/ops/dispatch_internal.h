/* What the dispatcher's files (src/ops/: dispatch.c, algo_ids.c,
 * op_key.c, plan.c, config_search.c, choose.c, run.c) share and the rest
 * of the library does not use; the interface is dispatch.h. */
#ifndef POLYDNN_DISPATCH_INTERNAL_H
#define POLYDNN_DISPATCH_INTERNAL_H

#include "ops/dispatch.h"

#include <stddef.h>

/* Plans AUTO weighs per call: at most MAX_PLANS, on the stack up to
 * LOCAL_PLANS. */
enum { MAX_PLANS = 32, LOCAL_PLANS = 12 };

/* Names of dev's algorithms for op as "a, b, c", for messages
 * (algo_ids.c). */
const char *pdnn__algo_list(const pdnn_device *dev, pdnn__op op, char *buf, size_t len);

/* The error of a call that wants an algorithm named name that dev's
 * backend has no entry of for op (algo_ids.c). */
pdnn_status pdnn__algo_unavailable(const pdnn_device *dev, pdnn__op op, const char *name);

/* The call's output buffer and its element count (op_key.c). */
pdnn__buf pdnn__out_buf(const pdnn__op_call *call, size_t *n);
/* The N-d math ops' key (into key, unless NULL), elements touched (flops)
 * and output (out, n) (ops_nd_math.c); 0 for the other ops. */
int pdnn__nd_math_describe(const pdnn__op_call *call, char *key, size_t len, double *flops, pdnn__buf *out,
                           size_t *n);
/* The same for the N-d ops' backward ops (ops_nd_grad.c). */
int pdnn__nd_grad_describe(const pdnn__op_call *call, char *key, size_t len, double *flops, pdnn__buf *out,
                           size_t *n);

/* Largest |got - ref| and largest |ref| over n floats (op_key.c). */
void pdnn__compare_outputs(const float *ref, const float *got, size_t n, float *worst, float *scale);

/* The algorithm name pdnn__dispatch_force set for the calling thread's
 * calls of op, or NULL (plan.c). */
const char *pdnn__forced_name(pdnn__op op);

/* Runs plan with its workspace from dev's allocator, returned as soon as
 * the work is queued (the queue is in order, so the next user of that
 * memory runs after it). A workspace that does not fit is the
 * allocator's out-of-memory error (run.c). */
pdnn_status pdnn__run_planned(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *plan,
                              const pdnn__op_call *call, pdnn__run_report *rep);

/* Fills res (may be NULL) after a successful run of a with plan (run.c). */
void pdnn__report_result(pdnn__dispatch_result *res, const pdnn__algo *a, const pdnn__plan *plan,
                         const pdnn__run_report *rep);

/* AUTO's stored or (when tuning may search) measured choice among the n
 * plans of list: its index in plans, or -1 when the fixed order should
 * decide (choose.c). */
int pdnn__measured_choice(pdnn_device *dev, const pdnn__algo *const *list, pdnn__plan *plans, int n,
                          const pdnn__op_call *call, int *searched, double *seconds);

/* Whether a runs call only in part: a residual z or a capped relu that
 * its epilogue lacks, added by run.c's unfused passes (float32 only: in
 * float16 and bfloat16 they would round the output twice, so plan.c
 * refuses such an algorithm there). */
static inline int pdnn__needs_unfused(const pdnn__algo *a, const pdnn__op_call *call)
{
    if (call->op != PDNN__OP_CONV2D_FWD)
        return 0;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    return (c->z_buf.region && !a->residual) || (c->relu_cap > 0.0f && !a->relu_cap);
}

#endif
