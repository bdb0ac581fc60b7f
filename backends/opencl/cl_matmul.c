/* pdnn_matmul on OpenCL, four registry entries:
 *
 * tiled: register-tiled kernels for CPU-class devices (kernels_cl/
 *   elementwise.cl gemm_nn, gemm_nt, and gemv_nt for one row of A against
 *   B transposed: a fully connected layer at batch 1, 1000 x 1280 in
 *   0.14 against gemm_nt's 0.16 ms a run on PoCL), all but op(A) op(B)
 *   with both transposed; first on CPUs, after conv_gemm elsewhere.
 * conv_gemm: C = op(A) op(B) is a 1x1 convolution of a batch of m
 *   one-pixel images with k channels by n filters, run by a forward
 *   GEMM kernel on views of A, B and C (wg_gemm's work-group tiles on
 *   GPU-class devices, else implicit_gemm): a transposed operand is only
 *   other strides, so nothing is copied. It takes that algorithm's tuned
 *   configurations (and its tuning-cache entry for that 1x1 shape). On PoCL this is about ten times CLBlast's
 *   untuned SGEMM for the fully connected layers of Deep MNIST.
 * clblast: CLBlast's SGEMM, where the build has CLBlast.
 * naive: one work-item per element of C; also empty sizes (k == 0 writes
 *   zeros), which the others refuse.
 * A batch (pdnn__matmul_call's batch and strides) is one launch: tiled's
 * and naive's kernels take it as the NDRange's second dimension, clblast
 * runs CLBlast's strided-batched SGEMM, conv_gemm its convolution once
 * per matrix.
 * tiled and naive also take float16 and bfloat16 storage (issue 43):
 * their kernels built over REAL_T load and widen A and B, sum in float32
 * and round C once at the store; tiled's packed B is float. conv_gemm
 * and clblast run float32 only: the planner refuses them a reduced call,
 * naming the dtype, and AUTO passes over them. */
#include "backends/opencl/cl_internal.h"

#ifdef PDNN_HAVE_CLBLAST
#include <clblast_c.h>
#endif
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* ---- conv_gemm ------------------------------------------------------------ */

static void conv_call(const pdnn__op_call *call, pdnn__op_call *in)
{
    const pdnn__matmul_call *mc = &call->u.matmul;
    memset(in, 0, sizeof *in);
    in->op = PDNN__OP_CONV2D_FWD;
    in->tuning = call->tuning;
    in->device_key = call->device_key;
    in->force_config = call->force_config;
    pdnn__conv2d_call *c = &in->u.conv2d;
    c->n = mc->m;
    c->c = mc->k;
    c->k = mc->n;
    c->h = c->w = c->r = c->s = c->p = c->q = c->groups = 1;
    c->stride_h = c->stride_w = c->dil_h = c->dil_w = 1;
    c->x_layout = c->y_layout = PDNN_NCHW; /* views: the strides say where */
    c->w_layout = PDNN_OIHW;
    /* x[i, p] = op(A)[i, p]; w[j, p] = op(B)[p, j]; y[i, j] = C[i, j]. */
    c->xs[0] = mc->trans_a ? 1 : mc->k;
    c->xs[1] = mc->trans_a ? mc->m : 1;
    c->ws[0] = mc->trans_b ? mc->k : 1;
    c->ws[1] = mc->trans_b ? 1 : mc->n;
    c->ys[0] = mc->n;
    c->ys[1] = 1;
    c->xs[2] = c->xs[3] = c->ws[2] = c->ws[3] = c->ys[2] = c->ys[3] = 1;
    c->x_buf = mc->a_buf;
    c->w_buf = mc->b_buf;
    c->y_buf = mc->c_buf;
}

/* The forward algorithm and plan that run the 1x1 convolution in:
 * wg_gemm on GPU-class devices, else implicit_gemm (gemm_1x1's NCHW
 * kernels assume an image, not a batch of rows). */
static const pdnn__algo *conv_gemm_inner(void *dev, const pdnn__op_call *in, pdnn__plan *ip)
{
    return pdnn__cl_plan_fwd_inner(dev, in, ip, 0);
}

static void conv_gemm_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const pdnn__matmul_call *mc = &call->u.matmul;
    if (mc->m <= 0 || mc->n <= 0 || mc->k <= 0) {
        pdnn__plan_refuse(plan, "conv_gemm needs m, n and k above 0 (naive writes the zeros of k == 0)");
        return;
    }
    pdnn__op_call in;
    conv_call(call, &in);
    pdnn__plan ip;
    conv_gemm_inner(dev, &in, &ip);
    if (!ip.supported) {
        pdnn__plan_refuse(plan, "conv_gemm: %s", ip.why);
        return;
    }
    plan->workspace = ip.workspace;
    /* A batch is a launch per matrix here: after the algorithms that run
     * it in one (tiled 40, clblast 30) where conv_gemm leads. */
    if (pdnn__matmul_batch(mc) > 1 && plan->rank < 50)
        plan->rank = 50;
    plan->search = ip.search;
    plan->config = ip.config;
    snprintf(plan->config_name, sizeof plan->config_name, "%s", ip.config_name);
    plan->cached = ip.cached;
}

static pdnn_status conv_gemm_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                 pdnn__run_report *rep)
{
    (void)plan;
    pdnn__op_call in;
    conv_call(call, &in);
    /* The same inner plan as conv_gemm_plan's: the workspace covers it. */
    pdnn__plan ip;
    const pdnn__algo *a = conv_gemm_inner(dev, &in, &ip);
    if (!ip.supported)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "OpenCL: conv_gemm: %s", ip.why);
    /* A batch: the same convolution on each matrix's views. */
    const pdnn__matmul_call *mc = &call->u.matmul;
    const size_t es = sizeof(float);
    pdnn_status st = PDNN_SUCCESS;
    for (int64_t t = 0; t < pdnn__matmul_batch(mc) && st == PDNN_SUCCESS; t++) {
        in.u.conv2d.x_buf.offset = mc->a_buf.offset + (size_t)(t * mc->stride_a) * es;
        in.u.conv2d.w_buf.offset = mc->b_buf.offset + (size_t)(t * mc->stride_b) * es;
        in.u.conv2d.y_buf.offset = mc->c_buf.offset + (size_t)(t * mc->m * mc->n) * es;
        st = a->run(dev, &in, &ip, ws, rep);
    }
    return st;
}

const pdnn__algo pdnn__cl_algo_matmul_conv_gemm = {
    .op = PDNN__OP_GEMM,
    .name = "conv_gemm",
    .rank = 10,
    .plan = conv_gemm_plan,
    .run = conv_gemm_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};

/* ---- tiled ------------------------------------------------------------------ */

/* Elements of one matrix's packed B for gemm_nn: k rows of every
 * 16-column panel. */
static int64_t packed_elems(const pdnn__matmul_call *mc) { return (mc->n + 15) / 16 * 16 * mc->k; }

/* Bytes of gemm_nn's packed B: one per matrix of the batch, one in all
 * where B is broadcast. */
static size_t packed_bytes(const pdnn__matmul_call *mc)
{
    return (size_t)(mc->stride_b ? pdnn__matmul_batch(mc) : 1) * (size_t)packed_elems(mc) * sizeof(float);
}

/* bfloat16's gemm_nt reads B widened into float (elementwise.cl's
 * NT_B_T): one per matrix of the batch, one where B is broadcast. */
static int widens_b(const pdnn__op_call *call)
{
    return call->dtype == PDNN_BFLOAT16 && call->u.matmul.trans_b && call->u.matmul.m != 1;
}

static size_t widened_bytes(const pdnn__matmul_call *mc)
{
    return (size_t)(mc->stride_b ? pdnn__matmul_batch(mc) : 1) * (size_t)(mc->n * mc->k) * sizeof(float);
}

static void tiled_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const pdnn__matmul_call *mc = &call->u.matmul;
    if (mc->m <= 0 || mc->n <= 0 || mc->k <= 0) {
        pdnn__plan_refuse(plan, "tiled needs m, n and k above 0 (naive writes the zeros of k == 0)");
        return;
    }
    if (mc->trans_a && mc->trans_b) {
        pdnn__plan_refuse(plan, "tiled runs op(A) op(B) unless both are transposed");
        return;
    }
    if (mc->m > INT_MAX / 2 || mc->n > INT_MAX / 2 || mc->k > INT_MAX / 2 || pdnn__matmul_batch(mc) > INT_MAX) {
        pdnn__plan_refuse(plan, "tiled takes sizes below 2^30 and batches below 2^31; this matmul is %lld x %lld x "
                          "%lld, batch %lld",
                          (long long)mc->m, (long long)mc->n, (long long)mc->k, (long long)pdnn__matmul_batch(mc));
        return;
    }
    if (!mc->trans_b)
        plan->workspace = packed_bytes(mc);
    else if (widens_b(call))
        plan->workspace = widened_bytes(mc);
    if (!((const cl_dev *)dev)->cls.t.matmul_tiled_first)
        plan->rank = 40; /* after conv_gemm (cl_device_table.c) */
}

/* Sets kernel name's arguments (built for storage dtype t) from values
 * (their sizes in sizes) and launches it over total items for each of
 * batch matrices (the second dimension), under d->lock. */
static pdnn_status launch(cl_dev *d, pdnn_dtype t, const char *name, int n_args, void *const *values,
                          const size_t *sizes, int64_t total, int64_t batch)
{
    cl_kernel kern = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "elementwise.cl", pdnn__cl_real_opts(t), name, &kern);
    if (st != PDNN_SUCCESS)
        return st;
    for (int i = 0; i < n_args; i++) {
        const cl_int err = clSetKernelArg(kern, (cl_uint)i, sizes[i], values[i]);
        if (err != CL_SUCCESS) {
            char what[64];
            snprintf(what, sizeof what, "clSetKernelArg(%s, %d)", name, i);
            return pdnn__cl_fail(what, err);
        }
    }
    if (total <= 0)
        return PDNN_SUCCESS;
    const size_t local[2] = {pdnn__cl_wg_cap(d, kern, 64), 1};
    const size_t global[2] = {((size_t)total + local[0] - 1) / local[0] * local[0], (size_t)batch};
    const cl_int err = clEnqueueNDRangeKernel(d->queue, kern, 2, NULL, global, local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)", name);
        return pdnn__cl_fail(what, err);
    }
    return PDNN_SUCCESS;
}

static pdnn_status tiled_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)plan, (void)rep;
    cl_dev *d = dev;
    const pdnn__matmul_call *c = &call->u.matmul;
    const pdnn_dtype t = call->dtype;
    cl_int m = (cl_int)c->m, n = (cl_int)c->n, k = (cl_int)c->k;
    cl_mem am = c->a_buf.region, bm = c->b_buf.region, cmem = c->c_buf.region, wm = ws.region;
    /* A, B and C in t's elements; the packed B (workspace) is float. */
    cl_long ao = pdnn__cl_real_off(c->a_buf, t), bo = pdnn__cl_real_off(c->b_buf, t),
            co = pdnn__cl_real_off(c->c_buf, t), wo = elem_off(ws);
    cl_long ldc = c->n;
    const int64_t nb = pdnn__matmul_batch(c);
    /* The batch strides (0 for one matrix); C's matrices are dense. */
    cl_long sa = nb > 1 ? c->stride_a : 0, sb = nb > 1 ? c->stride_b : 0, sc = c->m * c->n;
    pdnn_status st;
    pthread_mutex_lock(&d->lock);
    if (c->trans_b && m == 1) { /* gemv_nt: one row of A */
        cl_long ldb = c->k;
        void *const v[] = {&am, &ao, &bm, &bo, &ldb, &cmem, &co, &n, &k, &sa, &sb, &sc};
        const size_t z[] = {sizeof am, sizeof ao, sizeof bm, sizeof bo, sizeof ldb, sizeof cmem, sizeof co,
                            sizeof n, sizeof k, sizeof sa, sizeof sb, sizeof sc};
        st = launch(d, t, "gemv_nt", 12, v, z, (int64_t)((n + 7) / 8), nb);
    } else if (c->trans_b) { /* gemm_nt: A's rows and B's stored rows run along the sum */
        cl_long lda = c->k, ldb = c->k;
        st = PDNN_SUCCESS;
        if (widens_b(call)) { /* B's matrices widened, dense, into the workspace */
            const int64_t dims[4] = {sb ? nb : 1, c->n, c->k, 1}, ss[4] = {sb, c->k, 1, 1},
                          ds[4] = {c->n * c->k, c->k, 1, 1};
            st = pdnn__cl_widen_locked(d, t, c->b_buf, dims, ss, ws, ds);
            bm = wm, bo = wo, sb = sb ? c->n * c->k : 0;
        }
        cl_int n_rt = (m + 2) / 3;
        void *const v[] = {&am, &ao, &lda, &bm, &bo, &ldb, &cmem, &co, &ldc, &m, &n, &k, &n_rt, &sa, &sb, &sc};
        const size_t z[] = {sizeof am, sizeof ao, sizeof lda, sizeof bm, sizeof bo, sizeof ldb, sizeof cmem,
                            sizeof co, sizeof ldc, sizeof m, sizeof n, sizeof k, sizeof n_rt, sizeof sa,
                            sizeof sb, sizeof sc};
        if (st == PDNN_SUCCESS)
            st = launch(d, t, "gemm_nt", 16, v, z, (int64_t)n_rt * ((n + 3) / 4), nb);
    } else {
        /* B packed once per matrix, once in all where it is broadcast. */
        cl_long ldb = c->n, sbp = sb ? packed_elems(c) : 0;
        void *const pv[] = {&bm, &bo, &ldb, &wm, &wo, &k, &n, &sb, &sbp};
        const size_t pz[] = {sizeof bm, sizeof bo, sizeof ldb, sizeof wm, sizeof wo, sizeof k, sizeof n, sizeof sb,
                             sizeof sbp};
        st = launch(d, t, "gemm_pack_b", 9, pv, pz, (int64_t)k * ((n + 15) / 16), sb ? nb : 1);
        /* A(i, p): A stored m x k, or k x m when transposed */
        cl_long as_i = c->trans_a ? 1 : c->k, as_p = c->trans_a ? c->m : 1;
        cl_int n_rt = (m + 5) / 6;
        void *const v[] = {&am, &ao, &as_i, &as_p, &wm, &wo, &cmem, &co, &ldc, &m, &n, &k, &n_rt, &sa, &sbp, &sc};
        const size_t z[] = {sizeof am, sizeof ao, sizeof as_i, sizeof as_p, sizeof wm, sizeof wo, sizeof cmem,
                            sizeof co, sizeof ldc, sizeof m, sizeof n, sizeof k, sizeof n_rt, sizeof sa,
                            sizeof sbp, sizeof sc};
        if (st == PDNN_SUCCESS)
            st = launch(d, t, "gemm_nn", 16, v, z, (int64_t)n_rt * ((n + 15) / 16), nb);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_matmul_tiled = {
    .op = PDNN__OP_GEMM,
    .name = "tiled",
    .rank = 5,
    .plan = tiled_plan,
    .run = tiled_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT, /* REAL_T storage, float32 sums */
};

/* ---- clblast ---------------------------------------------------------------- */

#ifdef PDNN_HAVE_CLBLAST
static void clblast_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const pdnn__matmul_call *mc = &call->u.matmul;
    const int64_t nb = pdnn__matmul_batch(mc) - 1; /* the last matrix's offsets */
    int64_t last = elem_off(mc->a_buf) + nb * mc->stride_a + mc->m * mc->k;
    if (elem_off(mc->b_buf) + nb * mc->stride_b + mc->k * mc->n > last)
        last = elem_off(mc->b_buf) + nb * mc->stride_b + mc->k * mc->n;
    if (elem_off(mc->c_buf) + (nb + 1) * mc->m * mc->n > last)
        last = elem_off(mc->c_buf) + (nb + 1) * mc->m * mc->n;
    pdnn__cl_blast_fits(dev, mc->m, mc->n, mc->k, nb + 1, last, plan);
}

/* Row-major SGEMM with element offsets; leading dimensions are the stored
 * row lengths. A batch is one strided-batched call. */
static pdnn_status clblast_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                               pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__matmul_call *c = &call->u.matmul;
    const CLBlastTranspose ta = c->trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
                           tb = c->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    const size_t lda = (size_t)(c->trans_a ? c->m : c->k), ldb = (size_t)(c->trans_b ? c->k : c->n);
    pthread_mutex_lock(&d->lock);
    CLBlastStatusCode bs =
        pdnn__matmul_batch(c) > 1
            ? CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, (size_t)c->m, (size_t)c->n, (size_t)c->k, 1.0f,
                                         (cl_mem)c->a_buf.region, (size_t)elem_off(c->a_buf), lda,
                                         (size_t)c->stride_a, (cl_mem)c->b_buf.region, (size_t)elem_off(c->b_buf),
                                         ldb, (size_t)c->stride_b, 0.0f, (cl_mem)c->c_buf.region,
                                         (size_t)elem_off(c->c_buf), (size_t)c->n, (size_t)(c->m * c->n),
                                         (size_t)c->batch, &d->queue, NULL)
            : CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, (size_t)c->m, (size_t)c->n, (size_t)c->k, 1.0f,
                           (cl_mem)c->a_buf.region, (size_t)elem_off(c->a_buf), lda, (cl_mem)c->b_buf.region,
                           (size_t)elem_off(c->b_buf), ldb, 0.0f, (cl_mem)c->c_buf.region, (size_t)elem_off(c->c_buf),
                           (size_t)c->n, &d->queue, NULL);
    pthread_mutex_unlock(&d->lock);
    return pdnn__cl_blast_status(bs);
}

const pdnn__algo pdnn__cl_algo_matmul_clblast = {
    .op = PDNN__OP_GEMM,
    .name = "clblast",
    .rank = 30,
    .plan = clblast_plan,
    .run = clblast_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};
#endif

/* ---- naive ------------------------------------------------------------------ */

static void naive_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan) { (void)dev, (void)call, (void)plan; }

static pdnn_status naive_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__matmul_call *c = &call->u.matmul;
    const pdnn_dtype t = call->dtype;
    cl_mem am = c->a_buf.region, bm = c->b_buf.region, cm = c->c_buf.region;
    cl_long ao = pdnn__cl_real_off(c->a_buf, t), bo = pdnn__cl_real_off(c->b_buf, t),
            co = pdnn__cl_real_off(c->c_buf, t);
    cl_long m_arg = c->m, n_arg = c->n, k_arg = c->k;
    const int64_t nb = pdnn__matmul_batch(c);
    cl_long sa = nb > 1 ? c->stride_a : 0, sb = nb > 1 ? c->stride_b : 0;
    cl_int2 trans;
    trans.s[0] = c->trans_a != 0;
    trans.s[1] = c->trans_b != 0;
    void *const v[] = {&am, &ao, &bm, &bo, &cm, &co, &m_arg, &n_arg, &k_arg, &trans, &sa, &sb};
    const size_t z[] = {sizeof am, sizeof ao, sizeof bm, sizeof bo, sizeof cm, sizeof co, sizeof m_arg,
                        sizeof n_arg, sizeof k_arg, sizeof trans, sizeof sa, sizeof sb};
    pthread_mutex_lock(&d->lock);
    const pdnn_status st = launch(d, t, "matmul_naive", 12, v, z, c->m * c->n, nb);
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_matmul_naive = {
    .op = PDNN__OP_GEMM,
    .name = "naive",
    .rank = 100,
    .plan = naive_plan,
    .run = naive_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT, /* REAL_T storage, float32 sums */
};
