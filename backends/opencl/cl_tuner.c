/* The search shared by the OpenCL kernels with tunable configurations
 * (tiled, gemm_1x1): run each usable configuration once and check it,
 * time the survivors in rounds, store the fastest in the tuning cache. */
#include "backends/opencl/cl_internal.h"
#include "tuning.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At least TUNE_ROUNDS rounds, more (up to TUNE_ROUNDS_MAX) while a round
 * is short, since short runs are the noisiest. */
enum { TUNE_ROUNDS = 3, TUNE_ROUNDS_MAX = 10 };
#define TUNE_BUDGET_S 0.2 /* the rounds' target time, for short runs */

int pdnn__cl_pick(const cl_dev *d, const pdnn__conv2d_call *c, const pdnn__cl_tunable *t, int dflt, int forced,
                  int *search, int *cached)
{
    *search = 0;
    *cached = 0;
    if (forced >= 0 && t->applies(c, forced))
        return forced;
    if (dflt < 0 || c->tuning == PDNN_TUNING_OFF)
        return dflt;
    char shape[256], value[64], name[64];
    t->shape_key(c, shape, sizeof shape);
    if (pdnn__tuning_lookup_for(c->tuning, d->tune_key, t->kernel, shape, value, sizeof value)) {
        /* The stored value is a configuration's name as t->name writes it. */
        for (int i = 0; i < t->count; i++) {
            t->name(i, name, sizeof name);
            if (strcmp(name, value) == 0 && t->applies(c, i)) {
                *cached = 1;
                return i;
            }
        }
        pdnn__debug("tuning cache: ignoring '%s' for %s %s: not a configuration this build offers for the shape",
                    value, t->kernel, shape);
        return dflt;
    }
    *search = c->tuning == PDNN_TUNING_SEARCH || c->tuning == PDNN_TUNING_FORCE;
    return dflt;
}

/* Reads c's output into out; 0 on failure. */
static int read_y(cl_dev *d, const pdnn__conv2d_call *c, float *out, size_t ny)
{
    return clEnqueueReadBuffer(d->queue, c->y_buf.region, CL_TRUE, c->y_buf.offset, ny * sizeof(float), out, 0, NULL,
                               NULL) == CL_SUCCESS;
}

/* Builds (once) and runs configuration i to the end: its seconds, or a
 * negative value if it failed. */
static double run_timed(cl_dev *d, const pdnn__conv2d_call *c, const pdnn__cl_tunable *t, int i)
{
    if (t->build(d, i) != PDNN_SUCCESS)
        return -1.0;
    const double t0 = pdnn__cl_now();
    if (t->enqueue(d, c, i) != PDNN_SUCCESS || clFinish(d->queue) != CL_SUCCESS)
        return -1.0;
    return pdnn__cl_now() - t0;
}

int pdnn__cl_tune(cl_dev *d, const pdnn__conv2d_call *c, const pdnn__cl_tunable *t, int dflt)
{
    const double t_start = pdnn__cl_now();
    const size_t ny = (size_t)(c->n * c->k * c->p * c->q);
    float *ref = malloc(ny * sizeof *ref), *got = malloc(ny * sizeof *got);
    double *times = calloc((size_t)t->count, sizeof *times);
    int *ok = calloc((size_t)t->count, sizeof *ok);
    double best_t = -1.0;
    int best = dflt, rounds = TUNE_ROUNDS;
    char name[64];
    /* The default is the reference: the parity suite checks it against
     * the host; every configuration sums in the same order, so they must
     * agree with it to rounding. */
    if (ref && got && times && ok && run_timed(d, c, t, dflt) >= 0.0 && read_y(d, c, ref, ny)) {
        ok[dflt] = 1;
        float scale = 0.0f;
        for (size_t j = 0; j < ny; j++)
            scale = fabsf(ref[j]) > scale ? fabsf(ref[j]) : scale;
        for (int i = 0; i < t->count; i++) {
            if (i == dflt || !t->usable(c, i))
                continue;
            t->name(i, name, sizeof name);
            if (run_timed(d, c, t, i) < 0.0 || !read_y(d, c, got, ny)) {
                pdnn__debug("tuning %s: %s failed to run (%s); skipped", t->kernel, name, pdnn_last_error());
                continue;
            }
            float worst = 0.0f;
            for (size_t j = 0; j < ny; j++)
                worst = fabsf(got[j] - ref[j]) > worst ? fabsf(got[j] - ref[j]) : worst;
            if (!(worst <= 1e-5f * (1.0f + scale))) {
                pdnn__debug("tuning %s: %s differs from the default by %g; rejected", t->kernel, name,
                            (double)worst);
                continue;
            }
            ok[i] = 1;
        }
        /* Rounds of one run of each, so that a burst of load from other
         * processes hits all of them alike; each keeps its best. */
        for (int r = 0; r < rounds; r++) {
            const double t_round = pdnn__cl_now();
            for (int i = 0; i < t->count; i++) {
                if (!ok[i])
                    continue;
                const double s = run_timed(d, c, t, i);
                if (s <= 0.0) {
                    ok[i] = 0; /* ran once, fails now: not to be trusted */
                    continue;
                }
                times[i] = r == 0 || s < times[i] ? s : times[i];
            }
            if (r == 0) {
                const double per_round = pdnn__cl_now() - t_round;
                const int want = per_round > 0.0 ? (int)(TUNE_BUDGET_S / per_round) : TUNE_ROUNDS_MAX;
                rounds = want < TUNE_ROUNDS ? TUNE_ROUNDS : want > TUNE_ROUNDS_MAX ? TUNE_ROUNDS_MAX : want;
            }
        }
        for (int i = 0; i < t->count; i++) {
            if (!ok[i])
                continue;
            t->name(i, name, sizeof name);
            pdnn__debug("tuning %s: %s %.3f ms (best of %d)", t->kernel, name, times[i] * 1e3, rounds);
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
        char shape[256];
        t->shape_key(c, shape, sizeof shape);
        t->name(best, name, sizeof name);
        const double flops = 2.0 * (double)c->n * (double)c->k * (double)c->p * (double)c->q * (double)c->r *
                             (double)c->s * (double)(c->c / c->groups);
        if (pdnn__tuning_store(d->tune_key, t->kernel, shape, name, flops / best_t * 1e-9) != PDNN_SUCCESS)
            pdnn__debug("tuning %s: %s", t->kernel, pdnn_last_error());
    }
    if (c->tuning_out) {
        c->tuning_out->searched = 1;
        c->tuning_out->search_seconds = pdnn__cl_now() - t_start;
    }
    return best;
}
