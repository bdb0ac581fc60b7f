/* Running one planned algorithm: its workspace from the device's
 * allocator, a frozen filter's packed copy, and the unfused path for a
 * residual or relu cap the algorithm's epilogue lacks. */
#include "ops/dispatch_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* A convolution whose residual z or relu cap a's epilogue lacks: the
 * convolution (bias, and z where a adds it; no relu), then y += z where
 * it did not, then the relu or the clip to [0, cap], each a pass over y
 * (the unfused path; the choice of algorithm is unchanged). */
static pdnn_status run_unfused(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *planned,
                               const pdnn__op_call *call, pdnn__run_report *rep)
{
    memset(rep, 0, sizeof *rep);
    const pdnn__conv2d_call *orig = &call->u.conv2d;
    pdnn__op_call c2 = *call;
    pdnn__conv2d_call *c = &c2.u.conv2d;
    const int add_z = orig->z_buf.region && !a->residual;
    if (add_z)
        c->z_buf = (pdnn__buf){NULL, 0};
    c->relu = 0;
    c->relu_cap = 0.0f;
    if ((add_z && !dev->backend->add) || (orig->relu && orig->relu_cap <= 0.0f && !dev->backend->relu))
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "conv2d: the %s backend has neither the residual or capped relu "
                                                 "epilogue in %s nor the add and relu to run it unfused",
                           dev->backend->name, a->name);
    /* An algorithm without an epilogue ignores z and the cap, so the plan
     * made for the call stands; only a relu (which it would apply before
     * the add, or without the cap) needs a plan without it. */
    pdnn__plan plan;
    if (orig->relu) {
        pdnn__plan_for(dev, a, &c2, &plan);
        if (!plan.supported)
            return pdnn__error(PDNN_ERR_UNSUPPORTED, "conv2d: %s: %s", a->name, plan.why);
        planned = &plan;
    }
    pdnn_status st = pdnn__run_planned(dev, a, planned, &c2, rep);
    const int64_t n = c->n * c->k * c->p * c->q;
    if (st == PDNN_SUCCESS && add_z)
        st = dev->backend->add(dev->handle, c->y_buf, orig->z_buf, c->y_buf, n);
    if (st == PDNN_SUCCESS && orig->relu && orig->relu_cap > 0.0f) {
        pdnn__op_call act;
        memset(&act, 0, sizeof act);
        act.op = PDNN__OP_ACTIVATION;
        act.u.act = (pdnn__act_call){n, PDNN_ACTIVATION_CLIP, 0.0f, orig->relu_cap, c->y_buf, c->y_buf};
        st = pdnn__dispatch(dev, &act, NULL, NULL);
    } else if (st == PDNN_SUCCESS && orig->relu) {
        st = dev->backend->relu(dev->handle, c->y_buf, c->y_buf, n);
    }
    return st;
}

static pdnn_status run_ws(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *plan, const pdnn__op_call *call,
                          pdnn__run_report *rep);

/* A plan that keeps a packed filter on its frozen tensor (wpack > 0):
 * the tensor's copy when a made it for the same configuration, else a new
 * one the run packs into. The tensor's lock is held through the run, so
 * that no other call reads a copy still being made or evicts it. Where
 * the copy does not fit in the device's free memory, the call runs as if
 * the filter were not frozen (packing into its workspace, for which other
 * tensors' copies give way). */
static pdnn_status run_packed(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *plan,
                              const pdnn__op_call *call, pdnn__run_report *rep)
{
    pdnn_tensor *t = call->u.conv2d.w_const;
    pthread_mutex_lock(&t->pack_lock);
    pdnn__tensor_pack *pk = &t->pack;
    if (pk->owner != a || pk->config != plan->config || pk->bytes != plan->wpack) {
        pdnn__tensor_pack_drop(t);
        if (pdnn__tensor_pack_alloc(t, a, plan->config, plan->wpack) != PDNN_SUCCESS) {
            pthread_mutex_unlock(&t->pack_lock);
            pdnn__debug("conv2d on %s: %s's packed filter does not fit (%s); packing it for this call only",
                        dev->name, a->name, pdnn_last_error());
            pdnn__op_call c2 = *call;
            c2.u.conv2d.w_const = NULL;
            pdnn__plan p2;
            pdnn__plan_for(dev, a, &c2, &p2);
            if (!p2.supported)
                return pdnn__error(PDNN_ERR_UNSUPPORTED, "conv2d: %s: %s", a->name, p2.why);
            return run_ws(dev, a, &p2, &c2, rep);
        }
    }
    pdnn__op_call c2 = *call;
    c2.u.conv2d.wpack = pk->block.buf;
    c2.u.conv2d.wpack_fill = !pk->filled;
    const pdnn_status st = run_ws(dev, a, plan, &c2, rep);
    if (st == PDNN_SUCCESS)
        pk->filled = 1;
    else if (!pk->filled)
        pdnn__tensor_pack_drop(t);
    pthread_mutex_unlock(&t->pack_lock);
    return st;
}

pdnn_status pdnn__run_planned(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *plan, const pdnn__op_call *call,
                              pdnn__run_report *rep)
{
    if (pdnn__needs_unfused(a, call))
        return run_unfused(dev, a, plan, call, rep);
    if (plan->wpack > 0 && call->op == PDNN__OP_CONV2D_FWD && call->u.conv2d.w_const)
        return run_packed(dev, a, plan, call, rep);
    return run_ws(dev, a, plan, call, rep);
}

static pdnn_status run_ws(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *plan, const pdnn__op_call *call,
                          pdnn__run_report *rep)
{
    pdnn__bfc_block block;
    memset(&block, 0, sizeof block);
    pdnn__buf ws = {NULL, 0};
    if (plan->workspace > 0) {
        char label[48];
        snprintf(label, sizeof label, "%s workspace", pdnn__op_name(call->op));
        pdnn_status st = pdnn__device_alloc(dev, plan->workspace, label, &block);
        if (st != PDNN_SUCCESS)
            return st;
        ws = block.buf;
    }
    memset(rep, 0, sizeof *rep);
    rep->config = plan->config;
    snprintf(rep->config_name, sizeof rep->config_name, "%s", plan->config_name);
    int native = 1;
    pdnn__algo_takes_dtype(dev->backend, a, call, &native); /* plan checked that it does */
    pdnn_status st = native ? a->run(dev->handle, call, plan, ws, rep)
                            : dev->backend->run_reduced(dev->handle, a, call, plan, ws, rep);
    if (plan->workspace > 0)
        pdnn__bfc_free(dev->alloc, block.handle);
    return st;
}

void pdnn__report_result(pdnn__dispatch_result *res, const pdnn__algo *a, const pdnn__plan *plan,
                         const pdnn__run_report *rep)
{
    if (!res)
        return;
    memset(res, 0, sizeof *res);
    res->algo = a;
    pdnn_conv2d_tuning *t = &res->tuning;
    t->tunable = plan->config >= 0;
    t->cached = plan->cached && !rep->searched;
    t->searched = rep->searched;
    t->search_seconds = rep->search_seconds;
    snprintf(t->config, sizeof t->config, "%s", rep->config_name);
}

