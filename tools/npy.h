/* NumPy .npy files (format versions 1.0, 2.0, 3.0) holding little-endian
 * float32 arrays in C order: what `numpy.save` writes for float32 data;
 * float16 ('<f2') is read too, widened to float32, and written from
 * float16 data (npy_write_f16). */
#ifndef POLYDNN_NPY_H
#define POLYDNN_NPY_H

#include "polydnn.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define NPY_MAX_DIMS 8
/* The longest header read (numpy itself refuses more than 10000 bytes
 * unless told otherwise); a longer declared length is refused before any
 * of it is read. */
#define NPY_MAX_HEADER_LEN (1u << 20)

typedef struct npy_array {
    int ndim;
    int64_t shape[NPY_MAX_DIMS];
    int64_t count; /* elements */
    float *data;   /* malloc'd; NULL when count is 0 */
    int elem;      /* bytes an element in the file: 4 (float32, '<f4') or 2
                      (float16, '<f2', widened exactly into data) */
} npy_array;

/* Reads path: the header first (magic, version, bounded length, then the
 * dict, parsed strictly: exactly the keys 'descr', 'fortran_order' and
 * 'shape', once each), then exactly the data it declares, straight into
 * one allocation of that size. A regular file's size is checked against
 * the shape before anything is allocated; a pipe or device is read only
 * as far as the header allows. On failure returns PDNN_ERR_IO (cannot
 * open/read) or PDNN_ERR_CORRUPT (not a float32 C-order .npy, truncated,
 * bad header, trailing data) or PDNN_ERR_OUT_OF_MEMORY, with a message
 * naming path and the problem in err; out is then empty. */
pdnn_status npy_read(const char *path, npy_array *out, char *err, size_t errlen);

/* npy_read on an open stream positioned at the start of a .npy image;
 * name is used in messages. The stream is not closed. */
pdnn_status npy_read_stream(FILE *f, const char *name, npy_array *out, char *err, size_t errlen);

/* Parses an in-memory .npy image of len bytes, with the same checks and
 * messages as npy_read (without a file name). */
pdnn_status npy_parse(const unsigned char *buf, size_t len, npy_array *out, char *err, size_t errlen);

/* Writes a version 1.0 file through pdnn__file_replace_named
 * (src/core/fileio.c, the library's routine compiled into the tool): to a
 * new temporary file in path's directory, every write checked, flushed and
 * fsync'd, then renamed over path. On failure the temporary file is
 * removed, a file already at path is left as it was, and err names path,
 * the step that failed and why. A path that names an existing device or
 * FIFO (/dev/null, /dev/stdout) is written in place; a symbolic link is
 * followed, so the link stays. The directory must exist. */
pdnn_status npy_write(const char *path, int ndim, const int64_t *shape, const float *data, char *err,
                      size_t errlen);

/* npy_write for float16 data (IEEE binary16 bits, as pdnn_tensor_read
 * gives a PDNN_FLOAT16 tensor's): a '<f2' file, which numpy.load reads as
 * float16. */
pdnn_status npy_write_f16(const char *path, int ndim, const int64_t *shape, const uint16_t *data, char *err,
                          size_t errlen);

/* The bytes npy_write would write, in one malloc'd buffer (*buf, *len). */
pdnn_status npy_encode(int ndim, const int64_t *shape, const float *data, unsigned char **buf, size_t *len,
                       char *err, size_t errlen);

/* Writes the printf-style message into err (len bytes; NULL or 0: none)
 * and returns st: the readers' one way to fail. */
pdnn_status cli_set_err(pdnn_status st, char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

void npy_free(npy_array *a);

#endif
