/* IDX reader for `polydnn train`'s data sets (see idx.h). zlib's gz*
 * functions read gzip'd and plain files alike; the header is never
 * trusted for more memory than the data actually read. */
#include "idx.h"
#include "npy.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>


void idx_images_free(idx_images *a)
{
    if (!a)
        return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

void idx_labels_free(idx_labels *a)
{
    if (!a)
        return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

void idx_dataset_free(idx_dataset *d)
{
    if (!d)
        return;
    idx_images_free(&d->images);
    idx_labels_free(&d->labels);
}

/* Reads up to n bytes; returns how many, or -1 on a read or gzip error
 * (message in err). */
static int64_t gz_read_n(gzFile g, const char *path, unsigned char *buf, size_t n, char *err, size_t errlen)
{
    size_t got = 0;
    while (got < n) {
        size_t ask = n - got > (size_t)1 << 30 ? (size_t)1 << 30 : n - got;
        int r = gzread(g, buf + got, (unsigned)ask);
        if (r < 0) {
            int zerr = 0;
            const char *msg = gzerror(g, &zerr);
            if (zerr == Z_ERRNO)
                cli_set_err(PDNN_ERR_IO, err, errlen, "%s: read error: %s", path, strerror(errno));
            else
                cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: corrupt gzip data: %s", path, msg ? msg : "unknown error");
            return -1;
        }
        if (r == 0) {
            /* zlib reports a gzip stream cut short only here, at the end. */
            int zerr = Z_OK;
            const char *msg = gzerror(g, &zerr);
            if (zerr != Z_OK) {
                cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: corrupt gzip data: %s (truncated?)", path,
                     msg ? msg : "unknown error");
                return -1;
            }
            break;
        }
        got += (size_t)r;
    }
    return (int64_t)got;
}

static pdnn_status gz_error_status(gzFile g)
{
    int zerr = 0;
    (void)gzerror(g, &zerr);
    return zerr == Z_ERRNO ? PDNN_ERR_IO : PDNN_ERR_CORRUPT;
}

static pdnn_status open_gz(const char *path, gzFile *g, char *err, size_t errlen)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return cli_set_err(PDNN_ERR_IO, err, errlen, "%s: %s", path, strerror(errno));
    /* A FIFO would block and a directory reads as garbage: data sets are files. */
    if (!S_ISREG(sb.st_mode))
        return cli_set_err(PDNN_ERR_IO, err, errlen, "%s: not a regular file", path);
    *g = gzopen(path, "rb");
    if (!*g)
        return cli_set_err(PDNN_ERR_IO, err, errlen, "%s: %s", path, errno ? strerror(errno) : "cannot open");
    return PDNN_SUCCESS;
}

/* Reads the header (magic + ndim dims) and exactly the bytes it declares,
 * in growing pieces. want_magic is 0x0801 or 0x0803. */
static pdnn_status read_idx(const char *path, unsigned want_magic, int ndim, uint32_t *dims, unsigned char **data,
                            uint64_t *bytes, char *err, size_t errlen)
{
    *data = NULL;
    *bytes = 0;
    gzFile g = NULL;
    pdnn_status st = open_gz(path, &g, err, errlen);
    if (st != PDNN_SUCCESS)
        return st;
    const char *kind = want_magic == 0x0803 ? "an idx3-ubyte image file" : "an idx1-ubyte label file";
    unsigned char hdr[16] = {0};
    size_t hlen = 4 + 4 * (size_t)ndim;
    int64_t got = gz_read_n(g, path, hdr, hlen, err, errlen);
    if (got < 0) {
        st = gz_error_status(g);
        gzclose(g);
        return st;
    }
    /* The magic first: a label file given for images says so, even though
     * it is also shorter than an image header. */
    unsigned magic = (unsigned)hdr[0] << 24 | (unsigned)hdr[1] << 16 | (unsigned)hdr[2] << 8 | hdr[3];
    if (got >= 4 && magic != want_magic) {
        gzclose(g);
        const char *what = magic == 0x0801 ? " (an idx1 label file)"
                           : magic == 0x0803 ? " (an idx3 image file)"
                           : (magic >> 16) == 0 && ((magic >> 8) & 0xff) != 0x08
                               ? " (IDX, but not of unsigned bytes)"
                               : "";
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: bad magic 0x%08x%s: expected 0x%08x, %s", path, magic, what,
                    want_magic, kind);
    }
    if ((size_t)got < hlen) {
        gzclose(g);
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: truncated header: %lld bytes, %s has a %zu-byte header",
                    path, (long long)got, kind, hlen);
    }
    uint64_t total = 1;
    for (int i = 0; i < ndim; i++) {
        const unsigned char *p = hdr + 4 + 4 * i;
        dims[i] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (dims[i] == 0) {
            gzclose(g);
            return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: dimension %d is 0", path, i);
        }
        if (dims[i] > IDX_MAX_BYTES || total * dims[i] > IDX_MAX_BYTES) {
            gzclose(g);
            return cli_set_err(PDNN_ERR_CORRUPT, err, errlen,
                        "%s: the header declares more than %llu bytes of data (dimension %d is %u): not a data set "
                        "polydnn reads",
                        path, (unsigned long long)IDX_MAX_BYTES, i, dims[i]);
        }
        total *= dims[i];
    }
    unsigned char *buf = NULL;
    uint64_t used = 0, cap = 0;
    while (used < total) {
        if (used == cap) {
            uint64_t ncap = cap ? cap * 2 : (uint64_t)1 << 20;
            if (ncap > total)
                ncap = total;
            unsigned char *nb = realloc(buf, (size_t)ncap);
            if (!nb) {
                free(buf);
                gzclose(g);
                return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: out of memory for %llu bytes", path,
                            (unsigned long long)ncap);
            }
            buf = nb;
            cap = ncap;
        }
        got = gz_read_n(g, path, buf + used, (size_t)(cap - used), err, errlen);
        if (got < 0) {
            st = gz_error_status(g);
            free(buf);
            gzclose(g);
            return st;
        }
        used += (uint64_t)got;
        if (used < cap)
            break;
    }
    if (used < total) {
        free(buf);
        gzclose(g);
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: truncated data: the header declares %llu bytes, the file has %llu",
                    path, (unsigned long long)total, (unsigned long long)used);
    }
    unsigned char extra;
    got = gz_read_n(g, path, &extra, 1, err, errlen);
    if (got != 0) {
        st = got < 0 ? gz_error_status(g) : PDNN_ERR_CORRUPT;
        if (got > 0)
            cli_set_err(st, err, errlen, "%s: trailing data after the %llu bytes the header declares", path,
                 (unsigned long long)total);
        free(buf);
        gzclose(g);
        return st;
    }
    gzclose(g);
    *data = buf;
    *bytes = total;
    return PDNN_SUCCESS;
}

pdnn_status idx_read_images(const char *path, pdnn_layout layout, idx_images *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!path)
        return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "idx_read_images: no path");
    if (layout != PDNN_NCHW && layout != PDNN_NHWC)
        return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "%s: images are read in NCHW or NHWC, not layout %d",
                    path, (int)layout);
    uint32_t dims[3] = {0, 0, 0};
    unsigned char *bytes = NULL;
    uint64_t n = 0;
    pdnn_status st = read_idx(path, 0x0803, 3, dims, &bytes, &n, err, errlen);
    if (st != PDNN_SUCCESS)
        return st;
    if (dims[1] > INT_MAX || dims[2] > INT_MAX) {
        free(bytes);
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: images of %ux%u", path, dims[1], dims[2]);
    }
    float *f = malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!f) {
        free(bytes);
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: out of memory for %llu floats", path,
                    (unsigned long long)n);
    }
    /* One channel: NCHW and NHWC are the same order of bytes. */
    for (uint64_t i = 0; i < n; i++)
        f[i] = (float)bytes[i] / 255.0f;
    free(bytes);
    out->count = dims[0];
    out->rows = (int)dims[1];
    out->cols = (int)dims[2];
    out->data = f;
    return PDNN_SUCCESS;
}

pdnn_status idx_read_labels(const char *path, int classes, idx_labels *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!path)
        return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "idx_read_labels: no path");
    if (classes < 1 || classes > 256)
        return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "%s: %d classes (1 to 256 fit a byte label)", path,
                    classes);
    uint32_t dims[1] = {0};
    unsigned char *bytes = NULL;
    uint64_t n = 0;
    pdnn_status st = read_idx(path, 0x0801, 1, dims, &bytes, &n, err, errlen);
    if (st != PDNN_SUCCESS)
        return st;
    for (uint64_t i = 0; i < n; i++)
        if (bytes[i] >= classes) {
            unsigned v = bytes[i];
            free(bytes);
            return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: label %llu is %u, outside 0..%d", path,
                        (unsigned long long)i, v, classes - 1);
        }
    int32_t *l = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!l) {
        free(bytes);
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: out of memory", path);
    }
    for (uint64_t i = 0; i < n; i++)
        l[i] = bytes[i];
    free(bytes);
    out->count = (int64_t)n;
    out->data = l;
    return PDNN_SUCCESS;
}

/* DIR/NAME.gz when it exists, else DIR/NAME (then the error names the .gz
 * when neither does). */
static char *data_path(const char *dir, const char *split, const char *what)
{
    size_t len = strlen(dir) + strlen(split) + strlen(what) + 32;
    char *p = malloc(len);
    if (!p)
        return NULL;
    snprintf(p, len, "%s/%s-%s.gz", dir, split, what);
    struct stat sb;
    if (stat(p, &sb) != 0 && errno == ENOENT) {
        snprintf(p, len, "%s/%s-%s", dir, split, what);
        if (stat(p, &sb) != 0)
            snprintf(p, len, "%s/%s-%s.gz", dir, split, what);
    }
    return p;
}

pdnn_status idx_load(const char *dir, const char *split, int classes, pdnn_layout layout, idx_dataset *out,
                     char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!dir)
        dir = IDX_DEFAULT_DIR;
    if (!split || (strcmp(split, "train") != 0 && strcmp(split, "t10k") != 0))
        return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "data split '%s': expected train or t10k",
                    split ? split : "(null)");
    char *ip = data_path(dir, split, "images-idx3-ubyte");
    char *lp = data_path(dir, split, "labels-idx1-ubyte");
    pdnn_status st = PDNN_SUCCESS;
    if (!ip || !lp)
        st = cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: out of memory", dir);
    if (st == PDNN_SUCCESS)
        st = idx_read_images(ip, layout, &out->images, err, errlen);
    if (st == PDNN_SUCCESS)
        st = idx_read_labels(lp, classes, &out->labels, err, errlen);
    if (st == PDNN_SUCCESS && out->images.count != out->labels.count)
        st = cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s has %lld images but %s has %lld labels", ip,
                  (long long)out->images.count, lp, (long long)out->labels.count);
    if (st != PDNN_SUCCESS)
        idx_dataset_free(out);
    free(ip);
    free(lp);
    return st;
}
