/* The distributed session's C API, run by tests/test_mpi.sh under
 * `mpirun -np N` (and once without mpirun, as one rank):
 *   - AllReduce nodes give the mean over the ranks, exactly, with buckets
 *     small enough that the tensors spread over several (and one tensor
 *     larger than a bucket), in overlap mode and not;
 *   - a run that fetches one AllReduce runs its whole bucket;
 *   - pdnn_session_broadcast_variables gives every rank root's values;
 *   - pdnn_session_allreduce_values sums, mins and maxes host doubles
 *     (and leaves them alone in a plain session);
 *   - rank/size and the statistics; placement logs say task:RANK;
 *   - refusals: AllReduce in a session that is not distributed, a bad
 *     root, ranks whose graphs differ (a clear error on every rank, no
 *     hang).
 * Prints "ok rank R" and exits 0, or names the failed check and exits 1. */
#include <mpi.h>
#include <polydnn.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failed;

#define CHECK(cond, ...)                                                                                              \
    do {                                                                                                              \
        if (!(cond)) {                                                                                                \
            fprintf(stderr, "rank %d: FAIL line %d: ", rank, __LINE__);                                              \
            fprintf(stderr, __VA_ARGS__);                                                                             \
            fprintf(stderr, " (last error: %s)\n", pdnn_last_error());                                               \
            failed = 1;                                                                                               \
        }                                                                                                             \
    } while (0)

static int saw_task;
static void log_line(void *user, const char *line)
{
    (void)user;
    char want[64];
    snprintf(want, sizeof want, "/job:worker/replica:0/task:%d/device:CPU:0", rank);
    if (strstr(line, "AllReduce") && strstr(line, want))
        saw_task = 1;
}

/* Three placeholders of 3000, 5 and 70 floats (rank-dependent values),
 * each through AllReduce; buckets of 4 KiB: {3000}, {5, 70}. */
static void allreduce_means(int overlap)
{
    const int64_t lens[3] = {3000, 5, 70};
    pdnn_graph *g = NULL;
    pdnn_node ph[3], ar[3];
    CHECK(pdnn_graph_create(&g) == PDNN_SUCCESS, "graph");
    for (int k = 0; k < 3; k++) {
        pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_LAYOUT_X, {lens[k], 1, 1, 1}, 0};
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", k);
        CHECK(pdnn_graph_placeholder(g, nm, "/cpu:0", &d, &ph[k]) == PDNN_SUCCESS, "placeholder");
    }
    for (int k = 0; k < 3; k++)
        CHECK(pdnn_graph_allreduce(g, NULL, "/cpu:0", ph[k], &ar[k]) == PDNN_SUCCESS, "allreduce node");
    pdnn_session_config cfg;
    pdnn_session_config_init(&cfg);
    CHECK(cfg.allreduce_overlap == 1, "overlap is the default");
    cfg.distributed = PDNN_DISTRIBUTED_MPI;
    cfg.allreduce_bucket_bytes = 4096;
    cfg.allreduce_overlap = overlap;
    cfg.log_device_placement = 1;
    cfg.log = log_line;
    MPI_Comm world = MPI_COMM_WORLD;
    cfg.mpi_comm = &world;
    pdnn_session *s = NULL;
    saw_task = 0;
    CHECK(pdnn_session_create(g, &cfg, &s) == PDNN_SUCCESS, "distributed session");
    CHECK(saw_task, "the placement log names /job:worker/replica:0/task:%d", rank);
    int r = -1, n = -1;
    CHECK(s && pdnn_session_rank(s, &r, &n) == PDNN_SUCCESS && r == rank && n == size, "rank %d size %d", r, n);
    pdnn_context *ctx = s ? pdnn_session_context(s) : NULL;
    pdnn_device *host = NULL;
    CHECK(ctx && pdnn_device_find(ctx, "/cpu:0", &host) == PDNN_SUCCESS, "host");
    pdnn_tensor *in[3] = {0}, *out[3] = {0};
    for (int k = 0; k < 3 && host; k++) {
        pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_LAYOUT_X, {lens[k], 1, 1, 1}, 0};
        float *v = malloc(sizeof(float) * (size_t)lens[k]);
        for (int64_t i = 0; i < lens[k]; i++) /* sums of small integers: exact in float */
            v[i] = (float)((rank + 1) * (i % 7 + 1) + k);
        CHECK(pdnn_tensor_create(host, &d, &in[k]) == PDNN_SUCCESS && pdnn_tensor_write(in[k], v, sizeof(float) * (size_t)lens[k]) == PDNN_SUCCESS, "input");
        free(v);
    }
    for (int rep = 0; rep < 2 && host; rep++) { /* twice: the buckets are reused */
        CHECK(pdnn_session_run(s, ph, in, 3, ar, 3, out) == PDNN_SUCCESS, "run %d", rep);
        for (int k = 0; k < 3; k++) {
            float *v = malloc(sizeof(float) * (size_t)lens[k]);
            CHECK(out[k] && pdnn_tensor_read(out[k], v, sizeof(float) * (size_t)lens[k]) == PDNN_SUCCESS, "read");
            /* mean over r of (r+1)(i%7+1)+k = (size+1)/2 (i%7+1) + k */
            for (int64_t i = 0; i < lens[k] && out[k]; i++) {
                const double want = (size + 1) / 2.0 * (double)(i % 7 + 1) + k;
                if (fabs(v[i] - want) > 1e-6 * fabs(want)) {
                    CHECK(0, "overlap %d: AllReduce %d[%lld] = %g, want %g", overlap, k, (long long)i, v[i], want);
                    break;
                }
            }
            free(v);
            pdnn_tensor_release(out[k]);
            out[k] = NULL;
        }
    }
    /* One fetch: its bucket (x1 and x2 share one) runs whole, on every rank. */
    pdnn_tensor *one = NULL;
    CHECK(host && pdnn_session_run(s, ph, in, 3, &ar[2], 1, &one) == PDNN_SUCCESS, "one fetch");
    pdnn_tensor_release(one);
    pdnn_allreduce_stats st = {0};
    CHECK(s && pdnn_session_allreduce_stats(s, &st) == PDNN_SUCCESS, "stats");
    CHECK(st.buckets == 5 && st.bytes == 2 * 4 * (5 + 3000 + 70) + 4 * (5 + 70),
          "stats: %lld buckets %lld bytes (want 5 and %d)", (long long)st.buckets, (long long)st.bytes,
          2 * 4 * (5 + 3000 + 70) + 4 * (5 + 70));
    CHECK(st.comm_seconds >= 0 && st.wait_seconds >= 0, "times");
    for (int k = 0; k < 3; k++)
        pdnn_tensor_release(in[k]);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

/* Variables seeded by rank differ until broadcast; then all equal root's. */
static void broadcast(void)
{
    pdnn_graph *g = NULL;
    pdnn_node v;
    pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_NCHW, {4, 3, 5, 5}, 0};
    CHECK(pdnn_graph_create(&g) == PDNN_SUCCESS, "graph");
    CHECK(pdnn_graph_variable(g, "w", "/cpu:0", &d, PDNN_INIT_HE_NORMAL, 100 + (uint64_t)rank, NULL, &v) ==
              PDNN_SUCCESS, "variable");
    pdnn_session_config cfg;
    pdnn_session_config_init(&cfg);
    pdnn_session *s = NULL;
    CHECK(pdnn_session_create(g, &cfg, &s) == PDNN_SUCCESS, "plain session");
    CHECK(pdnn_session_broadcast_variables(s, 0) == PDNN_ERR_INVALID_ARGUMENT &&
              strstr(pdnn_last_error(), "not distributed"), "broadcast in a plain session");
    double one[2] = {rank + 1.5, -3.0};
    CHECK(pdnn_session_allreduce_values(s, one, 2, PDNN_REDUCE_SUM) == PDNN_SUCCESS && one[0] == rank + 1.5 &&
              one[1] == -3.0, "a plain session's values stay as they are");
    pdnn_session_destroy(s);
    cfg.distributed = PDNN_DISTRIBUTED_MPI;
    CHECK(pdnn_session_create(g, &cfg, &s) == PDNN_SUCCESS, "distributed session (no AllReduce)");
    CHECK(pdnn_session_broadcast_variables(s, size) == PDNN_ERR_INVALID_ARGUMENT, "root out of range");
    /* rank + 1 and its negation: sum n(n+1)/2, min 1, max n. */
    double sum[2] = {rank + 1.0, -(rank + 1.0)}, lo[2] = {sum[0], sum[1]}, hi[2] = {sum[0], sum[1]};
    CHECK(pdnn_session_allreduce_values(s, sum, 2, PDNN_REDUCE_SUM) == PDNN_SUCCESS &&
              sum[0] == size * (size + 1) / 2.0 && sum[1] == -sum[0], "sum %g %g", sum[0], sum[1]);
    CHECK(pdnn_session_allreduce_values(s, lo, 2, PDNN_REDUCE_MIN) == PDNN_SUCCESS && lo[0] == 1.0 &&
              lo[1] == -size, "min %g %g", lo[0], lo[1]);
    CHECK(pdnn_session_allreduce_values(s, hi, 2, PDNN_REDUCE_MAX) == PDNN_SUCCESS && hi[0] == size &&
              hi[1] == -1.0, "max %g %g", hi[0], hi[1]);
    CHECK(pdnn_session_allreduce_values(s, hi, 1, (pdnn_reduce_op)7) == PDNN_ERR_INVALID_ARGUMENT &&
              pdnn_session_allreduce_values(s, NULL, 1, PDNN_REDUCE_SUM) == PDNN_ERR_INVALID_ARGUMENT &&
              pdnn_session_allreduce_values(s, hi, -1, PDNN_REDUCE_SUM) == PDNN_ERR_INVALID_ARGUMENT,
          "bad op, NULL values and negative n are refused");
    const int root = size - 1;
    CHECK(pdnn_session_broadcast_variables(s, root) == PDNN_SUCCESS, "broadcast");
    float mine[300], theirs[300];
    CHECK(pdnn_session_variable_read(s, v, mine, sizeof mine) == PDNN_SUCCESS, "read");
    if (rank == root)
        memcpy(theirs, mine, sizeof mine);
    MPI_Bcast(theirs, 300, MPI_FLOAT, root, MPI_COMM_WORLD);
    CHECK(memcmp(mine, theirs, sizeof mine) == 0, "rank %d's variable differs from root %d's", rank, root);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(g);
}

/* Refusals that must not hang: AllReduce without a distributed session
 * (local), and ranks whose AllReduce nodes differ (collective). */
static void refusals(void)
{
    pdnn_graph *g = NULL;
    pdnn_node x, y;
    pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_LAYOUT_X, {8 + (rank == size - 1 && size > 1), 1, 1, 1}, 0};
    CHECK(pdnn_graph_create(&g) == PDNN_SUCCESS, "graph");
    CHECK(pdnn_graph_placeholder(g, "x", NULL, &d, &x) == PDNN_SUCCESS, "placeholder");
    CHECK(pdnn_graph_allreduce(g, "sum_x", NULL, x, &y) == PDNN_SUCCESS, "allreduce");
    pdnn_session *s = NULL;
    CHECK(pdnn_session_create(g, NULL, &s) == PDNN_ERR_INVALID_ARGUMENT && strstr(pdnn_last_error(), "sum_x") &&
              strstr(pdnn_last_error(), "distributed"), "AllReduce in a plain session: %s", pdnn_last_error());
    pdnn_session_config cfg;
    pdnn_session_config_init(&cfg);
    cfg.distributed = PDNN_DISTRIBUTED_MPI;
    pdnn_status st = pdnn_session_create(g, &cfg, &s);
    if (size > 1)
        CHECK(st == PDNN_ERR_INVALID_ARGUMENT && strstr(pdnn_last_error(), "graphs differ"),
              "different graphs: status %d", (int)st);
    else
        CHECK(st == PDNN_SUCCESS, "one rank");
    pdnn_session_destroy(s);
    cfg.distributed = 7;
    CHECK(pdnn_session_create(g, &cfg, &s) == PDNN_ERR_INVALID_ARGUMENT, "distributed 7");
    pdnn_tensor_desc i32 = {PDNN_INT32, PDNN_LAYOUT_X, {8, 1, 1, 1}, 0};
    pdnn_node xi;
    CHECK(pdnn_graph_placeholder(g, "xi", NULL, &i32, &xi) == PDNN_SUCCESS, "int placeholder");
    CHECK(pdnn_graph_allreduce(g, NULL, NULL, xi, &y) == PDNN_ERR_INVALID_ARGUMENT, "int32 AllReduce");
    pdnn_graph_destroy(g);
}

int main(void)
{
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    allreduce_means(1);
    allreduce_means(0);
    broadcast();
    refusals();
    int any = failed;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!failed)
        printf("ok rank %d of %d%s\n", rank, size, any ? " (another rank failed)" : "");
    MPI_Finalize();
    return any;
}
