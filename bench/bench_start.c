/* Start-up cost: how long a new process takes from its start to the
 * result of its first convolution, with PoCL's kernel cache and polydnn's
 * program cache (backends/opencl/cl_binary_cache.c) each off, cold (empty
 * directory) or warm (filled by an earlier run, tuning results included).
 *
 * The parent runs itself as a child process per measurement, with the
 * environment of the scenario and private cache directories under a
 * mkdtemp directory that it removes at the end. The child reports the
 * first pdnn_conv2d_forward call (+ synchronize), which is where programs
 * are built, and the time from its fork to the first result read back. */
#include "polydnn.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int fail(const char *what)
{
    fprintf(stderr, "bench_start: %s: %s\n", what, pdnn_last_error());
    return 1;
}

/* ResNet-50's conv2_x 3x3 layer, batch 1, NCHW, the automatic algorithm. */
static int child(double t_fork, const char *devname)
{
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = 1;
    pdnn_context *ctx;
    pdnn_device *dev;
    if (pdnn_context_create(&o, &ctx) != PDNN_SUCCESS)
        return fail("context");
    if ((devname ? pdnn_device_find(ctx, devname, &dev) : pdnn_device_default(ctx, &dev)) != PDNN_SUCCESS)
        return fail("device");
    pdnn_tensor_desc xd = {PDNN_FLOAT32, PDNN_NCHW, {1, 64, 56, 56}, 0};
    pdnn_tensor_desc wd = {PDNN_FLOAT32, PDNN_OIHW, {64, 64, 3, 3}, 0};
    pdnn_tensor_desc yd = {PDNN_FLOAT32, PDNN_NCHW, {1, 64, 56, 56}, 0};
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
    const size_t xb = (size_t)pdnn_tensor_desc_bytes(&xd), wb = (size_t)pdnn_tensor_desc_bytes(&wd);
    float *hx = calloc(1, xb), *hw = calloc(1, wb), *hy = calloc(1, xb);
    pdnn_tensor *x = NULL, *w = NULL, *y = NULL;
    const char *failed = NULL;
    double t0 = 0, t1 = 0, t2 = 0;
    if (!hx || !hw || !hy || pdnn_tensor_create(dev, &xd, &x) || pdnn_tensor_create(dev, &wd, &w) ||
        pdnn_tensor_create(dev, &yd, &y) || pdnn_tensor_write(x, hx, xb) || pdnn_tensor_write(w, hw, wb)) {
        failed = "tensors";
    } else {
        t0 = now();
        if (pdnn_conv2d_forward(&p, x, w, NULL, y) != PDNN_SUCCESS || pdnn_device_synchronize(dev) != PDNN_SUCCESS)
            failed = "conv2d";
        t1 = now();
        if (!failed && pdnn_tensor_read(y, hy, xb) != PDNN_SUCCESS)
            failed = "read";
        t2 = now();
    }
    if (!failed)
        printf("%.6f %.6f\n", t1 - t0, t2 - t_fork);
    pdnn_tensor_release(x);
    pdnn_tensor_release(w);
    pdnn_tensor_release(y);
    pdnn_context_destroy(ctx);
    free(hx);
    free(hw);
    free(hy);
    return failed ? fail(failed) : 0;
}

/* rm -rf path (the scenario's cache directories). */
static void remove_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *dir = opendir(path);
        struct dirent *e;
        while (dir && (e = readdir(dir))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char sub[4096];
            if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < (int)sizeof sub)
                remove_tree(sub);
        }
        if (dir)
            closedir(dir);
        rmdir(path);
    } else {
        unlink(path);
    }
}

enum state { OFF, COLD, WARM };
static const char *const state_name[] = {"off", "cold", "warm"};

/* Runs one child with the scenario's environment; 0 on success with its
 * two times and the whole process's wall time. */
static int run_child(const char *self, const char *devname, double out[3])
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    char stamp[64];
    const double t_fork = now();
    snprintf(stamp, sizeof stamp, "%.9f", t_fork);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        char *argv[] = {(char *)"bench_start", (char *)"--child", stamp, (char *)devname, NULL};
        execv(self, argv);
        _exit(127);
    }
    close(fds[1]);
    char buf[128] = "";
    FILE *f = fdopen(fds[0], "r");
    const int got = f && fgets(buf, sizeof buf, f) ? sscanf(buf, "%lf %lf", &out[0], &out[1]) : 0;
    if (f)
        fclose(f);
    else
        close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    out[2] = now() - t_fork;
    return got == 2 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--child") == 0)
        return child(strtod(argv[2], NULL), argc > 3 ? argv[3] : NULL);
    const int reps = argc > 1 ? atoi(argv[1]) : 5;
    const char *devname = argc > 2 ? argv[2] : NULL;
    if (reps < 1 || reps > 100) {
        fprintf(stderr, "usage: bench_start [reps (1-100, default 5) [device]]\n");
        return 2;
    }
    char self[4096];
    const ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        fprintf(stderr, "bench_start: cannot find its own executable: %s\n", strerror(errno));
        return 1;
    }
    self[sl] = '\0';
    char top[] = "/tmp/pdnn-bench-start-XXXXXX";
    if (!mkdtemp(top)) {
        fprintf(stderr, "bench_start: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    char ours[64], pocl[64];
    snprintf(ours, sizeof ours, "%s/polydnn", top);
    snprintf(pocl, sizeof pocl, "%s/pocl", top);
    setenv("POLYDNN_CACHE_DIR", ours, 1);
    setenv("POCL_CACHE_DIR", pocl, 1);
    unsetenv("POLYDNN_TUNING");

    static const enum state scenarios[][2] = {{OFF, OFF},  {OFF, COLD},  {OFF, WARM}, {COLD, OFF},
                                              {WARM, OFF}, {COLD, COLD}, {WARM, WARM}};
    printf("## First convolution of a new process: ResNet-50 conv2_x 3x3, 64->64, 56x56, batch 1, NCHW, "
           "%s, best and median of %d processes\n\n",
           devname ? devname : "default device", reps);
    printf("| PoCL kernel cache | polydnn program cache | first conv call, best (median) s | "
           "process start to first result, best (median) s | whole process, best s |\n");
    printf("| --- | --- | ---: | ---: | ---: |\n");
    int status = 0;
    for (size_t s = 0; s < sizeof scenarios / sizeof scenarios[0]; s++) {
        const enum state pc = scenarios[s][0], oc = scenarios[s][1];
        setenv("POCL_KERNEL_CACHE", pc == OFF ? "0" : "1", 1);
        setenv("POLYDNN_PROGRAM_CACHE", oc == OFF ? "off" : "on", 1);
        remove_tree(ours);
        remove_tree(pocl);
        double t[3][100], r[3];
        int ok = 1;
        if (pc == WARM || oc == WARM) {
            /* Fill the caches the way a user's earlier run would, with a
             * tuning search so that the tuning result is cached too. */
            setenv("POLYDNN_TUNING", "search", 1);
            ok = run_child(self, devname, r) == 0;
            unsetenv("POLYDNN_TUNING");
        }
        for (int i = 0; ok && i < reps; i++) {
            if (pc == COLD)
                remove_tree(pocl);
            if (oc == COLD)
                remove_tree(ours);
            ok = run_child(self, devname, r) == 0;
            for (int j = 0; ok && j < 3; j++)
                t[j][i] = r[j];
        }
        if (!ok) {
            printf("| %s | %s | failed | | |\n", state_name[pc], state_name[oc]);
            status = 1;
            continue;
        }
        for (int j = 0; j < 3; j++)
            qsort(t[j], (size_t)reps, sizeof t[j][0], cmp_double);
        printf("| %s | %s | %.3f (%.3f) | %.3f (%.3f) | %.3f |\n", state_name[pc], state_name[oc], t[0][0],
               t[0][reps / 2], t[1][0], t[1][reps / 2], t[2][0]);
        fflush(stdout);
    }
    remove_tree(top);
    return status;
}
