/*
 * The backend interface: what core asks of a device family. A backend
 * fills the function pointers it supports; a NULL op entry means "no
 * kernel for this op here". Core validates every argument before calling
 * an op, so backends may assume consistent shapes, non-NULL buffers and
 * sizes that fit in int64.
 *
 * Storage is (region, byte offset): a region is whatever the backend hands
 * out from region_alloc (a cl_mem, a CUDA pointer, a host pointer); the
 * allocator carves regions into chunks. Kernels take buffer + offset.
 */
#ifndef POLYDNN_BACKEND_H
#define POLYDNN_BACKEND_H

/* configure's results (PDNN_HAVE_OPENCL, ...) decide the registry. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "polydnn.h"

#include <stddef.h>
#include <stdint.h>

/* What a backend reports about a device it found. */
typedef enum pdnn__device_kind {
    PDNN__KIND_HOST = 0,  /* the process's own CPU (host backend)      */
    PDNN__KIND_CPU = 1,   /* a CPU driven through a runtime (PoCL)     */
    PDNN__KIND_GPU = 2,
    PDNN__KIND_ACCELERATOR = 3
} pdnn__device_kind;

typedef struct pdnn__device_props {
    pdnn__device_kind kind;
    char vendor[128];
    char name[256];
    char driver_version[128];
    uint64_t memory_bytes;
    uint64_t max_alloc_bytes;  /* largest region the driver allows       */
    uint64_t base_align;       /* required region offset alignment, bytes */
    uint64_t keep_free;        /* bytes left to the driver by the first-use
                                  reservation (with memory_free); 0: none */
    int compute_units;
    /* How DLPack names this device (polydnn_dlpack.h): a DLDeviceType
     * value (kDLCPU 1, kDLCUDA 2, kDLOpenCL 4) and its device_id. */
    int dlpack_type;
    int dlpack_id;
} pdnn__device_props;

/* A tensor's storage as backends see it. */
typedef struct pdnn__buf {
    void *region;   /* NULL: absent (e.g. no bias) */
    size_t offset;  /* bytes from the region's start */
} pdnn__buf;

/* Element strides of the logical axes of a 4-D tensor in a layout:
 * st[0..3] are the strides of dims[0..3] ({N,C,H,W} or {O,I,H,W}). */
static inline void pdnn__layout_strides(pdnn_layout layout, const int64_t d[4],
                                        int64_t st[4])
{
    switch (layout) {
    case PDNN_NHWC: /* N H W C */
    case PDNN_OHWI: /* O H W I */
        st[1] = 1; st[3] = d[1]; st[2] = d[3] * d[1]; st[0] = d[2] * d[3] * d[1];
        break;
    case PDNN_HWIO: /* H W I O */
        st[0] = 1; st[1] = d[0]; st[3] = d[1] * d[0]; st[2] = d[3] * d[1] * d[0];
        break;
    case PDNN_NCHW:
    case PDNN_OIHW:
    case PDNN_LAYOUT_X:
    default: /* row-major in logical order */
        st[3] = 1; st[2] = d[3]; st[1] = d[2] * d[3]; st[0] = d[1] * d[2] * d[3];
        break;
    }
}

/* ord: the 4 axes by decreasing stride st, i.e. in memory order from the
 * outermost (ties, axes of size 1, keep their logical order). */
static inline void pdnn__stride_order(const int64_t st[4], int ord[4])
{
    for (int i = 0; i < 4; i++)
        ord[i] = i;
    for (int i = 1; i < 4; i++) /* insertion sort */
        for (int j = i; j > 0 && st[ord[j]] > st[ord[j - 1]]; j--) {
            const int t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
}

/* A validated 2-D convolution. Sizes use cuDNN's letters: input N,C,H,W;
 * filter K (out channels), C/groups, R (height), S (width); output N,K,P,Q.
 * All four paddings are given; pad_bottom/pad_right agree with P and Q.
 * The backward ops use the same call with the forward's sizes; which
 * buffers are read and which is written depends on the op:
 *   CONV2D_FWD        reads x, w (and bias)  writes y
 *   CONV2D_BWD_DATA   reads y (dy), w        writes x (dx)
 *   CONV2D_BWD_FILTER reads x, y (dy)        writes w (dw)
 *   CONV2D_BWD_BIAS   reads y (dy)           writes bias (db, K floats)
 * Backward ops overwrite their output (no accumulation) and have relu 0. */
typedef struct pdnn__conv2d_call {
    int64_t n, c, h, w;
    int64_t k, r, s;
    int64_t p, q;
    int64_t groups;
    int stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right;
    int relu;
    /* CONV2D_FWD with relu: > 0 caps it, y = min(max(0, y), relu_cap)
     * (ReLU6); 0: none. Algorithms without pdnn__algo.relu_cap never see
     * a cap: the dispatcher runs them with the relu off, then clips. */
    float relu_cap;
    pdnn_layout x_layout, w_layout, y_layout;
    int64_t xs[4], ws[4], ys[4]; /* element strides, see layout_strides */
    pdnn__buf x_buf, w_buf, bias_buf, y_buf; /* bias_buf.region NULL: none */
    /* CONV2D_FWD only: a residual z (y's dims, layout and strides) added
     * before the relu: y = relu?(conv + bias + z) (cuDNN's z). NULL: none.
     * Algorithms without pdnn__algo.residual never see it: the dispatcher
     * runs them without z and relu, then adds z and applies the relu. */
    pdnn__buf z_buf;
    /* CONV2D_FWD only: the filter's tensor when it is frozen (a session's
     * constant, written only through pdnn_tensor_write), else NULL. An
     * algorithm whose plan sets wpack may then keep its packed copy of
     * the filter on the tensor across calls (src/ops/run.c). */
    pdnn_tensor *w_const;
    /* Set by the dispatcher for a plan with wpack > 0: wpack.bytes of
     * device memory that holds the packed filter (wpack_fill 0), or that
     * the run is to pack it into first (wpack_fill 1). region NULL: pack
     * into the workspace as usual. */
    pdnn__buf wpack;
    int wpack_fill;
} pdnn__conv2d_call;

/* A validated 2-D pooling. Input N,C,H,W; output N,C,P,Q. */
typedef struct pdnn__pool2d_call {
    int64_t n, c, h, w, p, q;
    pdnn_pool_mode mode;
    int win_h, win_w, stride_h, stride_w, pad_top, pad_left;
    int pad_bottom, pad_right;
    pdnn_layout x_layout, y_layout;
    int64_t xs[4], ys[4];
    pdnn__buf x_buf, y_buf;
    /* POOL2D_BWD only: dy in y's layout and strides (y_buf unused); dx
     * (x's dims) in its own; x_buf is read: max pooling finds its maximum
     * there again. */
    pdnn__buf dy_buf, dx_buf;
    pdnn_layout dx_layout;
    int64_t dxs[4];
} pdnn__pool2d_call;

/* dx[i] = y[i] > 0 ? dy[i] : 0, i < n (memory order). dx may be dy. */
typedef struct pdnn__relu_bwd_call {
    int64_t n;
    pdnn__buf y_buf, dy_buf, dx_buf;
} pdnn__relu_bwd_call;

/* Softmax cross-entropy over rows of a row-major n x k matrix with int32
 * labels (n): loss (one float) = mean_i (lse_i - logits[i, label_i]),
 * dlogits (region NULL: none) = (softmax - onehot) / n. A label outside
 * [0, k) makes run fail with PDNN_ERR_INVALID_ARGUMENT naming the first
 * such row (lowest index) and its value; outputs are then unspecified. */
typedef struct pdnn__xent_call {
    int64_t n, k;
    pdnn__buf logits_buf, labels_buf, loss_buf, dlogits_buf;
} pdnn__xent_call;

/* y[i] = alpha * x[i], i < n (memory order). y may be x. */
typedef struct pdnn__scale_call {
    int64_t n;
    float alpha;
    pdnn__buf x_buf, y_buf;
} pdnn__scale_call;

/* y[i] = f(x[i]), i < n (memory order), f by mode (pdnn_activation):
 * CLIP min(max(x, alpha), beta), LEAKY_RELU x >= 0 ? x : alpha x,
 * SIGMOID 1 / (1 + exp(-x)), HARD_SIGMOID max(0, min(1, alpha x +
 * beta)), HARD_SWISH x max(0, min(1, x / 6 + 1 / 2)), SILU x / (1 +
 * exp(-x)). y may be x. */
typedef struct pdnn__act_call {
    int64_t n;
    pdnn_activation mode;
    float alpha, beta;
    pdnn__buf x_buf, y_buf;
} pdnn__act_call;

/* y = a (kind) b over y packed with dims[PDNN_MAX_RANK] in memory order
 * (outermost first; core merges axes it can and pads the front with
 * axes of size 1, so a 4-d call has dims[0..3] = 1): element (i0, ..., i7)
 * is y[(...(i0 d1 + i1) d2 ...) d7 + i7], a[sum ik as[k]] and b likewise
 * through bs (as[k], bs[k] = 0 where that side repeats). y may be a or b
 * where that one is packed like y (no zero stride). */
typedef struct pdnn__binary_call {
    int64_t dims[PDNN_MAX_RANK], as[PDNN_MAX_RANK], bs[PDNN_MAX_RANK];
    pdnn_binary_op kind;
    pdnn__buf a_buf, b_buf, y_buf;
} pdnn__binary_call;

/* Elements of y in a binary call. */
static inline int64_t pdnn__binary_elements(const pdnn__binary_call *c)
{
    int64_t n = 1;
    for (int k = 0; k < PDNN_MAX_RANK; k++)
        n *= c->dims[k];
    return n;
}

/* y = x in another memory order: dims[4] logical ({N,C,H,W} or
 * {O,I,H,W}), xs and ys the element strides of each logical axis in x and
 * y (pdnn__layout_strides). No aliasing. */
typedef struct pdnn__transform_call {
    int64_t dims[4], xs[4], ys[4];
    pdnn__buf x_buf, y_buf;
} pdnn__transform_call;

/* y = x padded along H and W (pdnn_pad): dims {n, c, h, w} are x's,
 * pads {top, left, bottom, right} (>= 0; below h or w for REFLECT), y
 * {n, c, h + top + bottom, w + left + right}; xs and ys each tensor's
 * element strides of n, c, h, w (one layout). No aliasing. */
typedef struct pdnn__pad_call {
    int64_t dims[4], pads[4], xs[4], ys[4];
    pdnn_pad_mode mode;
    float value;
    pdnn__buf x_buf, y_buf;
} pdnn__pad_call;

/* The N-d math ops (src/ops/ops_nd_math.c); core has merged and dropped
 * axes, so each call is in its plainest form.
 * transpose: y packed row-major with dims[rank] (rank 0..PDNN_MAX_RANK,
 *   no axis of size 1, no two neighbours that x holds contiguously), its
 *   element (i0, ..) read from x[sum i_k xs[k]]. No aliasing. */
typedef struct pdnn__transpose_call {
    int rank;
    int64_t dims[PDNN_MAX_RANK], xs[PDNN_MAX_RANK];
    pdnn__buf x_buf, y_buf;
} pdnn__transpose_call;

/* softmax of packed [outer][n][inner] along n (log: log-softmax). No
 * aliasing. */
typedef struct pdnn__softmax_call {
    int64_t outer, n, inner;
    int log;
    pdnn__buf x_buf, y_buf;
} pdnn__softmax_call;

/* layer norm of the rows of packed [rows][cols]: y = (x - mean) /
 * sqrt(var + epsilon) * scale[j] + bias[j] (bias region NULL: none),
 * var biased. No aliasing. */
typedef struct pdnn__layer_norm_call {
    int64_t rows, cols;
    float epsilon;
    pdnn__buf x_buf, scale_buf, bias_buf, y_buf;
} pdnn__layer_norm_call;

/* layer norm's backward over the rows of packed [rows][cols], given the
 * forward's x and scale and dy (y's gradient): which 0: y = dx
 * [rows][cols]; 1: y = dscale [cols], the sum over the rows of dy xhat;
 * 2: y = dbias [cols], the sum over the rows of dy. The row statistics
 * are recomputed as the forward computes them. No aliasing. */
typedef struct pdnn__layer_norm_bwd_call {
    int64_t rows, cols;
    float epsilon;
    int which;
    pdnn__buf x_buf, dy_buf, scale_buf, y_buf;
} pdnn__layer_norm_bwd_call;

/* reduction of packed x with dims[rank] (rank 0..PDNN_MAX_RANK, no axis
 * of size 1 unless rank is 1, neighbours of one kind merged: reduced and
 * kept axes alternate) over the axes whose bit is set in axes; y packed
 * with those dims 1. No aliasing. */
typedef struct pdnn__reduce_call {
    int rank;
    int64_t dims[PDNN_MAX_RANK];
    unsigned axes;
    pdnn_reduction kind;
    pdnn__buf x_buf, y_buf;
} pdnn__reduce_call;

/* Data movement of any rank (pdnn_slice, split, expand, gather, pad_nd,
 * resize: src/ops/ops_index.c): y (rank 0..8, dims, element strides ys)
 * reads x (strides xs; 0 repeats an axis) at per-axis indices: along axis
 * k, y's index i reads x's idx[off_k + i] (off_k the sum of dims before k),
 * and -1 on any axis gives value. lerp >= 0: along that axis y is x at
 * idx (weight 1 - wt[i]) plus x at idx1[i] (weight wt[i]); neither is -1.
 * idx, idx1 and wt are host arrays (a device copies them into its
 * workspace). No aliasing. */
typedef struct pdnn__index_call {
    int rank, lerp;
    int64_t dims[PDNN_MAX_RANK], xs[PDNN_MAX_RANK], ys[PDNN_MAX_RANK];
    int64_t n_idx; /* sum of dims */
    const int64_t *idx, *idx1;
    const float *wt;
    float value;
    pdnn__buf x_buf, y_buf;
} pdnn__index_call;

/* y = m != 0 ? a : b elementwise (pdnn_where): dims y's (rank 0..8), each
 * operand through its element strides (0 on a broadcast axis). */
typedef struct pdnn__where_call {
    int rank;
    int64_t dims[PDNN_MAX_RANK], ms[PDNN_MAX_RANK], as[PDNN_MAX_RANK], bs[PDNN_MAX_RANK], ys[PDNN_MAX_RANK];
    pdnn__buf m_buf, a_buf, b_buf, y_buf;
} pdnn__where_call;

/* The element of x (of dim d, before pads ahead of it) that padded
 * coordinate o reads, or -1 for the constant (pdnn_pad, pdnn_pad_nd). */
static inline int64_t pdnn__pad_src(int64_t o, int64_t before, int64_t d, pdnn_pad_mode mode)
{
    const int64_t i = o - before;
    if (i >= 0 && i < d)
        return i;
    if (mode == PDNN_PAD_CONSTANT)
        return -1;
    if (mode == PDNN_PAD_EDGE)
        return i < 0 ? 0 : d - 1;
    return i < 0 ? -i : 2 * (d - 1) - i; /* reflect: the edge not repeated */
}

/* y[i] = x[i] converted from dtype `from` to `to` (pdnn_cast: float32,
 * float16, bfloat16), i < n (memory order); narrowing rounds to nearest
 * even as src/core/half.c does. The call's dtype is from. No aliasing. */
typedef struct pdnn__cast_call {
    int64_t n;
    pdnn_dtype from, to;
    pdnn__buf x_buf, y_buf;
} pdnn__cast_call;

/* Row-major C[m x n] = op(A) op(B), op(A) m x k, op(B) k x n; A is
 * stored k x m when trans_a, B n x k when trans_b (packed rows). C is
 * overwritten; no aliasing.
 * A batch of such products, one launch: matrix t (0 <= t < batch) reads
 * A at a_buf + t * stride_a elements and B at b_buf + t * stride_b, and
 * writes C at c_buf + t * m * n (C's matrices follow one another). A
 * stride of 0 broadcasts that operand (every t reads the same matrix).
 * batch 0 or 1: one product, the strides unread (pdnn__matmul_batch). */
typedef struct pdnn__matmul_call {
    int64_t m, n, k;
    int trans_a, trans_b;
    pdnn__buf a_buf, b_buf, c_buf;
    int64_t batch, stride_a, stride_b;
} pdnn__matmul_call;

static inline int64_t pdnn__matmul_batch(const pdnn__matmul_call *c) { return c->batch > 1 ? c->batch : 1; }

/* One optimizer step over n elements, see pdnn_optimizer_update: w, g,
 * s1 (region NULL: SGD without momentum), s2 (Adam's v). Core has checked
 * the parameters. Not idempotent: run it exactly once per call. */
typedef struct pdnn__optim_call {
    int64_t n;
    pdnn_optimizer_kind kind;
    float lr, momentum, weight_decay, beta1, beta2, epsilon;
    int64_t step;
    pdnn__buf w_buf, g_buf, s1_buf, s2_buf;
    int nesterov; /* SGD */
} pdnn__optim_call;

/* ---- ops and their algorithm registries -----------------------------------
 * An op that has algorithms (several ways to compute it, chosen per call)
 * is one value of pdnn__op with one member of pdnn__op_call. Each backend
 * lists, per op, its algorithms (pdnn__algo); core (src/ops/dispatch.c)
 * chooses among them: what applies and whose workspace the allocator can
 * give, then the tuning cache's measured choice, else the lowest rank.
 * Adding an op adds an enum value, a call member and table entries;
 * adding an algorithm adds one entry to its backend's table. */
typedef enum pdnn__op {
    PDNN__OP_CONV2D_FWD = 0,
    PDNN__OP_POOL2D_FWD = 1,
    PDNN__OP_CONV2D_BWD_DATA = 2,   /* u.conv2d, see pdnn__conv2d_call */
    PDNN__OP_CONV2D_BWD_FILTER = 3, /* u.conv2d */
    PDNN__OP_CONV2D_BWD_BIAS = 4,   /* u.conv2d */
    PDNN__OP_POOL2D_BWD = 5,        /* u.pool2d, see pdnn__pool2d_call */
    /* batch normalization: u.bn, see pdnn__bn_call */
    PDNN__OP_BN_FWD_TRAIN = 6,
    PDNN__OP_BN_FWD_INFER = 7,
    PDNN__OP_BN_BWD = 8,
    PDNN__OP_RELU_BWD = 9,          /* u.relu_bwd */
    PDNN__OP_SOFTMAX_XENT = 10,     /* u.xent */
    PDNN__OP_OPTIMIZER = 11,        /* u.optim; updates in place */
    PDNN__OP_GEMM = 12,             /* u.matmul (pdnn_matmul) */
    PDNN__OP_SCALE = 13,            /* u.scale (pdnn_scale) */
    PDNN__OP_ACTIVATION = 14,       /* u.act (pdnn_activation_forward) */
    PDNN__OP_TRANSFORM = 15,        /* u.transform (pdnn_transform) */
    PDNN__OP_BINARY = 16,           /* u.binary (pdnn_binary) */
    PDNN__OP_PAD = 17,              /* u.pad (pdnn_pad) */
    PDNN__OP_ND_TRANSPOSE = 18,        /* u.transpose (pdnn_transpose) */
    PDNN__OP_ND_SOFTMAX = 19,          /* u.softmax (pdnn_softmax_axis) */
    PDNN__OP_ND_LAYER_NORM = 20,       /* u.layer_norm (pdnn_layer_norm) */
    PDNN__OP_ND_REDUCE = 21,           /* u.reduce (pdnn_reduce) */
    PDNN__OP_INDEX = 22,            /* u.index (pdnn_slice, gather, ...) */
    PDNN__OP_WHERE = 23,            /* u.where (pdnn_where) */
    PDNN__OP_CAST = 24,             /* u.cast (pdnn_cast) */
    PDNN__OP_ND_LAYER_NORM_BWD = 25, /* u.layer_norm_bwd (pdnn__layer_norm_backward, ops_nd_grad.c) */
    PDNN__OP_COUNT
} pdnn__op;

/* The ops whose call is u.conv2d. */
static inline int pdnn__op_is_conv(pdnn__op op)
{
    return op == PDNN__OP_CONV2D_FWD || op == PDNN__OP_CONV2D_BWD_DATA || op == PDNN__OP_CONV2D_BWD_FILTER ||
           op == PDNN__OP_CONV2D_BWD_BIAS;
}

/* A validated batch normalization over N, H, W per channel C. x, y, dy
 * and dx share dims {N,C,H,W}, layout (NCHW or NHWC) and strides xs; the
 * per-channel vectors are C packed floats. Which buffers are read and
 * written depends on the op:
 *   BN_FWD_TRAIN  reads x, gamma, beta (and running_*)  writes y, the batch
 *                 statistics saved_mean/saved_inv_std (region NULL: not
 *                 wanted) and running_mean/var (NULL: not updated), which
 *                 take (1 - momentum) * running + momentum * batch, the
 *                 variance unbiased (m = N*H*W > 1 when they are given)
 *   BN_FWD_INFER  reads x, gamma, beta, running_mean/var  writes y
 *   BN_BWD        reads x, dy, gamma, saved_mean, saved_inv_std  writes dx,
 *                 dgamma, dbeta (each may be NULL: not wanted)
 * saved_inv_std is 1/sqrt(var_biased + epsilon). */
typedef struct pdnn__bn_call {
    int64_t n, c, h, w;
    pdnn_layout layout;
    int64_t xs[4];
    float epsilon, momentum;
    pdnn__buf x_buf, y_buf, gamma_buf, beta_buf, running_mean_buf, running_var_buf, saved_mean_buf,
        saved_inv_std_buf;
    pdnn__buf dy_buf, dx_buf, dgamma_buf, dbeta_buf;
} pdnn__bn_call;

static inline int pdnn__op_is_bn(pdnn__op op)
{
    return op == PDNN__OP_BN_FWD_TRAIN || op == PDNN__OP_BN_FWD_INFER || op == PDNN__OP_BN_BWD;
}

typedef struct pdnn__op_call {
    pdnn__op op;
    union {
        pdnn__conv2d_call conv2d;
        pdnn__pool2d_call pool2d;
        pdnn__bn_call bn;
        pdnn__relu_bwd_call relu_bwd;
        pdnn__xent_call xent;
        pdnn__optim_call optim;
        pdnn__matmul_call matmul;
        pdnn__scale_call scale;
        pdnn__act_call act;
        pdnn__transform_call transform;
        pdnn__binary_call binary;
        pdnn__pad_call pad;
        pdnn__transpose_call transpose;
        pdnn__softmax_call softmax;
        pdnn__layer_norm_call layer_norm;
        pdnn__reduce_call reduce;
        pdnn__index_call index;
        pdnn__where_call where;
        pdnn__cast_call cast;
        pdnn__layer_norm_bwd_call layer_norm_bwd;
    } u;
    /* Set by core for every call. */
    pdnn_tuning_mode tuning;  /* the context's: may plan search now?       */
    const char *device_key;   /* the tuning cache's device: "backend|vendor|name|driver" */
    int force_config;         /* >= 0: plan must take this configuration
                                 (tests; see pdnn__dispatch_force) */
    /* The context's enable_tensor_float_32_execution: float32 work may
     * use TF32 tensor cores (CUDA reads it; other backends ignore it). */
    int allow_tf32;
    /* Set by the op: AUTO's workspace limit (pdnn_conv2d_params'), bytes;
     * 0: none. AUTO tries plans within it first; a plan may use it to
     * choose a configuration within it (CUDA: cuDNN's next proposal). */
    size_t ws_limit;
    /* Set by the op: the dtype its float tensors are stored in, one for
     * the call (0, float32, where the op leaves it; pdnn__algo.dtypes
     * says which an algorithm takes, checked by core before plan). */
    pdnn_dtype dtype;
} pdnn__op_call;

#define PDNN__WHY_LEN 256
#define PDNN__CONFIG_LEN 48

/* What an algorithm's plan decided for one call. Core zeroes it and sets
 * supported = 1, config = -1 and rank = the entry's rank before calling
 * plan; plan refuses with pdnn__plan_refuse. */
typedef struct pdnn__plan {
    int supported;             /* 0: why says what stops this algorithm   */
    int auto_skip;             /* supported, but AUTO's fixed order passes
                                  over it for this call (why says why)    */
    int verdict_only;          /* set by core before plan: refuse and skip
                                  record the verdict without wording why  */
    char why[PDNN__WHY_LEN];
    int rank;                  /* AUTO's fixed order, lower first         */
    size_t workspace;          /* bytes run needs                         */
    int config;                /* configuration chosen (-1: not tunable)  */
    char config_name[PDNN__CONFIG_LEN]; /* e.g. "tq=8 kb=1"               */
    int cached;                /* config came from the tuning cache       */
    int search;                /* run searches the configurations first;
                                  workspace covers every one of them     */
    size_t wpack;              /* CONV2D_FWD with a frozen filter (w_const):
                                  bytes of the packed filter run can keep
                                  on it across calls, not counted in
                                  workspace; 0: none                     */
    /* Whatever else run needs (a vendor algorithm, offsets in the
     * workspace); plan writes it, run reads it. */
    _Alignas(16) unsigned char state[256];
} pdnn__plan;

/* What run reports back (tuning). */
typedef struct pdnn__run_report {
    int config;                      /* the configuration that ran */
    char config_name[PDNN__CONFIG_LEN];
    int searched;                    /* run searched the configurations */
    double search_seconds;
} pdnn__run_report;

/* How far an algorithm's output may be from the exact result: a fraction
 * of the output's scale, per dtype (indexed by pdnn_dtype; float16 and
 * bfloat16 against the host reference's reduced result, see
 * PDNN__TOL_REDUCED). Each entry of a registry sets its own (pdnn__algo.tol):
 *   0                 PDNN__TOL_DEFAULT, 1e-5: a plain sum per output, in
 *                     any order and blocking (direct, tiled, GEMMs,
 *                     depthwise, reductions, elementwise), stays below
 *                     ~1e-7 of its sum of |terms| in practice; 1e-5 is about
 *                     80 float32 eps, above any order of summation and well
 *                     below a defect (a wrong tap, a lost channel: >= ~1e-2).
 *   PDNN__TOL_EXACT   bit for bit: selections and copies (relu_bwd,
 *                     transform).
 *   > 0               that bound; Winograd F(4x4,3x3) (2e-4) rounds in
 *                     transformed space, its error following a whole input
 *                     tile times the transform's gains (~4e-6 of the scale
 *                     inside, up to ~10x that near padding), still 50x below
 *                     a defect. A vendor library's choice (cuDNN) may be
 *                     Winograd or FFT and gets the same.
 * Who reads it (pdnn__algo_tol), each against its own reference:
 *   the parity harness (tests/parity.c, tests/parity_train.c): every
 *     algorithm against the host's reference (the host's own against naive
 *     loops), per element, scaled by the sum of |terms| that make it (the
 *     op's own measure where it has none, see the harness); the number as
 *     it is. Max pooling's forward is held to exact whatever the entry says:
 *     every algorithm selects one input there.
 *   the configuration search (pdnn__search_configs): each configuration of
 *     a tunable algorithm against its default configuration at run time,
 *     where only the outputs are at hand: the largest difference over
 *     1 + the largest |output|. Configurations of one kernel make the same
 *     approximation and differ only in how they block its sums, so they
 *     must agree to the plain sum's bound even where the algorithm's own
 *     is looser: the smaller of the entry's and PDNN__TOL_DEFAULT.
 *   the find (AUTO's measured choice, src/ops/choose.c): each candidate
 *     against the plainest applicable algorithm (ranked last), on that
 *     same run-time scale: the looser of the two entries' bounds times
 *     PDNN__TOL_FIND_FACTOR. Against the largest output instead of each
 *     element's sum of |terms|, rounding shows up to ~sqrt(terms) larger
 *     (Winograd's differs from direct's by up to ~1e-3 of the largest
 *     output at C = 512); 25 leaves 5x over that: a gross-error check, not
 *     a precision test. */
#define PDNN__TOL_DTYPES 3 /* float32, float16, bfloat16 */
typedef struct pdnn__tolerance {
    double of[PDNN__TOL_DTYPES];
} pdnn__tolerance;
#define PDNN__TOL_DEFAULT 1e-5
#define PDNN__TOL_EXACT (-1.0)
#define PDNN__TOL_WINOGRAD 2e-4
#define PDNN__TOL_FIND_FACTOR 25.0
/* Initialisers of pdnn__algo.tol: float32's bound; the other dtypes'
 * stay 0 (the default) until an op computes them. */
#define PDNN__TOL_F32(t) {.of = {[PDNN_FLOAT32] = (t)}}
/* An algorithm that computes float16 and bfloat16 in float32 from the
 * widened inputs and rounds each output once (the host reference's
 * contract, docs/precision.md) differs from the reference by its float32
 * bound before the rounding, which can move a result across a rounding
 * boundary: one unit in the last place of the dtype, relative (2^-10 for
 * float16's 10 fraction bits, 2^-7 for bfloat16's 7); a defect is off by
 * far more. float32's bound t. */
#define PDNN__TOL_F16 0x1p-10
#define PDNN__TOL_BF16 0x1p-7
#define PDNN__TOL_REDUCED(t) {.of = {[PDNN_FLOAT32] = (t), [PDNN_FLOAT16] = PDNN__TOL_F16, [PDNN_BFLOAT16] = PDNN__TOL_BF16}}

typedef struct pdnn__algo {
    pdnn__op op;
    /* The public name ("tiled"), and for conv2d its pdnn_conv_algo value
     * where the public enum has one (0: core gives the name the next free
     * id, the same for every backend that has an algorithm of that name;
     * pdnn_conv_algo_parse finds it). */
    const char *name;
    int id;
    int rank;                  /* untuned order; plan may change it */
    /* Built for GPUs (work-group tiles through local memory): AUTO passes
     * over it on CPU devices, and the parity harness checks it there on
     * small cases only. */
    int gpu_class;
    /* Tunable configurations: how many (0: none) and the name of each as
     * the tuning cache stores it. */
    int n_configs;
    void (*config_name)(int i, char *buf, size_t len);
    /* Decides whether and how the algorithm runs call on dev: fills plan
     * (supported/why, workspace, config, state). Never fails otherwise;
     * may not enqueue work. */
    void (*plan)(void *dev, const pdnn__op_call *call, pdnn__plan *plan);
    /* Runs call as planned, with plan->workspace bytes at ws (ws.region
     * NULL when 0). rep may be NULL. */
    pdnn_status (*run)(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                       pdnn__run_report *rep);
    /* CONV2D_FWD: 1 if run adds call's z_buf in its epilogue. */
    int residual;
    /* CONV2D_FWD: 1 if run applies call's relu_cap in its epilogue. */
    int relu_cap;
    /* How far run's output may be from the exact result (see
     * pdnn__tolerance above). */
    pdnn__tolerance tol;
    /* The storage dtypes run takes (PDNN__DTYPE_BIT each; 0: float32
     * only). Core refuses an algorithm without the call's dtype before
     * its plan, naming both (AUTO passes over it), unless its backend's
     * run_reduced takes the op (see pdnn__algo_takes_dtype). */
    unsigned dtypes;
} pdnn__algo;

#define PDNN__DTYPE_BIT(t) (1u << (unsigned)(t))
#define PDNN__DTYPES_FLOAT \
    (PDNN__DTYPE_BIT(PDNN_FLOAT32) | PDNN__DTYPE_BIT(PDNN_FLOAT16) | PDNN__DTYPE_BIT(PDNN_BFLOAT16))

/* A GPU-class algorithm that AUTO passes over here (a CPU device): the
 * find does not run it and tune does not search it either (PoCL runs it
 * at a few GFLOP/s; searching its configurations would cost minutes per
 * shape). */
static inline int pdnn__gpu_class_passed_over(const pdnn__algo *a, const pdnn__plan *p)
{
    return a->gpu_class && p->auto_skip;
}

/* a's bound for dtype: 0 for exact; where unset, PDNN__TOL_DEFAULT for
 * float32 and one unit in the last place for float16 and bfloat16 (see
 * PDNN__TOL_REDUCED). */
static inline double pdnn__algo_tol(const pdnn__algo *a, pdnn_dtype dtype)
{
    const double t = (unsigned)dtype < PDNN__TOL_DTYPES ? a->tol.of[dtype] : 0.0;
    const double unset = dtype == PDNN_FLOAT16    ? PDNN__TOL_F16
                         : dtype == PDNN_BFLOAT16 ? PDNN__TOL_BF16
                                                  : PDNN__TOL_DEFAULT;
    return t < 0.0 ? 0.0 : t > 0.0 ? t : unset;
}

typedef struct pdnn__backend pdnn__backend;

struct pdnn__backend {
    const char *name; /* "host", "opencl", "cuda" */

    /* Finds this backend's devices. On success *devs is an array of *n
     * opaque device handles and *props their properties, both malloc'd
     * (caller frees the arrays, and each handle with device_close). A
     * backend with no devices returns success with *n = 0; *why may then
     * point at a static string saying why (no platform, no driver). */
    pdnn_status (*enumerate)(void ***devs, pdnn__device_props **props, int *n,
                             const char **why);
    void (*device_close)(void *dev);

    /* Memory. Regions are what the allocator carves into tensors. */
    pdnn_status (*region_alloc)(void *dev, size_t bytes, void **region);
    void (*region_free)(void *dev, void *region);
    /* Optional (NULL: not known): the bytes the driver could hand out now.
     * Reserving the whole limit on first use (no allow_growth) takes at
     * most this less props.keep_free, so the driver's and the vendor
     * libraries' own allocations (cuDNN and cuBLAS kernels load lazily)
     * and other processes' contexts still fit. */
    pdnn_status (*memory_free)(void *dev, uint64_t *bytes);
    pdnn_status (*write)(void *dev, pdnn__buf dst, const void *src, size_t bytes);
    pdnn_status (*read)(void *dev, pdnn__buf src, void *dst, size_t bytes);
    pdnn_status (*copy)(void *dev, pdnn__buf dst, pdnn__buf src, size_t bytes);
    /* rows blocks of width bytes: row r from src + r * src_pitch to
     * dst + r * dst_pitch (no overlap). Offsets, pitches and width are
     * whole float32 elements (multiples of 4 bytes; pdnn_concat, the one
     * caller, copies float32 tensors). NULL: core loops over copy. */
    pdnn_status (*copy_rows)(void *dev, pdnn__buf dst, size_t dst_pitch, pdnn__buf src, size_t src_pitch,
                             size_t width, size_t rows);
    pdnn_status (*synchronize)(void *dev);
    /* 1 if every use of a region is a command on its device's one
     * in-order queue (stream), as with this backend's read, write, copy
     * and kernels: memory freed while commands that use it are still
     * queued may be handed out again at once, since the next user's
     * commands queue behind them. 0: a tensor's release waits for the
     * device first. */
    int in_order;

    /* Per op, a NULL-terminated array of this backend's algorithms (NULL:
     * the op does not run here). */
    const pdnn__algo *const *algos[PDNN__OP_COUNT];

    /* The ops around convolution (ops_nn.c validates; float32; buffers of
     * one call may alias only where said). Elements are addressed in
     * memory order, so layouts enter only through outer/c/inner. */
    /* y[i] = a[i] + b[i], i < n. y may alias a or b. */
    pdnn_status (*add)(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf y, int64_t n);
    /* y[i] = relu?(x[i] + bias[(i / inner) % c]), i < n. y may alias x. */
    pdnn_status (*bias_add)(void *dev, pdnn__buf x, pdnn__buf bias, pdnn__buf y, int64_t n, int64_t c,
                            int64_t inner, int relu);
    /* y[i] = max(x[i], 0), i < n; NaN stays NaN. y may alias x. */
    pdnn_status (*relu)(void *dev, pdnn__buf x, pdnn__buf y, int64_t n);
    /* Softmax over the middle axis of x viewed as [outer][c][inner]:
     * y[o,k,i] = exp(x[o,k,i] - m) / sum_j exp(x[o,j,i] - m), m the max
     * over j. No aliasing. */
    pdnn_status (*softmax)(void *dev, pdnn__buf x, pdnn__buf y, int64_t outer, int64_t c, int64_t inner);

    /* Measures the device's fp32 FMA rate (GFLOP/s, 2 per FMA) and copy
     * bandwidth (GB/s, bytes read + written) with small kernels of its
     * own, outside the allocator; takes up to a few seconds. NULL:
     * unknown (pdnn_device_measure_peak says unsupported). */
    pdnn_status (*measure_peak)(void *dev, double *gflops, double *gbytes_per_s);

    /* Reduced precision through float32 (NULL: none): runs a, an
     * algorithm of this backend that computes float32 only, on call in
     * float16 or bfloat16 storage: widens the inputs, runs a, rounds the
     * outputs once (the host's reference, backends/host/host_lowp.c).
     * reduced_ops: the ops it takes, a bit (1ull << op) each. */
    pdnn_status (*run_reduced)(void *dev, const pdnn__algo *a, const pdnn__op_call *call, const pdnn__plan *plan,
                               pdnn__buf ws, pdnn__run_report *rep);
    unsigned long long reduced_ops;
};

/* 1 if a of backend b runs call's dtype: natively (a->dtypes) or through
 * b's run_reduced; *native says which. */
static inline int pdnn__algo_takes_dtype(const pdnn__backend *b, const pdnn__algo *a, const pdnn__op_call *call,
                                         int *native)
{
    const unsigned mask = a->dtypes ? a->dtypes : PDNN__DTYPE_BIT(PDNN_FLOAT32);
    *native = (unsigned)call->dtype < 32 && (mask & PDNN__DTYPE_BIT(call->dtype)) != 0;
    if (*native)
        return 1;
    return b->run_reduced && (b->reduced_ops >> call->op & 1ull) &&
           (call->dtype == PDNN_FLOAT16 || call->dtype == PDNN_BFLOAT16);
}

/* The registry: compiled-in backends in enumeration order. */
extern const pdnn__backend pdnn__host_backend;
#ifdef PDNN_HAVE_CUDA
extern const pdnn__backend pdnn__cuda_backend;
#endif
#ifdef PDNN_HAVE_OPENCL
extern const pdnn__backend pdnn__opencl_backend;
#endif

/* ---- core helpers for backends (src/ops/: op_key.c, plan.c, config_search.c) */

/* The tuning cache's shape key of a call: every field that changes what
 * a kernel does (layouts, dtype, every size, stride, dilation, all four
 * paddings, groups, output size, bias and ReLU are not: they change no
 * choice). One format for every op and backend. */
void pdnn__op_key(const pdnn__op_call *call, char *buf, size_t len);

/* Floating-point operations of one run of call (2 per multiply-add), or
 * the elements it touches for ops without arithmetic to speak of. */
double pdnn__op_flops(const pdnn__op_call *call);

/* Writes a refusal into plan: supported = 0, why = the formatted text
 * (left empty where plan->verdict_only: AUTO's candidates). */
void pdnn__plan_refuse(pdnn__plan *plan, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Writes a reason AUTO's fixed order passes over a supported plan:
 * auto_skip = 1, why = the text (as pdnn__plan_refuse, none where
 * plan->verdict_only). */
void pdnn__plan_skip(pdnn__plan *plan, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Picks a tunable algorithm's configuration for plan (one rule for every
 * backend): call->force_config where it applies; else, unless tuning is
 * off, the tuning cache's entry for (device, kernel, shape) where it names
 * one that applies (plan->cached = 1); else dflt, with plan->search = 1
 * when the context may search now. applies(dev, call, i) says whether
 * configuration i can run call. Returns the index (-1: none applies) and
 * fills plan->config and plan->config_name. */
int pdnn__plan_pick_config(void *dev, const pdnn__op_call *call, const pdnn__algo *algo, const char *kernel,
                           int (*applies)(void *dev, const pdnn__op_call *call, int i), int dflt, pdnn__plan *plan);

/* The search behind plan->search, for every backend: each configuration
 * i with usable(i) is run once (run_config), its output read back with
 * the backend's read and checked against dflt's output; the survivors are
 * timed in rounds (the backend's synchronize after each run) and the
 * fastest is stored in the tuning cache under (device, kernel, shape).
 * The backend's read and synchronize must not take a lock run_config's
 * caller holds. Returns the best (dflt when nothing else ran)
 * and fills rep. */
typedef struct pdnn__config_search {
    void *dev;
    const pdnn__op_call *call;
    const pdnn__algo *algo;
    const char *kernel;
    int dflt;
    int (*usable)(void *dev, const pdnn__op_call *call, int i);
    pdnn_status (*run_config)(void *dev, const pdnn__op_call *call, int i, pdnn__buf ws);
    const pdnn__backend *backend; /* dev's: its read and synchronize */
    pdnn__buf ws;
} pdnn__config_search;
int pdnn__search_configs(const pdnn__config_search *s, pdnn__run_report *rep);

/* Monotonic seconds. */
double pdnn__now(void);

/* Errors (src/core/error.c): records the message for pdnn_last_error() and
 * returns status, so failures read `return pdnn__error(...)`. */
pdnn_status pdnn__error(pdnn_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prints "polydnn: debug: ..." to stderr when POLYDNN_DEBUG=1. */
void pdnn__debug(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Formats a byte count for messages, e.g. "3.8 GiB" ("1 KiB", "512 B"). */
const char *pdnn__format_bytes(uint64_t bytes, char *buf, size_t len);

/* A failed host allocation (src/core/memory.c): PDNN_ERR_OUT_OF_MEMORY with
 * "<where>: out of host memory for <what>: N bytes (X MiB)", so that every
 * such message names the buffer and its size. */
pdnn_status pdnn__host_oom(const char *where, const char *what, uint64_t bytes);

#endif /* POLYDNN_BACKEND_H */
