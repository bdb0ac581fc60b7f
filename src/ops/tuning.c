/* The persistent tuning cache: what the autotuner measured, kept in one
 * text file per user so that a second process (or run) starts with tuned
 * kernels. Backend-neutral: entries are strings keyed by device, kernel and
 * shape; the backend that wrote a value is the one that parses it.
 *
 * File: $POLYDNN_CACHE_DIR/tuning-v1.tsv, else $XDG_CACHE_HOME/polydnn/,
 * else $HOME/.cache/polydnn/. Format: a header line "polydnn-tuning<TAB>1",
 * then one line per entry: device<TAB>kernel<TAB>shape<TAB>value<TAB>gflops.
 * A file that does not parse is ignored with one warning (never trusted in
 * part) and rewritten on the next store; a path that is not a regular file
 * (a FIFO) is ignored with a warning and never replaced.
 *
 * A store merges and rewrites the file under an advisory lock on
 * tuning-v1.tsv.lock, so processes storing at the same time lose nothing;
 * it re-reads the file only when another process changed it since this
 * one last read or wrote it (device, inode, size, mtime). Writes go through
 * pdnn__file_replace (fileio.c): a failed write leaves the old file whole.
 *
 * Also the cache directory rule and POLYDNN_PROGRAM_CACHE, shared with the
 * OpenCL program cache (backends/opencl/cl_binary_cache.c). */
#include "ops/tuning.h"

#include "core/fileio.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER "polydnn-tuning\t1"
#define FIELD_MAX 512

typedef struct entry {
    char *key;          /* "device\0kernel\0shape\0", one allocation */
    const char *kernel; /* into key */
    const char *shape;  /* into key */
    char *value;
    double gflops;
    uint64_t hash;
    int ours;  /* stored by this process: wins when merging with the file */
    int saved; /* ours, and in the file as last written */
} entry;

/* The entries in file order, indexed by an open-addressing hash table of
 * (device, kernel, shape), so that loading n entries is O(n): a linear
 * search per line made 100k entries take 100 s. */
typedef struct table {
    entry *v;
    size_t n, cap;
    size_t *slot; /* index + 1 into v, 0 for empty; nslot is a power of 2 */
    size_t nslot;
} table;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static table mem;
static int loaded;
/* The cache file as this process last read or wrote it (seen_state 0: no
 * file), so that a store re-reads it only when another process changed
 * it. */
static struct stat seen;
static int seen_state;
static long file_reads;
/* Why the last write failed, for pdnn_tuning_cache_flush's message. */
static char write_error[768];

static void clear_table(table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].key);
        free(t->v[i].value);
    }
    free(t->v);
    free(t->slot);
    memset(t, 0, sizeof *t);
}

const char *pdnn__tuning_file(char *buf, size_t len)
{
    char dir[4096];
    if (!pdnn__cache_dir(dir, sizeof dir))
        return NULL;
    const int w = snprintf(buf, len, "%s/tuning-v1.tsv", dir);
    return w > 0 && (size_t)w < len ? buf : NULL;
}

static int valid_field(const char *s)
{
    return *s && strlen(s) < FIELD_MAX && !strpbrk(s, "\t\n\r");
}

static uint64_t hash_key(const char *device, const char *kernel, const char *shape)
{
    /* FNV-1a over the three fields; tabs cannot occur inside one, so
     * separating them with a tab makes the key unambiguous. */
    uint64_t h = 0xcbf29ce484222325ull;
    const char *parts[3] = {device, kernel, shape};
    for (int i = 0; i < 3; i++) {
        for (const unsigned char *c = (const unsigned char *)parts[i]; *c; c++)
            h = (h ^ *c) * 0x100000001b3ull;
        h = (h ^ '\t') * 0x100000001b3ull;
    }
    return h;
}

/* The index of (device, kernel, shape) in t, or -1. */
static ptrdiff_t find(const table *t, const char *device, const char *kernel, const char *shape, uint64_t h)
{
    if (!t->nslot)
        return -1;
    for (size_t i = (size_t)h & (t->nslot - 1);; i = (i + 1) & (t->nslot - 1)) {
        const size_t s = t->slot[i];
        if (!s)
            return -1;
        const entry *e = &t->v[s - 1];
        if (e->hash == h && strcmp(e->key, device) == 0 && strcmp(e->kernel, kernel) == 0 &&
            strcmp(e->shape, shape) == 0)
            return (ptrdiff_t)(s - 1);
    }
}

static void index_entry(size_t *slot, size_t nslot, const entry *e, size_t idx)
{
    size_t i = (size_t)e->hash & (nslot - 1);
    while (slot[i])
        i = (i + 1) & (nslot - 1);
    slot[i] = idx + 1;
}

static int upsert(table *t, const char *device, const char *kernel, const char *shape, const char *value,
                  double gflops, int ours)
{
    const uint64_t h = hash_key(device, kernel, shape);
    const ptrdiff_t at = find(t, device, kernel, shape, h);
    if (at >= 0) {
        entry *e = &t->v[at];
        char *v = strdup(value);
        if (!v)
            return -1;
        free(e->value);
        e->value = v;
        e->gflops = gflops;
        e->ours |= ours;
        e->saved = e->saved && !ours;
        return 0;
    }
    if (t->n == t->cap) {
        const size_t nc = t->cap ? t->cap * 2 : 16;
        entry *grown = realloc(t->v, nc * sizeof *grown);
        if (!grown)
            return -1;
        t->v = grown;
        t->cap = nc;
    }
    if (2 * (t->n + 1) > t->nslot) { /* at most half full */
        const size_t ns = t->nslot ? t->nslot * 2 : 32;
        size_t *slot = calloc(ns, sizeof *slot);
        if (!slot)
            return -1;
        for (size_t i = 0; i < t->n; i++)
            index_entry(slot, ns, &t->v[i], i);
        free(t->slot);
        t->slot = slot;
        t->nslot = ns;
    }
    const size_t ld = strlen(device) + 1, lk = strlen(kernel) + 1, ls = strlen(shape) + 1;
    entry e = {.key = malloc(ld + lk + ls), .value = strdup(value), .gflops = gflops, .hash = h, .ours = ours};
    if (!e.key || !e.value) {
        free(e.key);
        free(e.value);
        return -1;
    }
    memcpy(e.key, device, ld);
    memcpy(e.key + ld, kernel, lk);
    memcpy(e.key + ld + lk, shape, ls);
    e.kernel = e.key + ld;
    e.shape = e.key + ld + lk;
    t->v[t->n] = e;
    index_entry(t->slot, t->nslot, &t->v[t->n], t->n);
    t->n++;
    return 0;
}

/* Reads the file into t, and what it read into *sb / *state (0: there is
 * no file). Returns 0 if it is absent or whole, -1 (after one warning,
 * with t empty) if it is corrupt, from another format, or not a regular
 * file (a FIFO would block a plain open forever). */
static int read_file(const char *path, table *t, struct stat *sb, int *state)
{
    FILE *f = NULL;
    char why_buf[128];
    const int opened = pdnn__file_open_read(path, &f, sb, why_buf, sizeof why_buf);
    *state = opened != 0;
    if (opened < 0) {
        fprintf(stderr, "polydnn: warning: ignoring the tuning cache %s: %s; results stay in memory\n", path,
                why_buf);
        return -1;
    }
    if (!opened)
        return 0;
    file_reads++;
    char line[4 * FIELD_MAX + 64];
    int lineno = 0, bad = 0;
    const char *why = NULL;
    while (!bad && fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n') {
            why = "a line is too long or unterminated";
            bad = 1;
            break;
        }
        line[len - 1] = '\0';
        if (lineno == 1) {
            if (strcmp(line, HEADER) != 0) {
                why = "it does not start with the polydnn-tuning format 1 header";
                bad = 1;
            }
            continue;
        }
        char *fields[5];
        int nf = 0;
        char *save = NULL;
        for (char *tok = strtok_r(line, "\t", &save); tok && nf < 6; tok = strtok_r(NULL, "\t", &save))
            if (nf < 5)
                fields[nf++] = tok;
            else
                nf++;
        char *end = NULL;
        double g = nf == 5 ? strtod(fields[4], &end) : 0.0;
        if (nf != 5 || !end || *end || !isfinite(g) || g < 0.0) {
            why = "an entry does not have 5 tab-separated fields with a GFLOP/s number last";
            bad = 1;
            break;
        }
        if (upsert(t, fields[0], fields[1], fields[2], fields[3], g, 0) != 0) {
            why = "out of host memory";
            bad = 1;
        }
    }
    if (!bad && ferror(f)) {
        why = "reading it failed";
        bad = 1;
    }
    fclose(f);
    if (bad) {
        clear_table(t);
        fprintf(stderr, "polydnn: warning: ignoring the tuning cache %s: %s (line %d); it will be rewritten\n",
                path, why, lineno);
        return -1;
    }
    return 0;
}

static void ensure_loaded(void)
{
    if (loaded)
        return;
    loaded = 1;
    char path[4096];
    seen_state = 0;
    if (pdnn__tuning_file(path, sizeof path))
        read_file(path, &mem, &seen, &seen_state);
}

pdnn_status pdnn_tuning_cache_file(char *buf, size_t len)
{
    if (!buf || len == 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_tuning_cache_file: buf is NULL or empty");
    char path[4096];
    if (!pdnn__tuning_file(path, sizeof path))
        return pdnn__error(PDNN_ERR_NOT_FOUND, "pdnn_tuning_cache_file: no cache directory (POLYDNN_CACHE_DIR, "
                                               "XDG_CACHE_HOME and HOME are unset, or the path is too long)");
    if (strlen(path) >= len)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_tuning_cache_file: the path needs %zu bytes, buf has %zu",
                           strlen(path) + 1, len);
    memcpy(buf, path, strlen(path) + 1);
    return PDNN_SUCCESS;
}

static int lookup(int own_only, const char *device, const char *kernel, const char *shape, char *value, size_t len)
{
    int found = 0;
    pthread_mutex_lock(&lock);
    ensure_loaded();
    const ptrdiff_t at = find(&mem, device, kernel, shape, hash_key(device, kernel, shape));
    if (at >= 0) {
        const entry *e = &mem.v[at];
        const size_t vlen = strlen(e->value);
        if ((e->ours || !own_only) && vlen < len) {
            memcpy(value, e->value, vlen + 1);
            found = 1;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

int pdnn__tuning_lookup(const char *device, const char *kernel, const char *shape, char *value, size_t len)
{
    return lookup(0, device, kernel, shape, value, len);
}

int pdnn__tuning_lookup_for(pdnn_tuning_mode mode, const char *device, const char *kernel, const char *shape,
                            char *value, size_t len)
{
    if (mode == PDNN_TUNING_OFF)
        return 0;
    return lookup(mode == PDNN_TUNING_FORCE, device, kernel, shape, value, len);
}

static int write_entries(FILE *f, void *arg)
{
    const table *t = arg;
    if (fprintf(f, "%s\n", HEADER) < 0)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        const entry *e = &t->v[i];
        if (fprintf(f, "%s\t%s\t%s\t%s\t%.3f\n", e->key, e->kernel, e->shape, e->value, e->gflops) < 0)
            return -1;
    }
    return 0;
}

static size_t count_unsaved(void)
{
    size_t n = 0;
    for (size_t i = 0; i < mem.n; i++)
        n += mem.v[i].ours && !mem.v[i].saved;
    return n;
}

/* Writes mem to path, merged first with what other processes wrote since
 * this one last read or wrote the file (our own results win). The whole
 * read-merge-rename holds the lock file, so that processes storing at the
 * same time each merge the other's results instead of overwriting them.
 * Caller holds `lock`. 0, or -1 with write_error set. */
static int save(const char *path)
{
    if (pdnn__make_parents(path) != 0) {
        snprintf(write_error, sizeof write_error, "creating the directory of %s failed: %s", path,
                 strerror(errno));
        return -1;
    }
    const int lock_fd = pdnn__file_lock(path);
    if (lock_fd < 0)
        pdnn__debug("tuning cache: could not lock %s.lock (%s); writing without it", path, strerror(errno));
    struct stat now;
    const int exists = stat(path, &now) == 0;
    if (exists != seen_state || (exists && !pdnn__file_same(&now, &seen))) {
        table merged;
        memset(&merged, 0, sizeof merged);
        read_file(path, &merged, &seen, &seen_state);
        int oom = 0;
        for (size_t i = 0; i < mem.n && !oom; i++) {
            const entry *e = &mem.v[i];
            if (e->ours)
                oom = upsert(&merged, e->key, e->kernel, e->shape, e->value, e->gflops, 1) != 0;
        }
        if (oom) {
            clear_table(&merged);
            pdnn__file_unlock(lock_fd);
            seen_state = -1; /* not what mem holds: read it again next time */
            snprintf(write_error, sizeof write_error, "out of host memory merging %s", path);
            return -1;
        }
        clear_table(&mem);
        mem = merged;
    }
    struct stat written;
    const int rc = pdnn__file_replace(path, write_entries, &mem, &written, write_error, sizeof write_error);
    if (rc == 0) {
        seen = written;
        seen_state = 1;
        for (size_t i = 0; i < mem.n; i++)
            mem.v[i].saved = mem.v[i].ours;
    }
    pdnn__file_unlock(lock_fd);
    return rc;
}

pdnn_status pdnn__tuning_store(const char *device, const char *kernel, const char *shape, const char *value,
                               double gflops)
{
    if (!valid_field(device) || !valid_field(kernel) || !valid_field(shape) || !valid_field(value) ||
        !isfinite(gflops) || gflops < 0.0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "tuning cache: an entry must be non-empty text without tabs or newlines (kernel '%s')",
                           kernel ? kernel : "(null)");
    pthread_mutex_lock(&lock);
    ensure_loaded();
    pdnn_status st = PDNN_SUCCESS;
    char path[4096];
    if (upsert(&mem, device, kernel, shape, value, gflops, 1) != 0)
        st = pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "tuning cache: out of host memory");
    else if (!pdnn__tuning_file(path, sizeof path))
        snprintf(write_error, sizeof write_error, "there is no cache directory (POLYDNN_CACHE_DIR, "
                                                  "XDG_CACHE_HOME and HOME are unset, or the path is too long)");
    else if (save(path) != 0)
        pdnn__debug("tuning cache: %s; results kept in memory only", write_error);
    pthread_mutex_unlock(&lock);
    return st;
}

pdnn_status pdnn_tuning_cache_flush(size_t *unsaved)
{
    pthread_mutex_lock(&lock);
    size_t n = count_unsaved();
    char path[4096];
    if (n && pdnn__tuning_file(path, sizeof path) && save(path) == 0)
        n = 0;
    pdnn_status st = PDNN_SUCCESS;
    if (n)
        st = pdnn__error(PDNN_ERR_IO, "tuning cache: %zu result%s of this process could not be written: %s", n,
                         n == 1 ? "" : "s", write_error);
    pthread_mutex_unlock(&lock);
    if (unsaved)
        *unsaved = n;
    return st;
}

long pdnn__tuning_file_reads(void)
{
    pthread_mutex_lock(&lock);
    const long n = file_reads;
    pthread_mutex_unlock(&lock);
    return n;
}

void pdnn__tuning_forget(void)
{
    pthread_mutex_lock(&lock);
    clear_table(&mem);
    loaded = 0;
    seen_state = 0;
    pthread_mutex_unlock(&lock);
}

