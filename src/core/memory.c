/* The public face of each device's allocator (src/core/bfc.c). */
#include "core/context.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static pdnn_status need_dev(const char *fn, const pdnn_device *dev)
{
    return dev ? PDNN_SUCCESS : pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: dev is NULL", fn);
}

pdnn_status pdnn_device_get_memory_stats(pdnn_device *dev, pdnn_memory_stats *out)
{
    pdnn_status st = need_dev("pdnn_device_get_memory_stats", dev);
    if (st != PDNN_SUCCESS)
        return st;
    if (!out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_device_get_memory_stats: out is NULL");
    pdnn__bfc_stats s;
    pdnn__bfc_get_stats(dev->alloc, &s);
    out->bytes_in_use = s.bytes_in_use;
    out->peak_bytes_in_use = s.peak_bytes_in_use;
    out->bytes_reserved = s.bytes_reserved;
    out->peak_bytes_reserved = s.peak_bytes_reserved;
    out->num_allocs = s.num_allocs;
    out->largest_alloc = s.largest_alloc;
    out->num_regions = s.num_regions;
    out->largest_free_chunk = s.largest_free_chunk;
    out->limit = s.limit;
    return PDNN_SUCCESS;
}

pdnn_status pdnn_device_reset_peak_stats(pdnn_device *dev)
{
    pdnn_status st = need_dev("pdnn_device_reset_peak_stats", dev);
    if (st == PDNN_SUCCESS)
        pdnn__bfc_reset_peak(dev->alloc);
    return st;
}

pdnn_status pdnn_device_set_memory_limit(pdnn_device *dev, uint64_t bytes)
{
    pdnn_status st = need_dev("pdnn_device_set_memory_limit", dev);
    if (st != PDNN_SUCCESS)
        return st;
    if (bytes == 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_device_set_memory_limit: a limit of 0 bytes on %s is invalid",
                           dev->name);
    char src[128], b[32];
    snprintf(src, sizeof src, "set at run time to %s", pdnn__format_bytes(bytes, b, sizeof b));
    bytes = pdnn__clamp_memory_limit(dev->name, dev->props.memory_bytes, bytes, "a limit set at run time", src,
                                     sizeof src);
    return pdnn__bfc_set_limit(dev->alloc, bytes, src);
}

pdnn_status pdnn_device_release_unused(pdnn_device *dev, uint64_t *freed)
{
    pdnn_status st = need_dev("pdnn_device_release_unused", dev);
    if (st != PDNN_SUCCESS)
        return st;
    /* Queued kernels may still use chunks being released. */
    pdnn_device_synchronize(dev);
    uint64_t n = pdnn__bfc_release_unused(dev->alloc);
    if (freed)
        *freed = n;
    return PDNN_SUCCESS;
}

pdnn_status pdnn_device_memory_summary(pdnn_device *dev, char *buf, size_t len)
{
    pdnn_status st = need_dev("pdnn_device_memory_summary", dev);
    if (st != PDNN_SUCCESS)
        return st;
    if (!buf || len == 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_device_memory_summary: buf is NULL or len is 0");
    pdnn__bfc_summary(dev->alloc, buf, len);
    return PDNN_SUCCESS;
}
