/* The op-parity harness's accounting (tests/parity.c), for the case files
 * linked into it (parity_train.c): each result is counted under its
 * device's backend and (device, algorithm), and printed as parity.c
 * prints its own. */
#ifndef POLYDNN_TEST_PARITY_H
#define POLYDNN_TEST_PARITY_H

#include "backend.h"

/* a ran case cname on dev with normalised error err, within tolerance. */
void parity_pass(pdnn_device *dev, const pdnn__algo *a, const char *cname, double err);
/* a failed case cname on dev; fmt says how. */
void parity_fail(pdnn_device *dev, const pdnn__algo *a, const char *cname, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* a does not run case cname on dev, for reason why. */
void parity_skip(pdnn_device *dev, const pdnn__algo *a, const char *cname, const char *why);

/* The training ops' cases (parity_train.c, grad mode): relu backward,
 * softmax cross-entropy, optimizer steps. How many of them op (-1: all)
 * and set (NULL: all) select, and running them on devs (host among them
 * or not; host is /device:CPU:0) by every algorithm, or only the one named
 * algo. */
int parity_train_count(int op, const char *set);
void parity_train_run(pdnn_device *host, pdnn_device *const *devs, int ndev, int op, const char *set,
                      const char *algo, int verbose);

/* The N-d cases (parity_nd.c, test mode): binary, matmul, activations and
 * transform on ND tensors of rank 0 to 6; counted and run as above. */
int parity_nd_count(int op, const char *set);
void parity_nd_run(pdnn_device *const *devs, int ndev, int op, const char *set, const char *algo);
/* The storage dtype of the matmul cases above (float32 unless set). */
void parity_nd_set_dtype(pdnn_dtype t);

/* parity_train.c's helpers: calloc or exit, and a tensor on dev with data
 * (NULL: uninitialised), NULL when that fails. */
void *parity_xcalloc(size_t n, size_t size);
pdnn_tensor *parity_make(pdnn_device *dev, const pdnn_tensor_desc *d, const void *data);

/* The N-d math ops' cases (parity_nd_math.c, grad mode): transpose,
 * softmax, layer_norm, reduce; as parity_train_*, without the host. */
int parity_nd_math_count(int op, const char *set);
void parity_nd_math_run(pdnn_device *const *devs, int ndev, int op, const char *set, const char *algo, int verbose);

/* The data-movement ops' cases (parity_index.c, test mode): slice,
 * split, expand, gather, where, pad_nd, resize over ranks 0 to 6. */
int parity_index_count(int op, const char *set);
void parity_index_run(pdnn_device *const *devs, int ndev, int op, const char *set, const char *algo);

/* The float16 and bfloat16 cases (parity_precision.c, test mode, set
 * "precision"): casts, activations, binary, pooling; as parity_nd_*. */
int parity_precision_count(int op, const char *set);
void parity_precision_run(pdnn_device *const *devs, int ndev, int op, const char *set, const char *algo);
/* pdnn_graph_gradients of the N-d ops (parity_graph_grad.c, grad mode,
 * sets gg_*): against finite differences of the host's forward (not
 * with algo named), and layer norm's backward op by algorithm (algo:
 * only it). */
int parity_graph_grad_count(int op, const char *set);
void parity_graph_grad_run(pdnn_device *host, pdnn_device *const *devs, int ndev, int op, const char *set,
                           const char *algo, int verbose);

#endif
