/* Allocator benchmark: alloc+free pairs on the BFC allocator against
 * malloc/free and against a fresh OpenCL buffer per tensor, measured side
 * by side in one run; and the fragmentation (reserved / peak in use) of
 * allow_growth over a ResNet-50 forward pass's allocation trace. */
#define CL_TARGET_OPENCL_VERSION 120
#include "core/bfc.h"

#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Host-memory regions, so the BFC numbers measure the allocator alone. */
static pdnn_status host_alloc(void *dev, size_t bytes, void **region)
{
    (void)dev;
    *region = malloc(bytes);
    return *region ? PDNN_SUCCESS : PDNN_ERR_OUT_OF_MEMORY;
}
static void host_free(void *dev, void *region)
{
    (void)dev;
    free(region);
}

/* Fake regions (never touched) for the trace, which reserves GiBs. */
static uintptr_t fake_next = 4096;
static uint64_t fake_calls; /* regions asked of the "driver" */
static pdnn_status fake_alloc(void *dev, size_t bytes, void **region)
{
    (void)dev;
    (void)bytes;
    fake_calls++;
    *region = (void *)fake_next;
    fake_next += 4096;
    return PDNN_SUCCESS;
}
static void fake_free(void *dev, void *region)
{
    (void)dev;
    (void)region;
}

static pdnn__bfc *make(pdnn__region_source src, uint64_t limit, int growth_double)
{
    pdnn__bfc_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.device_name = "bench";
    cfg.limit = limit;
    snprintf(cfg.limit_source, sizeof cfg.limit_source, "bench");
    cfg.alignment = 256;
    cfg.allow_growth = 1;
    cfg.growth_double = growth_double;
    pdnn__bfc *a = NULL;
    if (pdnn__bfc_create(&cfg, &src, &a) != PDNN_SUCCESS) {
        fprintf(stderr, "%s\n", pdnn_last_error());
        exit(1);
    }
    return a;
}

/* Mixed tensor sizes from 256 B to 4 MiB, the same sequence for everyone. */
#define N_SIZES 1024
static size_t sizes[N_SIZES];

static void make_sizes(void)
{
    unsigned s = 12345;
    for (int i = 0; i < N_SIZES; i++) {
        s = s * 1103515245u + 12345u;
        sizes[i] = ((size_t)1 << (8 + (s >> 16) % 15)) + (s % 61) * 64;
    }
}

/* Pairs with 16 tensors alive at once, as a layer sequence keeps a few. */
#define LIVE 16

static double bench_bfc(int pairs)
{
    pdnn__bfc *a = make((pdnn__region_source){NULL, host_alloc, host_free, NULL}, (uint64_t)8 << 30, 0);
    pdnn__bfc_block live[LIVE];
    for (int i = 0; i < LIVE; i++)
        pdnn__bfc_alloc(a, sizes[i], NULL, &live[i]);
    double t0 = now();
    for (int i = 0; i < pairs; i++) {
        int k = i % LIVE;
        pdnn__bfc_free(a, live[k].handle);
        if (pdnn__bfc_alloc(a, sizes[i % N_SIZES], NULL, &live[k]) != PDNN_SUCCESS) {
            fprintf(stderr, "%s\n", pdnn_last_error());
            exit(1);
        }
    }
    double t = now() - t0;
    for (int i = 0; i < LIVE; i++)
        pdnn__bfc_free(a, live[i].handle);
    pdnn__bfc_destroy(a);
    return t / pairs * 1e9;
}

static double bench_malloc(int pairs)
{
    void *live[LIVE];
    for (int i = 0; i < LIVE; i++)
        live[i] = malloc(sizes[i]);
    double t0 = now();
    for (int i = 0; i < pairs; i++) {
        int k = i % LIVE;
        free(live[k]);
        live[k] = malloc(sizes[i % N_SIZES]);
        if (!live[k])
            exit(1);
        /* Keep the compiler from pairing malloc/free away. */
        ((volatile char *)live[k])[0] = 1;
    }
    double t = now() - t0;
    for (int i = 0; i < LIVE; i++)
        free(live[i]);
    return t / pairs * 1e9;
}

/* A fresh cl_mem per tensor: what a framework without an allocator does.
 * Returns -1 if no OpenCL device. The first bytes are written so that
 * drivers that allocate lazily (PoCL) pay for the allocation too. */
static double bench_clmem(int pairs, char *devname, size_t len)
{
    cl_platform_id plat;
    cl_device_id dev;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &plat, &n) != CL_SUCCESS || n == 0 ||
        clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, &n) != CL_SUCCESS || n == 0)
        return -1;
    clGetDeviceInfo(dev, CL_DEVICE_NAME, len, devname, NULL);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    float one = 1.0f;
    cl_mem live[LIVE];
    for (int i = 0; i < LIVE; i++)
        live[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizes[i], NULL, &err);
    double t0 = now();
    for (int i = 0; i < pairs; i++) {
        int k = i % LIVE;
        clReleaseMemObject(live[k]);
        live[k] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizes[i % N_SIZES], NULL, &err);
        clEnqueueWriteBuffer(q, live[k], CL_TRUE, 0, sizeof one, &one, 0, NULL, NULL);
    }
    double t = now() - t0;
    for (int i = 0; i < LIVE; i++)
        clReleaseMemObject(live[i]);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return t / pairs * 1e9;
}

/* ---- ResNet-50 v1.5 forward trace -------------------------------------- */

/* What a convolution's workspace is in the trace: im2col's column buffer
 * (capped at 64 MiB, as a workspace-bounded GEMM algorithm would do), or
 * what polydnn's default OpenCL algorithm (tiled) takes, the filter packed
 * into 16-channel blocks. */
enum ws_model { WS_IM2COL, WS_TILED };

typedef struct trace {
    pdnn__bfc *a;
    uint64_t allocs;
    enum ws_model ws;
    int weights; /* the model's filters and biases stay resident */
    void *w[128];
    int nw;
} trace;

static void *alloc_bytes(trace *t, uint64_t bytes)
{
    pdnn__bfc_block b;
    if (pdnn__bfc_alloc(t->a, (size_t)bytes, NULL, &b) != PDNN_SUCCESS) {
        fprintf(stderr, "%s\n", pdnn_last_error());
        exit(1);
    }
    t->allocs++;
    return b.handle;
}

static void *talloc(trace *t, uint64_t n, uint64_t c, uint64_t h, uint64_t w) { return alloc_bytes(t, n * c * h * w * 4); }

/* One convolution's filter (k x c x r x r) and bias: resident for the
 * whole run when the trace keeps weights, as an inference server does. */
static void weights(trace *t, uint64_t c, uint64_t k, uint64_t r)
{
    if (!t->weights || t->nw + 2 > (int)(sizeof t->w / sizeof t->w[0]))
        return;
    t->w[t->nw++] = alloc_bytes(t, k * c * r * r * 4);
    t->w[t->nw++] = alloc_bytes(t, k * 4);
}

/* A convolution's workspace lives only during the call. */
static void conv_workspace(trace *t, uint64_t n, uint64_t c, uint64_t k, uint64_t r, uint64_t oh, uint64_t ow)
{
    uint64_t bytes;
    if (t->ws == WS_TILED)
        bytes = r * r * c * ((k + 15) / 16 * 16) * 4;
    else if (r == 1)
        return;
    else
        bytes = n * c * r * r * oh * ow * 4;
    if (bytes > (64u << 20))
        bytes = 64u << 20;
    pdnn__bfc_free(t->a, alloc_bytes(t, bytes));
}

static void resnet50_trace(trace *t, uint64_t n)
{
    void *x = talloc(t, n, 3, 224, 224);
    void *c1 = talloc(t, n, 64, 112, 112);
    conv_workspace(t, n, 3, 64, 7, 112, 112);
    pdnn__bfc_free(t->a, x);
    void *p = talloc(t, n, 64, 56, 56);
    pdnn__bfc_free(t->a, c1);
    x = p;
    uint64_t in_c = 64, hw = 56;
    const uint64_t mids[4] = {64, 128, 256, 512}, blocks[4] = {3, 4, 6, 3};
    for (int s = 0; s < 4; s++) {
        for (uint64_t b = 0; b < blocks[s]; b++) {
            uint64_t mid = mids[s], out_c = mid * 4;
            uint64_t stride = (s > 0 && b == 0) ? 2 : 1, ohw = hw / stride;
            void *a1 = talloc(t, n, mid, hw, hw);
            conv_workspace(t, n, in_c, mid, 1, hw, hw);
            void *a2 = talloc(t, n, mid, ohw, ohw); /* v1.5: stride on the 3x3 */
            conv_workspace(t, n, mid, mid, 3, ohw, ohw);
            pdnn__bfc_free(t->a, a1);
            void *a3 = talloc(t, n, out_c, ohw, ohw);
            conv_workspace(t, n, mid, out_c, 1, ohw, ohw);
            pdnn__bfc_free(t->a, a2);
            void *sc = NULL;
            if (b == 0) {
                sc = talloc(t, n, out_c, ohw, ohw); /* projection shortcut */
                conv_workspace(t, n, in_c, out_c, 1, ohw, ohw);
            }
            void *y = talloc(t, n, out_c, ohw, ohw); /* relu(a3 + shortcut) */
            pdnn__bfc_free(t->a, a3);
            if (sc)
                pdnn__bfc_free(t->a, sc);
            pdnn__bfc_free(t->a, x);
            x = y;
            in_c = out_c;
            hw = ohw;
        }
    }
    void *pool = talloc(t, n, in_c, 1, 1);
    pdnn__bfc_free(t->a, x);
    void *fc = talloc(t, n, 1000, 1, 1);
    pdnn__bfc_free(t->a, pool);
    pdnn__bfc_free(t->a, fc);
}

/* The filters of every convolution of ResNet-50 v1.5 and the classifier,
 * in the order a framework loads them. */
static void resnet50_weights(trace *t)
{
    weights(t, 3, 64, 7);
    uint64_t in_c = 64;
    const uint64_t mids[4] = {64, 128, 256, 512}, blocks[4] = {3, 4, 6, 3};
    for (int s = 0; s < 4; s++)
        for (uint64_t b = 0; b < blocks[s]; b++) {
            const uint64_t mid = mids[s];
            weights(t, in_c, mid, 1);
            weights(t, mid, mid, 3);
            weights(t, mid, mid * 4, 1);
            if (b == 0)
                weights(t, in_c, mid * 4, 1);
            in_c = mid * 4;
        }
    weights(t, 2048, 1000, 1);
}

/* Peak reserved / peak in use over three passes (the steady state) of
 * the trace at batch n. */
static void trace_row(uint64_t n, enum ws_model ws, int with_weights, int growth_double)
{
    trace t;
    memset(&t, 0, sizeof t);
    t.a = make((pdnn__region_source){NULL, fake_alloc, fake_free, NULL}, (uint64_t)64 << 30, growth_double);
    t.ws = ws;
    t.weights = with_weights;
    resnet50_weights(&t);
    resnet50_trace(&t, n);
    const uint64_t first_pass = fake_calls;
    for (int rep = 1; rep < 3; rep++)
        resnet50_trace(&t, n);
    const uint64_t steady = fake_calls - first_pass;
    for (int i = 0; i < t.nw; i++)
        pdnn__bfc_free(t.a, t.w[i]);
    pdnn__bfc_stats s;
    pdnn__bfc_get_stats(t.a, &s);
    char p[32], r[32];
    printf("| %s | %s | %s | %llu | %llu | %s | %s | %.2f | %llu |\n", growth_double ? "double" : "gradual", ws == WS_TILED ? "tiled (packed filter)" : "im2col (<= 64 MiB)",
           with_weights ? "resident" : "not counted", (unsigned long long)n, (unsigned long long)t.allocs,
           pdnn__format_bytes(s.peak_bytes_in_use, p, sizeof p), pdnn__format_bytes(s.peak_bytes_reserved, r, sizeof r),
           (double)s.peak_bytes_reserved / (double)s.peak_bytes_in_use, (unsigned long long)steady);
    pdnn__bfc_destroy(t.a);
}

int main(int argc, char **argv)
{
    int pairs = argc > 1 ? atoi(argv[1]) : 1000000;
    if (pairs < LIVE)
        pairs = LIVE;
    make_sizes();
    char devname[256] = "no OpenCL device";
    double bfc = bench_bfc(pairs), mal = bench_malloc(pairs);
    int cl_pairs = pairs / 50 > 1000 ? pairs / 50 : 1000;
    double clm = bench_clmem(cl_pairs, devname, sizeof devname);
    printf("## alloc+free pairs (sizes 256 B .. 4 MiB, %d live)\n\n", LIVE);
    printf("| allocator | ns per pair | ratio to BFC |\n| --- | ---: | ---: |\n");
    printf("| polydnn BFC | %.1f | 1.00 |\n", bfc);
    printf("| malloc/free | %.1f | %.2f |\n", mal, mal / bfc);
    if (clm >= 0)
        printf("| fresh cl_mem per tensor (%s) | %.1f | %.2f |\n", devname, clm, clm / bfc);
    printf("\n## ResNet-50 v1.5 forward allocation trace, allow_growth\n\n");
    printf("| growth | workspace | weights | batch | allocations | peak in use | peak reserved | peak reserved / "
           "peak in use | regions created in passes 2-3 |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int dbl = 0; dbl <= 1; dbl++)
        for (int ws = WS_TILED; ws >= WS_IM2COL; ws--)
            for (int wt = 1; wt >= 0; wt--)
                for (uint64_t n = 1; n <= 32; n *= 2)
                    trace_row(n, (enum ws_model)ws, wt, dbl);
    return 0;
}
