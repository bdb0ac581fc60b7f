/* float16 (IEEE binary16) and bfloat16 (the top half of a float32)
 * conversions: the one rounding the library does. float32 to either
 * rounds to nearest, ties to even, as numpy's astype(float16) and
 * ml_dtypes' bfloat16 do: overflow gives infinity, results below the
 * smallest normal are float16's subnormals (bfloat16 keeps float32's
 * range, subnormals included), NaN stays NaN with its sign and the top of
 * its payload. Widening is exact. Backends call these too (the host
 * reference computes reduced precision as float32, backends/host). */
#ifndef POLYDNN_HALF_H
#define POLYDNN_HALF_H

#include "polydnn.h"

#include <stddef.h>
#include <stdint.h>

uint16_t pdnn__f32_to_f16(float f);
float pdnn__f16_to_f32(uint16_t h);
uint16_t pdnn__f32_to_bf16(float f);
float pdnn__bf16_to_f32(uint16_t h);

/* "float32", "float16", "bfloat16", "int32" ("unknown-dtype" else). */
const char *pdnn__dtype_name(pdnn_dtype t);

/* Bytes of one element of t (0: unknown). */
size_t pdnn__dtype_size(pdnn_dtype t);

/* 1 for the float dtypes an op may store in (float32, float16, bfloat16). */
int pdnn__dtype_is_float(pdnn_dtype t);

/* n elements of dtype t (a float dtype) at src widened into dst. */
void pdnn__to_f32(pdnn_dtype t, const void *src, float *dst, size_t n);
/* n float32 at src rounded into dtype t (a float dtype) at dst. */
void pdnn__from_f32(pdnn_dtype t, const float *src, void *dst, size_t n);

#endif
