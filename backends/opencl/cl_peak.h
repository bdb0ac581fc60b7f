/* The OpenCL device's measured peak rates (kernels_cl/peak.cl), for
 * pdnn_device_measure_peak and `polydnn bench`. */
#ifndef POLYDNN_CL_PEAK_H
#define POLYDNN_CL_PEAK_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include "polydnn.h"

#include <CL/cl.h>

/* Builds peak.cl for dev in ctx, waits for queue's earlier work, and
 * measures the fp32 FMA rate (*gflops, 2 FLOP per FMA: the best of
 * float4, float8 and float16 chains) and the float4 copy bandwidth
 * (*gbytes_per_s, bytes read + written) on queue. Its buffers come from
 * the driver directly: at most 1/8 of the device's memory, 256 MiB each. */
pdnn_status pdnn__cl_measure_peak(cl_context ctx, cl_device_id dev, cl_command_queue queue, double *gflops,
                                  double *gbytes_per_s);

#endif
