/* The allocator against a fake region source: rounding, best fit, split,
 * coalescing, growth, limits, fault injection, messages, exact stats, and
 * a multi-threaded stress run. */
#include "core/bfc.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((uint64_t)1 << 20)

/* Regions are fake handles (never dereferenced), so limits of many GiB
 * cost nothing. */
typedef struct fake {
    pthread_mutex_t lock;
    int calls, live, fail_on_call; /* fail_on_call: 1-based, 0 = never */
    size_t fail_above;             /* refuse regions larger than this; 0 = never */
    uint64_t free_now;             /* what fake_query_free reports */
    int free_queries;
    size_t sizes[64];
    int nsizes;
    uintptr_t next;
} fake;

static pdnn_status fake_alloc(void *dev, size_t bytes, void **region)
{
    fake *f = dev;
    pthread_mutex_lock(&f->lock);
    f->calls++;
    pdnn_status st = PDNN_SUCCESS;
    if ((f->fail_on_call && f->calls == f->fail_on_call) || (f->fail_above && bytes > f->fail_above)) {
        st = pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "fake: refused %zu bytes", bytes);
    } else {
        f->next += (uintptr_t)1 << 36; /* far apart: regions never overlap */
        *region = (void *)f->next;
        f->live++;
        if (f->nsizes < 64)
            f->sizes[f->nsizes++] = bytes;
    }
    pthread_mutex_unlock(&f->lock);
    return st;
}

static void fake_free(void *dev, void *region)
{
    fake *f = dev;
    (void)region;
    pthread_mutex_lock(&f->lock);
    f->live--;
    pthread_mutex_unlock(&f->lock);
}

static pdnn_status fake_query_free(void *dev, uint64_t *bytes)
{
    fake *f = dev;
    f->free_queries++;
    *bytes = f->free_now;
    return PDNN_SUCCESS;
}

static fake F;

/* growth: 0 reserve the limit on first use, 1 allow_growth with the
 * default gradual regions, 2 allow_growth with TensorFlow's doubling. */
static pdnn__bfc *make_keeping(uint64_t limit, uint64_t max_region, int growth, uint64_t free_now,
                               uint64_t keep_free);

static pdnn__bfc *make(uint64_t limit, uint64_t max_region, int growth)
{
    return make_keeping(limit, max_region, growth, 0, 0);
}

/* keep_free > 0: the source says free_now bytes are free, and the
 * first-use reservation leaves keep_free of them (CUDA's rule). */
static pdnn__bfc *make_keeping(uint64_t limit, uint64_t max_region, int growth, uint64_t free_now,
                               uint64_t keep_free)
{
    memset(&F, 0, sizeof F);
    pthread_mutex_init(&F.lock, NULL);
    pdnn__bfc_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.device_name = "/device:GPU:7";
    cfg.limit = limit;
    snprintf(cfg.limit_source, sizeof cfg.limit_source, "memory_fraction 0.5 of 8 GiB");
    cfg.max_region = max_region;
    cfg.alignment = 256;
    cfg.allow_growth = growth != 0;
    cfg.growth_double = growth == 2;
    cfg.keep_free = keep_free;
    F.free_now = free_now;
    pdnn__region_source src = {&F, fake_alloc, fake_free, keep_free ? fake_query_free : NULL};
    pdnn__bfc *a = NULL;
    cr_assert_eq(pdnn__bfc_create(&cfg, &src, &a), PDNN_SUCCESS, "%s", pdnn_last_error());
    return a;
}

static pdnn__bfc_stats stats(pdnn__bfc *a)
{
    pdnn__bfc_stats s;
    pdnn__bfc_get_stats(a, &s);
    return s;
}

static pdnn__bfc_block get(pdnn__bfc *a, size_t bytes)
{
    pdnn__bfc_block b;
    cr_assert_eq(pdnn__bfc_alloc(a, bytes, "test", &b), PDNN_SUCCESS, "%zu bytes: %s", bytes, pdnn_last_error());
    return b;
}

Test(bfc, rounding_alignment_and_stats)
{
    pdnn__bfc *a = make(64 * MiB, 0, 1);
    pdnn__bfc_block b1 = get(a, 1), b2 = get(a, 257), b3 = get(a, 512);
    cr_assert_eq(b1.bytes, 256);
    cr_assert_eq(b2.bytes, 512);
    cr_assert_eq(b3.bytes, 512);
    cr_assert_eq(b1.buf.offset % 256, 0);
    cr_assert_eq(b2.buf.offset % 256, 0);
    cr_assert_eq(b3.buf.offset % 256, 0);
    /* Chunks are carved in address order from the first region. */
    cr_assert_eq(b1.buf.offset, 0);
    cr_assert_eq(b2.buf.offset, 256);
    cr_assert_eq(b3.buf.offset, 768);
    pdnn__bfc_stats s = stats(a);
    cr_assert_eq(s.bytes_in_use, 1280);
    cr_assert_eq(s.bytes_reserved, 2 * MiB);
    cr_assert_eq(s.num_allocs, 3);
    cr_assert_eq(s.largest_alloc, 512);
    cr_assert_eq(s.num_regions, 1);
    cr_assert_eq(s.largest_free_chunk, 2 * MiB - 1280);
    cr_assert_eq(s.limit, 64 * MiB);
    pdnn__bfc_block z;
    cr_assert_eq(pdnn__bfc_alloc(a, 0, "zero", &z), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn__bfc_alloc(a, SIZE_MAX, "huge", &z), PDNN_ERR_INVALID_ARGUMENT);
    pdnn__bfc_free(a, b1.handle);
    pdnn__bfc_free(a, b2.handle);
    pdnn__bfc_free(a, b3.handle);
    s = stats(a);
    cr_assert_eq(s.bytes_in_use, 0);
    cr_assert_eq(s.peak_bytes_in_use, 1280);
    cr_assert_eq(s.largest_free_chunk, 2 * MiB, "everything coalesced back into one chunk");
    cr_assert_eq(pdnn__bfc_destroy(a), 0);
    cr_assert_eq(F.live, 0);
}

Test(bfc, best_fit_split_and_coalesce)
{
    pdnn__bfc *a = make(64 * MiB, 0, 1);
    /* Lay out A(1K) B(4K) C(1K) D(2K) E(1K) then free B and D: holes of 4K and 2K. */
    pdnn__bfc_block A = get(a, 1024), B = get(a, 4096), C = get(a, 1024), D = get(a, 2048), E = get(a, 1024);
    pdnn__bfc_free(a, B.handle);
    pdnn__bfc_free(a, D.handle);
    /* 2K goes in the 2K hole (best fit), not the 4K one. */
    pdnn__bfc_block X = get(a, 2048);
    cr_assert_eq(X.buf.offset, D.buf.offset);
    /* 1K splits the 4K hole at its start; the rest stays free. */
    pdnn__bfc_block Y = get(a, 1024);
    cr_assert_eq(Y.buf.offset, B.buf.offset);
    pdnn__bfc_block Z = get(a, 3072);
    cr_assert_eq(Z.buf.offset, B.buf.offset + 1024, "the 3K remainder of the split is reused");
    /* Free in an order that exercises left, right and both-sided merges. */
    pdnn__bfc_free(a, Y.handle);
    pdnn__bfc_free(a, A.handle); /* merges right into Y's hole */
    pdnn__bfc_free(a, C.handle); /* Z is still in use: C stays alone */
    pdnn__bfc_free(a, Z.handle); /* merges both ways: A..C becomes one chunk */
    pdnn__bfc_block W = get(a, 6144);
    cr_assert_eq(W.buf.offset, 0, "A, Y, Z and C coalesced into one 6K chunk at offset 0");
    pdnn__bfc_free(a, W.handle);
    pdnn__bfc_free(a, X.handle);
    pdnn__bfc_free(a, E.handle);
    pdnn__bfc_stats s = stats(a);
    cr_assert_eq(s.bytes_in_use, 0);
    cr_assert_eq(s.largest_free_chunk, 2 * MiB);
    pdnn__bfc_destroy(a);
}

Test(bfc, finds_the_region_that_holds_an_address)
{
    pdnn__bfc *a = make(64 * MiB, 0, 1);
    pdnn__bfc_block A = get(a, 1024), B = get(a, 3 * MiB); /* B needs a second region */
    cr_assert_neq(A.buf.region, B.buf.region);
    void *h = NULL;
    size_t size = 0;
    const char *a0 = A.buf.region, *b0 = B.buf.region;
    cr_assert(pdnn__bfc_region_containing(a, a0 + 1000, &h, &size));
    cr_assert_eq(h, A.buf.region);
    cr_assert_eq(size, 2 * MiB);
    cr_assert(pdnn__bfc_region_containing(a, b0 + 3 * MiB - 1, &h, &size));
    cr_assert_eq(h, B.buf.region);
    cr_assert_not(pdnn__bfc_region_containing(a, a0 + 2 * MiB, &h, &size), "one past the first region's end");
    cr_assert_not(pdnn__bfc_region_containing(a, a0 - 1, &h, &size));
    pdnn__bfc_free(a, A.handle);
    pdnn__bfc_free(a, B.handle);
    pdnn__bfc_destroy(a);
}

Test(bfc, growth_doubles_and_respects_the_limit)
{
    pdnn__bfc *a = make(40 * MiB, 0, 2);
    pdnn__bfc_block b[8];
    b[0] = get(a, 2 * MiB); /* region 1: 2 MiB */
    b[1] = get(a, 3 * MiB); /* region 2: 4 MiB */
    b[2] = get(a, 5 * MiB); /* region 3: 8 MiB */
    b[3] = get(a, 9 * MiB); /* region 4: 16 MiB */
    cr_assert_eq(F.nsizes, 4);
    cr_assert_eq(F.sizes[0], 2 * MiB);
    cr_assert_eq(F.sizes[1], 4 * MiB);
    cr_assert_eq(F.sizes[2], 8 * MiB);
    cr_assert_eq(F.sizes[3], 16 * MiB);
    /* 30 MiB reserved; a 12 MiB request no longer fits the limit as a new
     * region, even after releasing free regions (none are free). */
    pdnn__bfc_block big;
    pdnn_status st = pdnn__bfc_alloc(a, 12 * MiB, "tensor [3,1024,1024,1] float32", &big);
    cr_assert_eq(st, PDNN_ERR_OUT_OF_MEMORY);
    const char *m = pdnn_last_error();
    cr_assert(strstr(m, "/device:GPU:7") && strstr(m, "tensor [3,1024,1024,1] float32") &&
                  strstr(m, "12 MiB") && strstr(m, "limit 40 MiB") && strstr(m, "memory_fraction 0.5 of 8 GiB") &&
                  strstr(m, "largest free chunk"),
              "message: %s", m);
    /* The remaining 10 MiB of the limit is capped, not doubled past it. */
    b[4] = get(a, 9 * MiB);
    cr_assert_eq(F.sizes[4], 10 * MiB);
    cr_assert_leq(stats(a).bytes_reserved, 40 * MiB);
    for (int i = 0; i < 5; i++)
        pdnn__bfc_free(a, b[i].handle);
    pdnn__bfc_destroy(a);
}

/* The default growth: each region is the request or 1/16 of what is
 * reserved, at least 2 MiB, in whole MiB; never past the limit. */
Test(bfc, gradual_growth_tracks_the_request)
{
    pdnn__bfc *a = make(118 * MiB, 0, 1);
    pdnn__bfc_block b[6];
    b[0] = get(a, 1 * MiB);           /* 2 MiB: the first region */
    b[1] = get(a, 3 * MiB + 1);       /* the request, in whole MiB: 4 MiB */
    b[2] = get(a, 512 * 1024);        /* fits what the regions have left */
    b[3] = get(a, 100 * MiB);         /* 100 MiB */
    b[4] = get(a, 3 * MiB);           /* 106 MiB / 16 = 6.6 -> 7 MiB */
    cr_assert_eq(F.nsizes, 4);
    cr_assert_eq(F.sizes[0], 2 * MiB);
    cr_assert_eq(F.sizes[1], 4 * MiB);
    cr_assert_eq(F.sizes[2], 100 * MiB);
    cr_assert_eq(F.sizes[3], 7 * MiB);
    pdnn__bfc_stats s = stats(a);
    cr_assert_eq(s.bytes_reserved, 113 * MiB);
    cr_assert_eq(s.num_regions, 4);
    /* Near the limit a region is capped to what is left. */
    b[5] = get(a, 4 * MiB + MiB / 2); /* no region has 4.5 MiB free */
    cr_assert_eq(F.sizes[4], 5 * MiB, "113 / 16 rounds to 8 MiB, but only 5 MiB of the limit are left");
    cr_assert_eq(stats(a).bytes_reserved, 118 * MiB);
    for (int i = 0; i < 6; i++)
        pdnn__bfc_free(a, b[i].handle);
    cr_assert_eq(stats(a).bytes_in_use, 0);
    pdnn__bfc_destroy(a);
}

/* Gradual growth makes many regions; bookkeeping of the doubling target
 * once overflowed after 64 of them and hung the next growth. */
Test(bfc, gradual_growth_over_many_regions, .timeout = 10)
{
    pdnn__bfc *a = make((uint64_t)1 << 40, 0, 1);
    static pdnn__bfc_block b[400];
    for (int i = 0; i < 400; i++)
        b[i] = get(a, 4 * MiB);
    pdnn__bfc_stats s = stats(a);
    cr_assert_gt(s.num_regions, 64);
    cr_assert_leq(s.bytes_reserved, s.bytes_in_use + s.bytes_in_use / 8, "reserved %" PRIu64 " for %" PRIu64 " in use",
                  s.bytes_reserved, s.bytes_in_use);
    for (int i = 0; i < 400; i++)
        pdnn__bfc_free(a, b[i].handle);
    cr_assert_eq(pdnn__bfc_destroy(a), 0);
}

Test(bfc, no_growth_reserves_the_limit_in_max_region_pieces)
{
    pdnn__bfc *a = make(3800 * MiB, 1024 * MiB, 0);
    pdnn__bfc_block b = get(a, 1000);
    pdnn__bfc_stats s = stats(a);
    cr_assert_eq(s.bytes_reserved, 3800 * MiB);
    cr_assert_eq(s.num_regions, 4, "3800 MiB in regions of at most 1 GiB");
    pdnn__bfc_block c;
    pdnn_status st = pdnn__bfc_alloc(a, 1025 * MiB, "tensor big", &c);
    cr_assert_eq(st, PDNN_ERR_OUT_OF_MEMORY);
    cr_assert(strstr(pdnn_last_error(), "maximum single allocation of 1 GiB"), "%s", pdnn_last_error());
    pdnn__bfc_free(a, b.handle);
    pdnn__bfc_destroy(a);
    cr_assert_eq(F.live, 0);
}

/* A source that says 2000 MiB are free, with 500 MiB to be kept: the
 * first-use reservation takes 1500 MiB, not the 3800 MiB limit, and the
 * note says why. Requests past it still grow up to the limit. */
Test(bfc, no_growth_reservation_leaves_keep_free_to_the_driver)
{
    pdnn__bfc *a = make_keeping(3800 * MiB, 1024 * MiB, 0, 2000 * MiB, 500 * MiB);
    pdnn__bfc_block b = get(a, 1000 * MiB);
    pdnn__bfc_stats s = stats(a);
    cr_assert_eq(F.free_queries, 1);
    cr_assert_eq(s.bytes_reserved, 1500 * MiB);
    cr_assert_eq(s.num_regions, 2, "1500 MiB in regions of at most 1 GiB");
    pdnn__bfc_block c = get(a, 900 * MiB); /* 500 MiB free in the reservation: grows */
    s = stats(a);
    cr_assert_gt(s.bytes_reserved, 1500 * MiB);
    cr_assert_leq(s.bytes_reserved, 3800 * MiB);
    cr_assert_eq(F.free_queries, 1, "asked once, at the reservation");
    cr_assert_eq(s.bytes_reserved, 2400 * MiB, "past the reservation, only what the request needs");
    pdnn__bfc_block d = get(a, 1000 * MiB), e;
    cr_assert_eq(pdnn__bfc_alloc(a, 1000 * MiB, "tensor big", &e), PDNN_ERR_OUT_OF_MEMORY);
    cr_assert(strstr(pdnn_last_error(), "the first-use reservation took 1.5 GiB: the 2.0 GiB the driver had "
                                        "free less 500 MiB left to it"),
              "%s", pdnn_last_error());
    pdnn__bfc_free(a, b.handle);
    pdnn__bfc_free(a, c.handle);
    pdnn__bfc_free(a, d.handle);
    pdnn__bfc_destroy(a);
    cr_assert_eq(F.live, 0);
}

/* Less free than keep_free: nothing is reserved up front, and a request
 * is still served by growing. */
Test(bfc, no_growth_reservation_takes_nothing_when_the_driver_has_too_little)
{
    pdnn__bfc *a = make_keeping(3800 * MiB, 1024 * MiB, 0, 300 * MiB, 500 * MiB);
    pdnn__bfc_block b = get(a, 10 * MiB);
    pdnn__bfc_stats s = stats(a);
    cr_assert_eq(s.bytes_reserved, 10 * MiB);
    pdnn__bfc_free(a, b.handle);
    pdnn__bfc_destroy(a);
    cr_assert_eq(F.live, 0);
}

/* A source that accepts everything (PoCL creates buffers far beyond its
 * memory) and a limit of 4 PiB: the up-front reservation stops at its
 * region bound instead of running for ever, with a warning. */
Test(bfc, no_growth_reservation_is_bounded_when_the_driver_never_refuses, .init = cr_redirect_stderr,
     .timeout = 20)
{
    pdnn__bfc *a = make((uint64_t)4 << 50, 2048 * MiB, 0);
    pdnn__bfc_block b = get(a, 1000);
    pdnn__bfc_stats s = stats(a);
    cr_assert_eq(s.num_regions, 1024);
    cr_assert_eq(F.calls, 1024);
    cr_assert_eq(s.bytes_reserved, (uint64_t)1024 * 2048 * MiB);
    pdnn__bfc_free(a, b.handle);
    pdnn__bfc_destroy(a);
    cr_assert_eq(F.live, 0);
    fflush(stderr);
    char line[1024] = "";
    cr_assert_not_null(fgets(line, sizeof line, cr_get_redirected_stderr()));
    cr_assert(strstr(line, "out of memory on /device:GPU:7: reserving the limit on first use asked for 4 PiB "
                           "and obtained 2 TiB: stopped at 1024 regions"),
              "%s", line);
}

/* The driver refuses every region above 400 MiB: the reservation asks
 * for 1 GiB, backs off only to half of it, and ends there with a warning
 * saying what was asked and obtained; the request itself is still served
 * (growing as with allow_growth), and one that cannot be names the same. */
Test(bfc, no_growth_reservation_ends_at_the_first_refusal, .init = cr_redirect_stderr)
{
    pdnn__bfc *a = make(3800 * MiB, 1024 * MiB, 0);
    F.fail_above = 400 * MiB;
    pdnn__bfc_block b = get(a, 1000);
    pdnn__bfc_stats s = stats(a);
    cr_assert_eq(s.num_regions, 1);
    cr_assert_leq(s.bytes_reserved, 400 * MiB);
    cr_assert_leq(F.calls, 20, "bounded back-off: %d calls", F.calls);
    pdnn__bfc_block c;
    cr_assert_eq(pdnn__bfc_alloc(a, 1024 * MiB, "tensor big", &c), PDNN_ERR_OUT_OF_MEMORY);
    const char *msg = pdnn_last_error();
    cr_assert(strstr(msg, "out of memory on /device:GPU:7 allocating tensor big (1 GiB)"), "%s", msg);
    cr_assert(strstr(msg, "reserving the limit on first use asked for 3.7 GiB and obtained 0 B: the driver "
                          "refused a region of 1 GiB (fake: refused 536870912 bytes)"),
              "%s", msg);
    pdnn__bfc_free(a, b.handle);
    pdnn__bfc_destroy(a);
    cr_assert_eq(F.live, 0);
    fflush(stderr);
    char line[1024];
    int warnings = 0;
    while (fgets(line, sizeof line, cr_get_redirected_stderr()))
        warnings += strstr(line, "polydnn: warning: out of memory on /device:GPU:7: reserving the limit on first "
                                 "use asked for 3.7 GiB and obtained 0 B") != NULL;
    cr_assert_eq(warnings, 1);
}

Test(bfc, driver_refusal_backs_off_then_releases_free_regions)
{
    pdnn__bfc *a = make(1024 * MiB, 0, 1);
    /* Regions above 3 MiB are refused: a 2 MiB request that would grow a
     * 4 MiB region backs off by 0.9x until the driver accepts. */
    pdnn__bfc_block x = get(a, 2 * MiB); /* region 1: 2 MiB */
    F.fail_above = 3 * MiB;
    pdnn__bfc_block y = get(a, 2 * MiB);
    size_t got = F.sizes[F.nsizes - 1];
    cr_assert_leq(got, 3 * MiB);
    cr_assert_geq(got, 2 * MiB);
    /* A request no region size can satisfy fails cleanly... */
    pdnn__bfc_block z;
    cr_assert_eq(pdnn__bfc_alloc(a, 5 * MiB, "too big for the driver", &z), PDNN_ERR_OUT_OF_MEMORY);
    pdnn__bfc_stats s = stats(a);
    cr_assert_eq(s.bytes_in_use, 4 * MiB, "state unchanged after the failure");
    /* ...and succeeds once the driver has room again. */
    F.fail_above = 0;
    z = get(a, 5 * MiB);
    pdnn__bfc_free(a, x.handle);
    pdnn__bfc_free(a, y.handle);
    pdnn__bfc_free(a, z.handle);
    pdnn__bfc_destroy(a);
    cr_assert_eq(F.live, 0);
}

Test(bfc, fault_on_nth_call_then_recovery)
{
    pdnn__bfc *a = make(16 * MiB, 0, 1);
    F.fail_on_call = 2;
    pdnn__bfc_block b1 = get(a, 2 * MiB); /* call 1: 2 MiB region */
    pdnn__bfc_block b2;
    /* Call 2 fails; the back-off retries at 0.9x and succeeds (call 3). */
    cr_assert_eq(pdnn__bfc_alloc(a, 1 * MiB, "t", &b2), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(F.calls, 3);
    /* Limit exhaustion: fill, fail, free, succeed. */
    pdnn__bfc_block many[16];
    int n = 0;
    while (n < 16 && pdnn__bfc_alloc(a, 2 * MiB, "t", &many[n]) == PDNN_SUCCESS)
        n++;
    cr_assert_lt(n, 16);
    pdnn__bfc_stats before = stats(a);
    pdnn__bfc_block extra;
    cr_assert_eq(pdnn__bfc_alloc(a, 2 * MiB, "t", &extra), PDNN_ERR_OUT_OF_MEMORY);
    pdnn__bfc_stats after = stats(a);
    cr_assert_eq(before.bytes_in_use, after.bytes_in_use);
    cr_assert_eq(before.bytes_reserved, after.bytes_reserved);
    pdnn__bfc_free(a, many[0].handle);
    extra = get(a, 2 * MiB);
    pdnn__bfc_free(a, extra.handle);
    for (int i = 1; i < n; i++)
        pdnn__bfc_free(a, many[i].handle);
    pdnn__bfc_free(a, b1.handle);
    pdnn__bfc_free(a, b2.handle);
    cr_assert_eq(stats(a).bytes_in_use, 0);
    pdnn__bfc_destroy(a);
}

Test(bfc, release_unused_and_set_limit)
{
    pdnn__bfc *a = make(64 * MiB, 0, 1);
    pdnn__bfc_block b1 = get(a, 1 * MiB), b2 = get(a, 3 * MiB); /* regions 2 + 3 MiB */
    pdnn__bfc_free(a, b2.handle);
    cr_assert_eq(pdnn__bfc_release_unused(a), 3 * MiB);
    pdnn__bfc_stats s = stats(a);
    cr_assert_eq(s.bytes_reserved, 2 * MiB);
    cr_assert_eq(s.num_regions, 1);
    cr_assert_eq(s.peak_bytes_reserved, 5 * MiB);
    pdnn__bfc_reset_peak(a);
    cr_assert_eq(stats(a).peak_bytes_reserved, 2 * MiB);
    cr_assert_eq(pdnn__bfc_set_limit(a, 512 * 1024, "x"), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "in use"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn__bfc_set_limit(a, 1536 * 1024, "x"), PDNN_ERR_INVALID_ARGUMENT,
                 "the 2 MiB region holds a tensor, so 1.5 MiB cannot be met");
    cr_assert_eq(stats(a).limit, 64 * MiB, "a failed change leaves the limit");
    cr_assert_eq(pdnn__bfc_set_limit(a, 3 * MiB, "set at run time to 3 MiB"), PDNN_SUCCESS);
    pdnn__bfc_block c;
    cr_assert_eq(pdnn__bfc_alloc(a, 2 * MiB, "t", &c), PDNN_ERR_OUT_OF_MEMORY);
    cr_assert(strstr(pdnn_last_error(), "set at run time to 3 MiB"), "%s", pdnn_last_error());
    char dump[4096];
    pdnn__bfc_summary(a, dump, sizeof dump);
    cr_assert(strstr(dump, "/device:GPU:7") && strstr(dump, "in use"), "%s", dump);
    pdnn__bfc_free(a, b1.handle);
    cr_assert_eq(pdnn__bfc_destroy(a), 0);
}

Test(bfc, destroy_reports_live_chunks)
{
    pdnn__bfc *a = make(64 * MiB, 0, 1);
    get(a, 100);
    get(a, 100);
    cr_assert_eq(pdnn__bfc_destroy(a), 2);
    cr_assert_eq(F.live, 0, "regions are returned even with live chunks");
}

/* ---- stress ------------------------------------------------------------ */

typedef struct worker {
    pdnn__bfc *a;
    unsigned seed;
    int iters;
    int failures;
} worker;

static void *stress_thread(void *arg)
{
    worker *w = arg;
    pdnn__bfc_block held[32];
    int n = 0;
    unsigned s = w->seed;
    for (int i = 0; i < w->iters; i++) {
        s = s * 1103515245u + 12345u;
        if (n > 0 && (n == 32 || (s >> 16) % 2 == 0)) {
            int k = (int)((s >> 8) % (unsigned)n);
            pdnn__bfc_free(w->a, held[k].handle);
            held[k] = held[--n];
        } else {
            /* Sizes from 256 B to 64 MiB, log-uniform. */
            unsigned shift = 8 + (s >> 12) % 19;
            size_t bytes = ((size_t)1 << shift) + (s % 997) * 8;
            if (pdnn__bfc_alloc(w->a, bytes, "stress", &held[n]) == PDNN_SUCCESS)
                n++;
            else
                w->failures++;
        }
    }
    while (n > 0)
        pdnn__bfc_free(w->a, held[--n].handle);
    return NULL;
}

Test(bfc, eight_threads_random_alloc_free_coalesce_back)
{
    pdnn__bfc *a = make((uint64_t)64 << 30, 0, 1);
    const char *env = getenv("POLYDNN_STRESS_ITERS");
    int iters = env ? atoi(env) : 100000; /* the 8 x 100k; fast enough under ASan */
    pthread_t th[8];
    worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker){a, 17u + (unsigned)i * 7919u, iters, 0};
        cr_assert_eq(pthread_create(&th[i], NULL, stress_thread, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(w[i].failures, 0, "thread %d saw %d failed allocations", i, w[i].failures);
    }
    pdnn__bfc_stats s = stats(a);
    cr_assert_eq(s.bytes_in_use, 0);
    cr_assert_eq(s.num_allocs, s.num_allocs);
    /* Every region is one whole free chunk again: releasing them all
     * returns exactly what was reserved. */
    uint64_t reserved = s.bytes_reserved;
    cr_assert_eq(pdnn__bfc_release_unused(a), reserved);
    cr_assert_eq(stats(a).num_regions, 0);
    pdnn__bfc_destroy(a);
    cr_assert_eq(F.live, 0);
}

/* Every failed host allocation in the library reads the same way: where,
 * which buffer, its size in bytes and in human units. */
Test(bfc, host_allocation_failures_name_the_buffer_and_its_size)
{
    cr_assert_eq(pdnn__host_oom("copying between devices", "the staging buffer", (uint64_t)3 << 30),
                 PDNN_ERR_OUT_OF_MEMORY);
    cr_assert_str_eq(pdnn_last_error(),
                     "copying between devices: out of host memory for the staging buffer: 3221225472 bytes (3 GiB)");
}
