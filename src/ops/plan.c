/* Planning an algorithm for a call: the fields core fills in the call
 * (and the test hook that forces an algorithm and configuration), the
 * plan helpers the backends' plans use, and the pick of a tunable
 * algorithm's configuration. */
#include "ops/dispatch_internal.h"
#include "ops/tuning.h"
#include "core/half.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local struct {
    int active;
    pdnn__op op;
    char name[32];
    int config;
} forced;

void pdnn__dispatch_force(pdnn__op op, const char *name, int config)
{
    forced.active = name != NULL;
    forced.op = op;
    snprintf(forced.name, sizeof forced.name, "%s", name ? name : "");
    forced.config = config;
}

const char *pdnn__forced_name(pdnn__op op)
{
    return forced.active && forced.op == op ? forced.name : NULL;
}

void pdnn__call_prepare(pdnn_device *dev, pdnn__op_call *call)
{
    call->tuning = dev->ctx->opts.tuning;
    call->device_key = dev->tune_key;
    call->force_config = forced.active && forced.op == call->op ? forced.config : -1;
    call->allow_tf32 = dev->ctx->opts.enable_tensor_float_32_execution;
}

/* Refuses algo for call's dtype: "op: the B backend's 'A' algorithm has
 * no float16 <what><why> (it takes float32, ...)". Written here with
 * snprintf rather than through pdnn__plan_refuse. */
static void refuse_dtype(const pdnn_device *dev, const pdnn__algo *algo, const pdnn__op_call *call, pdnn__plan *plan,
                         const char *what, const char *why)
{
    plan->supported = 0;
    if (plan->verdict_only)
        return;
    const unsigned mask = algo->dtypes ? algo->dtypes : PDNN__DTYPE_BIT(PDNN_FLOAT32);
    char takes[64] = "";
    size_t at = 0;
    for (int t = PDNN_FLOAT32; t <= PDNN_INT32 && at < sizeof takes; t++)
        if (mask & PDNN__DTYPE_BIT(t))
            at += (size_t)snprintf(takes + at, sizeof takes - at, "%s%s", at ? ", " : "",
                                   pdnn__dtype_name((pdnn_dtype)t));
    snprintf(plan->why, sizeof plan->why, "%s: the %s backend's '%s' algorithm has no %s %s%s (it takes %s)",
             pdnn__op_name(call->op), dev->backend->name, algo->name, pdnn__dtype_name(call->dtype), what, why, takes);
}

static void plan_with(pdnn_device *dev, const pdnn__algo *algo, const pdnn__op_call *call, pdnn__plan *plan,
                      int verdict_only)
{
    memset(plan, 0, sizeof *plan);
    plan->supported = 1;
    plan->config = -1;
    plan->rank = algo->rank;
    plan->verdict_only = verdict_only;
    /* The one place an algorithm's dtypes are checked: nothing runs in a
     * dtype it has no path for. */
    int native;
    if (!pdnn__algo_takes_dtype(dev->backend, algo, call, &native)) {
        refuse_dtype(dev, algo, call, plan, "path", "");
        return;
    }
    if (call->dtype != PDNN_FLOAT32 && pdnn__needs_unfused(algo, call)) {
        refuse_dtype(dev, algo, call, plan,
                     call->u.conv2d.z_buf.region && !algo->residual ? "residual epilogue" : "capped relu epilogue",
                     " (a pass after it would round the output twice)");
        return;
    }
    if (!native && call->op == PDNN__OP_CONV2D_FWD && call->u.conv2d.w_const) {
        /* Through run_reduced the algorithm sees a float32 copy of the
         * filter, never the frozen tensor: no packed copy kept on it, so
         * the workspace must hold the packing. */
        pdnn__op_call c2 = *call;
        c2.u.conv2d.w_const = NULL;
        algo->plan(dev->handle, &c2, plan);
        return;
    }
    algo->plan(dev->handle, call, plan);
}

void pdnn__plan_for(pdnn_device *dev, const pdnn__algo *algo, const pdnn__op_call *call, pdnn__plan *plan)
{
    plan_with(dev, algo, call, plan, 0);
}

void pdnn__plan_verdict(pdnn_device *dev, const pdnn__algo *algo, const pdnn__op_call *call, pdnn__plan *plan)
{
    plan_with(dev, algo, call, plan, 1);
}

/* plan->why = the text, unless only the verdict is wanted. */
static void word_why(pdnn__plan *plan, const char *fmt, va_list ap)
{
    if (!plan->verdict_only)
        vsnprintf(plan->why, sizeof plan->why, fmt, ap);
}

void pdnn__plan_refuse(pdnn__plan *plan, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    word_why(plan, fmt, ap);
    va_end(ap);
    plan->supported = 0;
}

void pdnn__plan_skip(pdnn__plan *plan, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    word_why(plan, fmt, ap);
    va_end(ap);
    plan->auto_skip = 1;
}

/* ---- configurations of one algorithm -------------------------------------- */

int pdnn__plan_pick_config(void *dev, const pdnn__op_call *call, const pdnn__algo *algo, const char *kernel,
                           int (*applies)(void *dev, const pdnn__op_call *call, int i), int dflt, pdnn__plan *plan)
{
    int pick = dflt;
    plan->search = 0;
    plan->cached = 0;
    const int f = call->force_config;
    if (f >= 0 && f < algo->n_configs && applies(dev, call, f)) {
        pick = f;
    } else if (dflt >= 0 && call->tuning != PDNN_TUNING_OFF) {
        char shape[512], value[64], name[64];
        pdnn__op_key(call, shape, sizeof shape);
        if (pdnn__tuning_lookup_for(call->tuning, call->device_key, kernel, shape, value, sizeof value)) {
            int found = -1;
            for (int i = 0; i < algo->n_configs && found < 0; i++) {
                algo->config_name(i, name, sizeof name);
                if (strcmp(name, value) == 0 && applies(dev, call, i))
                    found = i;
            }
            if (found >= 0) {
                pick = found;
                plan->cached = 1;
            } else {
                pdnn__debug("tuning cache: ignoring '%s' for %s %s: not a configuration this build offers for the "
                            "shape",
                            value, kernel, shape);
            }
        } else {
            plan->search = call->tuning == PDNN_TUNING_SEARCH || call->tuning == PDNN_TUNING_FORCE;
        }
    }
    plan->config = pick;
    plan->config_name[0] = '\0';
    if (pick >= 0)
        algo->config_name(pick, plan->config_name, sizeof plan->config_name);
    return pick;
}
