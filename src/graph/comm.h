/* The session's MPI side (comm.c): a duplicated communicator, gradient
 * buckets all-reduced by a session thread with MPI_Iallreduce, broadcasts
 * and timeouts. Built without MPI, pdnn__comm_create refuses. */
#ifndef POLYDNN_COMM_H
#define POLYDNN_COMM_H

#include "core/context.h"

typedef struct pdnn__comm pdnn__comm;

/* Duplicates *(MPI_Comm *)user_comm (NULL: MPI_COMM_WORLD) with errors
 * returned, not fatal. timeout: seconds a collective may wait (<= 0: the
 * default). */
pdnn_status pdnn__comm_create(void *user_comm, double timeout, pdnn__comm **out);
/* Waits for started buckets, stops the thread, frees the communicator
 * (unless MPI is finalized already). */
void pdnn__comm_destroy(pdnn__comm *c);
int pdnn__comm_rank(const pdnn__comm *c);
int pdnn__comm_size(const pdnn__comm *c);

/* Collective: n buckets of floats[b] floats each; checks that every rank
 * has the same buckets (the same AllReduce nodes), then starts the thread. */
pdnn_status pdnn__comm_set_buckets(pdnn__comm *c, int n, const int64_t *floats);
float *pdnn__comm_bucket(pdnn__comm *c, int b);
/* Hands bucket b (filled) to the thread: summed over the ranks, then
 * divided by the size, in place. */
pdnn_status pdnn__comm_start(pdnn__comm *c, int b);
/* Blocks until bucket b is done; its error, naming the bucket, if it failed. */
pdnn_status pdnn__comm_wait(pdnn__comm *c, int b);
/* Whether bucket b was started and not yet waited for. */
int pdnn__comm_pending(const pdnn__comm *c, int b);

/* Collective, between runs: root's bytes to every rank. */
pdnn_status pdnn__comm_bcast(pdnn__comm *c, void *buf, int64_t bytes, int root);

/* Collective, between runs: n doubles combined over the ranks by op, in
 * place, under the same deadline as the buckets. */
pdnn_status pdnn__comm_allreduce_values(pdnn__comm *c, double *values, int n, pdnn_reduce_op op);

void pdnn__comm_stats(const pdnn__comm *c, pdnn_allreduce_stats *out);

#endif
