/* pdnn_cast on OpenCL (kernels_cl/cast.cl): float16 through the core
 * vload_half/vstore_half_rte, bfloat16 through 16-bit integers and
 * shifts; every pair of the three float dtypes. */
#include "backends/opencl/cl_internal.h"

#include <stdio.h>

static const char *short_name(pdnn_dtype t)
{
    return t == PDNN_FLOAT16 ? "f16" : t == PDNN_BFLOAT16 ? "bf16" : "f32";
}

static void cast_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev, (void)call, (void)plan;
}

static pdnn_status cast_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                            pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__cast_call *c = &call->u.cast;
    char name[32];
    snprintf(name, sizeof name, "cast_%s_%s", short_name(c->from), short_name(c->to));
    pthread_mutex_lock(&d->lock);
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "cast.cl", NULL, name, &k);
    if (st != PDNN_SUCCESS) {
        pthread_mutex_unlock(&d->lock);
        return st;
    }
    cl_mem xm = c->x_buf.region, ym = c->y_buf.region;
    /* offsets in elements of each side's dtype */
    cl_long xo = (cl_long)(c->x_buf.offset / (c->from == PDNN_FLOAT32 ? 4 : 2)),
            yo = (cl_long)(c->y_buf.offset / (c->to == PDNN_FLOAT32 ? 4 : 2)), n = c->n;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, ym);
    SET_ARG(k, 3, yo);
    SET_ARG(k, 4, n);
    st = pdnn__cl_launch_checked(d, k, name, err, n);
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_cast_direct = {
    .op = PDNN__OP_CAST, .name = "direct", .rank = 100, .plan = cast_plan, .run = cast_run,
    .tol = {.of = {PDNN__TOL_EXACT, PDNN__TOL_EXACT, PDNN__TOL_EXACT}}, .dtypes = PDNN__DTYPES_FLOAT};
