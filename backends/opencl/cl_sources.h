/* OpenCL C sources from kernels_cl/, embedded at build time
 * (build-aux/embed-cl.sh). */
#ifndef POLYDNN_CL_SOURCES_H
#define POLYDNN_CL_SOURCES_H

#include <stddef.h>

typedef struct pdnn__cl_source {
    const char *name; /* file name, e.g. "conv2d.cl" */
    const char *text; /* NUL-terminated */
    size_t len;       /* bytes, without the NUL */
} pdnn__cl_source;

extern const pdnn__cl_source pdnn__cl_sources[];
extern const size_t pdnn__cl_source_count;

/* The source that file's program is built after (shared macros: OpenCL C
 * has no include path for embedded sources), or NULL. A chain: prelude.cl,
 * which every program starts with, has none (cl_common.c). */
const char *pdnn__cl_prelude_of(const char *file);

#endif
