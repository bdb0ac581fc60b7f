/* The .npy reader and writer: round trips, numpy's own byte layout, and
 * every kind of corrupt or unsupported file. */
#include "tools/npy.h"

#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char path[64];

static void tmp_path(void)
{
    snprintf(path, sizeof path, "/tmp/polydnn-npy-%d.npy", (int)getpid());
}

Test(npy, round_trip_shapes)
{
    tmp_path();
    const int64_t shapes[][8] = {{2, 3, 4, 5}, {1, 1, 1, 1}, {7}, {3, 5}, {2, 3, 7}, {2, 1, 3, 2, 5},
                                 {2, 3, 1, 2, 3, 2}, {1, 2, 1, 2, 1, 2, 1, 2}};
    const int ndims[] = {4, 4, 1, 2, 3, 5, 6, 8};
    for (int t = 0; t < 8; t++) {
        int64_t n = 1;
        for (int i = 0; i < ndims[t]; i++)
            n *= shapes[t][i];
        float *v = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            v[i] = (float)i * 0.5f - 3.25f;
        char err[256];
        cr_assert_eq(npy_write(path, ndims[t], shapes[t], v, err, sizeof err), PDNN_SUCCESS, "%s", err);
        npy_array a;
        cr_assert_eq(npy_read(path, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
        cr_assert_eq(a.ndim, ndims[t]);
        cr_assert_eq(a.count, n);
        for (int i = 0; i < ndims[t]; i++)
            cr_assert_eq(a.shape[i], shapes[t][i]);
        cr_assert(memcmp(a.data, v, sizeof(float) * (size_t)n) == 0);
        npy_free(&a);
        free(v);
    }
    /* 0-d array (a scalar). */
    float one = 1.5f;
    char err[256];
    cr_assert_eq(npy_write(path, 0, NULL, &one, err, sizeof err), PDNN_SUCCESS);
    npy_array a;
    cr_assert_eq(npy_read(path, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(a.ndim, 0);
    cr_assert_eq(a.count, 1);
    cr_assert_float_eq(a.data[0], 1.5f, 0);
    npy_free(&a);
    unlink(path);
}

/* Bytes exactly as numpy 1.x writes numpy.arange(6, dtype='<f4').reshape(2, 3). */
static size_t numpy_image(unsigned char *buf, const char *dict)
{
    size_t dl = strlen(dict);
    size_t hl = 118; /* 10 + 118 = 128: numpy pads the header to 64 bytes */
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)hl;
    buf[9] = 0;
    memcpy(buf + 10, dict, dl);
    memset(buf + 10 + dl, ' ', hl - dl - 1);
    buf[10 + hl - 1] = '\n';
    for (int i = 0; i < 6; i++) {
        float f = (float)i;
        memcpy(buf + 128 + 4 * i, &f, 4);
    }
    return 128 + 24;
}

Test(npy, parses_numpys_layout)
{
    unsigned char buf[256];
    size_t n = numpy_image(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    npy_array a;
    char err[256];
    cr_assert_eq(npy_parse(buf, n, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(a.ndim, 2);
    cr_assert_eq(a.shape[0], 2);
    cr_assert_eq(a.shape[1], 3);
    cr_assert_float_eq(a.data[5], 5.0f, 0);
    npy_free(&a);
}

static void expect_corrupt(const unsigned char *buf, size_t n, const char *needle)
{
    npy_array a;
    char err[256] = "";
    pdnn_status st = npy_parse(buf, n, &a, err, sizeof err);
    cr_assert_eq(st, PDNN_ERR_CORRUPT, "accepted; expected an error about '%s'", needle);
    cr_assert(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
    cr_assert_null(a.data);
}

Test(npy, rejects_corrupt_and_unsupported_files)
{
    unsigned char buf[256];
    size_t n = numpy_image(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }");
    expect_corrupt(buf, n, "<f8");
    n = numpy_image(buf, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }");
    expect_corrupt(buf, n, ">f4");
    n = numpy_image(buf, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }");
    expect_corrupt(buf, n, "Fortran");
    n = numpy_image(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }");
    expect_corrupt(buf, n, "shape");
    n = numpy_image(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }");
    expect_corrupt(buf, n, "truncated data");
    n = numpy_image(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }");
    expect_corrupt(buf, n, "trailing");
    n = numpy_image(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 9999), }");
    expect_corrupt(buf, n, "overflow");
    n = numpy_image(buf, "{'descr': '<f4', 'shape': (2, 3), }");
    expect_corrupt(buf, n, "fortran_order");
    n = numpy_image(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    expect_corrupt(buf, 60, "truncated header");
    unsigned char bad[152];
    memcpy(bad, buf, n);
    bad[0] = 'X';
    expect_corrupt(bad, n, "magic");
    memcpy(bad, buf, n);
    bad[6] = 9;
    expect_corrupt(bad, n, "version");
    memcpy(bad, buf, n);
    bad[30] = '\0';
    expect_corrupt(bad, n, "NUL");
    expect_corrupt(buf, 5, "magic");
}

Test(npy, missing_file_is_an_io_error)
{
    npy_array a;
    char err[256];
    cr_assert_eq(npy_read("/nonexistent/x.npy", &a, err, sizeof err), PDNN_ERR_IO);
    cr_assert(strstr(err, "/nonexistent/x.npy") != NULL, "%s", err);
    cr_assert_eq(npy_write("/nonexistent/dir/y.npy", 1, (int64_t[]){1}, (float[]){0}, err, sizeof err), PDNN_ERR_IO);
}

/* ---- the reader: header first, strict dict, bounded memory ------------- */

/* A version-1.0 image with this header text (padded as numpy pads) and
 * the six floats 0..5 after it, or `data` bytes of them. */
static size_t image_with(unsigned char *buf, size_t cap, const char *dict, size_t data)
{
    size_t dl = strlen(dict);
    size_t hl = dl + 1 + (64 - (10 + dl + 1) % 64) % 64;
    cr_assert_leq(10 + hl + data, cap);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(hl & 0xff);
    buf[9] = (unsigned char)(hl >> 8);
    memcpy(buf + 10, dict, dl);
    memset(buf + 10 + dl, ' ', hl - dl - 1);
    buf[10 + hl - 1] = '\n';
    for (size_t i = 0; i < data; i++)
        buf[10 + hl + i] = 0;
    for (size_t i = 0; i + 4 <= data && i < 24; i += 4) {
        float f = (float)(i / 4);
        memcpy(buf + 10 + hl + i, &f, 4);
    }
    return 10 + hl + data;
}

/* Refused by both npy_parse and npy_read (of the same bytes in a file),
 * with needle in the message. */
static void expect_refused(const char *dict, size_t data, const char *needle)
{
    unsigned char buf[1024];
    size_t n = image_with(buf, sizeof buf, dict, data);
    expect_corrupt(buf, n, needle);
    tmp_path();
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
    npy_array a;
    char err[512] = "";
    cr_assert_eq(npy_read(path, &a, err, sizeof err), PDNN_ERR_CORRUPT, "%s accepted; expected '%s'", dict, needle);
    cr_assert(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
    cr_assert(strstr(err, path) != NULL, "message '%s' does not name the file", err);
    cr_assert_null(a.data);
    unlink(path);
}

static void expect_shape(const char *dict, int ndim, const int64_t *shape)
{
    unsigned char buf[1024];
    int64_t count = 1;
    for (int i = 0; i < ndim; i++)
        count *= shape[i];
    size_t n = image_with(buf, sizeof buf, dict, (size_t)count * 4);
    npy_array a;
    char err[512] = "";
    cr_assert_eq(npy_parse(buf, n, &a, err, sizeof err), PDNN_SUCCESS, "%s: %s", dict, err);
    cr_assert_eq(a.ndim, ndim, "%s", dict);
    for (int i = 0; i < ndim; i++)
        cr_assert_eq(a.shape[i], shape[i], "%s", dict);
    cr_assert_eq(a.count, count);
    npy_free(&a);
}

/* numpy refuses these (numpy.load says "Header does not contain the
 * correct keys"), and the old substring search took them at face value:
 * the key inside a string even gave the wrong shape, silently. */
Test(npy, header_keys_exactly_once)
{
    expect_refused("{'note': \"'shape': (6,)\", 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 24,
                   "unknown key 'note'");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", 24,
                   "unknown key 'extra'");
    /* numpy takes the last of two; we refuse to guess which was meant. */
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'shape': (2, 3)}", 24,
                   "duplicate key 'shape'");
    expect_refused("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", 24,
                   "duplicate key 'descr'");
    expect_refused("{'descr': '<f4', 'shape': (6,)}", 24, "no 'fortran_order' key");
    expect_refused("{'fortran_order': False, 'shape': (6,)}", 24, "no 'descr' key");
    expect_refused("{'descr': '<f4', 'fortran_order': False}", 24, "no 'shape' key");
    expect_refused("{}", 24, "no 'descr' key");
    /* A key-like string as a value is a dtype, and not ours. */
    expect_refused("{'descr': \"'fortran_order': False, 'shape': (6,)\", 'fortran_order': False, 'shape': (6,)}", 24,
                   "is not supported");
}

Test(npy, header_syntax)
{
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (6)}", 24, "not a tuple");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (,)}", 24, "a dimension");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (2,, 3)}", 24, "a dimension");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}", 24, "negative dimension");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (06,)}", 24, "leading zero");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (6.0,)}", 24, "expected ',' or ')'");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': [6]}", 24, "a tuple");
    expect_refused("{'descr': '<f4', 'fortran_order': 0, 'shape': (6,)}", 24, "True or False");
    expect_refused("{'descr': '<f4', 'fortran_order': Falsehood, 'shape': (6,)}", 24, "True or False");
    expect_refused("{'descr': <f4, 'fortran_order': False, 'shape': (6,)}", 24, "quoted dtype");
    expect_refused("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (6,)}", 24, "backslash");
    expect_refused("{'descr': '<f4, 'fortran_order': False, 'shape': (6,)}", 24, "dtype '<f4, '");
    expect_refused("{'descr' '<f4', 'fortran_order': False, 'shape': (6,)}", 24, "expected ':' after the key 'descr'");
    expect_refused("{'descr': '<f4' 'fortran_order': False, 'shape': (6,)}", 24, "expected ',' or '}'");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} # comment", 24, "after the header's closing");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)}}", 24, "after the header's closing");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)", 24, "found the end of the header");
    expect_refused("['descr', '<f4']", 24, "'{'");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 6)}", 24,
                   "more than 8 dimensions");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 24, "overflows");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 2)}", 24, "overflows");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (2305843009213693952,)}", 24, "overflows");
}

/* Headers numpy reads (ast.literal_eval) that a writer other than numpy
 * may produce: other quotes and spacing, no trailing comma, Python 2's
 * long suffix. */
Test(npy, header_variants_numpy_accepts)
{
    expect_shape("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}", 2, (int64_t[]){2, 3});
    expect_shape("  {'descr':\t'<f4',\n 'fortran_order':False,'shape':(\n2 ,3 ,\n) ,\n}", 2, (int64_t[]){2, 3});
    expect_shape("{'shape': (6,), 'fortran_order': False, 'descr': '<f4'}", 1, (int64_t[]){6});
    expect_shape("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", 2, (int64_t[]){2, 3});
    expect_shape("{u'descr': r'<f4', U'fortran_order': False, R\"shape\": (6,)}", 1, (int64_t[]){6});
    expect_refused("{b'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", 24, "a quoted key");
    expect_shape("{'descr': '<f4', 'fortran_order': False, 'shape': ()}", 0, NULL);
    expect_shape("{'descr': '<f4', 'fortran_order': False, 'shape': (000, 5)}", 2, (int64_t[]){0, 5});
    expect_shape("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 2, 3)}", 8,
                 (int64_t[]){1, 1, 1, 1, 1, 1, 2, 3});
    /* A header without the final newline: numpy reads it too. */
    unsigned char buf[128];
    const char *d = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}";
    size_t dl = strlen(d);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)dl;
    buf[9] = 0;
    memcpy(buf + 10, d, dl);
    memset(buf + 10 + dl, 0, 4);
    npy_array a;
    char err[256];
    cr_assert_eq(npy_parse(buf, 10 + dl + 4, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(a.count, 1);
    npy_free(&a);
}

static const char *srcdir(void)
{
    const char *s = getenv("PDNN_TOP_SRCDIR");
    return s && *s ? s : ".";
}

/* The files numpy itself wrote (tests/fuzz/make-npy-corpus.py), in each
 * format version, read by file, by buffer and by a stream that cannot
 * seek (fmemopen has no file descriptor, as a pipe has no size). */
Test(npy, reads_numpys_files_of_every_version)
{
    static const struct {
        const char *tag;
        int ndim;
        int64_t shape[4];
    } files[] = {{"2x3", 2, {2, 3}}, {"4", 1, {4}}, {"scalar", 0, {0}}, {"2x0x3", 3, {2, 0, 3}},
                 {"1x2x3x4", 4, {1, 2, 3, 4}}};
    for (int v = 1; v <= 3; v++) {
        for (size_t t = 0; t < sizeof files / sizeof files[0]; t++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/tests/fuzz/npy-corpus/valid-v%d-%s.npy", srcdir(), v, files[t].tag);
            unsigned char img[512];
            FILE *f = fopen(p, "rb");
            cr_assert_not_null(f, "%s missing", p);
            size_t n = fread(img, 1, sizeof img, f);
            fclose(f);
            cr_assert_eq(img[6], v, "%s is not version %d", p, v);
            for (int how = 0; how < 3; how++) {
                npy_array a;
                char err[512] = "";
                pdnn_status st;
                if (how == 0) {
                    st = npy_read(p, &a, err, sizeof err);
                } else if (how == 1) {
                    st = npy_parse(img, n, &a, err, sizeof err);
                } else {
                    FILE *m = fmemopen(img, n, "rb");
                    cr_assert_not_null(m);
                    st = npy_read_stream(m, "memory", &a, err, sizeof err);
                    fclose(m);
                }
                cr_assert_eq(st, PDNN_SUCCESS, "%s (way %d): %s", p, how, err);
                cr_assert_eq(a.ndim, files[t].ndim, "%s", p);
                int64_t count = 1;
                for (int i = 0; i < a.ndim; i++) {
                    cr_assert_eq(a.shape[i], files[t].shape[i], "%s", p);
                    count *= files[t].shape[i];
                }
                cr_assert_eq(a.count, count, "%s", p);
                for (int64_t i = 0; i < count; i++)
                    cr_assert_eq(a.data[i], (float)i * 0.5f - 3.25f, "%s [%lld]", p, (long long)i);
                npy_free(&a);
            }
        }
    }
}

/* Each corrupt seed of the corpus is refused the same way by all three
 * readers (the fuzz target checks this on everything it makes up). */
Test(npy, corrupt_seeds_are_refused)
{
    static const struct {
        const char *name, *needle;
    } files[] = {{"header-duplicate-key", "duplicate key"},  {"header-key-in-string", "unknown key"},
                 {"header-extra-key", "unknown key"},       {"header-missing-key", "no 'fortran_order'"},
                 {"header-shape-overflow", "overflows"},    {"data-truncated", "truncated data"},
                 {"data-trailing", "trailing"},             {"header-truncated", "truncated header"},
                 {"magic-bad", "magic"},                    {"magic-short", "magic"},
                 {"version-9", "version 9.0"},              {"header-nul", "NUL"},
                 {"huge-declared-size", "needs 4000000000000 bytes"}};
    for (size_t t = 0; t < sizeof files / sizeof files[0]; t++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/tests/fuzz/npy-corpus/%s.npy", srcdir(), files[t].name);
        unsigned char img[512];
        FILE *f = fopen(p, "rb");
        cr_assert_not_null(f, "%s missing", p);
        size_t n = fread(img, 1, sizeof img, f);
        fclose(f);
        for (int how = 0; how < 3; how++) {
            npy_array a;
            char err[512] = "";
            pdnn_status st;
            if (how == 0) {
                st = npy_read(p, &a, err, sizeof err);
            } else if (how == 1) {
                st = npy_parse(img, n, &a, err, sizeof err);
            } else {
                FILE *m = fmemopen(img, n, "rb");
                cr_assert_not_null(m);
                st = npy_read_stream(m, "memory", &a, err, sizeof err);
                fclose(m);
            }
            cr_assert_eq(st, PDNN_ERR_CORRUPT, "%s (way %d) accepted", p, how);
            cr_assert(strstr(err, files[t].needle) != NULL, "%s (way %d): '%s' lacks '%s'", p, how, err,
                      files[t].needle);
            cr_assert_null(a.data);
        }
    }
}

/* The old reader read the whole file before looking at the magic: on
 * /dev/zero it grew without end. */
Test(npy, dev_zero_is_refused_at_once, .timeout = 5)
{
    npy_array a;
    char err[512] = "";
    cr_assert_eq(npy_read("/dev/zero", &a, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "magic") != NULL, "%s", err);
    cr_assert_null(a.data);
}

/* A header that declares more than the file holds is refused from the
 * file's size, before the data is allocated or read. */
Test(npy, declared_size_larger_than_the_file, .timeout = 5)
{
    unsigned char buf[256];
    size_t n = image_with(buf, sizeof buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000)}", 8);
    tmp_path();
    FILE *f = fopen(path, "wb");
    cr_assert_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
    npy_array a;
    char err[512] = "";
    cr_assert_eq(npy_read(path, &a, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "truncated data: the shape (1000000, 1000000) needs 4000000000000 bytes of float32, "
                          "the file has 8") != NULL,
              "%s", err);
    unlink(path);
}

/* Feeds bytes into a FIFO from a child and reads it: the non-seekable
 * path (`--input <(...)`), whose size only the header tells. */
static pdnn_status read_fifo(const unsigned char *bytes, size_t n, npy_array *a, char *err, size_t errlen)
{
    char dir[] = "/tmp/polydnn-npy-fifo-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char fifo[64];
    snprintf(fifo, sizeof fifo, "%s/in.npy", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        signal(SIGPIPE, SIG_IGN);
        FILE *w = fopen(fifo, "wb");
        if (w) {
            fwrite(bytes, 1, n, w);
            fclose(w);
        }
        _exit(0);
    }
    pdnn_status st = npy_read(fifo, a, err, errlen);
    int status;
    waitpid(pid, &status, 0);
    unlink(fifo);
    rmdir(dir);
    return st;
}

Test(npy, reads_a_fifo, .timeout = 10)
{
    unsigned char buf[1024];
    const char *d = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    size_t n = image_with(buf, sizeof buf, d, 24);
    npy_array a;
    char err[512] = "";
    cr_assert_eq(read_fifo(buf, n, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(a.count, 6);
    cr_assert_eq(a.data[5], 5.0f);
    npy_free(&a);
    cr_assert_eq(read_fifo(buf, n - 4, &a, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "truncated data: the shape (2, 3) needs 24 bytes of float32, the file has 20"), "%s", err);
    n = image_with(buf, sizeof buf, d, 28);
    cr_assert_eq(read_fifo(buf, n, &a, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "trailing data"), "%s", err);
    /* 4 TB declared, nothing sent: refused without asking for 4 TB. */
    n = image_with(buf, sizeof buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000)}", 8);
    cr_assert_eq(read_fifo(buf, n, &a, err, sizeof err), PDNN_ERR_CORRUPT);
    cr_assert(strstr(err, "truncated data"), "%s", err);
    cr_assert_null(a.data);
}

/* Writes a 1.0 header for `count` float32 values, then the values i. */
static void write_big(const char *p, int64_t count)
{
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    char dict[128];
    snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld,), }", (long long)count);
    unsigned char head[256];
    size_t hn = image_with(head, sizeof head, dict, 0);
    cr_assert_eq(fwrite(head, 1, hn, f), hn);
    static float chunk[1 << 16];
    for (int64_t i = 0; i < count;) {
        size_t m = 0;
        for (; m < sizeof chunk / sizeof chunk[0] && i < count; m++, i++)
            chunk[m] = (float)i;
        cr_assert_eq(fwrite(chunk, sizeof(float), m, f), m);
    }
    cr_assert_eq(fclose(f), 0);
}

/* The old reader held the file twice (its read buffer, grown by doubling,
 * and the array). Reading a 200 MB file must peak near 200 MB. */
Test(npy, peak_memory_is_one_copy, .timeout = 60)
{
    tmp_path();
    const int64_t count = 50 * 1000 * 1000;
    write_big(path, count);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        npy_array a;
        char err[512];
        if (npy_read(path, &a, err, sizeof err) != PDNN_SUCCESS) {
            fprintf(stderr, "%s\n", err);
            _exit(2);
        }
        if (a.count != count || a.data[0] != 0.0f || a.data[count - 1] != (float)(count - 1))
            _exit(3);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        double file = (double)count * 4 + 128, peak = (double)ru.ru_maxrss * 1024;
        fprintf(stderr, "peak resident %.0f MB reading a %.0f MB file (%.2fx)\n", peak / 1e6, file / 1e6,
                peak / file);
        npy_free(&a);
        _exit(peak < 1.5 * file ? 0 : 4);
    }
    int status;
    waitpid(pid, &status, 0);
    unlink(path);
    cr_assert(WIFEXITED(status), "the reader died");
    cr_assert_eq(WEXITSTATUS(status), 0, "exit %d: 2 read failed, 3 wrong data, 4 peak >= 1.5x the file",
                 WEXITSTATUS(status));
}

/* ---- the writer: a temporary file renamed into place -------------------- */

static size_t slurp(const char *p, unsigned char *buf, size_t cap)
{
    FILE *f = fopen(p, "rb");
    cr_assert_not_null(f, "%s", p);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* The names in dir other than keep (".", ".." aside), as one string. */
static void others_in(const char *dir, const char *keep, char *out, size_t len)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -vx '%s' | tr '\\n' ' '", dir, keep);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    pclose(p);
}

/* A write that fails part way (here: the file size limit, as a full disk
 * would) must leave the old file as it was and no temporary file. The old
 * writer truncated the file first, then failed. */
Test(npy, failed_write_keeps_the_old_file, .timeout = 20)
{
    char dir[] = "/tmp/polydnn-npy-w-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char p[64];
    snprintf(p, sizeof p, "%s/out.npy", dir);
    char err[512] = "";
    const float six[6] = {1, 2, 3, 4, 5, 6};
    cr_assert_eq(npy_write(p, 2, (int64_t[]){2, 3}, six, err, sizeof err), PDNN_SUCCESS, "%s", err);
    unsigned char before[4096], after[4096];
    size_t nb = slurp(p, before, sizeof before);
    cr_assert_eq(nb, 128 + 24);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        struct rlimit rl = {4096, 4096};
        signal(SIGXFSZ, SIG_IGN); /* write then fails with EFBIG */
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(5);
        const int64_t n = 100000;
        float *big = calloc((size_t)n, sizeof *big);
        pdnn_status st = npy_write(p, 1, &n, big, err, sizeof err);
        fprintf(stderr, "npy_write: %s\n", err);
        free(big);
        if (st != PDNN_ERR_IO)
            _exit(2);
        if (!strstr(err, p) || !strstr(err, "File too large") || !strstr(err, "the existing file is unchanged"))
            _exit(3);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status), "the writer died");
    cr_assert_eq(WEXITSTATUS(status), 0, "exit %d: 2 the write succeeded, 3 the message lacks the path, "
                 "the reason or that the file is unchanged", WEXITSTATUS(status));
    size_t na = slurp(p, after, sizeof after);
    cr_assert_eq(na, nb, "the old file is now %zu bytes, was %zu", na, nb);
    cr_assert(memcmp(before, after, nb) == 0, "the old file changed");
    char left[256];
    others_in(dir, "out.npy", left, sizeof left);
    cr_assert_str_empty(left, "left behind: %s", left);
    unlink(p);
    rmdir(dir);
}

/* A good write replaces the file whole, keeps its permissions, leaves no
 * temporary file, and goes through a symbolic link to its target. */
Test(npy, write_replaces_in_place)
{
    char dir[] = "/tmp/polydnn-npy-w-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char p[64], link[64];
    snprintf(p, sizeof p, "%s/out.npy", dir);
    snprintf(link, sizeof link, "%s/link.npy", dir);
    char err[512] = "";
    const float six[6] = {1, 2, 3, 4, 5, 6};
    mode_t old = umask(022);
    cr_assert_eq(npy_write(p, 1, (int64_t[]){6}, six, err, sizeof err), PDNN_SUCCESS, "%s", err);
    umask(old);
    struct stat sb;
    cr_assert_eq(stat(p, &sb), 0);
    cr_assert_eq(sb.st_mode & 07777, 0644, "a new file is %o, not what fopen gives (0644 under umask 022)",
                 (unsigned)(sb.st_mode & 07777));
    cr_assert_eq(chmod(p, 0640), 0);
    cr_assert_eq(npy_write(p, 2, (int64_t[]){3, 2}, six, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(stat(p, &sb), 0);
    cr_assert_eq(sb.st_mode & 07777, 0640, "the rewritten file lost its mode: %o", (unsigned)(sb.st_mode & 07777));
    npy_array a;
    cr_assert_eq(npy_read(p, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(a.ndim, 2);
    cr_assert_eq(a.shape[0], 3);
    cr_assert_eq(a.data[5], 6.0f);
    npy_free(&a);
    char left[256];
    others_in(dir, "out.npy", left, sizeof left);
    cr_assert_str_empty(left, "left behind: %s", left);
    cr_assert_eq(symlink("out.npy", link), 0);
    cr_assert_eq(npy_write(link, 1, (int64_t[]){2}, six, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(lstat(link, &sb), 0);
    cr_assert(S_ISLNK(sb.st_mode), "the link was replaced by a file");
    cr_assert_eq(npy_read(p, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(a.count, 2, "the link's target was not written");
    npy_free(&a);
    unlink(link);
    unlink(p);
    rmdir(dir);
}

/* The tool makes no directory: a path into a missing one fails, naming
 * the path and the reason. A name too long to take the temporary file's
 * suffix is still written (through a short temporary name). */
Test(npy, write_needs_the_directory_and_takes_long_names)
{
    char dir[] = "/tmp/polydnn-npy-w-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char p[512], err[1024] = "";
    const float six[6] = {1, 2, 3, 4, 5, 6};
    snprintf(p, sizeof p, "%s/missing/out.npy", dir);
    cr_assert_eq(npy_write(p, 1, (int64_t[]){6}, six, err, sizeof err), PDNN_ERR_IO);
    cr_assert(strstr(err, p) && strstr(err, "No such file or directory") && strstr(err, "nothing was written"),
              "%s", err);
    snprintf(p, sizeof p, "%s/missing", dir);
    struct stat sb;
    cr_assert_neq(stat(p, &sb), 0, "the directory was made");
    char name[256];
    memset(name, 'n', 250);
    memcpy(name + 250, ".npy", 5); /* 254 bytes: no room for ".tmp-XXXXXX" */
    snprintf(p, sizeof p, "%s/%s", dir, name);
    cr_assert_eq(npy_write(p, 1, (int64_t[]){6}, six, err, sizeof err), PDNN_SUCCESS, "%s", err);
    npy_array a;
    cr_assert_eq(npy_read(p, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(a.count, 6);
    npy_free(&a);
    cr_assert_eq(unlink(p), 0);
    cr_assert_eq(rmdir(dir), 0, "left behind in %s", dir);
}

/* A FIFO (as /dev/stdout may be) is written in place: renaming a file
 * over it would replace it. */
Test(npy, write_to_a_fifo, .timeout = 10)
{
    char dir[] = "/tmp/polydnn-npy-w-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char p[64];
    snprintf(p, sizeof p, "%s/pipe.npy", dir);
    cr_assert_eq(mkfifo(p, 0600), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        npy_array a;
        char err[512];
        if (npy_read(p, &a, err, sizeof err) != PDNN_SUCCESS) {
            fprintf(stderr, "%s\n", err);
            _exit(2);
        }
        _exit(a.count == 6 && a.data[5] == 6.0f ? 0 : 3);
    }
    char err[512] = "";
    const float six[6] = {1, 2, 3, 4, 5, 6};
    cr_assert_eq(npy_write(p, 2, (int64_t[]){2, 3}, six, err, sizeof err), PDNN_SUCCESS, "%s", err);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the reader got the wrong array");
    struct stat sb;
    cr_assert_eq(lstat(p, &sb), 0);
    cr_assert(S_ISFIFO(sb.st_mode), "the FIFO was replaced");
    unlink(p);
    rmdir(dir);
}

/* float16 ('<f2', issue 43): read and widened exactly, by both readers
 * (an image in memory, a file); numpy's bytes for
 * numpy.array([0, 1, -2, 65504, 2**-24, inf], '<f2').reshape(2, 3).
 * ml_dtypes' bfloat16 (saved as '|V2') refused with the way round. */
Test(npy, reads_float16_widened)
{
    static const unsigned short halves[6] = {0x0000, 0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00};
    static const float want[6] = {0.0f, 1.0f, -2.0f, 65504.0f, 0x1p-24f, INFINITY};
    unsigned char buf[256];
    (void)numpy_image(buf, "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }");
    size_t n = 128 + 12; /* the header's 128 bytes and 6 float16 */
    for (int i = 0; i < 6; i++) {
        buf[128 + 2 * i] = (unsigned char)(halves[i] & 0xff);
        buf[128 + 2 * i + 1] = (unsigned char)(halves[i] >> 8);
    }
    npy_array a;
    char err[256];
    cr_assert_eq(npy_parse(buf, n, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(a.count, 6);
    for (int i = 0; i < 6; i++)
        cr_assert(a.data[i] == want[i], "element %d: %g, not %g", i, (double)a.data[i], (double)want[i]);
    npy_free(&a);
    char path[] = "/tmp/pdnn_npy_f16_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "wb");
    cr_assert_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
    cr_assert_eq(npy_read(path, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    for (int i = 0; i < 6; i++)
        cr_assert(a.data[i] == want[i], "file, element %d", i);
    npy_free(&a);
    unlink(path);
    /* a float16 array one element short: its own size in the message */
    expect_corrupt(buf, n - 2, "bytes of float16");
    (void)numpy_image(buf, "{'descr': '|V2', 'fortran_order': False, 'shape': (2, 3), }");
    expect_corrupt(buf, n, "bfloat16");
}

/* npy_write_f16: numpy's own bytes for
 * numpy.save(f, numpy.array([0, 1, -2, 65504, 2**-24, inf], '<f2').reshape(2, 3)):
 * the header ('<f2', padded to 128 bytes, as the reader's test image) and
 * the 12 data bytes little-endian; read back widened exactly. */
Test(npy, writes_float16)
{
    static const uint16_t halves[6] = {0x0000, 0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00};
    static const float want[6] = {0.0f, 1.0f, -2.0f, 65504.0f, 0x1p-24f, INFINITY};
    unsigned char expect[256];
    (void)numpy_image(expect, "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }");
    for (int i = 0; i < 6; i++) {
        expect[128 + 2 * i] = (unsigned char)(halves[i] & 0xff);
        expect[128 + 2 * i + 1] = (unsigned char)(halves[i] >> 8);
    }
    char path[] = "/tmp/pdnn_npy_wf16_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    const int64_t shape[2] = {2, 3};
    char err[256];
    cr_assert_eq(npy_write_f16(path, 2, shape, halves, err, sizeof err), PDNN_SUCCESS, "%s", err);
    unsigned char got[256];
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    const size_t n = fread(got, 1, sizeof got, f);
    fclose(f);
    cr_assert_eq(n, 128 + 12, "the file has %zu bytes", n);
    cr_assert(memcmp(got, expect, n) == 0, "the bytes differ from numpy's");
    npy_array a;
    cr_assert_eq(npy_read(path, &a, err, sizeof err), PDNN_SUCCESS, "%s", err);
    cr_assert_eq(a.elem, 2);
    for (int i = 0; i < 6; i++)
        cr_assert(a.data[i] == want[i], "element %d: %g, not %g", i, (double)a.data[i], (double)want[i]);
    npy_free(&a);
    unlink(path);
}
