/*
 * polydnn — DLPack interop: hand tensors to other frameworks and take
 * theirs, without a copy.
 *
 * We follow DLPack 1.1 (github.com/dmlc/dlpack, include/dlpack/dlpack.h):
 * both the versioned ABI (DLManagedTensorVersioned, with version and flags)
 * and the legacy DLManagedTensor that older consumers use (PyTorch before
 * 2.4, Debian 12's libdlpack 0.6). The structs are written out here from
 * the published ABI, so no dlpack header is needed. If a DLPack 1.x header
 * is included first, its definitions are used; if a pre-1.0 one (0.6) is,
 * only the versioned structs are added to it; including <dlpack/dlpack.h>
 * after this header is a no-op (same include guard).
 *
 * Devices (DLDevice):
 *   kDLCPU     device_id 0      the host device, /device:CPU:0. data is the
 *                               element pointer; byte_offset is 0 on
 *                               export and honoured on import.
 *   kDLOpenCL  device_id = the  the OpenCL device's position among all
 *              OpenCL devices   available OpenCL devices, platforms in
 *                               clGetPlatformIDs order and devices in
 *                               clGetDeviceIDs(CL_DEVICE_TYPE_ALL) order;
 *                               unaffected by POLYDNN_VISIBLE_DEVICES. data
 *                               is the cl_mem, and the tensor's place in it
 *                               is byte_offset: a cl_mem allows no pointer
 *                               arithmetic. An imported cl_mem must be one
 *                               of polydnn's own buffers on that device (a
 *                               tensor polydnn exported): an arbitrary
 *                               pointer cannot be checked safely, and a
 *                               cl_mem of another context is unusable on
 *                               our queue.
 *   kDLCUDA    device_id = the  CUDA ordinal (CUDA backend builds only).
 *                               data points at the first element
 *                               (byte_offset 0 on export). An imported
 *                               pointer must lie in memory polydnn
 *                               allocated on that device (a tensor it
 *                               exported); other runtimes' CUDA buffers
 *                               are refused rather than trusted unchecked.
 *
 * Synchronisation: before export, the device's queue is finished
 * (pdnn_device_synchronize), so a consumer on any stream or queue may read
 * the data at once. On import, the producer must have finished writing;
 * polydnn does not wait on a foreign stream.
 *
 * Shapes and strides: a polydnn tensor exports with its logical dims as the
 * shape ({N,C,H,W}, {O,I,H,W}, {length} for a layout-X vector, an ND
 * tensor's rank-many dims, none for rank 0) and strides (in elements,
 * always present) that encode its layout; an NHWC activation thus looks
 * exactly like a PyTorch channels_last tensor. On import, NULL strides
 * mean compact row-major; a 4-D tensor's strides must describe one of the
 * layouts the role allows (see pdnn_dlpack_role), a tensor of any other
 * rank (0, 2, 3, 5 to 8) is imported as PDNN_ND and must be compact
 * row-major (a dim of 1 may have any stride); else the call fails with
 * PDNN_ERR_UNSUPPORTED naming the strides. No import copies data.
 *
 * Ownership:
 *   export  The returned managed tensor keeps the tensor's memory (and the
 *           context) alive until its deleter is called, exactly once, by
 *           the consumer. pdnn_tensor_release() and the deleter may come in
 *           either order; the memory goes back to the allocator after both.
 *           pdnn_context_destroy() with exports still alive is deferred
 *           until the last deleter.
 *   import  On success polydnn owns src and calls its deleter when the
 *           imported tensor is released. On failure the caller still owns
 *           src, except after a DLPack major-version mismatch
 *           (PDNN_ERR_UNSUPPORTED, "major version" in the message), where,
 *           as the DLPack spec requires, polydnn has called src's deleter.
 */
#ifndef POLYDNN_DLPACK_H
#define POLYDNN_DLPACK_H

#include "polydnn.h"

#include <stddef.h>
#include <stdint.h>

#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_ /* a later <dlpack/dlpack.h> is then a no-op */

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16,
    kDLMAIA = 17
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLOpaqueHandle = 3U,
    kDLBfloat = 4U,
    kDLComplex = 5U,
    kDLBool = 6U
} DLDataTypeCode;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL means compact row-major */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

#ifdef __cplusplus
}
#endif
#endif /* DLPACK_DLPACK_H_ */

#if !defined(DLPACK_MAJOR_VERSION)
/* A pre-1.0 dlpack.h came first: it lacks the versioned ABI. */
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1
#ifdef __cplusplus
extern "C" {
#endif
typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;
#ifdef __cplusplus
}
#endif
#endif

#if DLPACK_MAJOR_VERSION != 1
#error "polydnn_dlpack.h speaks DLPack 1.x; an included dlpack.h has another major version"
#endif

#ifndef DLPACK_FLAG_BITMASK_READ_ONLY /* ours, or a 0.6 header's missing parts */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)
#ifdef __cplusplus
extern "C" {
#endif
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;
#ifdef __cplusplus
}
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The DLPack version polydnn produces and accepts (major must match). */
#define PDNN_DLPACK_MAJOR_VERSION 1
#define PDNN_DLPACK_MINOR_VERSION 1

/* What an imported 4-D tensor is, which decides the layouts its strides
 * may describe (its shape is always read in logical order). */
typedef enum pdnn_dlpack_role {
    PDNN_DLPACK_ACTIVATION = 0, /* shape {N,C,H,W}; strides NCHW or NHWC    */
    PDNN_DLPACK_FILTER = 1      /* shape {O,I,H,W}; strides OIHW, OHWI, HWIO */
} pdnn_dlpack_role;

/* Exports t. *out is valid until its deleter is called, which must be
 * called exactly once. The export holds t, and t its context: t may be
 * released and its context destroyed first. The data is
 * shared, not copied: writes on either side are seen by the other. dtype:
 * float32 {kDLFloat, 32, 1}, float16 {kDLFloat, 16, 1}, bfloat16
 * {kDLBfloat, 16, 1}, int32 {kDLInt, 32, 1}. A
 * 1-D shape {length} is exported for a layout-X tensor, an ND tensor's
 * own rank (0 to 8) with C-order strides for PDNN_ND. */
PDNN_API pdnn_status pdnn_tensor_to_dlpack_versioned(pdnn_tensor *t, DLManagedTensorVersioned **out);
PDNN_API pdnn_status pdnn_tensor_to_dlpack(pdnn_tensor *t, DLManagedTensor **out);

/* DLPack's Python protocol for bindings without a compiler (ctypes, cffi):
 * *capsule receives a new reference to a PyCapsule (a PyObject *) named
 * "dltensor_versioned" (versioned != 0) or "dltensor" that holds a new
 * export of t. Its destructor is C and follows the protocol: a capsule
 * never consumed (not renamed "used_dltensor[_versioned]") calls the
 * export's deleter as it dies, and the deleter runs at most once even for
 * a consumer that calls it and leaves the capsule unconsumed; it is safe
 * with a Python exception pending (a consumer's refusal). Call it with the
 * GIL held (ctypes: a PYFUNCTYPE prototype) in a Python process; elsewhere
 * it fails with PDNN_ERR_UNSUPPORTED. */
PDNN_API pdnn_status pdnn_tensor_to_dlpack_capsule(pdnn_tensor *t, int versioned, void **capsule);

/* Imports src as a tensor of ctx on the device src names. Accepted: float32,
 * float16, bfloat16, int32 (lanes 1, the codes above); ndim 4 (shape read as the role's logical dims), ndim 1 (a
 * layout-X vector, e.g. a bias) or any other ndim up to PDNN_MAX_RANK
 * (PDNN_ND, C order); every dim >= 1; non-NULL data; a byte
 * size that fits in 64 bits; data + byte_offset aligned to the element
 * size on the host. The versioned form also checks the major version and refuses
 * read-only tensors (polydnn ops may write any tensor they are given). */
PDNN_API pdnn_status pdnn_tensor_from_dlpack_versioned(pdnn_context *ctx, DLManagedTensorVersioned *src,
                                                       pdnn_dlpack_role role, pdnn_tensor **out);
PDNN_API pdnn_status pdnn_tensor_from_dlpack(pdnn_context *ctx, DLManagedTensor *src,
                                             pdnn_dlpack_role role, pdnn_tensor **out);

/* The DLDevice a polydnn device exports as ({kDLCPU,0}, {kDLOpenCL,id},
 * {kDLCUDA,ordinal}). */
PDNN_API pdnn_status pdnn_device_to_dlpack(const pdnn_device *dev, DLDevice *out);

#ifdef __cplusplus
}
#endif

#endif /* POLYDNN_DLPACK_H */
