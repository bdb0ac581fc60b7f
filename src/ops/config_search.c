/* The search behind plan->search: a tunable algorithm's configurations
 * run, checked against the default one, timed, and the fastest stored in
 * the tuning cache. */
#include "ops/dispatch_internal.h"
#include "ops/tuning.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* At least SEARCH_ROUNDS rounds, more (up to SEARCH_ROUNDS_MAX) while a
 * round is short, since short runs are the noisiest. */
enum { SEARCH_ROUNDS = 3, SEARCH_ROUNDS_MAX = 10 };
#define SEARCH_BUDGET_S 0.2

/* Runs configuration i to the end: its seconds, or -1 on failure. */
static double config_timed(const pdnn__config_search *s, int i)
{
    const double t0 = pdnn__now();
    if (s->run_config(s->dev, s->call, i, s->ws) != PDNN_SUCCESS ||
        s->backend->synchronize(s->dev) != PDNN_SUCCESS)
        return -1.0;
    return pdnn__now() - t0;
}

int pdnn__search_configs(const pdnn__config_search *s, pdnn__run_report *rep)
{
    const double t_start = pdnn__now();
    const int count = s->algo->n_configs;
    size_t ny = 0;
    const pdnn__buf y = pdnn__out_buf(s->call, &ny);
    float *ref = malloc(ny * sizeof *ref), *got = malloc(ny * sizeof *got);
    double *times = calloc((size_t)count, sizeof *times);
    int *ok = calloc((size_t)count, sizeof *ok);
    double best_t = -1.0;
    int best = s->dflt, rounds = SEARCH_ROUNDS;
    char name[64];
    /* The default is the reference: the parity harness checks it against
     * the host; every configuration sums in the same order, so they must
     * agree with it to rounding: the plain sum's bound, or the
     * algorithm's own where it is tighter (backend.h, pdnn__tolerance). */
    const float tol = (float)fmin(pdnn__algo_tol(s->algo, PDNN_FLOAT32), PDNN__TOL_DEFAULT);
    if (ref && got && times && ok && config_timed(s, s->dflt) >= 0.0 &&
        s->backend->read(s->dev, y, ref, ny * sizeof *ref) == PDNN_SUCCESS) {
        ok[s->dflt] = 1;
        for (int i = 0; i < count; i++) {
            if (i == s->dflt || !s->usable(s->dev, s->call, i))
                continue;
            s->algo->config_name(i, name, sizeof name);
            if (config_timed(s, i) < 0.0 || s->backend->read(s->dev, y, got, ny * sizeof *got) != PDNN_SUCCESS) {
                pdnn__debug("tuning %s: %s failed to run (%s); skipped", s->kernel, name, pdnn_last_error());
                continue;
            }
            float worst, scale;
            pdnn__compare_outputs(ref, got, ny, &worst, &scale);
            if (!(worst <= tol * (1.0f + scale))) {
                pdnn__debug("tuning %s: %s differs from the default by %g; rejected", s->kernel, name,
                            (double)worst);
                continue;
            }
            ok[i] = 1;
        }
        /* Rounds of one run of each, so that a burst of load from other
         * processes hits all of them alike; each keeps its best. */
        for (int r = 0; r < rounds; r++) {
            const double t_round = pdnn__now();
            for (int i = 0; i < count; i++) {
                if (!ok[i])
                    continue;
                const double t = config_timed(s, i);
                if (t <= 0.0) {
                    ok[i] = 0; /* ran once, fails now: not to be trusted */
                    continue;
                }
                times[i] = r == 0 || t < times[i] ? t : times[i];
            }
            if (r == 0) {
                const double per_round = pdnn__now() - t_round;
                const int want = per_round > 0.0 ? (int)(SEARCH_BUDGET_S / per_round) : SEARCH_ROUNDS_MAX;
                rounds = want < SEARCH_ROUNDS ? SEARCH_ROUNDS : want > SEARCH_ROUNDS_MAX ? SEARCH_ROUNDS_MAX : want;
            }
        }
        for (int i = 0; i < count; i++) {
            if (!ok[i])
                continue;
            s->algo->config_name(i, name, sizeof name);
            pdnn__debug("tuning %s: %s %.3f ms (best of %d)", s->kernel, name, times[i] * 1e3, rounds);
            if (best_t < 0.0 || times[i] < best_t) {
                best_t = times[i];
                best = i;
            }
        }
    }
    free(ref);
    free(got);
    free(times);
    free(ok);
    if (best_t > 0.0) {
        char shape[512];
        pdnn__op_key(s->call, shape, sizeof shape);
        s->algo->config_name(best, name, sizeof name);
        if (pdnn__tuning_store(s->call->device_key, s->kernel, shape, name, pdnn__op_flops(s->call) / best_t * 1e-9) !=
            PDNN_SUCCESS)
            pdnn__debug("tuning %s: %s", s->kernel, pdnn_last_error());
    }
    if (rep) {
        rep->searched = 1;
        rep->search_seconds = pdnn__now() - t_start;
    }
    return best;
}

