/* oneDNN on the host CPU as a peer of `polydnn bench` (built into the
 * tool only when configure found oneDNN: PDNN_HAVE_DNNL). */
#ifndef POLYDNN_CLI_PEER_DNNL_H
#define POLYDNN_CLI_PEER_DNNL_H

#include <stddef.h>
#include <stdint.h>

/* One convolution as the bench runs it: input N,C,H,W, filter K,C/groups,
 * R,S, output N,K,P,Q; nhwc: activations NHWC and the filter OHWI, else
 * NCHW and OIHW (polydnn's defaults for each layout). No bias. */
typedef struct peer_conv {
    int64_t n, c, h, w, k, r, s, p, q;
    int stride_h, stride_w, dil_h, dil_w; /* dilation 1 = none */
    int pad_top, pad_bottom, pad_left, pad_right;
    int groups;
    int nhwc;
} peer_conv;

typedef struct peer_dnnl peer_dnnl;

/* Opens oneDNN's CPU engine and a stream. 0, or -1 with a message in err. */
int peer_dnnl_open(peer_dnnl **out, char *err, size_t errlen);
void peer_dnnl_close(peer_dnnl *p);

/* "oneDNN 2.6.3 (cpu runtime OpenMP)". */
void peer_dnnl_describe(char *buf, size_t len);

/* Runs y = conv(x, w) with oneDNN's own choice of algorithm (weights
 * reordered once into the layout it picks, outside the timing): one
 * warm-up, then *ms the best of iters calls, and y the output in the
 * activation layout. 0, or -1 with a message in err (e.g. unsupported). */
int peer_dnnl_conv(peer_dnnl *p, const peer_conv *c, const float *x, const float *w, float *y, int iters,
                   double *ms, char *err, size_t errlen);

/* The backward convolutions with oneDNN's own algorithm choice: dir 0
 * backward data (in: dy, w; out: dx), 1 backward weights (in: x, dy; out:
 * dw, in oneDNN's chosen layout: timing only). a and b are the inputs in
 * that order, in the activation / filter layouts of c. One warm-up, then
 * *ms the best of iters. 0, or -1 with a message in err. */
int peer_dnnl_conv_bwd(peer_dnnl *p, const peer_conv *c, int dir, const float *a, const float *b, int iters,
                       double *ms, char *err, size_t errlen);

#endif
