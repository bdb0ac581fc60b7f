/* The ops around convolution (kernels_cl/elementwise.cl): add, bias_add,
 * relu, the activations (a registry op), softmax. (matmul is a registry op: cl_matmul.c.) */
#include "backends/opencl/cl_internal.h"



/* Takes d->lock and gets the kernel named name; on success the caller
 * holds the lock (finish_launch releases it). */
static pdnn_status lock_kernel_opts(cl_dev *d, const char *name, const char *opts, cl_kernel *k)
{
    pthread_mutex_lock(&d->lock);
    pdnn_status st = pdnn__cl_kernel(d, "elementwise.cl", opts, name, k);
    if (st != PDNN_SUCCESS)
        pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status lock_kernel(cl_dev *d, const char *name, cl_kernel *k)
{
    return lock_kernel_opts(d, name, NULL, k);
}

/* pdnn__cl_launch_checked, then releases d->lock. */
static pdnn_status finish_launch(cl_dev *d, cl_kernel k, const char *name, cl_int err, int64_t total)
{
    const pdnn_status st = pdnn__cl_launch_checked(d, k, name, err, total);
    pthread_mutex_unlock(&d->lock);
    return st;
}

pdnn_status pdnn__cl_add(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf y, int64_t n)
{
    cl_dev *d = dev;
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, "ew_add", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem am = a.region, bm = b.region, ym = y.region;
    cl_long ao = elem_off(a), bo = elem_off(b), yo = elem_off(y), total = n;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, am);
    SET_ARG(k, 1, ao);
    SET_ARG(k, 2, bm);
    SET_ARG(k, 3, bo);
    SET_ARG(k, 4, ym);
    SET_ARG(k, 5, yo);
    SET_ARG(k, 6, total);
    return finish_launch(d, k, "ew_add", err, total);
}

pdnn_status pdnn__cl_bias_add(void *dev, pdnn__buf x, pdnn__buf bias, pdnn__buf y, int64_t n, int64_t c,
                               int64_t inner, int relu)
{
    cl_dev *d = dev;
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, "ew_bias_add", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem xm = x.region, bm = bias.region, ym = y.region;
    cl_long xo = elem_off(x), bo = elem_off(bias), yo = elem_off(y);
    cl_long total = n, c_arg = c, inner_arg = inner;
    cl_int relu_arg = relu != 0;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, bm);
    SET_ARG(k, 3, bo);
    SET_ARG(k, 4, ym);
    SET_ARG(k, 5, yo);
    SET_ARG(k, 6, total);
    SET_ARG(k, 7, c_arg);
    SET_ARG(k, 8, inner_arg);
    SET_ARG(k, 9, relu_arg);
    return finish_launch(d, k, "ew_bias_add", err, total);
}

pdnn_status pdnn__cl_relu(void *dev, pdnn__buf x, pdnn__buf y, int64_t n)
{
    cl_dev *d = dev;
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, "ew_relu", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem xm = x.region, ym = y.region;
    cl_long xo = elem_off(x), yo = elem_off(y), total = n;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, ym);
    SET_ARG(k, 3, yo);
    SET_ARG(k, 4, total);
    return finish_launch(d, k, "ew_relu", err, total);
}

pdnn_status pdnn__cl_softmax(void *dev, pdnn__buf x, pdnn__buf y, int64_t outer, int64_t c, int64_t inner)
{
    cl_dev *d = dev;
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, "softmax_mid", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem xm = x.region, ym = y.region;
    cl_long xo = elem_off(x), yo = elem_off(y);
    cl_long c_arg = c, inner_arg = inner, total = outer * inner;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, ym);
    SET_ARG(k, 3, yo);
    SET_ARG(k, 4, c_arg);
    SET_ARG(k, 5, inner_arg);
    SET_ARG(k, 6, total);
    /* c == 0 leaves nothing to write (and would divide by zero). */
    return finish_launch(d, k, "softmax_mid", err, c > 0 ? total : 0);
}



/* The activations (registry op PDNN__OP_ACTIVATION): one algorithm. */
static void act_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan) { (void)dev, (void)call, (void)plan; }

static pdnn_status act_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                           pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__act_call *c = &call->u.act;
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel_opts(d, "ew_activation", pdnn__cl_real_opts(call->dtype), &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem xm = c->x_buf.region, ym = c->y_buf.region;
    cl_long xo = pdnn__cl_real_off(c->x_buf, call->dtype), yo = pdnn__cl_real_off(c->y_buf, call->dtype), total = c->n;
    cl_int mode = (cl_int)c->mode;
    cl_float alpha = c->alpha, beta = c->beta;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, ym);
    SET_ARG(k, 3, yo);
    SET_ARG(k, 4, total);
    SET_ARG(k, 5, mode);
    SET_ARG(k, 6, alpha);
    SET_ARG(k, 7, beta);
    /* 8 elements a work-item (elementwise.cl says why) */
    return finish_launch(d, k, "ew_activation", err, (total + 7) / 8);
}

const pdnn__algo pdnn__cl_algo_activation_direct = {
    .op = PDNN__OP_ACTIVATION, .name = "direct", .rank = 100, .plan = act_plan, .run = act_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};

/* Enqueues y = x written in y's memory order (c: dims and both strides),
 * so y's axes are ordered by decreasing stride (ties, axes of size 1, in
 * any order). The caller holds d->lock: the transform op below, and
 * algorithms that relayout their input into their workspace. */
pdnn_status pdnn__cl_transform_locked(cl_dev *d, const pdnn__transform_call *c)
{
    int ord[4];
    pdnn__stride_order(c->ys, ord);
    cl_mem xm = c->x_buf.region, ym = c->y_buf.region;
    cl_long xo = elem_off(c->x_buf), yo = elem_off(c->y_buf);
    cl_long4 xs = {{c->xs[0], c->xs[1], c->xs[2], c->xs[3]}}, dims = {{c->dims[0], c->dims[1], c->dims[2], c->dims[3]}};
    cl_int4 order = {{ord[0], ord[1], ord[2], ord[3]}};
    cl_int err = CL_SUCCESS;
    /* Tiles where y's innermost axis is not x's (NHWC <-> NCHW) and both
     * are 8 long or more: x's axis of stride 1, xa. */
    int xa = -1;
    for (int a = 0; a < 4; a++)
        if (c->xs[a] == 1 && c->dims[a] >= 8 && a != ord[3])
            xa = a;
    const int tiles = xa >= 0 && c->dims[ord[3]] >= 8 && c->xs[ord[3]] != 1;
    const char *name = tiles ? "ew_transform_tiles" : "ew_transform";
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "elementwise.cl", NULL, name, &k);
    if (st != PDNN_SUCCESS)
        return st;
    /* Argument 7: the tiles' xa; else how many inner axes a work-item
     * loops over: its two where y's outer two leave enough work-items
     * (64: a few per core), else one, the work-items then over the outer
     * three. */
    cl_int arg7;
    cl_long items;
    if (tiles) {
        arg7 = xa;
        items = (c->dims[ord[3]] + 15) / 16 * ((c->dims[xa] + 15) / 16) *
                (c->dims[0] * c->dims[1] * c->dims[2] * c->dims[3] / c->dims[ord[3]] / c->dims[xa]);
    } else {
        const int64_t outer2 = c->dims[ord[0]] * c->dims[ord[1]];
        arg7 = outer2 >= 64 ? 2 : 1;
        items = arg7 == 2 ? outer2 : outer2 * c->dims[ord[2]];
    }
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, xs);
    SET_ARG(k, 3, ym);
    SET_ARG(k, 4, yo);
    SET_ARG(k, 5, dims);
    SET_ARG(k, 6, order);
    SET_ARG(k, 7, arg7);
    SET_ARG(k, 8, items);
    return pdnn__cl_launch_checked(d, k, name, err, items);
}

/* The layout transform (registry op PDNN__OP_TRANSFORM). */
static pdnn_status transform_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                 pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    pthread_mutex_lock(&d->lock);
    const pdnn_status st = pdnn__cl_transform_locked(d, &call->u.transform);
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_transform_direct = {
    .op = PDNN__OP_TRANSFORM, .name = "direct", .rank = 100, .plan = act_plan, .run = transform_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};

/* y = a (op) b with either broadcast (registry op PDNN__OP_BINARY): one
 * work-item per element of y in memory order, a and b read through their
 * strides (0 where they repeat). */
static pdnn_status binary_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                              pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__binary_call *c = &call->u.binary;
    cl_kernel k = NULL;
    const pdnn_dtype t = call->dtype;
    /* a and b each packed like y (stride 1 over the whole) or one
     * repeated element (stride 0): ew_binary_flat, 8 elements a work-item
     * (elementwise.cl says why) */
    int a_full = 1, a_one = 1, b_full = 1, b_one = 1;
    int64_t ps = 1;
    for (int i = 7; i >= 0; ps *= c->dims[i], i--)
        if (c->dims[i] != 1) {
            a_full &= c->as[i] == ps, a_one &= c->as[i] == 0;
            b_full &= c->bs[i] == ps, b_one &= c->bs[i] == 0;
        }
    const int flat = (a_full || a_one) && (b_full || b_one);
    pdnn_status st = lock_kernel_opts(d, flat ? "ew_binary_flat" : "ew_binary", pdnn__cl_real_opts(t), &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem am = c->a_buf.region, bm = c->b_buf.region, ym = c->y_buf.region;
    cl_long ao = pdnn__cl_real_off(c->a_buf, t), bo = pdnn__cl_real_off(c->b_buf, t), yo = pdnn__cl_real_off(c->y_buf, t);
    cl_long8 dims, as, bs;
    cl_int axes = 0;
    for (int i = 0; i < 8; i++) {
        dims.s[i] = c->dims[i], as.s[i] = c->as[i], bs.s[i] = c->bs[i];
        if (c->dims[i] != 1 && axes == 0)
            axes = 8 - i; /* core packs the axes that count at the end */
    }
    cl_long total = pdnn__binary_elements(c);
    cl_int op = (cl_int)c->kind; /* the kernel's op codes are pdnn_binary_op's values */
    cl_int err = CL_SUCCESS;
    if (flat) {
        cl_long sa = a_full, sb = b_full;
        SET_ARG(k, 0, am);
        SET_ARG(k, 1, ao);
        SET_ARG(k, 2, sa);
        SET_ARG(k, 3, bm);
        SET_ARG(k, 4, bo);
        SET_ARG(k, 5, sb);
        SET_ARG(k, 6, ym);
        SET_ARG(k, 7, yo);
        SET_ARG(k, 8, op);
        SET_ARG(k, 9, total);
        return finish_launch(d, k, "ew_binary_flat", err, (total + 7) / 8);
    }
    SET_ARG(k, 0, am);
    SET_ARG(k, 1, ao);
    SET_ARG(k, 2, as);
    SET_ARG(k, 3, bm);
    SET_ARG(k, 4, bo);
    SET_ARG(k, 5, bs);
    SET_ARG(k, 6, ym);
    SET_ARG(k, 7, yo);
    SET_ARG(k, 8, dims);
    SET_ARG(k, 9, op);
    SET_ARG(k, 10, total);
    SET_ARG(k, 11, axes);
    return finish_launch(d, k, "ew_binary", err, total);
}

/* y = x padded along H and W (registry op PDNN__OP_PAD): one work-item
 * per element of y, x read through its strides (mirrored or clamped at
 * the edges). */
static pdnn_status pad_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                           pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__pad_call *c = &call->u.pad;
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, "ew_pad", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem xm = c->x_buf.region, ym = c->y_buf.region;
    cl_long xo = elem_off(c->x_buf), yo = elem_off(c->y_buf);
    cl_long4 xs = {{c->xs[0], c->xs[1], c->xs[2], c->xs[3]}}, ys = {{c->ys[0], c->ys[1], c->ys[2], c->ys[3]}},
             dims = {{c->dims[0], c->dims[1], c->dims[2], c->dims[3]}},
             pads = {{c->pads[0], c->pads[1], c->pads[2], c->pads[3]}};
    cl_long total = c->dims[0] * c->dims[1] * (c->dims[2] + c->pads[0] + c->pads[2]) *
                    (c->dims[3] + c->pads[1] + c->pads[3]);
    cl_int mode = (cl_int)c->mode; /* the kernel's codes are pdnn_pad_mode's values */
    cl_float value = c->value;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, xs);
    SET_ARG(k, 3, ym);
    SET_ARG(k, 4, yo);
    SET_ARG(k, 5, ys);
    SET_ARG(k, 6, dims);
    SET_ARG(k, 7, pads);
    SET_ARG(k, 8, mode);
    SET_ARG(k, 9, value);
    SET_ARG(k, 10, total);
    return finish_launch(d, k, "ew_pad", err, total);
}

const pdnn__algo pdnn__cl_algo_pad_direct = {
    .op = PDNN__OP_PAD, .name = "direct", .rank = 100, .plan = act_plan, .run = pad_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};

const pdnn__algo pdnn__cl_algo_binary_direct = {
    .op = PDNN__OP_BINARY, .name = "direct", .rank = 100, .plan = act_plan, .run = binary_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};

/* The backend's copy_rows: a kernel, as clEnqueueCopyBufferRect with a
 * buffer offset in the origin is refused by PoCL (CL_INVALID_VALUE). The
 * kernel copies floats: the slot's contract is 4-byte multiples. */
pdnn_status pdnn__cl_copy_rows(void *dev, pdnn__buf dst, size_t dst_pitch, pdnn__buf src, size_t src_pitch,
                               size_t width, size_t rows)
{
    cl_dev *d = dev;
    if ((dst.offset | src.offset | dst_pitch | src_pitch | width) % 4 != 0)
        return pdnn__error(PDNN_ERR_INTERNAL, "OpenCL copy_rows: offsets, pitches and width must be multiples of 4 "
                           "bytes (got offsets %zu, %zu, pitches %zu, %zu, width %zu)",
                           src.offset, dst.offset, src_pitch, dst_pitch, width);
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, "ew_copy_rows", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem sm = src.region, dm = dst.region;
    /* Blocks of cw words (a multiple of 8, the kernel's vectors) per
     * work-item. */
    const cl_long cw = 64;
    cl_long so = (cl_long)(src.offset / 4), sp = (cl_long)(src_pitch / 4), dof = (cl_long)(dst.offset / 4),
            dp = (cl_long)(dst_pitch / 4), w = (cl_long)(width / 4), bpr = (w + cw - 1) / cw,
            total = (cl_long)rows * bpr;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, sm);
    SET_ARG(k, 1, so);
    SET_ARG(k, 2, sp);
    SET_ARG(k, 3, dm);
    SET_ARG(k, 4, dof);
    SET_ARG(k, 5, dp);
    SET_ARG(k, 6, w);
    SET_ARG(k, 7, cw);
    SET_ARG(k, 8, bpr);
    SET_ARG(k, 9, total);
    return finish_launch(d, k, "ew_copy_rows", err, total);
}
