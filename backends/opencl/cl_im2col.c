/* im2col + GEMM (kernels_cl/conv2d.cl with CLBlast's SGEMM): for each
 * image, unfold it into columns, one SGEMM per group, then the bias/ReLU
 * epilogue writes the image in y's layout. Only in builds with CLBlast. */
#include "backends/opencl/cl_internal.h"

#ifdef PDNN_HAVE_CLBLAST
#include <clblast_c.h>
#include <stdio.h>

extern const pdnn__algo pdnn__cl_algo_im2col_gemm;

/* The plan the forward and backward im2col_gemm share (workspace in
 * floats: the packed filter or its gradient, one image's columns and one
 * image's K x P*Q matrix): 1 if they run c, else plan refused. The kernels
 * index images, channels and pixels in int; GEMM sizes are size_t. */
/* CLBlast's kernels take sizes and offsets as int, and its indirect GEMM
 * copies A, B and C into temporary buffers padded to its work-group tiles
 * (128 at most in its tuning database): past either it threw an exception
 * it did not catch ("terminate called without an active exception" for a
 * 1 x 2^28 x 1 matmul, 2^35 padded floats), so the plans refuse first. */
enum { BLAST_TILE = 128 };

static int64_t blast_pad(int64_t v) { return (v + BLAST_TILE - 1) / BLAST_TILE * BLAST_TILE; }

int pdnn__cl_blast_fits(const cl_dev *d, int64_t m, int64_t n, int64_t k, int64_t batch, int64_t last,
                        pdnn__plan *plan)
{
    if (m <= 0 || n <= 0 || k <= 0) {
        pdnn__plan_refuse(plan, "CLBlast rejects empty sizes");
        return 0;
    }
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || batch > INT32_MAX || last > INT32_MAX) {
        pdnn__plan_refuse(plan, "CLBlast indexes in int: a %lld x %lld x %lld product reaching element %lld is past "
                                "2^31",
                          (long long)m, (long long)n, (long long)k, (long long)last);
        return 0;
    }
    cl_ulong max_alloc = 0;
    if (clGetDeviceInfo(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL) != CL_SUCCESS)
        max_alloc = 0;
    const int64_t pm = blast_pad(m), pn = blast_pad(n), pk = blast_pad(k);
    const int64_t mats[3] = {pm * pk, pk * pn, pm * pn}; /* each < 2^62: the sizes are < 2^31 */
    for (int i = 0; i < 3; i++)
        if (mats[i] > INT32_MAX / batch || (max_alloc && (uint64_t)(mats[i] * batch) * sizeof(float) > max_alloc)) {
            pdnn__plan_refuse(plan, "CLBlast pads a %lld x %lld x %lld product to %lld-float temporary matrices "
                                    "(%lld of them), past its int indices or the device's largest allocation (%llu "
                                    "bytes)",
                              (long long)m, (long long)n, (long long)k, (long long)mats[i], (long long)batch,
                              (unsigned long long)max_alloc);
            return 0;
        }
    return 1;
}

pdnn_status pdnn__cl_blast_reach(int64_t last)
{
    if (last > INT32_MAX)
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "OpenCL: CLBlast indexes in int: the workspace reaches element %lld, past 2^31 (not called)",
                           (long long)last);
    return PDNN_SUCCESS;
}

int pdnn__cl_im2col_plan(const cl_dev *d, const pdnn__conv2d_call *c, pdnn__plan *plan)
{
    const int64_t lim = INT32_MAX / 4;
    if (c->h > lim || c->w > lim || c->c > lim || c->k > lim || c->p > lim || c->q > lim || c->h * c->w > lim ||
        c->p * c->q > lim) {
        pdnn__plan_refuse(plan, "im2col_gemm: the tensor is too large for its int indices");
        return 0;
    }
    const int64_t cpg = c->c / c->groups, rs = c->r * c->s, pq = c->p * c->q;
    const int64_t f = c->k * cpg * rs + c->c * rs * pq + c->k * pq;
    if (f > INT64_MAX / 8 || (uint64_t)f * sizeof(float) > SIZE_MAX / 2) {
        pdnn__plan_refuse(plan, "im2col_gemm: its workspace (%lld floats) is beyond what its indices reach",
                          (long long)f);
        return 0;
    }
    /* Its GEMMs multiply the same three sizes in some order. */
    if (!pdnn__cl_blast_fits(d, c->k / c->groups, pq, cpg * rs, 1, f, plan))
        return 0;
    plan->supported = 1;
    plan->workspace = (size_t)f * sizeof(float);
    return 1;
}

/* A CLBlast status as polydnn's: out of memory, or a backend error. */
pdnn_status pdnn__cl_blast_status(int bs)
{
    if (bs == CLBlastSuccess)
        return PDNN_SUCCESS;
    return pdnn__error(bs == CLBlastOpenCLOutOfResources || bs == CLBlastOpenCLOutOfHostMemory
                           ? PDNN_ERR_OUT_OF_MEMORY
                           : PDNN_ERR_BACKEND,
                       "OpenCL: CLBlastSgemm failed with status %d", bs);
}

static void im2col_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    if (!pdnn__cl_im2col_plan(dev, c, plan))
        return;
    if (c->groups != 1)
        pdnn__plan_skip(plan, "AUTO runs grouped convolutions with tiled: per-group GEMMs are small (%lld groups)",
                        (long long)c->groups);
}

/* Called with d->lock held. */
static pdnn_status im2col_enqueue(cl_dev *d, const pdnn__conv2d_call *c, pdnn__buf wsbuf)
{
    const int64_t cpg = c->c / c->groups, kpg = c->k / c->groups, rs = c->r * c->s, pq = c->p * c->q;
    cl_mem ws = wsbuf.region;
    const cl_long wp_off = elem_off(wsbuf);
    const cl_long col_off = wp_off + c->k * cpg * rs;
    const cl_long tmp_off = col_off + c->c * rs * pq;
    cl_int err = CL_SUCCESS;

    cl_kernel k = NULL, k_im2col = NULL, k_epilogue = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d.cl", NULL, "conv2d_pack_filter", &k);
    if (st == PDNN_SUCCESS)
        st = pdnn__cl_kernel(d, "conv2d.cl", NULL, "conv2d_im2col", &k_im2col);
    if (st == PDNN_SUCCESS)
        st = pdnn__cl_kernel(d, "conv2d.cl", NULL, "conv2d_gemm_epilogue", &k_epilogue);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem w = c->w_buf.region;
    cl_long wo = elem_off(c->w_buf);
    cl_long4 wst = strides4(c->ws);
    cl_int4 filt = int4_of((int)c->r, (int)c->s, (int)cpg, (int)c->k);
    cl_long total = c->k * cpg * rs;
    SET_ARG(k, 0, w);
    SET_ARG(k, 1, wo);
    SET_ARG(k, 2, wst);
    SET_ARG(k, 3, ws);
    SET_ARG(k, 4, wp_off);
    SET_ARG(k, 5, filt);
    SET_ARG(k, 6, total);
    st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_pack_filter", total)
                           : pdnn__cl_fail("clSetKernelArg(conv2d_pack_filter)", err);

    cl_mem x = c->x_buf.region, y = c->y_buf.region;
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : x;
    cl_long xo = elem_off(c->x_buf), yo = elem_off(c->y_buf);
    cl_long bo = c->bias_buf.region ? elem_off(c->bias_buf) : 0;
    cl_long4 xs = strides4(c->xs), ys = strides4(c->ys);
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    cl_int2 pad;
    pad.s[0] = c->pad_top;
    pad.s[1] = c->pad_left;
    cl_int2 flags;
    flags.s[0] = c->bias_buf.region != NULL;
    flags.s[1] = c->relu;
    cl_int4 out_dims = int4_of((int)c->p, (int)c->q, (int)c->r, (int)c->s);
    cl_long col_total = c->c * rs * pq, tmp_total = c->k * pq;
    for (int64_t n = 0; st == PDNN_SUCCESS && n < c->n; n++) {
        k = k_im2col;
        cl_int4 in_dims = int4_of((int)n, (int)c->c, (int)c->h, (int)c->w);
        SET_ARG(k, 0, x);
        SET_ARG(k, 1, xo);
        SET_ARG(k, 2, xs);
        SET_ARG(k, 3, ws);
        SET_ARG(k, 4, col_off);
        SET_ARG(k, 5, in_dims);
        SET_ARG(k, 6, out_dims);
        SET_ARG(k, 7, geom);
        SET_ARG(k, 8, pad);
        SET_ARG(k, 9, col_total);
        st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_im2col", col_total)
                               : pdnn__cl_fail("clSetKernelArg(conv2d_im2col)", err);
        for (int64_t g = 0; st == PDNN_SUCCESS && g < c->groups; g++) {
            /* tmp[g] (kpg x PQ) = wpack[g] (kpg x cpg*RS) * col[g] (cpg*RS x PQ) */
            st = pdnn__cl_blast_status(CLBlastSgemm(
                CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, (size_t)kpg, (size_t)pq,
                (size_t)(cpg * rs), 1.0f, ws, (size_t)(wp_off + g * kpg * cpg * rs), (size_t)(cpg * rs), ws,
                (size_t)(col_off + g * cpg * rs * pq), (size_t)pq, 0.0f, ws, (size_t)(tmp_off + g * kpg * pq),
                (size_t)pq, &d->queue, NULL));
        }
        if (st != PDNN_SUCCESS)
            break;
        k = k_epilogue;
        cl_int4 dims = int4_of((int)n, (int)c->k, (int)c->p, (int)c->q);
        SET_ARG(k, 0, ws);
        SET_ARG(k, 1, tmp_off);
        SET_ARG(k, 2, b);
        SET_ARG(k, 3, bo);
        SET_ARG(k, 4, y);
        SET_ARG(k, 5, yo);
        SET_ARG(k, 6, ys);
        SET_ARG(k, 7, dims);
        SET_ARG(k, 8, flags);
        SET_ARG(k, 9, tmp_total);
        st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_gemm_epilogue", tmp_total)
                               : pdnn__cl_fail("clSetKernelArg(conv2d_gemm_epilogue)", err);
    }
    return st;
}

static pdnn_status im2col_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                              pdnn__run_report *rep)
{
    (void)rep;
    cl_dev *d = dev;
    pdnn_status st = pdnn__cl_blast_reach(elem_off(ws) + (int64_t)(plan->workspace / sizeof(float)));
    if (st != PDNN_SUCCESS)
        return st;
    pthread_mutex_lock(&d->lock);
    st = im2col_enqueue(d, &call->u.conv2d, ws);
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_im2col_gemm = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "im2col_gemm",
    .id = PDNN_CONV_ALGO_IM2COL_GEMM,
    /* Before direct only: CLBlast's GEMM made it 3-4x direct on
     * ResNet-50's layers on PoCL, while tiled was 3-4x faster again
     * (bench/results-conv.md). */
    .rank = 60,
    .plan = im2col_plan,
    .run = im2col_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};
#else
/* ISO C wants a declaration in every translation unit. */
typedef int pdnn__cl_im2col_needs_clblast;
#endif
