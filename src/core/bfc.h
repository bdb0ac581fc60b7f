/*
 * Best-fit-with-coalescing allocator over backend regions (internal).
 *
 * One instance per device. It never calls a vendor API: it asks its region
 * source for regions and carves them into 256-byte-aligned chunks kept in
 * power-of-two size-class bins. Thread-safe: every entry point takes the
 * allocator's mutex.
 */
#ifndef POLYDNN_BFC_H
#define POLYDNN_BFC_H

#include "backend.h"

#include <stddef.h>
#include <stdint.h>

typedef struct pdnn__bfc pdnn__bfc;

/* Where regions come from: a backend device in the library, a fake in
 * tests. */
typedef struct pdnn__region_source {
    void *dev;
    pdnn_status (*alloc)(void *dev, size_t bytes, void **region);
    void (*free)(void *dev, void *region);
    /* Optional: the bytes the source could give now (see keep_free). */
    pdnn_status (*query_free)(void *dev, uint64_t *bytes);
} pdnn__region_source;

typedef struct pdnn__bfc_config {
    const char *device_name; /* for messages, e.g. "/device:GPU:0"         */
    uint64_t limit;          /* most bytes reserved from the source        */
    char limit_source[128];  /* how the limit was chosen, for OOM messages */
    uint64_t max_region;     /* largest single region; 0 = no maximum      */
    size_t alignment;        /* chunk alignment: power of two, >= 256      */
    int allow_growth;        /* 0: reserve the whole limit on first use    */
    uint64_t keep_free;      /* that reservation leaves this much of what
                              * src->query_free reports to the driver     */
    int growth_double;       /* 1: TensorFlow's doubling regions; 0: each
                              * new region max(request, reserved / 16)  */
} pdnn__bfc_config;

typedef struct pdnn__bfc_stats {
    uint64_t bytes_in_use;
    uint64_t peak_bytes_in_use;
    uint64_t bytes_reserved;
    uint64_t peak_bytes_reserved;
    uint64_t num_allocs;        /* successful allocations since creation */
    uint64_t largest_alloc;     /* largest single request, rounded        */
    uint64_t num_regions;
    uint64_t largest_free_chunk;
    uint64_t limit;
} pdnn__bfc_stats;

/* A chunk handed out: storage plus the handle to free it with. */
typedef struct pdnn__bfc_block {
    pdnn__buf buf;
    size_t bytes;   /* rounded size */
    void *handle;   /* opaque, for pdnn__bfc_free */
} pdnn__bfc_block;

pdnn_status pdnn__bfc_create(const pdnn__bfc_config *cfg,
                             const pdnn__region_source *src, pdnn__bfc **out);

/* Returns every region to the source. Chunks still in use are leaked by
 * the caller; the count of them is returned so the context can complain. */
uint64_t pdnn__bfc_destroy(pdnn__bfc *a);

/* Allocates bytes (> 0). what describes the request for an OOM message,
 * e.g. "tensor [17,64,56,56] float32"; may be NULL. Fails with
 * PDNN_ERR_OUT_OF_MEMORY and a message naming the device, request, bytes
 * in use, reserved, the limit and its source, and the largest free chunk. */
pdnn_status pdnn__bfc_alloc(pdnn__bfc *a, size_t bytes, const char *what,
                            pdnn__bfc_block *out);
void pdnn__bfc_free(pdnn__bfc *a, void *handle);

void pdnn__bfc_get_stats(pdnn__bfc *a, pdnn__bfc_stats *out);
void pdnn__bfc_reset_peak(pdnn__bfc *a);

/* Changes the limit; fails if below bytes in use (after releasing free
 * regions if needed). */
pdnn_status pdnn__bfc_set_limit(pdnn__bfc *a, uint64_t limit,
                                const char *limit_source);

/* Returns entirely free regions to the source; returns the bytes freed. */
uint64_t pdnn__bfc_release_unused(pdnn__bfc *a);

/* Whether handle is one of a's regions; *size (may be NULL) receives its
 * size. Used to accept only our own device buffers back through DLPack:
 * an arbitrary pointer cannot be checked safely with the driver. */
int pdnn__bfc_owns_region(pdnn__bfc *a, const void *handle, size_t *size);

/* For backends whose region handles are addresses (host, CUDA): the region
 * that holds addr, its handle and size; 0 if none does. */
int pdnn__bfc_region_containing(pdnn__bfc *a, const void *addr, void **handle, size_t *size);

/* Writes a human-readable per-bin summary into buf (truncated to len). */
void pdnn__bfc_summary(pdnn__bfc *a, char *buf, size_t len);

#endif /* POLYDNN_BFC_H */
