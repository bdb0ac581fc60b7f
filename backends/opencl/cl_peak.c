/* Peak FMA rate and copy bandwidth of an OpenCL device, measured with the
 * small kernels of kernels_cl/peak.cl (from the kernel cache, like every
 * other kernel), timed on the host around clFinish. */
#include "backends/opencl/cl_internal.h"

#include <stdio.h>

/* Each timed launch runs at least MIN_SECONDS, so that launch overhead
 * and the clock's resolution stay near 1%, and the best of REPEATS
 * counts: short launches, many of them, so that one of them likely runs
 * while nothing else does on a shared machine. */
#define MIN_SECONDS 0.005
#define REPEATS 7

static pdnn_status peak_fail(const char *call, cl_int err)
{
    return pdnn__error(err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                               err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE
                           ? PDNN_ERR_OUT_OF_MEMORY
                           : PDNN_ERR_BACKEND,
                       "OpenCL peak measurement: %s failed with error %d", call, (int)err);
}

/* Enqueues k launches of kern over global work-items and waits: seconds. */
static pdnn_status run(cl_command_queue q, cl_kernel kern, size_t global, size_t local, int k, double *seconds)
{
    double t0 = pdnn__now();
    for (int i = 0; i < k; i++) {
        cl_int err = clEnqueueNDRangeKernel(q, kern, 1, NULL, &global, local ? &local : NULL, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            return peak_fail("clEnqueueNDRangeKernel", err);
    }
    cl_int err = clFinish(q);
    if (err != CL_SUCCESS)
        return peak_fail("clFinish", err);
    *seconds = pdnn__now() - t0;
    return PDNN_SUCCESS;
}

/* The best GFLOP/s of one FMA kernel with floats_per_item accumulators:
 * iterations grow until a launch takes MIN_SECONDS, then the best of
 * REPEATS launches counts. */
static pdnn_status fma_rate(cl_command_queue q, cl_kernel kern, cl_mem out, size_t global, size_t local,
                            int floats_per_item, double *gflops)
{
    const float a = 0.999f, b = 0.001f; /* chains converge to b / (1 - a) = 1 */
    int iters = 16;
    cl_int err = clSetKernelArg(kern, 0, sizeof out, &out);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kern, 2, sizeof a, &a);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kern, 3, sizeof b, &b);
    if (err != CL_SUCCESS)
        return peak_fail("clSetKernelArg", err);
    double t = 0.0;
    /* A first launch may include compiling the kernel for the group size
     * (PoCL does): never let it set the calibration. */
    if ((err = clSetKernelArg(kern, 1, sizeof iters, &iters)) != CL_SUCCESS)
        return peak_fail("clSetKernelArg", err);
    pdnn_status warm = run(q, kern, global, local, 1, &t);
    if (warm != PDNN_SUCCESS)
        return warm;
    for (;;) {
        if ((err = clSetKernelArg(kern, 1, sizeof iters, &iters)) != CL_SUCCESS)
            return peak_fail("clSetKernelArg", err);
        pdnn_status st = run(q, kern, global, local, 1, &t);
        if (st != PDNN_SUCCESS)
            return st;
        if (t >= MIN_SECONDS || iters >= (1 << 24))
            break;
        /* Aim a little past the target; at most 16x per step in case the
         * first launch mostly measured its own overhead. */
        double grow = t > 0 ? 1.5 * MIN_SECONDS / t : 16.0;
        iters = (int)((double)iters * (grow < 2.0 ? 2.0 : grow > 16.0 ? 16.0 : grow));
    }
    double best = t;
    for (int r = 1; r < REPEATS; r++) {
        pdnn_status st = run(q, kern, global, local, 1, &t);
        if (st != PDNN_SUCCESS)
            return st;
        if (t < best)
            best = t;
    }
    /* 4 FMAs per accumulator float per iteration (STEP4), 2 FLOP each. */
    *gflops = 8.0 * floats_per_item * (double)iters * (double)global / best * 1e-9;
    pdnn__debug("peak: %d floats per work-item: %.1f GFLOP/s (%zu work-items of %zu, %d iterations, %.1f ms)",
                floats_per_item, *gflops, global, local, iters, best * 1e3);
    return PDNN_SUCCESS;
}

static pdnn_status copy_rate(cl_context ctx, cl_device_id dev, cl_command_queue q, cl_kernel kern,
                             size_t local, double *gbytes)
{
    cl_ulong mem = 0, max_alloc = 0;
    clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    /* Two buffers, together at most 1/8 of the device: large enough to
     * stream past any cache, small enough to fit beside other work. */
    cl_ulong bytes = (cl_ulong)256 << 20;
    if (mem / 16 < bytes)
        bytes = mem / 16;
    if (max_alloc && max_alloc < bytes)
        bytes = max_alloc;
    const size_t unit = 16 * (local ? local : 64);
    bytes -= bytes % unit;
    if (bytes < unit)
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "OpenCL peak measurement: the device reports only %llu bytes of memory",
                           (unsigned long long)mem);
    cl_int err = CL_SUCCESS;
    cl_mem src = clCreateBuffer(ctx, CL_MEM_READ_ONLY, (size_t)bytes, NULL, &err);
    cl_mem dst = src ? clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, (size_t)bytes, NULL, &err) : NULL;
    pdnn_status st = PDNN_SUCCESS;
    const float one = 1.0f;
    if (!src || !dst)
        st = peak_fail("clCreateBuffer", err);
    else if ((err = clEnqueueFillBuffer(q, src, &one, sizeof one, 0, (size_t)bytes, 0, NULL, NULL)) != CL_SUCCESS)
        st = peak_fail("clEnqueueFillBuffer", err);
    else if ((err = clSetKernelArg(kern, 0, sizeof src, &src)) != CL_SUCCESS ||
             (err = clSetKernelArg(kern, 1, sizeof dst, &dst)) != CL_SUCCESS)
        st = peak_fail("clSetKernelArg", err);
    const size_t global = (size_t)bytes / 16;
    double t = 0.0;
    int k = 1;
    /* The first launch also touches dst's pages; later ones stream. */
    if (st == PDNN_SUCCESS)
        st = run(q, kern, global, local, 1, &t);
    while (st == PDNN_SUCCESS) {
        st = run(q, kern, global, local, k, &t);
        if (st != PDNN_SUCCESS || t >= MIN_SECONDS || k >= 4096)
            break;
        k *= 2;
    }
    double best = t;
    for (int r = 1; st == PDNN_SUCCESS && r < REPEATS; r++) {
        st = run(q, kern, global, local, k, &t);
        if (t < best)
            best = t;
    }
    if (st == PDNN_SUCCESS) {
        *gbytes = 2.0 * (double)bytes * k / best * 1e-9;
        pdnn__debug("peak: float4 copy of 2 x %llu bytes: %.2f GB/s (%d launch(es), %.1f ms)",
                    (unsigned long long)bytes, *gbytes, k, best * 1e3);
    }
    if (dst)
        clReleaseMemObject(dst);
    if (src)
        clReleaseMemObject(src);
    return st;
}

/* Called with d->lock held. */
static pdnn_status measure(cl_dev *d, double *gflops, double *gbytes_per_s)
{
    cl_context ctx = d->ctx;
    cl_device_id dev = d->id;
    cl_command_queue queue = d->queue;
    cl_int err = clFinish(queue);
    if (err != CL_SUCCESS)
        return peak_fail("clFinish", err);
    static const char *const names[] = {"peak_fma4", "peak_fma8", "peak_fma16", "peak_copy"};
    static const int floats[] = {64, 96, 128};
    cl_kernel kern[4] = {NULL, NULL, NULL, NULL};
    pdnn_status st = PDNN_SUCCESS;
    for (int i = 0; st == PDNN_SUCCESS && i < 4; i++)
        st = pdnn__cl_kernel(d, "peak.cl", NULL, names[i], &kern[i]);
    cl_uint units = 1;
    cl_device_type type = 0;
    size_t max_wg = 1;
    clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, NULL);
    /* A GPU wants several full work-groups of 256 per compute unit to hide
     * latency; a CPU runtime runs a work-group per core, so small groups
     * and a few per core balance the cores. */
    const int cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    size_t local = cpu ? 16 : 256;
    if (local > max_wg)
        local = max_wg;
    const size_t global = (size_t)(units ? units : 1) * local * (cpu ? 8 : 16);
    cl_mem out = NULL;
    if (st == PDNN_SUCCESS) {
        out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, global * sizeof(float), NULL, &err);
        if (!out)
            st = peak_fail("clCreateBuffer", err);
    }
    for (int i = 0; st == PDNN_SUCCESS && i < 3; i++) {
        size_t kwg = local;
        clGetKernelWorkGroupInfo(kern[i], dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL);
        double g = 0.0;
        /* A kernel too large for the group size gets the runtime's choice. */
        st = fma_rate(queue, kern[i], out, global, kwg >= local ? local : 0, floats[i], &g);
        if (g > *gflops)
            *gflops = g;
    }
    if (st == PDNN_SUCCESS)
        st = copy_rate(ctx, dev, queue, kern[3], local, gbytes_per_s);
    if (out)
        clReleaseMemObject(out);
    return st;
}

pdnn_status pdnn__cl_measure_peak(void *dev, double *gflops, double *gbytes_per_s)
{
    cl_dev *d = dev;
    *gflops = *gbytes_per_s = 0.0;
    /* The kernels are shared (their arguments with them), and other work
     * on the queue would distort the timings. */
    pthread_mutex_lock(&d->lock);
    pdnn_status st = measure(d, gflops, gbytes_per_s);
    pthread_mutex_unlock(&d->lock);
    if (st != PDNN_SUCCESS)
        *gflops = *gbytes_per_s = 0.0;
    return st;
}
