/* Core's side of the algorithm registries: which algorithm runs an op
 * call. A named algorithm runs or fails; AUTO takes the tuning cache's
 * measured choice (choose.c), else the fixed order by rank among those
 * that apply and whose workspace the allocator gives (run.c). Backends
 * say what they can do (plan) and do it (run); they never choose among
 * algorithms. The rest of core's side: names and ids (algo_ids.c), keys
 * and sizes (op_key.c), planning (plan.c), configuration search
 * (config_search.c). */
#include "ops/dispatch_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Runs the entry a (dev's, for call's op) or fails. */
static pdnn_status run_entry(pdnn_device *dev, pdnn__op_call *call, const pdnn__algo *a, pdnn__dispatch_result *res)
{
    pdnn__plan plan;
    pdnn__plan_for(dev, a, call, &plan);
    if (!plan.supported)
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "%s: algorithm %s does not run this %s on %s (%s backend): %s; use PDNN_CONV_ALGO_AUTO",
                           pdnn__op_name(call->op), a->name, pdnn__op_name(call->op), dev->name, dev->backend->name, plan.why);
    pdnn__run_report rep;
    pdnn_status st = pdnn__run_planned(dev, a, &plan, call, &rep);
    if (st == PDNN_SUCCESS)
        pdnn__report_result(res, a, &plan, &rep);
    return st;
}

/* AUTO's fixed order takes the plans in three passes: those within the
 * call's workspace limit, then those over it, then those it passes over. */
static int auto_pass(const pdnn__op_call *call, const pdnn__plan *p)
{
    if (p->auto_skip)
        return 2;
    return call->ws_limit > 0 && p->workspace > call->ws_limit;
}

static void drop_plans(pdnn__plan *plans, pdnn__plan *local)
{
    if (plans != local)
        free(plans);
}

pdnn_status pdnn__dispatch(pdnn_device *dev, pdnn__op_call *call, const pdnn__algo *want, pdnn__dispatch_result *res)
{
    pdnn__call_prepare(dev, call);
    const pdnn__algo *const *list = pdnn__algos(dev, call->op);
    if (!list[0])
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s: the %s backend of %s has no %s kernel", pdnn__op_name(call->op),
                           dev->backend->name, dev->name, pdnn__op_name(call->op));
    /* The test hook's name replaces the caller's choice: the one place
     * where an algorithm is still looked up by name. */
    const char *forced = pdnn__forced_name(call->op);
    if (forced) {
        want = NULL;
        if (*forced && strcasecmp(forced, "auto") != 0 && !(want = pdnn__algo_find(dev, call->op, forced)))
            return pdnn__algo_unavailable(dev, call->op, forced);
    }
    if (want)
        return run_entry(dev, call, want, res);

    int n = 0;
    while (list[n] && n < MAX_PLANS)
        n++;
    /* On the stack where the list is short (every backend's today): a
     * malloc per call contended for the arena with the backend's threads. */
    pdnn__plan local[LOCAL_PLANS];
    pdnn__plan *plans = n <= LOCAL_PLANS ? local : malloc((size_t)n * sizeof *plans);
    if (!plans)
        return pdnn__host_oom(pdnn__op_name(call->op), "the plans of its algorithms", (size_t)n * sizeof *plans);
    for (int i = 0; i < n; i++)
        pdnn__plan_verdict(dev, list[i], call, &plans[i]);

    pdnn_status st = PDNN_ERR_UNSUPPORTED;
    pdnn__run_report rep;
    if (call->tuning != PDNN_TUNING_OFF) {
        int searched = 0;
        double seconds = 0.0;
        int m = pdnn__measured_choice(dev, list, plans, n, call, &searched, &seconds);
        if (m >= 0 && auto_pass(call, &plans[m]) == 1)
            for (int i = 0; i < n; i++)
                if (plans[i].supported && auto_pass(call, &plans[i]) == 0) {
                    pdnn__debug("%s on %s: the measured choice %s needs more workspace than the call's limit; "
                                "using the fixed order",
                                pdnn__op_name(call->op), dev->name, list[m]->name);
                    m = -1;
                    break;
                }
        if (m >= 0) {
            st = pdnn__run_planned(dev, list[m], &plans[m], call, &rep);
            if (st == PDNN_SUCCESS) {
                pdnn__report_result(res, list[m], &plans[m], &rep);
                if (res) {
                    /* The choice is a tuning result too: report it as one. */
                    res->tuning.tunable = 1;
                    res->tuning.algo_measured = 1;
                    res->tuning.algo_searched = searched;
                    if (searched) {
                        res->tuning.searched = 1;
                        res->tuning.cached = 0;
                        res->tuning.search_seconds = seconds;
                    } else if (!res->tuning.searched) {
                        res->tuning.cached = 1;
                    }
                }
                drop_plans(plans, local);
                return st;
            }
            pdnn__debug("%s on %s: the measured choice %s does not run now (%s); using the fixed order",
                        pdnn__op_name(call->op), dev->name, list[m]->name, pdnn_last_error());
        }
    }
    /* The fixed order: lowest rank first among those within the workspace
     * limit, then those over it, then (nothing fitting) the passed-over
     * ones; the first whose workspace the allocator gives runs. */
    char why[512] = "";
    int fitted_none = 0;
    for (int pass = 0; pass < 3; pass++) {
        int done[MAX_PLANS] = {0};
        for (;;) {
            int pick = -1;
            for (int i = 0; i < n; i++)
                if (!done[i] && plans[i].supported && auto_pass(call, &plans[i]) == pass &&
                    (pick < 0 || plans[i].rank < plans[pick].rank))
                    pick = i;
            if (pick < 0)
                break;
            done[pick] = 1;
            st = pdnn__run_planned(dev, list[pick], &plans[pick], call, &rep);
            if (st == PDNN_SUCCESS) {
                pdnn__report_result(res, list[pick], &plans[pick], &rep);
                drop_plans(plans, local);
                return st;
            }
            if (st != PDNN_ERR_OUT_OF_MEMORY) {
                drop_plans(plans, local);
                return st;
            }
            fitted_none = 1;
            snprintf(why, sizeof why, "%s", pdnn_last_error());
            char b[32];
            pdnn__debug("%s on %s: %s needs %s of workspace, which does not fit (%s); trying the next algorithm",
                        pdnn__op_name(call->op), dev->name, list[pick]->name,
                        pdnn__format_bytes(plans[pick].workspace, b, sizeof b), why);
        }
    }
    if (fitted_none) {
        drop_plans(plans, local);
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY,
                           "%s on %s: no algorithm's workspace fits in the device's free memory; the last: %s",
                           pdnn__op_name(call->op), dev->name, why);
    }
    size_t used = 0;
    why[0] = '\0';
    for (int i = 0; i < n && used < sizeof why; i++) {
        pdnn__plan_for(dev, list[i], call, &plans[i]); /* worded, this time */
        int w = snprintf(why + used, sizeof why - used, "%s%s: %s", i ? "; " : "", list[i]->name, plans[i].why);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    drop_plans(plans, local);
    return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s: no algorithm of the %s backend runs this %s on %s (%s)",
                       pdnn__op_name(call->op), dev->backend->name, pdnn__op_name(call->op), dev->name, why);
}
