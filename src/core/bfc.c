/* Best-fit-with-coalescing allocator over backend regions.
 *
 * Regions come from the device's region source and are carved into
 * chunks, kept per region in address order (so neighbours can merge) and,
 * when free, in power-of-two size-class bins. A request takes the smallest
 * free chunk that fits; the rest is split off whenever it is at least one
 * minimum chunk, so bytes in use are exactly the rounded requests. With
 * allow_growth the first region is 2 MiB; TensorFlow then doubles each
 * region, which leaves up to 2x the peak in use reserved (a 65 MiB peak
 * takes 2+4+...+64 = 126 MiB); the default instead adds the request or
 * 1/16 of what is reserved, whichever is larger, so the overshoot stays
 * near 6% while the number of regions grows only logarithmically (about
 * 100 for 1 GiB). Without allow_growth the whole limit is reserved on
 * first use. */
#include "core/bfc.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_CHUNK 256u
#define N_BINS 48
#define FIRST_GROWTH ((uint64_t)2 << 20)
#define GROWTH_STEP ((uint64_t)1 << 20) /* gradual regions are whole MiB */
/* Regions the first-use reservation may take: a limit within the device's
 * memory needs a handful (OpenCL lets one buffer hold at least 1/4 of it). */
#define MAX_RESERVE_REGIONS 1024

typedef struct region region;
typedef struct chunk chunk;

struct chunk {
    size_t offset, size;
    int in_use;
    int bin;          /* -1 when not in a bin */
    region *reg;
    chunk *prev, *next;         /* neighbours in the region, by address */
    chunk *bin_prev, *bin_next; /* free list of the bin */
};

struct region {
    void *handle;
    size_t size;
    chunk *first;
    region *prev, *next;
};

struct pdnn__bfc {
    pthread_mutex_t lock;
    pdnn__region_source src;
    char device_name[64];
    char limit_source[128];
    uint64_t limit;
    uint64_t max_region;
    size_t align;
    int allow_growth;
    int growth_double;
    int reserved_all;       /* no-growth: the first-use reservation is done */
    uint64_t keep_free;     /* bytes the first-use reservation leaves free */
    int reserve_capped;     /* it took less than the limit to leave them */
    uint64_t growth_target; /* next region size with allow_growth */
    char reserve_note[384]; /* why the first-use reservation fell short */
    region *regions;
    chunk *bins[N_BINS];
    chunk *spare;           /* recycled chunk records */
    pdnn__bfc_stats st;
};

/* ---- bins ----------------------------------------------------------- */

static int bin_of(size_t size)
{
    size_t units = size / MIN_CHUNK;
    int b = 0;
    while (units > 1 && b < N_BINS - 1) {
        units >>= 1;
        b++;
    }
    return b;
}

static void bin_insert(pdnn__bfc *a, chunk *c)
{
    int b = bin_of(c->size);
    c->bin = b;
    c->bin_prev = NULL;
    c->bin_next = a->bins[b];
    if (a->bins[b])
        a->bins[b]->bin_prev = c;
    a->bins[b] = c;
}

static void bin_remove(pdnn__bfc *a, chunk *c)
{
    if (c->bin < 0)
        return;
    if (c->bin_prev)
        c->bin_prev->bin_next = c->bin_next;
    else
        a->bins[c->bin] = c->bin_next;
    if (c->bin_next)
        c->bin_next->bin_prev = c->bin_prev;
    c->bin = -1;
    c->bin_prev = c->bin_next = NULL;
}

/* Smallest free chunk of at least size bytes; ties go to the lower
 * address so that memory packs towards region starts. Chunks in a lower
 * bin are all smaller than those in a higher one, so the first bin with
 * a fit holds the best fit. */
static chunk *best_fit(pdnn__bfc *a, size_t size)
{
    for (int b = bin_of(size); b < N_BINS; b++) {
        chunk *best = NULL;
        for (chunk *c = a->bins[b]; c; c = c->bin_next) {
            if (c->size < size)
                continue;
            if (!best || c->size < best->size ||
                (c->size == best->size &&
                 (c->reg == best->reg ? c->offset < best->offset : c->reg < best->reg)))
                best = c;
        }
        if (best)
            return best;
    }
    return NULL;
}

static chunk *chunk_new(pdnn__bfc *a)
{
    chunk *c = a->spare;
    if (c)
        a->spare = c->next;
    else
        c = malloc(sizeof *c);
    if (c)
        memset(c, 0, sizeof *c);
    return c;
}

static void chunk_recycle(pdnn__bfc *a, chunk *c)
{
    c->next = a->spare;
    a->spare = c;
}

/* ---- regions -------------------------------------------------------- */

static void update_largest_free(pdnn__bfc *a)
{
    uint64_t best = 0;
    for (int b = N_BINS - 1; b >= 0 && best == 0; b--)
        for (chunk *c = a->bins[b]; c; c = c->bin_next)
            if (c->size > best)
                best = c->size;
    a->st.largest_free_chunk = best;
}

static void region_release(pdnn__bfc *a, region *r)
{
    chunk *c = r->first;
    bin_remove(a, c);
    chunk_recycle(a, c);
    if (r->prev)
        r->prev->next = r->next;
    else
        a->regions = r->next;
    if (r->next)
        r->next->prev = r->prev;
    a->src.free(a->src.dev, r->handle);
    a->st.bytes_reserved -= r->size;
    a->st.num_regions--;
    free(r);
}

/* Returns every region that holds no allocation; the bytes freed. */
static uint64_t release_free_regions(pdnn__bfc *a)
{
    uint64_t freed = 0;
    region *r = a->regions;
    while (r) {
        region *next = r->next;
        if (!r->first->in_use && r->first->next == NULL) {
            freed += r->size;
            region_release(a, r);
        }
        r = next;
    }
    return freed;
}

/* Asks the source for a region of size bytes, backing off by 0.9x down
 * to need bytes when the driver refuses. */
static pdnn_status region_add(pdnn__bfc *a, size_t size, size_t need)
{
    region *r = calloc(1, sizeof *r);
    chunk *c = chunk_new(a);
    if (!r || !c) {
        free(r);
        if (c)
            chunk_recycle(a, c);
        return pdnn__host_oom(a->device_name, "the allocator's region records", sizeof *r + sizeof *c);
    }
    pdnn_status st;
    for (;;) {
        st = a->src.alloc(a->src.dev, size, &r->handle);
        if (st == PDNN_SUCCESS || st != PDNN_ERR_OUT_OF_MEMORY || size <= need)
            break;
        size_t smaller = (size_t)((double)size * 0.9) / a->align * a->align;
        size = smaller > need ? smaller : need;
    }
    if (st != PDNN_SUCCESS) {
        free(r);
        chunk_recycle(a, c);
        return st;
    }
    r->size = size;
    r->first = c;
    c->reg = r;
    c->offset = 0;
    c->size = size;
    c->bin = -1;
    bin_insert(a, c);
    r->next = a->regions;
    if (a->regions)
        a->regions->prev = r;
    a->regions = r;
    a->st.bytes_reserved += size;
    a->st.num_regions++;
    if (a->st.bytes_reserved > a->st.peak_bytes_reserved)
        a->st.peak_bytes_reserved = a->st.bytes_reserved;
    return PDNN_SUCCESS;
}

static uint64_t round_down(uint64_t v, size_t align) { return v / align * align; }

/* Reserves one more region that can hold need bytes, within the limit. */
static pdnn_status extend(pdnn__bfc *a, size_t need)
{
    uint64_t available = a->limit > a->st.bytes_reserved ? a->limit - a->st.bytes_reserved : 0;
    available = round_down(available, a->align);
    if (need > available)
        return PDNN_ERR_OUT_OF_MEMORY; /* the caller words the message */
    uint64_t size;
    if (a->allow_growth && a->growth_double) {
        uint64_t target = a->growth_target;
        while (target < need)
            target *= 2;
        size = target;
    } else if (a->allow_growth) {
        uint64_t target = a->st.bytes_reserved / 16;
        if (target < FIRST_GROWTH)
            target = FIRST_GROWTH;
        if (target < need)
            target = need;
        size = (target + GROWTH_STEP - 1) / GROWTH_STEP * GROWTH_STEP;
    } else {
        /* Past a reservation capped to leave keep_free, take only what
         * this request needs of what was left to the driver. */
        size = a->reserve_capped ? need : available;
    }
    if (size > available)
        size = available;
    if (a->max_region && size > a->max_region)
        size = round_down(a->max_region, a->align);
    if (size < need)
        size = need;
    pdnn_status st = region_add(a, (size_t)size, need);
    if (st == PDNN_SUCCESS && a->allow_growth && a->growth_double) {
        uint64_t target = a->growth_target;
        while (target < need)
            target *= 2;
        /* Past the limit a larger target changes nothing; stopping there
         * keeps it from overflowing over many regions. */
        a->growth_target = target < a->limit ? target * 2 : target;
    }
    return st;
}

/* Without allow_growth the first use takes the whole limit, in as many
 * regions as the driver's maximum allocation size requires. The first
 * refusal (after region_add's back-off to half the region) ends the
 * reservation, as does reaching MAX_RESERVE_REGIONS, so a limit the driver
 * cannot give, or gives lazily without end, never loops: what was obtained
 * is kept, a one-line warning says what was asked and obtained, and the
 * same note ends any later out-of-memory message. */
static void reserve_all(pdnn__bfc *a)
{
    a->reserved_all = 1;
    int stopped = 0; /* 1 refused, 2 too many regions */
    char refused[32] = "", driver[160] = "";
    /* Where the source says how much it has free, keep_free of that stays
     * with the driver: taking the last byte left CUDA unable to create
     * cuDNN's handle or load a kernel. Later requests still grow up to the
     * limit on demand. */
    uint64_t target = a->limit, free_now = 0;
    if (a->src.query_free && a->src.query_free(a->src.dev, &free_now) == PDNN_SUCCESS) {
        uint64_t can = free_now > a->keep_free ? free_now - a->keep_free : 0;
        if (a->st.bytes_reserved + can < target) {
            target = a->st.bytes_reserved + can;
            a->reserve_capped = 1;
            char f[32], k[32], t[32];
            snprintf(a->reserve_note, sizeof a->reserve_note,
                     "the first-use reservation took %s: the %s the driver had free less %s left to it",
                     pdnn__format_bytes(target, t, sizeof t), pdnn__format_bytes(free_now, f, sizeof f),
                     pdnn__format_bytes(a->keep_free, k, sizeof k));
        }
    }
    while (target > a->st.bytes_reserved && target - a->st.bytes_reserved >= a->align) {
        if (a->st.num_regions >= MAX_RESERVE_REGIONS) {
            stopped = 2;
            break;
        }
        uint64_t size = round_down(target - a->st.bytes_reserved, a->align);
        if (a->max_region && size > a->max_region)
            size = round_down(a->max_region, a->align);
        size_t floor = (size_t)round_down(size / 2, a->align);
        if (region_add(a, (size_t)size, floor > a->align ? floor : a->align) != PDNN_SUCCESS) {
            stopped = 1;
            pdnn__format_bytes(size, refused, sizeof refused);
            snprintf(driver, sizeof driver, "%s", pdnn_last_error());
            break;
        }
    }
    if (!stopped)
        return;
    char asked[32], got[32];
    pdnn__format_bytes(target, asked, sizeof asked);
    pdnn__format_bytes(a->st.bytes_reserved, got, sizeof got);
    if (stopped == 1)
        snprintf(a->reserve_note, sizeof a->reserve_note,
                 "reserving the limit on first use asked for %s and obtained %s: the driver refused a "
                 "region of %s (%s)",
                 asked, got, refused, driver);
    else
        snprintf(a->reserve_note, sizeof a->reserve_note,
                 "reserving the limit on first use asked for %s and obtained %s: stopped at %d regions",
                 asked, got, MAX_RESERVE_REGIONS);
    fprintf(stderr, "polydnn: warning: out of memory on %s: %s\n", a->device_name, a->reserve_note);
}

/* ---- public entry points ---------------------------------------------- */

pdnn_status pdnn__bfc_create(const pdnn__bfc_config *cfg, const pdnn__region_source *src,
                             pdnn__bfc **out)
{
    if (!cfg || !src || !out || !src->alloc || !src->free)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "allocator: configuration is incomplete");
    if (cfg->alignment < MIN_CHUNK || (cfg->alignment & (cfg->alignment - 1)) != 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "allocator: alignment %zu must be a power of two of at least %u",
                           cfg->alignment, MIN_CHUNK);
    pdnn__bfc *a = calloc(1, sizeof *a);
    if (!a)
        return pdnn__host_oom("allocator", "its state", sizeof *a);
    if (pthread_mutex_init(&a->lock, NULL) != 0) {
        free(a);
        return pdnn__error(PDNN_ERR_INTERNAL, "allocator: pthread_mutex_init failed");
    }
    a->src = *src;
    snprintf(a->device_name, sizeof a->device_name, "%s", cfg->device_name ? cfg->device_name : "device");
    snprintf(a->limit_source, sizeof a->limit_source, "%s", cfg->limit_source);
    a->limit = cfg->limit;
    a->max_region = cfg->max_region;
    a->keep_free = cfg->keep_free;
    a->align = cfg->alignment;
    a->allow_growth = cfg->allow_growth;
    a->growth_double = cfg->growth_double;
    a->growth_target = FIRST_GROWTH;
    a->st.limit = cfg->limit;
    *out = a;
    return PDNN_SUCCESS;
}

uint64_t pdnn__bfc_destroy(pdnn__bfc *a)
{
    if (!a)
        return 0;
    uint64_t live = 0;
    while (a->regions) {
        region *r = a->regions;
        for (chunk *c = r->first; c;) {
            chunk *next = c->next;
            live += c->in_use != 0;
            free(c);
            c = next;
        }
        a->regions = r->next;
        a->src.free(a->src.dev, r->handle);
        free(r);
    }
    while (a->spare) {
        chunk *next = a->spare->next;
        free(a->spare);
        a->spare = next;
    }
    pthread_mutex_destroy(&a->lock);
    free(a);
    return live;
}

static pdnn_status oom(pdnn__bfc *a, size_t rounded, const char *what)
{
    update_largest_free(a);
    char req[32], used[32], res[32], lim[32], big[32];
    return pdnn__error(PDNN_ERR_OUT_OF_MEMORY,
                       "out of memory on %s allocating %s (%s): %s in use, %s reserved, limit %s (%s), "
                       "largest free chunk %s%s%s",
                       a->device_name, what ? what : "a buffer", pdnn__format_bytes(rounded, req, sizeof req),
                       pdnn__format_bytes(a->st.bytes_in_use, used, sizeof used),
                       pdnn__format_bytes(a->st.bytes_reserved, res, sizeof res),
                       pdnn__format_bytes(a->limit, lim, sizeof lim), a->limit_source,
                       pdnn__format_bytes(a->st.largest_free_chunk, big, sizeof big),
                       a->reserve_note[0] ? "; " : "", a->reserve_note);
}

static pdnn_status alloc_locked(pdnn__bfc *a, size_t rounded, const char *what, pdnn__bfc_block *out)
{
    if (a->max_region && rounded > a->max_region) {
        char req[32], mx[32];
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY,
                           "out of memory on %s allocating %s (%s): larger than the device's maximum "
                           "single allocation of %s",
                           a->device_name, what ? what : "a buffer", pdnn__format_bytes(rounded, req, sizeof req),
                           pdnn__format_bytes(a->max_region, mx, sizeof mx));
    }
    if (!a->allow_growth && !a->reserved_all)
        reserve_all(a);
    chunk *c = best_fit(a, rounded);
    if (!c) {
        uint64_t avail = a->limit > a->st.bytes_reserved ? round_down(a->limit - a->st.bytes_reserved, a->align) : 0;
        uint64_t idle = 0; /* bytes in regions that hold nothing */
        for (region *r = a->regions; r; r = r->next)
            if (!r->first->in_use && !r->first->next)
                idle += r->size;
        /* A request that cannot fit even after giving back idle regions
         * fails here, leaving everything as it was. */
        if (rounded > avail + idle)
            return oom(a, rounded, what);
        /* With allow_growth, idle regions go back before every growth so
         * that the new region replaces them instead of stacking on top
         * (2.53x -> 2.18x reserved/peak on a ResNet-50 trace); otherwise
         * only when the limit leaves too little room. */
        if (a->allow_growth || rounded > avail)
            release_free_regions(a);
        pdnn_status st = extend(a, rounded);
        if (st == PDNN_ERR_OUT_OF_MEMORY && release_free_regions(a) > 0)
            st = extend(a, rounded); /* the driver refused: retry once with more room */
        if (st != PDNN_SUCCESS)
            return st == PDNN_ERR_OUT_OF_MEMORY ? oom(a, rounded, what) : st;
        c = best_fit(a, rounded);
        if (!c)
            return oom(a, rounded, what);
    }
    bin_remove(a, c);
    if (c->size - rounded >= MIN_CHUNK) {
        chunk *rest = chunk_new(a);
        if (rest) { /* without a record the chunk is simply used whole */
            rest->reg = c->reg;
            rest->offset = c->offset + rounded;
            rest->size = c->size - rounded;
            rest->prev = c;
            rest->next = c->next;
            rest->bin = -1;
            if (c->next)
                c->next->prev = rest;
            c->next = rest;
            c->size = rounded;
            bin_insert(a, rest);
        }
    }
    c->in_use = 1;
    a->st.bytes_in_use += c->size;
    if (a->st.bytes_in_use > a->st.peak_bytes_in_use)
        a->st.peak_bytes_in_use = a->st.bytes_in_use;
    a->st.num_allocs++;
    if (c->size > a->st.largest_alloc)
        a->st.largest_alloc = c->size;
    out->buf.region = c->reg->handle;
    out->buf.offset = c->offset;
    out->bytes = c->size;
    out->handle = c;
    return PDNN_SUCCESS;
}

pdnn_status pdnn__bfc_alloc(pdnn__bfc *a, size_t bytes, const char *what, pdnn__bfc_block *out)
{
    if (!a || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "allocator: NULL argument");
    if (bytes == 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "allocator: a request of 0 bytes on %s",
                           a->device_name);
    if (bytes > SIZE_MAX - a->align)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "allocator: a request of %zu bytes on %s is too large",
                           bytes, a->device_name);
    size_t rounded = (bytes + a->align - 1) / a->align * a->align;
    pthread_mutex_lock(&a->lock);
    pdnn_status st = alloc_locked(a, rounded, what, out);
    pthread_mutex_unlock(&a->lock);
    return st;
}

void pdnn__bfc_free(pdnn__bfc *a, void *handle)
{
    if (!a || !handle)
        return;
    pthread_mutex_lock(&a->lock);
    chunk *c = handle;
    c->in_use = 0;
    a->st.bytes_in_use -= c->size;
    /* Merge with free neighbours at once, so free space stays whole. */
    chunk *n = c->next;
    if (n && !n->in_use) {
        bin_remove(a, n);
        c->size += n->size;
        c->next = n->next;
        if (n->next)
            n->next->prev = c;
        chunk_recycle(a, n);
    }
    chunk *p = c->prev;
    if (p && !p->in_use) {
        bin_remove(a, p);
        p->size += c->size;
        p->next = c->next;
        if (c->next)
            c->next->prev = p;
        chunk_recycle(a, c);
        c = p;
    }
    bin_insert(a, c);
    pthread_mutex_unlock(&a->lock);
}

void pdnn__bfc_get_stats(pdnn__bfc *a, pdnn__bfc_stats *out)
{
    pthread_mutex_lock(&a->lock);
    update_largest_free(a);
    *out = a->st;
    out->limit = a->limit;
    pthread_mutex_unlock(&a->lock);
}

void pdnn__bfc_reset_peak(pdnn__bfc *a)
{
    pthread_mutex_lock(&a->lock);
    a->st.peak_bytes_in_use = a->st.bytes_in_use;
    a->st.peak_bytes_reserved = a->st.bytes_reserved;
    pthread_mutex_unlock(&a->lock);
}

pdnn_status pdnn__bfc_set_limit(pdnn__bfc *a, uint64_t limit, const char *limit_source)
{
    pthread_mutex_lock(&a->lock);
    char lim[32], used[32], res[32];
    pdnn_status st = PDNN_SUCCESS;
    if (limit < a->st.bytes_in_use) {
        st = pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                         "cannot lower the memory limit of %s to %s: %s are in use by live tensors",
                         a->device_name, pdnn__format_bytes(limit, lim, sizeof lim),
                         pdnn__format_bytes(a->st.bytes_in_use, used, sizeof used));
    } else {
        if (limit < a->st.bytes_reserved)
            release_free_regions(a);
        if (limit < a->st.bytes_reserved)
            st = pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                             "cannot lower the memory limit of %s to %s: %s stay reserved in regions "
                             "that hold live tensors",
                             a->device_name, pdnn__format_bytes(limit, lim, sizeof lim),
                             pdnn__format_bytes(a->st.bytes_reserved, res, sizeof res));
    }
    if (st == PDNN_SUCCESS) {
        a->limit = limit;
        a->st.limit = limit;
        snprintf(a->limit_source, sizeof a->limit_source, "%s", limit_source ? limit_source : "set at run time");
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

uint64_t pdnn__bfc_release_unused(pdnn__bfc *a)
{
    pthread_mutex_lock(&a->lock);
    uint64_t freed = release_free_regions(a);
    pthread_mutex_unlock(&a->lock);
    return freed;
}

int pdnn__bfc_owns_region(pdnn__bfc *a, const void *handle, size_t *size)
{
    int found = 0;
    pthread_mutex_lock(&a->lock);
    for (region *r = a->regions; r && !found; r = r->next) {
        if (r->handle == handle) {
            found = 1;
            if (size)
                *size = r->size;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return found;
}

int pdnn__bfc_region_containing(pdnn__bfc *a, const void *addr, void **handle, size_t *size)
{
    int found = 0;
    const uintptr_t p = (uintptr_t)addr;
    pthread_mutex_lock(&a->lock);
    for (region *r = a->regions; r && !found; r = r->next) {
        const uintptr_t start = (uintptr_t)r->handle;
        if (p >= start && p - start < r->size) {
            found = 1;
            *handle = r->handle;
            *size = r->size;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return found;
}

void pdnn__bfc_summary(pdnn__bfc *a, char *buf, size_t len)
{
    uint64_t used_n[N_BINS] = {0}, used_b[N_BINS] = {0}, free_n[N_BINS] = {0}, free_b[N_BINS] = {0};
    pthread_mutex_lock(&a->lock);
    size_t w = 0;
#define OUT(...)                                                                                  \
    do {                                                                                          \
        if (w < len) {                                                                            \
            int k_ = snprintf(buf + w, len - w, __VA_ARGS__);                                     \
            if (k_ > 0)                                                                           \
                w += (size_t)k_;                                                                  \
        }                                                                                         \
    } while (0)
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    update_largest_free(a);
    OUT("memory summary of %s (limit %s, %s)\n", a->device_name,
        pdnn__format_bytes(a->limit, b1, sizeof b1), a->limit_source);
    for (region *r = a->regions; r; r = r->next) {
        unsigned chunks = 0;
        for (chunk *c = r->first; c; c = c->next) {
            int b = bin_of(c->size);
            if (c->in_use) {
                used_n[b]++;
                used_b[b] += c->size;
            } else {
                free_n[b]++;
                free_b[b] += c->size;
            }
            chunks++;
        }
        OUT("  region %p: %s in %u chunk(s)\n", r->handle, pdnn__format_bytes(r->size, b1, sizeof b1), chunks);
    }
    for (int b = 0; b < N_BINS; b++) {
        if (!used_n[b] && !free_n[b])
            continue;
        OUT("  bin %2d (>= %s): %" PRIu64 " in use (%s), %" PRIu64 " free (%s)\n", b,
            pdnn__format_bytes((uint64_t)MIN_CHUNK << b, b1, sizeof b1), used_n[b],
            pdnn__format_bytes(used_b[b], b2, sizeof b2), free_n[b],
            pdnn__format_bytes(free_b[b], b3, sizeof b3));
    }
    OUT("  in use %s (peak %s), reserved %s (peak %s), %" PRIu64 " region(s), %" PRIu64
        " allocation(s), largest %s\n",
        pdnn__format_bytes(a->st.bytes_in_use, b1, sizeof b1),
        pdnn__format_bytes(a->st.peak_bytes_in_use, b2, sizeof b2),
        pdnn__format_bytes(a->st.bytes_reserved, b3, sizeof b3),
        pdnn__format_bytes(a->st.peak_bytes_reserved, b4, sizeof b4), a->st.num_regions,
        a->st.num_allocs, pdnn__format_bytes(a->st.largest_alloc, b5, sizeof b5));
    OUT("  largest free chunk %s\n", pdnn__format_bytes(a->st.largest_free_chunk, b1, sizeof b1));
    if (a->reserve_note[0])
        OUT("  %s\n", a->reserve_note);
#undef OUT
    pthread_mutex_unlock(&a->lock);
}
