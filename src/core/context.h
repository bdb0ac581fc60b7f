/* Core objects shared by context.c, device.c, tensor.c and ops.c. */
#ifndef POLYDNN_CONTEXT_H
#define POLYDNN_CONTEXT_H

#include "backend.h"
#include "core/bfc.h"

#include <pthread.h>
#include <stdatomic.h>

/* A frozen tensor's packed copy (see pdnn_tensor.pack). */
typedef struct pdnn__tensor_pack {
    const void *owner;     /* the pdnn__algo that packed it; NULL: none */
    int config;            /* its configuration (pdnn__plan.config) */
    size_t bytes;
    pdnn__bfc_block block; /* from the tensor's device's allocator */
    int filled;            /* a run has packed into it */
} pdnn__tensor_pack;

struct pdnn_device {
    pdnn_context *ctx;
    const pdnn__backend *backend;
    void *handle;              /* the backend's device */
    pdnn__device_props props;
    pdnn_device_type type;
    int index;                 /* N in /device:TYPE:N */
    char name[64];             /* canonical short name */
    char tune_key[640];        /* the tuning cache's device: "backend|vendor|name|driver" */
    pdnn__bfc *alloc;
    /* The frozen tensors here that hold packed copies (a list through
     * pdnn_tensor.pack_next), which give way when an allocation finds no
     * room (pdnn__device_alloc); evictions counts the times they did. */
    pdnn_tensor *packs;
    atomic_long pack_evictions;
};

struct pdnn_context {
    pdnn_context_options opts;
    char *visible_devices;     /* owned copy of opts.visible_devices */
    pdnn_device *devices;
    int n_devices;
    /* 1 for the creator's handle (pdnn_context_destroy drops it), 1 per
     * live tensor (created or imported) and 1 per session: whichever goes
     * last frees the devices and their allocators, in any order. */
    atomic_long refs;
    atomic_int destroyed;      /* pdnn_context_destroy ran: a second call is refused */
    /* Why a compiled-in backend found no devices, for `devices --verbose`. */
    char backend_notes[512];
};

struct pdnn_tensor {
    pdnn_device *dev;
    pdnn_tensor_desc desc;
    int64_t bytes;
    pdnn__bfc_block block;     /* block.handle is NULL for foreign memory */
    /* 1 for the caller's handle + 1 per live DLPack export. The tensor
     * holds a reference on its context until its last one goes. */
    atomic_int refs;
    /* Foreign memory (a DLPack import): called once, at the last unref,
     * instead of returning the block to the allocator. */
    void (*foreign_free)(void *foreign);
    void *foreign;
    /* A session's constant (pdnn__tensor_freeze): nothing writes it but
     * pdnn_tensor_write, which drops pack. pack is one algorithm's copy of
     * it in that algorithm's order (a packed filter), made on a first
     * call and read by later ones instead of packing each time. */
    int frozen;
    pthread_mutex_t pack_lock;
    pdnn__tensor_pack pack;
    pdnn_tensor *pack_prev, *pack_next; /* dev->packs while pack.owner */
};

/* The compiled-in backends in enumeration order (context.c). */
const pdnn__backend *const *pdnn__backend_list(int *n);

/* Wraps memory polydnn does not own as a tensor (dlpack.c). On success the
 * tensor owns foreign and calls foreign_free(foreign) when released. */
pdnn_status pdnn__tensor_wrap(pdnn_device *dev, const pdnn_tensor_desc *desc, pdnn__buf buf,
                              void (*foreign_free)(void *), void *foreign, pdnn_tensor **out);

/* Reference counting (tensor.c, context.c): DLPack exports hold their
 * tensor, tensors and sessions their context. */
void pdnn__tensor_ref(pdnn_tensor *t);
/* Marks t a constant whose packed copies algorithms may keep (sessions'
 * constants; see pdnn_tensor.frozen). */
void pdnn__tensor_freeze(pdnn_tensor *t);
/* Bytes of t's packed copy (0: none), for a session's live-set count. */
size_t pdnn__tensor_pack_bytes(pdnn_tensor *t);
/* Frees t's packed copy; call with t->pack_lock held. */
void pdnn__tensor_pack_drop(pdnn_tensor *t);
/* Gives t (pack_lock held, no copy) a packed copy of bytes for
 * configuration config of algorithm owner, unfilled. It never evicts
 * another tensor's copy: out of memory is returned instead. */
pdnn_status pdnn__tensor_pack_alloc(pdnn_tensor *t, const void *owner, int config, size_t bytes);
/* pdnn__bfc_alloc on dev's allocator; where there is no room, the packed
 * copies of dev's tensors not in use give way and it tries once more. */
pdnn_status pdnn__device_alloc(pdnn_device *dev, size_t bytes, const char *label, pdnn__bfc_block *out);
void pdnn__tensor_unref(pdnn_tensor *t);
void pdnn__context_ref(pdnn_context *ctx);
void pdnn__context_unref(pdnn_context *ctx);

/* A memory limit above device_bytes (the device's total memory; 0 =
 * unknown) is clamped to it with a one-line warning on stderr naming what
 * ("memory_limit", ...) and the device; src (may be NULL) then says so for
 * OOM messages. Returns the limit to use (context.c). */
uint64_t pdnn__clamp_memory_limit(const char *dev_name, uint64_t device_bytes, uint64_t limit,
                                  const char *what, char *src, size_t len);

/* PDNN_SUCCESS unless the storage of op's output out overlaps that of its
 * input in (imported memory can alias): the same storage passes only when
 * in_place_ok, for ops whose kernels allow y to be x (tensor.c). */
pdnn_status pdnn__check_alias(const char *op, const pdnn_tensor *out, const char *out_name, const pdnn_tensor *in,
                              const char *in_name, int in_place_ok);

/* Whether a and b are the same bytes (two tensors over one buffer). */
int pdnn__same_storage(const pdnn_tensor *a, const pdnn_tensor *b);

/* Parses a full or partial device name into spec (device.c). partial != 0
 * allows missing type/index and "*". */
pdnn_status pdnn__device_spec_parse(const char *name, int partial,
                                    pdnn_device_spec *out);

/* Lists the context's devices as "a, b, c" for messages. */
const char *pdnn__device_list(const pdnn_context *ctx, char *buf, size_t len);

/* Describes a tensor for messages: "[17,64,56,56] NCHW float32". */
const char *pdnn__desc_string(const pdnn_tensor_desc *d, char *buf, size_t len);
/* out = d with its rank set and the dims past it 1 (d valid), the form
 * tensors and graph nodes keep so that descriptors compare with memcmp. */
void pdnn__desc_canon(const pdnn_tensor_desc *d, pdnn_tensor_desc *out);
/* The layout the ops around convolution (bias_add, softmax, softmax
 * cross-entropy, bias gradients) read an activation in: NCHW and NHWC as
 * they are, an ND tensor of rank 2 to 4 as NCHW (a {rows, cols} matrix is
 * {rows, cols, 1, 1}: the same bytes); -1 for anything else. */
static inline int pdnn__act_layout(const pdnn_tensor_desc *d)
{
    if (d->layout == PDNN_NCHW || d->layout == PDNN_NHWC)
        return (int)d->layout;
    return d->layout == PDNN_ND && d->rank >= 2 && d->rank <= 4 ? (int)PDNN_NCHW : -1;
}
/* st[i]: the element stride of d's logical axis i; returns how many axes
 * there are: ND its rank (row-major), every other layout 4
 * (pdnn__layout_strides; X as {L, 1, 1, 1}). */
int pdnn__desc_strides(const pdnn_tensor_desc *d, int64_t st[PDNN_MAX_RANK]);

/* The op-level checks that pdnn_activation_forward and pdnn_concat share
 * with their graph nodes (ops_nn.c). pdnn__activation_check: NULL when
 * mode, alpha and beta make an activation, else why not, written to buf.
 * pdnn__concat_compatible: whether a and b may be concatenated along
 * axis (same layout, rank and dtype, same dims but axis, axis below the
 * rank: pdnn__desc_strides's count). */
const char *pdnn__activation_check(pdnn_activation mode, float alpha, float beta, char *buf, size_t len);
int pdnn__concat_compatible(const pdnn_tensor_desc *a, const pdnn_tensor_desc *b, int axis);
/* The N-d shape rules pdnn_binary and pdnn_matmul share with their graph
 * nodes (ops_nn.c). pdnn__binary_nd_shape: *y (ND, a's dtype) = numpy's
 * broadcast of a and b (ND or X), ranks aligned from the right; 0 where
 * they do not broadcast. pdnn__matmul_nd_shape: *c (ND) = numpy's matmul
 * of a and b (ND, X as rank 1, {R, C, 1, 1} NCHW/NHWC matrices as rank
 * 2) with the last two dims transposed where asked; 0 and why, written
 * to buf, where they do not fit. */
int pdnn__binary_nd_shape(const pdnn_tensor_desc *a, const pdnn_tensor_desc *b, pdnn_tensor_desc *y);
int pdnn__matmul_nd_shape(const pdnn_tensor_desc *a, const pdnn_tensor_desc *b, int trans_a, int trans_b,
                          pdnn_tensor_desc *c, char *buf, size_t len);
/* How many GEMM dispatches pdnn_matmul issues for a and b (each a
 * strided batch of *batch matrices); -1 where they do not fit. */
int64_t pdnn__matmul_dispatches(const pdnn_tensor_desc *a, const pdnn_tensor_desc *b, int trans_a, int trans_b,
                                int64_t *batch);

#endif
