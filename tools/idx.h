/* IDX files (the MNIST / Fashion-MNIST format), read through zlib, so
 * gzip'd (as Debian ships them) or plain. Images: magic 0x00000803
 * (unsigned bytes, 3 dimensions: count, rows, columns); labels: magic
 * 0x00000801 (unsigned bytes, 1 dimension). */
#ifndef POLYDNN_IDX_H
#define POLYDNN_IDX_H

#include "polydnn.h"

#include <stddef.h>
#include <stdint.h>

/* Debian's dataset-fashion-mnist: the default of `--data DIR`. */
#define IDX_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"

/* What the reader allocates at most for one file's data, whatever its
 * header says: 1 GiB of bytes (MNIST's training images are 47 MB). */
#define IDX_MAX_BYTES ((uint64_t)1 << 30)

typedef struct idx_images {
    int64_t count;
    int rows, cols;
    float *data; /* count x 1 x rows x cols, scaled to [0, 1]; malloc'd */
} idx_images;

typedef struct idx_labels {
    int64_t count;
    int32_t *data; /* malloc'd */
} idx_labels;

/* Reads an idx3-ubyte image file. The header is checked (magic, nonzero
 * dimensions, at most IDX_MAX_BYTES), then the data is read in growing
 * pieces, so a header that promises more than the file holds costs no
 * more memory than the file gave; exactly the declared bytes must follow
 * the header (truncated or trailing data is an error), and a gzip stream
 * must end with its trailer, whose CRC-32 and length must match. The file
 * is opened without blocking: a FIFO, device or directory is refused
 * (PDNN_ERR_IO). layout is
 * PDNN_NCHW or PDNN_NHWC: with one channel both are the
 * same bytes, but any other layout is refused. Errors: PDNN_ERR_IO (cannot
 * open or read), PDNN_ERR_CORRUPT (bad magic or dims, truncated, trailing
 * data, a corrupt gzip stream), PDNN_ERR_INVALID_ARGUMENT,
 * PDNN_ERR_OUT_OF_MEMORY; err names the file and the problem, *out is
 * empty. */
pdnn_status idx_read_images(const char *path, pdnn_layout layout, idx_images *out, char *err, size_t errlen);

/* Reads an idx1-ubyte label file with the same checks; a label >= classes
 * is an error naming its index and value. classes is 1..256. */
pdnn_status idx_read_labels(const char *path, int classes, idx_labels *out, char *err, size_t errlen);

typedef struct idx_dataset {
    idx_images images;
    idx_labels labels;
} idx_dataset;

/* One split of an MNIST-style directory: split is "train" or "t10k"; reads
 * DIR/SPLIT-images-idx3-ubyte.gz (or the same name without .gz when only
 * that exists) and DIR/SPLIT-labels-idx1-ubyte[.gz]. The images must be
 * rows x cols (both 0: any size), the two counts must agree, every label
 * be below classes; each failure is PDNN_ERR_CORRUPT naming the file, what
 * it holds and what was expected. dir NULL means IDX_DEFAULT_DIR. */
pdnn_status idx_load(const char *dir, const char *split, int classes, int rows, int cols, pdnn_layout layout,
                     idx_dataset *out, char *err, size_t errlen);

void idx_images_free(idx_images *a);
void idx_labels_free(idx_labels *a);
void idx_dataset_free(idx_dataset *d);

#endif
