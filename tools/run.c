/* Running one op from host data (see run.h). */
#include "run.h"
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_fill(float *v, int64_t n, uint64_t *state)
{
    uint64_t s = *state ? *state : 0x9e3779b97f4a7c15ull; /* xorshift's state must not be 0 */
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        v[i] = (float)((double)(s >> 11) / 4503599627370496.0 - 1.0); /* 53 bits / 2^52 - 1: [-1, 1) */
    }
    *state = s;
}

float *cli_random(int64_t n, uint64_t *state)
{
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (v)
        cli_fill(v, n, state);
    return v;
}

void cli_errors(const float *got, const float *want, int64_t n, double *max_abs, double *max_rel)
{
    double ma = 0.0, mr = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - (double)want[i]);
        if (e != e)
            e = INFINITY;
        const double w = fabs((double)want[i]);
        const double r = e / (w > 1e-6 ? w : 1e-6);
        if (e > ma)
            ma = e;
        if (r > mr)
            mr = r;
    }
    *max_abs = ma;
    *max_rel = mr;
}

/* Creates t on dev and writes data into it, naming the step on failure. */
static pdnn_status make(cli_op *op, const pdnn_tensor_desc *d, const float *data, pdnn_tensor **t)
{
    op->step = "allocating tensors";
    pdnn_status st = pdnn_tensor_create(op->dev, d, t);
    if (st != PDNN_SUCCESS || !data)
        return st;
    op->step = "writing the inputs";
    return pdnn_tensor_write(*t, data, (size_t)pdnn_tensor_desc_bytes(d));
}

pdnn_status cli_op_conv(cli_op *op, pdnn_device *dev, const pdnn_conv2d_params *p, const pdnn_tensor_desc *xd,
                        const pdnn_tensor_desc *wd, const pdnn_tensor_desc *bd, const pdnn_tensor_desc *yd,
                        const float *x, const float *w, const float *b)
{
    memset(op, 0, sizeof *op);
    op->dev = dev;
    op->conv = *p;
    pdnn_status st;
    if ((st = make(op, xd, x, &op->x)) != PDNN_SUCCESS || (st = make(op, wd, w, &op->w)) != PDNN_SUCCESS ||
        (b && (st = make(op, bd, b, &op->b)) != PDNN_SUCCESS) || (st = make(op, yd, NULL, &op->y)) != PDNN_SUCCESS)
        return st;
    op->step = NULL;
    return PDNN_SUCCESS;
}

pdnn_status cli_op_pool(cli_op *op, pdnn_device *dev, const pdnn_pool2d_params *p, const pdnn_tensor_desc *xd,
                        const pdnn_tensor_desc *yd, const float *x)
{
    memset(op, 0, sizeof *op);
    op->dev = dev;
    op->is_pool = 1;
    op->pool = *p;
    pdnn_status st;
    if ((st = make(op, xd, x, &op->x)) != PDNN_SUCCESS || (st = make(op, yd, NULL, &op->y)) != PDNN_SUCCESS)
        return st;
    op->step = NULL;
    return PDNN_SUCCESS;
}

pdnn_status cli_op_run(cli_op *op)
{
    op->step = op->is_pool ? "pool2d" : "conv2d";
    return op->is_pool ? pdnn_pool2d_forward(&op->pool, op->x, op->y)
                       : pdnn_conv2d_forward(&op->conv, op->x, op->w, op->b, op->y);
}

/* Waits for op's device, naming the step on failure. */
static pdnn_status wait_for(cli_op *op)
{
    pdnn_status st = pdnn_device_synchronize(op->dev);
    if (st != PDNN_SUCCESS)
        op->step = op->is_pool ? "pool2d (waiting for the device)" : "conv2d (waiting for the device)";
    return st;
}

pdnn_status cli_op_time(cli_op *op, int warmup, int iters, cli_stat how, double *ms)
{
    pdnn_status st = PDNN_SUCCESS;
    for (int i = 0; i < warmup && st == PDNN_SUCCESS; i++)
        st = cli_op_run(op);
    if (st != PDNN_SUCCESS || (st = wait_for(op)) != PDNN_SUCCESS)
        return st;
    double result = 0.0;
    if (how == CLI_MEAN) {
        const double t0 = cli_now();
        for (int i = 0; i < iters && st == PDNN_SUCCESS; i++)
            st = cli_op_run(op);
        if (st != PDNN_SUCCESS || (st = wait_for(op)) != PDNN_SUCCESS)
            return st;
        result = iters > 0 ? (cli_now() - t0) * 1e3 / iters : 0.0;
    } else {
        for (int i = 0; i < iters; i++) {
            const double t0 = cli_now();
            if ((st = cli_op_run(op)) != PDNN_SUCCESS || (st = wait_for(op)) != PDNN_SUCCESS)
                return st;
            const double t = (cli_now() - t0) * 1e3;
            if (i == 0 || t < result)
                result = t;
        }
    }
    if (ms)
        *ms = result;
    op->step = NULL;
    return PDNN_SUCCESS;
}

pdnn_status cli_tensor_read(const pdnn_tensor *t, float **out)
{
    pdnn_tensor_desc d;
    *out = NULL;
    pdnn_status st = pdnn_tensor_get_desc(t, &d);
    if (st != PDNN_SUCCESS)
        return st;
    const size_t bytes = (size_t)pdnn_tensor_desc_bytes(&d);
    if (!(*out = malloc(bytes ? bytes : 1)))
        return cli_set_host_oom("the host copy of the output", bytes);
    if ((st = pdnn_tensor_read(t, *out, bytes)) != PDNN_SUCCESS) {
        free(*out);
        *out = NULL;
    }
    return st;
}

pdnn_status cli_op_read(cli_op *op, float **out)
{
    op->step = "reading the output";
    pdnn_status st = cli_tensor_read(op->y, out);
    if (st == PDNN_SUCCESS)
        op->step = NULL;
    return st;
}

void cli_op_release(cli_op *op)
{
    pdnn_tensor_release(op->x);
    pdnn_tensor_release(op->w);
    pdnn_tensor_release(op->b);
    pdnn_tensor_release(op->y);
    op->x = op->w = op->b = op->y = NULL;
}
