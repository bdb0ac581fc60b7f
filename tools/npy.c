/* NumPy .npy reader and writer for float32 C-order arrays.
 *
 * The header is a Python dict literal. numpy evaluates it with
 * ast.literal_eval; we parse the subset any numpy writes (the three keys,
 * once each; a quoted string, True/False, a tuple of non-negative ints;
 * whitespace) and refuse the rest with a message saying what we found,
 * rather than search it for substrings and guess. The reader looks at the
 * magic and the header before it reads or allocates anything for the
 * data, and reads the data straight into its one allocation. */
#include "npy.h"
#include "core/fileio.h" /* libc only, compiled into the tool */
#include "core/half.h"   /* likewise */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

pdnn_status cli_set_err(pdnn_status st, char *err, size_t len, const char *fmt, ...)
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
    memset(a, 0, sizeof *a);
}

static int host_is_little_endian(void)
{
    const uint32_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* The file is little-endian; so is every host we build for, but keep the
 * bytes right anywhere. In place, so the data is never held twice. */
static void swap_to_host(void *p, size_t n)
{
    if (host_is_little_endian() || !p)
        return;
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++, b += 4) {
        unsigned char t = b[0];
        b[0] = b[3];
        b[3] = t;
        t = b[1];
        b[1] = b[2];
        b[2] = t;
    }
}

static void shape_str(const npy_array *a, char *buf, size_t len)
{
    size_t w = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < a->ndim && w < len; i++)
        w += (size_t)snprintf(buf + w, len - w, "%s%" PRId64, i ? ", " : "", a->shape[i]);
    if (w < len)
        snprintf(buf + w, len - w, "%s)", a->ndim == 1 ? "," : "");
}

/* ---- the header dict ------------------------------------------------- */

typedef struct hparse {
    const char *s; /* the header text (not NUL-terminated) */
    size_t n, i;   /* its length; the position */
    unsigned major;
    char *err;
    size_t errlen;
} hparse;

static int hp_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static void hp_skip_ws(hparse *h)
{
    while (h->i < h->n && hp_ws(h->s[h->i]))
        h->i++;
}

static int hp_peek(const hparse *h)
{
    return h->i < h->n ? (unsigned char)h->s[h->i] : -1;
}

/* "malformed header at byte B: expected WHAT, found X". */
static pdnn_status hp_expected(const hparse *h, const char *what)
{
    char found[32];
    int c = hp_peek(h);
    if (c < 0)
        snprintf(found, sizeof found, "the end of the header");
    else if (c >= 0x21 && c < 0x7f)
        snprintf(found, sizeof found, "'%c'", c);
    else
        snprintf(found, sizeof found, "byte 0x%02x", (unsigned)c);
    return cli_set_err(PDNN_ERR_CORRUPT, h->err, h->errlen, "malformed header at byte %zu: expected %s, found %s", h->i,
                what, found);
}

/* A quoted string without escapes; str and len point into the header.
 * Python's u and r prefixes change nothing here (b would make bytes, which
 * numpy refuses as a key or dtype). */
static pdnn_status hp_string(hparse *h, const char *what, const char **str, size_t *len)
{
    int q = hp_peek(h);
    if ((q == 'u' || q == 'U' || q == 'r' || q == 'R') && h->i + 1 < h->n &&
        (h->s[h->i + 1] == '\'' || h->s[h->i + 1] == '"')) {
        h->i++;
        q = hp_peek(h);
    }
    if (q != '\'' && q != '"')
        return hp_expected(h, what);
    size_t open = h->i++;
    size_t start = h->i;
    while (h->i < h->n && h->s[h->i] != q) {
        unsigned char c = (unsigned char)h->s[h->i];
        if (c == '\\')
            return cli_set_err(PDNN_ERR_CORRUPT, h->err, h->errlen,
                        "malformed header at byte %zu: a backslash escape in a string (numpy writes none)", h->i);
        if (c < 0x20 || c >= 0x7f)
            return cli_set_err(PDNN_ERR_CORRUPT, h->err, h->errlen,
                        "malformed header at byte %zu: byte 0x%02x inside a string (a line break, a control "
                        "character or non-ASCII)",
                        h->i, (unsigned)c);
        h->i++;
    }
    if (h->i >= h->n)
        return cli_set_err(PDNN_ERR_CORRUPT, h->err, h->errlen, "malformed header: the string opened at byte %zu never ends",
                    open);
    *str = h->s + start;
    *len = h->i - start;
    h->i++;
    return PDNN_SUCCESS;
}

static pdnn_status hp_descr(hparse *h, npy_array *out)
{
    const char *v = NULL;
    size_t n = 0;
    pdnn_status st = hp_string(h, "a quoted dtype such as '<f4' for 'descr' (structured dtypes are not supported)",
                               &v, &n);
    if (st != PDNN_SUCCESS)
        return st;
    /* float16 ('<f2') is read too, widened to float32 (exactly). numpy has
     * no bfloat16: ml_dtypes' arrays save as 2-byte void ('|V2'), which
     * says nothing of what the bytes are, so it is refused with the way
     * round it. */
    if (n == 3 && memcmp(v, "<f2", 3) == 0) {
        out->elem = 2;
        return PDNN_SUCCESS;
    }
    if (n != 3 || memcmp(v, "<f4", 3) != 0)
        return cli_set_err(PDNN_ERR_CORRUPT, h->err, h->errlen,
                    "dtype '%.*s' is not supported: polydnn reads little-endian float32 ('<f4') and float16 "
                    "('<f2'); convert with array.astype(numpy.float32)%s",
                    n > 40 ? 40 : (int)n, v,
                    n == 3 && memcmp(v + 1, "V2", 2) == 0 ? " (a 2-byte void dtype is how ml_dtypes' bfloat16 saves)"
                                                          : "");
    out->elem = 4;
    return PDNN_SUCCESS;
}

static pdnn_status hp_fortran(hparse *h)
{
    size_t start = h->i;
    while (h->i < h->n && (h->s[h->i] == '_' || (h->s[h->i] >= 'a' && h->s[h->i] <= 'z') ||
                           (h->s[h->i] >= 'A' && h->s[h->i] <= 'Z') || (h->s[h->i] >= '0' && h->s[h->i] <= '9')))
        h->i++;
    size_t n = h->i - start;
    if (n == 5 && memcmp(h->s + start, "False", 5) == 0)
        return PDNN_SUCCESS;
    if (n == 4 && memcmp(h->s + start, "True", 4) == 0)
        return cli_set_err(PDNN_ERR_CORRUPT, h->err, h->errlen,
                    "the array is in Fortran order; save it with numpy.ascontiguousarray first");
    h->i = start;
    return hp_expected(h, "True or False for 'fortran_order'");
}

/* One dimension: a decimal Python int, >= 0, with the 'L' suffix Python 2
 * wrote for longs (numpy drops it in versions 1.0 and 2.0). */
static pdnn_status hp_dim(hparse *h, int64_t *v)
{
    int c = hp_peek(h);
    if (c == '-')
        return cli_set_err(PDNN_ERR_CORRUPT, h->err, h->errlen, "a negative dimension in 'shape' at byte %zu", h->i);
    if (c < '0' || c > '9')
        return hp_expected(h, "a dimension (a non-negative integer) in 'shape'");
    size_t start = h->i;
    int64_t x = 0;
    int nonzero = 0;
    while (h->i < h->n && h->s[h->i] >= '0' && h->s[h->i] <= '9') {
        int d = h->s[h->i] - '0';
        if (x > (INT64_MAX - d) / 10)
            return cli_set_err(PDNN_ERR_CORRUPT, h->err, h->errlen,
                        "the dimension at byte %zu of the header overflows a 64-bit integer", start);
        x = x * 10 + d;
        nonzero |= d;
        h->i++;
    }
    /* Python reads 007 as a syntax error (but 000 as 0). */
    if (h->i - start > 1 && h->s[start] == '0' && nonzero)
        return cli_set_err(PDNN_ERR_CORRUPT, h->err, h->errlen,
                    "malformed header at byte %zu: a dimension with a leading zero", start);
    if (h->major <= 2 && (hp_peek(h) == 'L' || hp_peek(h) == 'l'))
        h->i++;
    *v = x;
    return PDNN_SUCCESS;
}

static pdnn_status hp_shape(hparse *h, npy_array *out)
{
    if (hp_peek(h) != '(')
        return hp_expected(h, "a tuple such as (2, 3) for 'shape'");
    h->i++;
    hp_skip_ws(h);
    int nd = 0, comma = 0;
    while (hp_peek(h) != ')') {
        if (nd == NPY_MAX_DIMS)
            return cli_set_err(PDNN_ERR_CORRUPT, h->err, h->errlen, "'shape' has more than %d dimensions", NPY_MAX_DIMS);
        pdnn_status st = hp_dim(h, &out->shape[nd]);
        if (st != PDNN_SUCCESS)
            return st;
        nd++;
        hp_skip_ws(h);
        comma = hp_peek(h) == ',';
        if (comma) {
            h->i++;
            hp_skip_ws(h);
        } else if (hp_peek(h) != ')') {
            return hp_expected(h, "',' or ')' in 'shape'");
        }
    }
    h->i++;
    /* (6) is an int to Python, not a tuple: numpy refuses it. */
    if (nd == 1 && !comma)
        return cli_set_err(PDNN_ERR_CORRUPT, h->err, h->errlen,
                    "'shape' is (%" PRId64 "), which is not a tuple: a one-element tuple is written (%" PRId64 ",)",
                    out->shape[0], out->shape[0]);
    out->ndim = nd;
    int64_t count = 1;
    for (int i = 0; i < nd; i++) {
        int64_t v = out->shape[i];
        /* 4 * count must fit int64_t and size_t: the data's size in bytes. */
        int64_t limit = (int64_t)((uint64_t)SIZE_MAX / 4 < (uint64_t)INT64_MAX / 4 ? (uint64_t)SIZE_MAX / 4
                                                                                   : (uint64_t)INT64_MAX / 4);
        if (v > 0 && count > limit / v) {
            char s[256];
            shape_str(out, s, sizeof s);
            return cli_set_err(PDNN_ERR_CORRUPT, h->err, h->errlen,
                        "the shape %s overflows: its size in bytes does not fit in 64 bits", s);
        }
        count *= v;
    }
    out->count = count;
    return PDNN_SUCCESS;
}

static const char *const hp_keys[3] = {"descr", "fortran_order", "shape"};

static pdnn_status parse_header(const char *s, size_t n, unsigned major, npy_array *out, char *err, size_t errlen)
{
    hparse h = {s, n, 0, major, err, errlen};
    if (memchr(s, '\0', n))
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "the header contains a NUL byte");
    hp_skip_ws(&h);
    if (hp_peek(&h) != '{')
        return hp_expected(&h, "'{' opening the header dict");
    h.i++;
    int seen[3] = {0, 0, 0};
    for (;;) {
        hp_skip_ws(&h);
        if (hp_peek(&h) == '}')
            break;
        const char *k = NULL;
        size_t kn = 0;
        pdnn_status st = hp_string(&h, "a quoted key or '}'", &k, &kn);
        if (st != PDNN_SUCCESS)
            return st;
        int key = -1;
        for (int i = 0; i < 3; i++)
            if (kn == strlen(hp_keys[i]) && memcmp(k, hp_keys[i], kn) == 0)
                key = i;
        if (key < 0)
            return cli_set_err(PDNN_ERR_CORRUPT, err, errlen,
                        "unknown key '%.*s' in the header (a .npy header has exactly 'descr', 'fortran_order' "
                        "and 'shape')",
                        kn > 40 ? 40 : (int)kn, k);
        /* numpy would take the last one; which one the writer meant is
         * anyone's guess. */
        if (seen[key]++)
            return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "duplicate key '%s' in the header", hp_keys[key]);
        hp_skip_ws(&h);
        if (hp_peek(&h) != ':') {
            char what[48];
            snprintf(what, sizeof what, "':' after the key '%s'", hp_keys[key]);
            return hp_expected(&h, what);
        }
        h.i++;
        hp_skip_ws(&h);
        st = key == 0 ? hp_descr(&h, out) : key == 1 ? hp_fortran(&h) : hp_shape(&h, out);
        if (st != PDNN_SUCCESS)
            return st;
        hp_skip_ws(&h);
        if (hp_peek(&h) == ',') {
            h.i++;
            continue;
        }
        if (hp_peek(&h) != '}') {
            char what[64];
            snprintf(what, sizeof what, "',' or '}' after the value of '%s'", hp_keys[key]);
            return hp_expected(&h, what);
        }
    }
    h.i++;
    hp_skip_ws(&h);
    if (h.i < h.n)
        return hp_expected(&h, "nothing but spaces after the header's closing '}'");
    for (int i = 0; i < 3; i++)
        if (!seen[i])
            return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "the header has no '%s' key", hp_keys[i]);
    return PDNN_SUCCESS;
}

/* ---- magic, version, header length ----------------------------------- */

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* Checks the first have bytes; on success *start is where the header
 * begins (10 or 12) and *hlen its declared length. */
static pdnn_status parse_prefix(const unsigned char *b, size_t have, unsigned *major, size_t *start, size_t *hlen,
                                char *err, size_t errlen)
{
    if (memcmp(b, npy_magic, have < 6 ? have : 6) != 0)
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "not a .npy file (bad magic: it does not start with \\x93NUMPY)");
    if (have < 6)
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "not a .npy file (bad magic: %zu bytes, shorter than the magic string)",
                    have);
    if (have < 8)
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "truncated header: the file ends inside the format version");
    if (b[6] < 1 || b[6] > 3 || b[7] != 0)
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen,
                    "unsupported .npy format version %u.%u (polydnn reads 1.0, 2.0 and 3.0)", b[6], b[7]);
    *major = b[6];
    *start = b[6] == 1 ? 10 : 12;
    if (have < *start)
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "truncated header: the file ends inside the header length");
    *hlen = (size_t)b[8] | (size_t)b[9] << 8;
    if (*start == 12)
        *hlen |= (size_t)b[10] << 16 | (size_t)b[11] << 24;
    if (*hlen > NPY_MAX_HEADER_LEN)
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "the header declares %zu bytes; polydnn reads headers of at most %u",
                    *hlen, NPY_MAX_HEADER_LEN);
    return PDNN_SUCCESS;
}

/* Bytes of one element in the file: float32's 4 unless the header said
 * float16. */
static size_t file_elem(const npy_array *a) { return a->elem == 2 ? 2 : 4; }

/* A float16 file's data (count 2-byte elements at a->data, little-endian)
 * widened in place to float32, the allocation grown first: from the last
 * element down, so no element is overwritten before it is read. */
static pdnn_status widen_half(npy_array *a, char *err, size_t errlen)
{
    if (a->elem != 2 || a->count == 0)
        return PDNN_SUCCESS;
    float *f = realloc(a->data, (size_t)a->count * sizeof(float));
    if (!f)
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "out of memory for %zu bytes",
                           (size_t)a->count * sizeof(float));
    a->data = f;
    const unsigned char *b = (const unsigned char *)f;
    for (size_t i = (size_t)a->count; i-- > 0;)
        f[i] = pdnn__f16_to_f32((uint16_t)(b[2 * i] | (unsigned)b[2 * i + 1] << 8));
    return PDNN_SUCCESS;
}

static pdnn_status size_mismatch(const npy_array *a, uint64_t have, char *err, size_t errlen)
{
    char s[256];
    shape_str(a, s, sizeof s);
    uint64_t need = (uint64_t)a->count * file_elem(a);
    if (have < need)
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen,
                    "truncated data: the shape %s needs %" PRIu64 " bytes of %s, the file has %" PRIu64, s, need,
                    a->elem == 2 ? "float16" : "float32", have);
    return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%" PRIu64 " bytes of trailing data after the array of shape %s",
                have - need, s);
}

pdnn_status npy_parse(const unsigned char *buf, size_t len, npy_array *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    unsigned major = 0;
    size_t start = 0, hlen = 0;
    pdnn_status st = parse_prefix(buf, len, &major, &start, &hlen, err, errlen);
    if (st != PDNN_SUCCESS)
        return st;
    if (hlen > len - start)
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "truncated header (%zu bytes declared, %zu present)", hlen,
                    len - start);
    st = parse_header((const char *)buf + start, hlen, major, out, err, errlen);
    if (st == PDNN_SUCCESS && len - start - hlen != (uint64_t)out->count * file_elem(out))
        st = size_mismatch(out, len - start - hlen, err, errlen);
    size_t need = (size_t)out->count * file_elem(out);
    if (st == PDNN_SUCCESS && need > 0) {
        out->data = malloc(need);
        if (!out->data)
            st = cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "out of memory for %zu bytes", need);
        else {
            memcpy(out->data, buf + start + hlen, need);
            if (out->elem == 2)
                st = widen_half(out, err, errlen);
            else
                swap_to_host(out->data, (size_t)out->count);
        }
    }
    if (st != PDNN_SUCCESS)
        npy_free(out);
    return st;
}

/* ---- reading a stream -------------------------------------------------- */

static pdnn_status read_error(FILE *f, const char *what, char *err, size_t errlen)
{
    return cli_set_err(PDNN_ERR_IO, err, errlen, "read error in %s: %s", what, ferror(f) ? strerror(errno) : "unknown");
}

/* The data of a stream whose size is unknown (a pipe, a device): read in
 * growing pieces, so a header that declares more than the stream holds
 * costs no more memory than the stream gave. */
static pdnn_status read_unsized(FILE *f, npy_array *out, char *err, size_t errlen)
{
    const size_t need = (size_t)out->count * file_elem(out);
    size_t used = 0, cap = 0;
    unsigned char *buf = NULL;
    while (used < need) {
        if (used == cap) {
            size_t ncap = cap ? cap * 2 : (size_t)1 << 20;
            if (ncap > need || ncap < cap)
                ncap = need;
            unsigned char *g = realloc(buf, ncap);
            if (!g) {
                free(buf);
                return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "out of memory for %zu bytes", ncap);
            }
            buf = g;
            cap = ncap;
        }
        size_t got = fread(buf + used, 1, cap - used, f);
        used += got;
        if (used < cap) {
            pdnn_status st = ferror(f) ? read_error(f, "the data", err, errlen) : size_mismatch(out, used, err, errlen);
            free(buf);
            return st;
        }
    }
    if (fgetc(f) != EOF) {
        char s[256];
        shape_str(out, s, sizeof s);
        free(buf);
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "trailing data after the %zu bytes the shape %s needs", need, s);
    }
    out->data = (float *)buf;
    return PDNN_SUCCESS;
}

static pdnn_status read_stream(FILE *f, npy_array *out, char *err, size_t errlen)
{
    unsigned char pre[12];
    size_t have = fread(pre, 1, 8, f);
    if (have < 8 && ferror(f))
        return read_error(f, "the magic string", err, errlen);
    if (have == 8 && pre[6] >= 1 && pre[6] <= 3)
        have += fread(pre + 8, 1, pre[6] == 1 ? 2 : 4, f);
    if (ferror(f))
        return read_error(f, "the header length", err, errlen);
    unsigned major = 0;
    size_t start = 0, hlen = 0;
    pdnn_status st = parse_prefix(pre, have, &major, &start, &hlen, err, errlen);
    if (st != PDNN_SUCCESS)
        return st;
    char *h = malloc(hlen ? hlen : 1);
    if (!h)
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "out of memory for a %zu-byte header", hlen);
    size_t got = fread(h, 1, hlen, f);
    if (got < hlen)
        st = ferror(f) ? read_error(f, "the header", err, errlen)
                       : cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "truncated header (%zu bytes declared, %zu present)",
                              hlen, got);
    else
        st = parse_header(h, hlen, major, out, err, errlen);
    free(h);
    if (st != PDNN_SUCCESS || out->count == 0) {
        if (st == PDNN_SUCCESS && fgetc(f) != EOF)
            st = cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "trailing data after an array with no elements");
        return st;
    }
    /* A regular file tells its size: check the shape against it before
     * allocating anything. */
    struct stat sb;
    int fd = fileno(f);
    off_t pos = fd >= 0 ? ftello(f) : -1;
    if (pos >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
        uint64_t rest = sb.st_size > pos ? (uint64_t)(sb.st_size - pos) : 0;
        if (rest != (uint64_t)out->count * file_elem(out))
            return size_mismatch(out, rest, err, errlen);
        size_t need = (size_t)out->count * file_elem(out);
        out->data = malloc(need ? need : 1);
        if (!out->data)
            return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "out of memory for %zu bytes", need);
        got = fread(out->data, 1, need, f);
        if (got < need) /* the file shrank under us */
            return ferror(f) ? read_error(f, "the data", err, errlen) : size_mismatch(out, got, err, errlen);
    } else {
        st = read_unsized(f, out, err, errlen);
        if (st != PDNN_SUCCESS)
            return st;
    }
    if (out->elem == 2)
        return widen_half(out, err, errlen);
    swap_to_host(out->data, (size_t)out->count);
    return PDNN_SUCCESS;
}

pdnn_status npy_read_stream(FILE *f, const char *name, npy_array *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char inner[512] = "";
    pdnn_status st = read_stream(f, out, inner, sizeof inner);
    if (st != PDNN_SUCCESS) {
        npy_free(out);
        cli_set_err(st, err, errlen, "%s: %s", name, inner);
    }
    return st;
}

pdnn_status npy_read(const char *path, npy_array *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return cli_set_err(PDNN_ERR_IO, err, errlen, "%s: %s", path, strerror(errno));
    pdnn_status st = npy_read_stream(f, path, out, err, errlen);
    fclose(f);
    return st;
}

/* ---- writing ----------------------------------------------------------- */

/* Header and data (count elements of elem bytes: 4 float32, 2 float16)
 * to f, little-endian; 0, or -1 with errno from the failed write. */
static int write_image(FILE *f, const unsigned char *pre, const char *dict, size_t dlen, size_t pad,
                       const void *data, int elem, int64_t count)
{
    if (fwrite(pre, 1, 10, f) != 10 || fwrite(dict, 1, dlen, f) != dlen)
        return -1;
    for (size_t i = 0; i < pad; i++)
        if (fputc(' ', f) == EOF)
            return -1;
    if (fputc('\n', f) == EOF)
        return -1;
    if (count == 0)
        return 0;
    if (host_is_little_endian())
        return fwrite(data, (size_t)elem, (size_t)count, f) == (size_t)count ? 0 : -1;
    const unsigned char *src = data;
    unsigned char b[4096];
    for (int64_t i = 0; i < count;) {
        size_t m = 0;
        for (; m < sizeof b / (size_t)elem && i < count; m++, i++)
            for (int k = 0; k < elem; k++) /* reversed: the host is big-endian */
                b[(size_t)elem * m + (size_t)k] = src[(size_t)elem * (size_t)i + (size_t)(elem - 1 - k)];
        if (fwrite(b, (size_t)elem, m, f) != m)
            return -1;
    }
    return 0;
}

/* The header of a version 1.0 image: the 10-byte prefix, the dict and
 * its padding; path names the file in messages. */
typedef struct npy_image {
    unsigned char pre[10];
    char dict[512];
    size_t dlen, pad;
    const void *data;
    int elem; /* 4: float32 ('<f4'); 2: float16 ('<f2') */
    int64_t count;
} npy_image;

/* im->elem set by the caller. */
static pdnn_status build_image(const char *path, int ndim, const int64_t *shape, const void *data, npy_image *im,
                               char *err, size_t errlen)
{
    if (ndim < 0 || ndim > NPY_MAX_DIMS)
        return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "%s: %d dimensions (at most %d)", path, ndim,
                    NPY_MAX_DIMS);
    char *dict = im->dict;
    int w = snprintf(dict, sizeof im->dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     im->elem == 2 ? "<f2" : "<f4");
    int64_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && count > INT64_MAX / im->elem / shape[i]))
            return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "%s: dimension %d is %" PRId64, path, i, shape[i]);
        w += snprintf(dict + w, sizeof im->dict - (size_t)w, "%" PRId64 ",%s", shape[i], (i + 1 < ndim) ? " " : "");
        count *= shape[i];
    }
    if (ndim > 1)
        w--; /* numpy writes (2, 3) but (4,) */
    w += snprintf(dict + w, sizeof im->dict - (size_t)w, "), }");
    if (count > 0 && !data)
        return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "%s: no data", path);
    /* Pad with spaces so the data starts on a 64-byte boundary, as numpy does. */
    size_t total = 10 + (size_t)w + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)w + pad + 1;
    const unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                                   (unsigned char)(hlen >> 8)};
    memcpy(im->pre, pre, sizeof pre);
    im->dlen = (size_t)w;
    im->pad = pad;
    im->data = data;
    im->count = count;
    return PDNN_SUCCESS;
}

static int write_npy_image(FILE *f, void *ctx)
{
    const npy_image *im = ctx;
    return write_image(f, im->pre, im->dict, im->dlen, im->pad, im->data, im->elem, im->count);
}

pdnn_status npy_encode(int ndim, const int64_t *shape, const float *data, unsigned char **buf, size_t *len,
                       char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    npy_image im;
    memset(&im, 0, sizeof im);
    im.elem = 4;
    pdnn_status st = build_image("array", ndim, shape, data, &im, err, errlen);
    if (st != PDNN_SUCCESS)
        return st;
    char *mem = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&mem, &size);
    if (!f)
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "encoding a .npy image: %s", strerror(errno));
    int bad = write_npy_image(f, &im);
    if (fclose(f) != 0)
        bad = 1;
    if (bad) {
        free(mem);
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "encoding a .npy image: out of memory");
    }
    *buf = (unsigned char *)mem;
    *len = size;
    return PDNN_SUCCESS;
}

/* npy_write and npy_write_f16: elem bytes an element. */
static pdnn_status write_elems(const char *path, int ndim, const int64_t *shape, const void *data, int elem,
                               char *err, size_t errlen)
{
    npy_image im;
    memset(&im, 0, sizeof im);
    im.elem = elem;
    pdnn_status st = build_image(path, ndim, shape, data, &im, err, errlen);
    if (st != PDNN_SUCCESS)
        return st;
    return pdnn__file_replace_named(path, write_npy_image, &im, err, errlen) == 0 ? PDNN_SUCCESS : PDNN_ERR_IO;
}

pdnn_status npy_write(const char *path, int ndim, const int64_t *shape, const float *data, char *err,
                      size_t errlen)
{
    return write_elems(path, ndim, shape, data, 4, err, errlen);
}

pdnn_status npy_write_f16(const char *path, int ndim, const int64_t *shape, const uint16_t *data, char *err,
                          size_t errlen)
{
    return write_elems(path, ndim, shape, data, 2, err, errlen);
}
