/* The data-movement ops of any rank on OpenCL (kernels_cl/index.cl):
 * PDNN__OP_INDEX, whose index tables (host arrays in the call) are copied
 * into the workspace before the launch, and PDNN__OP_WHERE. */
#include "backends/opencl/cl_internal.h"

#include <string.h>

/* The tables' bytes: the indices, lerp's second indices, its weights. */
static size_t table_bytes(const pdnn__index_call *c, size_t *i1_off, size_t *wt_off)
{
    const int64_t nl = c->lerp >= 0 ? c->dims[c->lerp] : 0;
    *i1_off = (size_t)c->n_idx;
    *wt_off = (size_t)(c->n_idx + nl) * 2; /* in floats */
    return (size_t)(c->n_idx + nl) * sizeof(int64_t) + (size_t)nl * sizeof(float);
}

static void index_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    size_t a, b;
    if (call->op == PDNN__OP_INDEX)
        plan->workspace = table_bytes(&call->u.index, &a, &b);
}

static cl_long8 long8_of(const int64_t *v)
{
    cl_long8 r;
    for (int i = 0; i < 8; i++)
        r.s[i] = v[i];
    return r;
}

static pdnn_status index_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)plan, (void)rep;
    cl_dev *d = dev;
    const pdnn__index_call *c = &call->u.index;
    size_t i1, wo;
    const size_t bytes = table_bytes(c, &i1, &wo), nl = c->lerp >= 0 ? (size_t)c->dims[c->lerp] : 0;
    int64_t off[8] = {0}, total = 1;
    for (int k = 0; k < c->rank; k++)
        off[k] = k ? off[k - 1] + c->dims[k - 1] : 0, total *= c->dims[k];
    pthread_mutex_lock(&d->lock);
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "index.cl", NULL, "ix_index", &k);
    cl_mem tm = ws.region;
    /* Blocking writes: the tables are the caller's, freed on return. */
    cl_int err = CL_SUCCESS;
    if (st == PDNN_SUCCESS && bytes) {
        err = clEnqueueWriteBuffer(d->queue, tm, CL_TRUE, ws.offset, (size_t)c->n_idx * sizeof(int64_t), c->idx, 0,
                                   NULL, NULL);
        if (err == CL_SUCCESS && nl)
            err = clEnqueueWriteBuffer(d->queue, tm, CL_TRUE, ws.offset + i1 * sizeof(int64_t), nl * sizeof(int64_t),
                                       c->idx1, 0, NULL, NULL);
        if (err == CL_SUCCESS && nl)
            err = clEnqueueWriteBuffer(d->queue, tm, CL_TRUE, ws.offset + wo * sizeof(float), nl * sizeof(float),
                                       c->wt, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            st = pdnn__cl_fail("clEnqueueWriteBuffer", err);
    }
    if (st != PDNN_SUCCESS) {
        pthread_mutex_unlock(&d->lock);
        return st;
    }
    if (!tm) /* rank 0: no table; the kernel reads none */
        tm = c->x_buf.region;
    cl_mem xm = c->x_buf.region, ym = c->y_buf.region;
    cl_long xo = elem_off(c->x_buf), yo = elem_off(c->y_buf), to = (cl_long)(ws.offset / sizeof(int64_t)),
            i1o = (cl_long)i1, wto = (cl_long)(ws.offset / sizeof(float) + wo), tot = total;
    cl_long8 xs = long8_of(c->xs), ys = long8_of(c->ys), dims = long8_of(c->dims), offs = long8_of(off);
    cl_int r = c->rank, lerp = c->lerp;
    cl_float value = c->value;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, xs);
    SET_ARG(k, 3, ym);
    SET_ARG(k, 4, yo);
    SET_ARG(k, 5, ys);
    SET_ARG(k, 6, dims);
    SET_ARG(k, 7, offs);
    SET_ARG(k, 8, r);
    SET_ARG(k, 9, lerp);
    SET_ARG(k, 10, tm);
    SET_ARG(k, 11, to);
    SET_ARG(k, 12, i1o);
    SET_ARG(k, 13, tm);
    SET_ARG(k, 14, wto);
    SET_ARG(k, 15, value);
    SET_ARG(k, 16, tot);
    st = pdnn__cl_launch_checked(d, k, "ix_index", err, total);
    pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status where_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__where_call *c = &call->u.where;
    int64_t total = 1;
    for (int k = 0; k < c->rank; k++)
        total *= c->dims[k];
    pthread_mutex_lock(&d->lock);
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "index.cl", NULL, "ix_where", &k);
    if (st != PDNN_SUCCESS) {
        pthread_mutex_unlock(&d->lock);
        return st;
    }
    cl_mem mm = c->m_buf.region, am = c->a_buf.region, bm = c->b_buf.region, ym = c->y_buf.region;
    cl_long mo = elem_off(c->m_buf), ao = elem_off(c->a_buf), bo = elem_off(c->b_buf), yo = elem_off(c->y_buf),
            tot = total;
    cl_long8 ms = long8_of(c->ms), as = long8_of(c->as), bs = long8_of(c->bs), ys = long8_of(c->ys),
             dims = long8_of(c->dims);
    cl_int r = c->rank, err = CL_SUCCESS;
    SET_ARG(k, 0, mm);
    SET_ARG(k, 1, mo);
    SET_ARG(k, 2, ms);
    SET_ARG(k, 3, am);
    SET_ARG(k, 4, ao);
    SET_ARG(k, 5, as);
    SET_ARG(k, 6, bm);
    SET_ARG(k, 7, bo);
    SET_ARG(k, 8, bs);
    SET_ARG(k, 9, ym);
    SET_ARG(k, 10, yo);
    SET_ARG(k, 11, ys);
    SET_ARG(k, 12, dims);
    SET_ARG(k, 13, r);
    SET_ARG(k, 14, tot);
    st = pdnn__cl_launch_checked(d, k, "ix_where", err, total);
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_index_direct = {
    .op = PDNN__OP_INDEX, .name = "direct", .rank = 100, .plan = index_plan, .run = index_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__cl_algo_where_direct = {
    .op = PDNN__OP_WHERE, .name = "direct", .rank = 100, .plan = index_plan, .run = where_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
