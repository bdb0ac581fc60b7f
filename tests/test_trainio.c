/* polydnn train's files: the IDX data reader (plain and gzip'd, every
 * kind of bad file, Debian's Fashion-MNIST when installed), .npz
 * checkpoints (round trip, numpy.load of ours and our reader of numpy's,
 * truncated and corrupt archives, nothing overwritten on failure), and the
 * progress display's non-terminal and terminal forms. */
#include "tools/idx.h"
#include "tools/npz.h"
#include "tools/progress.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/polydnn-trainio-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

static int dir_entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Writes bytes to dir/name, through gzip when gz. */
static const char *put_file(const char *name, const unsigned char *b, size_t n, int gz)
{
    static char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (gz) {
        gzFile g = gzopen(p, "wb");
        cr_assert_not_null(g);
        if (n)
            cr_assert_eq(gzwrite(g, b, (unsigned)n), (int)n);
        cr_assert_eq(gzclose(g), Z_OK);
    } else {
        FILE *f = fopen(p, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(fwrite(b, 1, n, f), n);
        fclose(f);
    }
    return p;
}

/* An idx3 file of n images of r x c, pixel i = i % 256; extra bytes of
 * data beyond (or, negative, short of) what the header says. */
static size_t images_file(unsigned char *b, uint32_t n, uint32_t r, uint32_t c, long extra)
{
    put_be32(b, 0x0803);
    put_be32(b + 4, n);
    put_be32(b + 8, r);
    put_be32(b + 12, c);
    size_t len = 16 + (size_t)((long)(n * r * c) + extra);
    for (size_t i = 16; i < len; i++)
        b[i] = (unsigned char)((i - 16) % 256);
    return len;
}

static size_t labels_file(unsigned char *b, uint32_t n, const unsigned char *labels)
{
    put_be32(b, 0x0801);
    put_be32(b + 4, n);
    memcpy(b + 8, labels, n);
    return 8 + n;
}

/* ---- IDX ----------------------------------------------------------------- */

Test(idx, reads_plain_and_gzip_images, .init = make_dir, .fini = remove_dir)
{
    unsigned char b[256];
    size_t n = images_file(b, 3, 4, 5, 0);
    for (int gz = 0; gz < 2; gz++) {
        const char *p = put_file(gz ? "i.gz" : "i", b, n, gz);
        for (int lay = 0; lay < 2; lay++) {
            idx_images im;
            char err[512];
            cr_assert_eq(idx_read_images(p, lay ? PDNN_NHWC : PDNN_NCHW, &im, err, sizeof err),
                         PDNN_SUCCESS, "%s", err);
            cr_assert_eq(im.count, 3);
            cr_assert_eq(im.rows, 4);
            cr_assert_eq(im.cols, 5);
            for (int i = 0; i < 60; i++)
                cr_assert_float_eq(im.data[i], (float)i / 255.0f, 1e-7f, "pixel %d", i);
            idx_images_free(&im);
        }
    }
}

Test(idx, reads_labels_and_checks_range, .init = make_dir, .fini = remove_dir)
{
    unsigned char b[64];
    const unsigned char good[] = {0, 9, 3, 7};
    size_t n = labels_file(b, 4, good);
    const char *p = put_file("l.gz", b, n, 1);
    idx_labels l;
    char err[512];
    cr_assert_eq(idx_read_labels(p, 10, &l, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(l.count, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(l.data[i], good[i]);
    idx_labels_free(&l);
    /* 9 is out of range for 8 classes: named by index and value. */
    cr_assert_eq(idx_read_labels(p, 8, &l, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "label 1 is 9, outside 0..7"), "%s", err);
    cr_assert_null(l.data);
    const unsigned char bad[] = {1, 2, 10, 3};
    n = labels_file(b, 4, bad);
    p = put_file("bad.gz", b, n, 1);
    cr_assert_eq(idx_read_labels(p, 10, &l, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "label 2 is 10, outside 0..9"), "%s", err);
    cr_assert(strstr(err, "bad.gz"), "%s", err);
}

static void expect_image_error(const char *p, pdnn_status want, const char *msg)
{
    idx_images im;
    char err[512] = "";
    pdnn_status st = idx_read_images(p, PDNN_NCHW, &im, err, sizeof err);
    cr_assert_eq(st, want, "%s: status %d, want %d (%s)", p, st, want, err);
    cr_assert(strstr(err, msg), "%s: message '%s' lacks '%s'", p, err, msg);
    cr_assert(strstr(err, p), "message '%s' does not name the file", err);
    cr_assert_null(im.data);
}

Test(idx, bad_files, .init = make_dir, .fini = remove_dir)
{
    unsigned char b[512];
    for (int gz = 0; gz < 2; gz++) {
        size_t n = images_file(b, 3, 4, 5, -1);
        expect_image_error(put_file("short", b, n, gz), PDNN_ERR_CORRUPT,
                           "truncated data: the header declares 60 bytes, the file has 59");
        n = images_file(b, 3, 4, 5, 2);
        expect_image_error(put_file("long", b, n, gz), PDNN_ERR_CORRUPT, "trailing data");
        expect_image_error(put_file("hdr", b, 10, gz), PDNN_ERR_CORRUPT, "truncated header");
        expect_image_error(put_file("empty", b, 0, gz), PDNN_ERR_CORRUPT, "truncated header");
        /* A header promising 4 G images of 28x28 in a 60-byte file: refused
         * by the bound, before any allocation of that size. */
        images_file(b, 3, 4, 5, 0);
        put_be32(b + 4, 0xffffffffu);
        put_be32(b + 8, 28);
        put_be32(b + 12, 28);
        expect_image_error(put_file("huge", b, 76, gz), PDNN_ERR_CORRUPT, "declares more than");
        /* Within the bound but far beyond the data: truncated, and the
         * reader's memory stays near what the file gave. */
        put_be32(b + 4, 1000000);
        put_be32(b + 8, 28);
        put_be32(b + 12, 28);
        expect_image_error(put_file("big", b, 76, gz), PDNN_ERR_CORRUPT,
                           "truncated data: the header declares 784000000 bytes, the file has 60");
        images_file(b, 3, 4, 5, 0);
        put_be32(b + 8, 0);
        expect_image_error(put_file("zero", b, 76, gz), PDNN_ERR_CORRUPT, "dimension 1 is 0");
        n = labels_file(b, 2, (const unsigned char *)"\1\2");
        expect_image_error(put_file("labels", b, n, gz), PDNN_ERR_CORRUPT,
                           "bad magic 0x00000801 (an idx1 label file): expected 0x00000803");
        memcpy(b, "\x1f\x8b\x08\x00garbage-garbage-garbage", 27);
        expect_image_error(put_file("text", b, 27, gz), PDNN_ERR_CORRUPT, gz ? "bad magic" : "corrupt gzip");
    }
    char missing[128];
    snprintf(missing, sizeof missing, "%s/none.gz", dir);
    expect_image_error(missing, PDNN_ERR_IO, "No such file");
    expect_image_error(dir, PDNN_ERR_IO, "not a regular file");
}

Test(idx, corrupt_and_truncated_gzip, .init = make_dir, .fini = remove_dir)
{
    static unsigned char b[4096];
    size_t n = images_file(b, 10, 16, 16, 0);
    for (size_t i = 16; i < n; i++)
        b[i] = (unsigned char)(i * 7919 % 251);
    const char *p = put_file("x.gz", b, n, 1);
    char path[256];
    snprintf(path, sizeof path, "%s", p);
    FILE *f = fopen(path, "rb");
    static unsigned char z[8192];
    size_t zn = fread(z, 1, sizeof z, f);
    fclose(f);
    cr_assert_gt(zn, 40u);
    /* Cut before the trailer: zlib's "unexpected end of file". */
    FILE *w = fopen(path, "wb");
    fwrite(z, 1, zn - 12, w);
    fclose(w);
    expect_image_error(path, PDNN_ERR_CORRUPT, "corrupt gzip data");
    /* Every single flipped bit in the compressed body or trailer: an error,
     * never silently different pixels (the gzip CRC-32 and length). */
    for (size_t k = 10; k < zn; k++) {
        z[k] ^= 0x04;
        w = fopen(path, "wb");
        fwrite(z, 1, zn, w);
        fclose(w);
        idx_images im;
        char err[512];
        pdnn_status st = idx_read_images(path, PDNN_NCHW, &im, err, sizeof err);
        cr_assert_neq(st, PDNN_SUCCESS, "a flipped bit at byte %zu of the gzip file went unnoticed", k);
        z[k] ^= 0x04;
    }
}

/* gzip files cut in or just before their 8-byte trailer (CRC-32, length),
 * or with a trailer that does not match: errors naming the file. gzread
 * let a file missing exactly its trailer pass when the compressed data
 * ended where the input did. */
Test(idx, gzip_trailer_checked, .init = make_dir, .fini = remove_dir)
{
    static unsigned char b[4096], z[8192];
    size_t n = images_file(b, 10, 16, 16, 0);
    const char *p = put_file("t.gz", b, n, 1);
    char path[256];
    snprintf(path, sizeof path, "%s", p);
    FILE *f = fopen(path, "rb");
    size_t zn = fread(z, 1, sizeof z, f);
    fclose(f);
    cr_assert_gt(zn, 40u);
    const size_t cut[] = {8, 7, 4, 1};
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
        FILE *w = fopen(path, "wb");
        fwrite(z, 1, zn - cut[i], w);
        fclose(w);
        idx_images im;
        char err[512] = "";
        pdnn_status st = idx_read_images(path, PDNN_NCHW, &im, err, sizeof err);
        cr_assert_eq(st, PDNN_ERR_CORRUPT, "the last %zu bytes cut: status %d (%s)", cut[i], st, err);
        cr_assert(strstr(err, path) && strstr(err, "corrupt gzip data"), "the last %zu bytes cut: '%s'", cut[i], err);
        cr_assert_null(im.data);
    }
    /* 60,000 labels (as MNIST's) without their trailer: here gzread's
     * input ended exactly where the compressed data did, and it said
     * nothing. */
    static unsigned char lb[60008], lz[65536];
    static unsigned char labels[60000];
    for (uint32_t i = 0; i < 60000; i++)
        labels[i] = (unsigned char)(i * 7919u / 13u % 10u);
    n = labels_file(lb, 60000, labels);
    put_file("l.gz", lb, n, 1);
    char lpath[256];
    snprintf(lpath, sizeof lpath, "%s/l.gz", dir);
    f = fopen(lpath, "rb");
    size_t ln = fread(lz, 1, sizeof lz, f);
    fclose(f);
    cr_assert(ln > 8 && ln < sizeof lz);
    FILE *lw = fopen(lpath, "wb");
    fwrite(lz, 1, ln - 8, lw);
    fclose(lw);
    idx_labels l;
    char lerr[512] = "";
    cr_assert_eq(idx_read_labels(lpath, 10, &l, lerr, sizeof lerr), PDNN_ERR_CORRUPT,
                 "60000 labels without the gzip trailer accepted");
    cr_assert(strstr(lerr, lpath) && strstr(lerr, "corrupt gzip data: truncated"), "%s", lerr);
    cr_assert_null(l.data);
    /* The length (the last 4 bytes) one more: the data is whole, the
     * trailer wrong. */
    z[zn - 4] ^= 1;
    FILE *w = fopen(path, "wb");
    fwrite(z, 1, zn, w);
    fclose(w);
    expect_image_error(path, PDNN_ERR_CORRUPT, "incorrect length check");
    z[zn - 4] ^= 1;
    /* What gzip(1) accepts still reads: bytes after a whole member are
     * ignored, as gzip and gzread do; a second member is read on (here its
     * images are trailing data to the first's header). */
    static unsigned char two[16384];
    memcpy(two, z, zn);
    memcpy(two + zn, z, zn);
    w = fopen(path, "wb");
    fwrite(two, 1, zn + 1, w);
    fclose(w);
    idx_images im;
    char err[512] = "";
    cr_assert_eq(idx_read_images(path, PDNN_NCHW, &im, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(im.count, 10);
    idx_images_free(&im);
    w = fopen(path, "wb");
    fwrite(two, 1, 2 * zn, w);
    fclose(w);
    expect_image_error(path, PDNN_ERR_CORRUPT, "trailing data");
}

/* A FIFO is refused at once, never waited on for a writer. */
Test(idx, fifo_refused, .init = make_dir, .fini = remove_dir, .timeout = 20)
{
    char p[256];
    snprintf(p, sizeof p, "%s/fifo.gz", dir);
    cr_assert_eq(mkfifo(p, 0600), 0);
    expect_image_error(p, PDNN_ERR_IO, "a FIFO");
}

/* The images must be the size the caller needs (polydnn train copies 28 x
 * 28 floats per image), the counts agree and the labels be in range; each
 * error names the file and what it holds. */
Test(idx, load_checks_image_size, .init = make_dir, .fini = remove_dir)
{
    static unsigned char b[16384];
    const uint32_t sizes[][2] = {{8, 8}, {1, 1}, {32, 32}, {28, 27}, {27, 28}, {56, 28}};
    size_t n = labels_file(b, 3, (const unsigned char *)"\1\2\3");
    put_file("train-labels-idx1-ubyte.gz", b, n, 1);
    idx_dataset d;
    char err[512], want[64];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        n = images_file(b, 3, sizes[i][0], sizes[i][1], 0);
        put_file("train-images-idx3-ubyte.gz", b, n, 1);
        cr_assert_eq(idx_load(dir, "train", 10, 28, 28, PDNN_NCHW, &d, err, sizeof err), PDNN_ERR_CORRUPT,
                     "%ux%u images accepted", sizes[i][0], sizes[i][1]);
        snprintf(want, sizeof want, "holds 3 images of %ux%u", sizes[i][0], sizes[i][1]);
        cr_assert(strstr(err, "train-images-idx3-ubyte.gz") && strstr(err, want) &&
                      strstr(err, "the network needs 28x28 images"),
                  "%s", err);
        cr_assert_null(d.images.data);
        cr_assert_null(d.labels.data);
        /* Any size when the caller names none. */
        cr_assert_eq(idx_load(dir, "train", 10, 0, 0, PDNN_NCHW, &d, err, sizeof err), PDNN_SUCCESS, "%s", err);
        idx_dataset_free(&d);
    }
    n = images_file(b, 3, 28, 28, 0);
    put_file("train-images-idx3-ubyte.gz", b, n, 1);
    cr_assert_eq(idx_load(dir, "train", 10, 28, 28, PDNN_NCHW, &d, err, sizeof err), PDNN_SUCCESS, "%s", err);
    idx_dataset_free(&d);
    /* 28x28, but a label file of another count, or with a label of 10. */
    n = labels_file(b, 2, (const unsigned char *)"\1\2");
    put_file("train-labels-idx1-ubyte.gz", b, n, 1);
    cr_assert_eq(idx_load(dir, "train", 10, 28, 28, PDNN_NCHW, &d, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "train-images-idx3-ubyte.gz has 3 images but") &&
                  strstr(err, "train-labels-idx1-ubyte.gz has 2 labels"),
              "%s", err);
    cr_assert_null(d.images.data);
    n = labels_file(b, 3, (const unsigned char *)"\1\12\3");
    put_file("train-labels-idx1-ubyte.gz", b, n, 1);
    cr_assert_eq(idx_load(dir, "train", 10, 28, 28, PDNN_NCHW, &d, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "train-labels-idx1-ubyte.gz: label 1 is 10, outside 0..9"), "%s", err);
    cr_assert_null(d.images.data);
}

Test(idx, load_checks_counts_agree, .init = make_dir, .fini = remove_dir)
{
    unsigned char b[256];
    size_t n = images_file(b, 3, 2, 2, 0);
    put_file("t10k-images-idx3-ubyte.gz", b, n, 1);
    n = labels_file(b, 4, (const unsigned char *)"\1\2\3\4");
    put_file("t10k-labels-idx1-ubyte", b, n, 0); /* a plain copy is found too */
    idx_dataset d;
    char err[512];
    cr_assert_eq(idx_load(dir, "t10k", 10, 0, 0, PDNN_NCHW, &d, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "has 3 images but") && strstr(err, "has 4 labels"), "%s", err);
    cr_assert_null(d.images.data);
    n = labels_file(b, 3, (const unsigned char *)"\1\2\3");
    put_file("t10k-labels-idx1-ubyte", b, n, 0);
    cr_assert_eq(idx_load(dir, "t10k", 10, 0, 0, PDNN_NHWC, &d, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(d.labels.data[2], 3);
    idx_dataset_free(&d);
    cr_assert_eq(idx_load(dir, "train", 10, 0, 0, PDNN_NCHW, &d, err, sizeof err), PDNN_ERR_IO);
    cr_assert(strstr(err, "train-images-idx3-ubyte.gz: No such file"), "%s", err);
    cr_assert_eq(idx_load(dir, "valid", 10, 0, 0, PDNN_NCHW, &d, err, sizeof err), PDNN_ERR_INVALID_ARGUMENT);
}

Test(idx, debian_fashion_mnist)
{
    struct stat sb;
    if (stat(IDX_DEFAULT_DIR "/t10k-images-idx3-ubyte.gz", &sb) != 0)
        cr_skip_test("Debian's dataset-fashion-mnist is not installed (" IDX_DEFAULT_DIR ")");
    idx_dataset d;
    char err[512];
    cr_assert_eq(idx_load(NULL, "t10k", 10, 28, 28, PDNN_NCHW, &d, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(d.images.count, 10000);
    cr_assert_eq(d.images.rows, 28);
    cr_assert_eq(d.images.cols, 28);
    int per_class[10] = {0};
    double sum = 0;
    for (int64_t i = 0; i < d.labels.count; i++)
        per_class[d.labels.data[i]]++;
    for (int64_t i = 0; i < d.images.count * 784; i++) {
        cr_assert(d.images.data[i] >= 0.0f && d.images.data[i] <= 1.0f);
        sum += d.images.data[i];
    }
    /* Fashion-MNIST's test set: 1000 of each class, mean pixel ~0.286. */
    for (int c = 0; c < 10; c++)
        cr_assert_eq(per_class[c], 1000, "class %d", c);
    cr_assert_float_eq(sum / (double)(d.images.count * 784), 0.286, 0.01);
    idx_dataset_free(&d);
}

/* ---- .npz ---------------------------------------------------------------- */

static float w_data[24], b_data[3], step_data[1];
static const int64_t w_shape[3] = {2, 3, 4}, b_shape[1] = {3}, e_shape[1] = {0}, s_shape[1] = {1};

/* The arrays tests/npz_numpy.py's expected() describes. */
static pdnn_status write_checkpoint(const char *path, char *err, size_t errlen)
{
    for (int i = 0; i < 24; i++)
        w_data[i] = (float)i * 0.25f - 1.0f;
    for (int i = 0; i < 3; i++)
        b_data[i] = (float)i + 0.5f;
    step_data[0] = 7.0f;
    const npz_entry e[4] = {{"conv1.w", 3, w_shape, w_data},
                            {"conv1.b", 1, b_shape, b_data},
                            {"empty", 1, e_shape, NULL},
                            {"step", 1, s_shape, step_data}};
    return npz_write(path, 4, e, err, errlen);
}

static void check_checkpoint(const npz_archive *a)
{
    cr_assert_eq(a->count, 4);
    const npz_member *w = npz_find(a, "conv1.w");
    cr_assert_not_null(w);
    cr_assert_eq(w->array.ndim, 3);
    cr_assert_eq(w->array.shape[2], 4);
    cr_assert_eq(memcmp(w->array.data, w_data, sizeof w_data), 0);
    const npz_member *b = npz_find(a, "conv1.b");
    cr_assert_not_null(b);
    cr_assert_eq(memcmp(b->array.data, b_data, sizeof b_data), 0);
    cr_assert_eq(npz_find(a, "empty")->array.count, 0);
    cr_assert_eq(npz_find(a, "step")->array.data[0], 7.0f);
    cr_assert_null(npz_find(a, "conv1"));
}

static unsigned char *slurp(const char *p, size_t *n)
{
    FILE *f = fopen(p, "rb");
    cr_assert_not_null(f, "%s", p);
    static unsigned char buf[1 << 16];
    *n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return buf;
}

Test(npz, round_trip, .init = make_dir, .fini = remove_dir)
{
    char p[256], err[512];
    snprintf(p, sizeof p, "%s/ckpt.npz", dir);
    cr_assert_eq(write_checkpoint(p, err, sizeof err), PDNN_SUCCESS, "%s", err);
    npz_archive a;
    cr_assert_eq(npz_read(p, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    check_checkpoint(&a);
    npz_free(&a);
    cr_assert_eq(dir_entries(), 1, "a temporary file was left behind");
    /* Fixed member times: the same arrays give the same bytes. */
    size_t n1, n2;
    unsigned char *b1 = slurp(p, &n1);
    static unsigned char first[1 << 16];
    memcpy(first, b1, n1);
    cr_assert_eq(write_checkpoint(p, err, sizeof err), PDNN_SUCCESS, "%s", err);
    unsigned char *b2 = slurp(p, &n2);
    cr_assert_eq(n1, n2);
    cr_assert_eq(memcmp(first, b2, n1), 0);
    /* An empty archive is valid too. */
    cr_assert_eq(npz_write(p, 0, NULL, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(npz_read(p, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(a.count, 0);
    npz_free(&a);
}

Test(npz, bad_names_and_failed_writes_keep_the_old_file, .init = make_dir, .fini = remove_dir)
{
    char p[256], err[512];
    snprintf(p, sizeof p, "%s/ckpt.npz", dir);
    cr_assert_eq(write_checkpoint(p, err, sizeof err), PDNN_SUCCESS, "%s", err);
    size_t n;
    unsigned char *b = slurp(p, &n);
    static unsigned char before[1 << 16];
    memcpy(before, b, n);
    const int64_t shape[1] = {2};
    const float v[2] = {1, 2};
    const char *bad[] = {"", "a/b", "../x", "sp ace", "é"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        npz_entry e = {bad[i], 1, shape, v};
        cr_assert_eq(npz_write(p, 1, &e, err, sizeof err), PDNN_ERR_INVALID_ARGUMENT, "name '%s'", bad[i]);
        cr_assert(strstr(err, "name"), "%s", err);
    }
    npz_entry two[2] = {{"x", 1, shape, v}, {"x", 1, shape, v}};
    cr_assert_eq(npz_write(p, 2, two, err, sizeof err), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err, "two arrays are named 'x'"), "%s", err);
    npz_entry nodata = {"x", 1, shape, NULL};
    cr_assert_eq(npz_write(p, 1, &nodata, err, sizeof err), PDNN_ERR_INVALID_ARGUMENT);
    size_t n2;
    b = slurp(p, &n2);
    cr_assert_eq(n, n2);
    cr_assert_eq(memcmp(before, b, n), 0, "a failed write changed the existing checkpoint");
    cr_assert_eq(dir_entries(), 1, "a temporary file was left behind");
    char nodir[300];
    snprintf(nodir, sizeof nodir, "%s/missing/ckpt.npz", dir);
    cr_assert_eq(write_checkpoint(nodir, err, sizeof err), PDNN_ERR_IO);
    cr_assert(strstr(err, "missing/ckpt.npz"), "%s", err);
}

/* Every prefix of a checkpoint is refused, and so is every single-byte
 * change except in the few fields nothing depends on (times, version
 * made by, attributes): those read back the same arrays. */
Test(npz, truncated_and_corrupt, .init = make_dir, .fini = remove_dir)
{
    char p[256], err[512];
    snprintf(p, sizeof p, "%s/ckpt.npz", dir);
    cr_assert_eq(write_checkpoint(p, err, sizeof err), PDNN_SUCCESS, "%s", err);
    size_t n;
    unsigned char *b = slurp(p, &n);
    static unsigned char img[1 << 16];
    memcpy(img, b, n);
    npz_archive a;
    for (size_t len = 0; len < n; len++) {
        pdnn_status st = npz_parse(img, len, "ckpt.npz", &a, err, sizeof err);
        cr_assert_eq(st, PDNN_ERR_CORRUPT, "a %zu-byte prefix of %zu: status %d", len, n, st);
        cr_assert(strstr(err, "ckpt.npz: "), "%s", err);
        cr_assert_eq(a.count, 0);
    }
    int accepted = 0;
    for (size_t k = 0; k < n; k++) {
        for (int bit = 0; bit < 8; bit += 3) {
            img[k] ^= (unsigned char)(1u << bit);
            pdnn_status st = npz_parse(img, n, "ckpt.npz", &a, err, sizeof err);
            if (st == PDNN_SUCCESS) {
                check_checkpoint(&a);
                npz_free(&a);
                accepted++;
            } else {
                cr_assert_eq(st, PDNN_ERR_CORRUPT, "byte %zu: status %d (%s)", k, st, err);
            }
            img[k] ^= (unsigned char)(1u << bit);
        }
    }
    /* What is ignored: per member, 8 bytes of the local header (version
     * needed, other flag bits, time, date) and 16 of the central one (also
     * version made by and attributes), three bits tried in each. */
    cr_assert_leq(accepted, 3 * 24 * 4, "%d single-bit changes accepted", accepted);
    cr_assert_eq(npz_parse(img, n, "ckpt.npz", &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    npz_free(&a);
}

static const char *python(void)
{
    const char *py = getenv("PYTHON_TORCH");
    return py && *py ? py : NULL;
}

static const char *srcdir(void)
{
    const char *s = getenv("PDNN_TOP_SRCDIR");
    return s && *s ? s : ".";
}

Test(npz, numpy_loads_ours, .init = make_dir, .fini = remove_dir)
{
    if (!python())
        cr_skip_test("no Python with numpy (PYTHON_TORCH is unset)");
    char p[256], err[512], cmd[1024];
    snprintf(p, sizeof p, "%s/ckpt.npz", dir);
    cr_assert_eq(write_checkpoint(p, err, sizeof err), PDNN_SUCCESS, "%s", err);
    snprintf(cmd, sizeof cmd, "'%s' '%s/tests/npz_numpy.py' check '%s'", python(), srcdir(), p);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

static void read_numpy_files(const char *d, int *ok, int *bad)
{
    DIR *dd = opendir(d);
    cr_assert_not_null(dd, "%s", d);
    struct dirent *e;
    while ((e = readdir(dd))) {
        if (e->d_name[0] == '.')
            continue;
        char p[512], err[512] = "";
        snprintf(p, sizeof p, "%s/%s", d, e->d_name);
        npz_archive a;
        pdnn_status st = npz_read(p, &a, err, sizeof err);
        if (strncmp(e->d_name, "ok-", 3) == 0) {
            cr_assert_eq(st, PDNN_SUCCESS, "%s", err);
            if (strstr(e->d_name, "savez")) {
                const npz_member *w = npz_find(&a, "weights"), *bias = npz_find(&a, "bias");
                cr_assert(w && bias, "%s: members missing", p);
                cr_assert_eq(w->array.ndim, 2);
                for (int i = 0; i < 6; i++)
                    cr_assert_eq(w->array.data[i], (float)i * 0.5f);
                cr_assert_eq(bias->array.count, 5);
                cr_assert_eq(bias->array.data[0], -1.0f);
                cr_assert_eq(bias->array.data[4], 1.0f);
            }
            npz_free(&a);
            ++*ok;
        } else {
            cr_assert_eq(st, PDNN_ERR_CORRUPT, "%s: status %d (%s)", p, st, err);
            cr_assert(strstr(err, p), "%s", err);
            ++*bad;
        }
    }
    closedir(dd);
}

Test(npz, reads_numpy_savez, .init = make_dir, .fini = remove_dir)
{
    if (!python())
        cr_skip_test("no Python with numpy (PYTHON_TORCH is unset)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' '%s/tests/npz_numpy.py' make '%s'", python(), srcdir(), dir);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    int ok = 0, bad = 0;
    read_numpy_files(dir, &ok, &bad);
    cr_assert_eq(ok, 3);
    cr_assert_eq(bad, 5);
}

/* The committed fuzz seed corpus: the same files, no Python needed. */
Test(npz, seed_corpus)
{
    char d[512];
    snprintf(d, sizeof d, "%s/tests/fuzz/npz-corpus", srcdir());
    int ok = 0, bad = 0;
    read_numpy_files(d, &ok, &bad);
    cr_assert_geq(ok, 3);
    cr_assert_geq(bad, 5);
}

Test(npz, messages_for_numpy_files, .init = make_dir, .fini = remove_dir)
{
    char d[512], p[600], err[512];
    snprintf(d, sizeof d, "%s/tests/fuzz/npz-corpus", srcdir());
    npz_archive a;
    snprintf(p, sizeof p, "%s/bad-int64-member.npz", d);
    cr_assert_eq(npz_read(p, &a, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "member n.npy: dtype '<i8' is not supported"), "%s", err);
    snprintf(p, sizeof p, "%s/bad-flipped-byte.npz", d);
    cr_assert_eq(npz_read(p, &a, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "member weights.npy"), "%s", err);
    snprintf(p, sizeof p, "%s/bad-not-npy-name.npz", d);
    cr_assert_eq(npz_read(p, &a, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "'weights.txt' does not end in .npy"), "%s", err);
    snprintf(p, sizeof p, "%s/bad-truncated.npz", d);
    cr_assert_eq(npz_read(p, &a, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "truncated"), "%s", err);
    /* The fuzzer's: a stored member declaring 822 MB over a few bytes was
     * allocated before its sizes were compared. */
    snprintf(p, sizeof p, "%s/bad-stored-size.npz", d);
    cr_assert_eq(npz_read(p, &a, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "is stored but its sizes differ"), "%s", err);
}

/* A FIFO named as the checkpoint: refused at once (it used to block in
 * fopen, waiting for a writer). */
Test(npz, fifo_refused, .init = make_dir, .fini = remove_dir, .timeout = 20)
{
    char p[256], err[512] = "";
    snprintf(p, sizeof p, "%s/fifo.npz", dir);
    cr_assert_eq(mkfifo(p, 0600), 0);
    npz_archive a;
    cr_assert_eq(npz_read(p, &a, err, sizeof err), PDNN_ERR_IO);
    cr_assert(strstr(err, p) && strstr(err, "a FIFO"), "%s", err);
    cr_assert_eq(a.count, 0);
}

/* ---- progress ------------------------------------------------------------ */

static char *run_progress(int tty, double interval)
{
    static char out[4096];
    memset(out, 0, sizeof out);
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    cr_assert_not_null(f);
    progress p;
    progress_init(&p, f, tty);
    cr_assert_eq(p.tty, tty);
    if (interval > 0)
        p.interval = interval;
    p.bar_width = 10;
    progress_epoch(&p, 2, 3, 10, 100.0);
    for (int s = 1; s <= 10; s++)
        progress_step(&p, 64, 1.0 / s, 100.0 + s);
    progress_end_epoch(&p, 110.0);
    fclose(f);
    return out;
}

Test(progress, plain_lines_when_not_a_terminal)
{
    const char *out = run_progress(0, 4.0);
    /* Lines at t = 4 and 8 s (every 4 s), then the last step and the summary;
     * the loss is the mean over the epoch so far. */
    const char *want = "epoch 2/3 step 4/10 (40%) 64.0 images/s loss 0.5208 ETA 6s\n"
                       "epoch 2/3 step 8/10 (80%) 64.0 images/s loss 0.3397 ETA 2s\n"
                       "epoch 2/3 step 10/10 (100%) 64.0 images/s loss 0.2929 ETA 0s\n"
                       "epoch 2/3 done: 640 images in 10.0 s (64.0 images/s), loss 0.2929\n";
    cr_assert_str_eq(out, want);
    cr_assert_null(strchr(out, '\r'));
    cr_assert_null(strchr(out, '\033'));
}

Test(progress, default_interval_is_ten_seconds)
{
    const char *out = run_progress(0, 0);
    cr_assert_str_eq(out, "epoch 2/3 step 10/10 (100%) 64.0 images/s loss 0.2929 ETA 0s\n"
                          "epoch 2/3 done: 640 images in 10.0 s (64.0 images/s), loss 0.2929\n");
}

Test(progress, one_redrawn_line_on_a_terminal)
{
    const char *out = run_progress(1, 0);
    /* Every step is past the 0.1 s redraw interval here: ten \r redraws
     * (the last from end_epoch), one newline before the summary. */
    int cr = 0;
    for (const char *c = out; *c; c++)
        cr += *c == '\r';
    cr_assert_eq(cr, 10, "%s", out);
    cr_assert(strstr(out, "\repoch 2/3 step 5/10 [#####.....] 64.0 images/s loss 0.4567 ETA 5s\033[K"), "%s", out);
    cr_assert(strstr(out, "\repoch 2/3 step 10/10 [##########] 64.0 images/s loss 0.2929 ETA 0s\033[K\n"
                          "epoch 2/3 done: 640 images in 10.0 s"),
              "%s", out);
}

Test(progress, unknown_steps_and_nan_loss)
{
    char line[256];
    progress p;
    progress_init(&p, NULL, 0);
    progress_epoch(&p, 1, 1, 0, 0.0);
    progress_step(&p, 32, NAN, 2.0);
    progress_format(&p, 2.0, line, sizeof line);
    cr_assert_str_eq(line, "epoch 1/1 step 1 16.0 images/s loss nan ETA --");
}

Test(progress, eta_counts_from_the_end_of_the_first_step)
{
    /* The first step takes 20 s (kernel builds), the others 1 s: the ETA
     * is the later steps' pace, not the first one's. */
    char line[256];
    progress p;
    progress_init(&p, NULL, 0);
    progress_epoch(&p, 1, 1, 10, 0.0);
    progress_step(&p, 64, 1.0, 20.0);
    progress_format(&p, 20.0, line, sizeof line);
    cr_assert(strstr(line, "ETA --"), "%s", line); /* one step: no pace yet */
    progress_step(&p, 64, 1.0, 21.0);
    progress_step(&p, 64, 1.0, 22.0);
    progress_format(&p, 22.0, line, sizeof line);
    cr_assert(strstr(line, "ETA 7s"), "%s", line); /* 7 steps left at 1 s each, not 7 x 22/3 s */
}

Test(progress, clear_erases_the_drawn_line_on_a_terminal_only)
{
    static char out[512];
    memset(out, 0, sizeof out);
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    cr_assert_not_null(f);
    progress p;
    progress_init(&p, f, 1);
    progress_epoch(&p, 1, 1, 10, 0.0);
    progress_step(&p, 64, 1.0, 1.0);
    cr_assert_eq(p.drawn, 1);
    progress_clear(&p);
    cr_assert_eq(p.drawn, 0);
    progress_clear(&p); /* nothing drawn: nothing written */
    fclose(f);
    const char *clear = strstr(out, "\033[K\r\033[K");
    cr_assert_not_null(clear, "%s", out);
    cr_assert_null(strstr(clear + strlen("\033[K\r\033[K"), "\r\033[K"), "%s", out); /* cleared once */

    progress_init(&p, NULL, 0);
    progress_epoch(&p, 1, 1, 10, 0.0);
    progress_step(&p, 64, 1.0, 1.0);
    progress_clear(&p); /* no output at all: a no-op */
}
