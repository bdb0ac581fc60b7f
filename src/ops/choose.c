/* AUTO's measured choice: the tuning cache's algorithm for the shape,
 * or (when the context may search) the find that runs, checks and times
 * every candidate and stores the fastest. */
#include "ops/dispatch_internal.h"
#include "ops/tuning.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double run_once_timed(pdnn_device *dev, const pdnn__algo *a, const pdnn__plan *plan, const pdnn__op_call *call)
{
    pdnn__run_report rep;
    const double t0 = pdnn__now();
    if (pdnn__run_planned(dev, a, plan, call, &rep) != PDNN_SUCCESS)
        return -1.0;
    if (dev->backend->synchronize && dev->backend->synchronize(dev->handle) != PDNN_SUCCESS)
        return -1.0;
    return pdnn__now() - t0;
}


/* Like cudnnFind and MIOpen's find-db: runs every supported algorithm
 * once, checks each against the reference (the supported one ranked
 * last: the plainest, which the parity harness checks most widely),
 * times the survivors and stores the fastest under (device, "<op>_algo",
 * shape). Returns its index in plans, or -1. The check is a gross-error
 * one, from the two entries' tolerances (backend.h, pdnn__tolerance). */
static int find_search(pdnn_device *dev, const pdnn__algo *const *list, pdnn__plan *plans, int n,
                       const pdnn__op_call *call, const char *kernel, const char *shape)
{
    int refi = -1;
    if (call->dtype != PDNN_FLOAT32) /* the comparison below reads float32: the rank order decides */
        return -1;
    for (int i = 0; i < n; i++)
        if (plans[i].supported && !pdnn__gpu_class_passed_over(list[i], &plans[i]) &&
            (refi < 0 || plans[i].rank > plans[refi].rank))
            refi = i;
    if (refi < 0)
        return -1;
    size_t ny = 0;
    const pdnn__buf y = pdnn__out_buf(call, &ny);
    float *ref = malloc(ny * sizeof *ref), *got = malloc(ny * sizeof *got);
    int best = -1;
    double best_t = -1.0;
    const double t_start = pdnn__now();
    if (ref && got && run_once_timed(dev, list[refi], &plans[refi], call) >= 0.0 &&
        dev->backend->read(dev->handle, y, ref, ny * sizeof *ref) == PDNN_SUCCESS) {
        for (int i = 0; i < n; i++) {
            if (!plans[i].supported || i == refi || pdnn__gpu_class_passed_over(list[i], &plans[i]))
                continue;
            /* The first run builds programs and may tune the kernel's own
             * configuration; it is checked, not timed. */
            if (run_once_timed(dev, list[i], &plans[i], call) < 0.0 ||
                dev->backend->read(dev->handle, y, got, ny * sizeof *got) != PDNN_SUCCESS)
                continue;
            /* That run searched the algorithm's configurations and stored
             * the winner: plan again, so the timed runs use it instead of
             * searching each time. */
            if (plans[i].search)
                pdnn__plan_for(dev, list[i], call, &plans[i]);
            float worst, scale;
            pdnn__compare_outputs(ref, got, ny, &worst, &scale);
            const float tol = (float)(PDNN__TOL_FIND_FACTOR * fmax(pdnn__algo_tol(list[i], PDNN_FLOAT32),
                                                                   pdnn__algo_tol(list[refi], PDNN_FLOAT32)));
            if (!(worst <= tol * (1.0f + scale))) {
                pdnn__debug("%s find on %s: %s differs from %s by %g (largest output %g); rejected", pdnn__op_name(call->op),
                            dev->name, list[i]->name, list[refi]->name, (double)worst, (double)scale);
                continue;
            }
            double t = -1.0;
            for (int r = 0; r < 3; r++) {
                const double tr = run_once_timed(dev, list[i], &plans[i], call);
                if (tr >= 0.0 && (t < 0.0 || tr < t))
                    t = tr;
            }
            pdnn__debug("%s find on %s: %s %.3f ms", pdnn__op_name(call->op), dev->name, list[i]->name, t * 1e3);
            if (t > 0.0 && (best_t < 0.0 || t < best_t)) {
                best_t = t;
                best = i;
            }
        }
    }
    free(ref);
    free(got);
    if (best >= 0) {
        if (pdnn__tuning_store(call->device_key, kernel, shape, list[best]->name,
                               pdnn__op_flops(call) / best_t * 1e-9) != PDNN_SUCCESS)
            pdnn__debug("%s find: %s", pdnn__op_name(call->op), pdnn_last_error());
        pdnn__debug("%s find on %s: %s chosen for %s after %.2f s", pdnn__op_name(call->op), dev->name, list[best]->name,
                    shape, pdnn__now() - t_start);
    }
    return best;
}

int pdnn__measured_choice(pdnn_device *dev, const pdnn__algo *const *list, pdnn__plan *plans, int n,
                          const pdnn__op_call *call, int *searched, double *seconds)
{
    char kernel[32], shape[512], value[64];
    snprintf(kernel, sizeof kernel, "%s_algo", pdnn__op_name(call->op));
    pdnn__op_key(call, shape, sizeof shape);
    *searched = 0;
    *seconds = 0.0;
    if (pdnn__tuning_lookup_for(call->tuning, call->device_key, kernel, shape, value, sizeof value)) {
        for (int i = 0; i < n; i++)
            if (plans[i].supported && strcmp(list[i]->name, value) == 0)
                return i;
        pdnn__debug("tuning cache: ignoring %s '%s' for %s: not an algorithm that runs it in this build", kernel,
                    value, shape);
        return -1;
    }
    if (call->tuning != PDNN_TUNING_SEARCH && call->tuning != PDNN_TUNING_FORCE)
        return -1;
    /* A search runs every candidate: an update in place would be applied
     * once per candidate. */
    if (call->op == PDNN__OP_OPTIMIZER)
        return -1;
    int choices = 0;
    for (int i = 0; i < n; i++)
        choices += plans[i].supported;
    if (choices < 2) /* nothing to choose (the host: one algorithm) */
        return -1;
    const double t0 = pdnn__now();
    const int best = find_search(dev, list, plans, n, call, kernel, shape);
    *searched = 1;
    *seconds = pdnn__now() - t0;
    return best;
}

