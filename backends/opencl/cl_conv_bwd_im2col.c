/* im2col + GEMM backward, the baseline most OpenCL frameworks use for
 * training (kernels_cl/conv2d.cl with CLBlast's SGEMM), one image at a
 * time:
 *
 * filter: dy_n is copied to a dense K x P*Q matrix (im2col of dy with a
 * 1x1 window), x_n unfolded into columns (C/g*R*S x P*Q), and per group
 * dwpack (K/g x C/g*R*S) += dy_n * col_n^T; at the end dwpack is written
 * to dw in its layout;
 * data: the filter is packed (K x C/g*R*S), col_n = wpack^T * dy_n per
 * group, and col2im gathers each dx element's columns.
 *
 * It is the backward twin of cl_im2col.c's forward: the peer that
 * bench/bench_conv_bwd measures the hand-written algorithms against, and
 * an algorithm AUTO can pick where it wins. Only in builds with CLBlast. */
#include "backends/opencl/cl_internal.h"

#ifdef PDNN_HAVE_CLBLAST
#include <clblast_c.h>
#include <stdio.h>

static void bwd_im2col_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    pdnn__cl_im2col_plan(dev, &call->u.conv2d, plan);
}

/* col (rows x P*Q) = im2col of image n of t (strides ts, dims C x H x W)
 * for the window of out_dims/geom/pad. */
static pdnn_status unfold(cl_dev *d, cl_mem t, cl_long to, const int64_t ts[4], cl_int4 in_dims, cl_int4 out_dims,
                          cl_int4 geom, cl_int2 pad, cl_mem col, cl_long col_off, cl_long total)
{
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d.cl", NULL, "conv2d_im2col", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_int err = CL_SUCCESS;
    cl_long4 s = strides4(ts);
    SET_ARG(k, 0, t);
    SET_ARG(k, 1, to);
    SET_ARG(k, 2, s);
    SET_ARG(k, 3, col);
    SET_ARG(k, 4, col_off);
    SET_ARG(k, 5, in_dims);
    SET_ARG(k, 6, out_dims);
    SET_ARG(k, 7, geom);
    SET_ARG(k, 8, pad);
    SET_ARG(k, 9, total);
    return err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_im2col", total)
                             : pdnn__cl_fail("clSetKernelArg(conv2d_im2col)", err);
}

/* The filter's pack (pack != 0: w -> wpack) or unpack (wpack -> w). */
static pdnn_status filter_copy(cl_dev *d, const pdnn__conv2d_call *c, cl_mem ws, cl_long wp_off, int pack)
{
    const char *name = pack ? "conv2d_pack_filter" : "conv2d_unpack_filter";
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d.cl", NULL, name, &k);
    if (st != PDNN_SUCCESS)
        return st;
    const int64_t cpg = c->c / c->groups;
    cl_int err = CL_SUCCESS;
    cl_mem w = c->w_buf.region;
    cl_long wo = elem_off(c->w_buf), total = c->k * cpg * c->r * c->s;
    cl_long4 wst = strides4(c->ws);
    cl_int4 filt = int4_of((int)c->r, (int)c->s, (int)cpg, (int)c->k);
    if (pack) {
        SET_ARG(k, 0, w);
        SET_ARG(k, 1, wo);
        SET_ARG(k, 2, wst);
        SET_ARG(k, 3, ws);
        SET_ARG(k, 4, wp_off);
    } else {
        SET_ARG(k, 0, ws);
        SET_ARG(k, 1, wp_off);
        SET_ARG(k, 2, w);
        SET_ARG(k, 3, wo);
        SET_ARG(k, 4, wst);
    }
    SET_ARG(k, 5, filt);
    SET_ARG(k, 6, total);
    return err == CL_SUCCESS ? pdnn__cl_launch(d, k, name, total) : pdnn__cl_fail("clSetKernelArg(filter pack)", err);
}

/* dx of image n = col2im of the columns at col_off. */
static pdnn_status fold(cl_dev *d, const pdnn__conv2d_call *c, int64_t n, cl_mem ws, cl_long col_off)
{
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d.cl", NULL, "conv2d_col2im", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_int err = CL_SUCCESS;
    cl_mem dx = c->x_buf.region;
    cl_long dxo = elem_off(c->x_buf), total = c->c * c->h * c->w;
    cl_long4 dxs = strides4(c->xs);
    cl_int4 in_dims = int4_of((int)n, (int)c->c, (int)c->h, (int)c->w);
    cl_int4 out_dims = int4_of((int)c->p, (int)c->q, (int)c->r, (int)c->s);
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    cl_int2 pad;
    pad.s[0] = c->pad_top;
    pad.s[1] = c->pad_left;
    SET_ARG(k, 0, ws);
    SET_ARG(k, 1, col_off);
    SET_ARG(k, 2, dx);
    SET_ARG(k, 3, dxo);
    SET_ARG(k, 4, dxs);
    SET_ARG(k, 5, in_dims);
    SET_ARG(k, 6, out_dims);
    SET_ARG(k, 7, geom);
    SET_ARG(k, 8, pad);
    SET_ARG(k, 9, total);
    return err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_col2im", total)
                             : pdnn__cl_fail("clSetKernelArg(conv2d_col2im)", err);
}

/* Called with d->lock held. */
static pdnn_status bwd_im2col_enqueue(cl_dev *d, pdnn__op op, const pdnn__conv2d_call *c, pdnn__buf wsbuf)
{
    const int64_t cpg = c->c / c->groups, kpg = c->k / c->groups, rs = c->r * c->s, pq = c->p * c->q;
    cl_mem ws = wsbuf.region;
    const cl_long wp_off = elem_off(wsbuf);
    const cl_long col_off = wp_off + c->k * cpg * rs;
    const cl_long dy_off = col_off + c->c * rs * pq;
    const int filter = op == PDNN__OP_CONV2D_BWD_FILTER;
    pdnn_status st = PDNN_SUCCESS;
    if (c->n == 0 || pq == 0 || rs * cpg == 0) {
        /* No output pixel reads anything: the gradient is zero. dw: a
         * zeroed pack unpacked into its layout; dx: col2im of no columns
         * writes the zeros in dx's layout. */
        if (!filter) {
            for (int64_t n = 0; st == PDNN_SUCCESS && n < c->n; n++)
                st = fold(d, c, n, ws, col_off);
            return st;
        }
        const int64_t count = c->k * cpg * rs;
        if (count == 0)
            return PDNN_SUCCESS;
        const cl_float zero = 0.0f;
        const cl_int err = clEnqueueFillBuffer(d->queue, ws, &zero, sizeof zero, wsbuf.offset,
                                               (size_t)count * sizeof(float), 0, NULL, NULL);
        if (err != CL_SUCCESS)
            return pdnn__cl_fail("clEnqueueFillBuffer(im2col_gemm dw)", err);
        return filter_copy(d, c, ws, wp_off, 0);
    }
    if (!filter)
        st = filter_copy(d, c, ws, wp_off, 1);
    const cl_int4 one = int4_of(1, 1, 1, 1);
    cl_int2 nopad;
    nopad.s[0] = nopad.s[1] = 0;
    for (int64_t n = 0; st == PDNN_SUCCESS && n < c->n; n++) {
        /* dy_n as a K x P*Q matrix: im2col with a 1x1 window. */
        st = unfold(d, c->y_buf.region, elem_off(c->y_buf), c->ys, int4_of((int)n, (int)c->k, (int)c->p, (int)c->q),
                    int4_of((int)c->p, (int)c->q, 1, 1), one, nopad, ws, dy_off, (cl_long)(c->k * pq));
        if (st == PDNN_SUCCESS && filter) {
            cl_int2 pad;
            pad.s[0] = c->pad_top;
            pad.s[1] = c->pad_left;
            st = unfold(d, c->x_buf.region, elem_off(c->x_buf), c->xs, int4_of((int)n, (int)c->c, (int)c->h, (int)c->w),
                        int4_of((int)c->p, (int)c->q, (int)c->r, (int)c->s),
                        int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w), pad, ws, col_off,
                        (cl_long)(c->c * rs * pq));
        }
        for (int64_t g = 0; st == PDNN_SUCCESS && g < c->groups; g++) {
            if (filter) /* dwpack[g] (kpg x cpg*RS) (+)= dy[g] (kpg x PQ) * col[g]^T */
                st = pdnn__cl_blast_status(CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeYes, (size_t)kpg,
                                        (size_t)(cpg * rs), (size_t)pq, 1.0f, ws, (size_t)(dy_off + g * kpg * pq),
                                        (size_t)pq, ws, (size_t)(col_off + g * cpg * rs * pq), (size_t)pq,
                                        n == 0 ? 0.0f : 1.0f, ws, (size_t)(wp_off + g * kpg * cpg * rs),
                                        (size_t)(cpg * rs), &d->queue, NULL));
            else /* col[g] (cpg*RS x PQ) = wpack[g]^T (cpg*RS x kpg) * dy[g] (kpg x PQ) */
                st = pdnn__cl_blast_status(CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeYes, CLBlastTransposeNo,
                                        (size_t)(cpg * rs), (size_t)pq, (size_t)kpg, 1.0f, ws,
                                        (size_t)(wp_off + g * kpg * cpg * rs), (size_t)(cpg * rs), ws,
                                        (size_t)(dy_off + g * kpg * pq), (size_t)pq, 0.0f, ws,
                                        (size_t)(col_off + g * cpg * rs * pq), (size_t)pq, &d->queue, NULL));
        }
        if (st == PDNN_SUCCESS && !filter)
            st = fold(d, c, n, ws, col_off);
    }
    if (st == PDNN_SUCCESS && filter)
        st = filter_copy(d, c, ws, wp_off, 0);
    return st;
}

static pdnn_status bwd_im2col_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                  pdnn__run_report *rep)
{
    (void)rep;
    cl_dev *d = dev;
    pdnn_status st = pdnn__cl_blast_reach(elem_off(ws) + (int64_t)(plan->workspace / sizeof(float)));
    if (st != PDNN_SUCCESS)
        return st;
    pthread_mutex_lock(&d->lock);
    st = bwd_im2col_enqueue(d, call->op, &call->u.conv2d, ws);
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* After the hand-written algorithms and before direct, as in the forward:
 * bench/results-conv-bwd.md measures it against them. */
const pdnn__algo pdnn__cl_algo_bwd_data_im2col = {
    .op = PDNN__OP_CONV2D_BWD_DATA,
    .name = "im2col_gemm",
    .rank = 60,
    .plan = bwd_im2col_plan,
    .run = bwd_im2col_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};

const pdnn__algo pdnn__cl_algo_bwd_filter_im2col = {
    .op = PDNN__OP_CONV2D_BWD_FILTER,
    .name = "im2col_gemm",
    .rank = 60,
    .plan = bwd_im2col_plan,
    .run = bwd_im2col_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};
#else
/* ISO C wants a declaration in every translation unit. */
typedef int pdnn__cl_bwd_im2col_needs_clblast;
#endif
