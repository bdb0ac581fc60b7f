/* The tuning cache file (round trip, corrupt and stale files, merging with
 * other processes) and the tuner end to end on OpenCL: search stores a
 * checked result, cached mode uses it, off ignores it, a bad entry falls
 * back to the default, and every run still matches the host. */
#include "backend.h"
#include "core/context.h"
#include "core/fileio.h"
#include "helpers.h"
#include "ops/dispatch_internal.h"
#include "ops/tuning.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[64];

static void fresh_dir(void)
{
    strcpy(dir, "/tmp/pdnn-tuning-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    setenv("POLYDNN_CACHE_DIR", dir, 1);
    pdnn__tuning_forget();
}

static void cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void put(const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    pdnn__tuning_forget();
}

Test(tuning_cache, stores_and_reads_back_across_processes)
{
    fresh_dir();
    char v[64];
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "shape 1", v, sizeof v), 0);
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "shape 1", "tq=8 kb=1", 12.5), PDNN_SUCCESS);
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "shape 2", "tq=4 kb=2", 3), PDNN_SUCCESS);
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "shape 1", "tq=12 kb=1", 20), PDNN_SUCCESS); /* replaces */
    pdnn__tuning_forget(); /* as a new process would: read the file */
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "shape 1", v, sizeof v), 1);
    cr_assert_str_eq(v, "tq=12 kb=1");
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "shape 2", v, sizeof v), 1);
    cr_assert_str_eq(v, "tq=4 kb=2");
    cr_assert_eq(pdnn__tuning_lookup("other dev", "kern", "shape 2", v, sizeof v), 0);
    char path[256];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    const char *text = slurp(path);
    cr_assert_not_null(text);
    cr_assert_str_eq(text, "polydnn-tuning\t1\ndev\tkern\tshape 1\ttq=12 kb=1\t20.000\ndev\tkern\tshape 2\ttq=4 kb=2\t3.000\n");
    cleanup();
}

Test(tuning_cache, corrupt_or_stale_files_are_ignored_with_a_warning, .init = cr_redirect_stderr)
{
    fresh_dir();
    const char *bad[] = {
        "garbage\n",                                       /* no header */
        "polydnn-tuning\t2\ndev\tkern\tshape\tv\t1.0\n",   /* another format */
        "polydnn-tuning\t1\ndev\tkern\tshape\tv\n",        /* 4 fields */
        "polydnn-tuning\t1\ndev\tkern\tshape\tv\tfast\n",  /* not a number */
        "polydnn-tuning\t1\ndev\tkern\tshape\tv\t1.0",     /* cut off */
        "polydnn-tuning\t1\ndev\tkern\tshape\tv\t-3\n",    /* negative */
    };
    char v[64];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put(bad[i]);
        cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "shape", v, sizeof v), 0, "file %zu was trusted", i);
    }
    fflush(stderr);
    /* One warning per file read, naming the file and the reason. */
    char want[256];
    snprintf(want, sizeof want, "polydnn: warning: ignoring the tuning cache %s/tuning-v1.tsv: it does not start", dir);
    FILE *err = cr_get_redirected_stderr();
    char line[512];
    int warnings = 0, named = 0;
    while (fgets(line, sizeof line, err)) {
        warnings += strstr(line, "ignoring the tuning cache") != NULL;
        named += strncmp(line, want, strlen(want)) == 0;
    }
    cr_assert_eq(warnings, 6);
    cr_assert_eq(named, 2);
    /* A store rewrites the broken file whole. */
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "shape", "good", 1.0), PDNN_SUCCESS);
    char path[256];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    cr_assert_str_eq(slurp(path), "polydnn-tuning\t1\ndev\tkern\tshape\tgood\t1.000\n");
    cleanup();
}

Test(tuning_cache, merges_what_other_processes_wrote)
{
    fresh_dir();
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "a", "1", 1.0), PDNN_SUCCESS);
    char path[256];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    FILE *f = fopen(path, "a"); /* another process's result */
    fputs("dev\tkern\tb\t2\t2.0\n", f);
    fclose(f);
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "c", "3", 3.0), PDNN_SUCCESS);
    pdnn__tuning_forget();
    char v[16];
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "a", v, sizeof v), 1);
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "b", v, sizeof v), 1);
    cr_assert_str_eq(v, "2");
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "c", v, sizeof v), 1);
    cleanup();
}

Test(tuning_cache, rejects_entries_that_would_break_the_format)
{
    fresh_dir();
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "sha\tpe", "v", 1.0), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "shape", "v\n", 1.0), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn__tuning_store("", "kern", "shape", "v", 1.0), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "shape", "v", NAN), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "tuning cache") != NULL, "%s", pdnn_last_error());
    cleanup();
}

Test(tuning_cache, unwritable_directory_keeps_results_in_memory)
{
    setenv("POLYDNN_CACHE_DIR", "/proc/polydnn-cannot-be-here", 1);
    pdnn__tuning_forget();
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "s", "v", 1.0), PDNN_SUCCESS);
    char v[8];
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "s", v, sizeof v), 1);
}

/* A cache file of n entries "dev / kern / shape i / v i". */
static void put_entries(const char *path, int n)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("polydnn-tuning\t1\n", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "dev\tkern\tshape %d\tv %d\t%d.000\n", i, i, i % 1000);
    cr_assert_eq(fclose(f), 0);
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    int n = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        n += ch == '\n';
    fclose(f);
    return n;
}

/* The names in dir other than the cache file and its lock (temporary
 * files left behind), written into what. */
static int stray_files(char *what, size_t len)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    what[0] = '\0';
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            strcmp(e->d_name, "tuning-v1.tsv") != 0 && strcmp(e->d_name, "tuning-v1.tsv.lock") != 0) {
            const size_t used = strlen(what);
            snprintf(what + used, len - used, " %s", e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

/* Four processes (as four `polydnn tune` runs) store distinct results into
 * one 10k-entry cache at the same time: the lock around read-merge-rename
 * makes each merge the others' results. Without it, a process renamed its
 * file over one written after it had read: 25 of 36 results were lost. */
Test(tuning_cache, concurrent_stores_from_four_processes_lose_nothing, .timeout = 300)
{
    fresh_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    put_entries(path, 10000);
    pdnn__tuning_forget();
    enum { PROCS = 4, EACH = 9 };
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        cr_assert_geq(pids[p], 0);
        if (pids[p] == 0) {
            int ok = 1;
            for (int j = 0; j < EACH; j++) {
                char shape[64];
                snprintf(shape, sizeof shape, "process %d shape %d", p, j);
                ok &= pdnn__tuning_store("dev", "kern", shape, "tuned", 1.0 + j) == PDNN_SUCCESS;
            }
            size_t unsaved = 99;
            ok &= pdnn_tuning_cache_flush(&unsaved) == PDNN_SUCCESS && unsaved == 0;
            _exit(ok ? 0 : 1);
        }
    }
    for (int p = 0; p < PROCS; p++) {
        int status = 0;
        cr_assert_eq(waitpid(pids[p], &status, 0), pids[p]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d failed (status %#x)", p, status);
    }
    pdnn__tuning_forget();
    char v[64];
    int lost = 0;
    for (int p = 0; p < PROCS; p++)
        for (int j = 0; j < EACH; j++) {
            char shape[64];
            snprintf(shape, sizeof shape, "process %d shape %d", p, j);
            lost += !pdnn__tuning_lookup("dev", "kern", shape, v, sizeof v);
        }
    cr_assert_eq(lost, 0, "%d of %d results lost", lost, PROCS * EACH);
    for (int i = 0; i < 10000; i += 997) {
        char shape[64], want[64];
        snprintf(shape, sizeof shape, "shape %d", i);
        snprintf(want, sizeof want, "v %d", i);
        cr_assert_eq(pdnn__tuning_lookup("dev", "kern", shape, v, sizeof v), 1, "%s lost", shape);
        cr_assert_str_eq(v, want);
    }
    cr_assert_eq(count_lines(path), 1 + 10000 + PROCS * EACH);
    char what[512];
    cr_assert_eq(stray_files(what, sizeof what), 0, "left behind:%s", what);
    cleanup();
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds of CPU time the first lookup takes to load a file of n entries
 * (CPU time, not wall: other processes on a loaded machine do not count). */
static double load_time(const char *path, int n)
{
    put_entries(path, n);
    pdnn__tuning_forget();
    char v[64], shape[64], want[64];
    snprintf(shape, sizeof shape, "shape %d", n - 1);
    snprintf(want, sizeof want, "v %d", n - 1);
    const double t0 = cpu_seconds();
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", shape, v, sizeof v), 1);
    const double t = cpu_seconds() - t0;
    cr_assert_str_eq(v, want);
    return t;
}

/* Loading is linear: 100k entries took 108 s when each line searched the
 * entries before it; now well under a second (about 0.05 s here). */
Test(tuning_cache, loading_100k_entries_takes_well_under_a_second, .timeout = 120)
{
    fresh_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    const double t10k = load_time(path, 10000), t100k = load_time(path, 100000);
    cr_log_info("tuning cache load (CPU time): 10k entries %.3f s, 100k entries %.3f s (ratio %.1f)", t10k, t100k,
                t10k > 0 ? t100k / t10k : 0.0);
    fprintf(stdout, "tuning cache load (CPU time): 10k entries %.3f s, 100k entries %.3f s\n", t10k, t100k);
    cr_assert_lt(t100k, 1.0, "loading 100k entries took %.2f s of CPU time", t100k);
    /* Every entry is found, the first and last included. */
    char v[64];
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "shape 0", v, sizeof v), 1);
    cr_assert_str_eq(v, "v 0");
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "shape 100000", v, sizeof v), 0);
    cleanup();
}

/* A store re-reads the file only when another process changed it since
 * this one last read or wrote it. */
Test(tuning_cache, a_store_reads_the_file_again_only_when_it_changed)
{
    fresh_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    put_entries(path, 100);
    pdnn__tuning_forget();
    const long r0 = pdnn__tuning_file_reads();
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "mine 0", "x", 1.0), PDNN_SUCCESS);
    cr_assert_eq(pdnn__tuning_file_reads() - r0, 1, "the first store loads the file once");
    for (int i = 1; i < 10; i++) {
        char shape[32];
        snprintf(shape, sizeof shape, "mine %d", i);
        cr_assert_eq(pdnn__tuning_store("dev", "kern", shape, "x", 1.0), PDNN_SUCCESS);
    }
    cr_assert_eq(pdnn__tuning_file_reads() - r0, 1, "stores re-read a file only this process wrote");
    FILE *f = fopen(path, "a"); /* another process's result */
    cr_assert_not_null(f);
    fputs("dev\tkern\ttheirs\ty\t2.0\n", f);
    fclose(f);
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "mine 10", "x", 1.0), PDNN_SUCCESS);
    cr_assert_eq(pdnn__tuning_file_reads() - r0, 2, "a changed file is merged");
    char v[16];
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "theirs", v, sizeof v), 1);
    cr_assert_eq(count_lines(path), 1 + 100 + 11 + 1);
    cleanup();
}

/* A FIFO at the cache path: reading it with a plain open waited for a
 * writer forever. Now it is refused with one warning, never replaced, and
 * the results stay in memory (and pdnn_tuning_cache_flush says so). */
Test(tuning_cache, a_fifo_at_the_cache_path_is_refused_without_blocking, .init = cr_redirect_stderr,
     .timeout = 60)
{
    fresh_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    cr_assert_eq(mkfifo(path, 0644), 0);
    alarm(30); /* the old code blocked here */
    char v[16];
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "s", v, sizeof v), 0);
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "s", "v", 1.0), PDNN_SUCCESS);
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "t", "w", 1.0), PDNN_SUCCESS);
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "s", v, sizeof v), 1);
    size_t unsaved = 0;
    cr_assert_eq(pdnn_tuning_cache_flush(&unsaved), PDNN_ERR_IO);
    cr_assert_eq(unsaved, 2);
    cr_assert(strstr(pdnn_last_error(), "a FIFO") && strstr(pdnn_last_error(), path), "%s", pdnn_last_error());
    alarm(0);
    struct stat sb;
    cr_assert_eq(lstat(path, &sb), 0);
    cr_assert(S_ISFIFO(sb.st_mode), "the FIFO was replaced");
    fflush(stderr);
    FILE *err = cr_get_redirected_stderr();
    char line[512], want[320];
    snprintf(want, sizeof want, "polydnn: warning: ignoring the tuning cache %s: it is a FIFO", path);
    int warnings = 0;
    while (fgets(line, sizeof line, err))
        warnings += strncmp(line, want, strlen(want)) == 0;
    cr_assert_eq(warnings, 1);
    cleanup();
}

/* The old temporary name (path.<pid>.tmp) was predictable: anything left
 * there (here a directory) made every store of this process fail. */
Test(tuning_cache, a_stale_file_at_a_predictable_temporary_name_does_not_stop_a_store)
{
    fresh_dir();
    char path[256], tmp[320];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    cr_assert_eq(mkdir(tmp, 0755), 0);
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "s", "v", 1.0), PDNN_SUCCESS);
    cr_assert_eq(pdnn_tuning_cache_flush(NULL), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn__tuning_forget();
    char v[16];
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "s", v, sizeof v), 1);
    cr_assert_eq(rmdir(tmp), 0);
    cleanup();
}

/* The real write path failing: a child process whose file size limit
 * (RLIMIT_FSIZE) is below the new file's size gets EFBIG from write(2), as
 * a full disk gives ENOSPC. The previous file stays whole and no temporary
 * file is left; with SIGXFSZ's default action the child is killed mid-write
 * instead, and the previous file is whole too. */
static int store_over_limit(int ignore_sigxfsz, off_t limit)
{
    if (ignore_sigxfsz)
        signal(SIGXFSZ, SIG_IGN);
    const struct rlimit no_core = {0, 0}, rl = {(rlim_t)limit, (rlim_t)limit};
    if (setrlimit(RLIMIT_CORE, &no_core) != 0 || setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 2;
    char big[480];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (int i = 0; i < 50; i++) {
        char shape[32];
        snprintf(shape, sizeof shape, "new %d", i);
        if (pdnn__tuning_store("dev", "kern", shape, big, 1.0) != PDNN_SUCCESS)
            return 3;
    }
    size_t unsaved = 0;
    if (pdnn_tuning_cache_flush(&unsaved) != PDNN_ERR_IO || unsaved != 50)
        return 4;
    return strstr(pdnn_last_error(), strerror(EFBIG)) ? 0 : 5;
}

Test(tuning_cache, a_failed_write_leaves_the_previous_file_whole, .timeout = 120)
{
    fresh_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    put_entries(path, 2000);
    pdnn__tuning_forget();
    char *before = NULL;
    size_t before_len = 0;
    {
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f);
        before = malloc(1 << 20);
        before_len = fread(before, 1, 1 << 20, f);
        fclose(f);
    }
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    for (int ignore = 1; ignore >= 0; ignore--) {
        const pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0)
            _exit(store_over_limit(ignore, sb.st_size + 100));
        int status = 0;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        if (ignore)
            cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's check %d failed (status %#x)",
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1, status);
        else
            cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ, "status %#x", status);
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f);
        char *after = malloc(1 << 20);
        const size_t after_len = fread(after, 1, 1 << 20, f);
        fclose(f);
        cr_assert(after_len == before_len && memcmp(after, before, before_len) == 0,
                  "the cache file changed (%zu bytes, was %zu)", after_len, before_len);
        free(after);
        char what[512];
        const int stray = stray_files(what, sizeof what);
        if (ignore) {
            cr_assert_eq(stray, 0, "left behind:%s", what);
        } else {
            /* A killed process cannot clean up: its temporary file stays,
             * named as one, and the cache file is untouched. */
            cr_assert_eq(stray, 1, "left behind:%s", what);
            cr_assert(strstr(what, " tuning-v1.tsv.tmp-") == what, "%s", what);
        }
    }
    free(before);
    pdnn__tuning_forget();
    char v[16];
    cr_assert_eq(pdnn__tuning_lookup("dev", "kern", "shape 1999", v, sizeof v), 1);
    cleanup();
}

/* The shared helper, directly: a writer that fails leaves the target as it
 * was and no temporary file; one that succeeds replaces it. */
static int write_text(FILE *f, void *arg) { return fputs(arg, f) < 0 ? -1 : 0; }
static int write_fails(FILE *f, void *arg)
{
    (void)arg;
    fputs("half", f);
    return -1;
}

Test(file_replace, replaces_only_complete_files)
{
    fresh_dir();
    char path[256], why[512];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    cr_assert_eq(pdnn__file_replace(path, write_text, "one\n", NULL, why, sizeof why), 0, "%s", why);
    cr_assert_eq(pdnn__file_replace(path, write_fails, NULL, NULL, why, sizeof why), -1);
    cr_assert(strstr(why, "writing") != NULL, "%s", why);
    cr_assert_str_eq(slurp(path), "one\n");
    struct stat sb;
    cr_assert_eq(pdnn__file_replace(path, write_text, "two\n", &sb, why, sizeof why), 0, "%s", why);
    cr_assert_str_eq(slurp(path), "two\n");
    struct stat now;
    cr_assert_eq(stat(path, &now), 0);
    cr_assert(pdnn__file_same(&sb, &now));
    /* A new file has the mode fopen would give; a replaced one keeps its own. */
    const mode_t mask = umask(0);
    umask(mask);
    cr_assert_eq(now.st_mode & 0777, 0666 & ~mask, "%o under umask %o", (unsigned)(now.st_mode & 0777),
                 (unsigned)mask);
    cr_assert_eq(chmod(path, 0600), 0);
    cr_assert_eq(pdnn__file_replace(path, write_text, "three\n", NULL, why, sizeof why), 0, "%s", why);
    cr_assert_eq(stat(path, &now), 0);
    cr_assert_eq(now.st_mode & 0777, 0600, "the replaced file lost its mode: %o", (unsigned)(now.st_mode & 0777));
    char what[512];
    cr_assert_eq(stray_files(what, sizeof what), 0, "left behind:%s", what);
    cleanup();
}

Test(tuning_mode, invalid_values_are_errors)
{
    pdnn_context *ctx = NULL;
    setenv("POLYDNN_TUNING", "sometimes", 1);
    cr_assert_eq(pdnn_context_create(NULL, &ctx), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "POLYDNN_TUNING='sometimes'") != NULL, "%s", pdnn_last_error());
    unsetenv("POLYDNN_TUNING");
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.tuning = (pdnn_tuning_mode)7;
    cr_assert_eq(pdnn_context_create(&o, &ctx), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "tuning is 7") != NULL, "%s", pdnn_last_error());
    cr_assert_null(ctx);
}

/* ---- the tuner on OpenCL ------------------------------------------------ */

#define N 1
#define C 24
#define H 10
#define W 9
#define K 48

/* Runs the test conv (an RxR filter, padded to keep the size for R = 3)
 * with algo and mode on the first OpenCL device and checks it against the
 * host; returns the configuration that ran. */
static const char *run_conv_algo(pdnn_tuning_mode mode, pdnn_conv_algo algo, int R)
{
    static pdnn_conv2d_tuning ran; /* the device's conv runs last */
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = 1;
    o.tuning = mode;
    pdnn_context *ctx = NULL;
    cr_assert_eq(pdnn_context_create(&o, &ctx), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_device *dev = NULL, *host = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    for (int i = 0; !dev; i++) {
        pdnn_device *d = NULL;
        if (i >= pdnn_device_count(ctx) || pdnn_device_get(ctx, i, &d) != PDNN_SUCCESS)
            break;
        pdnn_device_info info;
        pdnn_device_get_info(d, &info);
        if (strcmp(info.backend, "opencl") == 0)
            dev = d;
    }
    if (!dev) {
        pdnn_context_destroy(ctx);
        cr_skip_test("no OpenCL device");
    }
    static float x[N * C * H * W], w[K * C * 9], want[N * K * H * W];
    th_fill(x, N * C * H * W, 5);
    th_fill(w, K * C * R * R, 6);
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, N, C, H, W), wd = th_desc(PDNN_OIHW, K, C, R, R);
    pdnn_tensor_desc yd = th_desc(PDNN_NCHW, N, K, H, W);
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = R / 2;
    pdnn_device *on[2] = {host, dev};
    float *got = NULL;
    for (int i = 0; i < 2; i++) {
        p.algorithm = i ? algo : PDNN_CONV_ALGO_DIRECT;
        pdnn_tensor *tx = th_upload(on[i], &xd, x), *tw = th_upload(on[i], &wd, w), *ty = th_upload(on[i], &yd, NULL);
        cr_assert_eq(pdnn_conv2d_forward(&p, tx, tw, NULL, ty), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_conv2d_last_tuning(&ran), PDNN_SUCCESS);
        got = th_download(ty);
        if (!i)
            memcpy(want, got, sizeof want);
        pdnn_tensor_release(tx);
        pdnn_tensor_release(tw);
        pdnn_tensor_release(ty);
        if (!i)
            free(got);
    }
    /* 1e-4: Winograd's rounding at C = 24 stays well below it */
    for (int i = 0; i < N * K * H * W; i++)
        cr_assert(fabsf(got[i] - want[i]) <= 1e-4f, "element %d: %g, expected %g", i, (double)got[i], (double)want[i]);
    free(got);
    pdnn_context_destroy(ctx);
    return ran.config;
}

static const char *run_tiled(pdnn_tuning_mode mode) { return run_conv_algo(mode, PDNN_CONV_ALGO_TILED, 3); }
static const char *run_algo(pdnn_tuning_mode mode, pdnn_conv_algo algo) { return run_conv_algo(mode, algo, 3); }

/* The one entry the tuner wrote for kernel: its device field, value and
 * shape. */
static int read_kernel_entry(const char *kernel, char *device, char *shape, char *value)
{
    char path[256];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    const char *text = slurp(path);
    if (!text)
        return 0;
    const char *line = strchr(text, '\n');
    double g = 0;
    char kern[64];
    return line &&
           sscanf(line + 1, "%255[^\t]\t%63[^\t]\t%255[^\t]\t%63[^\t]\t%lf", device, kern, shape, value, &g) == 5 &&
           strcmp(kern, kernel) == 0 && g > 0;
}

static int read_entry(char *device, char *shape, char *value)
{
    return read_kernel_entry("conv2d_tiled", device, shape, value);
}

/* The first of three configurations that is neither a nor b: a search's
 * pick depends on timing, so a test that needs "some other configuration"
 * must avoid both it and the default. */
static const char *neither(const char *a, const char *b, const char *const three[3])
{
    for (int i = 0; i < 3; i++)
        if (strcmp(three[i], a) != 0 && strcmp(three[i], b) != 0)
            return three[i];
    return three[0]; /* unreachable: two names exclude at most two */
}

Test(tuner, search_stores_a_checked_result_that_cached_mode_uses)
{
    fresh_dir();
    char ran[48];
    snprintf(ran, sizeof ran, "%s", run_tiled(PDNN_TUNING_SEARCH));
    char device[256], shape[256], value[64];
    cr_assert(read_entry(device, shape, value), "search wrote no conv2d_tiled entry");
    cr_assert_str_eq(value, ran, "ran %s, stored %s", ran, value);
    cr_assert(strstr(shape, "NCHW/OIHW/NCHW n1 c24 h10 w9 k48 r3 s3") != NULL, "%s", shape);

    /* Off ignores the cache: the device class's default. */
    char off[48];
    snprintf(off, sizeof off, "%s", run_tiled(PDNN_TUNING_OFF));
    /* A configuration that is neither the search's pick nor the default,
     * written into the cache, is what runs next. (The search's pick
     * depends on timing, so the choice must avoid both.) */
    const char *other = neither(ran, off, (const char *[]){"tq=4 kb=2", "tq=12 kb=1", "tq=8 kb=2"});
    cr_assert_eq(pdnn__tuning_store(device, "conv2d_tiled", shape, other, 1.0), PDNN_SUCCESS);
    pdnn__tuning_forget();
    cr_assert_str_eq(run_tiled(PDNN_TUNING_CACHED), other);
    cr_assert_str_eq(run_tiled(PDNN_TUNING_OFF), off);
    /* A value this build does not offer falls back to the default, and
     * runs correctly. */
    cr_assert_eq(pdnn__tuning_store(device, "conv2d_tiled", shape, "tq=99 kb=3", 1.0), PDNN_SUCCESS);
    cr_assert_str_eq(run_tiled(PDNN_TUNING_CACHED), off);
    cleanup();
}

Test(tuning_cache, force_trusts_only_what_this_process_stored)
{
    fresh_dir();
    put("polydnn-tuning\t1\ndev\tkern\tshape\tfrom file\t1.0\n");
    char v[32];
    cr_assert_eq(pdnn__tuning_lookup_for(PDNN_TUNING_SEARCH, "dev", "kern", "shape", v, sizeof v), 1);
    cr_assert_str_eq(v, "from file");
    cr_assert_eq(pdnn__tuning_lookup_for(PDNN_TUNING_CACHED, "dev", "kern", "shape", v, sizeof v), 1);
    cr_assert_eq(pdnn__tuning_lookup_for(PDNN_TUNING_OFF, "dev", "kern", "shape", v, sizeof v), 0);
    cr_assert_eq(pdnn__tuning_lookup_for(PDNN_TUNING_FORCE, "dev", "kern", "shape", v, sizeof v), 0);
    cr_assert_eq(pdnn__tuning_store("dev", "kern", "shape", "ours", 2.0), PDNN_SUCCESS);
    cr_assert_eq(pdnn__tuning_lookup_for(PDNN_TUNING_FORCE, "dev", "kern", "shape", v, sizeof v), 1);
    cr_assert_str_eq(v, "ours");
    pdnn__tuning_forget(); /* a new process: the file's entry is not its own */
    cr_assert_eq(pdnn__tuning_lookup_for(PDNN_TUNING_FORCE, "dev", "kern", "shape", v, sizeof v), 0);
    cr_assert_eq(pdnn__tuning_lookup_for(PDNN_TUNING_SEARCH, "dev", "kern", "shape", v, sizeof v), 1);
    cr_assert_str_eq(v, "ours");
    cleanup();
}

Test(tuning_cache, public_path_of_the_file)
{
    fresh_dir();
    char path[256], want[256];
    snprintf(want, sizeof want, "%s/tuning-v1.tsv", dir);
    cr_assert_eq(pdnn_tuning_cache_file(path, sizeof path), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_str_eq(path, want);
    cr_assert_eq(pdnn_tuning_cache_file(path, 8), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "needs") != NULL, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_tuning_cache_file(NULL, 8), PDNN_ERR_INVALID_ARGUMENT);
    cleanup();
}

Test(tuning_mode, force_is_a_mode)
{
    pdnn_context *ctx = NULL;
    setenv("POLYDNN_TUNING", "force", 1);
    cr_assert_eq(pdnn_context_create(NULL, &ctx), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_context_destroy(ctx);
    unsetenv("POLYDNN_TUNING");
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.tuning = PDNN_TUNING_FORCE;
    ctx = NULL;
    cr_assert_eq(pdnn_context_create(&o, &ctx), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_context_destroy(ctx);
    cr_assert_eq(pdnn_conv2d_last_tuning(NULL), PDNN_ERR_INVALID_ARGUMENT);
}

/* What tuning did in run_tiled's OpenCL conv (its last call). */
static pdnn_conv2d_tuning tuning_of(pdnn_tuning_mode mode)
{
    char ran[48];
    snprintf(ran, sizeof ran, "%s", run_tiled(mode));
    pdnn_conv2d_tuning t;
    cr_assert_eq(pdnn_conv2d_last_tuning(&t), PDNN_SUCCESS);
    cr_assert(t.tunable, "the tiled conv reported nothing tunable");
    cr_assert_str_eq(t.config, ran);
    return t;
}

Test(tuner, reports_searches_and_force_searches_again)
{
    fresh_dir();
    pdnn_conv2d_tuning t = tuning_of(PDNN_TUNING_SEARCH);
    cr_assert(t.searched && !t.cached && t.search_seconds > 0.0, "searched %d cached %d %g s", t.searched, t.cached,
              t.search_seconds);
    char device[256], shape[256], value[64];
    cr_assert(read_entry(device, shape, value));
    cr_assert_str_eq(value, t.config);

    pdnn__tuning_forget(); /* as a new process */
    t = tuning_of(PDNN_TUNING_SEARCH);
    cr_assert(!t.searched && t.cached && t.search_seconds == 0.0, "searched %d cached %d", t.searched, t.cached);
    cr_assert_str_eq(t.config, value);

    /* FORCE ignores the file's entry once, replaces it, then uses its own. */
    const char *other = strcmp(value, "tq=4 kb=2") == 0 ? "tq=12 kb=1" : "tq=4 kb=2";
    cr_assert_eq(pdnn__tuning_store(device, "conv2d_tiled", shape, other, 1e6), PDNN_SUCCESS);
    pdnn__tuning_forget();
    t = tuning_of(PDNN_TUNING_FORCE);
    cr_assert(t.searched && !t.cached, "FORCE did not search: searched %d cached %d", t.searched, t.cached);
    char value2[64];
    cr_assert(read_entry(device, shape, value2));
    cr_assert_str_eq(value2, t.config);
    char path[256];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    const char *rate = strrchr(slurp(path), '\t');
    cr_assert(rate && strtod(rate + 1, NULL) < 1e6, "FORCE left the old entry's GFLOP/s: %s", rate ? rate : "?");
    t = tuning_of(PDNN_TUNING_FORCE);
    cr_assert(!t.searched && t.cached, "FORCE searched twice in one process");

    t = tuning_of(PDNN_TUNING_OFF);
    cr_assert(!t.searched && !t.cached, "OFF: searched %d cached %d", t.searched, t.cached);
    cleanup();
}

/* AUTO measures its algorithm once per device and shape with tuning on,
 * stores the choice, and later contexts run it from the cache; a value
 * this build does not know is ignored and the fixed order decides. */
Test(tuner, auto_measures_stores_and_reuses_its_algorithm)
{
    fresh_dir();
    pdnn_conv2d_tuning t;
    run_algo(PDNN_TUNING_SEARCH, PDNN_CONV_ALGO_AUTO);
    cr_assert_eq(pdnn_conv2d_last_tuning(&t), PDNN_SUCCESS);
    const pdnn_conv_algo chosen = pdnn_conv2d_last_algorithm();
    cr_assert(t.algo_measured && t.algo_searched && t.searched && t.tunable, "measured %d searched %d",
              t.algo_measured, t.algo_searched);
    cr_assert(chosen == PDNN_CONV_ALGO_WINOGRAD || chosen == PDNN_CONV_ALGO_TILED ||
                  chosen == PDNN_CONV_ALGO_IM2COL_GEMM || chosen == PDNN_CONV_ALGO_IMPLICIT_GEMM,
              "chose %s", pdnn_conv_algo_name(chosen));
    char path[256], line[64];
    snprintf(path, sizeof path, "%s/tuning-v1.tsv", dir);
    char *text = slurp(path);
    cr_assert_not_null(text);
    snprintf(line, sizeof line, "\t%s\t", pdnn_conv_algo_name(chosen));
    char *entry = strstr(text, "\tconv2d_algo\tconv2d_fwd f32 NCHW/OIHW/NCHW n1 c24 h10 w9 k48 r3 s3 ");
    cr_assert(entry && strstr(entry, line) != NULL, "no conv2d_algo entry naming %s in:\n%s",
              pdnn_conv_algo_name(chosen), text);

    pdnn__tuning_forget(); /* as a new process would */
    run_algo(PDNN_TUNING_CACHED, PDNN_CONV_ALGO_AUTO);
    cr_assert_eq(pdnn_conv2d_last_tuning(&t), PDNN_SUCCESS);
    cr_assert(t.algo_measured && !t.algo_searched && !t.searched && t.cached);
    cr_assert_eq(pdnn_conv2d_last_algorithm(), chosen);

    run_algo(PDNN_TUNING_OFF, PDNN_CONV_ALGO_AUTO);
    cr_assert_eq(pdnn_conv2d_last_tuning(&t), PDNN_SUCCESS);
    cr_assert(!t.algo_measured, "tuning off uses the fixed order");

    /* An algorithm name this build lacks: ignored, never trusted. */
    char *name = strstr(entry, line) + 1;
    const size_t len = strlen(pdnn_conv_algo_name(chosen));
    memset(name, 'x', len);
    put(text);
    run_algo(PDNN_TUNING_CACHED, PDNN_CONV_ALGO_AUTO);
    cr_assert_eq(pdnn_conv2d_last_tuning(&t), PDNN_SUCCESS);
    cr_assert(!t.algo_measured, "an unknown stored algorithm was used");
    cleanup();
}

static const char *run_gemm1x1(pdnn_tuning_mode mode) { return run_conv_algo(mode, PDNN_CONV_ALGO_GEMM_1X1, 1); }

/* The gemm_1x1 tuner, as the tiled one's above. */
Test(tuner, gemm_1x1_search_stores_a_checked_result_that_cached_mode_uses)
{
    fresh_dir();
    char ran[48];
    snprintf(ran, sizeof ran, "%s", run_gemm1x1(PDNN_TUNING_SEARCH));
    char device[256], shape[256], value[64];
    cr_assert(read_kernel_entry("conv2d_gemm_1x1", device, shape, value), "search wrote no conv2d_gemm_1x1 entry");
    cr_assert_str_eq(value, ran, "ran %s, stored %s", ran, value);
    cr_assert(strstr(shape, "NCHW/OIHW/NCHW n1 c24 h10 w9 k48") != NULL, "%s", shape);

    char off[48];
    snprintf(off, sizeof off, "%s", run_gemm1x1(PDNN_TUNING_OFF));
    const char *other = neither(ran, off, (const char *[]){"vw=8 kb=1 pt=12", "vw=16 kb=1 pt=4", "vw=4 kb=1 pt=8"});
    cr_assert_eq(pdnn__tuning_store(device, "conv2d_gemm_1x1", shape, other, 1.0), PDNN_SUCCESS);
    pdnn__tuning_forget();
    cr_assert_str_eq(run_gemm1x1(PDNN_TUNING_CACHED), other);
    cr_assert_str_eq(run_gemm1x1(PDNN_TUNING_OFF), off);
    cr_assert_eq(pdnn__tuning_store(device, "conv2d_gemm_1x1", shape, "vw=3 kb=1 pt=6", 1.0), PDNN_SUCCESS);
    cr_assert_str_eq(run_gemm1x1(PDNN_TUNING_CACHED), off);
    cleanup();
}

static const char *run_igemm(pdnn_tuning_mode mode) { return run_conv_algo(mode, PDNN_CONV_ALGO_IMPLICIT_GEMM, 3); }

/* The implicit_gemm tuner, as the gemm_1x1 one's above: search stores the
 * configuration it ran (after checking it), cached mode runs a stored
 * one, off mode ignores it, and a value this build does not offer is
 * ignored. */
Test(tuner, implicit_gemm_search_stores_a_checked_result_that_cached_mode_uses)
{
    fresh_dir();
    char ran[48];
    snprintf(ran, sizeof ran, "%s", run_igemm(PDNN_TUNING_SEARCH));
    char device[256], shape[256], value[64];
    cr_assert(read_kernel_entry("conv2d_implicit_gemm", device, shape, value),
              "search wrote no conv2d_implicit_gemm entry");
    cr_assert_str_eq(value, ran, "ran %s, stored %s", ran, value);
    cr_assert(strstr(shape, "NCHW/OIHW/NCHW n1 c24 h10 w9 k48 r3 s3 p10 q9 u1,1 d1,1 pad1,1,1,1 g1") != NULL, "%s", shape);

    char off[48];
    snprintf(off, sizeof off, "%s", run_igemm(PDNN_TUNING_OFF));
    const char *other = neither(ran, off, (const char *[]){"vw=8 kb=1 pt=12", "vw=16 kb=1 pt=6", "vw=4 kb=1 pt=8"});
    cr_assert_eq(pdnn__tuning_store(device, "conv2d_implicit_gemm", shape, other, 1.0), PDNN_SUCCESS);
    pdnn__tuning_forget();
    cr_assert_str_eq(run_igemm(PDNN_TUNING_CACHED), other);
    cr_assert_str_eq(run_igemm(PDNN_TUNING_OFF), off);
    cr_assert_eq(pdnn__tuning_store(device, "conv2d_implicit_gemm", shape, "vw=3 kb=1 pt=6", 1.0), PDNN_SUCCESS);
    cr_assert_str_eq(run_igemm(PDNN_TUNING_CACHED), off);
    cleanup();
}

/* A strided view (the backward ops' forward_gemm, matmul's conv_gemm) and
 * a plain tensor of the same shape and layout names read memory in
 * different patterns: their tuning keys differ, so neither takes the
 * other's measured configuration; a plain call's key has no strides. */
Test(tuning_cache, views_have_keys_of_their_own)
{
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_CONV2D_FWD;
    pdnn__conv2d_call *c = &call.u.conv2d;
    c->n = 2, c->c = 8, c->h = 5, c->w = 6, c->k = 4, c->r = c->s = 3, c->p = 3, c->q = 4, c->groups = 1;
    c->stride_h = c->stride_w = c->dil_h = c->dil_w = 1;
    c->x_layout = c->y_layout = PDNN_NCHW;
    c->w_layout = PDNN_OIHW;
    const int64_t xd[4] = {2, 8, 5, 6}, wd[4] = {4, 8, 3, 3}, yd[4] = {2, 4, 3, 4};
    pdnn__layout_strides(PDNN_NCHW, xd, c->xs);
    pdnn__layout_strides(PDNN_OIHW, wd, c->ws);
    pdnn__layout_strides(PDNN_NCHW, yd, c->ys);
    char plain[512], view[512];
    pdnn__op_key(&call, plain, sizeof plain);
    cr_assert_null(strstr(plain, "view"), "%s", plain);
    /* x seen with N and C swapped, as forward_gemm's filter gradient does */
    const int64_t t = c->xs[0];
    c->xs[0] = c->xs[1], c->xs[1] = t;
    pdnn__op_key(&call, view, sizeof view);
    cr_assert_str_neq(plain, view);
    cr_assert(strstr(view, " view x30,240,6,1 "), "%s", view);
}

/* A strided batch of GEMMs is a call of its own: its key names the batch
 * and strides (one matrix's key reads as before), its FLOPs and output
 * count are the batch's; and pdnn_matmul issues one such call where the
 * batch dims collapse (attention's {B,H,S,D} @ {B,H,D,S}), one per outer
 * element where the broadcasts keep them apart. */
static pdnn_tensor_desc mm_nd(int rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    pdnn_tensor_desc t = {PDNN_FLOAT32, PDNN_ND, {d0, d1, d2, d3, 1, 1, 1, 1}, rank};
    return t;
}

Test(tuning_cache, batched_matmul_keys_flops_and_dispatches)
{
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_GEMM;
    call.u.matmul.m = 197, call.u.matmul.n = 197, call.u.matmul.k = 64;
    char one[256], batched[256], bcast[256];
    pdnn__op_key(&call, one, sizeof one);
    cr_assert_str_eq(one, "matmul f32 m197 n197 k64 t0,0");
    const double f1 = pdnn__op_flops(&call);
    call.u.matmul.batch = 12, call.u.matmul.stride_a = 197 * 64, call.u.matmul.stride_b = 64 * 197;
    pdnn__op_key(&call, batched, sizeof batched);
    cr_assert_str_eq(batched, "matmul f32 m197 n197 k64 t0,0 b12 s12608,12608");
    cr_assert_float_eq(pdnn__op_flops(&call), 12.0 * f1, 1e-3);
    size_t n = 0;
    (void)pdnn__out_buf(&call, &n);
    cr_assert_eq(n, (size_t)12 * 197 * 197);
    call.u.matmul.stride_b = 0;
    pdnn__op_key(&call, bcast, sizeof bcast);
    cr_assert_str_neq(batched, bcast);

    int64_t batch = 0;
    pdnn_tensor_desc a = mm_nd(4, 1, 12, 197, 64), b = mm_nd(4, 1, 12, 64, 197);
    cr_assert_eq(pdnn__matmul_dispatches(&a, &b, 0, 0, &batch), 1);
    cr_assert_eq(batch, 12);
    a = mm_nd(4, 64, 3, 49, 32), b = mm_nd(4, 64, 3, 49, 32); /* Swin's q @ k^T */
    cr_assert_eq(pdnn__matmul_dispatches(&a, &b, 0, 1, &batch), 1);
    cr_assert_eq(batch, 192);
    /* {3,1} against {1,17}: a repeats along the inner dim, b along the
     * outer: 3 dispatches of 17. */
    a = mm_nd(4, 3, 1, 5, 4), b = mm_nd(4, 1, 17, 4, 6);
    cr_assert_eq(pdnn__matmul_dispatches(&a, &b, 0, 0, &batch), 3);
    cr_assert_eq(batch, 17);
    /* b broadcast over a {2,3} batch: one strided batch of 6 (stride 0),
     * or with a not transposed one GEMM of a's rows (a Linear layer). */
    a = mm_nd(4, 2, 3, 4, 5), b = mm_nd(2, 4, 6, 1, 1);
    cr_assert_eq(pdnn__matmul_dispatches(&a, &b, 1, 0, &batch), 1);
    cr_assert_eq(batch, 6);
    a = mm_nd(4, 2, 3, 5, 4);
    cr_assert_eq(pdnn__matmul_dispatches(&a, &b, 0, 0, &batch), 1);
    cr_assert_eq(batch, 1);
    b = mm_nd(2, 3, 6, 1, 1);
    cr_assert_eq(pdnn__matmul_dispatches(&a, &b, 0, 0, &batch), -1);
}
