/* pdnn_graph_gradients' state and emitters (gradients.c), shared with the
 * gradients of the N-d ops (graph_grad_nd.c). */
#ifndef POLYDNN_GRAPH_GRADIENTS_H
#define POLYDNN_GRAPH_GRADIENTS_H

#include "graph/graph.h"

typedef struct pdnn__grad_state {
    pdnn_graph *g;
    int **parts;   /* parts[i]: gradient contributions to node i's output */
    int *n_parts;
    int *cap;
    char prefix[64]; /* "gradients" or "gradients_1", ... */
} pdnn__grad_state;

/* Adds grad to node i's gradient contributions. */
pdnn_status pdnn__grad_part(pdnn__grad_state *s, int i, int grad);
/* A gradient node for forward node f (named under f's "_grad" scope,
 * colocated with f): op with output out and inputs in; its other fields
 * zero but f's conv and pool. */
pdnn_status pdnn__grad_emit(pdnn__grad_state *s, int f, const char *type, pdnn__node_op op,
                            const pdnn_tensor_desc *out, const pdnn_node *in, int n_in, pdnn_node *res);

/* graph_grad_nd.c: the gradients of node f's inputs (those relevant
 * marks) given dy, for the N-d ops: broadcast binary nodes, activations,
 * reductions, layer norm, softmax on N-d tensors, data movement, concat
 * and broadcast batched matmul. *handled is 0 where f is none of them
 * (gradients.c then handles it). */
pdnn_status pdnn__grad_nd(pdnn__grad_state *s, int f, int dy, const char *relevant, int *handled);

#endif
