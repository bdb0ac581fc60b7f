/* All-reduce cost and overlap of distributed training (issue: MPI data
 * parallelism), run under mpirun:
 *
 *   mpirun -np N bench/bench_allreduce MODEL [DEVICE] [BATCH] [STEPS] [BUCKET_MB]
 *
 * MODEL is "mnist" (polydnn train's Deep MNIST: 3.27 M parameters, 13 MB
 * of gradients) or "resnet50" (ResNet-50 v1.5's convolutions, residual
 * adds and classifier without batch normalization: 25.5 M parameters, 102
 * MB). One step is a real forward and backward pass on DEVICE (default
 * /gpu:0) with the gradients' all-reduce, the update left out (it is the
 * same with or without communication). Four ways, STEPS timed steps each
 * after one warm-up, every rank running at once:
 *   compute  the same graph without AllReduce (a plain session)
 *   comm     only the all-reduce of the same buckets (gradients ready)
 *   serial   AllReduce after the backward pass (allreduce_overlap 0)
 *   overlap  each bucket all-reduced as soon as the backward pass made it
 * and prints, on rank 0, ms per step of each, the all-reduce's share that
 * the overlap hid: (compute + comm - overlap) / comm, and the session's
 * own count (1 - wait / comm seconds). */
#include <mpi.h>
#include <polydnn.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_VARS = 256 };

typedef struct net {
    pdnn_graph *g;
    const char *dev;
    int with_ar;
    int nv;
    pdnn_node vars[MAX_VARS], grads[MAX_VARS];
    pdnn_node x, y, loss;
    int64_t batch;
    uint64_t seed;
} net;

_Noreturn static void die(const char *what)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "bench_allreduce: rank %d: %s: %s\n", rank, what, pdnn_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* MPI_Abort does not return; the compiler cannot know */
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static pdnn_node var(net *n, int64_t d0, int64_t d1, int64_t d2, int64_t d3, pdnn_layout l, pdnn_initializer init)
{
    if (n->nv == MAX_VARS)
        die("too many variables");
    pdnn_tensor_desc d = {PDNN_FLOAT32, l, {d0, d1, d2, d3}, 0};
    pdnn_node v;
    if (pdnn_graph_variable(n->g, NULL, n->dev, &d, init, n->seed++, NULL, &v))
        die("variable");
    n->vars[n->nv++] = v;
    return v;
}

static pdnn_node conv(net *n, pdnn_node x, int64_t cin, int64_t cout, int k, int stride, int relu)
{
    pdnn_node w = var(n, cout, cin, k, k, PDNN_OIHW, PDNN_INIT_HE_NORMAL), y;
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.stride_h = p.stride_w = stride;
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = k / 2;
    p.relu = relu;
    if (pdnn_graph_conv2d(n->g, NULL, n->dev, x, w, -1, &p, &y))
        die("conv");
    return y;
}

static pdnn_node pool(net *n, pdnn_node x, pdnn_pool_mode mode, int win, int stride, int pad)
{
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    p.mode = mode;
    p.window_h = p.window_w = win;
    p.stride_h = p.stride_w = stride;
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = pad;
    pdnn_node y;
    if (pdnn_graph_pool2d(n->g, NULL, n->dev, x, &p, &y))
        die("pool");
    return y;
}

/* fc: flatten, matmul, bias. */
static pdnn_node fc(net *n, pdnn_node x, int64_t in, int64_t out, int relu)
{
    pdnn_node f, m, a;
    pdnn_node w = var(n, in, out, 1, 1, PDNN_NCHW, PDNN_INIT_GLOROT_UNIFORM);
    pdnn_node b = var(n, out, 1, 1, 1, PDNN_LAYOUT_X, PDNN_INIT_ZEROS);
    if (pdnn_graph_flatten(n->g, NULL, n->dev, x, &f) || pdnn_graph_matmul(n->g, NULL, n->dev, f, w, 0, 0, &m) ||
        pdnn_graph_bias_add(n->g, NULL, n->dev, m, b, &a))
        die("fc");
    if (relu && pdnn_graph_relu(n->g, NULL, n->dev, a, &a))
        die("relu");
    return a;
}

/* ResNet-50 v1.5 bottleneck (stride on the 3x3), projection where shapes change. */
static pdnn_node bottleneck(net *n, pdnn_node x, int64_t cin, int64_t mid, int stride)
{
    pdnn_node a = conv(n, x, cin, mid, 1, 1, 1);
    a = conv(n, a, mid, mid, 3, stride, 1);
    a = conv(n, a, mid, 4 * mid, 1, 1, 0);
    pdnn_node sc = x, y;
    if (stride != 1 || cin != 4 * mid)
        sc = conv(n, x, cin, 4 * mid, 1, stride, 0);
    if (pdnn_graph_add(n->g, NULL, n->dev, a, sc, &y) || pdnn_graph_relu(n->g, NULL, n->dev, y, &y))
        die("residual");
    return y;
}

static void build(net *n, const char *model)
{
    if (pdnn_graph_create(&n->g))
        die("graph");
    const int resnet = strcmp(model, "resnet50") == 0;
    const int64_t side = resnet ? 224 : 28, chans = resnet ? 3 : 1, classes = resnet ? 1000 : 10;
    pdnn_tensor_desc xd = {PDNN_FLOAT32, PDNN_NCHW, {n->batch, chans, side, side}, 0};
    pdnn_tensor_desc yd = {PDNN_INT32, PDNN_LAYOUT_X, {n->batch, 1, 1, 1}, 0};
    if (pdnn_graph_placeholder(n->g, "images", n->dev, &xd, &n->x) ||
        pdnn_graph_placeholder(n->g, "labels", n->dev, &yd, &n->y))
        die("placeholders");
    pdnn_node h, logits;
    if (resnet) {
        h = pool(n, conv(n, n->x, 3, 64, 7, 2, 1), PDNN_POOL_MAX, 3, 2, 1);
        const int blocks[4] = {3, 4, 6, 3};
        int64_t cin = 64;
        for (int s = 0; s < 4; s++)
            for (int b = 0; b < blocks[s]; b++) {
                const int64_t mid = (int64_t)64 << s;
                h = bottleneck(n, h, cin, mid, b == 0 && s > 0 ? 2 : 1);
                cin = 4 * mid;
            }
        logits = fc(n, pool(n, h, PDNN_POOL_AVG_EXCLUDE_PADDING, 7, 1, 0), 2048, classes, 0);
    } else {
        h = pool(n, conv(n, n->x, 1, 32, 5, 1, 1), PDNN_POOL_MAX, 2, 2, 0);
        h = pool(n, conv(n, h, 32, 64, 5, 1, 1), PDNN_POOL_MAX, 2, 2, 0);
        logits = fc(n, fc(n, h, 64 * 7 * 7, 1024, 1), 1024, classes, 0);
    }
    if (pdnn_graph_softmax_cross_entropy(n->g, "loss", n->dev, logits, n->y, &n->loss) ||
        pdnn_graph_gradients(n->g, n->loss, n->vars, n->nv, n->grads))
        die("loss and gradients");
    for (int k = 0; k < n->nv && n->with_ar; k++)
        if (pdnn_graph_allreduce(n->g, NULL, "/cpu:0", n->grads[k], &n->grads[k]))
            die("allreduce");
}

/* Only the all-reduce: host variables of the gradients' shapes, each
 * through AllReduce, in the backward pass's order (the last layer's first). */
static void build_comm(net *n, const net *shape)
{
    if (pdnn_graph_create(&n->g))
        die("graph");
    for (int k = shape->nv - 1; k >= 0; k--) {
        pdnn_tensor_desc d;
        pdnn_graph_node_desc(shape->g, shape->vars[k], &d);
        pdnn_node v;
        if (pdnn_graph_variable(n->g, NULL, "/cpu:0", &d, PDNN_INIT_ZEROS, 0, NULL, &v) ||
            pdnn_graph_allreduce(n->g, NULL, "/cpu:0", v, &n->grads[k]))
            die("comm graph");
    }
    n->nv = shape->nv;
}

typedef struct timing {
    double ms;
    pdnn_allreduce_stats st;
} timing;

static timing run(net *n, int distributed, int overlap, int64_t bucket, int steps, int feeds)
{
    pdnn_session_config cfg;
    pdnn_session_config_init(&cfg);
    cfg.distributed = distributed ? PDNN_DISTRIBUTED_MPI : PDNN_DISTRIBUTED_NONE;
    cfg.allreduce_overlap = overlap;
    cfg.allreduce_bucket_bytes = bucket;
    pdnn_session *s = NULL;
    if (pdnn_session_create(n->g, &cfg, &s))
        die("session");
    pdnn_device *host = NULL;
    pdnn_tensor *fv[2] = {NULL, NULL};
    pdnn_node fn[2] = {n->x, n->y};
    if (feeds) {
        pdnn_tensor_desc xd, yd;
        pdnn_graph_node_desc(n->g, n->x, &xd);
        pdnn_graph_node_desc(n->g, n->y, &yd);
        if (pdnn_device_find(pdnn_session_context(s), "/cpu:0", &host) || pdnn_tensor_create(host, &xd, &fv[0]) ||
            pdnn_tensor_create(host, &yd, &fv[1]))
            die("feeds");
        const int64_t nx = pdnn_tensor_desc_bytes(&xd) / 4, ny = n->batch;
        float *xb = malloc(sizeof(float) * (size_t)nx);
        int32_t *yb = malloc(sizeof(int32_t) * (size_t)ny);
        for (int64_t i = 0; i < nx; i++)
            xb[i] = (float)((i * 7919) % 255) / 255.0f;
        for (int64_t i = 0; i < ny; i++)
            yb[i] = (int32_t)(i % 10);
        if (pdnn_tensor_write(fv[0], xb, sizeof(float) * (size_t)nx) ||
            pdnn_tensor_write(fv[1], yb, sizeof(int32_t) * (size_t)ny))
            die("writing the feeds");
        free(xb);
        free(yb);
    }
    pdnn_tensor **out = calloc((size_t)n->nv, sizeof *out);
    double t0 = 0;
    pdnn_allreduce_stats before = {0};
    for (int it = 0; it <= steps; it++) {
        if (it == 1) { /* the first run builds kernels: not timed */
            MPI_Barrier(MPI_COMM_WORLD);
            pdnn_session_allreduce_stats(s, &before);
            t0 = now();
        }
        if (pdnn_session_run(s, fn, fv, feeds ? 2 : 0, n->grads, n->nv, out))
            die("run");
        for (int k = 0; k < n->nv; k++) {
            pdnn_tensor_release(out[k]);
            out[k] = NULL;
        }
    }
    timing t;
    t.ms = 1e3 * (now() - t0) / steps;
    pdnn_session_allreduce_stats(s, &t.st);
    t.st.buckets -= before.buckets;
    t.st.bytes -= before.bytes;
    t.st.comm_seconds -= before.comm_seconds;
    t.st.wait_seconds -= before.wait_seconds;
    /* The slowest rank's time is the step's. */
    MPI_Allreduce(MPI_IN_PLACE, &t.ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    free(out);
    pdnn_tensor_release(fv[0]);
    pdnn_tensor_release(fv[1]);
    pdnn_session_destroy(s);
    return t;
}

int main(int argc, char **argv)
{
    int provided = 0, rank = 0, size = 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || (strcmp(argv[1], "mnist") != 0 && strcmp(argv[1], "resnet50") != 0)) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np N %s mnist|resnet50 [DEVICE] [BATCH] [STEPS] [BUCKET_MB]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    const char *model = argv[1];
    const char *dev = argc > 2 ? argv[2] : "/gpu:0";
    const int64_t batch = argc > 3 ? atoll(argv[3]) : strcmp(model, "mnist") == 0 ? 64 : 2;
    const int steps = argc > 4 ? atoi(argv[4]) : 5;
    const int64_t bucket = (argc > 5 ? atoll(argv[5]) : 4) << 20;
    if (batch < 1 || steps < 1 || bucket < 1) {
        if (rank == 0)
            fprintf(stderr, "bench_allreduce: BATCH, STEPS and BUCKET_MB must be positive\n");
        MPI_Finalize();
        return 2;
    }
    net plain = {.dev = dev, .batch = batch, .seed = 1}, dist = {.dev = dev, .batch = batch, .seed = 1, .with_ar = 1},
        comm = {0};
    build(&plain, model);
    build(&dist, model);
    build_comm(&comm, &plain);
    int64_t params = 0;
    for (int k = 0; k < plain.nv; k++) {
        pdnn_tensor_desc d;
        pdnn_graph_node_desc(plain.g, plain.vars[k], &d);
        params += pdnn_tensor_desc_bytes(&d) / 4;
    }
    timing tc = run(&plain, 0, 1, bucket, steps, 1);
    timing ta = run(&comm, 1, 1, bucket, steps, 0);
    timing ts = run(&dist, 1, 0, bucket, steps, 1);
    timing to = run(&dist, 1, 1, bucket, steps, 1);
    if (rank == 0) {
        double hidden = ta.ms > 0 ? (tc.ms + ta.ms - to.ms) / ta.ms : 0;
        double own = to.st.comm_seconds > 0 ? 1.0 - to.st.wait_seconds / to.st.comm_seconds : 0;
        printf("| %s | %d | %s | %lld | %.1f M / %.1f MB | %lld | %.1f | %.1f | %.1f | %.1f | %.0f%% | %.0f%% |\n",
               model, size, dev, (long long)batch, (double)params / 1e6, (double)params * 4 / 1e6,
               (long long)(to.st.buckets / steps), tc.ms, ta.ms, ts.ms, to.ms, 100 * hidden, 100 * own);
    }
    pdnn_graph_destroy(plain.g);
    pdnn_graph_destroy(dist.g);
    pdnn_graph_destroy(comm.g);
    MPI_Finalize();
    return 0;
}
