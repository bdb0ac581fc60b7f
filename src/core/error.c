/* Per-thread error messages and status names. */
#include "backend.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[2048];

/* Formatted aside, then copied: callers often wrap the previous message
 * (pdnn_last_error() as an argument), and vsnprintf into the buffer it
 * reads from is undefined (it garbled "node 'x' (Conv2D): conv2d: ..."). */
pdnn_status pdnn__error(pdnn_status status, const char *fmt, ...)
{
    char msg[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(last_error, msg, strlen(msg) + 1);
    return status;
}

const char *pdnn_last_error(void) { return last_error; }

void pdnn__debug(const char *fmt, ...)
{
    const char *env = getenv("POLYDNN_DEBUG");
    if (!env || strcmp(env, "1") != 0)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "polydnn: debug: %s\n", line);
}

const char *pdnn_status_string(pdnn_status status)
{
    switch (status) {
    case PDNN_SUCCESS: return "PDNN_SUCCESS";
    case PDNN_ERR_INVALID_ARGUMENT: return "PDNN_ERR_INVALID_ARGUMENT";
    case PDNN_ERR_NOT_FOUND: return "PDNN_ERR_NOT_FOUND";
    case PDNN_ERR_UNSUPPORTED: return "PDNN_ERR_UNSUPPORTED";
    case PDNN_ERR_OUT_OF_MEMORY: return "PDNN_ERR_OUT_OF_MEMORY";
    case PDNN_ERR_BACKEND: return "PDNN_ERR_BACKEND";
    case PDNN_ERR_IO: return "PDNN_ERR_IO";
    case PDNN_ERR_CORRUPT: return "PDNN_ERR_CORRUPT";
    case PDNN_ERR_INTERNAL: return "PDNN_ERR_INTERNAL";
    }
    return "PDNN_ERR_UNKNOWN";
}

#define PDNN_STR(x) #x
#define PDNN_XSTR(x) PDNN_STR(x)
const char *pdnn_version(void)
{
    return PDNN_XSTR(PDNN_VERSION_MAJOR) "." PDNN_XSTR(PDNN_VERSION_MINOR) "." PDNN_XSTR(PDNN_VERSION_PATCH);
}

pdnn_status pdnn__host_oom(const char *where, const char *what, uint64_t bytes)
{
    char b[32];
    return pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "%s: out of host memory for %s: %" PRIu64 " bytes (%s)", where, what,
                       bytes, pdnn__format_bytes(bytes, b, sizeof b));
}

const char *pdnn__format_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%" PRIu64 " B", bytes);
    else if (v == (double)(uint64_t)v)
        snprintf(buf, len, "%.0f %s", v, units[u]);
    else
        snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}
