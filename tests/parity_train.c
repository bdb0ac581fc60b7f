/*
 * The training ops' cases of the op-parity harness (grad mode): relu
 * backward, softmax cross-entropy and optimizer steps, and the
 * elementwise registry ops (scale, activations, layout transform, binary add, mul, sub and
 * div with broadcasting of either side, pad), each run on every
 * device by every algorithm its backend registers (forced by name), and
 * compared with a naive loop in double written here. The naive
 * cross-entropy gradient is itself checked against central finite
 * differences of the naive loss (double). Errors are normalised:
 *   relu backward  exact (it selects dy or 0): any difference fails;
 *   cross-entropy  loss: |got - ref| / (mean |max logit| + mean |logit at
 *                  the label| + 1), the size of the terms the loss is
 *                  computed from; dlogits: |got - ref| * N (each element
 *                  is a probability difference over N);
 *   optimizers     |got - ref| / max |ref| over the tensor (w, then each
 *                  slot), after several steps with new gradients each;
 *   scale, binary  |got - ref| / |ref| (one float product or sum of two
 *                  floats: one rounding);
 *   activation     |got - ref| / max(|ref|, 1), NaN where the input is;
 *   transform, pad exact (a permutation, copies): any difference fails;
 *   matmul         |got - ref| / (sum over p of |a[i,p] b[p,j]| + 1e-30)
 *                  per element: float32 sums err by ~sqrt(k) ulps of
 *                  that, a wrong index or transpose by the whole of it.
 * Each within its algorithm's tolerance (pdnn__algo.tol, src/backend.h):
 * 1e-5 everywhere but relu and transform (exact): float32 rounding of
 * these short computations stays near 1e-7, a wrong term or index is off
 * by far more.
 */
#include "core/context.h"
#include "ops/dispatch.h"
#include "helpers.h"
#include "parity.h"

/* shared with parity_nd_math.c (parity.h) */
#define xcalloc parity_xcalloc
#define make parity_make

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum kind { RELU, XENT, OPTIM, MATMUL, SCALE, ACT, TRANSFORM, BINARY, PAD } kind;

typedef struct train_case {
    int64_t dims[4];      /* relu: the tensor; xent: {N, K}; optim: {n};
                             matmul: {m, n, k, 2 trans_a + trans_b} */
    const char *set;
    kind k;
    pdnn_layout layout;
    float offset;         /* xent: added to every logit; act: alpha; pad: the value */
    float amp;            /* xent: logits' spread; act: beta; pad: the pdnn_pad_mode */
    pdnn_optimizer_kind opt;
    float lr, momentum, weight_decay; /* act: lr spreads x */
    pdnn_activation act;
    pdnn_layout to;       /* transform: y's layout (x's is layout) */
    int64_t bdims[4];     /* binary: b's dims (a's are dims; 1 repeats); pad: the pads */
    pdnn_binary_op bop;   /* binary */
} train_case;

static const train_case cases[] = {
    {{1, 3, 5, 7}, "relu_bwd", RELU, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 3, 5, 7}, "relu_bwd", RELU, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "relu_bwd", RELU, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "relu_bwd", RELU, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 1001, 1, 1}, "relu_bwd", RELU, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 1, 1, 1}, "relu_bwd", RELU, PDNN_LAYOUT_X, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{4099, 1, 1, 1}, "relu_bwd", RELU, PDNN_LAYOUT_X, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 1}, "xent", XENT, PDNN_NCHW, 0, 3, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 1}, "xent", XENT, PDNN_NHWC, 0, 3, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 10}, "xent", XENT, PDNN_NCHW, 0, 3, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 10}, "xent", XENT, PDNN_NHWC, 0, 3, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 10}, "xent", XENT, PDNN_NCHW, 0, 30, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 1000}, "xent", XENT, PDNN_NCHW, 0, 3, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 1000}, "xent", XENT, PDNN_NHWC, 0, 3, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 10}, "xent_large", XENT, PDNN_NCHW, 1e4f, 3, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 1000}, "xent_large", XENT, PDNN_NHWC, -1e4f, 3, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 10}, "xent_large", XENT, PDNN_NCHW, 0, 1e4f, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 1000}, "xent_large", XENT, PDNN_NCHW, 0, 1e4f, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1}, "sgd", OPTIM, PDNN_LAYOUT_X, 0, 0, PDNN_OPTIMIZER_SGD, 0.1f, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{37}, "sgd", OPTIM, PDNN_LAYOUT_X, 0, 0, PDNN_OPTIMIZER_SGD, 0.1f, 0, 0.01f, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{37}, "sgd", OPTIM, PDNN_LAYOUT_X, 0, 0, PDNN_OPTIMIZER_SGD, 0.05f, 0.9f, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 5, 3, 7}, "sgd", OPTIM, PDNN_NHWC, 0, 0, PDNN_OPTIMIZER_SGD, 0.05f, 0.9f, 0.01f, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{4099}, "sgd", OPTIM, PDNN_LAYOUT_X, 0, 0, PDNN_OPTIMIZER_SGD, 0.01f, 0.5f, 0.1f, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1}, "adam", OPTIM, PDNN_LAYOUT_X, 0, 0, PDNN_OPTIMIZER_ADAM, 0.001f, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{37}, "adam", OPTIM, PDNN_LAYOUT_X, 0, 0, PDNN_OPTIMIZER_ADAM, 0.01f, 0, 0.01f, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{8, 3, 3, 3}, "adam", OPTIM, PDNN_OIHW, 0, 0, PDNN_OPTIMIZER_ADAM, 0.001f, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{4099}, "adam", OPTIM, PDNN_LAYOUT_X, 0, 0, PDNN_OPTIMIZER_ADAM, 0.1f, 0, 0.1f, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{37}, "sgd_nesterov", OPTIM, PDNN_LAYOUT_X, 0, 0, PDNN_OPTIMIZER_SGD, 0.05f, 0.9f, 0.01f, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{4099}, "sgd_nesterov", OPTIM, PDNN_LAYOUT_X, 0, 0, PDNN_OPTIMIZER_SGD, 0.01f, 0.5f, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{37}, "adamw", OPTIM, PDNN_LAYOUT_X, 0, 0, PDNN_OPTIMIZER_ADAMW, 0.01f, 0, 0.1f, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 5, 3, 7}, "adamw", OPTIM, PDNN_NHWC, 0, 0, PDNN_OPTIMIZER_ADAMW, 0.001f, 0, 0.01f, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    /* Every transpose pair; sizes 1, odd, not multiples of 4, a batch of
     * 17, and Deep MNIST's fully connected shapes scaled down. */
    {{1, 1, 1, 0}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 1, 1, 3}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 10, 3, 0}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 10, 3, 1}, "matmul", MATMUL, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 10, 3, 2}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 10, 3, 3}, "matmul", MATMUL, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 131, 257, 0}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{64, 250, 196, 0}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{196, 250, 64, 2}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{64, 196, 250, 1}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    /* Deep MNIST's fc1 gradients at 2 images a rank (3 ranks, batch 6). */
    {{3136, 1024, 2, 2}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 3136, 1024, 1}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{33, 7, 1001, 3}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    /* one row of A against B transposed (a fully connected layer at batch
     * 1; OpenCL's gemv_nt): whole 8-column groups and sums, tails of both,
     * fewer than 8 columns */
    {{1, 1000, 1280, 1}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 13, 21, 1}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 3, 7, 1}, "matmul", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    /* matmul_sim: each transpose pair, gemv's tails and a packed B of two
     * 16-column panels, small enough for Oclgrind (oclgrind_kernels.sh) */
    {{17, 10, 3, 0}, "matmul_sim", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 10, 3, 1}, "matmul_sim", MATMUL, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 10, 3, 2}, "matmul_sim", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 10, 3, 3}, "matmul_sim", MATMUL, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 13, 21, 1}, "matmul_sim", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{5, 33, 9, 0}, "matmul_sim", MATMUL, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    /* y = alpha x (alpha in lr): odd sizes, batch 1 and 17, both layouts,
     * a negative and a tiny alpha, 0 */
    {{1, 1, 1, 1}, "scale", SCALE, PDNN_NCHW, 0, 0, 0, 0.5f, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "scale", SCALE, PDNN_NHWC, 0, 0, 0, -0.25f, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "scale", SCALE, PDNN_NCHW, 0, 0, 0, 1.0f / 3.0f, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{4099, 1, 1, 1}, "scale", SCALE, PDNN_LAYOUT_X, 0, 0, 0, 1e-30f, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 3, 7, 7}, "scale", SCALE, PDNN_OIHW, 0, 0, 0, 0.0f, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    /* Activations (alpha, beta in offset, amp; x spread by lr): ReLU6, a
     * clip from below only, from above only and a narrow one, leaky relu
     * of slopes 0.01, 0.2, 1.5 (above 1) and -0.5,
     * sigmoid out to where exp overflows; odd sizes, batch 1 and 17, both
     * layouts. Inputs hold the bounds exactly, +-0 and a NaN. */
    {{1, 1, 1, 1}, "activation", ACT, PDNN_NCHW, 0.0f, 6.0f, 0, 8.0f, 0, 0, PDNN_ACTIVATION_CLIP, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NHWC, 0.0f, 6.0f, 0, 8.0f, 0, 0, PDNN_ACTIVATION_CLIP, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NCHW, -0.5f, INFINITY, 0, 1.0f, 0, 0, PDNN_ACTIVATION_CLIP, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{4099, 1, 1, 1}, "activation", ACT, PDNN_LAYOUT_X, -0.25f, 0.25f, 0, 1.0f, 0, 0, PDNN_ACTIVATION_CLIP, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 7, 1, 3}, "activation", ACT, PDNN_NCHW, 0.01f, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_LEAKY_RELU, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NHWC, 0.2f, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_LEAKY_RELU, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 3, 5, 7}, "activation", ACT, PDNN_NCHW, 1.5f, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_LEAKY_RELU, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 9, 2, 5}, "activation", ACT, PDNN_NHWC, -0.5f, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_LEAKY_RELU, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 3, 5, 7}, "activation", ACT, PDNN_NCHW, -INFINITY, 0.5f, 0, 2.0f, 0, 0, PDNN_ACTIVATION_CLIP, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NCHW, 0, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_SIGMOID, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{4099, 1, 1, 1}, "activation", ACT, PDNN_LAYOUT_X, 0, 0, 0, 120.0f, 0, 0, PDNN_ACTIVATION_SIGMOID, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 3, 2, 2}, "activation", ACT, PDNN_NHWC, 0, 0, 0, 1.0f, 0, 0, PDNN_ACTIVATION_SIGMOID, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    /* Hard sigmoid (ONNX's defaults, and hard swish's 1/6, 1/2) across
     * both bends, hard swish, SiLU out to where exp overflows. */
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NCHW, 0.2f, 0.5f, 0, 4.0f, 0, 0, PDNN_ACTIVATION_HARD_SIGMOID, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 9, 2, 5}, "activation", ACT, PDNN_NHWC, 1.0f / 6.0f, 0.5f, 0, 5.0f, 0, 0, PDNN_ACTIVATION_HARD_SIGMOID, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NHWC, 0, 0, 0, 5.0f, 0, 0, PDNN_ACTIVATION_HARD_SWISH, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 7, 1, 3}, "activation", ACT, PDNN_NCHW, 0, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_HARD_SWISH, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NCHW, 0, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_SILU, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{4099, 1, 1, 1}, "activation", ACT, PDNN_LAYOUT_X, 0, 0, 0, 120.0f, 0, 0, PDNN_ACTIVATION_SILU, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 3, 2, 2}, "activation", ACT, PDNN_NHWC, 0, 0, 0, 1.0f, 0, 0, PDNN_ACTIVATION_SILU, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    /* The unary math: x spread wide enough to reach each function's
     * tails (erf's and tanh's saturation, GELU's cancellation below -4),
     * the specials 0, -0, NaN; sqrt and log of negatives (NaN), of 0
     * (0, -inf), reciprocal of 0 (inf); pow by an integer (negative bases
     * too) and by a fraction (NaN there). */
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NCHW, 0, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_ERF, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{4099, 1, 1, 1}, "activation", ACT, PDNN_LAYOUT_X, 0, 0, 0, 8.0f, 0, 0, PDNN_ACTIVATION_GELU, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NHWC, 0, 0, 0, 6.0f, 0, 0, PDNN_ACTIVATION_GELU_TANH, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NCHW, 0, 0, 0, 10.0f, 0, 0, PDNN_ACTIVATION_TANH, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 7, 1, 3}, "activation", ACT, PDNN_NCHW, 0, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_SQRT, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 3, 5, 7}, "activation", ACT, PDNN_NHWC, 0, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_NEG, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NCHW, 0, 0, 0, 10.0f, 0, 0, PDNN_ACTIVATION_EXP, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NHWC, 0, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_LOG, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 9, 2, 5}, "activation", ACT, PDNN_NCHW, 0, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_RECIPROCAL, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 3, 5, 7}, "activation", ACT, PDNN_NCHW, 0, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_ABS, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "activation", ACT, PDNN_NCHW, 3.0f, 0, 0, 3.0f, 0, 0, PDNN_ACTIVATION_POW, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 9, 2, 5}, "activation", ACT, PDNN_NHWC, 0.5f, 0, 0, 4.0f, 0, 0, PDNN_ACTIVATION_POW, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    /* Layout transforms: NCHW <-> NHWC both ways, a 1x1 image, batch 17,
     * channels not a multiple of 4, and the filter layouts. */
    {{2, 5, 3, 7}, "transform", TRANSFORM, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, PDNN_NHWC, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 5, 3, 7}, "transform", TRANSFORM, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, PDNN_NCHW, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{17, 3, 1, 1}, "transform", TRANSFORM, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, PDNN_NCHW, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 64, 9, 1}, "transform", TRANSFORM, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, PDNN_NHWC, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 1, 1, 1}, "transform", TRANSFORM, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, PDNN_NHWC, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{8, 3, 5, 5}, "transform", TRANSFORM, PDNN_OIHW, 0, 0, 0, 0, 0, 0, 0, PDNN_HWIO, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{8, 3, 5, 5}, "transform", TRANSFORM, PDNN_HWIO, 0, 0, 0, 0, 0, 0, 0, PDNN_OHWI, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{3, 2, 4, 4}, "transform", TRANSFORM, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, PDNN_NHWC, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    /* OpenCL's work-items loop over y's inner two axes where its outer
     * two have 64 indices or more (the first and third), else over the
     * innermost one (the second and fourth). */
    {{4, 3, 40, 33}, "transform", TRANSFORM, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, PDNN_NHWC, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 3, 40, 33}, "transform", TRANSFORM, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, PDNN_NHWC, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 37, 20, 9}, "transform", TRANSFORM, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, PDNN_NCHW, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{1, 5, 7, 70}, "transform", TRANSFORM, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, PDNN_NCHW, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    /* Tiles (ew_transform_tiles) where y's innermost axis is not x's and
     * both have 8 or more: [2,37,20,9] and [1,64,9,1] above, partial tiles
     * on both axes with batch 3, NCHW -> NHWC over 40 channels, and OHWI
     * -> OIHW (x's axis of stride 1 is I). */
    {{3, 17, 4, 33}, "transform", TRANSFORM, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, PDNN_NCHW, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{2, 40, 3, 20}, "transform", TRANSFORM, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, PDNN_NHWC, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{12, 20, 3, 9}, "transform", TRANSFORM, PDNN_OHWI, 0, 0, 0, 0, 0, 0, 0, PDNN_OIHW, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    /* y = a op b, b broadcast where its dim is 1: the same shape, per
     * image and channel (squeeze-and-excitation), per channel, spatial
     * maps, a scalar; both layouts, batch 1 and 17, odd channel counts, a
     * 1x1 image. */
    {{17, 5, 3, 3}, "binary", BINARY, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {17, 5, 3, 3}, PDNN_BINARY_MUL},
    {{17, 5, 3, 3}, "binary", BINARY, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {17, 5, 3, 3}, PDNN_BINARY_ADD},
    {{17, 5, 3, 3}, "binary", BINARY, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {17, 5, 1, 1}, PDNN_BINARY_MUL},
    {{2, 7, 4, 5}, "binary", BINARY, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {2, 7, 1, 1}, PDNN_BINARY_MUL},
    {{2, 7, 4, 5}, "binary", BINARY, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {1, 7, 1, 1}, PDNN_BINARY_ADD},
    {{2, 7, 4, 5}, "binary", BINARY, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {1, 7, 1, 1}, PDNN_BINARY_ADD},
    {{2, 3, 4, 5}, "binary", BINARY, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {1, 1, 4, 5}, PDNN_BINARY_MUL},
    {{3, 6, 4, 5}, "binary", BINARY, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {3, 1, 1, 5}, PDNN_BINARY_ADD},
    {{1, 3, 1, 1}, "binary", BINARY, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {1, 3, 1, 1}, PDNN_BINARY_MUL},
    {{1, 1, 1, 1}, "binary", BINARY, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {1, 1, 1, 1}, PDNN_BINARY_ADD},
    /* pow: a positive (make_inputs), b any exponent, and b per channel */
    {{2, 7, 4, 5}, "binary", BINARY, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {2, 7, 4, 5}, PDNN_BINARY_POW},
    {{2, 7, 4, 5}, "binary", BINARY, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {1, 7, 1, 1}, PDNN_BINARY_POW},
    /* Pad (x's dims, the value, the mode, the pads {top, left, bottom,
     * right}): constant (0 and another value), reflect to the edge's
     * limit, edge; each side alone and all four; both layouts; a 1x1
     * image, batch 3, odd channels. */
    {{2, 3, 5, 7}, "pad", PAD, PDNN_NCHW, 0.0f, PDNN_PAD_CONSTANT, 0, 0, 0, 0, 0, 0, {1, 2, 2, 1}, PDNN_BINARY_ADD},
    {{2, 3, 5, 7}, "pad", PAD, PDNN_NHWC, -1.5f, PDNN_PAD_CONSTANT, 0, 0, 0, 0, 0, 0, {0, 3, 0, 0}, PDNN_BINARY_ADD},
    {{1, 1, 1, 1}, "pad", PAD, PDNN_NCHW, 2.0f, PDNN_PAD_CONSTANT, 0, 0, 0, 0, 0, 0, {1, 1, 1, 1}, PDNN_BINARY_ADD},
    {{3, 5, 4, 6}, "pad", PAD, PDNN_NCHW, 0.0f, PDNN_PAD_REFLECT, 0, 0, 0, 0, 0, 0, {3, 5, 1, 2}, PDNN_BINARY_ADD},
    {{3, 5, 4, 6}, "pad", PAD, PDNN_NHWC, 0.0f, PDNN_PAD_REFLECT, 0, 0, 0, 0, 0, 0, {0, 0, 3, 5}, PDNN_BINARY_ADD},
    {{2, 3, 5, 7}, "pad", PAD, PDNN_NCHW, 0.0f, PDNN_PAD_EDGE, 0, 0, 0, 0, 0, 0, {2, 0, 3, 9}, PDNN_BINARY_ADD},
    {{1, 1, 1, 1}, "pad", PAD, PDNN_NHWC, 0.0f, PDNN_PAD_EDGE, 0, 0, 0, 0, 0, 0, {2, 3, 1, 0}, PDNN_BINARY_ADD},
    {{1, 4, 3, 3}, "pad", PAD, PDNN_NHWC, 0.0f, PDNN_PAD_CONSTANT, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, PDNN_BINARY_ADD},
    {{4099, 1, 1, 1}, "binary", BINARY, PDNN_LAYOUT_X, 0, 0, 0, 0, 0, 0, 0, 0, {1, 1, 1, 1}, PDNN_BINARY_MUL},
    /* a broadcast instead (y takes b's dims: torchvision's gate * x),
     * both broadcast, Sub and Div either way round. */
    {{2, 7, 1, 1}, "binary", BINARY, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {2, 7, 4, 5}, PDNN_BINARY_MUL},
    {{17, 5, 1, 1}, "binary", BINARY, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {17, 5, 3, 3}, PDNN_BINARY_MUL},
    {{1, 7, 1, 1}, "binary", BINARY, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {2, 7, 4, 5}, PDNN_BINARY_ADD},
    {{2, 1, 4, 1}, "binary", BINARY, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {2, 7, 1, 5}, PDNN_BINARY_ADD},
    {{2, 1, 4, 1}, "binary", BINARY, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {2, 7, 1, 5}, PDNN_BINARY_MUL},
    {{17, 5, 3, 3}, "binary", BINARY, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {17, 5, 3, 3}, PDNN_BINARY_SUB},
    {{2, 7, 4, 5}, "binary", BINARY, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {1, 7, 1, 1}, PDNN_BINARY_SUB},
    {{2, 7, 1, 1}, "binary", BINARY, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {2, 7, 4, 5}, PDNN_BINARY_SUB},
    {{17, 5, 3, 3}, "binary", BINARY, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {17, 5, 3, 3}, PDNN_BINARY_DIV},
    {{2, 7, 4, 5}, "binary", BINARY, PDNN_NCHW, 0, 0, 0, 0, 0, 0, 0, 0, {2, 7, 1, 1}, PDNN_BINARY_DIV},
    {{1, 1, 4, 5}, "binary", BINARY, PDNN_NHWC, 0, 0, 0, 0, 0, 0, 0, 0, {2, 3, 4, 5}, PDNN_BINARY_DIV},
};
enum { N_CASES = sizeof cases / sizeof cases[0], STEPS = 5 };

static pdnn__op op_of(const train_case *c)
{
    return c->k == RELU     ? PDNN__OP_RELU_BWD
           : c->k == XENT   ? PDNN__OP_SOFTMAX_XENT
           : c->k == MATMUL ? PDNN__OP_GEMM
           : c->k == SCALE  ? PDNN__OP_SCALE
           : c->k == ACT    ? PDNN__OP_ACTIVATION
           : c->k == TRANSFORM ? PDNN__OP_TRANSFORM
           : c->k == BINARY ? PDNN__OP_BINARY
           : c->k == PAD    ? PDNN__OP_PAD
                            : PDNN__OP_OPTIMIZER;
}

static int selected(const train_case *c, int op, const char *set)
{
    return (op < 0 || op == (int)op_of(c)) && (!set || strcmp(set, c->set) == 0);
}

int parity_train_count(int op, const char *set)
{
    int n = 0;
    for (int i = 0; i < N_CASES; i++)
        n += selected(&cases[i], op, set);
    return n;
}

static const char *const act_names[] = {"clip", "leaky_relu", "sigmoid", "hard_sigmoid", "hard_swish", "silu",
                                        "erf",  "gelu",       "gelu_tanh", "tanh",      "sqrt",       "neg",
                                        "exp",  "log",        "reciprocal", "abs",      "pow"};
static const char *const bop_names[] = {"add", "mul", "sub", "div", "pow"};

static void case_name(const train_case *c, char *buf, size_t len)
{
    if (c->k == XENT)
        snprintf(buf, len, "%s N%lld K%lld %s logits %g+-%g", c->set, (long long)c->dims[0], (long long)c->dims[1],
                 pdnn_layout_name(c->layout), (double)c->offset, (double)c->amp);
    else if (c->k == OPTIM)
        snprintf(buf, len, "%s [%lld,%lld,%lld,%lld] %s lr %g momentum %g wd %g, %d steps", c->set,
                 (long long)c->dims[0], (long long)(c->dims[1] ? c->dims[1] : 1),
                 (long long)(c->dims[2] ? c->dims[2] : 1), (long long)(c->dims[3] ? c->dims[3] : 1),
                 pdnn_layout_name(c->layout), (double)c->lr, (double)c->momentum, (double)c->weight_decay, STEPS);
    else if (c->k == MATMUL)
        snprintf(buf, len, "%s m%lld n%lld k%lld%s%s %s", c->set, (long long)c->dims[0], (long long)c->dims[1],
                 (long long)c->dims[2], c->dims[3] & 2 ? " trans_a" : "", c->dims[3] & 1 ? " trans_b" : "",
                 pdnn_layout_name(c->layout));
    else if (c->k == TRANSFORM)
        snprintf(buf, len, "%s [%lld,%lld,%lld,%lld] %s -> %s", c->set, (long long)c->dims[0], (long long)c->dims[1],
                 (long long)c->dims[2], (long long)c->dims[3], pdnn_layout_name(c->layout), pdnn_layout_name(c->to));
    else if (c->k == ACT)
        snprintf(buf, len, "%s %s [%lld,%lld,%lld,%lld] %s alpha %g beta %g x*%g", c->set, act_names[c->act],
                 (long long)c->dims[0], (long long)c->dims[1], (long long)c->dims[2], (long long)c->dims[3],
                 pdnn_layout_name(c->layout), (double)c->offset, (double)c->amp, (double)c->lr);
    else if (c->k == BINARY)
        snprintf(buf, len, "%s %s a[%lld,%lld,%lld,%lld] b[%lld,%lld,%lld,%lld] %s", c->set,
                 bop_names[c->bop], (long long)c->dims[0], (long long)c->dims[1],
                 (long long)c->dims[2], (long long)c->dims[3], (long long)c->bdims[0], (long long)c->bdims[1],
                 (long long)c->bdims[2], (long long)c->bdims[3], pdnn_layout_name(c->layout));
    else if (c->k == PAD)
        snprintf(buf, len, "%s %s x[%lld,%lld,%lld,%lld] pads %lld,%lld,%lld,%lld %s value %g", c->set,
                 c->amp == PDNN_PAD_CONSTANT ? "constant" : c->amp == PDNN_PAD_REFLECT ? "reflect" : "edge",
                 (long long)c->dims[0], (long long)c->dims[1], (long long)c->dims[2], (long long)c->dims[3],
                 (long long)c->bdims[0], (long long)c->bdims[1], (long long)c->bdims[2], (long long)c->bdims[3],
                 pdnn_layout_name(c->layout), (double)c->offset);
    else if (c->k == SCALE)
        snprintf(buf, len, "%s [%lld,%lld,%lld,%lld] %s alpha %g", c->set, (long long)c->dims[0],
                 (long long)c->dims[1], (long long)c->dims[2], (long long)c->dims[3], pdnn_layout_name(c->layout),
                 (double)c->lr);
    else
        snprintf(buf, len, "%s [%lld,%lld,%lld,%lld] %s", c->set, (long long)c->dims[0], (long long)c->dims[1],
                 (long long)c->dims[2], (long long)c->dims[3], pdnn_layout_name(c->layout));
}

static pdnn_tensor_desc desc_of(const train_case *c)
{
    pdnn_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = PDNN_FLOAT32;
    d.layout = c->layout;
    for (int i = 0; i < 4; i++)
        d.dims[i] = c->dims[i] ? c->dims[i] : 1;
    if (c->k == XENT || c->k == MATMUL)
        d.dims[2] = d.dims[3] = 1;
    if (c->k == MATMUL) /* C */
        d.dims[0] = c->dims[0], d.dims[1] = c->dims[1];
    return d;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "parity: out of host memory\n");
        exit(2);
    }
    return p;
}

pdnn_tensor *make(pdnn_device *dev, const pdnn_tensor_desc *d, const void *data)
{
    pdnn_tensor *t = NULL;
    if (pdnn_tensor_create(dev, d, &t) != PDNN_SUCCESS)
        return NULL;
    if (data && pdnn_tensor_write(t, data, (size_t)pdnn_tensor_desc_bytes(d)) != PDNN_SUCCESS) {
        pdnn_tensor_release(t);
        return NULL;
    }
    return t;
}

/* ---- the naive loops, in double -------------------------------------------- */

/* Mean over rows of lse - x[label]; g (may be NULL) its gradient. */
static double naive_xent(const double *x, const int32_t *lab, int64_t n, int64_t k, double *g)
{
    double total = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double *row = x + i * k;
        double m = row[0];
        for (int64_t j = 1; j < k; j++)
            m = row[j] > m ? row[j] : m;
        double s = 0.0;
        for (int64_t j = 0; j < k; j++)
            s += exp(row[j] - m);
        const double lse = m + log(s);
        total += lse - row[lab[i]];
        for (int64_t j = 0; g && j < k; j++)
            g[i * k + j] = (exp(row[j] - lse) - (j == lab[i] ? 1.0 : 0.0)) / (double)n;
    }
    return total / (double)n;
}

/* The naive gradient against central differences of the naive loss at up
 * to 16 elements; 0 and a message when they disagree. */
static int check_naive_xent(double *x, const int32_t *lab, int64_t n, int64_t k, const double *g, char *msg,
                            size_t len)
{
    const int64_t total = n * k, stride = total > 16 ? total / 16 : 1;
    for (int64_t e = 0; e < total; e += stride) {
        /* An absolute step: the loss's rounding is that of its terms
         * relative to the row's maximum, whatever the logits' offset. */
        const double keep = x[e], h = 1e-4;
        x[e] = keep + h;
        const double up = naive_xent(x, lab, n, k, NULL);
        x[e] = keep - h;
        const double down = naive_xent(x, lab, n, k, NULL);
        x[e] = keep;
        const double fd = (up - down) / (2.0 * h);
        /* Central differences err by ~h^2 * f''' and by the loss's
         * rounding over h; 1e-6 of the gradient's unit (1/N) covers both. */
        if (!(fabs(fd - g[e]) <= 1e-6 / (double)n + 1e-6 * fabs(g[e]))) {
            snprintf(msg, len, "finite difference at element %lld: %.17g, the naive gradient %.17g", (long long)e,
                     fd, g[e]);
            return 0;
        }
    }
    return 1;
}

/* ---- one case on one device by one algorithm ------------------------------- */

/* Runs the op of c; st its status. Writes the outputs read back to got
 * (relu: dx; xent: loss then dlogits; optim: w, s1, s2 after STEPS). */
typedef struct inputs {
    float *x, *dy;      /* relu: y, dy; xent: logits */
    int32_t *labels;    /* xent */
    float *w0, *g;      /* optim: w's start, STEPS gradients */
    int64_t n;          /* elements of x / w */
} inputs;

static pdnn_status run_relu(pdnn_device *dev, const train_case *c, const inputs *in, float *got)
{
    const pdnn_tensor_desc d = desc_of(c);
    pdnn_tensor *y = make(dev, &d, in->x), *dy = make(dev, &d, in->dy), *dx = make(dev, &d, NULL);
    pdnn_status st = y && dy && dx ? pdnn_relu_backward(y, dy, dx) : PDNN_ERR_OUT_OF_MEMORY;
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_read(dx, got, (size_t)in->n * sizeof(float));
    pdnn_tensor_release(y);
    pdnn_tensor_release(dy);
    pdnn_tensor_release(dx);
    return st;
}

static pdnn_status run_xent(pdnn_device *dev, const train_case *c, const inputs *in, float *got)
{
    const pdnn_tensor_desc d = desc_of(c);
    pdnn_tensor_desc ld = th_desc(PDNN_LAYOUT_X, c->dims[0], 1, 1, 1), od = th_desc(PDNN_LAYOUT_X, 1, 1, 1, 1);
    ld.dtype = PDNN_INT32;
    pdnn_tensor *x = make(dev, &d, in->x), *lab = make(dev, &ld, in->labels), *loss = make(dev, &od, NULL);
    pdnn_tensor *dx = make(dev, &d, NULL);
    pdnn_status st = x && lab && loss && dx ? pdnn_softmax_cross_entropy(x, lab, loss, dx) : PDNN_ERR_OUT_OF_MEMORY;
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_read(loss, got, sizeof(float));
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_read(dx, got + 1, (size_t)in->n * sizeof(float));
    pdnn_tensor_release(x);
    pdnn_tensor_release(lab);
    pdnn_tensor_release(loss);
    pdnn_tensor_release(dx);
    return st;
}

static void optim_params(const train_case *c, pdnn_optimizer_params *p)
{
    pdnn_optimizer_params_init(p, c->opt);
    p->learning_rate = c->lr;
    p->momentum = c->momentum;
    p->weight_decay = c->weight_decay;
    p->nesterov = strcmp(c->set, "sgd_nesterov") == 0;
}

/* SGD without momentum takes no slot: it gets none, so a kernel that
 * touched one would fault or show in s1 (which then stays zero). */
static int uses_s1(const train_case *c) { return c->opt != PDNN_OPTIMIZER_SGD || c->momentum != 0.0f; }

static pdnn_status run_optim(pdnn_device *dev, const train_case *c, const inputs *in, float *got)
{
    const pdnn_tensor_desc d = desc_of(c);
    float *zero = xcalloc((size_t)in->n, sizeof(float));
    pdnn_tensor *w = make(dev, &d, in->w0), *g = make(dev, &d, NULL), *s1 = make(dev, &d, zero);
    pdnn_tensor *s2 = make(dev, &d, zero);
    pdnn_optimizer_params p;
    optim_params(c, &p);
    pdnn_status st = w && g && s1 && s2 ? PDNN_SUCCESS : PDNN_ERR_OUT_OF_MEMORY;
    for (int step = 1; step <= STEPS && st == PDNN_SUCCESS; step++) {
        st = pdnn_tensor_write(g, in->g + (size_t)(step - 1) * (size_t)in->n, (size_t)in->n * sizeof(float));
        if (st == PDNN_SUCCESS)
            st = pdnn_optimizer_update(&p, step, w, g, uses_s1(c) ? s1 : NULL,
                                       c->opt != PDNN_OPTIMIZER_SGD ? s2 : NULL);
    }
    pdnn_tensor *outs[] = {w, s1, s2};
    for (int i = 0; i < 3 && st == PDNN_SUCCESS; i++)
        st = pdnn_tensor_read(outs[i], got + (size_t)i * (size_t)in->n, (size_t)in->n * sizeof(float));
    pdnn_tensor_release(w);
    pdnn_tensor_release(g);
    pdnn_tensor_release(s1);
    pdnn_tensor_release(s2);
    free(zero);
    return st;
}

/* A matmul's operands: x holds A (stored k x m when trans_a), w0 holds B
 * (n x k when trans_b). */
static pdnn_status run_matmul(pdnn_device *dev, const train_case *c, const inputs *in, float *got)
{
    const int64_t m = c->dims[0], n = c->dims[1], k = c->dims[2];
    const int ta = (c->dims[3] & 2) != 0, tb = (c->dims[3] & 1) != 0;
    pdnn_tensor_desc ad = th_desc(c->layout, ta ? k : m, ta ? m : k, 1, 1);
    pdnn_tensor_desc bd = th_desc(c->layout, tb ? n : k, tb ? k : n, 1, 1);
    pdnn_tensor_desc cd = desc_of(c);
    pdnn_tensor *a = make(dev, &ad, in->x), *b = make(dev, &bd, in->w0), *cm = make(dev, &cd, NULL);
    pdnn_status st = a && b && cm ? pdnn_matmul(a, b, ta, tb, cm) : PDNN_ERR_OUT_OF_MEMORY;
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_read(cm, got, (size_t)in->n * sizeof(float));
    pdnn_tensor_release(a);
    pdnn_tensor_release(b);
    pdnn_tensor_release(cm);
    return st;
}

/* The op run again in place (y = x), which every elementwise backend
 * must allow, has to give the same numbers as out of place. */
static pdnn_status same_in_place(pdnn_tensor *x, const float *got, int64_t n)
{
    float *again = malloc(sizeof(float) * (size_t)n);
    if (!again)
        return PDNN_ERR_OUT_OF_MEMORY;
    pdnn_status st = pdnn_tensor_read(x, again, (size_t)n * sizeof(float));
    for (int64_t i = 0; st == PDNN_SUCCESS && i < n; i++)
        if (!(again[i] == got[i] || (isnan(again[i]) && isnan(got[i]))))
            st = pdnn__error(PDNN_ERR_INTERNAL, "in place (y = x) element %lld is %.9g, out of place %.9g",
                             (long long)i, (double)again[i], (double)got[i]);
    free(again);
    return st;
}

static pdnn_status run_scale(pdnn_device *dev, const train_case *c, const inputs *in, float *got)
{
    const pdnn_tensor_desc d = desc_of(c);
    pdnn_tensor *x = make(dev, &d, in->x), *y = make(dev, &d, NULL);
    pdnn_status st = x && y ? pdnn_scale(x, c->lr, y) : PDNN_ERR_OUT_OF_MEMORY;
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_read(y, got, (size_t)in->n * sizeof(float));
    if (st == PDNN_SUCCESS)
        st = pdnn_scale(x, c->lr, x);
    if (st == PDNN_SUCCESS)
        st = same_in_place(x, got, in->n);
    pdnn_tensor_release(x);
    pdnn_tensor_release(y);
    return st;
}

static pdnn_tensor_desc bdesc_of(const train_case *c)
{
    pdnn_tensor_desc d = desc_of(c);
    memcpy(d.dims, c->bdims, 4 * sizeof d.dims[0]);
    return d;
}

/* y's dims: the larger of a's and b's on each axis. */
static pdnn_tensor_desc ydesc_of(const train_case *c)
{
    pdnn_tensor_desc d = desc_of(c);
    for (int k = 0; k < 4; k++)
        d.dims[k] = d.dims[k] > c->bdims[k] ? d.dims[k] : c->bdims[k];
    return d;
}

/* y's dims of a pad case: x's grown by the pads. */
static pdnn_tensor_desc pdesc_of(const train_case *c)
{
    pdnn_tensor_desc d = desc_of(c);
    d.dims[2] += c->bdims[0] + c->bdims[2];
    d.dims[3] += c->bdims[1] + c->bdims[3];
    return d;
}

static pdnn_status run_pad(pdnn_device *dev, const train_case *c, const inputs *in, float *got)
{
    const pdnn_tensor_desc d = desc_of(c), e = pdesc_of(c);
    pdnn_tensor *x = make(dev, &d, in->x), *y = make(dev, &e, NULL);
    pdnn_status st = x && y ? pdnn_pad(x, c->bdims, (pdnn_pad_mode)c->amp, c->offset, y) : PDNN_ERR_OUT_OF_MEMORY;
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_read(y, got, (size_t)in->n * sizeof(float));
    pdnn_tensor_release(x);
    pdnn_tensor_release(y);
    return st;
}

static pdnn_status run_binary(pdnn_device *dev, const train_case *c, const inputs *in, float *got)
{
    const pdnn_tensor_desc d = desc_of(c), e = bdesc_of(c), f = ydesc_of(c);
    pdnn_tensor *a = make(dev, &d, in->x), *b = make(dev, &e, in->w0), *y = make(dev, &f, NULL);
    pdnn_status st = a && b && y ? pdnn_binary(a, b, c->bop, y) : PDNN_ERR_OUT_OF_MEMORY;
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_read(y, got, (size_t)in->n * sizeof(float));
    pdnn_tensor_release(a);
    pdnn_tensor_release(b);
    pdnn_tensor_release(y);
    return st;
}

static pdnn_status run_act(pdnn_device *dev, const train_case *c, const inputs *in, float *got)
{
    const pdnn_tensor_desc d = desc_of(c);
    pdnn_tensor *x = make(dev, &d, in->x), *y = make(dev, &d, NULL);
    pdnn_status st = x && y ? pdnn_activation_forward(x, c->act, c->offset, c->amp, y) : PDNN_ERR_OUT_OF_MEMORY;
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_read(y, got, (size_t)in->n * sizeof(float));
    if (st == PDNN_SUCCESS)
        st = pdnn_activation_forward(x, c->act, c->offset, c->amp, x);
    if (st == PDNN_SUCCESS)
        st = same_in_place(x, got, in->n);
    pdnn_tensor_release(x);
    pdnn_tensor_release(y);
    return st;
}

static pdnn_status run_transform(pdnn_device *dev, const train_case *c, const inputs *in, float *got)
{
    const pdnn_tensor_desc d = desc_of(c);
    pdnn_tensor_desc e = d;
    e.layout = c->to;
    pdnn_tensor *x = make(dev, &d, in->x), *y = make(dev, &e, NULL);
    pdnn_status st = x && y ? pdnn_transform(x, y) : PDNN_ERR_OUT_OF_MEMORY;
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_read(y, got, (size_t)in->n * sizeof(float));
    pdnn_tensor_release(x);
    pdnn_tensor_release(y);
    return st;
}

/* The activation of x in double. */
static double naive_act(const train_case *c, double x)
{
    if (isnan(x))
        return x;
    switch (c->act) {
    case PDNN_ACTIVATION_CLIP: return x < (double)c->offset ? (double)c->offset : x > (double)c->amp ? (double)c->amp : x;
    case PDNN_ACTIVATION_LEAKY_RELU: return x >= 0.0 ? x : (double)c->offset * x;
    case PDNN_ACTIVATION_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case PDNN_ACTIVATION_HARD_SIGMOID: return fmax(0.0, fmin(1.0, (double)c->offset * x + (double)c->amp));
    case PDNN_ACTIVATION_HARD_SWISH: return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
    case PDNN_ACTIVATION_SILU: return x / (1.0 + exp(-x));
    case PDNN_ACTIVATION_ERF: return erf(x);
    case PDNN_ACTIVATION_GELU: return x * 0.5 * erfc(-x / sqrt(2.0)); /* erfc: no cancellation below 0 */
    case PDNN_ACTIVATION_GELU_TANH: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    case PDNN_ACTIVATION_TANH: return tanh(x);
    case PDNN_ACTIVATION_SQRT: return sqrt(x);
    case PDNN_ACTIVATION_NEG: return -x;
    case PDNN_ACTIVATION_EXP: return exp(x);
    case PDNN_ACTIVATION_LOG: return log(x);
    case PDNN_ACTIVATION_RECIPROCAL: return 1.0 / x;
    case PDNN_ACTIVATION_ABS: return fabs(x);
    case PDNN_ACTIVATION_POW: return pow(x, (double)c->offset);
    }
    return NAN;
}

/* C in ref, and in ref + m n the sums of |a b| that scale each error. */
static void naive_matmul(const train_case *c, const inputs *in, double *ref)
{
    const int64_t m = c->dims[0], n = c->dims[1], k = c->dims[2];
    const int ta = (c->dims[3] & 2) != 0, tb = (c->dims[3] & 1) != 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0, mag = 0.0;
            for (int64_t p = 0; p < k; p++) {
                const double av = in->x[ta ? p * m + i : i * k + p], bv = in->w0[tb ? j * k + p : p * n + j];
                acc += av * bv;
                mag += fabs(av * bv);
            }
            ref[i * n + j] = acc;
            ref[m * n + i * n + j] = mag;
        }
}

/* The reference of each case: outputs in double, laid out as got. */
static void naive_optim(const train_case *c, const inputs *in, double *ref)
{
    const int64_t n = in->n;
    double *w = ref, *m = ref + n, *v = ref + 2 * n;
    for (int64_t i = 0; i < n; i++)
        w[i] = in->w0[i], m[i] = v[i] = 0.0;
    /* The float parameters the library gets, in double. */
    pdnn_optimizer_params p;
    optim_params(c, &p);
    const double lr = p.learning_rate, mom = p.momentum, wd = p.weight_decay, b1 = p.beta1, b2 = p.beta2,
                 eps = p.epsilon;
    for (int step = 1; step <= STEPS; step++)
        for (int64_t i = 0; i < n; i++) {
            const int decoupled = c->opt == PDNN_OPTIMIZER_ADAMW;
            const double gi = (double)in->g[(size_t)(step - 1) * (size_t)n + (size_t)i] + (decoupled ? 0 : wd * w[i]);
            if (c->opt == PDNN_OPTIMIZER_SGD) {
                m[i] = uses_s1(c) ? mom * m[i] + gi : 0.0;
                w[i] -= lr * (p.nesterov ? gi + mom * m[i] : uses_s1(c) ? m[i] : gi);
            } else {
                w[i] *= decoupled ? 1.0 - lr * wd : 1.0;
                m[i] = b1 * m[i] + (1 - b1) * gi;
                v[i] = b2 * v[i] + (1 - b2) * gi * gi;
                w[i] -= lr * (m[i] / (1 - pow(b1, step))) / (sqrt(v[i] / (1 - pow(b2, step))) + eps);
            }
        }
}

/* The largest normalised error of got against ref (see the top), and where;
 * cross-entropy's loss alone where its error is over tol. */
static double compare(const train_case *c, const inputs *in, const float *got, const double *ref, double tol,
                      int64_t *at)
{
    double worst = 0.0;
    *at = 0;
    if (c->k == RELU || c->k == TRANSFORM || c->k == PAD) {
        for (int64_t i = 0; i < in->n; i++)
            if (!((double)got[i] == ref[i]) && worst == 0.0)
                worst = INFINITY, *at = i;
        return worst;
    }
    if (c->k == ACT) { /* relative above 1, absolute below (sigmoid's tail may flush to 0); NaN where NaN */
        for (int64_t i = 0; i < in->n; i++) {
            const double e = (isnan(ref[i]) && isnan(got[i])) || (double)got[i] == ref[i]
                                 ? 0.0 /* NaN, or the same infinity */
                                 : fabs((double)got[i] - ref[i]) / fmax(fabs(ref[i]), 1.0);
            if (!(e <= worst)) {
                worst = isnan(e) ? INFINITY : e;
                *at = i;
            }
        }
        return worst;
    }
    if (c->k == SCALE || c->k == BINARY) {
        for (int64_t i = 0; i < in->n; i++) {
            const double d = fabs((double)got[i] - ref[i]), e = ref[i] != 0.0 ? d / fabs(ref[i]) : d;
            if (!(e <= worst)) {
                worst = isnan(e) ? INFINITY : e;
                *at = i;
            }
        }
        return worst;
    }
    if (c->k == MATMUL) {
        for (int64_t i = 0; i < in->n; i++) {
            const double e = fabs((double)got[i] - ref[i]) / (ref[in->n + i] + 1e-30);
            if (!(e <= worst)) {
                worst = isnan(e) ? INFINITY : e;
                *at = i;
            }
        }
        return worst;
    }
    if (c->k == XENT) {
        const int64_t n = c->dims[0], k = c->dims[1];
        double scale = 1.0;
        for (int64_t r = 0; r < n; r++) {
            double m = in->x[r * k];
            for (int64_t j = 1; j < k; j++)
                m = in->x[r * k + j] > m ? in->x[r * k + j] : m;
            scale += (fabs(m) + fabs((double)in->x[r * k + in->labels[r]])) / (double)n;
        }
        worst = fabs((double)got[0] - ref[0]) / scale;
        *at = -1;
        if (!(worst <= tol))
            return isnan(worst) ? INFINITY : worst;
        for (int64_t i = 0; i < in->n; i++) {
            const double e = fabs((double)got[1 + i] - ref[1 + i]) * (double)n;
            if (!(e <= worst)) {
                worst = isnan(e) ? INFINITY : e;
                *at = i;
            }
        }
        return worst;
    }
    for (int t = 0; t < 3; t++) {
        double mx = 0.0;
        for (int64_t i = 0; i < in->n; i++)
            mx = fmax(mx, fabs(ref[t * in->n + i]));
        for (int64_t i = 0; i < in->n; i++) {
            const double d = fabs((double)got[t * in->n + i] - ref[t * in->n + i]);
            const double e = mx > 0.0 ? d / mx : d;
            if (!(e <= worst)) {
                worst = isnan(e) ? INFINITY : e;
                *at = t * in->n + i;
            }
        }
    }
    return worst;
}

static const char *where(const train_case *c, const inputs *in, int64_t at, char *buf, size_t len)
{
    static const char *const slot[] = {"w", "slot1", "slot2"};
    if (c->k == XENT && at < 0)
        snprintf(buf, len, "the loss");
    else if (c->k == XENT)
        snprintf(buf, len, "dlogits[%lld][%lld]", (long long)(at / c->dims[1]), (long long)(at % c->dims[1]));
    else if (c->k == OPTIM)
        snprintf(buf, len, "%s[%lld]", slot[at / in->n], (long long)(at % in->n));
    else if (c->k == SCALE || c->k == ACT || c->k == TRANSFORM || c->k == BINARY || c->k == PAD)
        snprintf(buf, len, "y[%lld] (memory order)", (long long)at);
    else if (c->k == MATMUL)
        snprintf(buf, len, "c[%lld][%lld]", (long long)(at / c->dims[1]), (long long)(at % c->dims[1]));
    else
        snprintf(buf, len, "dx[%lld] (memory order)", (long long)at);
    return buf;
}

/* The inputs of case ci, from seeds of its own. */
static void make_inputs(const train_case *c, int ci, inputs *in)
{
    memset(in, 0, sizeof *in);
    const pdnn_tensor_desc d = c->k == BINARY ? ydesc_of(c) : c->k == PAD ? pdesc_of(c) : desc_of(c);
    in->n = pdnn_tensor_desc_elements(&d);
    const uint32_t seed = 1000u + (uint32_t)ci * 17u;
    /* Every array, whatever the op: small, and never NULL. */
    in->x = xcalloc((size_t)in->n, sizeof(float));
    in->dy = xcalloc((size_t)in->n, sizeof(float));
    in->labels = xcalloc((size_t)c->dims[0], sizeof(int32_t));
    in->w0 = xcalloc((size_t)in->n, sizeof(float));
    if (c->k == MATMUL) { /* A and B: m k and k n elements */
        free(in->x);
        free(in->w0);
        const int64_t m = c->dims[0], n = c->dims[1], k = c->dims[2];
        in->x = xcalloc((size_t)(m * k), sizeof(float));
        in->w0 = xcalloc((size_t)(k * n), sizeof(float));
        th_fill(in->x, m * k, seed);
        th_fill(in->w0, k * n, seed + 1);
    }
    in->g = xcalloc((size_t)in->n * STEPS, sizeof(float));
    if (c->k == SCALE)
        th_fill(in->x, in->n, seed);
    if (c->k == TRANSFORM)
        th_fill(in->x, in->n, seed);
    if (c->k == PAD) {
        const pdnn_tensor_desc x = desc_of(c);
        th_fill(in->x, pdnn_tensor_desc_elements(&x), seed);
    }
    if (c->k == BINARY) {
        const pdnn_tensor_desc a = desc_of(c), e = bdesc_of(c);
        th_fill(in->x, pdnn_tensor_desc_elements(&a), seed);
        th_fill(in->w0, pdnn_tensor_desc_elements(&e), seed + 1);
        for (int64_t i = 0; c->bop == PDNN_BINARY_POW && i < pdnn_tensor_desc_elements(&a); i++)
            in->x[i] = 0.05f + 2.0f * fabsf(in->x[i]); /* pow's bases positive: no NaN to compare */
    }
    if (c->k == ACT) {
        th_fill(in->x, in->n, seed);
        for (int64_t i = 0; i < in->n; i++)
            in->x[i] *= c->lr;
        const float special[] = {c->offset, c->amp, 0.0f, -0.0f, NAN, -c->lr, c->lr};
        for (int64_t i = 0; i < in->n && i < 7; i++)
            in->x[(i * 11) % in->n] = isfinite(special[i]) ? special[i] : i == 4 ? NAN : 1.0f;
    }
    if (c->k == RELU) {
        th_fill(in->x, in->n, seed);
        th_fill(in->dy, in->n, seed + 1);
        /* Exactly zero (both signs) at every 5th and 7th element: no gradient. */
        for (int64_t i = 0; i < in->n; i += 5)
            in->x[i] = 0.0f;
        for (int64_t i = 3; i < in->n; i += 7)
            in->x[i] = -0.0f;
    } else if (c->k == XENT) {
        const int64_t n = c->dims[0], k = c->dims[1];
        th_fill(in->x, in->n, seed);
        for (int64_t i = 0; i < in->n; i++)
            in->x[i] = c->offset + c->amp * in->x[i];
        uint32_t s = seed | 1u;
        for (int64_t i = 0; i < n; i++) {
            s ^= s << 13, s ^= s >> 17, s ^= s << 5;
            in->labels[i] = (int32_t)(s % (uint32_t)k);
        }
        if (n > 1)
            in->labels[n - 1] = (int32_t)(k - 1); /* the last class too */
    } else if (c->k == OPTIM) {
        th_fill(in->w0, in->n, seed);
        th_fill(in->g, in->n * STEPS, seed + 1);
    }
}

static void free_inputs(inputs *in)
{
    free(in->x);
    free(in->dy);
    free(in->labels);
    free(in->w0);
    free(in->g);
}

void parity_train_run(pdnn_device *host, pdnn_device *const *devs, int ndev, int op, const char *set,
                      const char *algo, int verbose)
{
    (void)verbose;
    for (int ci = 0; ci < N_CASES; ci++) {
        const train_case *c = &cases[ci];
        if (!selected(c, op, set))
            continue;
        char cname[256];
        case_name(c, cname, sizeof cname);
        inputs in;
        make_inputs(c, ci, &in);
        const int64_t nout = c->k == XENT ? in.n + 1 : c->k == OPTIM ? 3 * in.n : in.n;
        double *ref = xcalloc((size_t)(c->k == MATMUL ? 2 * nout : nout), sizeof(double));
        if (c->k == TRANSFORM) {
            /* Element (a,b,h,w) moves from x's memory order to y's. */
            int64_t xs[4], ys[4];
            const pdnn_tensor_desc d = desc_of(c);
            pdnn__layout_strides(c->layout, d.dims, xs);
            pdnn__layout_strides(c->to, d.dims, ys);
            for (int64_t a = 0; a < d.dims[0]; a++)
                for (int64_t b = 0; b < d.dims[1]; b++)
                    for (int64_t h = 0; h < d.dims[2]; h++)
                        for (int64_t w = 0; w < d.dims[3]; w++)
                            ref[a * ys[0] + b * ys[1] + h * ys[2] + w * ys[3]] =
                                in.x[a * xs[0] + b * xs[1] + h * xs[2] + w * xs[3]];
        } else if (c->k == BINARY) {
            /* Element (n,c,h,w) of y, and of a and b at the indices clamped to their dims. */
            int64_t as[4], bs[4], ys[4];
            const pdnn_tensor_desc d = desc_of(c), e = bdesc_of(c), f = ydesc_of(c);
            pdnn__layout_strides(c->layout, d.dims, as);
            pdnn__layout_strides(c->layout, e.dims, bs);
            pdnn__layout_strides(c->layout, f.dims, ys);
            int64_t i[4];
            for (i[0] = 0; i[0] < f.dims[0]; i[0]++)
                for (i[1] = 0; i[1] < f.dims[1]; i[1]++)
                    for (i[2] = 0; i[2] < f.dims[2]; i[2]++)
                        for (i[3] = 0; i[3] < f.dims[3]; i[3]++) {
                            int64_t ao = 0, bo = 0, yo = 0;
                            for (int k = 0; k < 4; k++) {
                                ao += (d.dims[k] == 1 ? 0 : i[k]) * as[k];
                                bo += (e.dims[k] == 1 ? 0 : i[k]) * bs[k];
                                yo += i[k] * ys[k];
                            }
                            const double x = in.x[ao], y = in.w0[bo];
                            ref[yo] = c->bop == PDNN_BINARY_MUL   ? x * y
                                      : c->bop == PDNN_BINARY_SUB ? x - y
                                      : c->bop == PDNN_BINARY_DIV ? x / y
                                      : c->bop == PDNN_BINARY_POW ? pow(x, y)
                                                                  : x + y;
                        }
        } else if (c->k == PAD) {
            /* y's (n, c, h, w) from x's at the mirrored, clamped or no index. */
            int64_t xs[4], ys[4];
            const pdnn_tensor_desc d = desc_of(c), e = pdesc_of(c);
            pdnn__layout_strides(c->layout, d.dims, xs);
            pdnn__layout_strides(c->layout, e.dims, ys);
            for (int64_t a = 0; a < e.dims[0]; a++)
                for (int64_t b = 0; b < e.dims[1]; b++)
                    for (int64_t h = 0; h < e.dims[2]; h++)
                        for (int64_t w = 0; w < e.dims[3]; w++) {
                            int64_t src[2] = {h - c->bdims[0], w - c->bdims[1]}, inside = 1;
                            for (int k = 0; k < 2; k++) {
                                const int64_t n = d.dims[2 + k];
                                if (src[k] < 0 || src[k] >= n) {
                                    inside = 0;
                                    if (c->amp == PDNN_PAD_EDGE)
                                        src[k] = src[k] < 0 ? 0 : n - 1;
                                    else if (c->amp == PDNN_PAD_REFLECT)
                                        src[k] = src[k] < 0 ? -src[k] : 2 * n - 2 - src[k];
                                }
                            }
                            ref[a * ys[0] + b * ys[1] + h * ys[2] + w * ys[3]] =
                                !inside && c->amp == PDNN_PAD_CONSTANT
                                    ? (double)c->offset
                                    : in.x[a * xs[0] + b * xs[1] + src[0] * xs[2] + src[1] * xs[3]];
                        }
        } else if (c->k == ACT) {
            for (int64_t i = 0; i < in.n; i++)
                ref[i] = naive_act(c, (double)in.x[i]);
        } else if (c->k == SCALE) {
            for (int64_t i = 0; i < in.n; i++)
                ref[i] = (double)c->lr * (double)in.x[i];
        } else if (c->k == MATMUL) {
            naive_matmul(c, &in, ref);
        } else if (c->k == RELU) {
            for (int64_t i = 0; i < in.n; i++)
                ref[i] = in.x[i] > 0.0f ? (double)in.dy[i] : 0.0;
        } else if (c->k == XENT) {
            double *xd = xcalloc((size_t)in.n, sizeof(double));
            for (int64_t i = 0; i < in.n; i++)
                xd[i] = in.x[i];
            ref[0] = naive_xent(xd, in.labels, c->dims[0], c->dims[1], ref + 1);
            char msg[256];
            const pdnn__algo *ha = pdnn__algos(host, PDNN__OP_SOFTMAX_XENT)[0];
            if (ha && !check_naive_xent(xd, in.labels, c->dims[0], c->dims[1], ref + 1, msg, sizeof msg))
                parity_fail(host, ha, cname, "the naive loop itself: %s", msg);
            free(xd);
        } else {
            naive_optim(c, &in, ref);
        }
        float *got = xcalloc((size_t)nout, sizeof(float));
        for (int di = 0; di < ndev; di++) {
            const pdnn__algo *const *list = pdnn__algos(devs[di], op_of(c));
            for (int ai = 0; list[ai]; ai++) {
                const pdnn__algo *a = list[ai];
                if (algo && strcasecmp(algo, a->name) != 0)
                    continue;
                for (int64_t i = 0; i < nout; i++)
                    got[i] = NAN;
                pdnn__dispatch_force(op_of(c), a->name, -1);
                const pdnn_status st = c->k == RELU     ? run_relu(devs[di], c, &in, got)
                                       : c->k == XENT   ? run_xent(devs[di], c, &in, got)
                                       : c->k == MATMUL ? run_matmul(devs[di], c, &in, got)
                                       : c->k == SCALE  ? run_scale(devs[di], c, &in, got)
                                       : c->k == ACT    ? run_act(devs[di], c, &in, got)
                                       : c->k == TRANSFORM ? run_transform(devs[di], c, &in, got)
                                       : c->k == BINARY ? run_binary(devs[di], c, &in, got)
                                       : c->k == PAD    ? run_pad(devs[di], c, &in, got)
                                                        : run_optim(devs[di], c, &in, got);
                pdnn__dispatch_force(op_of(c), NULL, -1);
                if (st == PDNN_ERR_UNSUPPORTED) {
                    parity_skip(devs[di], a, cname, pdnn_last_error());
                    continue;
                }
                if (st != PDNN_SUCCESS) {
                    parity_fail(devs[di], a, cname, "%s (%s)", pdnn_last_error(), pdnn_status_string(st));
                    continue;
                }
                int64_t at = 0;
                const double tol = pdnn__algo_tol(a, PDNN_FLOAT32);
                const double err = compare(c, &in, got, ref, tol, &at);
                char el[64];
                if (!(err <= tol)) {
                    const int64_t k = c->k == XENT ? at + 1 : at;
                    parity_fail(devs[di], a, cname, "%s is %.9g, expected %.9g: normalised error %.3g, tolerance %.3g",
                                where(c, &in, at, el, sizeof el), (double)got[k], ref[k], err, tol);
                    continue;
                }
                parity_pass(devs[di], a, cname, err);
            }
        }
        free(got);
        free(ref);
        free_inputs(&in);
    }
    fflush(stdout);
}

/* The helpers above for the other case files (parity.h). */
