/* The host reference of the data-movement ops of any rank: PDNN__OP_INDEX
 * (y reads x at per-axis index tables, -1 the fill value, one axis
 * optionally interpolated) and PDNN__OP_WHERE (a select with broadcast
 * strides); "direct" each, exported to host.c's registry tables. */
#include "backend.h"

static float *fat(pdnn__buf b) { return (float *)((char *)b.region + b.offset); }

static void index_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan) { (void)dev, (void)call, (void)plan; }

/* Advances the row-major coordinate i of dims d (rank r) by one. */
static void next(int64_t *i, const int64_t *d, int r)
{
    for (int k = r - 1; k >= 0; k--) {
        if (++i[k] < d[k])
            return;
        i[k] = 0;
    }
}

static pdnn_status index_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__index_call *c = &call->u.index;
    const float *x = fat(c->x_buf);
    float *y = fat(c->y_buf);
    int64_t off[PDNN_MAX_RANK], at[PDNN_MAX_RANK] = {0}, total = 1;
    for (int k = 0; k < c->rank; k++)
        off[k] = k ? off[k - 1] + c->dims[k - 1] : 0, total *= c->dims[k];
    for (int64_t e = 0; e < total; e++, next(at, c->dims, c->rank)) {
        int64_t src = 0, yo = 0, fill = 0;
        for (int k = 0; k < c->rank; k++) {
            const int64_t j = c->idx[off[k] + at[k]];
            fill |= j < 0;
            src += j * c->xs[k];
            yo += at[k] * c->ys[k];
        }
        float v = c->value;
        if (!fill && c->lerp >= 0) {
            const int64_t i = at[c->lerp], j = c->idx[off[c->lerp] + i];
            const float w = c->wt[i];
            v = x[src] * (1.0f - w) + x[src + (c->idx1[i] - j) * c->xs[c->lerp]] * w;
        } else if (!fill) {
            v = x[src];
        }
        y[yo] = v;
    }
    return PDNN_SUCCESS;
}

static pdnn_status where_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__where_call *c = &call->u.where;
    const float *m = fat(c->m_buf), *a = fat(c->a_buf), *b = fat(c->b_buf);
    float *y = fat(c->y_buf);
    int64_t at[PDNN_MAX_RANK] = {0}, total = 1;
    for (int k = 0; k < c->rank; k++)
        total *= c->dims[k];
    for (int64_t e = 0; e < total; e++, next(at, c->dims, c->rank)) {
        int64_t mo = 0, ao = 0, bo = 0, yo = 0;
        for (int k = 0; k < c->rank; k++)
            mo += at[k] * c->ms[k], ao += at[k] * c->as[k], bo += at[k] * c->bs[k], yo += at[k] * c->ys[k];
        y[yo] = m[mo] != 0.0f ? a[ao] : b[bo];
    }
    return PDNN_SUCCESS;
}

const pdnn__algo pdnn__host_index_direct = {
    .op = PDNN__OP_INDEX, .name = "direct", .rank = 100, .plan = index_plan, .run = index_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_where_direct = {
    .op = PDNN__OP_WHERE, .name = "direct", .rank = 100, .plan = index_plan, .run = where_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
