/* .npz reader and writer (see npz.h). The ZIP structures are written and
 * read by hand (they are a few fixed little-endian records: APPNOTE.TXT
 * sections 4.3.7, 4.3.12, 4.3.16); compression and CRC-32 are zlib's.
 * The reader holds the whole archive in memory and trusts no offset or
 * size before checking it against the bytes actually there. */
#include "npz.h"
#include "core/fileio.h" /* libc only, compiled into the tool */

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u
#define SIG_ZIP64_LOCATOR 0x07064b50u
#define LOCAL_LEN 30u
#define CENTRAL_LEN 46u
#define END_LEN 22u
#define METHOD_STORED 0
#define METHOD_DEFLATE 8
/* MS-DOS date 1980-01-01, time 00:00: fixed, so equal checkpoints are equal files. */
#define DOS_DATE 0x0021u
#define DOS_TIME 0x0000u
/* Deflate expands at most ~1032:1; a member that declares more is a bomb. */
#define MAX_INFLATE_RATIO 1032u


static uint16_t get16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static unsigned char *put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)(v >> 8 & 0xff);
    return p + 2;
}

static unsigned char *put32(unsigned char *p, uint32_t v)
{
    p = put16(p, v & 0xffff);
    return put16(p, v >> 16);
}

void npz_free(npz_archive *a)
{
    if (!a)
        return;
    for (int i = 0; a->members && i < a->count; i++) {
        free(a->members[i].name);
        npy_free(&a->members[i].array);
    }
    free(a->members);
    memset(a, 0, sizeof *a);
}

const npz_member *npz_find(const npz_archive *a, const char *name)
{
    for (int i = 0; a && name && i < a->count; i++)
        if (strcmp(a->members[i].name, name) == 0)
            return &a->members[i];
    return NULL;
}

/* ---- writing ------------------------------------------------------------ */

typedef struct zmember {
    char *fname; /* NAME.npy */
    size_t flen;
    unsigned char *comp; /* raw deflate of the .npy image */
    uint32_t csize, usize, crc, offset;
} zmember;

typedef struct zwrite {
    int count;
    zmember *m;
} zwrite;

static int valid_write_name(const char *n)
{
    size_t len = strlen(n);
    if (len == 0 || len > NPZ_MAX_NAME)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = n[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-'))
            return 0;
    }
    return 1;
}

static pdnn_status deflate_all(const unsigned char *in, size_t len, zmember *m, const char *path, char *err,
                               size_t errlen)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    /* -15: raw deflate, no zlib header, as ZIP method 8 stores it. */
    if (deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: deflateInit2 failed", path);
    uLong bound = deflateBound(&z, (uLong)len);
    m->comp = malloc(bound ? bound : 1);
    if (!m->comp) {
        deflateEnd(&z);
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: out of memory compressing %s", path, m->fname);
    }
    z.next_in = (Bytef *)(uintptr_t)in; /* zlib's API is not const */
    z.avail_in = (uInt)len;
    z.next_out = m->comp;
    z.avail_out = (uInt)bound;
    int r = deflate(&z, Z_FINISH);
    uLong out = z.total_out;
    deflateEnd(&z);
    if (r != Z_STREAM_END)
        return cli_set_err(PDNN_ERR_IO, err, errlen, "%s: deflate of %s failed (%d)", path, m->fname, r);
    m->csize = (uint32_t)out;
    return PDNN_SUCCESS;
}

static int write_archive(FILE *f, void *ctx)
{
    const zwrite *z = ctx;
    unsigned char h[CENTRAL_LEN];
    for (int i = 0; i < z->count; i++) {
        const zmember *m = &z->m[i];
        unsigned char *p = put32(h, SIG_LOCAL);
        p = put16(p, 20); /* version needed: 2.0 (deflate) */
        p = put16(p, 0);  /* flags */
        p = put16(p, METHOD_DEFLATE);
        p = put16(p, DOS_TIME);
        p = put16(p, DOS_DATE);
        p = put32(p, m->crc);
        p = put32(p, m->csize);
        p = put32(p, m->usize);
        p = put16(p, (unsigned)m->flen);
        put16(p, 0); /* extra length */
        if (fwrite(h, 1, LOCAL_LEN, f) != LOCAL_LEN || fwrite(m->fname, 1, m->flen, f) != m->flen ||
            fwrite(m->comp, 1, m->csize, f) != m->csize)
            return -1;
    }
    uint32_t cd_start = z->count ? z->m[z->count - 1].offset + LOCAL_LEN + (uint32_t)z->m[z->count - 1].flen +
                                       z->m[z->count - 1].csize
                                 : 0;
    uint32_t cd_size = 0;
    for (int i = 0; i < z->count; i++) {
        const zmember *m = &z->m[i];
        unsigned char *p = put32(h, SIG_CENTRAL);
        p = put16(p, 0x0314); /* made by: 2.0, Unix (so the mode below means something) */
        p = put16(p, 20);
        p = put16(p, 0);
        p = put16(p, METHOD_DEFLATE);
        p = put16(p, DOS_TIME);
        p = put16(p, DOS_DATE);
        p = put32(p, m->crc);
        p = put32(p, m->csize);
        p = put32(p, m->usize);
        p = put16(p, (unsigned)m->flen);
        p = put16(p, 0);                       /* extra */
        p = put16(p, 0);                       /* comment */
        p = put16(p, 0);                       /* disk */
        p = put16(p, 0);                       /* internal attributes */
        p = put32(p, (uint32_t)0100644 << 16); /* external: a regular file, rw-r--r-- */
        put32(p, m->offset);
        if (fwrite(h, 1, CENTRAL_LEN, f) != CENTRAL_LEN || fwrite(m->fname, 1, m->flen, f) != m->flen)
            return -1;
        cd_size += CENTRAL_LEN + (uint32_t)m->flen;
    }
    unsigned char *p = put32(h, SIG_END);
    p = put16(p, 0);
    p = put16(p, 0);
    p = put16(p, (unsigned)z->count);
    p = put16(p, (unsigned)z->count);
    p = put32(p, cd_size);
    p = put32(p, cd_start);
    put16(p, 0);
    return fwrite(h, 1, END_LEN, f) == END_LEN ? 0 : -1;
}

static void zwrite_free(zwrite *z)
{
    for (int i = 0; i < z->count; i++) {
        free(z->m[i].fname);
        free(z->m[i].comp);
    }
    free(z->m);
}

pdnn_status npz_write(const char *path, int count, const npz_entry *entries, char *err, size_t errlen)
{
    if (!path)
        return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "npz_write: no path");
    if (count < 0 || count > 0xfffe || (count > 0 && !entries))
        return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "%s: %d arrays (0 to 65534 fit a ZIP without ZIP64)",
                    path, count);
    for (int i = 0; i < count; i++) {
        if (!entries[i].name || !valid_write_name(entries[i].name))
            return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen,
                        "%s: array %d's name '%s' is not 1 to %d of A-Z a-z 0-9 _ . -", path, i,
                        entries[i].name ? entries[i].name : "(null)", NPZ_MAX_NAME);
        for (int j = 0; j < i; j++)
            if (strcmp(entries[i].name, entries[j].name) == 0)
                return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "%s: two arrays are named '%s'", path,
                            entries[i].name);
    }
    zwrite z = {0, count ? calloc((size_t)count, sizeof(zmember)) : NULL};
    if (count && !z.m)
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: out of memory", path);
    pdnn_status st = PDNN_SUCCESS;
    uint64_t offset = 0;
    for (int i = 0; i < count && st == PDNN_SUCCESS; i++) {
        zmember *m = &z.m[i];
        z.count = i + 1;
        m->flen = strlen(entries[i].name) + 4;
        m->fname = malloc(m->flen + 1);
        if (!m->fname) {
            st = cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: out of memory", path);
            break;
        }
        snprintf(m->fname, m->flen + 1, "%s.npy", entries[i].name);
        unsigned char *img = NULL;
        size_t ilen = 0;
        char inner[256] = "";
        st = npy_encode(entries[i].ndim, entries[i].shape, entries[i].data, &img, &ilen, inner, sizeof inner);
        if (st != PDNN_SUCCESS) {
            cli_set_err(st, err, errlen, "%s: array '%s': %s", path, entries[i].name, inner);
            break;
        }
        if (ilen >= 0xffffffffu || ilen > UINT_MAX) {
            free(img);
            st = cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen,
                      "%s: array '%s' is %zu bytes: polydnn writes members under 4 GiB (no ZIP64)", path,
                      entries[i].name, ilen);
            break;
        }
        m->usize = (uint32_t)ilen;
        m->crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), img, (uInt)ilen);
        st = deflate_all(img, ilen, m, path, err, errlen);
        free(img);
        if (st != PDNN_SUCCESS)
            break;
        m->offset = (uint32_t)offset;
        offset += LOCAL_LEN + m->flen + m->csize;
        /* The central directory and the end record must start below 4 GiB too. */
        if (offset + (uint64_t)count * (CENTRAL_LEN + 4 + NPZ_MAX_NAME) + END_LEN >= 0xffffffffu)
            st = cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen,
                      "%s: the archive would reach 4 GiB: polydnn writes .npz files under 4 GiB (no ZIP64)", path);
    }
    if (st == PDNN_SUCCESS)
        st = pdnn__file_replace_named(path, write_archive, &z, err, errlen) == 0 ? PDNN_SUCCESS : PDNN_ERR_IO;
    zwrite_free(&z);
    return st;
}

/* ---- reading ------------------------------------------------------------- */

typedef struct zread {
    const unsigned char *b;
    size_t len;
    const char *name;
    char *err;
    size_t errlen;
} zread;

static pdnn_status corrupt(const zread *z, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static pdnn_status corrupt(const zread *z, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return cli_set_err(PDNN_ERR_CORRUPT, z->err, z->errlen, "%s: %s", z->name, msg);
}

/* The ZIP64 extended information (header 0x0001) of an extra field:
 * uncompressed then compressed size, as a local header carries them. */
static int zip64_sizes(const unsigned char *x, size_t n, uint64_t *usize, uint64_t *csize)
{
    while (n >= 4) {
        unsigned id = get16(x), sz = get16(x + 2);
        if (sz > n - 4)
            return 0;
        if (id == 0x0001 && sz >= 16) {
            *usize = get64(x + 4);
            *csize = get64(x + 12);
            return 1;
        }
        x += 4 + sz;
        n -= 4 + sz;
    }
    return 0;
}

static int extra_well_formed(const unsigned char *x, size_t n)
{
    while (n >= 4) {
        size_t sz = get16(x + 2);
        if (sz > n - 4)
            return 0;
        x += 4 + sz;
        n -= 4 + sz;
    }
    return n == 0;
}

static pdnn_status inflate_member(const zread *z, const char *fname, unsigned method, const unsigned char *in,
                                  uint32_t csize, uint32_t usize, unsigned char **out)
{
    /* Before allocating: a stored member's declared size must be the size
     * of the data it has (the fuzzer found 818 bytes asking for 822 MB). */
    if (method == METHOD_STORED && csize != usize)
        return corrupt(z, "member %s is stored but its sizes differ (%u compressed, %u not)", fname, csize, usize);
    *out = malloc(usize ? usize : 1);
    if (!*out)
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, z->err, z->errlen, "%s: out of memory for member %s (%u bytes)",
                    z->name, fname, usize);
    if (method == METHOD_STORED) {
        memcpy(*out, in, usize);
        return PDNN_SUCCESS;
    }
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, -15) != Z_OK)
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, z->err, z->errlen, "%s: inflateInit2 failed", z->name);
    s.next_in = (Bytef *)(uintptr_t)in; /* zlib's API is not const */
    s.avail_in = csize;
    s.next_out = *out;
    s.avail_out = usize;
    int r = inflate(&s, Z_FINISH);
    unsigned char probe;
    if (r == Z_BUF_ERROR && s.avail_out == 0) {
        /* Output full before the stream ended: it holds more than declared. */
        s.next_out = &probe;
        s.avail_out = 1;
        (void)inflate(&s, Z_FINISH);
        inflateEnd(&s);
        return corrupt(z, "member %s inflates to more than its declared %u bytes", fname, usize);
    }
    uLong produced = s.total_out, consumed = s.total_in;
    const char *msg = s.msg;
    inflateEnd(&s);
    if (r == Z_DATA_ERROR)
        return corrupt(z, "member %s: corrupt deflate data: %s", fname, msg ? msg : "invalid stream");
    if (r != Z_STREAM_END)
        return corrupt(z, "member %s: the deflate stream ends early (%lu of %u bytes inflated): truncated", fname,
                       produced, usize);
    if (produced != usize)
        return corrupt(z, "member %s inflates to %lu bytes, its header declares %u", fname, produced, usize);
    if (consumed != csize)
        return corrupt(z, "member %s: %lu bytes after the end of its deflate stream", fname, csize - consumed);
    return PDNN_SUCCESS;
}

static pdnn_status check_name(const zread *z, const unsigned char *p, size_t n, int idx)
{
    if (n < 5 || memcmp(p + n - 4, ".npy", 4) != 0)
        return corrupt(z, "member %d's name '%.*s' does not end in .npy", idx, n > 80 ? 80 : (int)n, (const char *)p);
    if (n - 4 > NPZ_MAX_NAME)
        return corrupt(z, "member %d's name is %zu bytes (at most %d)", idx, n - 4, NPZ_MAX_NAME);
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] >= 0x7f || p[i] == '/' || p[i] == '\\')
            return corrupt(z, "member %d's name has byte 0x%02x at %zu (a directory, a control character or "
                              "non-ASCII)",
                           idx, p[i], i);
    return PDNN_SUCCESS;
}

static pdnn_status read_member(const zread *z, const unsigned char *c, size_t cd_off, int idx, npz_member *m,
                               size_t *next)
{
    const unsigned char *b = z->b;
    if (cd_off + CENTRAL_LEN > z->len || get32(c) != SIG_CENTRAL)
        return corrupt(z, "central directory entry %d: bad signature", idx);
    unsigned flags = get16(c + 8), method = get16(c + 10);
    uint32_t crc = get32(c + 16), csize = get32(c + 20), usize = get32(c + 24);
    size_t nlen = get16(c + 28), xlen = get16(c + 30), clen = get16(c + 32);
    unsigned disk = get16(c + 34);
    uint32_t loff = get32(c + 42);
    if (cd_off + CENTRAL_LEN + nlen + xlen + clen > z->len)
        return corrupt(z, "central directory entry %d runs past the directory", idx);
    const unsigned char *fname = c + CENTRAL_LEN;
    char shown[NPZ_MAX_NAME + 8];
    snprintf(shown, sizeof shown, "%.*s", nlen > NPZ_MAX_NAME + 4 ? NPZ_MAX_NAME + 4 : (int)nlen,
             (const char *)fname);
    pdnn_status st = check_name(z, fname, nlen, idx);
    if (st != PDNN_SUCCESS)
        return st;
    if (flags & 0x41)
        return corrupt(z, "member %s is encrypted", shown);
    if (method != METHOD_STORED && method != METHOD_DEFLATE)
        return corrupt(z, "member %s uses compression method %u (polydnn reads stored and deflate)", shown, method);
    if (disk != 0)
        return corrupt(z, "member %s is on disk %u of a split archive", shown, disk);
    if (csize == 0xffffffffu || usize == 0xffffffffu || loff == 0xffffffffu)
        return corrupt(z, "member %s needs ZIP64 (4 GiB or more): polydnn reads archives under 4 GiB", shown);
    if (!extra_well_formed(c + CENTRAL_LEN + nlen, xlen))
        return corrupt(z, "member %s: malformed extra field in the central directory", shown);
    /* The local header: its name and sizes must agree with the directory. */
    if ((uint64_t)loff + LOCAL_LEN > z->len || get32(b + loff) != SIG_LOCAL)
        return corrupt(z, "member %s: no local header at offset %u", shown, loff);
    const unsigned char *l = b + loff;
    unsigned lflags = get16(l + 6), lmethod = get16(l + 8);
    uint32_t lcrc = get32(l + 14), lcsize = get32(l + 18), lusize = get32(l + 22);
    size_t lnlen = get16(l + 26), lxlen = get16(l + 28);
    if ((uint64_t)loff + LOCAL_LEN + lnlen + lxlen > z->len)
        return corrupt(z, "member %s: the local header runs past the end of the file: truncated", shown);
    if (lnlen != nlen || memcmp(l + LOCAL_LEN, fname, nlen) != 0)
        return corrupt(z, "member %s: the local header names another file", shown);
    if (lmethod != method || (lflags & 0x41) != (flags & 0x41))
        return corrupt(z, "member %s: the local header's method or flags differ from the directory's", shown);
    const unsigned char *lx = l + LOCAL_LEN + lnlen;
    if (!extra_well_formed(lx, lxlen))
        return corrupt(z, "member %s: malformed extra field in the local header", shown);
    if (lflags & 0x08) {
        /* Sizes in a data descriptor after the data: zero (or ZIP64's
         * markers) here; the directory's are checked against the data. */
        if ((lcrc != 0 && lcrc != crc) || (lcsize != 0 && lcsize != csize && lcsize != 0xffffffffu) ||
            (lusize != 0 && lusize != usize && lusize != 0xffffffffu))
            return corrupt(z, "member %s: local header sizes disagree with the central directory", shown);
    } else if (lcsize == 0xffffffffu || lusize == 0xffffffffu) {
        /* numpy.savez writes every member with force_zip64. */
        uint64_t u = 0, cz = 0;
        if (!zip64_sizes(lx, lxlen, &u, &cz) || u != usize || cz != csize || lcrc != crc)
            return corrupt(z, "member %s: the local header's ZIP64 sizes disagree with the central directory", shown);
    } else if (lcrc != crc || lcsize != csize || lusize != usize) {
        return corrupt(z, "member %s: the local header (crc %08x, %u -> %u bytes) disagrees with the central "
                          "directory (crc %08x, %u -> %u bytes)",
                       shown, lcrc, lcsize, lusize, crc, csize, usize);
    }
    uint64_t data = (uint64_t)loff + LOCAL_LEN + lnlen + lxlen;
    if (data + csize > cd_off)
        return corrupt(z, "member %s: its %u bytes of data run into the central directory (truncated or overlapping)",
                       shown, csize);
    if (method == METHOD_DEFLATE && (uint64_t)usize > (uint64_t)csize * MAX_INFLATE_RATIO + 64)
        return corrupt(z, "member %s declares %u bytes from %u compressed, more than deflate can give", shown, usize,
                       csize);
    unsigned char *img = NULL;
    st = inflate_member(z, shown, method, b + data, csize, usize, &img);
    if (st == PDNN_SUCCESS) {
        uint32_t got = (uint32_t)crc32(crc32(0L, Z_NULL, 0), img, usize);
        if (got != crc)
            st = corrupt(z, "member %s: CRC-32 %08x, the archive says %08x: the data is corrupt", shown, got, crc);
    }
    if (st == PDNN_SUCCESS) {
        char inner[384] = "";
        st = npy_parse(img, usize, &m->array, inner, sizeof inner);
        if (st != PDNN_SUCCESS)
            cli_set_err(st, z->err, z->errlen, "%s: member %s: %s", z->name, shown, inner);
    }
    free(img);
    if (st != PDNN_SUCCESS)
        return st;
    m->name = malloc(nlen - 3);
    if (!m->name) {
        npy_free(&m->array);
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, z->err, z->errlen, "%s: out of memory", z->name);
    }
    memcpy(m->name, fname, nlen - 4);
    m->name[nlen - 4] = '\0';
    *next = cd_off + CENTRAL_LEN + nlen + xlen + clen;
    return PDNN_SUCCESS;
}

/* One central directory entry's name, as the first pass sees it. */
typedef struct dir_name {
    const unsigned char *p;
    size_t n;
} dir_name;

static int dir_name_cmp(const void *a, const void *b)
{
    const dir_name *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* The index in want of the member named p[0..n) (with ".npy"), or -1. */
static int wanted(const npz_expect *want, int n_want, const unsigned char *p, size_t n)
{
    for (int k = 0; k < n_want; k++)
        if (strlen(want[k].name) == n - 4 && memcmp(want[k].name, p, n - 4) == 0)
            return k;
    return -1;
}

/* The first pass: the central directory walked without inflating anything,
 * every name checked (form, uniqueness, and against want when given) and
 * every declared size against what its wanted array may take. Names are
 * made unique by sorting (n log n: 60,000 members took 23 s pairwise). */
static pdnn_status walk_directory(const zread *z, size_t cd_off, size_t end, unsigned n, const npz_expect *want,
                                  int n_want, const char *what)
{
    dir_name *names = calloc(n ? n : 1, sizeof *names);
    unsigned char *seen = calloc(n_want > 0 ? (size_t)n_want : 1, 1);
    if (!names || !seen) {
        free(names);
        free(seen);
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, z->err, z->errlen, "%s: out of memory", z->name);
    }
    const dir_name *extra = NULL; /* the first member want lacks */
    pdnn_status st = PDNN_SUCCESS;
    size_t at = cd_off;
    for (unsigned i = 0; i < n && st == PDNN_SUCCESS; i++) {
        const unsigned char *c = z->b + at;
        if (at + CENTRAL_LEN > end) {
            st = corrupt(z, "the central directory holds fewer than the %u entries the end record counts", n);
            break;
        }
        if (get32(c) != SIG_CENTRAL) {
            st = corrupt(z, "central directory entry %u: bad signature", i);
            break;
        }
        size_t nlen = get16(c + 28), skip = CENTRAL_LEN + nlen + get16(c + 30) + get16(c + 32);
        if (at + skip > end) {
            st = corrupt(z, "central directory entry %u runs past the directory", i);
            break;
        }
        st = check_name(z, c + CENTRAL_LEN, nlen, (int)i);
        names[i] = (dir_name){c + CENTRAL_LEN, nlen};
        if (st == PDNN_SUCCESS && want) {
            int k = wanted(want, n_want, c + CENTRAL_LEN, nlen);
            uint32_t usize = get32(c + 24);
            if (k < 0) {
                if (!extra)
                    extra = &names[i];
            } else if (seen[k]++)
                st = corrupt(z, "two members are named %s.npy", want[k].name);
            else if ((uint64_t)usize > want[k].max_bytes + NPZ_HEADER_ALLOWANCE)
                st = corrupt(z, "member %s.npy declares %u bytes; its array takes at most %llu (and a header)",
                             want[k].name, usize, (unsigned long long)want[k].max_bytes);
        }
        at += skip;
    }
    if (st == PDNN_SUCCESS && at != end)
        st = corrupt(z, "%zu bytes in the central directory after its %u entries", end - at, n);
    for (int k = 0; st == PDNN_SUCCESS && want && k < n_want; k++)
        if (!seen[k])
            st = cli_set_err(PDNN_ERR_CORRUPT, z->err, z->errlen,
                             "%s: no array '%s' (%s has one: a checkpoint of another model or optimizer?)", z->name,
                             want[k].name, what);
    /* An unknown member after the missing ones: "no array X" says more
     * about a checkpoint of another optimizer than its first extra slot. */
    if (st == PDNN_SUCCESS && extra)
        st = cli_set_err(PDNN_ERR_CORRUPT, z->err, z->errlen, "%s: array '%.*s' is not in %s", z->name,
                         (int)extra->n - 4, (const char *)extra->p, what);
    if (st == PDNN_SUCCESS && !want && n > 1) {
        qsort(names, n, sizeof *names, dir_name_cmp);
        for (unsigned i = 1; i < n && st == PDNN_SUCCESS; i++)
            if (dir_name_cmp(&names[i - 1], &names[i]) == 0)
                st = corrupt(z, "two members are named %.*s", (int)names[i].n, (const char *)names[i].p);
    }
    free(seen);
    free(names);
    return st;
}

pdnn_status npz_parse_expect(const unsigned char *buf, size_t len, const char *name, const npz_expect *want,
                             int n_want, const char *what, npz_archive *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    zread z = {buf, len, name ? name : "archive", err, errlen};
    if (len >= 4 && get32(buf) != SIG_LOCAL && get32(buf) != SIG_END)
        return corrupt(&z, "not a .npz file (no ZIP signature at the start)");
    if (len < END_LEN)
        return corrupt(&z, "not a .npz file (%zu bytes, shorter than a ZIP end record): truncated?", len);
    /* The end record: the last signature whose comment reaches exactly the end. */
    size_t end = len - END_LEN + 1, lowest = len - END_LEN > 0xffff ? len - END_LEN - 0xffff : 0;
    int found = 0;
    while (end-- > lowest) {
        if (get32(buf + end) == SIG_END && end + END_LEN + get16(buf + end + 20) == len) {
            found = 1;
            break;
        }
    }
    if (!found)
        return corrupt(&z, "no ZIP end record: the file is truncated or not a ZIP archive");
    const unsigned char *e = buf + end;
    unsigned disk = get16(e + 4), cd_disk = get16(e + 6), n_disk = get16(e + 8), n = get16(e + 10);
    uint32_t cd_size = get32(e + 12), cd_off = get32(e + 16);
    if (n == 0xffff || cd_size == 0xffffffffu || cd_off == 0xffffffffu ||
        (end >= 20 && get32(buf + end - 20) == SIG_ZIP64_LOCATOR))
        return corrupt(&z, "a ZIP64 archive: polydnn reads .npz files under 4 GiB with fewer than 65535 members");
    if (disk != 0 || cd_disk != 0 || n_disk != n)
        return corrupt(&z, "a split (multi-disk) ZIP archive");
    if ((uint64_t)cd_off + cd_size != end)
        return corrupt(&z, "the central directory (%u bytes at %u) does not end at the end record (at %zu): "
                           "truncated or corrupt",
                       cd_size, cd_off, end);
    pdnn_status st = walk_directory(&z, cd_off, end, n, want, n_want, what ? what : "the archive");
    if (st != PDNN_SUCCESS)
        return st;
    out->members = n ? calloc(n, sizeof *out->members) : NULL;
    if (n && !out->members)
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: out of memory", z.name);
    /* Then the members one by one, each inflated within its checked size. */
    size_t at = cd_off;
    for (unsigned i = 0; i < n && st == PDNN_SUCCESS; i++) {
        st = read_member(&z, buf + at, at, (int)i, &out->members[i], &at);
        if (st == PDNN_SUCCESS)
            out->count = (int)i + 1;
    }
    if (st != PDNN_SUCCESS)
        npz_free(out);
    return st;
}

pdnn_status npz_parse(const unsigned char *buf, size_t len, const char *name, npz_archive *out, char *err,
                      size_t errlen)
{
    return npz_parse_expect(buf, len, name, NULL, 0, NULL, out, err, errlen);
}

pdnn_status npz_read_expect(const char *path, const npz_expect *want, int n_want, const char *what,
                            npz_archive *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!path)
        return cli_set_err(PDNN_ERR_INVALID_ARGUMENT, err, errlen, "npz_read: no path");
    /* Opened without blocking: a FIFO named as the checkpoint is refused,
     * not waited on for a writer. */
    FILE *f = NULL;
    struct stat sb;
    char why[128] = "";
    errno = 0;
    int opened = pdnn__file_open_read(path, &f, &sb, why, sizeof why);
    if (opened < 0)
        return cli_set_err(PDNN_ERR_IO, err, errlen, "%s: %s", path, why);
    if (opened == 0)
        return cli_set_err(PDNN_ERR_IO, err, errlen, "%s: %s", path, errno ? strerror(errno) : "cannot open");
    if ((uint64_t)sb.st_size > NPZ_MAX_FILE_BYTES) {
        fclose(f);
        return cli_set_err(PDNN_ERR_CORRUPT, err, errlen, "%s: %lld bytes: polydnn reads .npz files under 4 GiB", path,
                    (long long)sb.st_size);
    }
    size_t len = (size_t)sb.st_size;
    unsigned char *buf = malloc(len ? len : 1);
    if (!buf) {
        fclose(f);
        return cli_set_err(PDNN_ERR_OUT_OF_MEMORY, err, errlen, "%s: out of memory for %zu bytes", path, len);
    }
    size_t got = fread(buf, 1, len, f);
    int bad = ferror(f);
    fclose(f);
    pdnn_status st;
    if (bad)
        st = cli_set_err(PDNN_ERR_IO, err, errlen, "%s: read error: %s", path, strerror(errno));
    else
        st = npz_parse_expect(buf, got, path, want, n_want, what, out, err, errlen);
    free(buf);
    return st;
}

pdnn_status npz_read(const char *path, npz_archive *out, char *err, size_t errlen)
{
    return npz_read_expect(path, NULL, 0, NULL, out, err, errlen);
}
