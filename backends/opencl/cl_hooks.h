/* The OpenCL backend's test hooks: what its program cache and kernel
 * builds did in this process, and a knob on winograd's chunking. Only
 * the white-box tests include this (they link libpolydnn_internal.la);
 * libpolydnn.so hides these names like every pdnn__ symbol. cl_internal.h
 * includes it, so the definitions see the same declarations. No OpenCL
 * header is needed here. */
#ifndef POLYDNN_CL_HOOKS_H
#define POLYDNN_CL_HOOKS_H

#include <stdint.h>

/* What the OpenCL program cache did in this process so far (programs
 * loaded from disk, looked up and not usable, written, and files found
 * but ignored as invalid); cl_binary_cache.c. */
typedef struct pdnn__program_cache_stats {
    long hits, misses, stores, rejected;
} pdnn__program_cache_stats;
void pdnn__opencl_program_cache_stats(pdnn__program_cache_stats *out);

/* The programs this process built from source (kernels_cl/ file, full
 * build options, build log less trailing blank lines), oldest first, at
 * most PDNN__CL_MAX_BUILDS; returns how many. cl_common.c. */
#define PDNN__CL_MAX_BUILDS 256
typedef struct pdnn__cl_build_record {
    char file[48], opts[256], log[512];
} pdnn__cl_build_record;
int pdnn__opencl_builds(const pdnn__cl_build_record **out);

/* The bytes of workspace above which winograd transforms the batch's
 * tiles a chunk at a time (0: its default, 64 MiB); cl_winograd.c. */
void pdnn__opencl_winograd_chunk_bytes(int64_t bytes);

/* 1: AUTO treats every OpenCL device as GPU-class, CPUs too (wg_gemm
 * first, and inside the backward and matmul algorithms), so that the
 * tests check those paths on PoCL; cl_wg_gemm.c. */
void pdnn__opencl_gpu_class_everywhere(int on);

#endif
