/* NumPy .npy files (format versions 1.0, 2.0, 3.0) holding little-endian
 * float32 arrays in C order: what `numpy.save` writes for float32 data. */
#ifndef POLYDNN_NPY_H
#define POLYDNN_NPY_H

#include "polydnn.h"

#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_DIMS 8

typedef struct npy_array {
    int ndim;
    int64_t shape[NPY_MAX_DIMS];
    int64_t count; /* elements */
    float *data;   /* malloc'd; NULL when count is 0 */
} npy_array;

/* Reads path. On failure returns PDNN_ERR_IO (cannot open/read) or
 * PDNN_ERR_CORRUPT (not a float32 C-order .npy, truncated, bad header)
 * or PDNN_ERR_OUT_OF_MEMORY, with a message in err. */
pdnn_status npy_read(const char *path, npy_array *out, char *err, size_t errlen);

/* Parses an in-memory .npy image (what npy_read does after reading). */
pdnn_status npy_parse(const unsigned char *buf, size_t len, npy_array *out, char *err, size_t errlen);

/* Writes a version 1.0 file. */
pdnn_status npy_write(const char *path, int ndim, const int64_t *shape, const float *data, char *err,
                      size_t errlen);

void npy_free(npy_array *a);

#endif
