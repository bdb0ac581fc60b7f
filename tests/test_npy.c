/* The .npy reader and writer: round trips, numpy's own byte layout, and
 * every kind of corrupt or unsupported file. */
#include "cli/npy.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

static void tmp_path(void)
{
    snprintf(path, sizeof path, "/tmp/polydnn-npy-%d.npy", (int)getpid());
}

Test(npy, round_trip_shapes)
{
    tmp_path();
    const int64_t shapes[][4] = {{2, 3, 4, 5}, {1, 1, 1, 1}, {7, 0, 0, 0}};
    const int ndims[] = {4, 4, 1};
    for (int t = 0; t < 3; t++) {
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
