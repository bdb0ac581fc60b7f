/* Running one op from host data for the polydnn tool: the clock, random
 * inputs, the "create, write, time, read" sequence and error measures,
 * written once so that conv, pool, bench and tune time the same way. */
#ifndef POLYDNN_CLI_RUN_H
#define POLYDNN_CLI_RUN_H

#include "polydnn.h"

#include <stdint.h>

/* Seconds on the monotonic clock: the tool's only clock. */
double cli_now(void);

/* A new array of n values in [-1, 1) from the xorshift state (advanced),
 * or NULL when out of host memory. The same state gives the same values
 * on every machine, so a printed seed reproduces a run. */
float *cli_random(int64_t n, uint64_t *state);

/* Fills v[0..n) as cli_random does. */
void cli_fill(float *v, int64_t n, uint64_t *state);

/* Largest |got - want| and largest relative error (relative to at least
 * 1e-6); a NaN counts as infinitely wrong. */
void cli_errors(const float *got, const float *want, int64_t n, double *max_abs, double *max_rel);

/* One conv2d or pool2d call's tensors on one device, created and filled
 * from host data. Its params are a copy: a caller may change them (e.g.
 * the algorithm) between runs. */
typedef struct cli_op {
    pdnn_device *dev;
    int is_pool;
    pdnn_conv2d_params conv;
    pdnn_pool2d_params pool;
    pdnn_tensor *x, *w, *b, *y; /* w, b: NULL for a pool; b may be NULL */
    const char *step;           /* what failed last, for messages */
} cli_op;

/* Creates the tensors on dev and writes x, w and b (b may be NULL: no
 * bias) into them. On failure the op holds what was made (release it)
 * and op->step says which step failed. */
pdnn_status cli_op_conv(cli_op *op, pdnn_device *dev, const pdnn_conv2d_params *p, const pdnn_tensor_desc *xd,
                        const pdnn_tensor_desc *wd, const pdnn_tensor_desc *bd, const pdnn_tensor_desc *yd,
                        const float *x, const float *w, const float *b);
pdnn_status cli_op_pool(cli_op *op, pdnn_device *dev, const pdnn_pool2d_params *p, const pdnn_tensor_desc *xd,
                        const pdnn_tensor_desc *yd, const float *x);

/* One call, queued and not waited for. */
pdnn_status cli_op_run(cli_op *op);

/* How cli_op_time sums up its timed calls. */
typedef enum cli_stat {
    /* Queued back to back and waited for once, the mean per call: the
     * throughput a stream of calls sees (conv, pool). */
    CLI_MEAN,
    /* Each waited for, the fastest: the least disturbed call, for tables
     * that compare algorithms and peers (bench, tune). */
    CLI_BEST
} cli_stat;

/* warmup calls (building programs, touching memory: not timed), then
 * iters timed calls, in ms per call as `how` says (ms may be NULL). */
pdnn_status cli_op_time(cli_op *op, int warmup, int iters, cli_stat how, double *ms);

/* The output read into a new malloc'd array (*out). */
pdnn_status cli_op_read(cli_op *op, float **out);

/* Releases the tensors (a zeroed or partly made op is fine). */
void cli_op_release(cli_op *op);

/* Reads a whole float32 tensor into a new malloc'd array (*out). */
pdnn_status cli_tensor_read(const pdnn_tensor *t, float **out);

#endif
