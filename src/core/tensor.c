/* Tensor descriptors, validation and storage on a device. */
#include "core/context.h"
#include "core/half.h"
#include "polydnn_dlpack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const layout_names[] = {"NCHW", "NHWC", "OIHW", "OHWI", "HWIO", "X", "ND"};

int pdnn_layout_parse(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < (int)(sizeof layout_names / sizeof layout_names[0]); i++)
        if (strcasecmp(name, layout_names[i]) == 0)
            return i;
    return -1;
}

const char *pdnn_layout_name(pdnn_layout layout)
{
    if ((unsigned)layout < sizeof layout_names / sizeof layout_names[0])
        return layout_names[layout];
    return "unknown";
}

static int64_t dtype_size(pdnn_dtype t)
{
    switch (t) {
    case PDNN_FLOAT32: return 4;
    case PDNN_FLOAT16:
    case PDNN_BFLOAT16: return 2;
    case PDNN_INT32: return 4;
    }
    return 0;
}

int pdnn_tensor_desc_rank(const pdnn_tensor_desc *d)
{
    if (!d || (unsigned)d->layout > PDNN_ND)
        return -1;
    if (d->layout == PDNN_ND)
        return d->rank;
    return d->layout == PDNN_LAYOUT_X ? 1 : 4;
}

/* The dims that count for d's layout: 4 for the image layouts and X (X's
 * last three are 1), rank for ND. */
static int counted_dims(const pdnn_tensor_desc *d)
{
    return d->layout == PDNN_ND ? d->rank : 4;
}

void pdnn__desc_canon(const pdnn_tensor_desc *d, pdnn_tensor_desc *out)
{
    pdnn_tensor_desc c = *d;
    int n = counted_dims(d);
    if (n < 0 || n > PDNN_MAX_RANK)
        n = PDNN_MAX_RANK;
    for (int i = n; i < PDNN_MAX_RANK; i++)
        c.dims[i] = 1;
    c.rank = pdnn_tensor_desc_rank(d);
    *out = c;
}

int pdnn__desc_strides(const pdnn_tensor_desc *d, int64_t st[PDNN_MAX_RANK])
{
    if (d->layout != PDNN_ND) {
        pdnn__layout_strides(d->layout, d->dims, st);
        return 4;
    }
    int64_t s = 1;
    for (int i = d->rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= d->dims[i];
    }
    return d->rank;
}

const char *pdnn__desc_string(const pdnn_tensor_desc *d, char *buf, size_t len)
{
    char dims[PDNN_MAX_RANK * 21 + 4];
    size_t at = 0;
    int n = counted_dims(d);
    if (n < 0 || n > PDNN_MAX_RANK)
        n = PDNN_MAX_RANK;
    dims[at++] = '[';
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(dims + at, sizeof dims - at, "%s%lld", i ? "," : "", (long long)d->dims[i]);
    snprintf(dims + at, sizeof dims - at, "]");
    snprintf(buf, len, "%s %s %s", dims, pdnn_layout_name(d->layout), pdnn__dtype_name(d->dtype));
    return buf;
}

pdnn_status pdnn_tensor_desc_validate(const pdnn_tensor_desc *d)
{
    if (!d)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "tensor descriptor is NULL");
    if (dtype_size(d->dtype) == 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "tensor dtype %d is unknown; dtypes are PDNN_FLOAT32, PDNN_FLOAT16, PDNN_BFLOAT16, PDNN_INT32",
                           (int)d->dtype);
    if ((unsigned)d->layout > PDNN_ND)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "tensor layout %d is unknown; layouts are NCHW, NHWC, OIHW, OHWI, HWIO, X, ND",
                           (int)d->layout);
    if (d->layout == PDNN_ND && (d->rank < 0 || d->rank > PDNN_MAX_RANK))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "tensor rank %d is invalid: an ND tensor has rank 0 to %d",
                           d->rank, PDNN_MAX_RANK);
    int n = counted_dims(d);
    char dbuf[PDNN_MAX_RANK * 21 + 32];
    for (int i = 0; i < n; i++) {
        if (d->dims[i] < 1)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "tensor dims %s are invalid: dim %d is %lld, every dim must be >= 1",
                               pdnn__desc_string(d, dbuf, sizeof dbuf), i, (long long)d->dims[i]);
    }
    for (int i = n; i < PDNN_MAX_RANK; i++) {
        if (d->dims[i] != 0 && d->dims[i] != 1)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "tensor dims %s: dim %d (%lld) is past the rank (%d); it must be 0 or 1",
                               pdnn__desc_string(d, dbuf, sizeof dbuf), i, (long long)d->dims[i], n);
    }
    if (d->layout == PDNN_LAYOUT_X && (d->dims[1] != 1 || d->dims[2] != 1 || d->dims[3] != 1))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "a layout-X (vector) tensor has dims {length,1,1,1}; got [%lld,%lld,%lld,%lld]",
                           (long long)d->dims[0], (long long)d->dims[1], (long long)d->dims[2],
                           (long long)d->dims[3]);
    int64_t bytes = dtype_size(d->dtype);
    for (int i = 0; i < n; i++) {
        if (d->dims[i] > INT64_MAX / bytes)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "tensor dims %s overflow: the size does not fit in 64 bits",
                               pdnn__desc_string(d, dbuf, sizeof dbuf));
        bytes *= d->dims[i];
    }
    return PDNN_SUCCESS;
}

int64_t pdnn_tensor_desc_elements(const pdnn_tensor_desc *d)
{
    /* Checked here rather than through pdnn_tensor_desc_validate so that
     * a size query does not overwrite the caller's last error. */
    if (!d || dtype_size(d->dtype) == 0 || (unsigned)d->layout > PDNN_ND)
        return 0;
    int n = counted_dims(d);
    if (n < 0 || n > PDNN_MAX_RANK)
        return 0;
    int64_t e = 1;
    for (int i = 0; i < n; i++) {
        if (d->dims[i] < 1 || d->dims[i] > INT64_MAX / dtype_size(d->dtype) / e)
            return 0;
        e *= d->dims[i];
    }
    return e;
}

int64_t pdnn_tensor_desc_bytes(const pdnn_tensor_desc *d)
{
    int64_t n = pdnn_tensor_desc_elements(d);
    return n ? n * dtype_size(d->dtype) : 0;
}

pdnn_status pdnn_tensor_create(pdnn_device *dev, const pdnn_tensor_desc *desc, pdnn_tensor **out)
{
    if (!dev || !desc || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_tensor_create: %s is NULL",
                           !dev ? "dev" : !desc ? "desc" : "out");
    *out = NULL;
    pdnn_status st = pdnn_tensor_desc_validate(desc);
    if (st != PDNN_SUCCESS)
        return st;
    int64_t bytes = pdnn_tensor_desc_bytes(desc);
    if ((uint64_t)bytes > SIZE_MAX)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_tensor_create: size does not fit in size_t");
    pdnn_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return pdnn__host_oom("pdnn_tensor_create", "the tensor record", sizeof *t);
    char what[128];
    char dbuf[96];
    snprintf(what, sizeof what, "tensor %s", pdnn__desc_string(desc, dbuf, sizeof dbuf));
    st = pdnn__device_alloc(dev, (size_t)bytes, what, &t->block);
    if (st != PDNN_SUCCESS) {
        free(t);
        if (st == PDNN_ERR_OUT_OF_MEMORY) {
            const char *env = getenv("POLYDNN_MEMORY_SUMMARY_ON_OOM");
            if (env && strcmp(env, "1") == 0) {
                char dump[8192];
                pdnn__bfc_summary(dev->alloc, dump, sizeof dump);
                fprintf(stderr, "polydnn: %s\n%s\n", pdnn_last_error(), dump);
            }
        }
        return st;
    }
    t->dev = dev;
    pdnn__desc_canon(desc, &t->desc);
    t->bytes = bytes;
    pthread_mutex_init(&t->pack_lock, NULL);
    atomic_init(&t->refs, 1);
    pdnn__context_ref(dev->ctx);
    *out = t;
    return PDNN_SUCCESS;
}

pdnn_status pdnn__tensor_wrap(pdnn_device *dev, const pdnn_tensor_desc *desc, pdnn__buf buf,
                              void (*foreign_free)(void *), void *foreign, pdnn_tensor **out)
{
    pdnn_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return pdnn__host_oom("wrapping foreign memory", "the tensor record", sizeof *t);
    t->dev = dev;
    pdnn__desc_canon(desc, &t->desc);
    t->bytes = pdnn_tensor_desc_bytes(desc);
    t->block.buf = buf;
    t->block.bytes = (size_t)t->bytes;
    pthread_mutex_init(&t->pack_lock, NULL);
    atomic_init(&t->refs, 1);
    t->foreign_free = foreign_free;
    t->foreign = foreign;
    pdnn__context_ref(dev->ctx);
    *out = t;
    return PDNN_SUCCESS;
}

void pdnn__tensor_ref(pdnn_tensor *t) { atomic_fetch_add(&t->refs, 1); }

void pdnn__tensor_freeze(pdnn_tensor *t) { t->frozen = 1; }

pdnn_status pdnn_tensor_freeze(pdnn_tensor *t)
{
    if (!t)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_tensor_freeze: the tensor is NULL");
    pdnn__tensor_freeze(t);
    return PDNN_SUCCESS;
}

/* Guards every device's list of tensors with packed copies. Order: a
 * tensor's pack_lock, then this; the eviction takes this first and only
 * tries the tensors' locks. */
static pthread_mutex_t packs_mu = PTHREAD_MUTEX_INITIALIZER;

static void pack_unlink(pdnn_tensor *t)
{
    if (t->pack_prev)
        t->pack_prev->pack_next = t->pack_next;
    else
        t->dev->packs = t->pack_next;
    if (t->pack_next)
        t->pack_next->pack_prev = t->pack_prev;
    t->pack_prev = t->pack_next = NULL;
}

void pdnn__tensor_pack_drop(pdnn_tensor *t)
{
    if (!t->pack.owner)
        return;
    pthread_mutex_lock(&packs_mu);
    pack_unlink(t);
    pthread_mutex_unlock(&packs_mu);
    pdnn__bfc_free(t->dev->alloc, t->pack.block.handle);
    memset(&t->pack, 0, sizeof t->pack);
}

pdnn_status pdnn__tensor_pack_alloc(pdnn_tensor *t, const void *owner, int config, size_t bytes)
{
    pdnn__bfc_block b;
    pdnn_status st = pdnn__bfc_alloc(t->dev->alloc, bytes, "conv2d packed filter", &b);
    if (st != PDNN_SUCCESS)
        return st;
    t->pack.owner = owner;
    t->pack.config = config;
    t->pack.bytes = bytes;
    t->pack.block = b;
    t->pack.filled = 0;
    pthread_mutex_lock(&packs_mu);
    t->pack_prev = NULL;
    t->pack_next = t->dev->packs;
    if (t->dev->packs)
        t->dev->packs->pack_prev = t;
    t->dev->packs = t;
    pthread_mutex_unlock(&packs_mu);
    return PDNN_SUCCESS;
}

/* Frees the packed copies on dev whose tensors no call is using now.
 * Returns how many. */
static int evict_packs(pdnn_device *dev)
{
    int n = 0;
    pthread_mutex_lock(&packs_mu);
    for (pdnn_tensor *t = dev->packs, *next; t; t = next) {
        next = t->pack_next;
        if (pthread_mutex_trylock(&t->pack_lock) != 0)
            continue;
        pack_unlink(t);
        pdnn__bfc_free(dev->alloc, t->pack.block.handle);
        memset(&t->pack, 0, sizeof t->pack);
        pthread_mutex_unlock(&t->pack_lock);
        n++;
    }
    pthread_mutex_unlock(&packs_mu);
    if (n)
        atomic_fetch_add(&dev->pack_evictions, 1);
    return n;
}

pdnn_status pdnn__device_alloc(pdnn_device *dev, size_t bytes, const char *label, pdnn__bfc_block *out)
{
    pdnn_status st = pdnn__bfc_alloc(dev->alloc, bytes, label, out);
    if (st == PDNN_ERR_OUT_OF_MEMORY && evict_packs(dev) > 0)
        st = pdnn__bfc_alloc(dev->alloc, bytes, label, out);
    return st;
}

size_t pdnn__tensor_pack_bytes(pdnn_tensor *t)
{
    pthread_mutex_lock(&t->pack_lock);
    const size_t n = t->pack.owner ? t->pack.bytes : 0;
    pthread_mutex_unlock(&t->pack_lock);
    return n;
}

void pdnn__tensor_unref(pdnn_tensor *t)
{
    if (atomic_fetch_sub(&t->refs, 1) != 1)
        return;
    /* The device may still be reading this memory (a queued op). On an
     * in-order backend the next tensor that reuses the chunk queues behind
     * that op; else, and for memory that goes back to its owner, wait.
     * (A wait per release was a clFinish per node of a session's run.) */
    if (t->dev->backend->synchronize && (t->foreign_free || !t->dev->backend->in_order))
        t->dev->backend->synchronize(t->dev->handle);
    /* The context goes last: the memory belongs to its devices, and a
     * foreign_free may release an export (and a tensor) of the same one. */
    pdnn_context *ctx = t->dev->ctx;
    pthread_mutex_lock(&t->pack_lock);
    pdnn__tensor_pack_drop(t);
    pthread_mutex_unlock(&t->pack_lock);
    pthread_mutex_destroy(&t->pack_lock);
    if (t->foreign_free)
        t->foreign_free(t->foreign);
    else
        pdnn__bfc_free(t->dev->alloc, t->block.handle);
    free(t);
    pdnn__context_unref(ctx);
}

static void view_release(void *base) { pdnn__tensor_unref(base); }

pdnn_status pdnn_tensor_view(pdnn_tensor *x, const pdnn_tensor_desc *desc, pdnn_tensor **out)
{
    if (!x || !desc || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_tensor_view: %s is NULL",
                           !x ? "x" : !desc ? "desc" : "out");
    *out = NULL;
    pdnn_status st = pdnn_tensor_desc_validate(desc);
    if (st != PDNN_SUCCESS)
        return st;
    if (desc->dtype != x->desc.dtype || pdnn_tensor_desc_bytes(desc) != x->bytes) {
        char a[PDNN_MAX_RANK * 21 + 32], b[PDNN_MAX_RANK * 21 + 32];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_tensor_view: %s cannot be viewed as %s: a view keeps the dtype and the "
                           "element count",
                           pdnn__desc_string(&x->desc, a, sizeof a), pdnn__desc_string(desc, b, sizeof b));
    }
    pdnn__tensor_ref(x);
    st = pdnn__tensor_wrap(x->dev, desc, x->block.buf, view_release, x, out);
    if (st != PDNN_SUCCESS)
        pdnn__tensor_unref(x);
    return st;
}

static pdnn_status check_io(const char *fn, const pdnn_tensor *t, const void *p, size_t bytes)
{
    if (!t || !p)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                           !t ? "tensor" : "host pointer");
    if ((int64_t)bytes != t->bytes || bytes > (size_t)INT64_MAX) {
        char d[96];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: %zu bytes given, but tensor %s holds %lld bytes", fn, bytes,
                           pdnn__desc_string(&t->desc, d, sizeof d), (long long)t->bytes);
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn_tensor_write(pdnn_tensor *t, const void *src, size_t bytes)
{
    pdnn_status st = check_io("pdnn_tensor_write", t, src, bytes);
    if (st != PDNN_SUCCESS)
        return st;
    /* A packed copy of the old contents would be read instead of the new. */
    pthread_mutex_lock(&t->pack_lock);
    pdnn__tensor_pack_drop(t);
    pthread_mutex_unlock(&t->pack_lock);
    if (t->foreign_free == view_release) {
        pdnn_tensor *base = t->foreign;
        pthread_mutex_lock(&base->pack_lock);
        pdnn__tensor_pack_drop(base);
        pthread_mutex_unlock(&base->pack_lock);
    }
    return t->dev->backend->write(t->dev->handle, t->block.buf, src, bytes);
}

pdnn_status pdnn_tensor_read(const pdnn_tensor *t, void *dst, size_t bytes)
{
    pdnn_status st = check_io("pdnn_tensor_read", t, dst, bytes);
    if (st != PDNN_SUCCESS)
        return st;
    return t->dev->backend->read(t->dev->handle, t->block.buf, dst, bytes);
}

pdnn_status pdnn_tensor_get_desc(const pdnn_tensor *t, pdnn_tensor_desc *out)
{
    if (!t || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_tensor_get_desc: %s is NULL",
                           !t ? "tensor" : "out");
    *out = t->desc;
    return PDNN_SUCCESS;
}

pdnn_device *pdnn_tensor_device(const pdnn_tensor *t) { return t ? t->dev : NULL; }

void pdnn_tensor_release(pdnn_tensor *t)
{
    if (t)
        pdnn__tensor_unref(t);
}

/* Where a tensor's bytes lie, for the overlap test: a host (or CUDA)
 * region is an address, so two imports of one buffer compare by address;
 * an OpenCL region is a cl_mem handle, so only offsets within the same
 * one compare. */
static int overlap(const pdnn_tensor *a, const pdnn_tensor *b, int *same_start)
{
    *same_start = 0;
    if (a->dev != b->dev)
        return 0; /* ops refuse tensors on two devices before this */
    uintptr_t sa, sb;
    if (a->block.buf.region == b->block.buf.region) {
        sa = a->block.buf.offset;
        sb = b->block.buf.offset;
    } else if (a->dev->props.dlpack_type == kDLCPU) {
        sa = (uintptr_t)a->block.buf.region + a->block.buf.offset;
        sb = (uintptr_t)b->block.buf.region + b->block.buf.offset;
    } else {
        return 0; /* two device allocations never share bytes */
    }
    *same_start = sa == sb;
    return sa < sb + (uintptr_t)b->bytes && sb < sa + (uintptr_t)a->bytes;
}

int pdnn__same_storage(const pdnn_tensor *a, const pdnn_tensor *b)
{
    int same_start = 0;
    return overlap(a, b, &same_start) && same_start && a->bytes == b->bytes;
}

pdnn_status pdnn__check_alias(const char *op, const pdnn_tensor *out, const char *out_name, const pdnn_tensor *in,
                              const char *in_name, int in_place_ok)
{
    int same_start = 0;
    if (!out || !in || !overlap(out, in, &same_start))
        return PDNN_SUCCESS;
    if (same_start && out->bytes == in->bytes) {
        /* Elementwise kernels run in place only element for element. */
        if (in_place_ok && out->desc.layout == in->desc.layout)
            return PDNN_SUCCESS;
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: %s and %s are the same memory%s; %s cannot write its output over its input: give "
                           "%s memory of its own",
                           op, out_name, in_name, out == in ? "" : " (two tensors over one buffer)", op, out_name);
    }
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                       "%s: %s and %s overlap in memory (two tensors over parts of one buffer); the output may not "
                       "overlap an input%s",
                       op, out_name, in_name, in_place_ok ? " other than by being exactly the same tensor" : "");
}
