/* The persistent tuning cache: what the autotuner measured, kept in one
 * text file per user so that a second process (or run) starts with tuned
 * kernels. Backend-neutral: entries are strings keyed by device, kernel and
 * shape; the backend that wrote a value is the one that parses it.
 *
 * File: $POLYDNN_CACHE_DIR/tuning-v1.tsv, else $XDG_CACHE_HOME/polydnn/,
 * else $HOME/.cache/polydnn/. Format: a header line "polydnn-tuning<TAB>1",
 * then one line per entry: device<TAB>kernel<TAB>shape<TAB>value<TAB>gflops.
 * A file that does not parse is ignored with one warning (never trusted in
 * part) and rewritten on the next store.
 *
 * Also the cache directory rule and POLYDNN_PROGRAM_CACHE, shared with the
 * OpenCL program cache (backends/opencl/cl_binary_cache.c). */
#include "tuning.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER "polydnn-tuning\t1"
#define FIELD_MAX 512

typedef struct entry {
    char *device, *kernel, *shape, *value;
    double gflops;
    int ours; /* stored by this process: wins when merging with the file */
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *entries;
static size_t n_entries, cap_entries;
static int loaded;

static void free_entry(entry *e)
{
    free(e->device);
    free(e->kernel);
    free(e->shape);
    free(e->value);
}

static void clear_list(entry **list, size_t *n, size_t *cap)
{
    for (size_t i = 0; i < *n; i++)
        free_entry(&(*list)[i]);
    free(*list);
    *list = NULL;
    *n = 0;
    *cap = 0;
}

const char *pdnn__cache_dir(char *buf, size_t len)
{
    const char *dir = getenv("POLYDNN_CACHE_DIR");
    int w;
    if (dir && *dir) {
        w = snprintf(buf, len, "%s", dir);
    } else if ((dir = getenv("XDG_CACHE_HOME")) && *dir) {
        w = snprintf(buf, len, "%s/polydnn", dir);
    } else if ((dir = getenv("HOME")) && *dir) {
        w = snprintf(buf, len, "%s/.cache/polydnn", dir);
    } else {
        return NULL;
    }
    return w > 0 && (size_t)w < len ? buf : NULL;
}

const char *pdnn__tuning_file(char *buf, size_t len)
{
    char dir[4096];
    if (!pdnn__cache_dir(dir, sizeof dir))
        return NULL;
    const int w = snprintf(buf, len, "%s/tuning-v1.tsv", dir);
    return w > 0 && (size_t)w < len ? buf : NULL;
}

int pdnn__make_parents(const char *path)
{
    char dir[4096];
    const size_t len = strlen(path);
    if (len >= sizeof dir)
        return -1;
    memcpy(dir, path, len + 1);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(dir, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int valid_field(const char *s)
{
    return *s && strlen(s) < FIELD_MAX && !strpbrk(s, "\t\n\r");
}

static int upsert(entry **list, size_t *n, size_t *cap, const char *device, const char *kernel, const char *shape,
                  const char *value, double gflops, int ours)
{
    for (size_t i = 0; i < *n; i++) {
        entry *e = &(*list)[i];
        if (strcmp(e->device, device) == 0 && strcmp(e->kernel, kernel) == 0 && strcmp(e->shape, shape) == 0) {
            char *v = strdup(value);
            if (!v)
                return -1;
            free(e->value);
            e->value = v;
            e->gflops = gflops;
            e->ours |= ours;
            return 0;
        }
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        entry *grown = realloc(*list, nc * sizeof *grown);
        if (!grown)
            return -1;
        *list = grown;
        *cap = nc;
    }
    entry e = {strdup(device), strdup(kernel), strdup(shape), strdup(value), gflops, ours};
    if (!e.device || !e.kernel || !e.shape || !e.value) {
        free_entry(&e);
        return -1;
    }
    (*list)[(*n)++] = e;
    return 0;
}

/* Reads the file into *list. Returns 0 if it is absent or whole, -1 (after
 * one warning, with *list empty) if it is corrupt or from another format. */
static int read_file(const char *path, entry **list, size_t *n, size_t *cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
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
        if (upsert(list, n, cap, fields[0], fields[1], fields[2], fields[3], g, 0) != 0) {
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
        clear_list(list, n, cap);
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
    if (pdnn__tuning_file(path, sizeof path))
        read_file(path, &entries, &n_entries, &cap_entries);
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
    for (size_t i = 0; i < n_entries && !found; i++) {
        const entry *e = &entries[i];
        const size_t vlen = strlen(e->value);
        if ((e->ours || !own_only) && strcmp(e->device, device) == 0 && strcmp(e->kernel, kernel) == 0 &&
            strcmp(e->shape, shape) == 0 && vlen < len) {
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

/* Writes list to path through a temporary file and a rename, so a reader
 * never sees half a file. */
static int write_file(const char *path, const entry *list, size_t n)
{
    if (pdnn__make_parents(path) != 0)
        return -1;
    char tmp[4160];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int bad = fprintf(f, "%s\n", HEADER) < 0;
    for (size_t i = 0; i < n && !bad; i++)
        bad = fprintf(f, "%s\t%s\t%s\t%s\t%.3f\n", list[i].device, list[i].kernel, list[i].shape, list[i].value,
                      list[i].gflops) < 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        remove(tmp);
        return -1;
    }
    return 0;
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
    if (upsert(&entries, &n_entries, &cap_entries, device, kernel, shape, value, gflops, 1) != 0)
        st = pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "tuning cache: out of host memory");
    char path[4096];
    if (st == PDNN_SUCCESS && pdnn__tuning_file(path, sizeof path)) {
        /* Merge with what other processes wrote since we read the file;
         * our own results win. */
        entry *merged = NULL;
        size_t n = 0, cap = 0;
        read_file(path, &merged, &n, &cap);
        int oom = 0;
        for (size_t i = 0; i < n_entries && !oom; i++)
            if (entries[i].ours)
                oom = upsert(&merged, &n, &cap, entries[i].device, entries[i].kernel, entries[i].shape,
                             entries[i].value, entries[i].gflops, 1) != 0;
        if (!oom) {
            clear_list(&entries, &n_entries, &cap_entries);
            entries = merged;
            n_entries = n;
            cap_entries = cap;
            if (write_file(path, entries, n_entries) != 0)
                pdnn__debug("tuning cache: could not write %s (%s); results kept in memory only", path,
                            strerror(errno));
        } else {
            clear_list(&merged, &n, &cap);
        }
    }
    pthread_mutex_unlock(&lock);
    return st;
}

void pdnn__tuning_forget(void)
{
    pthread_mutex_lock(&lock);
    clear_list(&entries, &n_entries, &cap_entries);
    loaded = 0;
    pthread_mutex_unlock(&lock);
}

pdnn_status pdnn__tuning_mode_from_env(pdnn_tuning_mode *mode)
{
    const char *env = getenv("POLYDNN_TUNING");
    if (!env)
        return PDNN_SUCCESS;
    pdnn_tuning_mode m;
    if (strcmp(env, "off") == 0)
        m = PDNN_TUNING_OFF;
    else if (strcmp(env, "cached") == 0)
        m = PDNN_TUNING_CACHED;
    else if (strcmp(env, "search") == 0)
        m = PDNN_TUNING_SEARCH;
    else if (strcmp(env, "force") == 0)
        m = PDNN_TUNING_FORCE;
    else
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "POLYDNN_TUNING='%s' is invalid: expected off, cached, search or force", env);
    if (m != *mode)
        pdnn__debug("POLYDNN_TUNING=%s overrides the context's tuning option", env);
    *mode = m;
    return PDNN_SUCCESS;
}

int pdnn__program_cache_setting(void)
{
    const char *env = getenv("POLYDNN_PROGRAM_CACHE");
    if (!env || strcmp(env, "on") == 0)
        return 1;
    return strcmp(env, "off") == 0 ? 0 : -1;
}

pdnn_status pdnn__program_cache_check_env(void)
{
    if (pdnn__program_cache_setting() < 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "POLYDNN_PROGRAM_CACHE='%s' is invalid: expected off or on",
                           getenv("POLYDNN_PROGRAM_CACHE"));
    return PDNN_SUCCESS;
}
