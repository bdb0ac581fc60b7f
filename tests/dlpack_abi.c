/* Layout of the legacy DLPack structs as Debian's <dlpack/dlpack.h> (0.6)
 * defines them, for test_dlpack.c to compare with polydnn_dlpack.h. This
 * file must not include polydnn_dlpack.h: the two would collide. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stddef.h>
#include <string.h>

int dlabi_available(void);
size_t dlabi_value(const char *what);

#ifdef HAVE_DLPACK_DLPACK_H
#include <dlpack/dlpack.h>

int dlabi_available(void) { return 1; }

size_t dlabi_value(const char *what)
{
    static const struct {
        const char *name;
        size_t value;
    } table[] = {
        {"sizeof DLTensor", sizeof(DLTensor)},
        {"sizeof DLManagedTensor", sizeof(DLManagedTensor)},
        {"sizeof DLDevice", sizeof(DLDevice)},
        {"sizeof DLDataType", sizeof(DLDataType)},
        {"offset data", offsetof(DLTensor, data)},
        {"offset device", offsetof(DLTensor, device)},
        {"offset ndim", offsetof(DLTensor, ndim)},
        {"offset dtype", offsetof(DLTensor, dtype)},
        {"offset shape", offsetof(DLTensor, shape)},
        {"offset strides", offsetof(DLTensor, strides)},
        {"offset byte_offset", offsetof(DLTensor, byte_offset)},
        {"offset manager_ctx", offsetof(DLManagedTensor, manager_ctx)},
        {"offset deleter", offsetof(DLManagedTensor, deleter)},
        {"kDLCPU", (size_t)kDLCPU},
        {"kDLCUDA", (size_t)kDLCUDA},
        {"kDLOpenCL", (size_t)kDLOpenCL},
        {"kDLFloat", (size_t)kDLFloat},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, what) == 0)
            return table[i].value;
    return (size_t)-1;
}
#else
int dlabi_available(void) { return 0; }
size_t dlabi_value(const char *what)
{
    (void)what;
    return (size_t)-1;
}
#endif
