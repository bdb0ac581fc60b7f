/* The session's MPI side. One thread per distributed session owns the
 * all-reduces (Horovod's background thread): the run hands it a bucket
 * as soon as the bucket's gradients are staged, and goes on with the
 * backward pass while the thread drives MPI_Iallreduce with MPI_Test, so
 * MPI progresses whatever the run's thread is blocked on. Every wait has
 * a deadline: a rank that died or hangs ends the others' runs with an
 * error naming the collective, never a hang. */
#include "config.h" /* PDNN_HAVE_MPI */
#include "graph/comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PDNN_HAVE_MPI
/* clang's MPI checker wants an MPI_Wait for each request; poll_req
 * completes them with MPI_Test (a deadline instead of a hang), or, past
 * the deadline, abandons them on purpose. */
// NOLINTBEGIN(clang-analyzer-optin.mpi.MPI-Checker)
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

enum { B_IDLE, B_QUEUED, B_DONE, B_FAILED };

typedef struct bucket {
    float *buf;
    int64_t floats;
    int state;
    char err[400];
} bucket;

struct pdnn__comm {
    MPI_Comm comm;
    int have_comm;
    int rank, size;
    double timeout;
    int n;
    bucket *b;
    int *queue; /* ring of n + 1 (full never looks empty): each bucket is queued at most once at a time */
    int q_head, q_tail;
    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    /* MPI_THREAD_SERIALIZED: one thread in MPI at a time, the run's
     * collectives or the session thread's heartbeats. */
    pthread_mutex_t mpi_mu;
    /* Heartbeats: every rank tells every other one it is alive about once
     * a second, from the session thread, whether it waits in a collective
     * or computes (training, evaluating); a wait times out only once some
     * rank has been silent for the whole timeout (stopped or dead), and
     * names it. alive[r]: when (our clock) rank r was last heard; -1
     * never. */
    int alive_out;
    double *alive, next_alive;
    double hb_period; /* a quarter of the timeout, at most 1 s: jitter of a
                       * loaded machine must not make a live rank look silent */
    MPI_Request *alive_req; /* per rank, our last heartbeat to it */
    int broken; /* a collective timed out: its request is abandoned */
    char broken_why[400]; /* that collective's message, given for every later one */
    pdnn_allreduce_stats stats;
};

/* Largest piece one MPI call moves: counts are ints. */
enum { CHUNK_FLOATS = 1 << 28 };

static void mpi_text(int rc, char *buf, size_t len)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(rc, s, &n) != MPI_SUCCESS)
        snprintf(s, sizeof s, "MPI error %d", rc);
    snprintf(buf, len, "%s", s);
}

enum { ALIVE_TAG = 0x5044 };

/* One heartbeat step, c->mpi_mu held: with send, once a period, "alive"
 * to every other rank whose last one has gone out; then every heartbeat
 * that has come in noted. */
static void heartbeat(pdnn__comm *c, double now, int send)
{
    if (!c->alive)
        return;
    if (send && now >= c->next_alive) {
        c->next_alive = now + c->hb_period;
        for (int r = 0; r < c->size; r++) {
            int done = 1;
            if (r == c->rank)
                continue;
            if (c->alive_req[r] != MPI_REQUEST_NULL)
                MPI_Test(&c->alive_req[r], &done, MPI_STATUS_IGNORE);
            if (done)
                MPI_Isend(&c->alive_out, 1, MPI_INT, r, ALIVE_TAG, c->comm, &c->alive_req[r]);
        }
    }
    for (;;) {
        MPI_Status stat;
        int flag = 0;
        if (MPI_Iprobe(MPI_ANY_SOURCE, ALIVE_TAG, c->comm, &flag, &stat) != MPI_SUCCESS || !flag)
            break;
        int v = 0;
        if (MPI_Recv(&v, 1, MPI_INT, stat.MPI_SOURCE, ALIVE_TAG, c->comm, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
            stat.MPI_SOURCE >= 0 && stat.MPI_SOURCE < c->size)
            c->alive[stat.MPI_SOURCE] = now;
    }
}

/* When rank r last showed it was alive, for a wait that began at t0. */
static double last_sign(const pdnn__comm *c, int r, double t0)
{
    return c->alive[r] > t0 ? c->alive[r] : t0;
}

/* Whether some other rank has been silent for the whole timeout by t. */
static int someone_silent(const pdnn__comm *c, double t0, double t)
{
    for (int r = 0; r < c->size; r++)
        if (r != c->rank && t - last_sign(c, r, t0) > c->timeout)
            return 1;
    return 0;
}

/* After a timeout: the ranks silent for the whole timeout (stopped, dead,
 * or not there yet), appended to why. */
static void name_silent(const pdnn__comm *c, double t0, double now, char *why, size_t len)
{
    char list[256] = "";
    size_t used = 0;
    int n = 0;
    for (int r = 0; r < c->size && used < sizeof list; r++)
        if (r != c->rank && now - last_sign(c, r, t0) > c->timeout) {
            int w = snprintf(list + used, sizeof list - used, "%s%d", n ? ", " : "", r);
            used += w > 0 ? (size_t)w : 0;
            n++;
        }
    size_t have = strlen(why);
    if (n && have < len)
        snprintf(why + have, len - have, "; rank%s %s %s not been heard from in it for the last %.0f s",
                 n > 1 ? "s" : "", list, n > 1 ? "have" : "has", c->timeout);
}

/* Tests req until it completes, the deadline passes (-1) or MPI fails
 * (0). The first few milliseconds spin (yielding the core to the compute
 * threads), then the tests are spaced out by 50 us. With the heartbeat
 * table (hb), the deadline moves on while every other rank is heard
 * from (a slow rank is still computing); hb 2: the session's last
 * collective, which takes heartbeats but sends none, under the plain
 * deadline. */
static int poll_req(pdnn__comm *c, MPI_Request *req, const char *what, int hb, char *why, size_t len)
{
    const double t0 = pdnn__now();
    hb = hb && c->alive ? hb : 0;
    for (unsigned spin = 0;; spin++) {
        pthread_mutex_lock(&c->mpi_mu);
        int flag = 0, rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        pthread_mutex_unlock(&c->mpi_mu);
        if (rc != MPI_SUCCESS) {
            char m[256];
            mpi_text(rc, m, sizeof m);
            snprintf(why, len, "%s failed: %s", what, m);
            return 0;
        }
        if (flag)
            return 1;
        if ((spin & 63) == 0) {
            double t = pdnn__now();
            if (hb) {
                pthread_mutex_lock(&c->mpi_mu);
                heartbeat(c, t, hb == 1);
                pthread_mutex_unlock(&c->mpi_mu);
            }
            if (t - t0 > c->timeout && (hb != 1 || someone_silent(c, t0, t))) {
                snprintf(why, len,
                         "%s did not complete within %.0f s (collective timeout): another rank has stopped, "
                         "failed or is far behind",
                         what, c->timeout);
                if (hb == 1)
                    name_silent(c, t0, t, why, len);
                return -1;
            }
            if (t - t0 > 0.002) {
                struct timespec ts = {0, 50000};
                nanosleep(&ts, NULL);
                continue;
            }
        }
        sched_yield();
    }
}

/* Sum over the ranks in place, then the mean. */
static int allreduce(pdnn__comm *c, int id, bucket *b, char *why, size_t len)
{
    for (int64_t off = 0; off < b->floats; off += CHUNK_FLOATS) {
        int count = (int)(b->floats - off < CHUNK_FLOATS ? b->floats - off : CHUNK_FLOATS);
        MPI_Request req;
        pthread_mutex_lock(&c->mpi_mu);
        int rc = MPI_Iallreduce(MPI_IN_PLACE, b->buf + off, count, MPI_FLOAT, MPI_SUM, c->comm, &req);
        pthread_mutex_unlock(&c->mpi_mu);
        char what[96];
        snprintf(what, sizeof what, "the all-reduce of gradient bucket %d (%lld bytes)", id,
                 (long long)(b->floats * 4));
        if (rc != MPI_SUCCESS) {
            char m[256];
            mpi_text(rc, m, sizeof m);
            snprintf(why, len, "starting %s: %s", what, m);
            return 0;
        }
        int r = poll_req(c, &req, what, 1, why, len);
        if (r <= 0)
            return r;
    }
    const float inv = 1.0f / (float)c->size;
    for (int64_t i = 0; i < b->floats; i++)
        b->buf[i] *= inv;
    return 1;
}

static void *comm_main(void *arg)
{
    pdnn__comm *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        /* Idle (the run computes): a heartbeat a period. */
        while (!c->stop && c->q_head == c->q_tail) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            const long ns = (long)(c->hb_period * 1e9);
            until.tv_sec += (until.tv_nsec + ns) / 1000000000L;
            until.tv_nsec = (until.tv_nsec + ns) % 1000000000L;
            if (pthread_cond_timedwait(&c->cv, &c->mu, &until) != 0 && !c->stop && !c->broken) {
                pthread_mutex_unlock(&c->mu);
                pthread_mutex_lock(&c->mpi_mu);
                heartbeat(c, pdnn__now(), 1);
                pthread_mutex_unlock(&c->mpi_mu);
                pthread_mutex_lock(&c->mu);
            }
        }
        if (c->q_head == c->q_tail)
            break; /* stopping, nothing queued */
        int id = c->queue[c->q_head];
        c->q_head = (c->q_head + 1) % (c->n + 1);
        bucket *b = &c->b[id];
        int broken = c->broken;
        pthread_mutex_unlock(&c->mu);
        char why[400] = "";
        const double t0 = pdnn__now();
        int r = broken ? 0 : allreduce(c, id, b, why, sizeof why);
        if (broken)
            snprintf(why, sizeof why, "%s", c->broken_why);
        const double t1 = pdnn__now();
        pthread_mutex_lock(&c->mu);
        c->stats.buckets++;
        c->stats.bytes += b->floats * 4;
        c->stats.comm_seconds += t1 - t0;
        if (r < 0 && !c->broken) {
            c->broken = 1;
            snprintf(c->broken_why, sizeof c->broken_why, "%s", why);
        }
        b->state = r > 0 ? B_DONE : B_FAILED;
        snprintf(b->err, sizeof b->err, "%s", why);
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static pdnn_status not_ready(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "a distributed session needs MPI initialized (MPI_Init_thread with "
                           "MPI_THREAD_SERIALIZED or more) and not yet finalized");
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_SERIALIZED)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "MPI was initialized with thread support %d; a distributed session all-reduces from a "
                           "thread of its own and needs MPI_THREAD_SERIALIZED (%d) or more (MPI_Init_thread)",
                           level, MPI_THREAD_SERIALIZED);
    return PDNN_SUCCESS;
}

pdnn_status pdnn__comm_create(void *user_comm, double timeout, pdnn__comm **out)
{
    *out = NULL;
    pdnn_status st = not_ready();
    if (st != PDNN_SUCCESS)
        return st;
    pdnn__comm *c = calloc(1, sizeof *c);
    if (!c)
        return pdnn__host_oom("pdnn_session_create", "the communicator state", sizeof *c);
    c->timeout = timeout;
    if (c->timeout <= 0) {
        const char *e = getenv("POLYDNN_COLLECTIVE_TIMEOUT");
        char *end = NULL;
        double v = e ? strtod(e, &end) : 0;
        c->timeout = e && end != e && *end == '\0' && v > 0 ? v : 120.0;
    }
    c->hb_period = c->timeout / 4 < 1.0 ? c->timeout / 4 : 1.0;
    if (c->hb_period < 0.01)
        c->hb_period = 0.01;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    pthread_mutex_init(&c->mpi_mu, NULL);
    MPI_Comm base = user_comm ? *(MPI_Comm *)user_comm : MPI_COMM_WORLD;
    MPI_Request req;
    char why[400];
    int rc = MPI_Comm_idup(base, &c->comm, &req);
    int r = rc == MPI_SUCCESS ? poll_req(c, &req, "duplicating the communicator", 0, why, sizeof why) : 0;
    if (rc != MPI_SUCCESS)
        mpi_text(rc, why, sizeof why);
    if (r <= 0) {
        pdnn__comm_destroy(c);
        return pdnn__error(PDNN_ERR_INTERNAL, "pdnn_session_create: %s", why);
    }
    c->have_comm = 1;
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->size);
    c->alive = malloc((size_t)c->size * sizeof *c->alive);
    c->alive_req = malloc((size_t)c->size * sizeof *c->alive_req);
    if (!c->alive || !c->alive_req) {
        const uint64_t bytes = (uint64_t)c->size * (sizeof *c->alive + sizeof *c->alive_req);
        free(c->alive);
        free(c->alive_req);
        c->alive = NULL;
        c->alive_req = NULL;
        pdnn__comm_destroy(c);
        return pdnn__host_oom("pdnn_session_create", "the heartbeat table", bytes);
    }
    for (int r = 0; r < c->size; r++) {
        c->alive[r] = -1.0;
        c->alive_req[r] = MPI_REQUEST_NULL;
    }
    *out = c;
    return PDNN_SUCCESS;
}

void pdnn__comm_destroy(pdnn__comm *c)
{
    if (!c)
        return;
    if (c->thread_started) {
        pthread_mutex_lock(&c->mu);
        c->stop = 1;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->thread, NULL);
    }
    int fin = 0;
    MPI_Finalized(&fin);
    if (c->have_comm && !fin) {
        /* Every rank's thread has stopped sending once all are past a
         * barrier (which takes heartbeats, sends none); then those still
         * going out complete on their own, and those come in are taken,
         * so that none waits on a freed communicator. */
        if (c->alive && !c->broken && c->thread_started) {
            MPI_Request req;
            char why[400];
            if (MPI_Ibarrier(c->comm, &req) == MPI_SUCCESS && poll_req(c, &req, "ending the session", 2, why,
                                                                        sizeof why) < 0)
                c->broken = 1;
        }
        for (int r = 0; c->alive_req && r < c->size; r++)
            if (c->alive_req[r] != MPI_REQUEST_NULL)
                MPI_Request_free(&c->alive_req[r]);
        heartbeat(c, 0.0, 0);
        if (!c->broken)
            MPI_Comm_free(&c->comm);
    }
    for (int i = 0; i < c->n; i++)
        free(c->b[i].buf);
    free(c->b);
    free(c->queue);
    free(c->alive);
    free(c->alive_req);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->mpi_mu);
    free(c);
}

int pdnn__comm_rank(const pdnn__comm *c) { return c->rank; }
int pdnn__comm_size(const pdnn__comm *c) { return c->size; }

/* FNV-1a over the bucket sizes: the ranks compare min and max of it. */
static uint64_t layout_hash(int n, const int64_t *floats)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = -1; i < n; i++) {
        uint64_t v = i < 0 ? (uint64_t)n : (uint64_t)floats[i];
        for (int k = 0; k < 8; k++) {
            h ^= (v >> (8 * k)) & 0xFF;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}

pdnn_status pdnn__comm_set_buckets(pdnn__comm *c, int n, const int64_t *floats)
{
    uint64_t h = layout_hash(n, floats), lo = 0, hi = 0;
    MPI_Request req[2];
    char why[400];
    int rc = MPI_Iallreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, c->comm, &req[0]);
    int r = rc == MPI_SUCCESS ? poll_req(c, &req[0], "comparing the ranks' graphs", 0, why, sizeof why) : 0;
    if (r > 0) {
        rc = MPI_Iallreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, c->comm, &req[1]);
        r = rc == MPI_SUCCESS ? poll_req(c, &req[1], "comparing the ranks' graphs", 0, why, sizeof why) : 0;
    }
    if (rc != MPI_SUCCESS)
        mpi_text(rc, why, sizeof why);
    if (r <= 0) {
        c->broken = r < 0;
        snprintf(c->broken_why, sizeof c->broken_why, "%s", why);
        return pdnn__error(PDNN_ERR_INTERNAL, "pdnn_session_create (rank %d): %s", c->rank, why);
    }
    if (lo != hi)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_session_create (rank %d): the ranks' graphs differ in their AllReduce nodes (count "
                           "or shapes): every rank must build the same graph",
                           c->rank);
    /* The thread runs without buckets too: it sends the heartbeats. */
    c->b = calloc((size_t)n + 1, sizeof *c->b);
    c->queue = calloc((size_t)n + 1, sizeof *c->queue);
    if (!c->b || !c->queue)
        return pdnn__host_oom("pdnn_session_create", "the gradient buckets", (uint64_t)n * sizeof *c->b);
    c->n = n;
    for (int i = 0; i < n; i++) {
        c->b[i].floats = floats[i];
        c->b[i].buf = malloc((size_t)floats[i] * sizeof(float));
        if (!c->b[i].buf)
            return pdnn__host_oom("pdnn_session_create", "a gradient bucket's staging buffer",
                                  (uint64_t)floats[i] * sizeof(float));
    }
    if (pthread_create(&c->thread, NULL, comm_main, c) != 0)
        return pdnn__error(PDNN_ERR_INTERNAL, "pdnn_session_create: could not start the all-reduce thread");
    c->thread_started = 1;
    return PDNN_SUCCESS;
}

float *pdnn__comm_bucket(pdnn__comm *c, int b) { return c->b[b].buf; }

pdnn_status pdnn__comm_start(pdnn__comm *c, int b)
{
    pthread_mutex_lock(&c->mu);
    c->b[b].state = B_QUEUED;
    c->queue[c->q_tail] = b;
    c->q_tail = (c->q_tail + 1) % (c->n + 1);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return PDNN_SUCCESS;
}

int pdnn__comm_pending(const pdnn__comm *c, int b) { return c->b[b].state != B_IDLE; }

pdnn_status pdnn__comm_wait(pdnn__comm *c, int b)
{
    const double t0 = pdnn__now();
    pthread_mutex_lock(&c->mu);
    while (c->b[b].state == B_QUEUED)
        pthread_cond_wait(&c->cv, &c->mu);
    int ok = c->b[b].state == B_DONE;
    char why[400];
    snprintf(why, sizeof why, "%s", c->b[b].err);
    c->b[b].state = B_IDLE;
    c->stats.wait_seconds += pdnn__now() - t0;
    pthread_mutex_unlock(&c->mu);
    if (!ok)
        return pdnn__error(PDNN_ERR_INTERNAL, "rank %d of %d: %s", c->rank, c->size, why);
    return PDNN_SUCCESS;
}

/* A collective the calling thread started (rc: what starting it returned)
 * driven to its end against the deadline. A timeout breaks the
 * communicator: the request is abandoned, and every later collective
 * fails with this one's message. */
static pdnn_status drive(pdnn__comm *c, int rc, MPI_Request *req, const char *what)
{
    char why[400];
    int r = rc == MPI_SUCCESS ? poll_req(c, req, what, 1, why, sizeof why) : 0;
    if (rc != MPI_SUCCESS)
        mpi_text(rc, why, sizeof why);
    if (r > 0)
        return PDNN_SUCCESS;
    c->broken = r < 0;
    snprintf(c->broken_why, sizeof c->broken_why, "%s", why);
    return pdnn__error(PDNN_ERR_INTERNAL, "rank %d of %d: %s", c->rank, c->size, why);
}

pdnn_status pdnn__comm_bcast(pdnn__comm *c, void *buf, int64_t bytes, int root)
{
    if (c->broken)
        return pdnn__error(PDNN_ERR_INTERNAL, "rank %d of %d: %s", c->rank, c->size, c->broken_why);
    for (int64_t off = 0; off < bytes; off += (int64_t)1 << 30) {
        int count = (int)(bytes - off < ((int64_t)1 << 30) ? bytes - off : (int64_t)1 << 30);
        MPI_Request req;
        pthread_mutex_lock(&c->mpi_mu);
        int rc = MPI_Ibcast((char *)buf + off, count, MPI_BYTE, root, c->comm, &req);
        pthread_mutex_unlock(&c->mpi_mu);
        pdnn_status st = drive(c, rc, &req, "broadcasting the variables");
        if (st != PDNN_SUCCESS)
            return st;
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn__comm_allreduce_values(pdnn__comm *c, double *values, int n, pdnn_reduce_op op)
{
    if (c->broken)
        return pdnn__error(PDNN_ERR_INTERNAL, "rank %d of %d: %s", c->rank, c->size, c->broken_why);
    MPI_Request req;
    const MPI_Op mop = op == PDNN_REDUCE_MIN ? MPI_MIN : op == PDNN_REDUCE_MAX ? MPI_MAX : MPI_SUM;
    pthread_mutex_lock(&c->mpi_mu);
    int rc = MPI_Iallreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, mop, c->comm, &req);
    pthread_mutex_unlock(&c->mpi_mu);
    return drive(c, rc, &req, "the all-reduce of host values");
}

void pdnn__comm_stats(const pdnn__comm *c, pdnn_allreduce_stats *out)
{
    pthread_mutex_lock((pthread_mutex_t *)&c->mu);
    *out = c->stats;
    pthread_mutex_unlock((pthread_mutex_t *)&c->mu);
}

// NOLINTEND(clang-analyzer-optin.mpi.MPI-Checker)
#else /* built without MPI */

struct pdnn__comm {
    int unused;
};

pdnn_status pdnn__comm_create(void *user_comm, double timeout, pdnn__comm **out)
{
    (void)user_comm;
    (void)timeout;
    *out = NULL;
    return pdnn__error(PDNN_ERR_UNSUPPORTED, "a distributed session needs MPI, and this polydnn was built without it "
                                             "(configure --with-mpi; Debian: apt-get install libopenmpi-dev "
                                             "openmpi-bin)");
}
void pdnn__comm_destroy(pdnn__comm *c) { free(c); }
int pdnn__comm_rank(const pdnn__comm *c) { return c ? 0 : 0; }
int pdnn__comm_size(const pdnn__comm *c) { return c ? 1 : 1; }
pdnn_status pdnn__comm_set_buckets(pdnn__comm *c, int n, const int64_t *floats)
{
    (void)c;
    (void)n;
    (void)floats;
    return PDNN_ERR_UNSUPPORTED;
}
float *pdnn__comm_bucket(pdnn__comm *c, int b)
{
    (void)c;
    (void)b;
    return NULL;
}
pdnn_status pdnn__comm_start(pdnn__comm *c, int b)
{
    (void)c;
    (void)b;
    return PDNN_ERR_UNSUPPORTED;
}
pdnn_status pdnn__comm_wait(pdnn__comm *c, int b)
{
    (void)c;
    (void)b;
    return PDNN_ERR_UNSUPPORTED;
}
int pdnn__comm_pending(const pdnn__comm *c, int b)
{
    (void)c;
    (void)b;
    return 0;
}
pdnn_status pdnn__comm_bcast(pdnn__comm *c, void *buf, int64_t bytes, int root)
{
    (void)c;
    (void)buf;
    (void)bytes;
    (void)root;
    return PDNN_ERR_UNSUPPORTED;
}
pdnn_status pdnn__comm_allreduce_values(pdnn__comm *c, double *values, int n, pdnn_reduce_op op)
{
    (void)c;
    (void)values;
    (void)n;
    (void)op;
    return PDNN_ERR_UNSUPPORTED;
}
void pdnn__comm_stats(const pdnn__comm *c, pdnn_allreduce_stats *out)
{
    (void)c;
    memset(out, 0, sizeof *out);
}
#endif
