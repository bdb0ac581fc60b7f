/* Device names (TensorFlow's grammar), lookup and information. */
#include "core/context.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Reads a non-negative decimal index (no sign, at most 6 digits) or "*"
 * (partial only) from s[0..len). */
static int parse_index(const char *s, size_t len, int partial, int *out)
{
    if (len == 1 && s[0] == '*' && partial) {
        *out = -1;
        return 1;
    }
    if (len == 0 || len > 6)
        return 0;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

static int parse_type(const char *s, size_t len, int *out)
{
    if (len == 3 && strncasecmp(s, "cpu", 3) == 0)
        *out = PDNN_DEVICE_CPU;
    else if (len == 3 && strncasecmp(s, "gpu", 3) == 0)
        *out = PDNN_DEVICE_GPU;
    else
        return 0;
    return 1;
}

/* "TYPE:N" or "TYPE" (partial) into spec. */
static int parse_type_index(const char *s, size_t len, int partial, pdnn_device_spec *spec)
{
    const char *colon = memchr(s, ':', len);
    size_t tlen = colon ? (size_t)(colon - s) : len;
    if (!parse_type(s, tlen, &spec->type))
        return 0;
    if (!colon)
        return partial;
    return parse_index(colon + 1, len - tlen - 1, partial, &spec->index);
}

static pdnn_status bad_name(const char *name, const char *why)
{
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                       "device name '%s' is malformed: %s; expected a name such as /cpu:0, "
                       "/gpu:1, /device:GPU:1 or /job:localhost/replica:0/task:0/device:GPU:1",
                       name, why);
}

pdnn_status pdnn__device_spec_parse(const char *name, int partial, pdnn_device_spec *out)
{
    if (!name || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "parsing a device name: %s is NULL", !name ? "name" : "out");
    pdnn_device_spec spec = {{0}, -1, -1, -1, -1};
    const char *s = name;
    if (*s == '\0')
        return bad_name(name, "it is empty");
    if (*s != '/') {
        /* Only a partial spec may omit the leading slash ("GPU:1"). */
        if (!partial)
            return bad_name(name, "it does not start with '/'");
        if (!parse_type_index(s, strlen(s), partial, &spec))
            return bad_name(name, "unknown device type or index");
        *out = spec;
        return PDNN_SUCCESS;
    }
    int seen_device = 0, seen_job = 0, seen_replica = 0, seen_task = 0;
    while (*s == '/') {
        s++;
        const char *end = strchr(s, '/');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (seen_device)
            return bad_name(name, "nothing may follow the device part");
        if (len > 4 && strncasecmp(s, "job:", 4) == 0 && !seen_job) {
            if (len - 4 >= sizeof spec.job)
                return bad_name(name, "job name too long");
            memcpy(spec.job, s + 4, len - 4);
            spec.job[len - 4] = '\0';
            seen_job = 1;
        } else if (len > 8 && strncasecmp(s, "replica:", 8) == 0 && !seen_replica) {
            if (!parse_index(s + 8, len - 8, 0, &spec.replica))
                return bad_name(name, "replica must be a number");
            seen_replica = 1;
        } else if (len > 5 && strncasecmp(s, "task:", 5) == 0 && !seen_task) {
            if (!parse_index(s + 5, len - 5, 0, &spec.task))
                return bad_name(name, "task must be a number");
            seen_task = 1;
        } else if (len > 7 && strncasecmp(s, "device:", 7) == 0) {
            if (!parse_type_index(s + 7, len - 7, partial, &spec))
                return bad_name(name, "unknown device type or index (types are CPU and GPU)");
            seen_device = 1;
        } else if (parse_type_index(s, len, partial, &spec)) {
            seen_device = 1; /* legacy "/cpu:0", "/gpu:1" */
        } else {
            return bad_name(name, "unknown component");
        }
        s += len;
    }
    if (!partial && (!seen_device || spec.index < 0))
        return bad_name(name, "it names no device type and index");
    *out = spec;
    return PDNN_SUCCESS;
}

pdnn_status pdnn_device_name_parse(const char *name, pdnn_device_spec *out)
{
    if (!name || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_device_name_parse: %s is NULL", !name ? "name" : "out");
    return pdnn__device_spec_parse(name, 0, out);
}

const char *pdnn__device_list(const pdnn_context *ctx, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ctx->n_devices && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", ctx->devices[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

int pdnn_device_count(const pdnn_context *ctx) { return ctx ? ctx->n_devices : 0; }

pdnn_status pdnn_device_get(pdnn_context *ctx, int index, pdnn_device **out)
{
    if (!ctx || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_device_get: %s is NULL",
                           !ctx ? "ctx" : "out");
    if (index < 0 || index >= ctx->n_devices)
        return pdnn__error(PDNN_ERR_NOT_FOUND,
                           "pdnn_device_get: device index %d is out of range; the context has %d device(s)",
                           index, ctx->n_devices);
    *out = &ctx->devices[index];
    return PDNN_SUCCESS;
}

pdnn_status pdnn_device_find(pdnn_context *ctx, const char *name, pdnn_device **out)
{
    if (!ctx || !name || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_device_find: %s is NULL",
                           !ctx ? "ctx" : !name ? "name" : "out");
    pdnn_device_spec spec = {{0}, -1, -1, -1, -1};
    pdnn_status st = pdnn__device_spec_parse(name, 0, &spec);
    if (st != PDNN_SUCCESS)
        return st;
    char list[512];
    if ((spec.job[0] && strcasecmp(spec.job, "localhost") != 0) || spec.replica > 0 ||
        spec.task > 0)
        return pdnn__error(PDNN_ERR_NOT_FOUND,
                           "device '%s' is not in this process: polydnn runs as "
                           "/job:localhost/replica:0/task:0; devices: %s",
                           name, pdnn__device_list(ctx, list, sizeof list));
    for (int i = 0; i < ctx->n_devices; i++) {
        if ((int)ctx->devices[i].type == spec.type && ctx->devices[i].index == spec.index) {
            *out = &ctx->devices[i];
            return PDNN_SUCCESS;
        }
    }
    return pdnn__error(PDNN_ERR_NOT_FOUND, "device '%s' does not exist; devices: %s", name,
                       pdnn__device_list(ctx, list, sizeof list));
}

pdnn_status pdnn_device_default(pdnn_context *ctx, pdnn_device **out)
{
    if (!ctx || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_device_default: %s is NULL",
                           !ctx ? "ctx" : "out");
    for (int i = 0; i < ctx->n_devices; i++) {
        if (ctx->devices[i].type == PDNN_DEVICE_GPU) {
            *out = &ctx->devices[i];
            return PDNN_SUCCESS;
        }
    }
    return pdnn_device_get(ctx, 0, out);
}

pdnn_status pdnn_device_get_info(const pdnn_device *dev, pdnn_device_info *out)
{
    if (!dev || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_device_get_info: %s is NULL",
                           !dev ? "dev" : "out");
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", dev->name);
    out->type = dev->type;
    out->index = dev->index;
    snprintf(out->backend, sizeof out->backend, "%s", dev->backend->name);
    snprintf(out->vendor, sizeof out->vendor, "%s", dev->props.vendor);
    snprintf(out->device_name, sizeof out->device_name, "%s", dev->props.name);
    snprintf(out->driver_version, sizeof out->driver_version, "%s", dev->props.driver_version);
    out->memory_bytes = dev->props.memory_bytes;
    out->max_alloc_bytes = dev->props.max_alloc_bytes;
    out->compute_units = dev->props.compute_units;
    return PDNN_SUCCESS;
}

pdnn_status pdnn_device_synchronize(pdnn_device *dev)
{
    if (!dev)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_device_synchronize: dev is NULL");
    return dev->backend->synchronize ? dev->backend->synchronize(dev->handle) : PDNN_SUCCESS;
}

pdnn_status pdnn_device_measure_peak(pdnn_device *dev, double *gflops, double *gbytes_per_s)
{
    if (!dev || !gflops || !gbytes_per_s)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_device_measure_peak: %s is NULL",
                           !dev ? "dev" : !gflops ? "gflops" : "gbytes_per_s");
    *gflops = *gbytes_per_s = 0.0;
    if (!dev->backend->measure_peak)
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "pdnn_device_measure_peak: the %s backend of %s cannot measure its peak rates",
                           dev->backend->name, dev->name);
    return dev->backend->measure_peak(dev->handle, gflops, gbytes_per_s);
}
