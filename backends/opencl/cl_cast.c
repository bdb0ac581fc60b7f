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

/* 1 if the view dims/strides s covers its elements without gaps or
 * overlaps: its axes longer than 1, by increasing stride, each stride the
 * product of the dims inside it. */
int pdnn__cl_dense(const int64_t dims[4], const int64_t s[4])
{
    int used[4] = {0, 0, 0, 0};
    int64_t want = 1;
    for (int k = 0; k < 4; k++) {
        int best = -1;
        for (int a = 0; a < 4; a++)
            if (!used[a] && dims[a] > 1 && (best < 0 || s[a] < s[best]))
                best = a;
        if (best < 0)
            return 1;
        if (s[best] != want)
            return 0;
        used[best] = 1;
        want *= dims[best];
    }
    return 1;
}

/* Enqueues dst = src widened to float32 (exact), src a 4-d view in dtype
 * t (dims, element strides ss), dst's element strides ds: the float32
 * copies the reduced-dtype convolutions reduce over (cl_implicit_gemm.c,
 * cl_gemm_1x1.c). The caller holds d->lock. */
pdnn_status pdnn__cl_widen_locked(cl_dev *d, pdnn_dtype t, pdnn__buf src, const int64_t dims[4],
                                  const int64_t ss[4], pdnn__buf dst, const int64_t ds[4])
{
    /* A dense view copied with its own strides is one run: widened
     * 8-wide throughout, whatever its innermost axis's length (a 3x3
     * filter's is 3). */
    int64_t n = 1, last = 0, same = 1;
    for (int a = 0; a < 4; a++) {
        n *= dims[a];
        last += (dims[a] - 1) * ss[a];
        same &= ss[a] == ds[a] && ss[a] >= 0;
    }
    const int64_t flat[4] = {1, 1, 1, n}, one[4] = {n, n, n, 1};
    if (same && n > 0 && last == n - 1 && pdnn__cl_dense(dims, ss)) {
        dims = flat;
        ss = ds = one;
    }
    /* src's innermost axis (stride 1, longer than 1) last: the kernel's 8-wide loads run along it. */
    int ord[4] = {0, 1, 2, 3};
    for (int a = 0; a < 4; a++)
        if (ss[a] == 1 && dims[a] > 1) {
            ord[a] = 3;
            ord[3] = a;
            break;
        }
    cl_long4 xs, ys, dm;
    for (int a = 0; a < 4; a++) {
        xs.s[a] = ss[ord[a]];
        ys.s[a] = ds[ord[a]];
        dm.s[a] = dims[ord[a]];
    }
    cl_long items = dm.s[0] * dm.s[1] * dm.s[2] * ((dm.s[3] + 7) / 8);
    if (items == 0)
        return PDNN_SUCCESS;
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "cast.cl", pdnn__cl_real_opts(t), "cast_widen", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem xm = src.region, ym = dst.region;
    cl_long xo = pdnn__cl_real_off(src, t), yo = elem_off(dst);
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, xs);
    SET_ARG(k, 3, ym);
    SET_ARG(k, 4, yo);
    SET_ARG(k, 5, ys);
    SET_ARG(k, 6, dm);
    SET_ARG(k, 7, items);
    return pdnn__cl_launch_checked(d, k, "cast_widen", err, items);
}

/* A reduced-dtype convolution's x widened into dst, packed channels-last
 * where nhwc, else channel-major; *x, *xo and *xs (a kernel's x
 * arguments) become the copy's. The caller holds d->lock. */
pdnn_status pdnn__cl_widen_conv_x(cl_dev *d, const pdnn__op_call *call, int nhwc, pdnn__buf dst, cl_mem *x,
                                  cl_long *xo, cl_long4 *xs)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t dims[4] = {c->n, c->c, c->h, c->w};
    int64_t ds[4];
    pdnn__layout_strides(nhwc ? PDNN_NHWC : PDNN_NCHW, dims, ds);
    const pdnn_status st = pdnn__cl_widen_locked(d, call->dtype, c->x_buf, dims, c->xs, dst, ds);
    if (st != PDNN_SUCCESS)
        return st;
    *x = dst.region;
    *xo = elem_off(dst);
    for (int a = 0; a < 4; a++)
        xs->s[a] = ds[a];
    return PDNN_SUCCESS;
}
