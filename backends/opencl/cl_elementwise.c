/* The ops around convolution (kernels_cl/elementwise.cl): add, bias_add,
 * relu, softmax. (matmul is a registry op: cl_matmul.c.) */
#include "backends/opencl/cl_internal.h"

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


