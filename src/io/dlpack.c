/* DLPack export and import (see polydnn_dlpack.h for the conventions). */
#include "polydnn_dlpack.h"

#include "core/context.h"
#include "core/half.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- export ------------------------------------------------------------- */

/* One allocation per export: the managed struct, its shape and strides,
 * and the reference that keeps the tensor (and so its context) alive. */
typedef struct export_rec {
    DLManagedTensorVersioned v;
    DLManagedTensor l;
    int64_t shape[PDNN_MAX_RANK], strides[PDNN_MAX_RANK];
    pdnn_tensor *t;
    /* 1 for the consumer, who calls the deleter, + 1 while a Python capsule
     * (pdnn_tensor_to_dlpack_capsule) points here: a consumer that calls
     * the deleter and leaves the capsule unconsumed (PyTorch 1.13 on a
     * device it cannot take) must not make the capsule's destructor free
     * it a second time. */
    atomic_int refs;
    atomic_int deleted; /* the deleter ran; later calls change nothing */
} export_rec;

static void export_unref(export_rec *r)
{
    if (atomic_fetch_sub(&r->refs, 1) == 1)
        free(r);
}

/* The deleter: gives the tensor back at once, the record when the capsule
 * (if any) is gone too. */
static void export_delete(export_rec *r)
{
    if (atomic_exchange(&r->deleted, 1))
        return;
    pdnn_tensor *t = r->t;
    export_unref(r);
    pdnn__tensor_unref(t);
}

static void delete_versioned(DLManagedTensorVersioned *self)
{
    if (self)
        export_delete(self->manager_ctx);
}

static void delete_legacy(DLManagedTensor *self)
{
    if (self)
        export_delete(self->manager_ctx);
}

static const char *device_type_name(int type)
{
    switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLVPI: return "kDLVPI";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLExtDev: return "kDLExtDev";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    default: return "unknown";
    }
}

pdnn_status pdnn_device_to_dlpack(const pdnn_device *dev, DLDevice *out)
{
    if (!dev || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_device_to_dlpack: %s is NULL", !dev ? "dev" : "out");
    out->device_type = (DLDeviceType)dev->props.dlpack_type;
    out->device_id = dev->props.dlpack_id;
    return PDNN_SUCCESS;
}

static pdnn_status export_common(const char *fn, pdnn_tensor *t, const void *out, export_rec **rec)
{
    if (!t || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !t ? "tensor" : "out");
    *rec = NULL;
    /* every dtype polydnn stores has a DLPack code */
    /* The consumer may read at once, on any queue: finish ours first. */
    if (t->dev->backend->synchronize) {
        pdnn_status st = t->dev->backend->synchronize(t->dev->handle);
        if (st != PDNN_SUCCESS)
            return st;
    }
    export_rec *r = calloc(1, sizeof *r);
    if (!r)
        return pdnn__host_oom(fn, "the export record", sizeof *r);
    DLTensor *d = &r->v.dl_tensor;
    pdnn__buf buf = t->block.buf;
    if (t->dev->props.dlpack_type != kDLOpenCL) {
        /* Host and CUDA memory allow pointer arithmetic, and consumers
         * such as PyTorch 1.x ignore byte_offset: point at the data. */
        d->data = (char *)buf.region + buf.offset;
        d->byte_offset = 0;
    } else {
        d->data = buf.region; /* a cl_mem: the offset stays apart */
        d->byte_offset = buf.offset;
    }
    d->device.device_type = (DLDeviceType)t->dev->props.dlpack_type;
    d->device.device_id = t->dev->props.dlpack_id;
    d->dtype.code = t->desc.dtype == PDNN_INT32 ? kDLInt : t->desc.dtype == PDNN_BFLOAT16 ? kDLBfloat : kDLFloat;
    d->dtype.bits = (uint8_t)(8 * pdnn__dtype_size(t->desc.dtype));
    d->dtype.lanes = 1;
    if (t->desc.layout == PDNN_LAYOUT_X) {
        d->ndim = 1;
        r->shape[0] = t->desc.dims[0];
        r->strides[0] = 1;
    } else {
        /* ND: its rank, row-major; the image layouts: 4 dims, their strides. */
        d->ndim = pdnn__desc_strides(&t->desc, r->strides);
        memcpy(r->shape, t->desc.dims, sizeof r->shape);
    }
    d->shape = r->shape;
    d->strides = r->strides;
    r->t = t;
    atomic_init(&r->refs, 1);
    atomic_init(&r->deleted, 0);
    pdnn__tensor_ref(t);
    *rec = r;
    return PDNN_SUCCESS;
}

pdnn_status pdnn_tensor_to_dlpack_versioned(pdnn_tensor *t, DLManagedTensorVersioned **out)
{
    export_rec *r = NULL;
    pdnn_status st = export_common("pdnn_tensor_to_dlpack_versioned", t, out, &r);
    if (st != PDNN_SUCCESS || !r)
        return st;
    r->v.version.major = PDNN_DLPACK_MAJOR_VERSION;
    r->v.version.minor = PDNN_DLPACK_MINOR_VERSION;
    r->v.manager_ctx = r;
    r->v.deleter = delete_versioned;
    r->v.flags = 0; /* writable, shared (not a copy) */
    *out = &r->v;
    return PDNN_SUCCESS;
}

pdnn_status pdnn_tensor_to_dlpack(pdnn_tensor *t, DLManagedTensor **out)
{
    export_rec *r = NULL;
    pdnn_status st = export_common("pdnn_tensor_to_dlpack", t, out, &r);
    if (st != PDNN_SUCCESS || !r)
        return st;
    r->l.dl_tensor = r->v.dl_tensor;
    r->l.manager_ctx = r;
    r->l.deleter = delete_legacy;
    *out = &r->l;
    return PDNN_SUCCESS;
}

/* ---- DLPack's Python protocol (capsules) ---------------------------------- */

/* A binding without a compiler (ctypes) cannot write the capsule's
 * destructor in Python: a consumer that refuses a capsule (NumPy on device
 * memory) drops it with its own exception pending, and Python code cannot
 * run then: the destructor fails, the export leaks, and the consumer's
 * error turns into a SystemError. So the destructor is here, in C. The
 * CPython functions it needs are looked up in the process that loaded the
 * library (a Python interpreter, when a binding calls this); no Python
 * header or library is needed to build polydnn. */
typedef struct py_api {
    void *(*capsule_new)(void *pointer, const char *name, void (*destructor)(void *capsule));
    int (*capsule_is_valid)(void *capsule, const char *name);
    int (*capsule_set_context)(void *capsule, void *context);
    void *(*capsule_get_context)(void *capsule);
    void (*decref)(void *object);
} py_api;

static py_api py;
static int py_found;
static pthread_once_t py_once = PTHREAD_ONCE_INIT;

static int py_sym(void *self, const char *name, void *fnptr, size_t size)
{
    void *sym = dlsym(self, name);
    if (sym)
        memcpy(fnptr, &sym, size); /* POSIX: data and function pointers share a representation */
    return sym != NULL;
}

static void py_load(void)
{
    void *self = dlopen(NULL, RTLD_NOW); /* the program and the libraries loaded globally */
    if (!self)
        return;
    py_found = py_sym(self, "PyCapsule_New", &py.capsule_new, sizeof py.capsule_new) &&
               py_sym(self, "PyCapsule_IsValid", &py.capsule_is_valid, sizeof py.capsule_is_valid) &&
               py_sym(self, "PyCapsule_SetContext", &py.capsule_set_context, sizeof py.capsule_set_context) &&
               py_sym(self, "PyCapsule_GetContext", &py.capsule_get_context, sizeof py.capsule_get_context) &&
               py_sym(self, "Py_DecRef", &py.decref, sizeof py.decref);
    dlclose(self); /* the interpreter stays loaded: its functions stay valid */
}

static const char capsule_name_v[] = "dltensor_versioned";
static const char capsule_name_l[] = "dltensor";

/* Runs as the capsule dies, with the GIL held and perhaps an exception
 * pending, which none of these calls reads or changes. A capsule still
 * named "dltensor[_versioned]" was never consumed: the export is still
 * ours to delete (once: a consumer may have called the deleter on its
 * failure path and left the name). */
static void capsule_destructor(void *capsule)
{
    export_rec *r = py.capsule_get_context(capsule);
    if (!r)
        return;
    int unconsumed = py.capsule_is_valid(capsule, capsule_name_v) || py.capsule_is_valid(capsule, capsule_name_l);
    /* The capsule's own reference, and the consumer's if nobody took it. */
    pdnn_tensor *t = NULL;
    int drop = 1;
    if (unconsumed && !atomic_exchange(&r->deleted, 1)) {
        t = r->t;
        drop = 2;
    }
    if (atomic_fetch_sub(&r->refs, drop) == drop)
        free(r);
    if (t)
        pdnn__tensor_unref(t);
}

pdnn_status pdnn_tensor_to_dlpack_capsule(pdnn_tensor *t, int versioned, void **capsule)
{
    const char *fn = "pdnn_tensor_to_dlpack_capsule";
    if (!t || !capsule)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !t ? "tensor" : "capsule");
    *capsule = NULL;
    pthread_once(&py_once, py_load);
    if (!py_found)
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "%s: this process has no Python interpreter (PyCapsule_New is not found); capsules are "
                           "for Python bindings, C code exports with pdnn_tensor_to_dlpack[_versioned]",
                           fn);
    DLManagedTensorVersioned *mv = NULL;
    DLManagedTensor *ml = NULL;
    pdnn_status st = versioned ? pdnn_tensor_to_dlpack_versioned(t, &mv) : pdnn_tensor_to_dlpack(t, &ml);
    if (st != PDNN_SUCCESS || (!mv && !ml))
        return st;
    export_rec *r = versioned ? mv->manager_ctx : ml->manager_ctx;
    atomic_fetch_add(&r->refs, 1); /* the capsule's, taken before it can die */
    void *cap = py.capsule_new(versioned ? (void *)mv : (void *)ml, versioned ? capsule_name_v : capsule_name_l,
                               capsule_destructor);
    if (cap && py.capsule_set_context(cap, r) != 0) {
        py.decref(cap); /* no context yet: its destructor does nothing */
        cap = NULL;
    }
    if (!cap) { /* no capsule ever pointed at r: it is ours alone */
        free(r);
        pdnn__tensor_unref(t);
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "%s: PyCapsule_New failed (the pending Python exception says why)",
                           fn);
    }
    *capsule = cap;
    return PDNN_SUCCESS;
}

/* ---- import ------------------------------------------------------------- */

static void free_versioned(void *m)
{
    DLManagedTensorVersioned *v = m;
    if (v->deleter)
        v->deleter(v);
}

static void free_legacy(void *m)
{
    DLManagedTensor *l = m;
    if (l->deleter)
        l->deleter(l);
}

static pdnn_device *find_device(pdnn_context *ctx, DLDevice want)
{
    for (int i = 0; i < ctx->n_devices; i++) {
        pdnn_device *d = &ctx->devices[i];
        if (d->props.dlpack_type == (int)want.device_type && d->props.dlpack_id == want.device_id)
            return d;
    }
    return NULL;
}

static const char *device_map(const pdnn_context *ctx, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ctx->n_devices && used < len; i++) {
        const pdnn_device *d = &ctx->devices[i];
        int n = snprintf(buf + used, len - used, "%s%s = {%s, %d}", i ? ", " : "", d->name,
                         device_type_name(d->props.dlpack_type), d->props.dlpack_id);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

/* Which layout, among those the role allows, the strides describe. Strides
 * of size-1 dims are free (producers such as PyTorch set them loosely). */
static int match_layout(const int64_t dims[4], const int64_t *strides, pdnn_dlpack_role role)
{
    static const pdnn_layout act[] = {PDNN_NCHW, PDNN_NHWC};
    static const pdnn_layout filt[] = {PDNN_OIHW, PDNN_OHWI, PDNN_HWIO};
    const pdnn_layout *cand = role == PDNN_DLPACK_FILTER ? filt : act;
    int n = role == PDNN_DLPACK_FILTER ? 3 : 2;
    if (!strides)
        return cand[0];
    for (int c = 0; c < n; c++) {
        int64_t want[4];
        pdnn__layout_strides(cand[c], dims, want);
        int ok = 1;
        for (int i = 0; i < 4 && ok; i++)
            ok = dims[i] == 1 || strides[i] == want[i];
        if (ok)
            return cand[c];
    }
    return -1;
}

/* The pdnn_dtype of a DLPack dtype, -1 for none. */
static int dl_dtype(DLDataType t)
{
    if (t.lanes != 1)
        return -1;
    if (t.code == kDLInt && t.bits == 32)
        return PDNN_INT32;
    if (t.code == kDLFloat && (t.bits == 32 || t.bits == 16))
        return t.bits == 32 ? PDNN_FLOAT32 : PDNN_FLOAT16;
    return t.code == kDLBfloat && t.bits == 16 ? PDNN_BFLOAT16 : -1;
}

static pdnn_status import_common(const char *fn, pdnn_context *ctx, const DLTensor *dl, pdnn_dlpack_role role,
                                 void (*ffree)(void *), void *foreign, pdnn_tensor **out)
{
    if (role != PDNN_DLPACK_ACTIVATION && role != PDNN_DLPACK_FILTER)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: role %d is neither PDNN_DLPACK_ACTIVATION nor "
                                                      "PDNN_DLPACK_FILTER", fn, (int)role);
    /* int32 (labels) is taken as it is: only the ops that say so read it. */
    const int dtype = dl_dtype(dl->dtype);
    if (dtype < 0)
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "%s: dtype {code %u, bits %u, lanes %u} is not supported; polydnn takes float32 "
                           "({kDLFloat, 32, 1}), float16 ({kDLFloat, 16, 1}), bfloat16 ({kDLBfloat, 16, 1}) and "
                           "int32 ({kDLInt, 32, 1})",
                           fn, dl->dtype.code, dl->dtype.bits, dl->dtype.lanes);
    const size_t es = pdnn__dtype_size((pdnn_dtype)dtype);
    if (dl->ndim < 0 || dl->ndim > PDNN_MAX_RANK)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s: a %d-D tensor cannot be imported; polydnn takes ranks 0 to %d",
                           fn, (int)dl->ndim, PDNN_MAX_RANK);
    if (!dl->shape && dl->ndim > 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: shape is NULL", fn);
    int64_t bytes = (int64_t)es;
    for (int i = 0; i < dl->ndim; i++) {
        if (dl->shape[i] < 0)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: shape[%d] is %lld; dims cannot be negative", fn, i,
                               (long long)dl->shape[i]);
        if (dl->shape[i] == 0)
            return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s: shape[%d] is 0; zero-size tensors are not supported", fn,
                               i);
        if (dl->shape[i] > INT64_MAX / bytes)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: the shape's byte size does not fit in 64 bits",
                               fn);
        bytes *= dl->shape[i];
    }
    if ((uint64_t)bytes > SIZE_MAX || dl->byte_offset > SIZE_MAX - (uint64_t)bytes)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: byte_offset + size does not fit in size_t", fn);
    if (!dl->data)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: data is NULL for a tensor of %lld bytes", fn,
                           (long long)bytes);

    pdnn_tensor_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.dtype = (pdnn_dtype)dtype;
    if (dl->ndim == 1) {
        if (dl->strides && dl->shape[0] > 1 && dl->strides[0] != 1)
            return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s: a 1-D tensor with stride %lld is not compact", fn,
                               (long long)dl->strides[0]);
        desc.layout = PDNN_LAYOUT_X;
        desc.dims[0] = dl->shape[0];
        desc.dims[1] = desc.dims[2] = desc.dims[3] = 1;
    } else if (dl->ndim != 4) {
        /* Any other rank: ND, compact row-major only (a dim of 1 may have
         * any stride, as numpy and torch give them). */
        desc.layout = PDNN_ND;
        desc.rank = dl->ndim;
        int64_t want = 1;
        int ok = 1;
        for (int i = PDNN_MAX_RANK - 1; i >= 0; i--)
            desc.dims[i] = i < dl->ndim ? dl->shape[i] : 1;
        for (int i = dl->ndim - 1; i >= 0 && dl->strides; i--) {
            ok &= dl->shape[i] == 1 || dl->strides[i] == want;
            want *= dl->shape[i];
        }
        if (!ok) {
            char st[PDNN_MAX_RANK * 22 + 2], sh[PDNN_MAX_RANK * 22 + 2];
            size_t a = 0, b = 0;
            st[0] = sh[0] = 0;
            for (int i = 0; i < dl->ndim; i++) {
                a += (size_t)snprintf(st + a, sizeof st - a, "%s%lld", i ? "," : "", (long long)dl->strides[i]);
                b += (size_t)snprintf(sh + b, sizeof sh - b, "%s%lld", i ? "," : "", (long long)dl->shape[i]);
            }
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "%s: strides [%s] of shape [%s] are not compact row-major (C order); a %d-D tensor "
                               "is imported only so: make it contiguous first",
                               fn, st, sh, (int)dl->ndim);
        }
    } else {
        memcpy(desc.dims, dl->shape, 4 * sizeof desc.dims[0]);
        int layout = match_layout(desc.dims, dl->strides, role);
        if (layout < 0)
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "%s: strides [%lld,%lld,%lld,%lld] of shape [%lld,%lld,%lld,%lld] describe none of "
                               "%s; make the tensor contiguous in one of them first",
                               fn, (long long)dl->strides[0], (long long)dl->strides[1], (long long)dl->strides[2],
                               (long long)dl->strides[3], (long long)desc.dims[0], (long long)desc.dims[1],
                               (long long)desc.dims[2], (long long)desc.dims[3],
                               role == PDNN_DLPACK_FILTER ? "OIHW, OHWI, HWIO" : "NCHW, NHWC");
        desc.layout = (pdnn_layout)layout;
    }

    pdnn_device *dev = find_device(ctx, dl->device);
    if (!dev) {
        char map[512];
        int t = (int)dl->device.device_type;
        if (t != kDLCPU && t != kDLOpenCL && t != kDLCUDA)
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "%s: device type %d (%s) is not one polydnn runs on (kDLCPU, kDLOpenCL, kDLCUDA); "
                               "this context has %s",
                               fn, t, device_type_name(t), device_map(ctx, map, sizeof map));
        return pdnn__error(PDNN_ERR_NOT_FOUND, "%s: no device {%s, %d} in this context; it has %s", fn,
                           device_type_name(t), (int)dl->device.device_id, device_map(ctx, map, sizeof map));
    }
    pdnn__buf buf;
    if (dev->props.dlpack_type == kDLCPU) {
        buf.region = dl->data;
        buf.offset = (size_t)dl->byte_offset;
        if (((uintptr_t)dl->data + buf.offset) % es != 0)
            return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s: host data at %p + %zu is not aligned to %zu bytes", fn,
                               dl->data, buf.offset, es);
    } else {
        buf.region = dl->data;
        buf.offset = (size_t)dl->byte_offset;
        if (buf.offset % (dev->props.base_align ? dev->props.base_align : 1) != 0 ||
            buf.offset % es != 0)
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "%s: byte_offset %zu is not a multiple of the device's alignment (%llu bytes)", fn,
                               buf.offset, (unsigned long long)dev->props.base_align);
    }
    if (dev->props.dlpack_type == kDLCUDA) {
        /* A CUDA pointer may point anywhere inside one of our regions (an
         * export points at the tensor's first element). */
        void *region = NULL;
        size_t size = 0;
        const char *at = (const char *)dl->data + buf.offset;
        if (!pdnn__bfc_region_containing(dev->alloc, at, &region, &size))
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "%s: data %p is not memory polydnn allocated on %s; polydnn imports device memory "
                               "it owns (a tensor it exported), and other runtimes' buffers need a copy",
                               fn, (const void *)at, dev->name);
        buf.region = region;
        buf.offset = (size_t)(at - (const char *)region);
        if ((size_t)bytes > size - buf.offset)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "%s: the tensor needs %lld bytes from offset %zu of its buffer, which holds %zu", fn,
                               (long long)bytes, buf.offset, size);
    } else if (dev->props.dlpack_type != kDLCPU) {
        /* Device memory is accepted only if it is one of our own buffers on
         * that device: a driver cannot safely tell whether an arbitrary
         * pointer is a cl_mem, and one from another OpenCL context could
         * not be used on our queue anyway. */
        size_t size = 0;
        if (!pdnn__bfc_owns_region(dev->alloc, buf.region, &size))
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "%s: data %p is not a buffer polydnn allocated on %s (%s); polydnn imports device "
                               "memory it owns (a tensor it exported), and other runtimes' buffers need a copy "
                               "through the host",
                               fn, buf.region, dev->name, dev->props.dlpack_type == kDLOpenCL ? "a cl_mem" : "device memory");
        if (buf.offset > size || (size_t)bytes > size - buf.offset)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "%s: the tensor needs %lld bytes from byte_offset %zu, but the buffer holds %zu", fn,
                               (long long)bytes, buf.offset, size);
    }
    return pdnn__tensor_wrap(dev, &desc, buf, ffree, foreign, out);
}

pdnn_status pdnn_tensor_from_dlpack_versioned(pdnn_context *ctx, DLManagedTensorVersioned *src,
                                              pdnn_dlpack_role role, pdnn_tensor **out)
{
    const char *fn = "pdnn_tensor_from_dlpack_versioned";
    if (!ctx || !src || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : !src ? "src" : "out");
    *out = NULL;
    if (src->version.major != PDNN_DLPACK_MAJOR_VERSION) {
        unsigned major = src->version.major, minor = src->version.minor;
        free_versioned(src); /* the DLPack spec: on a major mismatch the consumer deletes */
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "%s: DLPack major version %u (%u.%u) is not polydnn's %d (it speaks %d.%d); the "
                           "producer's deleter was called",
                           fn, major, major, minor, PDNN_DLPACK_MAJOR_VERSION, PDNN_DLPACK_MAJOR_VERSION,
                           PDNN_DLPACK_MINOR_VERSION);
    }
    if (src->flags & DLPACK_FLAG_BITMASK_READ_ONLY)
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "%s: the tensor is read-only (DLPACK_FLAG_BITMASK_READ_ONLY) and polydnn tensors are "
                           "writable; copy it first",
                           fn);
    return import_common(fn, ctx, &src->dl_tensor, role, free_versioned, src, out);
}

pdnn_status pdnn_tensor_from_dlpack(pdnn_context *ctx, DLManagedTensor *src, pdnn_dlpack_role role,
                                    pdnn_tensor **out)
{
    const char *fn = "pdnn_tensor_from_dlpack";
    if (!ctx || !src || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : !src ? "src" : "out");
    *out = NULL;
    return import_common(fn, ctx, &src->dl_tensor, role, free_legacy, src, out);
}
