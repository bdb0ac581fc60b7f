/* An imported graph's batch plan (graph_batch.c): built by the ONNX
 * importer from imports at several batches, applied by
 * pdnn_graph_set_batch. */
#ifndef POLYDNN_GRAPH_BATCH_H
#define POLYDNN_GRAPH_BATCH_H

#include "graph/graph.h"

typedef struct pdnn__batch_plan pdnn__batch_plan;

void pdnn__batch_plan_free(pdnn__batch_plan *p);

/* Fits g0's integers (g0 imported at batch b0) as a * batch + c from the
 * same model imported at ba and bb, and checks the fit at b0. What does
 * not fit is kept as the reason set_batch gives; only running out of
 * memory fails. */
pdnn_status pdnn__batch_plan_fit(pdnn_graph *g0, int64_t b0, const pdnn_graph *ga, int64_t ba, const pdnn_graph *gb,
                                 int64_t bb);

/* Marks g0 as unable to change its batch, saying why (an import at another
 * batch failed). */
void pdnn__batch_plan_refuse(pdnn_graph *g, int64_t b0, const char *why);

#endif
