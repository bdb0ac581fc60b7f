/* Core objects shared by context.c, device.c, tensor.c and ops.c. */
#ifndef POLYDNN_CONTEXT_H
#define POLYDNN_CONTEXT_H

#include "backend.h"
#include "bfc.h"

#include <stdatomic.h>

struct pdnn_device {
    pdnn_context *ctx;
    const pdnn__backend *backend;
    void *handle;              /* the backend's device */
    pdnn__device_props props;
    pdnn_device_type type;
    int index;                 /* N in /device:TYPE:N */
    char name[64];             /* canonical short name */
    pdnn__bfc *alloc;
};

struct pdnn_context {
    pdnn_context_options opts;
    char *visible_devices;     /* owned copy of opts.visible_devices */
    pdnn_device *devices;
    int n_devices;
    atomic_long live_tensors;  /* to catch destroy-before-release */
    /* Why a compiled-in backend found no devices, for `devices --verbose`. */
    char backend_notes[512];
};

struct pdnn_tensor {
    pdnn_device *dev;
    pdnn_tensor_desc desc;
    int64_t bytes;
    pdnn__bfc_block block;
};

/* Parses a full or partial device name into spec (device.c). partial != 0
 * allows missing type/index and "*". */
pdnn_status pdnn__device_spec_parse(const char *name, int partial,
                                    pdnn_device_spec *out);

/* Lists the context's devices as "a, b, c" for messages. */
const char *pdnn__device_list(const pdnn_context *ctx, char *buf, size_t len);

/* Describes a tensor for messages: "[17,64,56,56] NCHW float32". */
const char *pdnn__desc_string(const pdnn_tensor_desc *d, char *buf, size_t len);

#endif
