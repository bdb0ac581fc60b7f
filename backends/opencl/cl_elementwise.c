/* The ops around convolution (kernels_cl/elementwise.cl): add, bias_add,
 * relu, softmax, and matmul (CLBlast's SGEMM where the build has it, the
 * naive kernel otherwise and for empty sizes). */
#include "backends/opencl/cl_internal.h"

#ifdef PDNN_HAVE_CLBLAST
#include <clblast_c.h>
#endif
#include <stdio.h>


/* Takes d->lock and gets the kernel named name; on success the caller
 * holds the lock (finish_launch releases it). */
static pdnn_status lock_kernel(cl_dev *d, const char *name, cl_kernel *k)
{
    pthread_mutex_lock(&d->lock);
    pdnn_status st = pdnn__cl_kernel(d, "elementwise.cl", NULL, name, k);
    if (st != PDNN_SUCCESS)
        pthread_mutex_unlock(&d->lock);
    return st;
}

/* Launches k over total work-items if setting its arguments went well
 * (err), then releases d->lock. An empty launch is invalid in OpenCL, so
 * total 0 does nothing. */
static pdnn_status finish_launch(cl_dev *d, cl_kernel k, const char *name, cl_int err, int64_t total)
{
    pdnn_status st = PDNN_SUCCESS;
    if (err != CL_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "clSetKernelArg(%s)", name);
        st = pdnn__cl_fail(call, err);
    } else if (total > 0) {
        st = pdnn__cl_launch(d, k, name, total);
    }
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

/* The fallback GEMM. Called with d->lock held; releases it. */
static pdnn_status matmul_naive(cl_dev *d, pdnn__buf a, pdnn__buf b, pdnn__buf c, int64_t m, int64_t n,
                                int64_t k, int trans_a, int trans_b)
{
    cl_kernel kern = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "elementwise.cl", NULL, "matmul_naive", &kern);
    if (st != PDNN_SUCCESS) {
        pthread_mutex_unlock(&d->lock);
        return st;
    }
    cl_mem am = a.region, bm = b.region, cm = c.region;
    cl_long ao = elem_off(a), bo = elem_off(b), co = elem_off(c);
    cl_long m_arg = m, n_arg = n, k_arg = k;
    cl_int2 trans;
    trans.s[0] = trans_a != 0;
    trans.s[1] = trans_b != 0;
    cl_int err = CL_SUCCESS;
    SET_ARG(kern, 0, am);
    SET_ARG(kern, 1, ao);
    SET_ARG(kern, 2, bm);
    SET_ARG(kern, 3, bo);
    SET_ARG(kern, 4, cm);
    SET_ARG(kern, 5, co);
    SET_ARG(kern, 6, m_arg);
    SET_ARG(kern, 7, n_arg);
    SET_ARG(kern, 8, k_arg);
    SET_ARG(kern, 9, trans);
    return finish_launch(d, kern, "matmul_naive", err, m * n);
}

#ifdef PDNN_HAVE_CLBLAST
/* Row-major SGEMM with element offsets; leading dimensions are the stored
 * row lengths. Called with d->lock held. */
static pdnn_status matmul_clblast(cl_dev *d, pdnn__buf a, pdnn__buf b, pdnn__buf c, int64_t m, int64_t n,
                                  int64_t k, int trans_a, int trans_b)
{
    CLBlastStatusCode bs = CLBlastSgemm(
        CLBlastLayoutRowMajor, trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
        trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, (size_t)m, (size_t)n, (size_t)k, 1.0f,
        (cl_mem)a.region, (size_t)elem_off(a), (size_t)(trans_a ? m : k), (cl_mem)b.region,
        (size_t)elem_off(b), (size_t)(trans_b ? k : n), 0.0f, (cl_mem)c.region, (size_t)elem_off(c),
        (size_t)n, &d->queue, NULL);
    if (bs != CLBlastSuccess)
        return pdnn__error(bs == CLBlastOpenCLOutOfResources || bs == CLBlastOpenCLOutOfHostMemory
                               ? PDNN_ERR_OUT_OF_MEMORY
                               : PDNN_ERR_BACKEND,
                           "OpenCL: CLBlastSgemm failed with status %d", (int)bs);
    return PDNN_SUCCESS;
}
#endif

pdnn_status pdnn__cl_matmul(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf c, int64_t m, int64_t n, int64_t k,
                             int trans_a, int trans_b)
{
    cl_dev *d = dev;
    pthread_mutex_lock(&d->lock);
#ifdef PDNN_HAVE_CLBLAST
    /* CLBlast rejects empty sizes; the kernel writes zeros for k == 0. */
    if (m > 0 && n > 0 && k > 0) {
        pdnn_status st = matmul_clblast(d, a, b, c, m, n, k, trans_a, trans_b);
        pthread_mutex_unlock(&d->lock);
        return st;
    }
#endif
    return matmul_naive(d, a, b, c, m, n, k, trans_a, trans_b);
}

