/* The on-disk cache of compiled OpenCL programs (cl_binary_cache.c): a
 * conv fills it, a new context loads from it, corrupt files are detected,
 * rebuilt and overwritten, edited sources are new entries, and
 * POLYDNN_PROGRAM_CACHE=off writes nothing. Every conv is checked against
 * the host reference. Each test runs in its own process (Criterion), so
 * the cache's counters start at zero. */
#include "backends/opencl/cl_hooks.h"
#include "helpers.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static char progdir[96];

static void remove_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        cr_assert_not_null(d);
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                char sub[512];
                snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
                remove_tree(sub);
            }
        closedir(d);
        cr_assert_eq(rmdir(path), 0, "rmdir %s", path);
    } else {
        cr_assert_eq(unlink(path), 0, "unlink %s", path);
    }
}

static void fresh_dir(void)
{
    strcpy(dir, "/tmp/pdnn-progcache-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    setenv("POLYDNN_CACHE_DIR", dir, 1);
    snprintf(progdir, sizeof progdir, "%s/programs-v2", dir);
    unsetenv("POLYDNN_PROGRAM_CACHE");
    unsetenv("POLYDNN_TUNING");
    unsetenv("POLYDNN_KERNEL_DIR");
}

static void cleanup(void) { remove_tree(dir); }

/* The program files in the cache, their paths in names (up to max). */
static int list_programs(char names[][512], int max)
{
    DIR *d = opendir(progdir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".bin") == 0) {
            if (n < max)
                snprintf(names[n], 512, "%s/%s", progdir, e->d_name);
            n++;
        } else if (e->d_name[0] != '.') {
            cr_assert_fail("unexpected file %s in %s (a temporary file left behind?)", e->d_name, progdir);
        }
    }
    closedir(d);
    return n;
}

static pdnn__program_cache_stats stats(void)
{
    pdnn__program_cache_stats s;
    pdnn__opencl_program_cache_stats(&s);
    return s;
}

#define N 1
#define C 24
#define H 10
#define W 9
#define K 48

/* A conv on the first OpenCL device of a new context (automatic
 * algorithm: builds the implicit_gemm program on PoCL; programs are per
 * kernel source and built when first used), checked
 * against the host. Skips the test when there is no OpenCL device. */
static void run_conv(void)
{
    pdnn_context *ctx = th_context();
    pdnn_device *dev = NULL, *host = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    for (int i = 0; !dev && i < pdnn_device_count(ctx); i++) {
        pdnn_device *d = NULL;
        pdnn_device_info info;
        cr_assert_eq(pdnn_device_get(ctx, i, &d), PDNN_SUCCESS);
        pdnn_device_get_info(d, &info);
        if (strcmp(info.backend, "opencl") == 0)
            dev = d;
    }
    if (!dev) {
        pdnn_context_destroy(ctx);
        cr_skip_test("no OpenCL device");
    }
    static float x[N * C * H * W], w[K * C * 9], want[N * K * H * W];
    th_fill(x, N * C * H * W, 11);
    th_fill(w, K * C * 9, 12);
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, N, C, H, W), wd = th_desc(PDNN_OIHW, K, C, 3, 3);
    pdnn_tensor_desc yd = th_desc(PDNN_NCHW, N, K, H, W);
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
    pdnn_device *on[2] = {host, dev};
    float *got = NULL;
    for (int i = 0; i < 2; i++) {
        pdnn_tensor *tx = th_upload(on[i], &xd, x), *tw = th_upload(on[i], &wd, w), *ty = th_upload(on[i], &yd, NULL);
        cr_assert_eq(pdnn_conv2d_forward(&p, tx, tw, NULL, ty), PDNN_SUCCESS, "%s", pdnn_last_error());
        got = th_download(ty);
        if (!i) {
            memcpy(want, got, sizeof want);
            free(got);
        }
        pdnn_tensor_release(tx);
        pdnn_tensor_release(tw);
        pdnn_tensor_release(ty);
    }
    for (int i = 0; i < N * K * H * W; i++)
        cr_assert(fabsf(got[i] - want[i]) <= 1e-4f, "element %d: %g, expected %g", i, (double)got[i],
                  (double)want[i]);
    free(got);
    pdnn_context_destroy(ctx);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    const long size = ftell(f);
    cr_assert_gt(size, 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)size);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    *len = (size_t)size;
    return buf;
}

static void put(const char *path, const unsigned char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

/* The file format's checksum (FNV-1a 64), written out here independently
 * so that the test can forge a file the header check accepts. */
static uint64_t fnv1a(const unsigned char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

Test(program_cache, a_conv_fills_the_cache_and_a_new_context_loads_from_it)
{
    fresh_dir();
    run_conv();
    pdnn__program_cache_stats s1 = stats();
    char names[8][512];
    const int n = list_programs(names, 8);
    /* The algorithm's program at least. */
    cr_assert_geq(n, 1, "%d program files in %s", n, progdir);
    cr_assert_eq(s1.hits, 0);
    cr_assert_eq(s1.misses, n);
    cr_assert_eq(s1.stores, n);
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        unsigned char *b = slurp(names[i], &len);
        cr_assert(len > 32 && memcmp(b, "PDNNCLPB", 8) == 0, "%s: no header", names[i]);
        free(b);
    }

    /* A second context has new cl_dev objects, so it builds its programs
     * again: every one of them now comes from the files. */
    run_conv();
    pdnn__program_cache_stats s2 = stats();
    cr_assert_eq(s2.hits, n, "hits %ld, expected %d", s2.hits, n);
    cr_assert_eq(s2.misses, s1.misses);
    cr_assert_eq(s2.stores, s1.stores);
    cr_assert_eq(s2.rejected, 0);
    cr_assert_eq(list_programs(names, 8), n);
    cleanup();
}

/* Replaces every program file with what corrupt makes of it, runs a conv,
 * and checks that each file was rejected, rebuilt and rewritten, and that
 * the rewritten files load again. */
static int check_recovers(void (*corrupt)(unsigned char *b, size_t *len))
{
    fresh_dir();
    run_conv();
    char names[8][512];
    const int n = list_programs(names, 8);
    cr_assert_geq(n, 1);
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        unsigned char *b = slurp(names[i], &len);
        corrupt(b, &len);
        put(names[i], b, len);
        free(b);
    }
    const pdnn__program_cache_stats s0 = stats();
    run_conv();
    const pdnn__program_cache_stats s1 = stats();
    cr_assert_eq(s1.hits, s0.hits, "a corrupt file was used");
    cr_assert_eq(s1.rejected - s0.rejected, n);
    cr_assert_eq(s1.stores - s0.stores, n);
    cr_assert_eq(list_programs(names, 8), n);
    run_conv();
    const pdnn__program_cache_stats s2 = stats();
    cr_assert_eq(s2.hits - s1.hits, n, "the rewritten files do not load");
    cr_assert_eq(s2.rejected, s1.rejected);
    fflush(stderr);
    cleanup();
    return n;
}

static void truncate_file(unsigned char *b, size_t *len)
{
    (void)b;
    *len = *len * 2 / 3;
}

static void flip_payload(unsigned char *b, size_t *len)
{
    b[*len - 1] ^= 0x5a;
    b[*len / 2 + 16] ^= 0xff;
}

static void flip_key(unsigned char *b, size_t *len)
{
    (void)len;
    b[32 + 8] ^= 0x01; /* inside "device=..." */
}

/* Garbage in place of the driver's binary behind a header that is right
 * in every field, checksum included: only the driver can refuse it. */
static void garbage_with_valid_header(unsigned char *b, size_t *len)
{
    uint32_t klen;
    memcpy(&klen, b + 12, sizeof klen);
    const size_t start = 32 + klen;
    cr_assert_lt(start, *len);
    uint32_t s = 12345;
    for (size_t i = start; i < *len; i++) {
        s = s * 1103515245u + 12345u;
        b[i] = (unsigned char)(s >> 16);
    }
    const uint64_t sum = fnv1a(b + 32, *len - 32); /* the key and the payload */
    memcpy(b + 24, &sum, sizeof sum);
}

/* A payload under a checksum of itself alone, as a payload moved from
 * another key's file with its checksum recomputed: it ran as the wrong
 * kernel (max abs error 12.9 under --verify). The key is in the
 * checksummed bytes now. */
static void checksum_without_key(unsigned char *b, size_t *len)
{
    uint32_t klen;
    memcpy(&klen, b + 12, sizeof klen);
    const uint64_t sum = fnv1a(b + 32 + klen, *len - 32 - klen);
    memcpy(b + 24, &sum, sizeof sum);
}

/* One warning per rejected file, with the reason. */
static void expect_warnings(int n, const char *reason)
{
    FILE *err = cr_get_redirected_stderr();
    char line[1024];
    int warned = 0;
    while (fgets(line, sizeof line, err)) {
        cr_assert(strstr(line, "error") == NULL, "%s", line);
        if (strstr(line, "polydnn: warning: ignoring the cached OpenCL program ")) {
            cr_assert(strstr(line, reason) != NULL, "'%s' does not say '%s'", line, reason);
            warned++;
        }
    }
    cr_assert_eq(warned, n, "%d warnings for %d corrupt files", warned, n);
}

Test(program_cache, a_truncated_file_is_rebuilt, .init = cr_redirect_stderr)
{
    expect_warnings(check_recovers(truncate_file), "its length does not match its header");
}

Test(program_cache, flipped_payload_bytes_are_caught_by_the_checksum, .init = cr_redirect_stderr)
{
    expect_warnings(check_recovers(flip_payload), "its key and payload do not match its checksum");
}

Test(program_cache, a_checksum_that_leaves_out_the_key_is_refused, .init = cr_redirect_stderr)
{
    expect_warnings(check_recovers(checksum_without_key), "its key and payload do not match its checksum");
}

Test(program_cache, a_file_for_another_key_is_not_used, .init = cr_redirect_stderr)
{
    expect_warnings(check_recovers(flip_key), "its key differs");
}

Test(program_cache, garbage_behind_a_valid_header_is_refused_by_the_driver, .init = cr_redirect_stderr)
{
    expect_warnings(check_recovers(garbage_with_valid_header), "binary");
}

/* A relu on the first OpenCL device of a new context: builds
 * elementwise.cl, another program than the conv's. */
static void run_relu(void)
{
    pdnn_context *ctx = th_context();
    pdnn_device *dev = NULL;
    for (int i = 0; !dev && i < pdnn_device_count(ctx); i++) {
        pdnn_device *d = NULL;
        pdnn_device_info info;
        cr_assert_eq(pdnn_device_get(ctx, i, &d), PDNN_SUCCESS);
        pdnn_device_get_info(d, &info);
        if (strcmp(info.backend, "opencl") == 0)
            dev = d;
    }
    if (!dev) {
        pdnn_context_destroy(ctx);
        cr_skip_test("no OpenCL device");
    }
    float x[16];
    th_fill(x, 16, 3);
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, 1, 4, 4);
    pdnn_tensor *tx = th_upload(dev, &xd, x), *ty = th_upload(dev, &xd, NULL);
    cr_assert_eq(pdnn_relu(tx, ty), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *got = th_download(ty);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(got[i], x[i] > 0 ? x[i] : 0.0f);
    free(got);
    pdnn_tensor_release(tx);
    pdnn_tensor_release(ty);
    pdnn_context_destroy(ctx);
}

static int listed(char names[][512], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

/* Another program's binary under this program's key: header, key and
 * checksum are right and the driver builds it, but the conv's kernel is
 * not in it. clCreateKernel failed with CL_INVALID_KERNEL_NAME on every
 * later conv, in every process, and no message named the file. Now the
 * file is deleted with one warning naming it, the program is rebuilt
 * from source, and a good binary is stored in its place. */
Test(program_cache, another_programs_binary_under_this_key_is_dropped_and_rebuilt, .init = cr_redirect_stderr)
{
    fresh_dir();
    run_conv();
    char conv[8][512], all[8][512];
    const int n = list_programs(conv, 8);
    cr_assert_geq(n, 1);
    run_relu();
    const int n_all = list_programs(all, 8);
    cr_assert_eq(n_all, n + 1, "the relu built one more program");
    const char *other = NULL;
    for (int i = 0; i < n_all && !other; i++)
        if (!listed(conv, n, all[i]))
            other = all[i];
    cr_assert_not_null(other);
    size_t olen = 0;
    unsigned char *ob = slurp(other, &olen);
    uint32_t oklen;
    memcpy(&oklen, ob + 12, sizeof oklen);
    const unsigned char *opayload = ob + 32 + oklen;
    const size_t oplen = olen - 32 - oklen;
    unsigned char *forged[8];
    size_t forged_len[8];
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        unsigned char *b = slurp(conv[i], &len);
        uint32_t klen;
        memcpy(&klen, b + 12, sizeof klen);
        forged_len[i] = 32 + klen + oplen;
        forged[i] = malloc(forged_len[i]);
        cr_assert_not_null(forged[i]);
        memcpy(forged[i], b, 32 + klen); /* this program's header and key */
        memcpy(forged[i] + 32 + klen, opayload, oplen);
        const uint64_t plen = oplen, sum = fnv1a(forged[i] + 32, klen + oplen);
        memcpy(forged[i] + 16, &plen, sizeof plen);
        memcpy(forged[i] + 24, &sum, sizeof sum);
        put(conv[i], forged[i], forged_len[i]);
        free(b);
    }
    free(ob);

    const pdnn__program_cache_stats s0 = stats();
    run_conv(); /* succeeds, checked against the host */
    const pdnn__program_cache_stats s1 = stats();
    cr_assert_eq(s1.hits - s0.hits, n, "the forged files pass every check on loading");
    cr_assert_eq(s1.rejected - s0.rejected, n);
    cr_assert_eq(s1.stores - s0.stores, n, "the rebuilt programs are stored again");
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        unsigned char *b = slurp(conv[i], &len);
        cr_assert(len != forged_len[i] || memcmp(b, forged[i], len) != 0, "%s was not replaced", conv[i]);
        free(b);
    }
    /* The rewritten files are good: a new context loads them. */
    run_conv();
    const pdnn__program_cache_stats s2 = stats();
    cr_assert_eq(s2.hits - s1.hits, n);
    cr_assert_eq(s2.rejected, s1.rejected);
    cr_assert_eq(list_programs(all, 8), n + 1);

    fflush(stderr);
    FILE *err = cr_get_redirected_stderr();
    char line[2048];
    int warned = 0;
    while (fgets(line, sizeof line, err)) {
        cr_assert(strstr(line, "error") == NULL, "%s", line);
        for (int i = 0; i < n; i++) {
            char want[4700];
            snprintf(want, sizeof want, "polydnn: warning: the cached OpenCL program %s is not the program its key "
                     "names (clCreateKernel(", conv[i]);
            if (strncmp(line, want, strlen(want)) == 0) {
                cr_assert(strstr(line, "CL_INVALID_KERNEL_NAME") && strstr(line, "deleted it"), "%s", line);
                warned++;
            }
        }
    }
    cr_assert_eq(warned, n, "%d warnings for %d forged files", warned, n);
    for (int i = 0; i < n; i++)
        free(forged[i]);
    cleanup();
}

/* A FIFO at a program's path: a plain open for reading waited for a
 * writer forever. Now it is ignored with a warning, the program is built
 * from source, and the FIFO is left alone (not replaced). */
Test(program_cache, a_fifo_at_a_program_path_is_refused_without_blocking, .init = cr_redirect_stderr,
     .timeout = 120)
{
    fresh_dir();
    run_conv();
    char names[8][512];
    const int n = list_programs(names, 8);
    cr_assert_geq(n, 1);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(unlink(names[i]), 0);
        cr_assert_eq(mkfifo(names[i], 0644), 0);
    }
    const pdnn__program_cache_stats s0 = stats();
    alarm(90); /* the old code blocked here */
    run_conv();
    alarm(0);
    const pdnn__program_cache_stats s1 = stats();
    cr_assert_eq(s1.hits, s0.hits);
    cr_assert_eq(s1.rejected - s0.rejected, n);
    cr_assert_eq(s1.stores, s0.stores, "a FIFO was replaced");
    for (int i = 0; i < n; i++) {
        struct stat sb;
        cr_assert_eq(lstat(names[i], &sb), 0);
        cr_assert(S_ISFIFO(sb.st_mode), "%s is no longer a FIFO", names[i]);
    }
    fflush(stderr);
    expect_warnings(n, "it is a FIFO, not a regular file");
    cleanup();
}

Test(program_cache, off_writes_nothing_and_tuning_off_does_not_turn_it_off)
{
    fresh_dir();
    setenv("POLYDNN_PROGRAM_CACHE", "off", 1);
    run_conv();
    run_conv();
    pdnn__program_cache_stats s = stats();
    cr_assert_eq(s.hits + s.misses + s.stores + s.rejected, 0);
    struct stat sb;
    cr_assert_neq(stat(progdir, &sb), 0, "%s was created with the cache off", progdir);

    setenv("POLYDNN_PROGRAM_CACHE", "on", 1);
    setenv("POLYDNN_TUNING", "off", 1);
    run_conv();
    s = stats();
    cr_assert_geq(s.stores, 1);
    char names[8][512];
    cr_assert_eq(list_programs(names, 8), s.stores);
    unsetenv("POLYDNN_TUNING");
    cleanup();
}

Test(program_cache, invalid_setting_is_an_error)
{
    fresh_dir();
    setenv("POLYDNN_PROGRAM_CACHE", "sometimes", 1);
    pdnn_context *ctx = NULL;
    cr_assert_eq(pdnn_context_create(NULL, &ctx), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_null(ctx);
    cr_assert(strstr(pdnn_last_error(), "POLYDNN_PROGRAM_CACHE='sometimes'") != NULL, "%s", pdnn_last_error());
    unsetenv("POLYDNN_PROGRAM_CACHE");
    cleanup();
}

/* A kernel edited in POLYDNN_KERNEL_DIR is a new entry, not the old
 * binary. Needs the sources (PDNN_TOP_SRCDIR, set by make check). */
Test(program_cache, edited_kernel_sources_are_a_new_entry)
{
    const char *top = getenv("PDNN_TOP_SRCDIR");
    if (!top)
        cr_skip_test("PDNN_TOP_SRCDIR is not set (run through make check)");
    fresh_dir();
    run_conv();
    char names[8][512];
    const int n = list_programs(names, 8);
    cr_assert_geq(n, 1);

    char kdir[128];
    snprintf(kdir, sizeof kdir, "%s/kernels", dir);
    cr_assert_eq(mkdir(kdir, 0755), 0);
    static const char *const files[] = {"conv2d.cl",      "conv2d_tiled.cl", "conv2d_implicit_gemm.cl",
                                        "conv2d_tile.cl", "pool2d.cl",       "elementwise.cl",
                                        "peak.cl",        "prelude.cl"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char from[512], to[512];
        snprintf(from, sizeof from, "%s/kernels_cl/%s", top, files[i]);
        snprintf(to, sizeof to, "%s/%s", kdir, files[i]);
        size_t len = 0;
        unsigned char *b = slurp(from, &len);
        put(to, b, len);
        free(b);
    }
    /* Unchanged copies hash like the embedded sources: all hits. */
    setenv("POLYDNN_KERNEL_DIR", kdir, 1);
    pdnn__program_cache_stats s0 = stats();
    run_conv();
    pdnn__program_cache_stats s1 = stats();
    cr_assert_eq(s1.hits - s0.hits, n);
    cr_assert_eq(s1.misses, s0.misses);

    /* One edited source: its program is rebuilt into a file of its own;
     * then an edited prelude (built before implicit_gemm's own source),
     * part of that program's key too: one more miss, one more file. */
    static const char *const edited[] = {"conv2d_implicit_gemm.cl", "conv2d_tile.cl"};
    for (int e = 0; e < 2; e++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", kdir, edited[e]);
        FILE *f = fopen(path, "a");
        cr_assert_not_null(f);
        fputs("\n/* edited */\n", f);
        fclose(f);
        run_conv();
        pdnn__program_cache_stats s2 = stats();
        cr_assert_eq(s2.misses - s1.misses, 1, "after editing %s", edited[e]);
        cr_assert_eq(s2.hits - s1.hits, n - 1, "after editing %s", edited[e]);
        cr_assert_eq(list_programs(names, 8), n + 1 + e, "after editing %s", edited[e]);
        s1 = s2;
    }
    unsetenv("POLYDNN_KERNEL_DIR");
    cleanup();
}
