/* NumPy .npy reader and writer for float32 C-order arrays. The header is
 * a Python dict literal; we parse exactly the three keys numpy writes and
 * reject anything we cannot represent rather than guess. */
#include "npy.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pdnn_status fail(pdnn_status st, char *err, size_t len, const char *fmt, ...)
{
    if (err && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
    }
    return st;
}

void npy_free(npy_array *a)
{
    if (!a)
        return;
    free(a->data);
    a->data = NULL;
    a->count = 0;
    a->ndim = 0;
}

/* Finds 'key': in the header and returns a pointer to its value. */
static const char *find_key(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) {
        snprintf(pat, sizeof pat, "\"%s\"", key);
        p = strstr(h, pat);
    }
    if (!p)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

static pdnn_status parse_header(const char *h, npy_array *out, char *err, size_t errlen)
{
    const char *d = find_key(h, "descr");
    if (!d)
        return fail(PDNN_ERR_CORRUPT, err, errlen, "the header has no 'descr'");
    if (strncmp(d, "'<f4'", 5) != 0 && strncmp(d, "\"<f4\"", 5) != 0) {
        char dt[16] = {0};
        size_t i = 0;
        while (d[i] && d[i] != ',' && i < sizeof dt - 1) {
            dt[i] = d[i];
            i++;
        }
        return fail(PDNN_ERR_CORRUPT, err, errlen,
                    "dtype %s is not supported: polydnn reads little-endian float32 ('<f4'); "
                    "convert with array.astype(numpy.float32)",
                    dt);
    }
    const char *f = find_key(h, "fortran_order");
    if (!f)
        return fail(PDNN_ERR_CORRUPT, err, errlen, "the header has no 'fortran_order'");
    if (strncmp(f, "True", 4) == 0)
        return fail(PDNN_ERR_CORRUPT, err, errlen,
                    "the array is in Fortran order; save it with numpy.ascontiguousarray first");
    if (strncmp(f, "False", 5) != 0)
        return fail(PDNN_ERR_CORRUPT, err, errlen, "'fortran_order' is neither True nor False");
    const char *s = find_key(h, "shape");
    if (!s || *s != '(')
        return fail(PDNN_ERR_CORRUPT, err, errlen, "the header has no 'shape' tuple");
    s++;
    int nd = 0;
    int64_t count = 1;
    for (;;) {
        while (*s == ' ')
            s++;
        if (*s == ')')
            break;
        if (!isdigit((unsigned char)*s))
            return fail(PDNN_ERR_CORRUPT, err, errlen, "the shape holds something other than a number");
        errno = 0;
        char *end = NULL;
        long long v = strtoll(s, &end, 10);
        if (errno != 0 || v < 0)
            return fail(PDNN_ERR_CORRUPT, err, errlen, "a dimension of the shape is out of range");
        if (nd == NPY_MAX_DIMS)
            return fail(PDNN_ERR_CORRUPT, err, errlen, "more than %d dimensions", NPY_MAX_DIMS);
        if (v > 0 && count > INT64_MAX / 4 / v)
            return fail(PDNN_ERR_CORRUPT, err, errlen, "the shape's size overflows");
        out->shape[nd++] = v;
        count *= v;
        s = end;
        while (*s == ' ')
            s++;
        if (*s == ',')
            s++;
        else if (*s != ')')
            return fail(PDNN_ERR_CORRUPT, err, errlen, "the shape tuple is malformed");
    }
    out->ndim = nd;
    out->count = count;
    return PDNN_SUCCESS;
}

pdnn_status npy_parse(const unsigned char *buf, size_t len, npy_array *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
        return fail(PDNN_ERR_CORRUPT, err, errlen, "not a .npy file (bad magic)");
    unsigned major = buf[6];
    size_t hlen, start;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        start = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return fail(PDNN_ERR_CORRUPT, err, errlen, "truncated header");
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        start = 12;
    } else {
        return fail(PDNN_ERR_CORRUPT, err, errlen, "unsupported .npy format version %u.%u", major, buf[7]);
    }
    if (hlen > len - start)
        return fail(PDNN_ERR_CORRUPT, err, errlen, "truncated header (%zu bytes declared, %zu present)",
                    hlen, len - start);
    char *h = malloc(hlen + 1);
    if (!h)
        return fail(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "out of memory");
    memcpy(h, buf + start, hlen);
    h[hlen] = '\0';
    if (strlen(h) != hlen) {
        free(h);
        return fail(PDNN_ERR_CORRUPT, err, errlen, "the header contains a NUL byte");
    }
    pdnn_status st = parse_header(h, out, err, errlen);
    free(h);
    if (st != PDNN_SUCCESS)
        return st;
    size_t data_at = start + hlen;
    uint64_t need = (uint64_t)out->count * 4;
    if (len - data_at < need)
        return fail(PDNN_ERR_CORRUPT, err, errlen,
                    "truncated data: the shape needs %llu bytes, the file has %zu",
                    (unsigned long long)need, len - data_at);
    if (len - data_at > need)
        return fail(PDNN_ERR_CORRUPT, err, errlen, "%zu bytes of trailing data after the array",
                    (size_t)(len - data_at - need));
    if (out->count > 0) {
        out->data = malloc((size_t)need);
        if (!out->data)
            return fail(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "out of memory for %llu bytes",
                        (unsigned long long)need);
        /* The file is little-endian; so is every host we build for, but
         * assemble the words byte by byte so that stays true anywhere. */
        const unsigned char *p = buf + data_at;
        for (int64_t i = 0; i < out->count; i++, p += 4) {
            uint32_t w = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            memcpy(&out->data[i], &w, 4);
        }
    }
    return PDNN_SUCCESS;
}

pdnn_status npy_read(const char *path, npy_array *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(PDNN_ERR_IO, err, errlen, "%s: %s", path, strerror(errno));
    unsigned char *buf = NULL;
    size_t used = 0, cap = 0;
    pdnn_status st = PDNN_SUCCESS;
    for (;;) {
        if (cap - used < 65536) {
            size_t ncap = cap ? cap * 2 : 131072;
            unsigned char *grown = realloc(buf, ncap);
            if (!grown) {
                st = fail(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: out of memory", path);
                break;
            }
            buf = grown;
            cap = ncap;
        }
        size_t got = fread(buf + used, 1, cap - used, f);
        used += got;
        if (got == 0) {
            if (ferror(f))
                st = fail(PDNN_ERR_IO, err, errlen, "%s: read error", path);
            break;
        }
    }
    fclose(f);
    if (st == PDNN_SUCCESS) {
        char inner[256] = "";
        st = npy_parse(buf, used, out, inner, sizeof inner);
        if (st != PDNN_SUCCESS)
            fail(st, err, errlen, "%s: %s", path, inner);
    }
    free(buf);
    return st;
}

pdnn_status npy_write(const char *path, int ndim, const int64_t *shape, const float *data, char *err,
                      size_t errlen)
{
    if (ndim < 0 || ndim > NPY_MAX_DIMS)
        return fail(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "%d dimensions", ndim);
    char dict[512];
    int w = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    int64_t count = 1;
    for (int i = 0; i < ndim; i++) {
        w += snprintf(dict + w, sizeof dict - (size_t)w, "%lld,%s", (long long)shape[i],
                      (i + 1 < ndim) ? " " : "");
        count *= shape[i];
    }
    if (ndim > 1)
        w--; /* numpy writes (2, 3) but (4,) */
    w += snprintf(dict + w, sizeof dict - (size_t)w, "), }");
    /* Pad with spaces so the data starts on a 64-byte boundary, as numpy does. */
    size_t total = 10 + (size_t)w + 1;
    size_t pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f)
        return fail(PDNN_ERR_IO, err, errlen, "%s: %s", path, strerror(errno));
    size_t hlen = (size_t)w + pad + 1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)w, f) == (size_t)w;
    for (size_t i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    for (int64_t i = 0; ok && i < count; i++) {
        uint32_t v;
        memcpy(&v, &data[i], 4);
        unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                              (unsigned char)(v >> 24)};
        ok = fwrite(b, 1, 4, f) == 4;
    }
    if (fclose(f) != 0)
        ok = 0;
    if (!ok)
        return fail(PDNN_ERR_IO, err, errlen, "%s: write failed", path);
    return PDNN_SUCCESS;
}
