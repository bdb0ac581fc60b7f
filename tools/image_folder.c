/* Scanning a torchvision ImageFolder tree (image_folder.h). */
#define _GNU_SOURCE /* strdup, sched_getaffinity */
#include "image_folder.h"
#include "image.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

typedef struct strlist {
    char **v;
    int64_t n, cap;
} strlist;

static int push(strlist *l, char *s)
{
    if (!s)
        return -1;
    if (l->n == l->cap) {
        const int64_t cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) {
            free(s);
            return -1;
        }
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = s;
    return 0;
}

static void strlist_free(strlist *l)
{
    for (int64_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int by_bytes(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *join(const char *dir, const char *name)
{
    const size_t a = strlen(dir), b = strlen(name);
    char *s = malloc(a + b + 2);
    if (s) {
        memcpy(s, dir, a);
        s[a] = '/';
        memcpy(s + a + 1, name, b + 1);
    }
    return s;
}

static int is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (strcasecmp(dot, ".png") == 0 || strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0);
}

/* The entries of dir that are folders (want_dirs) or image files, sorted.
 * 0, or -1 with err. */
static int list(const char *dir, int want_dirs, strlist *out, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    errno = 0;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.' || (!want_dirs && !is_image_name(e->d_name)))
            continue;
        char *path = join(dir, e->d_name);
        struct stat st;
        if (!path) {
            rc = -1;
            snprintf(err, errlen, "%s: out of host memory listing it", dir);
        } else if (stat(path, &st) != 0 || (want_dirs && !S_ISDIR(st.st_mode))) {
            free(path); /* a dangling link, or a file beside the class folders */
        } else {
            if (want_dirs) { /* a class is kept by its name */
                free(path);
                path = strdup(e->d_name);
            }
            if (push(out, path)) {
                rc = -1;
                snprintf(err, errlen, "%s: out of host memory listing it", dir);
            }
        }
        errno = 0;
    }
    if (!rc && errno) {
        snprintf(err, errlen, "%s: reading the folder: %s", dir, strerror(errno));
        rc = -1;
    }
    closedir(d);
    if (!rc && out->n > 1)
        qsort(out->v, (size_t)out->n, sizeof *out->v, by_bytes);
    return rc;
}

void image_folder_free(image_folder *f)
{
    for (int i = 0; i < f->nclass; i++)
        free(f->classes[i]);
    for (int64_t i = 0; i < f->n; i++)
        free(f->paths[i]);
    free(f->classes);
    free(f->paths);
    free(f->labels);
    memset(f, 0, sizeof *f);
}

int image_folder_scan(const char *dir, const image_folder *as, image_folder *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a folder (expected one subfolder of images per class)", dir);
        return -1;
    }
    strlist cls = {0}, files = {0};
    int64_t *start = NULL;
    int rc = list(dir, 1, &cls, err, errlen);
    if (!rc && cls.n == 0) {
        snprintf(err, errlen, "%s has no class folders (expected %s/<class>/<image>.png|jpg)", dir, dir);
        rc = -1;
    }
    if (!rc && cls.n > INT32_MAX) {
        snprintf(err, errlen, "%s has too many class folders (%lld)", dir, (long long)cls.n);
        rc = -1;
    }
    if (!rc && !(start = malloc(sizeof *start * (size_t)(cls.n + 1)))) {
        snprintf(err, errlen, "%s: out of host memory listing it", dir);
        rc = -1;
    }
    for (int64_t k = 0; !rc && k < cls.n; k++) {
        char *sub = join(dir, cls.v[k]);
        start[k] = files.n;
        rc = sub ? list(sub, 0, &files, err, errlen) : -1;
        if (!sub)
            snprintf(err, errlen, "%s: out of host memory listing it", dir);
        free(sub);
    }
    if (!rc && files.n == 0) {
        snprintf(err, errlen, "%s has no images (.png, .jpg or .jpeg files in its class folders)", dir);
        rc = -1;
    }
    if (!rc) {
        start[cls.n] = files.n;
        f->labels = malloc(sizeof *f->labels * (size_t)files.n);
        if (!f->labels) {
            snprintf(err, errlen, "%s: out of host memory listing it", dir);
            rc = -1;
        }
    }
    for (int64_t k = 0; !rc && k < cls.n; k++) {
        int32_t label = (int32_t)k;
        if (as) {
            label = -1;
            for (int j = 0; j < as->nclass && label < 0; j++)
                if (strcmp(as->classes[j], cls.v[k]) == 0)
                    label = j;
            if (label < 0 && start[k + 1] > start[k]) {
                snprintf(err, errlen, "%s/%s: no training class of that name (the training folder has %d classes)",
                         dir, cls.v[k], as->nclass);
                rc = -1;
            }
        }
        for (int64_t i = start[k]; i < start[k + 1]; i++)
            f->labels[i] = label;
    }
    free(start);
    if (rc) {
        strlist_free(&cls);
        strlist_free(&files);
        image_folder_free(f);
        return -1;
    }
    f->nclass = (int)cls.n, f->classes = cls.v;
    f->n = files.n, f->paths = files.v;
    return 0;
}

typedef struct decode_job {
    const image_folder *f;
    const int64_t *order;
    int64_t n;
    const image_prep *p;
    size_t per;
    float *x;
    int32_t *y;
    char **errs;
    atomic_llong next, failed;
} decode_job;

static void *decode_worker(void *arg)
{
    decode_job *j = arg;
    char err[768];
    /* Images are claimed one at a time: their costs differ by their sizes. */
    for (int64_t i; (i = (int64_t)atomic_fetch_add(&j->next, 1)) < j->n;) {
        const int64_t k = j->order[i];
        image img;
        float *out = j->x + (size_t)i * j->per;
        j->y[i] = j->f->labels[k];
        j->errs[i] = NULL;
        if (image_read(j->f->paths[k], &img, err, sizeof err) ||
            image_prepare(&img, j->p, j->f->paths[k], out, err, sizeof err)) {
            memset(out, 0, j->per * sizeof *out);
            j->y[i] = -1;
            j->errs[i] = strdup(err); /* NULL if even that fails: y[i] < 0 still marks it */
            atomic_fetch_add(&j->failed, 1);
        }
        image_free(&img);
    }
    return NULL;
}

int64_t image_folder_decode(const image_folder *f, const int64_t *order, int64_t n, const image_prep *p,
                            int threads, float *x, int32_t *y, char **errs)
{
    decode_job j = {f, order, n, p, (size_t)p->channels * (size_t)p->height * (size_t)p->width, x, y, errs, 0, 0};
    cpu_set_t set;
    if (threads < 1) /* the process's CPU set, as the host backend sizes its pool */
        threads = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    if (threads < 1)
        threads = 1;
    if (threads > 64)
        threads = 64;
    pthread_t tid[64];
    int started = 0;
    for (; started < threads - 1; started++)
        if (pthread_create(&tid[started], NULL, decode_worker, &j) != 0)
            break;
    decode_worker(&j); /* this thread works too, so one thread always runs */
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    return (int64_t)atomic_load(&j.failed);
}
