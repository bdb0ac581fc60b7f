/* IDX reader for `polydnn train`'s data sets (see idx.h). Plain and
 * gzip'd files alike (zlib's inflate); the header is never trusted for
 * more memory than the data actually read. */
#include "idx.h"
#include "npy.h"
#include "core/fileio.h" /* libc only, compiled into the tool */

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

/* One data file, open. A gzip'd file is inflated here rather than through
 * gzread: gzread returns end-of-file without complaint when the input ends
 * just where the compressed data does, so a file missing its 8-byte trailer
 * (CRC-32 and length) would pass unchecked; inflate with the gzip wrapper
 * (windowBits 16 + MAX_WBITS) reports Z_STREAM_END only after checking the
 * trailer, so anything short of that is an error. */
typedef struct idx_file {
    FILE *f;
    const char *path;
    int gz;          /* a gzip stream: z is initialised */
    int member_done; /* gz: the current member ended, its trailer checked */
    int finished;    /* no more data */
    z_stream z;      /* next_in / avail_in: the unread input, plain files' too */
    unsigned char in[1 << 16];
} idx_file;

/* Appends what the file gives to the unread input; the count, or -1. */
static int64_t file_fill(idx_file *r, char *err, size_t errlen)
{
    if (r->z.avail_in && r->z.next_in != r->in)
        memmove(r->in, r->z.next_in, r->z.avail_in);
    r->z.next_in = r->in;
    size_t got = fread(r->in + r->z.avail_in, 1, sizeof r->in - r->z.avail_in, r->f);
    if (got == 0 && ferror(r->f)) {
        cli_set_err(PDNN_ERR_IO, err, errlen, "%s: read error: %s", r->path, strerror(errno));
        return -1;
    }
    r->z.avail_in += (uInt)got;
    return (int64_t)got;
}

/* Opens path without blocking (a FIFO, a device or a directory is refused,
 * as data sets are files) and sees whether it is gzip'd. */
static pdnn_status file_open(const char *path, idx_file *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    struct stat sb;
    char why[128] = "";
    errno = 0;
    int opened = pdnn__file_open_read(path, &r->f, &sb, why, sizeof why);
    if (opened < 0)
        return cli_set_err(PDNN_ERR_IO, err, errlen, "%s: %s", path, why);
    if (opened == 0)
        return cli_set_err(PDNN_ERR_IO, err, errlen, "%s: %s", path, errno ? strerror(errno) : "cannot open");
    if (file_fill(r, err, errlen) < 0) {
        fclose(r->f);
        return PDNN_ERR_IO;
    }
    if (r->z.avail_in >= 2 && r->in[0] == 0x1f && r->in[1] == 0x8b) {
        int zr = inflateInit2(&r->z, 16 + MAX_WBITS);
        if (zr != Z_OK) {
            fclose(r->f);
            return cli_set_err(zr == Z_MEM_ERROR ? PDNN_ERR_OUT_OF_MEMORY : PDNN_ERR_INTERNAL, err, errlen,
                               "%s: zlib's inflateInit2 failed (%d)", path, zr);
        }
        r->gz = 1;
    }
    return PDNN_SUCCESS;
}

static void file_close(idx_file *r)
{
    if (r->gz)
        inflateEnd(&r->z);
    if (r->f)
        fclose(r->f);
    r->f = NULL;
}

/* Reads up to n bytes (fewer only at the end of the data) into buf; *got
 * says how many. */
static pdnn_status file_read(idx_file *r, unsigned char *buf, size_t n, size_t *got, char *err, size_t errlen)
{
    *got = 0;
    while (*got < n && !r->finished) {
        if (r->z.avail_in == 0 || (r->member_done && r->z.avail_in < 2)) {
            int64_t k = file_fill(r, err, errlen);
            if (k < 0)
                return PDNN_ERR_IO;
            if (k == 0 && r->z.avail_in == 0 && (!r->gz || r->member_done)) {
                r->finished = 1;
                break;
            }
            if (k == 0 && r->gz && !r->member_done)
                return cli_set_err(PDNN_ERR_CORRUPT, err, errlen,
                                   "%s: corrupt gzip data: truncated (the file ends inside the compressed data "
                                   "or before its CRC-32 and length trailer)", r->path);
        }
        if (!r->gz) {
            size_t take = n - *got < r->z.avail_in ? n - *got : r->z.avail_in;
            memcpy(buf + *got, r->z.next_in, take);
            r->z.next_in += take;
            r->z.avail_in -= (uInt)take;
            *got += take;
            continue;
        }
        if (r->member_done) {
            /* Another gzip member may follow; anything else after a whole
             * member is ignored, as gzip(1) and gzread do. */
            if (r->z.avail_in < 2 || r->z.next_in[0] != 0x1f || r->z.next_in[1] != 0x8b) {
                r->finished = 1;
                break;
            }
            inflateReset(&r->z);
            r->member_done = 0;
        }
        size_t ask = n - *got > (size_t)1 << 30 ? (size_t)1 << 30 : n - *got;
        const uInt in_before = r->z.avail_in;
        r->z.next_out = buf + *got;
        r->z.avail_out = (uInt)ask;
        int zr = inflate(&r->z, Z_NO_FLUSH);
        *got += ask - r->z.avail_out;
        if (zr == Z_STREAM_END)
            r->member_done = 1;
        else if (zr == Z_MEM_ERROR)
            return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: out of memory inflating", r->path);
        else if (zr != Z_OK && !(zr == Z_BUF_ERROR && r->z.avail_in == 0))
            return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: corrupt gzip data: %s", r->path,
                               r->z.msg ? r->z.msg : zError(zr));
        else if (zr == Z_OK && r->z.avail_out == ask && r->z.avail_in == in_before)
            return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: corrupt gzip data: inflate makes no progress",
                               r->path);
    }
    return PDNN_SUCCESS;
}

/* Reads the header (magic + ndim dims) and exactly the bytes it declares,
 * in growing pieces. want_magic is 0x0801 or 0x0803. */
static pdnn_status read_idx(const char *path, unsigned want_magic, int ndim, uint32_t *dims, unsigned char **data,
                            uint64_t *bytes, char *err, size_t errlen)
{
    *data = NULL;
    *bytes = 0;
    idx_file r;
    pdnn_status st = file_open(path, &r, err, errlen);
    if (st != PDNN_SUCCESS)
        return st;
    const char *kind = want_magic == 0x0803 ? "an idx3-ubyte image file" : "an idx1-ubyte label file";
    unsigned char hdr[16] = {0};
    size_t hlen = 4 + 4 * (size_t)ndim, got = 0;
    if ((st = file_read(&r, hdr, hlen, &got, err, errlen)) != PDNN_SUCCESS) {
        file_close(&r);
        return st;
    }
    /* The magic first: a label file given for images says so, even though
     * it is also shorter than an image header. */
    unsigned magic = (unsigned)hdr[0] << 24 | (unsigned)hdr[1] << 16 | (unsigned)hdr[2] << 8 | hdr[3];
    if (got >= 4 && magic != want_magic) {
        file_close(&r);
        const char *what = magic == 0x0801 ? " (an idx1 label file)"
                           : magic == 0x0803 ? " (an idx3 image file)"
                           : (magic >> 16) == 0 && ((magic >> 8) & 0xff) != 0x08
                               ? " (IDX, but not of unsigned bytes)"
                               : "";
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: bad magic 0x%08x%s: expected 0x%08x, %s", path, magic, what,
                    want_magic, kind);
    }
    if (got < hlen) {
        file_close(&r);
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: truncated header: %zu bytes, %s has a %zu-byte header",
                    path, got, kind, hlen);
    }
    uint64_t total = 1;
    for (int i = 0; i < ndim; i++) {
        const unsigned char *p = hdr + 4 + 4 * i;
        dims[i] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (dims[i] == 0) {
            file_close(&r);
            return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: dimension %d is 0", path, i);
        }
        if (dims[i] > IDX_MAX_BYTES || total * dims[i] > IDX_MAX_BYTES) {
            file_close(&r);
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
                file_close(&r);
                return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: out of memory for %llu bytes", path,
                            (unsigned long long)ncap);
            }
            buf = nb;
            cap = ncap;
        }
        if ((st = file_read(&r, buf + used, (size_t)(cap - used), &got, err, errlen)) != PDNN_SUCCESS) {
            free(buf);
            file_close(&r);
            return st;
        }
        used += (uint64_t)got;
        if (used < cap)
            break;
    }
    if (used < total) {
        free(buf);
        file_close(&r);
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: truncated data: the header declares %llu bytes, the file has %llu",
                    path, (unsigned long long)total, (unsigned long long)used);
    }
    /* Reading on to the end also checks a gzip stream's trailer. */
    unsigned char extra;
    st = file_read(&r, &extra, 1, &got, err, errlen);
    if (st == PDNN_SUCCESS && got != 0)
        st = cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: trailing data after the %llu bytes the header declares",
                         path, (unsigned long long)total);
    file_close(&r);
    if (st != PDNN_SUCCESS) {
        free(buf);
        return st;
    }
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

pdnn_status idx_load(const char *dir, const char *split, int classes, int rows, int cols, pdnn_layout layout,
                     idx_dataset *out, char *err, size_t errlen)
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
    /* The reader of the batches copies rows x cols floats per image: an
     * image of another size would be read out of bounds or misread. */
    if (st == PDNN_SUCCESS && (rows || cols) && (out->images.rows != rows || out->images.cols != cols))
        st = cli_set_err(PDNN_ERR_CORRUPT, err, errlen,
                         "%s holds %lld images of %dx%d (rows x columns); the network needs %dx%d images", ip,
                         (long long)out->images.count, out->images.rows, out->images.cols, rows, cols);
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
