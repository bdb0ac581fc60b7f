/* The host reference of the N-d math ops (transpose, softmax along an
 * axis, layer norm, reductions): one "direct" algorithm each, exported to
 * host.c's registry tables. Sums are formed in double, so the reference
 * is the more accurate side of every parity comparison. */
#include "backend.h"

#include <math.h>
#include <stdlib.h>

static float *fat(pdnn__buf b) { return (float *)((char *)b.region + b.offset); }

/* The reference runs every valid call: nothing to refuse, no workspace. */
static void nd_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan) { (void)dev, (void)call, (void)plan; }

/* Odometer over dims[rank] (last fastest): advances i, returns how far
 * offset off moves with strides st (the wrapped axes' runs taken back). */
static int64_t step(int rank, const int64_t *dims, const int64_t *st, int64_t *i)
{
    int64_t moved = 0;
    for (int k = rank - 1; k >= 0; k--) {
        if (++i[k] < dims[k])
            return moved + st[k];
        moved -= (dims[k] - 1) * st[k];
        i[k] = 0;
    }
    return moved;
}

static pdnn_status transpose(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__transpose_call *c = &call->u.transpose;
    const float *x = fat(c->x_buf);
    float *y = fat(c->y_buf);
    int64_t i[PDNN_MAX_RANK] = {0}, total = 1, off = 0;
    for (int k = 0; k < c->rank; k++)
        total *= c->dims[k];
    for (int64_t j = 0; j < total; j++) {
        y[j] = x[off];
        off += step(c->rank, c->dims, c->xs, i);
    }
    return PDNN_SUCCESS;
}

static pdnn_status softmax(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                           pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__softmax_call *c = &call->u.softmax;
    const float *x = fat(c->x_buf);
    float *y = fat(c->y_buf);
    for (int64_t o = 0; o < c->outer; o++)
        for (int64_t in = 0; in < c->inner; in++) {
            const float *xr = x + o * c->n * c->inner + in;
            float *yr = y + o * c->n * c->inner + in;
            double m = -INFINITY, sum = 0.0;
            int nan = 0;
            for (int64_t k = 0; k < c->n; k++) {
                nan |= isnan(xr[k * c->inner]);
                m = fmax(m, (double)xr[k * c->inner]);
            }
            for (int64_t k = 0; k < c->n; k++)
                sum += exp((double)xr[k * c->inner] - m);
            const double lse = nan ? NAN : m + log(sum);
            for (int64_t k = 0; k < c->n; k++) {
                const double v = (double)xr[k * c->inner];
                yr[k * c->inner] = (float)(c->log ? v - lse : exp(v - lse));
            }
        }
    return PDNN_SUCCESS;
}

static pdnn_status layer_norm(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                              pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__layer_norm_call *c = &call->u.layer_norm;
    const float *x = fat(c->x_buf), *g = fat(c->scale_buf), *b = c->bias_buf.region ? fat(c->bias_buf) : NULL;
    float *y = fat(c->y_buf);
    for (int64_t r = 0; r < c->rows; r++) {
        const float *xr = x + r * c->cols;
        double mean = 0.0, var = 0.0;
        for (int64_t j = 0; j < c->cols; j++)
            mean += xr[j];
        mean /= (double)c->cols;
        for (int64_t j = 0; j < c->cols; j++)
            var += ((double)xr[j] - mean) * ((double)xr[j] - mean);
        const double inv = 1.0 / sqrt(var / (double)c->cols + (double)c->epsilon);
        for (int64_t j = 0; j < c->cols; j++)
            y[r * c->cols + j] = (float)(((double)xr[j] - mean) * inv * g[j] + (b ? b[j] : 0.0));
    }
    return PDNN_SUCCESS;
}

/* Every element of x once, in memory order, into y's element (its index
 * with the reduced axes' strides 0), in double. */
static pdnn_status reduce(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                          pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__reduce_call *c = &call->u.reduce;
    const float *x = fat(c->x_buf);
    float *y = fat(c->y_buf);
    int64_t ys[PDNN_MAX_RANK], n_y = 1, n_x = 1, count = 1;
    for (int k = c->rank - 1; k >= 0; k--) {
        const int red = c->axes >> k & 1u;
        ys[k] = red ? 0 : n_y;
        n_y *= red ? 1 : c->dims[k];
        count *= red ? c->dims[k] : 1;
        n_x *= c->dims[k];
    }
    double *acc = calloc((size_t)n_y, sizeof *acc);
    if (!acc)
        return pdnn__host_oom("pdnn_reduce", "the host's sums", (uint64_t)n_y * sizeof *acc);
    const int mx = c->kind == PDNN_REDUCTION_MAX, mn = c->kind == PDNN_REDUCTION_MIN;
    for (int64_t j = 0; j < n_y; j++)
        acc[j] = mx ? -INFINITY : mn ? INFINITY : 0.0;
    int64_t i[PDNN_MAX_RANK] = {0}, yo = 0;
    for (int64_t j = 0; j < n_x; j++) {
        const double v = x[j];
        double *a = &acc[yo];
        if (mx || mn) /* NaN wins */
            *a = isnan(v) || isnan(*a) ? NAN : mx ? fmax(*a, v) : fmin(*a, v);
        else
            *a += v;
        yo += step(c->rank, c->dims, ys, i);
    }
    for (int64_t j = 0; j < n_y; j++)
        y[j] = (float)(c->kind == PDNN_REDUCTION_MEAN ? acc[j] / (double)count : acc[j]);
    free(acc);
    return PDNN_SUCCESS;
}

const pdnn__algo pdnn__host_transpose_direct = {
    .op = PDNN__OP_ND_TRANSPOSE, .name = "direct", .rank = 100, .plan = nd_plan, .run = transpose,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__host_softmax_direct = {
    .op = PDNN__OP_ND_SOFTMAX, .name = "direct", .rank = 100, .plan = nd_plan, .run = softmax,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_layer_norm_direct = {
    .op = PDNN__OP_ND_LAYER_NORM, .name = "direct", .rank = 100, .plan = nd_plan, .run = layer_norm,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_reduce_direct = {
    .op = PDNN__OP_ND_REDUCE, .name = "direct", .rank = 100, .plan = nd_plan, .run = reduce,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
