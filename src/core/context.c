/* Context: options, environment overrides, the device registry and the
 * allocator each device owns. */
#include "core/context.h"
#include "core/fileio.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Compiled-in backends in enumeration order: vendor runtimes before
 * OpenCL so that a GPU one of them serves is not listed twice (later). */
static const pdnn__backend *const backends[] = {
#ifdef PDNN_HAVE_CUDA
    &pdnn__cuda_backend,
#endif
#ifdef PDNN_HAVE_OPENCL
    &pdnn__opencl_backend,
#endif
    &pdnn__host_backend,
};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

const pdnn__backend *const *pdnn__backend_list(int *n)
{
    *n = (int)N_BACKENDS;
    return backends;
}

void pdnn_context_options_init(pdnn_context_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->enable_tensor_float_32_execution = 1; /* TensorFlow's default */
}

/* ---- environment overrides ------------------------------------------ */

/* loud: an override that changes the option is said on stderr; else only
 * under POLYDNN_DEBUG (a variable test harnesses set for every process). */
static pdnn_status env_bool_say(const char *var, int *dst, int allow_digits, int loud)
{
    const char *v = getenv(var);
    if (!v)
        return PDNN_SUCCESS;
    int val;
    if (strcmp(v, "true") == 0 || (allow_digits && strcmp(v, "1") == 0))
        val = 1;
    else if (strcmp(v, "false") == 0 || (allow_digits && strcmp(v, "0") == 0))
        val = 0;
    else
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "environment variable %s='%s' is invalid: expected %s",
                           var, v, allow_digits ? "true, false, 1 or 0" : "exactly 'true' or 'false'");
    if (val != *dst && loud)
        fprintf(stderr, "polydnn: %s=%s overrides the context option (was %s)\n",
                var, v, *dst ? "true" : "false");
    else if (val != *dst)
        pdnn__debug("%s=%s overrides the context option (was %s)", var, v, *dst ? "true" : "false");
    *dst = val;
    return PDNN_SUCCESS;
}

static pdnn_status env_bool(const char *var, int *dst, int allow_digits)
{
    return env_bool_say(var, dst, allow_digits, 1);
}

static pdnn_status env_growth(pdnn_growth_policy *dst)
{
    const char *var = "POLYDNN_GROWTH_POLICY";
    const char *v = getenv(var);
    if (!v)
        return PDNN_SUCCESS;
    pdnn_growth_policy val;
    if (strcmp(v, "gradual") == 0)
        val = PDNN_GROWTH_GRADUAL;
    else if (strcmp(v, "double") == 0)
        val = PDNN_GROWTH_DOUBLE;
    else
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "environment variable %s='%s' is invalid: expected 'gradual' or 'double'", var, v);
    if (val != *dst)
        fprintf(stderr, "polydnn: %s=%s overrides the context option (was %s)\n", var, v,
                *dst == PDNN_GROWTH_DOUBLE ? "double" : "gradual");
    *dst = val;
    return PDNN_SUCCESS;
}

static pdnn_status env_fraction(double *dst)
{
    const char *var = "POLYDNN_MEMORY_FRACTION";
    const char *v = getenv(var);
    if (!v)
        return PDNN_SUCCESS;
    char *end = NULL;
    errno = 0;
    double f = strtod(v, &end);
    if (end == v || *end != '\0' || errno != 0 || !(f > 0.0 && f <= 1.0))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "environment variable %s='%s' is invalid: expected a number with 0 < f <= 1",
                           var, v);
    if (f != *dst)
        fprintf(stderr, "polydnn: %s=%s overrides memory_fraction (was %g)\n", var, v, *dst);
    *dst = f;
    return PDNN_SUCCESS;
}

static pdnn_status env_limit_mb(uint64_t *dst)
{
    const char *var = "POLYDNN_MEMORY_LIMIT_MB";
    const char *v = getenv(var);
    if (!v)
        return PDNN_SUCCESS;
    char *end = NULL;
    errno = 0;
    unsigned long long mb = strtoull(v, &end, 10);
    if (end == v || *end != '\0' || errno != 0 || v[0] == '-' || v[0] == '+' || mb == 0 ||
        mb > (UINT64_MAX >> 20))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "environment variable %s='%s' is invalid: expected a positive whole number of MiB",
                           var, v);
    uint64_t bytes = (uint64_t)mb << 20;
    if (bytes != *dst)
        fprintf(stderr, "polydnn: %s=%s overrides memory_limit (was %" PRIu64 " bytes)\n", var, v,
                *dst);
    *dst = bytes;
    return PDNN_SUCCESS;
}

/* ---- memory limits --------------------------------------------------- */

/* The bytes an accelerator may use, and how that was decided (for OOM
 * messages). Without an explicit limit or fraction we keep 5% of the
 * device, at most 1 GiB, for the driver and the display, as TensorFlow
 * keeps a system reserve. */
static uint64_t device_limit(const pdnn_context_options *o, const char *dev_name,
                             const pdnn__device_props *p, char *src, size_t len)
{
    char b[32];
    if (p->kind == PDNN__KIND_HOST) {
        snprintf(src, len, "host memory %s", pdnn__format_bytes(p->memory_bytes, b, sizeof b));
        return p->memory_bytes;
    }
    if (o->memory_limit) {
        snprintf(src, len, "memory_limit %s", pdnn__format_bytes(o->memory_limit, b, sizeof b));
        return pdnn__clamp_memory_limit(dev_name, p->memory_bytes, o->memory_limit, "memory_limit", src, len);
    }
    if (o->memory_fraction > 0.0) {
        snprintf(src, len, "memory_fraction %g of %s", o->memory_fraction,
                 pdnn__format_bytes(p->memory_bytes, b, sizeof b));
        return (uint64_t)((double)p->memory_bytes * o->memory_fraction);
    }
    uint64_t reserve = p->memory_bytes / 20;
    if (reserve > (1ull << 30))
        reserve = 1ull << 30;
    snprintf(src, len, "all of %s less a %s system reserve",
             pdnn__format_bytes(p->memory_bytes, b, sizeof b),
             pdnn__format_bytes(reserve, (char[32]){0}, 32));
    return p->memory_bytes - reserve;
}

/* A limit above the device's memory could never be reserved, and reserving
 * it up front would ask the driver for regions without end (PoCL accepts
 * buffers far beyond its memory), so it is clamped with a warning rather
 * than refused: a script that asks for "everything" keeps working. */
uint64_t pdnn__clamp_memory_limit(const char *dev_name, uint64_t device_bytes, uint64_t limit,
                                  const char *what, char *src, size_t len)
{
    if (device_bytes == 0 || limit <= device_bytes)
        return limit;
    char asked[32], have[32];
    pdnn__format_bytes(limit, asked, sizeof asked);
    pdnn__format_bytes(device_bytes, have, sizeof have);
    fprintf(stderr, "polydnn: warning: %s %s exceeds the %s of memory on %s; using %s\n", what, asked,
            have, dev_name, have);
    if (src)
        snprintf(src, len, "%s %s clamped to the device's %s", what, asked, have);
    return device_bytes;
}

static pdnn_status region_alloc(void *dev, size_t bytes, void **region)
{
    pdnn_device *d = dev;
    return d->backend->region_alloc(d->handle, bytes, region);
}

static void region_free(void *dev, void *region)
{
    pdnn_device *d = dev;
    d->backend->region_free(d->handle, region);
}

static pdnn_status region_query_free(void *dev, uint64_t *bytes)
{
    pdnn_device *d = dev;
    return d->backend->memory_free(d->handle, bytes);
}

static pdnn_status device_init_allocator(pdnn_device *d, const pdnn_context_options *o)
{
    pdnn__bfc_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.device_name = d->name;
    cfg.limit = device_limit(o, d->name, &d->props, cfg.limit_source, sizeof cfg.limit_source);
    cfg.max_region = d->props.max_alloc_bytes;
    cfg.alignment = 256;
    while (cfg.alignment < d->props.base_align)
        cfg.alignment *= 2;
    /* The host shares its memory with everything else in the process, so
     * it always grows on demand rather than reserving the machine. */
    cfg.allow_growth = d->props.kind == PDNN__KIND_HOST ? 1 : o->allow_growth;
    cfg.growth_double = o->growth_policy == PDNN_GROWTH_DOUBLE;
    cfg.keep_free = d->props.keep_free;
    pdnn__region_source src = {d, region_alloc, region_free, d->backend->memory_free ? region_query_free : NULL};
    return pdnn__bfc_create(&cfg, &src, &d->alloc);
}

/* ---- device registry ------------------------------------------------- */

typedef struct found_device {
    const pdnn__backend *backend;
    void *handle;
    pdnn__device_props props;
    int gpu_class;
} found_device;

/* Parses POLYDNN_VISIBLE_DEVICES-style "2,0" into order[] (indices into
 * the GPU numbering before filtering). */
static pdnn_status parse_visible(const char *list, int n_gpus, int *order, int *n_out)
{
    *n_out = 0;
    const char *s = list;
    while (*s) {
        char *end = NULL;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno != 0 || v < 0 || (*end != ',' && *end != '\0') || s[0] == '+' ||
            s[0] == '-')
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "visible_devices '%s' is invalid: expected comma-separated GPU indices such as \"0,1\"",
                               list);
        if (v >= n_gpus)
            return pdnn__error(PDNN_ERR_NOT_FOUND,
                               "visible_devices '%s' names GPU %ld, but this machine has %d GPU%s (0..%d)",
                               list, v, n_gpus, n_gpus == 1 ? "" : "s", n_gpus - 1);
        for (int i = 0; i < *n_out; i++)
            if (order[i] == (int)v)
                return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                                   "visible_devices '%s' names GPU %ld twice", list, v);
        order[(*n_out)++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end == ',' && *s == '\0')
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "visible_devices '%s' is invalid: trailing comma", list);
    }
    return PDNN_SUCCESS;
}

static void close_found(found_device *f, int n)
{
    for (int i = 0; i < n; i++)
        if (f[i].handle)
            f[i].backend->device_close(f[i].handle);
}

/* POLYDNN_BACKEND=opencl (or cuda, or a comma list) keeps only those
 * accelerator backends, e.g. to compare NVIDIA's OpenCL with cuDNN on one
 * card; the host is always kept. */
static pdnn_status backend_wanted(const pdnn__backend *b, int *wanted)
{
    const char *env = getenv("POLYDNN_BACKEND");
    *wanted = 1;
    if (!env || !*env || b == &pdnn__host_backend)
        return PDNN_SUCCESS;
    *wanted = 0;
    for (const char *s = env; *s;) {
        size_t len = strcspn(s, ",");
        int known = 0;
        for (size_t i = 0; i < N_BACKENDS; i++)
            known |= strlen(backends[i]->name) == len && strncasecmp(s, backends[i]->name, len) == 0;
        if (!known && !(len == 4 && strncasecmp(s, "cuda", 4) == 0) && !(len == 6 && strncasecmp(s, "opencl", 6) == 0))
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "POLYDNN_BACKEND='%s': unknown backend '%.*s'; backends are cuda, opencl, host", env,
                               (int)len, s);
        if (strlen(b->name) == len && strncasecmp(s, b->name, len) == 0)
            *wanted = 1;
        s += len + (s[len] == ',');
    }
    return PDNN_SUCCESS;
}

/* An NVIDIA GPU the CUDA backend serves is not listed again through
 * NVIDIA's OpenCL driver. */
static int served_by_cuda(const found_device *all, int n_all, const found_device *f)
{
    if (strcmp(f->backend->name, "opencl") != 0 || !strstr(f->props.vendor, "NVIDIA"))
        return 0;
    for (int i = 0; i < n_all; i++)
        if (strcmp(all[i].backend->name, "cuda") == 0)
            return 1;
    return 0;
}

static pdnn_status enumerate_all(pdnn_context *ctx, found_device **out, int *n_out)
{
    found_device *all = NULL;
    int n_all = 0;
    size_t notes_len = 0;
    for (size_t b = 0; b < N_BACKENDS; b++) {
        int wanted = 1;
        pdnn_status wst = backend_wanted(backends[b], &wanted);
        if (wst != PDNN_SUCCESS) {
            close_found(all, n_all);
            free(all);
            return wst;
        }
        if (!wanted) {
            int w = snprintf(ctx->backend_notes + notes_len, sizeof ctx->backend_notes - notes_len,
                             "%s: skipped (POLYDNN_BACKEND)\n", backends[b]->name);
            if (w > 0 && notes_len + (size_t)w < sizeof ctx->backend_notes)
                notes_len += (size_t)w;
            continue;
        }
        void **handles = NULL;
        pdnn__device_props *props = NULL;
        int n = 0;
        const char *why = NULL;
        pdnn_status st = backends[b]->enumerate(&handles, &props, &n, &why);
        if (st != PDNN_SUCCESS) {
            close_found(all, n_all);
            free(all);
            return st;
        }
        if (n == 0 && why && notes_len < sizeof ctx->backend_notes) {
            int w = snprintf(ctx->backend_notes + notes_len, sizeof ctx->backend_notes - notes_len,
                             "%s: no devices (%s)\n", backends[b]->name, why);
            if (w > 0)
                notes_len += (size_t)w;
        }
        if (n > 0) {
            found_device *grown = realloc(all, sizeof *all * (size_t)(n_all + n));
            if (!grown) {
                for (int i = 0; i < n; i++)
                    backends[b]->device_close(handles[i]);
                free(handles);
                free(props);
                close_found(all, n_all);
                free(all);
                return pdnn__host_oom("creating a context", "the device list", sizeof *all * (size_t)(n_all + n));
            }
            all = grown;
            int kept = 0;
            for (int i = 0; i < n; i++) {
                found_device f = {backends[b], handles[i], props[i], 0};
                if (served_by_cuda(all, n_all, &f)) {
                    backends[b]->device_close(handles[i]);
                    continue;
                }
                all[n_all + kept++] = f;
            }
            n_all += kept;
        }
        free(handles);
        free(props);
    }
    *out = all;
    *n_out = n_all;
    return PDNN_SUCCESS;
}

/* Names the found devices TensorFlow's way and fills ctx->devices:
 * CPU:0 (the host), GPUs in order, then other CPU devices. A CPU OpenCL
 * device is GPU-class only when no real GPU exists, so that tests on PoCL
 * take the accelerator path. */
static pdnn_status assign_names(pdnn_context *ctx, found_device *all, int n_all)
{
    int real_gpu = 0;
    for (int i = 0; i < n_all; i++)
        if (all[i].props.kind == PDNN__KIND_GPU || all[i].props.kind == PDNN__KIND_ACCELERATOR)
            real_gpu = 1;
    int n_gpus = 0;
    for (int i = 0; i < n_all; i++) {
        pdnn__device_kind k = all[i].props.kind;
        all[i].gpu_class = k == PDNN__KIND_GPU || k == PDNN__KIND_ACCELERATOR ||
                           (k == PDNN__KIND_CPU && !real_gpu);
        n_gpus += all[i].gpu_class;
    }

    int *order = malloc(sizeof *order * (size_t)(n_gpus ? n_gpus : 1));
    if (!order)
        return pdnn__host_oom("creating a context", "the GPU order", sizeof *order * (size_t)(n_gpus ? n_gpus : 1));
    int n_visible = n_gpus;
    for (int i = 0; i < n_gpus; i++)
        order[i] = i;
    if (ctx->visible_devices) {
        pdnn_status st = parse_visible(ctx->visible_devices, n_gpus, order, &n_visible);
        if (st != PDNN_SUCCESS) {
            free(order);
            return st;
        }
    }

    ctx->devices = calloc((size_t)(n_all > 0 ? n_all : 1), sizeof *ctx->devices);
    if (!ctx->devices) {
        free(order);
        return pdnn__host_oom("creating a context", "the devices", sizeof *ctx->devices * (size_t)(n_all > 0 ? n_all : 1));
    }
    int out = 0;
    int next_cpu = 0;
    /* The host first, as /device:CPU:0. */
    for (int i = 0; i < n_all; i++) {
        if (all[i].props.kind != PDNN__KIND_HOST)
            continue;
        pdnn_device *d = &ctx->devices[out++];
        d->backend = all[i].backend;
        d->handle = all[i].handle;
        d->props = all[i].props;
        d->type = PDNN_DEVICE_CPU;
        d->index = next_cpu++;
        all[i].handle = NULL;
    }
    /* Visible GPUs in the order asked for. */
    for (int v = 0; v < n_visible; v++) {
        int g = 0;
        for (int i = 0; i < n_all; i++) {
            if (!all[i].gpu_class)
                continue;
            if (g++ != order[v])
                continue;
            pdnn_device *d = &ctx->devices[out++];
            d->backend = all[i].backend;
            d->handle = all[i].handle;
            d->props = all[i].props;
            d->type = PDNN_DEVICE_GPU;
            d->index = v;
            all[i].handle = NULL;
        }
    }
    /* Remaining CPU-class runtime devices. */
    for (int i = 0; i < n_all; i++) {
        if (!all[i].handle || all[i].gpu_class)
            continue;
        pdnn_device *d = &ctx->devices[out++];
        d->backend = all[i].backend;
        d->handle = all[i].handle;
        d->props = all[i].props;
        d->type = PDNN_DEVICE_CPU;
        d->index = next_cpu++;
        all[i].handle = NULL;
    }
    free(order);
    /* Hidden GPUs are closed by the caller (their handles remain). */
    ctx->n_devices = out;
    for (int i = 0; i < out; i++) {
        pdnn_device *d = &ctx->devices[i];
        d->ctx = ctx;
        snprintf(d->name, sizeof d->name, "/device:%s:%d",
                 d->type == PDNN_DEVICE_GPU ? "GPU" : "CPU", d->index);
        /* One device-key format for every tuning-cache entry; tabs and
         * newlines would break the file's lines. */
        snprintf(d->tune_key, sizeof d->tune_key, "%s|%s|%s|%s", d->backend->name, d->props.vendor,
                 d->props.name, d->props.driver_version);
        for (char *t = d->tune_key; *t; t++)
            if (*t == '\t' || *t == '\n' || *t == '\r')
                *t = ' ';
    }
    return PDNN_SUCCESS;
}

static void destroy_devices(pdnn_context *ctx)
{
    for (int i = 0; i < ctx->n_devices; i++) {
        pdnn_device *d = &ctx->devices[i];
        /* Releases need not wait on an in-order device (tensor.c): its
         * last commands may still be queued. Finish them before their
         * memory and queue go. */
        if (d->handle && d->backend->synchronize)
            d->backend->synchronize(d->handle);
        if (d->alloc) {
            /* Every tensor holds the context, so nothing can be left here
             * but a chunk some failure path forgot. */
            uint64_t leaked = pdnn__bfc_destroy(d->alloc);
            if (leaked)
                fprintf(stderr, "polydnn: internal error: %" PRIu64 " chunk(s) still allocated on %s when its "
                        "context was freed\n", leaked, d->name);
        }
        if (d->handle)
            d->backend->device_close(d->handle);
    }
    free(ctx->devices);
    ctx->devices = NULL;
    ctx->n_devices = 0;
}

/* Applies POLYDNN_TUNING=off|cached|search|force to *mode; anything else fails. */
static pdnn_status tuning_mode_from_env(pdnn_tuning_mode *mode)
{
    const char *env = getenv("POLYDNN_TUNING");
    if (!env)
        return PDNN_SUCCESS;
    pdnn_tuning_mode m;
    if (strcmp(env, "off") == 0)
        m = PDNN_TUNING_OFF;
    else if (strcmp(env, "cached") == 0)
        m = PDNN_TUNING_CACHED;
    else if (strcmp(env, "search") == 0)
        m = PDNN_TUNING_SEARCH;
    else if (strcmp(env, "force") == 0)
        m = PDNN_TUNING_FORCE;
    else
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "POLYDNN_TUNING='%s' is invalid: expected off, cached, search or force", env);
    if (m != *mode)
        pdnn__debug("POLYDNN_TUNING=%s overrides the context's tuning option", env);
    *mode = m;
    return PDNN_SUCCESS;
}


/* Fails naming the value when POLYDNN_PROGRAM_CACHE is neither off nor
 * on (checked at context creation, as POLYDNN_TUNING is). */
static pdnn_status program_cache_check_env(void)
{
    if (pdnn__program_cache_setting() < 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "POLYDNN_PROGRAM_CACHE='%s' is invalid: expected off or on",
                           getenv("POLYDNN_PROGRAM_CACHE"));
    return PDNN_SUCCESS;
}

pdnn_status pdnn_context_create(const pdnn_context_options *opts, pdnn_context **out)
{
    if (!out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_context_create: out is NULL");
    *out = NULL;
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    if (opts)
        o = *opts;
    if (o.allow_growth != 0 && o.allow_growth != 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_context_create: allow_growth is %d; expected 0 or 1", o.allow_growth);
    if (o.growth_policy != PDNN_GROWTH_GRADUAL && o.growth_policy != PDNN_GROWTH_DOUBLE)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_context_create: growth_policy is %d; expected PDNN_GROWTH_GRADUAL or "
                           "PDNN_GROWTH_DOUBLE",
                           (int)o.growth_policy);
    if (isnan(o.memory_fraction) || o.memory_fraction < 0.0 || o.memory_fraction > 1.0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_context_create: memory_fraction %g is invalid: expected 0 < f <= 1 (0 = unset)",
                           o.memory_fraction);
    if (o.enable_tensor_float_32_execution != 0 && o.enable_tensor_float_32_execution != 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_context_create: enable_tensor_float_32_execution is %d; expected 0 or 1",
                           o.enable_tensor_float_32_execution);
    if (o.tuning != PDNN_TUNING_CACHED && o.tuning != PDNN_TUNING_OFF && o.tuning != PDNN_TUNING_SEARCH &&
        o.tuning != PDNN_TUNING_FORCE)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_context_create: tuning is %d; expected PDNN_TUNING_OFF, _CACHED, _SEARCH or _FORCE",
                           (int)o.tuning);

    pdnn_status st;
    if ((st = env_bool("POLYDNN_ALLOW_GROWTH", &o.allow_growth, 0)) != PDNN_SUCCESS ||
        (st = env_growth(&o.growth_policy)) != PDNN_SUCCESS ||
        (st = env_fraction(&o.memory_fraction)) != PDNN_SUCCESS ||
        (st = env_limit_mb(&o.memory_limit)) != PDNN_SUCCESS ||
        (st = env_bool("POLYDNN_LOG_DEVICE_PLACEMENT", &o.log_device_placement, 1)) != PDNN_SUCCESS ||
        (st = env_bool_say("POLYDNN_ENABLE_TENSOR_FLOAT_32_EXECUTION", &o.enable_tensor_float_32_execution, 1,
                           0)) != PDNN_SUCCESS ||
        (st = tuning_mode_from_env(&o.tuning)) != PDNN_SUCCESS ||
        (st = program_cache_check_env()) != PDNN_SUCCESS)
        return st;
    const char *vis_env = getenv("POLYDNN_VISIBLE_DEVICES");
    if (vis_env)
        o.visible_devices = vis_env;

    pdnn_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return pdnn__host_oom("pdnn_context_create", "the context", sizeof *ctx);
    atomic_init(&ctx->refs, 1);
    atomic_init(&ctx->destroyed, 0);
    if (o.visible_devices) {
        ctx->visible_devices = strdup(o.visible_devices);
        if (!ctx->visible_devices) {
            free(ctx);
            return pdnn__host_oom("pdnn_context_create", "visible_devices", strlen(o.visible_devices) + 1);
        }
    }
    o.visible_devices = ctx->visible_devices;
    ctx->opts = o;

    found_device *all = NULL;
    int n_all = 0;
    st = enumerate_all(ctx, &all, &n_all);
    if (st == PDNN_SUCCESS)
        st = assign_names(ctx, all, n_all);
    close_found(all, n_all); /* those not taken (hidden) or all on failure */
    free(all);
    for (int i = 0; st == PDNN_SUCCESS && i < ctx->n_devices; i++)
        st = device_init_allocator(&ctx->devices[i], &o);
    if (st != PDNN_SUCCESS) {
        destroy_devices(ctx);
        free(ctx->visible_devices);
        free(ctx);
        return st;
    }
    *out = ctx;
    return PDNN_SUCCESS;
}

void pdnn_context_destroy(pdnn_context *ctx)
{
    if (!ctx)
        return;
    /* Only the creator's reference is dropped here; tensors and sessions
     * still alive keep the devices until they go. A second destroy of a
     * context they keep alive would drop one of their references. */
    if (atomic_exchange(&ctx->destroyed, 1)) {
        fprintf(stderr, "polydnn: pdnn_context_destroy called twice on one context; the second call is ignored\n");
        return;
    }
    pdnn__context_unref(ctx);
}

void pdnn__context_ref(pdnn_context *ctx) { atomic_fetch_add(&ctx->refs, 1); }

void pdnn__context_unref(pdnn_context *ctx)
{
    if (atomic_fetch_sub(&ctx->refs, 1) != 1)
        return; /* tensors, sessions or the creator still hold it */
    destroy_devices(ctx);
    free(ctx->visible_devices);
    free(ctx);
}

int pdnn_context_tensor_float_32_enabled(const pdnn_context *ctx)
{
    return ctx ? ctx->opts.enable_tensor_float_32_execution : 0;
}

const char *pdnn_context_notes(const pdnn_context *ctx) { return ctx ? ctx->backend_notes : ""; }
