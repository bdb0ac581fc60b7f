/* The host reference of the N-d ops' backward registry ops: layer norm's
 * (dx, dscale, dbias), in double, the statistics of each row computed as
 * the forward reference computes them. */
#include "backend.h"

#include <math.h>
#include <stdlib.h>

static float *fat(pdnn__buf b) { return (float *)((char *)b.region + b.offset); }

static void nd_grad_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev, (void)call, (void)plan;
}

static pdnn_status layer_norm_bwd(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                  pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__layer_norm_bwd_call *c = &call->u.layer_norm_bwd;
    const float *x = fat(c->x_buf), *dy = fat(c->dy_buf), *g = fat(c->scale_buf);
    float *y = fat(c->y_buf);
    double *acc = c->which ? calloc((size_t)c->cols, sizeof *acc) : NULL;
    if (c->which && !acc)
        return pdnn__host_oom("pdnn__layer_norm_backward", "the host's sums", (uint64_t)c->cols * sizeof *acc);
    for (int64_t r = 0; r < c->rows; r++) {
        const float *xr = x + r * c->cols, *dr = dy + r * c->cols;
        /* one pass: the sums of x and x^2 in double keep the variance's
         * digits for float data (53 bits against 24) */
        double s1 = 0.0, s2 = 0.0, mg = 0.0, mgx = 0.0;
        for (int64_t j = 0; j < c->cols; j++) {
            s1 += xr[j];
            s2 += (double)xr[j] * xr[j];
        }
        const double mean = s1 / (double)c->cols, var = fmax(s2 / (double)c->cols - mean * mean, 0.0);
        const double inv = 1.0 / sqrt(var + (double)c->epsilon);
        for (int64_t j = 0; j < c->cols; j++) {
            const double xh = ((double)xr[j] - mean) * inv, gj = (double)dr[j] * g[j];
            if (c->which)
                acc[j] += c->which == 1 ? (double)dr[j] * xh : (double)dr[j];
            mg += gj;
            mgx += gj * xh;
        }
        if (c->which)
            continue;
        mg /= (double)c->cols;
        mgx /= (double)c->cols;
        for (int64_t j = 0; j < c->cols; j++) {
            const double xh = ((double)xr[j] - mean) * inv;
            y[r * c->cols + j] = (float)(inv * ((double)dr[j] * g[j] - mg - xh * mgx));
        }
    }
    for (int64_t j = 0; c->which && j < c->cols; j++)
        y[j] = (float)acc[j];
    free(acc);
    return PDNN_SUCCESS;
}

const pdnn__algo pdnn__host_layer_norm_bwd_direct = {
    .op = PDNN__OP_ND_LAYER_NORM_BWD, .name = "direct", .rank = 100, .plan = nd_grad_plan, .run = layer_norm_bwd,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
