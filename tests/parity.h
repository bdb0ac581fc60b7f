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

/* The data-movement ops' cases (parity_index.c, test mode): slice,
 * split, expand, gather, where, pad_nd, resize over ranks 0 to 6. */
int parity_index_count(int op, const char *set);
void parity_index_run(pdnn_device *const *devs, int ndev, int op, const char *set, const char *algo);

#endif
