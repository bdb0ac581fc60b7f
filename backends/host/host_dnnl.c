/* oneDNN's algorithms of the host backend ("onednn"), ranked before the
 * plain-C reference ("direct", host.c), which stays the parity harness's
 * oracle and the fallback for what oneDNN refuses. Built with oneDNN's
 * 2.x C API (Debian 12's libdnnl-dev) where configure finds it.
 *
 * Core plans every call, so the primitives live in a per-device cache
 * keyed by everything that shapes them (sizes, strides, the epilogue):
 * plan finds or makes the entry and reads its sizes, run finds it again
 * and only wraps the call's buffers and executes. Tensors stay in the
 * caller's layout (oneDNN reads them through strides); the weights go
 * into oneDNN's blocked order, once per plan where the filter is frozen
 * (the tensor's packed copy, src/ops/run.c), else into the workspace per
 * call; oneDNN's scratchpad is the workspace too (scratchpad mode user),
 * so a call allocates nothing but the small memory objects that wrap its
 * buffers. One oneDNN call runs at a time per device, on an OpenMP team
 * of the process's CPU set (sched_getaffinity at the first call; an
 * OMP_NUM_THREADS of the user's wins). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "backends/host/host_internal.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <omp.h>

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DN_KEY 40     /* int64 words of a cache key                 */
#define DN_CACHE 256  /* entries per device; the oldest unused goes */
#define DN_ARGS 12 /* batch norm backward: 8 and the scratchpad */
#define DN_ALIGN 64

typedef struct dn_entry {
    int64_t key[DN_KEY];
    int used, refs, ok;
    uint64_t stamp;               /* last use, for eviction          */
    char why[160];                /* !ok: what oneDNN said           */
    dnnl_primitive_desc_t hint;   /* a backward op's forward hint    */
    dnnl_primitive_t prim;        /* the op                          */
    dnnl_primitive_t pre;         /* before it: the weights' reorder
                                     (conv forward, backward data) or
                                     max pooling's forward (pool bwd) */
    dnnl_primitive_t post;        /* after it: dw back to the user's
                                     layout (conv backward filter)    */
    dnnl_primitive_t zcopy;       /* conv forward's residual z into y
                                     (oneDNN's sum post-op adds y)    */
    dnnl_primitive_t xin, yout;   /* conv forward in oneDNN's blocked
                                     layouts: x into it, y out of it  */
    dnnl_primitive_t yin, xout;   /* conv backward's: dy into them, dx
                                     out of them (x in by xin)        */
    dnnl_primitive_t act;         /* conv forward's relu on y after a
                                     GEMM kernel (relu_apart)         */
    dnnl_memory_desc_t md_x, md_w, md_wop, md_y, md_b, md_scratch, md_pws, md_xop, md_yop;
    size_t scratch, wop_bytes, ytmp_bytes, pws_bytes, xop_bytes, yop_bytes;
    int64_t slices, slice_c;      /* pooling forward: the channels in
                                     slices of slice_c (pool_slices)  */
} dn_entry;

struct pdnn__host_dnnl {
    pthread_mutex_t lock; /* the engine's making and the cache        */
    pthread_mutex_t exec; /* one oneDNN call at a time: its OpenMP team
                             is the whole CPU set                      */
    int made;             /* 1 made, -1 failed (made_why)             */
    char made_why[128];
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    int threads;          /* 0: OMP_NUM_THREADS decides               */
    uint64_t clock;
    dn_entry *cache;      /* DN_CACHE entries, at the first use       */
};

pdnn__host_dnnl *pdnn__host_dnnl_new(void)
{
    pdnn__host_dnnl *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->exec, NULL);
    return s;
}

static void entry_clear(dn_entry *e)
{
    dnnl_primitive_t prims[] = {e->act, e->xin, e->yout, e->yin, e->xout, e->zcopy, e->post, e->pre, e->prim};
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++)
        if (prims[i])
            dnnl_primitive_destroy(prims[i]);
    if (e->hint)
        dnnl_primitive_desc_destroy(e->hint);
    memset(e, 0, sizeof *e);
}

void pdnn__host_dnnl_free(pdnn__host_dnnl *s)
{
    if (!s)
        return;
    if (s->cache) {
        for (int i = 0; i < DN_CACHE; i++)
            entry_clear(&s->cache[i]);
        free(s->cache);
    }
    if (s->stream)
        dnnl_stream_destroy(s->stream);
    if (s->engine)
        dnnl_engine_destroy(s->engine);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->exec);
    free(s);
}

/* The CPUs this process may run on (1 where unknown). */
static int cpu_set_size(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    const int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}

/* The engine and stream, made once; s->lock held. 0: ready. */
static int make_engine(pdnn__host_dnnl *s)
{
    if (s->made)
        return s->made > 0 ? 0 : -1;
    s->made = -1;
    dnnl_status_t st = dnnl_engine_create(&s->engine, dnnl_cpu, 0);
    if (st == dnnl_success)
        st = dnnl_stream_create(&s->stream, s->engine, dnnl_stream_default_flags);
    if (st == dnnl_success)
        s->cache = calloc(DN_CACHE, sizeof *s->cache);
    if (st != dnnl_success || !s->cache) {
        snprintf(s->made_why, sizeof s->made_why, "oneDNN's CPU engine could not be made (%s)",
                 st != dnnl_success ? dnnl_status2str(st) : "out of host memory");
        return -1;
    }
    const char *env = getenv("OMP_NUM_THREADS");
    s->threads = env && *env ? 0 : cpu_set_size();
    s->made = 1;
    pdnn__debug("host: oneDNN %d.%d.%d, %d threads (%s)", dnnl_version()->major, dnnl_version()->minor,
                dnnl_version()->patch, s->threads ? s->threads : omp_get_max_threads(),
                s->threads ? "the process's CPU set" : "OMP_NUM_THREADS");
    return 0;
}

static const char *op_name(pdnn__op op);

/* ---- descriptors ----------------------------------------------------------- */

static dnnl_status_t md_strided(dnnl_memory_desc_t *md, int nd, const int64_t *dims, const int64_t *strides)
{
    dnnl_dims_t d, st;
    for (int i = 0; i < nd; i++) {
        d[i] = dims[i];
        st[i] = strides[i];
    }
    return dnnl_memory_desc_init_by_strides(md, nd, d, dnnl_f32, st);
}

/* x, y and the filter (5-D {G, K/G, C/G, R, S} where grouped) of a
 * convolution in the caller's layouts; *wnd the filter's dimensions. */
static dnnl_status_t conv_mds(const pdnn__conv2d_call *c, dnnl_memory_desc_t *x, dnnl_memory_desc_t *w,
                              dnnl_memory_desc_t *wany, dnnl_memory_desc_t *y)
{
    const int64_t xd[4] = {c->n, c->c, c->h, c->w}, yd[4] = {c->n, c->k, c->p, c->q};
    const int64_t kpg = c->k / c->groups, cpg = c->c / c->groups;
    const int64_t w4[4] = {c->k, c->c, c->r, c->s}, w5[5] = {c->groups, kpg, cpg, c->r, c->s};
    const int64_t ws5[5] = {kpg * c->ws[0], c->ws[0], c->ws[1], c->ws[2], c->ws[3]};
    const int g = c->groups > 1;
    dnnl_status_t st = md_strided(x, 4, xd, c->xs);
    if (st == dnnl_success)
        st = md_strided(y, 4, yd, c->ys);
    if (st == dnnl_success)
        st = g ? md_strided(w, 5, w5, ws5) : md_strided(w, 4, w4, c->ws);
    if (st == dnnl_success) {
        dnnl_dims_t d;
        for (int i = 0; i < 5; i++)
            d[i] = g ? w5[i] : i < 4 ? w4[i] : 0;
        st = dnnl_memory_desc_init_by_tag(wany, g ? 5 : 4, d, dnnl_f32, dnnl_format_tag_any);
    }
    return st;
}

/* The geometry arrays of a convolution (oneDNN counts dilation's gaps). */
typedef struct conv_geom {
    dnnl_dims_t strides, dil, pl, pr;
} conv_geom;

static conv_geom geom_of(const pdnn__conv2d_call *c)
{
    conv_geom g;
    memset(&g, 0, sizeof g);
    g.strides[0] = c->stride_h, g.strides[1] = c->stride_w;
    g.dil[0] = c->dil_h - 1, g.dil[1] = c->dil_w - 1;
    g.pl[0] = c->pad_top, g.pl[1] = c->pad_left;
    g.pr[0] = c->pad_bottom, g.pr[1] = c->pad_right;
    return g;
}

/* An attribute with the scratchpad in the caller's memory (the
 * workspace) and, if po, those post-ops (taken). */
static dnnl_status_t attr_user(dnnl_primitive_attr_t *attr, dnnl_post_ops_t po)
{
    dnnl_status_t st = dnnl_primitive_attr_create(attr);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success && po)
        st = dnnl_primitive_attr_set_post_ops(*attr, po);
    if (po)
        dnnl_post_ops_destroy(po);
    return st;
}

/* pd's primitive and scratchpad into e (pd is destroyed). */
static dnnl_status_t take_pd(dn_entry *e, dnnl_primitive_desc_t pd)
{
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (sp) {
        e->md_scratch = *sp;
        e->scratch = dnnl_memory_desc_get_size(sp);
    }
    const dnnl_status_t st = dnnl_primitive_create(&e->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    return st;
}

/* desc's descriptor with the scratchpad in the workspace, where st (the
 * describing so far) succeeded. */
static dnnl_status_t user_pd(pdnn__host_dnnl *s, dnnl_status_t st, const_dnnl_op_desc_t desc,
                             const_dnnl_primitive_desc_t hint, dnnl_primitive_desc_t *pd)
{
    dnnl_primitive_attr_t attr = NULL;
    if (st == dnnl_success)
        st = attr_user(&attr, NULL);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(pd, desc, attr, s->engine, hint);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

/* That descriptor's primitive into e. */
static dnnl_status_t make_plain(pdnn__host_dnnl *s, dn_entry *e, dnnl_status_t st, const_dnnl_op_desc_t desc,
                                const_dnnl_primitive_desc_t hint)
{
    dnnl_primitive_desc_t pd = NULL;
    st = user_pd(s, st, desc, hint, &pd);
    return st == dnnl_success ? take_pd(e, pd) : st;
}

/* A reorder from one layout to another (weights, z into y); oneDNN
 * manages its scratchpad, which these plain copies do not use. */
static dnnl_status_t make_reorder(pdnn__host_dnnl *s, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                                  dnnl_primitive_t *prim)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, from, s->engine, to, s->engine, NULL);
    if (st == dnnl_success)
        st = dnnl_primitive_create(prim, pd);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return st;
}

/* The weights' reorder into the primitive's order where that differs. */
static dnnl_status_t weights_order(pdnn__host_dnnl *s, dn_entry *e, const dnnl_memory_desc_t *op_md, int to_user)
{
    e->md_wop = *op_md;
    if (dnnl_memory_desc_equal(&e->md_w, op_md))
        return dnnl_success;
    e->wop_bytes = dnnl_memory_desc_get_size(op_md);
    return to_user ? make_reorder(s, op_md, &e->md_w, &e->post) : make_reorder(s, &e->md_w, op_md, &e->pre);
}

/* The implementation oneDNN chose for pd ("jit:avx512_core", "ref:any"). */
static const char *impl_of(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
        impl = "?";
    return impl;
}

/* The forward convolution's descriptor with x, the filter and y as xmd,
 * wmd and ymd. */
static dnnl_status_t conv_fwd_pd(pdnn__host_dnnl *s, const pdnn__conv2d_call *c, const dn_entry *e,
                                 const dnnl_memory_desc_t *xmd, const dnnl_memory_desc_t *wmd,
                                 const dnnl_memory_desc_t *ymd, dnnl_primitive_desc_t *pd)
{
    const conv_geom g = geom_of(c);
    dnnl_convolution_desc_t cd;
    dnnl_status_t st = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
                                                                  xmd, wmd, c->bias_buf.region ? &e->md_b : NULL, ymd,
                                                                  g.strides, g.dil, g.pl, g.pr);
    /* The epilogue: y = relu?(conv + bias + z), z through the sum post-op
     * (y holds z first), the capped relu as a clip to [0, cap]. */
    dnnl_post_ops_t po = NULL;
    if (st == dnnl_success && (c->z_buf.region || c->relu)) {
        st = dnnl_post_ops_create(&po);
        if (st == dnnl_success && c->z_buf.region)
            st = dnnl_post_ops_append_sum(po, 1.0f);
        if (st == dnnl_success && c->relu)
            st = c->relu_cap > 0.0f ? dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, 0.0f, c->relu_cap)
                                    : dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
    }
    dnnl_primitive_attr_t attr = NULL;
    if (st == dnnl_success)
        st = attr_user(&attr, po);
    else if (po)
        dnnl_post_ops_destroy(po);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(pd, &cd, attr, s->engine, NULL);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

/* oneDNN's reference convolutions, and its GEMM-based ones where they
 * are slower than its blocked ones with x and y reordered per call:
 * grouped and larger than 1x1 (depthwise in NCHW ran at 0.4-0.8 GFLOP/s
 * against tens; ResNet-50's NCHW 3x3 layers 1.1-1.4x faster blocked, its
 * 1x1 layers 0.3-0.9x, batch 8, one thread, AMD EPYC with AVX-512). */
static int slow_impl(const char *impl, const pdnn__conv2d_call *c)
{
    return strncmp(impl, "ref", 3) == 0 ||
           (strstr(impl, "gemm") != NULL && (c->groups > 1 || c->r * c->s > 1 || c->relu || c->z_buf.region));
}

/* Whether x and y in blocked layouts (channels padded to 16) fit in the
 * call's workspace limit (AUTO would pass over a plan beyond it). */
static int blocked_fits(const pdnn__conv2d_call *c, size_t ws_limit)
{
    /* A small convolution (under 2^22 FLOPs) gains less from the blocked
     * kernel than its reorders cost, and their buffers can outweigh the
     * whole network's activations (a training step's peak memory). */
    const double flops = 2.0 * (double)c->n * (double)c->k * (double)(c->p * c->q) * (double)c->c *
                         (double)(c->r * c->s) / (double)(c->groups > 0 ? c->groups : 1);
    if (flops < 4194304.0)
        return 0;
    const double bytes = 4.0 * ((double)c->n * (double)((c->c + 15) / 16 * 16) * (double)(c->h * c->w) +
                                (double)c->n * (double)((c->k + 15) / 16 * 16) * (double)(c->p * c->q));
    return ws_limit == 0 || bytes + 65536.0 <= (double)ws_limit;
}

/* Where the caller's layouts leave oneDNN only a slow implementation:
 * x and y in the layouts oneDNN picks ("any"), reordered in and out per
 * call, when that gives a fast one (*pd replaced). */
static dnnl_status_t blocked_layouts(pdnn__host_dnnl *s, const pdnn__conv2d_call *c, dn_entry *e,
                                     const dnnl_memory_desc_t *wany, dnnl_primitive_desc_t *pd)
{
    dnnl_memory_desc_t xany, yany;
    const dnnl_dims_t xd = {c->n, c->c, c->h, c->w}, yd = {c->n, c->k, c->p, c->q};
    dnnl_primitive_desc_t alt = NULL;
    if (dnnl_memory_desc_init_by_tag(&xany, 4, xd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&yany, 4, yd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
        conv_fwd_pd(s, c, e, &xany, wany, &yany, &alt) != dnnl_success)
        return dnnl_success; /* keep *pd */
    if (slow_impl(impl_of(alt), c)) {
        dnnl_primitive_desc_destroy(alt);
        return dnnl_success;
    }
    e->md_xop = *dnnl_primitive_desc_query_md(alt, dnnl_query_src_md, 0);
    e->md_yop = *dnnl_primitive_desc_query_md(alt, dnnl_query_dst_md, 0);
    e->xop_bytes = dnnl_memory_desc_get_size(&e->md_xop);
    e->yop_bytes = dnnl_memory_desc_get_size(&e->md_yop);
    dnnl_status_t st = make_reorder(s, &e->md_x, &e->md_xop, &e->xin);
    if (st == dnnl_success)
        st = make_reorder(s, &e->md_yop, &e->md_y, &e->yout);
    if (st != dnnl_success) {
        dnnl_primitive_desc_destroy(alt);
        return st;
    }
    dnnl_primitive_desc_destroy(*pd);
    *pd = alt;
    return dnnl_success;
}

/* oneDNN's GEMM convolution applies an eltwise post-op slowly (the 1x1
 * NCHW layers of MobileNetV2 at batch 8, one thread: 2-8 GFLOP/s with a
 * relu, 12-22 without), and its blocked one needs x and y reordered per
 * call: a 1x1 convolution with a relu (capped or not) and no residual
 * that gets GEMM runs it without the relu, then oneDNN's eltwise on y in
 * place (*pd replaced, e->act made). */
static dnnl_status_t relu_apart(pdnn__host_dnnl *s, const pdnn__conv2d_call *c, dn_entry *e,
                                const dnnl_memory_desc_t *wmd, dnnl_primitive_desc_t *pd)
{
    if (c->r * c->s != 1 || c->groups != 1 || !c->relu || c->z_buf.region ||
        !strstr(impl_of(*pd), "gemm"))
        return dnnl_success;
    pdnn__conv2d_call bare = *c;
    bare.relu = 0;
    dnnl_primitive_desc_t alt = NULL, epd = NULL;
    if (conv_fwd_pd(s, &bare, e, &e->md_x, wmd, &e->md_y, &alt) != dnnl_success)
        return dnnl_success; /* keep *pd */
    dnnl_eltwise_desc_t ed;
    const int cap = c->relu_cap > 0.0f;
    dnnl_status_t st = strncmp(impl_of(alt), "ref", 3) == 0 ? dnnl_unimplemented : dnnl_success;
    if (st == dnnl_success)
        st = dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, cap ? dnnl_eltwise_clip : dnnl_eltwise_relu,
                                            &e->md_y, 0.0f, cap ? c->relu_cap : 0.0f);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(&epd, &ed, NULL, s->engine, NULL);
    if (st == dnnl_success)
        st = dnnl_primitive_create(&e->act, epd);
    if (epd)
        dnnl_primitive_desc_destroy(epd);
    if (st != dnnl_success) {
        dnnl_primitive_desc_destroy(alt);
        return dnnl_success; /* keep *pd */
    }
    dnnl_primitive_desc_destroy(*pd);
    *pd = alt;
    return dnnl_success;
}

/* A filter that is not frozen would be reordered on every call: where
 * oneDNN has an optimized (not reference) implementation that reads it
 * in the caller's layout, that one runs instead. A frozen filter takes
 * oneDNN's own order, reordered once into the tensor's packed copy. */
static dnnl_status_t make_conv_fwd(pdnn__host_dnnl *s, const pdnn__conv2d_call *c, size_t ws_limit, dn_entry *e)
{
    dnnl_memory_desc_t wany;
    dnnl_status_t st = conv_mds(c, &e->md_x, &e->md_w, &wany, &e->md_y);
    const int64_t bd[1] = {c->k}, bs[1] = {1};
    if (st == dnnl_success)
        st = md_strided(&e->md_b, 1, bd, bs);
    if (st != dnnl_success)
        return st;
    dnnl_primitive_desc_t pd = NULL;
    if (!c->w_const && conv_fwd_pd(s, c, e, &e->md_x, &e->md_w, &e->md_y, &pd) == dnnl_success &&
        slow_impl(impl_of(pd), c)) {
        dnnl_primitive_desc_destroy(pd);
        pd = NULL;
    }
    if (!pd && (st = conv_fwd_pd(s, c, e, &e->md_x, &wany, &e->md_y, &pd)) != dnnl_success)
        return st;
    relu_apart(s, c, e, &wany, &pd);
    if (!e->act && slow_impl(impl_of(pd), c) && blocked_fits(c, ws_limit) &&
        (st = blocked_layouts(s, c, e, &wany, &pd)) != dnnl_success) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    pdnn__debug("host: onednn conv2d %lldx%lldx%lldx%lld k%lld %lldx%lld g%lld: %s%s, filter %s, x and y %s",
                (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w, (long long)c->k, (long long)c->r,
                (long long)c->s, (long long)c->groups, impl_of(pd), e->act ? " then relu" : "",
                c->w_const ? "frozen" : "per call",
                e->xin ? "reordered" : "in place");
    st = weights_order(s, e, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), 0);
    if (st == dnnl_success && c->z_buf.region)
        st = make_reorder(s, &e->md_y, e->xin ? &e->md_yop : &e->md_y, &e->zcopy);
    if (st != dnnl_success) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    return take_pd(e, pd);
}

/* A backward convolution's descriptor with x (dx) and y (dy) as xmd and
 * ymd, and the forward's descriptor it takes as its hint (*hint, kept by
 * the caller: oneDNN's backward descriptors refer to it). */
static dnnl_status_t conv_bwd_pd(pdnn__host_dnnl *s, const pdnn__op_call *call, const dnnl_memory_desc_t *xmd,
                                 const dnnl_memory_desc_t *wany, const dnnl_memory_desc_t *ymd,
                                 dnnl_primitive_desc_t *hint, dnnl_primitive_desc_t *pd)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const conv_geom g = geom_of(c);
    dnnl_convolution_desc_t fd, bd;
    dnnl_status_t st = dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct,
                                                                  xmd, wany, NULL, ymd, g.strides, g.dil, g.pl, g.pr);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(hint, &fd, NULL, s->engine, NULL);
    if (st != dnnl_success)
        return st;
    st = call->op == PDNN__OP_CONV2D_BWD_DATA
             ? dnnl_dilated_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, xmd, wany, ymd, g.strides,
                                                               g.dil, g.pl, g.pr)
             : dnnl_dilated_convolution_backward_weights_desc_init(&bd, dnnl_convolution_direct, xmd, wany, NULL, ymd,
                                                                  g.strides, g.dil, g.pl, g.pr);
    st = user_pd(s, st, &bd, *hint, pd);
    if (st != dnnl_success) {
        dnnl_primitive_desc_destroy(*hint);
        *hint = NULL;
    }
    return st;
}

/* As the forward's blocked_layouts: where the caller's layouts leave a
 * GEMM or reference kernel (Deep MNIST's 5x5 layers ran 0.3-1.2 GFLOP/s
 * on GEMM), dx or x and dy in oneDNN's layouts, reordered per call. */
static dnnl_status_t bwd_blocked(pdnn__host_dnnl *s, const pdnn__op_call *call, dn_entry *e,
                                 const dnnl_memory_desc_t *wany, dnnl_primitive_desc_t *pd)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    dnnl_memory_desc_t xany, yany;
    const dnnl_dims_t xd = {c->n, c->c, c->h, c->w}, yd = {c->n, c->k, c->p, c->q};
    dnnl_primitive_desc_t hint = NULL, alt = NULL;
    if (dnnl_memory_desc_init_by_tag(&xany, 4, xd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&yany, 4, yd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
        conv_bwd_pd(s, call, &xany, wany, &yany, &hint, &alt) != dnnl_success)
        return dnnl_success; /* keep *pd */
    if (slow_impl(impl_of(alt), c)) {
        dnnl_primitive_desc_destroy(alt);
        dnnl_primitive_desc_destroy(hint);
        return dnnl_success;
    }
    const int data = call->op == PDNN__OP_CONV2D_BWD_DATA;
    e->md_xop = *dnnl_primitive_desc_query_md(alt, data ? dnnl_query_diff_src_md : dnnl_query_src_md, 0);
    e->md_yop = *dnnl_primitive_desc_query_md(alt, dnnl_query_diff_dst_md, 0);
    e->xop_bytes = dnnl_memory_desc_get_size(&e->md_xop);
    e->yop_bytes = dnnl_memory_desc_get_size(&e->md_yop);
    dnnl_status_t st = data ? make_reorder(s, &e->md_xop, &e->md_x, &e->xout)
                            : make_reorder(s, &e->md_x, &e->md_xop, &e->xin);
    if (st == dnnl_success)
        st = make_reorder(s, &e->md_y, &e->md_yop, &e->yin);
    if (st != dnnl_success) {
        dnnl_primitive_desc_destroy(alt);
        dnnl_primitive_desc_destroy(hint);
        return st;
    }
    dnnl_primitive_desc_destroy(*pd);
    dnnl_primitive_desc_destroy(e->hint);
    *pd = alt;
    e->hint = hint;
    return dnnl_success;
}

static dnnl_status_t make_conv_bwd(pdnn__host_dnnl *s, const pdnn__op_call *call, dn_entry *e)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    dnnl_memory_desc_t wany;
    dnnl_status_t st = conv_mds(c, &e->md_x, &e->md_w, &wany, &e->md_y);
    dnnl_primitive_desc_t pd = NULL;
    if (st == dnnl_success)
        st = conv_bwd_pd(s, call, &e->md_x, &wany, &e->md_y, &e->hint, &pd);
    if (st == dnnl_success && slow_impl(impl_of(pd), c) && blocked_fits(c, call->ws_limit))
        st = bwd_blocked(s, call, e, &wany, &pd);
    if (st != dnnl_success) {
        if (pd)
            dnnl_primitive_desc_destroy(pd);
        return st;
    }
    const int data = call->op == PDNN__OP_CONV2D_BWD_DATA;
    pdnn__debug("host: onednn %s %lldx%lldx%lldx%lld k%lld %lldx%lld g%lld: %s, x and y %s", op_name(call->op),
                (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w, (long long)c->k, (long long)c->r,
                (long long)c->s, (long long)c->groups, impl_of(pd), e->yin ? "reordered" : "in place");
    st = weights_order(s, e, dnnl_primitive_desc_query_md(pd, data ? dnnl_query_weights_md : dnnl_query_diff_weights_md, 0),
                       !data);
    if (st != dnnl_success) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    return take_pd(e, pd);
}

static dnnl_alg_kind_t pool_alg(pdnn_pool_mode m)
{
    return m == PDNN_POOL_MAX                   ? dnnl_pooling_max
           : m == PDNN_POOL_AVG_INCLUDE_PADDING ? dnnl_pooling_avg_include_padding
                                                : dnnl_pooling_avg_exclude_padding;
}

/* oneDNN's jit pooling over NCHW transposes x into a scratchpad of about
 * 0.75x x (SqueezeNet's stem at batch 1: 2.35 MB, the largest buffer of its
 * memory plan after the activations). Past POOL_SLICE_SCRATCH it runs over
 * channel slices, one primitive of slice_c channels (the same strides)
 * called slices times, so the scratchpad shrinks by C / slice_c: slice_c
 * the largest divisor of C that brings it under the bound, a multiple of
 * 16 (oneDNN's channel block) where one does. */
#define POOL_SLICE_SCRATCH ((size_t)512 << 10)

static dnnl_status_t pool_slices(pdnn__host_dnnl *s, const pdnn__pool2d_call *c, dn_entry *e,
                                 const dnnl_pooling_v2_desc_t *fd, const_dnnl_primitive_attr_t attr,
                                 dnnl_primitive_desc_t *fpd)
{
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(*fpd, dnnl_query_scratchpad_md, 0);
    const size_t full = sp ? dnnl_memory_desc_get_size(sp) : 0;
    /* One image only: a slice of a batch is no dense tensor, which sends
     * oneDNN to its reference kernel (100x slower); the scratchpad does
     * not grow with the batch, so batch 1 is where it weighs. */
    if (full <= POOL_SLICE_SCRATCH || c->c < 2 || c->n != 1)
        return dnnl_success;
    /* One pass down the divisors: the first that fits, and the first
     * that fits and is a multiple of 16, which wins where there is one. */
    int64_t best = 0, any = 0;
    for (int64_t cs = c->c - 1; cs >= 1 && !best; cs--)
        if (c->c % cs == 0 && (double)full * (double)cs / (double)c->c <= POOL_SLICE_SCRATCH) {
            any = any ? any : cs;
            best = cs % 16 == 0 ? cs : 0;
        }
    best = best ? best : any;
    if (!best)
        return dnnl_success;
    const int64_t xd[4] = {c->n, best, c->h, c->w}, yd[4] = {c->n, best, c->p, c->q};
    dnnl_memory_desc_t mx, my;
    dnnl_pooling_v2_desc_t sd;
    dnnl_primitive_desc_t spd = NULL;
    const int64_t xs[4] = {best * c->xs[1], c->xs[1], c->xs[2], c->xs[3]},
                  ys[4] = {best * c->ys[1], c->ys[1], c->ys[2], c->ys[3]};
    dnnl_status_t st = md_strided(&mx, 4, xd, xs);
    if (st == dnnl_success)
        st = md_strided(&my, 4, yd, ys);
    if (st == dnnl_success)
        st = dnnl_pooling_v2_forward_desc_init(&sd, fd->prop_kind, fd->alg_kind, &mx, &my, fd->strides, fd->kernel,
                                               fd->dilation, fd->padding[0], fd->padding[1]);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(&spd, &sd, attr, s->engine, NULL);
    if (st == dnnl_success && strncmp(impl_of(spd), "ref", 3) == 0)
        st = dnnl_unimplemented; /* the slices would run the reference */
    if (st != dnnl_success) {
        if (spd)
            dnnl_primitive_desc_destroy(spd);
        return dnnl_success; /* keep the whole-tensor primitive */
    }
    dnnl_primitive_desc_destroy(*fpd);
    *fpd = spd;
    e->md_x = mx, e->md_y = my;
    e->slices = c->c / best, e->slice_c = best;
    pdnn__debug("host: oneDNN pooling of %lldx%lldx%lldx%lld in %lld slices of %lld channels (its scratchpad "
                "%zu bytes a slice, %zu whole)",
                (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w, (long long)e->slices,
                (long long)best, full * (size_t)best / (size_t)c->c, full);
    return dnnl_success;
}

/* Pooling forward, or its backward (after the forward it needs: max
 * pooling's training forward recomputes y and the argmax workspace). */
static dnnl_status_t make_pool(pdnn__host_dnnl *s, const pdnn__op_call *call, dn_entry *e)
{
    const pdnn__pool2d_call *c = &call->u.pool2d;
    const int bwd = call->op == PDNN__OP_POOL2D_BWD;
    const int64_t xd[4] = {c->n, c->c, c->h, c->w}, yd[4] = {c->n, c->c, c->p, c->q};
    dnnl_status_t st = md_strided(&e->md_x, 4, xd, c->xs);
    if (st == dnnl_success)
        st = md_strided(&e->md_y, 4, yd, c->ys);
    if (st == dnnl_success && bwd)
        st = md_strided(&e->md_w, 4, xd, c->dxs); /* dx */
    if (st != dnnl_success)
        return st;
    const dnnl_dims_t strides = {c->stride_h, c->stride_w}, kernel = {c->win_h, c->win_w}, dil = {0, 0};
    const dnnl_dims_t pl = {c->pad_top, c->pad_left}, pr = {c->pad_bottom, c->pad_right};
    const dnnl_alg_kind_t alg = pool_alg(c->mode);
    dnnl_pooling_v2_desc_t fd, bd;
    st = dnnl_pooling_v2_forward_desc_init(&fd, bwd ? dnnl_forward_training : dnnl_forward_inference, alg, &e->md_x,
                                           &e->md_y, strides, kernel, dil, pl, pr);
    dnnl_primitive_attr_t attr = NULL;
    if (st == dnnl_success)
        st = attr_user(&attr, NULL);
    dnnl_primitive_desc_t fpd = NULL, pd = NULL;
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(&fpd, &fd, attr, s->engine, NULL);
    e->slices = 1, e->slice_c = c->c;
    if (st == dnnl_success && !bwd)
        st = pool_slices(s, c, e, &fd, attr, &fpd);
    if (st != dnnl_success || !bwd) {
        if (attr)
            dnnl_primitive_attr_destroy(attr);
        return st == dnnl_success ? take_pd(e, fpd) : st;
    }
    e->hint = fpd;
    const dnnl_memory_desc_t *pws = dnnl_primitive_desc_query_md(fpd, dnnl_query_workspace_md, 0);
    if (c->mode == PDNN_POOL_MAX) {
        /* The forward's y goes to the workspace (dy's layout), with its
         * argmax after it; the forward's own scratchpad is the same
         * workspace's head, which the backward's reuses after it. */
        const dnnl_memory_desc_t *fsp = dnnl_primitive_desc_query_md(fpd, dnnl_query_scratchpad_md, 0);
        const size_t fscratch = fsp ? dnnl_memory_desc_get_size(fsp) : 0;
        if (pws) {
            e->md_pws = *pws;
            e->pws_bytes = dnnl_memory_desc_get_size(pws);
        }
        e->ytmp_bytes = dnnl_memory_desc_get_size(&e->md_y);
        st = dnnl_primitive_create(&e->pre, fpd);
        e->scratch = fscratch;
        if (fsp)
            e->md_scratch = *fsp;
    }
    if (st == dnnl_success)
        st = dnnl_pooling_v2_backward_desc_init(&bd, alg, &e->md_w, &e->md_y, strides, kernel, dil, pl, pr);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(&pd, &bd, attr, s->engine, fpd);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success)
        return st;
    const size_t fscratch = e->scratch;
    const dnnl_memory_desc_t fmd = e->md_scratch;
    st = take_pd(e, pd);
    if (fscratch > e->scratch) {
        e->scratch = fscratch;
        e->md_scratch = fmd;
    }
    return st;
}

/* C = op(A) op(B), row-major; a transposed operand is read through its
 * strides (A: m x k of strides {1, m}; B: k x n of strides {1, k}). A
 * batch is oneDNN's leading batch dim, of extent 1 for a broadcast
 * operand (stride 0: oneDNN broadcasts a batch dim of 1). */
static dnnl_status_t make_matmul(pdnn__host_dnnl *s, const pdnn__matmul_call *c, dn_entry *e)
{
    const int64_t nb = pdnn__matmul_batch(c);
    const int64_t ad[3] = {c->stride_a ? nb : 1, c->m, c->k}, bd[3] = {c->stride_b ? nb : 1, c->k, c->n},
                  cd[3] = {nb, c->m, c->n};
    const int64_t as[3] = {c->stride_a ? c->stride_a : c->m * c->k, c->trans_a ? 1 : c->k, c->trans_a ? c->m : 1};
    const int64_t bs[3] = {c->stride_b ? c->stride_b : c->k * c->n, c->trans_b ? 1 : c->n, c->trans_b ? c->k : 1},
                  cs[3] = {c->m * c->n, c->n, 1};
    /* One matrix keeps its 2-d descriptors (the batch dim dropped). */
    const int nd = nb > 1 ? 3 : 2, o = 3 - nd;
    dnnl_status_t st = md_strided(&e->md_x, nd, ad + o, as + o);
    if (st == dnnl_success)
        st = md_strided(&e->md_w, nd, bd + o, bs + o);
    if (st == dnnl_success)
        st = md_strided(&e->md_y, nd, cd + o, cs + o);
    dnnl_matmul_desc_t md;
    if (st == dnnl_success)
        st = dnnl_matmul_desc_init(&md, &e->md_x, &e->md_w, NULL, &e->md_y);
    return make_plain(s, e, st, &md, NULL);
}

/* ---- batch norm, elementwise, softmax -----------------------------------
 * Batch norm takes the caller's layout through its strides (oneDNN's
 * ncsp and nspc kernels); the elementwise ops and softmax are memory-order
 * calls, one dense vector or [outer][n][inner]. */

static dnnl_status_t make_bn(pdnn__host_dnnl *s, const pdnn__op_call *call, dn_entry *e)
{
    const pdnn__bn_call *c = &call->u.bn;
    const int64_t d[4] = {c->n, c->c, c->h, c->w}, vd[1] = {c->c}, vs[1] = {1};
    const int infer = call->op == PDNN__OP_BN_FWD_INFER;
    const unsigned flags = dnnl_use_scale | dnnl_use_shift;
    dnnl_status_t st = md_strided(&e->md_x, 4, d, c->xs);
    if (st == dnnl_success)
        st = md_strided(&e->md_b, 1, vd, vs);
    dnnl_batch_normalization_desc_t fd, bd;
    if (st == dnnl_success)
        st = dnnl_batch_normalization_forward_desc_init(&fd, infer ? dnnl_forward_inference : dnnl_forward_training,
                                                        &e->md_x, c->epsilon,
                                                        infer ? flags | dnnl_use_global_stats : flags);
    if (call->op != PDNN__OP_BN_BWD)
        return make_plain(s, e, st, &fd, NULL);
    st = user_pd(s, st, &fd, NULL, &e->hint);
    if (st == dnnl_success)
        st = dnnl_batch_normalization_backward_desc_init(&bd, dnnl_backward, &e->md_x, &e->md_x, c->epsilon, flags);
    return make_plain(s, e, st, &bd, e->hint);
}

/* oneDNN's eltwise kind for an elementwise call, with its alpha and
 * beta; 0 where oneDNN 2.x has none (hard sigmoid, erf). */
static int eltwise_alg(const pdnn__op_call *call, dnnl_alg_kind_t *alg, float *a, float *b)
{
    *a = 0.0f, *b = 0.0f;
    if (call->op == PDNN__OP_SCALE) {
        *alg = dnnl_eltwise_linear, *a = call->u.scale.alpha;
        return 1;
    }
    if (call->op == PDNN__OP_RELU_BWD) {
        *alg = dnnl_eltwise_relu_use_dst_for_bwd;
        return 1;
    }
    const pdnn__act_call *c = &call->u.act;
    switch (c->mode) {
    case PDNN_ACTIVATION_CLIP: *alg = dnnl_eltwise_clip_v2, *a = c->alpha, *b = c->beta; return 1;
    case PDNN_ACTIVATION_LEAKY_RELU: *alg = dnnl_eltwise_relu, *a = c->alpha; return 1;
    case PDNN_ACTIVATION_SIGMOID: *alg = dnnl_eltwise_logistic; return 1;
    case PDNN_ACTIVATION_HARD_SWISH: *alg = dnnl_eltwise_hardswish; return 1;
    case PDNN_ACTIVATION_SILU: *alg = dnnl_eltwise_swish, *a = 1.0f; return 1;
    case PDNN_ACTIVATION_GELU: *alg = dnnl_eltwise_gelu_erf; return 1;
    case PDNN_ACTIVATION_GELU_TANH: *alg = dnnl_eltwise_gelu_tanh; return 1;
    case PDNN_ACTIVATION_TANH: *alg = dnnl_eltwise_tanh; return 1;
    case PDNN_ACTIVATION_SQRT: *alg = dnnl_eltwise_sqrt; return 1;
    case PDNN_ACTIVATION_NEG: *alg = dnnl_eltwise_linear, *a = -1.0f; return 1;
    case PDNN_ACTIVATION_EXP: *alg = dnnl_eltwise_exp; return 1;
    case PDNN_ACTIVATION_LOG: *alg = dnnl_eltwise_log; return 1;
    case PDNN_ACTIVATION_RECIPROCAL: *alg = dnnl_eltwise_pow, *a = 1.0f, *b = -1.0f; return 1;
    case PDNN_ACTIVATION_ABS: *alg = dnnl_eltwise_abs; return 1;
    case PDNN_ACTIVATION_POW: *alg = dnnl_eltwise_pow, *a = 1.0f, *b = c->alpha; return 1;
    default: return 0;
    }
}

/* The elements of an elementwise call. */
static int64_t eltwise_n(const pdnn__op_call *call)
{
    return call->op == PDNN__OP_SCALE ? call->u.scale.n : call->op == PDNN__OP_RELU_BWD ? call->u.relu_bwd.n
                                                                                        : call->u.act.n;
}

/* An activation, a scale, or relu's backward from y (oneDNN's
 * relu_use_dst_for_bwd: dx = y > 0 ? dy : 0 times the slope). */
static dnnl_status_t make_eltwise(pdnn__host_dnnl *s, const pdnn__op_call *call, dn_entry *e)
{
    dnnl_alg_kind_t alg;
    float a, b;
    if (!eltwise_alg(call, &alg, &a, &b))
        return dnnl_unimplemented;
    const int64_t d[1] = {eltwise_n(call)}, one[1] = {1};
    const int bwd = call->op == PDNN__OP_RELU_BWD;
    dnnl_status_t st = md_strided(&e->md_x, 1, d, one);
    dnnl_eltwise_desc_t fd, bd;
    if (st == dnnl_success)
        st = dnnl_eltwise_forward_desc_init(&fd, bwd ? dnnl_forward_training : dnnl_forward_inference, alg, &e->md_x,
                                            a, b);
    if (!bwd)
        return make_plain(s, e, st, &fd, NULL);
    st = user_pd(s, st, &fd, NULL, &e->hint);
    if (st == dnnl_success)
        st = dnnl_eltwise_backward_desc_init(&bd, alg, &e->md_x, &e->md_x, a, b);
    return make_plain(s, e, st, &bd, e->hint);
}

/* Softmax or log-softmax of packed [outer][n][inner] along n. */
static dnnl_status_t make_softmax(pdnn__host_dnnl *s, const pdnn__softmax_call *c, dn_entry *e)
{
    const int64_t d[3] = {c->outer, c->n, c->inner}, st3[3] = {c->n * c->inner, c->inner, 1};
    dnnl_status_t st = md_strided(&e->md_x, 3, d, st3);
    dnnl_softmax_v2_desc_t sd;
    if (st == dnnl_success)
        st = dnnl_softmax_v2_forward_desc_init(&sd, dnnl_forward_inference,
                                               c->log ? dnnl_softmax_log : dnnl_softmax_accurate, &e->md_x, &e->md_x, 1);
    return make_plain(s, e, st, &sd, NULL);
}

/* ---- the cache --------------------------------------------------------------- */

static int put_geom(int64_t *k, int i, const int *v, int n)
{
    for (int j = 0; j < n; j++)
        k[i++] = v[j];
    return i;
}

static int put64(int64_t *k, int i, const int64_t *v, int n)
{
    for (int j = 0; j < n; j++)
        k[i++] = v[j];
    return i;
}

/* Sizes, the 8 geometry numbers and two tensors' strides. */
static int put_shape(int64_t *k, int i, const int64_t *sz, int nsz, const int gm[8], const int64_t a[4],
                     const int64_t b[4])
{
    i = put64(k, i, sz, nsz);
    i = put_geom(k, i, gm, 8);
    i = put64(k, i, a, 4);
    return put64(k, i, b, 4);
}

/* A float's bits, as a key word. */
static int64_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The key words of batch norm, the elementwise ops and softmax into k;
 * 0 for the other ops. */
static int key_nn(const pdnn__op_call *call, int64_t *k)
{
    if (pdnn__op_is_bn(call->op)) {
        const pdnn__bn_call *c = &call->u.bn;
        const int64_t v[9] = {c->n, c->c, c->h, c->w, c->xs[0], c->xs[1], c->xs[2], c->xs[3], fbits(c->epsilon)};
        put64(k, 0, v, 9);
        return 1;
    }
    switch (call->op) {
    case PDNN__OP_SCALE: k[0] = call->u.scale.n, k[1] = fbits(call->u.scale.alpha); return 1;
    case PDNN__OP_RELU_BWD: k[0] = call->u.relu_bwd.n; return 1;
    case PDNN__OP_ACTIVATION: {
        const pdnn__act_call *c = &call->u.act;
        const int64_t v[4] = {c->n, c->mode, fbits(c->alpha), fbits(c->beta)};
        put64(k, 0, v, 4);
        return 1;
    }
    case PDNN__OP_ND_SOFTMAX: {
        const pdnn__softmax_call *c = &call->u.softmax;
        const int64_t v[4] = {c->outer, c->n, c->inner, c->log};
        put64(k, 0, v, 4);
        return 1;
    }
    default: return 0;
    }
}

/* Everything of call that shapes its primitives. */
static void key_of(const pdnn__op_call *call, int64_t key[DN_KEY])
{
    memset(key, 0, DN_KEY * sizeof *key);
    int i = 0;
    key[i++] = call->op;
    if (key_nn(call, key + i))
        return;
    if (call->op == PDNN__OP_GEMM) {
        const pdnn__matmul_call *c = &call->u.matmul;
        const int64_t v[8] = {c->m, c->n, c->k, c->trans_a, c->trans_b, pdnn__matmul_batch(c), c->stride_a,
                              c->stride_b};
        put64(key, i, v, 8);
    } else if (pdnn__op_is_conv(call->op)) {
        const pdnn__conv2d_call *c = &call->u.conv2d;
        const int64_t sz[10] = {c->n, c->c, c->h, c->w, c->k, c->r, c->s, c->p, c->q, c->groups};
        const int gm[8] = {c->stride_h, c->stride_w, c->dil_h, c->dil_w, c->pad_top, c->pad_left, c->pad_bottom,
                           c->pad_right};
        i = put_shape(key, i, sz, 10, gm, c->xs, c->ws);
        i = put64(key, i, c->ys, 4);
        if (call->op == PDNN__OP_CONV2D_FWD) {
            uint32_t cap;
            memcpy(&cap, &c->relu_cap, sizeof cap);
            const int ep[6] = {c->bias_buf.region != NULL, c->z_buf.region != NULL, c->relu, (int)cap,
                               c->w_const != NULL, blocked_fits(c, call->ws_limit)};
            put_geom(key, i, ep, 6);
        } else {
            key[i] = blocked_fits(c, call->ws_limit);
        }
    } else {
        const pdnn__pool2d_call *c = &call->u.pool2d;
        const int64_t sz[7] = {c->n, c->c, c->h, c->w, c->p, c->q, c->mode};
        const int gm[8] = {c->win_h, c->win_w, c->stride_h, c->stride_w, c->pad_top, c->pad_left, c->pad_bottom,
                           c->pad_right};
        i = put_shape(key, i, sz, 7, gm, c->xs, c->ys);
        if (call->op == PDNN__OP_POOL2D_BWD)
            put64(key, i, c->dxs, 4);
    }
}

static const char *op_name(pdnn__op op)
{
    switch (op) {
    case PDNN__OP_CONV2D_FWD: return "conv2d";
    case PDNN__OP_CONV2D_BWD_DATA: return "conv2d backward data";
    case PDNN__OP_CONV2D_BWD_FILTER: return "conv2d backward filter";
    case PDNN__OP_POOL2D_FWD: return "pool2d";
    case PDNN__OP_GEMM: return "matmul";
    case PDNN__OP_BN_FWD_TRAIN: return "batch norm (training)";
    case PDNN__OP_BN_FWD_INFER: return "batch norm (inference)";
    case PDNN__OP_BN_BWD: return "batch norm backward";
    case PDNN__OP_SCALE: return "scale";
    case PDNN__OP_ACTIVATION: return "activation";
    case PDNN__OP_RELU_BWD: return "relu backward";
    case PDNN__OP_ND_SOFTMAX: return "softmax";
    default: return "pool2d backward";
    }
}

static dnnl_status_t make_entry(pdnn__host_dnnl *s, const pdnn__op_call *call, dn_entry *e)
{
    switch (call->op) {
    case PDNN__OP_CONV2D_FWD: return make_conv_fwd(s, &call->u.conv2d, call->ws_limit, e);
    case PDNN__OP_CONV2D_BWD_DATA:
    case PDNN__OP_CONV2D_BWD_FILTER: return make_conv_bwd(s, call, e);
    case PDNN__OP_GEMM: return make_matmul(s, &call->u.matmul, e);
    case PDNN__OP_BN_FWD_TRAIN:
    case PDNN__OP_BN_FWD_INFER:
    case PDNN__OP_BN_BWD: return make_bn(s, call, e);
    case PDNN__OP_SCALE:
    case PDNN__OP_ACTIVATION:
    case PDNN__OP_RELU_BWD: return make_eltwise(s, call, e);
    case PDNN__OP_ND_SOFTMAX: return make_softmax(s, &call->u.softmax, e);
    default: return make_pool(s, call, e);
    }
}

/* call's entry, made where absent, with a reference the caller drops
 * (entry_put); NULL with why where oneDNN has nothing for it. A failure
 * is kept too, so that AUTO's plan of every call asks oneDNN once. */
static dn_entry *entry_get(pdnn__host_dnnl *s, const pdnn__op_call *call, char *why, size_t len)
{
    int64_t key[DN_KEY];
    key_of(call, key);
    pthread_mutex_lock(&s->lock);
    if (make_engine(s) != 0) {
        snprintf(why, len, "%s", s->made_why);
        pthread_mutex_unlock(&s->lock);
        return NULL;
    }
    dn_entry *e = NULL, *victim = NULL;
    for (int i = 0; i < DN_CACHE && !e; i++) {
        dn_entry *c = &s->cache[i];
        if (c->used && memcmp(c->key, key, sizeof key) == 0)
            e = c;
        else if (!c->used && (!victim || victim->used))
            victim = c;
        else if (c->used && c->refs == 0 && (!victim || (victim->used && c->stamp < victim->stamp)))
            victim = c;
    }
    if (!e && !victim) {
        snprintf(why, len, "oneDNN's primitive cache is full of calls in flight");
        pthread_mutex_unlock(&s->lock);
        return NULL;
    }
    if (!e) {
        e = victim;
        entry_clear(e);
        memcpy(e->key, key, sizeof key);
        e->used = 1;
        const dnnl_status_t st = make_entry(s, call, e);
        e->ok = st == dnnl_success;
        if (!e->ok)
            snprintf(e->why, sizeof e->why, "oneDNN has no primitive for this %s (%s)", op_name(call->op),
                     dnnl_status2str(st));
    }
    e->stamp = ++s->clock;
    if (!e->ok) {
        snprintf(why, len, "%s", e->why);
        pthread_mutex_unlock(&s->lock);
        return NULL;
    }
    e->refs++;
    pthread_mutex_unlock(&s->lock);
    return e;
}

static void entry_put(pdnn__host_dnnl *s, dn_entry *e)
{
    pthread_mutex_lock(&s->lock);
    e->refs--;
    pthread_mutex_unlock(&s->lock);
}

/* ---- workspace ----------------------------------------------------------------
 * [scratchpad][the weights in oneDNN's order, unless kept packed][x and
 * y in oneDNN's layouts][pool backward: the forward's y][its argmax
 * workspace], each 64-byte aligned. */

typedef struct dn_ws {
    size_t wop, xop, yop, ytmp, pws, total;
} dn_ws;

static size_t up64(size_t n) { return (n + DN_ALIGN - 1) / DN_ALIGN * DN_ALIGN; }

static dn_ws ws_of(const dn_entry *e, int wop_in_ws)
{
    dn_ws w;
    w.wop = up64(e->scratch);
    w.xop = w.wop + (wop_in_ws ? up64(e->wop_bytes) : 0);
    w.yop = w.xop + up64(e->xop_bytes);
    w.ytmp = w.yop + up64(e->yop_bytes);
    w.pws = w.ytmp + up64(e->ytmp_bytes);
    w.total = w.pws + up64(e->pws_bytes);
    return w;
}

/* Whether an activation overwrites its input (y = x). */
static int act_in_place(const pdnn__op_call *call)
{
    const pdnn__act_call *c = &call->u.act;
    return call->op == PDNN__OP_ACTIVATION && c->x_buf.region == c->y_buf.region && c->x_buf.offset == c->y_buf.offset;
}

/* The bytes after the scratchpad: batch norm's batch statistics (mean,
 * variance) and the gradients nobody wants (dgamma, dbeta, dx), which
 * oneDNN writes all the same; an activation in place, a copy of x. */
static size_t bn_aux(const pdnn__op_call *call)
{
    if (act_in_place(call))
        return up64((size_t)call->u.act.n * sizeof(float));
    if (!pdnn__op_is_bn(call->op))
        return 0;
    const pdnn__bn_call *c = &call->u.bn;
    const size_t x = (size_t)(c->n * c->c * c->h * c->w) * sizeof(float);
    return up64((size_t)c->c * 4 * sizeof(float)) +
           (call->op == PDNN__OP_BN_BWD && !c->dx_buf.region ? up64(x) : 0);
}

/* Whether the conv forward keeps its reordered weights on the frozen
 * filter (the plan's wpack) rather than in the workspace. */
static int keeps_weights(const pdnn__op_call *call, const dn_entry *e)
{
    return call->op == PDNN__OP_CONV2D_FWD && call->u.conv2d.w_const && e->pre;
}

static int empty_call(const pdnn__op_call *call)
{
    if (pdnn__op_is_bn(call->op))
        return call->u.bn.n * call->u.bn.c * call->u.bn.h * call->u.bn.w == 0;
    if (call->op == PDNN__OP_SCALE || call->op == PDNN__OP_ACTIVATION || call->op == PDNN__OP_RELU_BWD)
        return eltwise_n(call) == 0;
    if (call->op == PDNN__OP_ND_SOFTMAX)
        return call->u.softmax.outer * call->u.softmax.n * call->u.softmax.inner == 0;
    if (call->op == PDNN__OP_GEMM)
        return call->u.matmul.m * call->u.matmul.n * call->u.matmul.k == 0;
    if (pdnn__op_is_conv(call->op)) {
        const pdnn__conv2d_call *c = &call->u.conv2d;
        return c->n * c->c * c->h * c->w == 0 || c->k * c->p * c->q == 0 || c->r * c->s == 0;
    }
    const pdnn__pool2d_call *c = &call->u.pool2d;
    return c->n * c->c * c->h * c->w == 0 || c->p * c->q == 0;
}

static void dn_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    pdnn__host_dnnl *s = ((pdnn__host_dev *)dev)->dnnl;
    if (!s) {
        pdnn__plan_refuse(plan, "onednn: the host device has no oneDNN state (out of host memory when it opened)");
        return;
    }
    if (empty_call(call)) {
        pdnn__plan_refuse(plan, "onednn: an empty tensor leaves oneDNN nothing to run");
        return;
    }
    char why[PDNN__WHY_LEN];
    dn_entry *e = entry_get(s, call, why, sizeof why);
    if (!e) {
        pdnn__plan_refuse(plan, "onednn: %s", why);
        return;
    }
    const int keep = keeps_weights(call, e);
    plan->workspace = ws_of(e, !keep).total + bn_aux(call);
    plan->wpack = keep ? e->wop_bytes : 0;
    entry_put(s, e);
}

/* ---- running ------------------------------------------------------------------ */

static void *ptr_of(pdnn__buf b) { return (char *)b.region + b.offset; }

typedef struct dn_arg {
    int arg;
    const dnnl_memory_desc_t *md;
    void *ptr;
} dn_arg;

/* Runs prim on args; s->exec held by the caller. */
static dnnl_status_t exec_locked(pdnn__host_dnnl *s, dnnl_primitive_t prim, const dn_arg *a, int n)
{
    dnnl_memory_t m[DN_ARGS];
    dnnl_exec_arg_t ea[DN_ARGS];
    int made = 0;
    dnnl_status_t st = dnnl_success;
    for (; made < n; made++) {
        st = dnnl_memory_create(&m[made], a[made].md, s->engine, a[made].ptr);
        if (st != dnnl_success)
            break;
        ea[made] = (dnnl_exec_arg_t){a[made].arg, m[made]};
    }
    if (st == dnnl_success) {
        if (s->threads > 0)
            omp_set_num_threads(s->threads);
        st = dnnl_primitive_execute(prim, s->stream, n, ea);
        if (st == dnnl_success)
            st = dnnl_stream_wait(s->stream);
    }
    for (int i = 0; i < made; i++)
        dnnl_memory_destroy(m[i]);
    return st;
}

static pdnn_status dn_fail(const pdnn__op_call *call, const char *what, dnnl_status_t st)
{
    return pdnn__error(PDNN_ERR_BACKEND, "%s on the host: oneDNN's %s failed (%s)", op_name(call->op), what,
                       dnnl_status2str(st));
}

/* A scratchpad argument where the primitive wants one. */
static int add_scratch(const dn_entry *e, char *ws, dn_arg *a, int n)
{
    if (e->scratch == 0)
        return n;
    a[n] = (dn_arg){DNNL_ARG_SCRATCHPAD, &e->md_scratch, ws};
    return n + 1;
}

static pdnn_status run_conv_fwd(pdnn__host_dnnl *s, const pdnn__op_call *call, dn_entry *e, char *ws)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int kept = c->wpack.region != NULL;
    const dn_ws w = ws_of(e, !kept);
    void *wp = ptr_of(c->w_buf);
    dnnl_status_t st = dnnl_success;
    if (e->pre) {
        void *to = kept ? ptr_of(c->wpack) : ws + w.wop;
        if (!kept || c->wpack_fill) {
            const dn_arg r[2] = {{DNNL_ARG_FROM, &e->md_w, wp}, {DNNL_ARG_TO, &e->md_wop, to}};
            if ((st = exec_locked(s, e->pre, r, 2)) != dnnl_success)
                return dn_fail(call, "reorder of the filter", st);
        }
        wp = to;
    }
    /* x and y where the primitive reads and writes them. */
    void *xp = ptr_of(c->x_buf), *yp = ptr_of(c->y_buf);
    const dnnl_memory_desc_t *xmd = &e->md_x, *ymd = &e->md_y;
    if (e->xin) {
        const dn_arg r[2] = {{DNNL_ARG_FROM, xmd, xp}, {DNNL_ARG_TO, &e->md_xop, ws + w.xop}};
        if ((st = exec_locked(s, e->xin, r, 2)) != dnnl_success)
            return dn_fail(call, "reorder of the input", st);
        xp = ws + w.xop, yp = ws + w.yop;
        xmd = &e->md_xop, ymd = &e->md_yop;
    }
    if (e->zcopy && ptr_of(c->z_buf) != yp) {
        const dn_arg r[2] = {{DNNL_ARG_FROM, &e->md_y, ptr_of(c->z_buf)}, {DNNL_ARG_TO, ymd, yp}};
        if ((st = exec_locked(s, e->zcopy, r, 2)) != dnnl_success)
            return dn_fail(call, "copy of the residual", st);
    }
    dn_arg a[DN_ARGS] = {{DNNL_ARG_SRC, xmd, xp}, {DNNL_ARG_WEIGHTS, &e->md_wop, wp}, {DNNL_ARG_DST, ymd, yp}};
    int n = 3;
    if (c->bias_buf.region)
        a[n++] = (dn_arg){DNNL_ARG_BIAS, &e->md_b, ptr_of(c->bias_buf)};
    n = add_scratch(e, ws, a, n);
    if ((st = exec_locked(s, e->prim, a, n)) != dnnl_success)
        return dn_fail(call, "convolution", st);
    if (e->act) {
        const dn_arg r[2] = {{DNNL_ARG_SRC, ymd, yp}, {DNNL_ARG_DST, ymd, yp}};
        if ((st = exec_locked(s, e->act, r, 2)) != dnnl_success)
            return dn_fail(call, "relu", st);
    }
    if (e->yout) {
        const dn_arg r[2] = {{DNNL_ARG_FROM, ymd, yp}, {DNNL_ARG_TO, &e->md_y, ptr_of(c->y_buf)}};
        if ((st = exec_locked(s, e->yout, r, 2)) != dnnl_success)
            return dn_fail(call, "reorder of the output", st);
    }
    return PDNN_SUCCESS;
}

/* A reorder of one buffer into another; s->exec held. */
static dnnl_status_t reorder_run(pdnn__host_dnnl *s, dnnl_primitive_t prim, const dnnl_memory_desc_t *from,
                                 void *src, const dnnl_memory_desc_t *to, void *dst)
{
    const dn_arg r[2] = {{DNNL_ARG_FROM, from, src}, {DNNL_ARG_TO, to, dst}};
    return exec_locked(s, prim, r, 2);
}

static pdnn_status run_conv_bwd(pdnn__host_dnnl *s, const pdnn__op_call *call, dn_entry *e, char *ws)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const dn_ws w = ws_of(e, 1);
    void *wp = ptr_of(c->w_buf), *wop = e->wop_bytes ? ws + w.wop : wp;
    /* x (dx) and dy where the primitive reads and writes them. */
    void *xp = ptr_of(c->x_buf), *yp = ptr_of(c->y_buf);
    const dnnl_memory_desc_t *xmd = &e->md_x, *ymd = &e->md_y;
    dn_arg a[DN_ARGS];
    int n = 0;
    dnnl_status_t st = dnnl_success;
    if (e->yin) {
        if ((st = reorder_run(s, e->yin, ymd, yp, &e->md_yop, ws + w.yop)) != dnnl_success)
            return dn_fail(call, "reorder of dy", st);
        yp = ws + w.yop, ymd = &e->md_yop;
    }
    if (e->xin) {
        if ((st = reorder_run(s, e->xin, xmd, xp, &e->md_xop, ws + w.xop)) != dnnl_success)
            return dn_fail(call, "reorder of the input", st);
        xp = ws + w.xop, xmd = &e->md_xop;
    } else if (e->xout) {
        xp = ws + w.xop, xmd = &e->md_xop;
    }
    if (call->op == PDNN__OP_CONV2D_BWD_DATA) {
        if (e->pre && (st = reorder_run(s, e->pre, &e->md_w, wp, &e->md_wop, wop)) != dnnl_success)
            return dn_fail(call, "reorder of the filter", st);
        a[n++] = (dn_arg){DNNL_ARG_DIFF_DST, ymd, yp};
        a[n++] = (dn_arg){DNNL_ARG_WEIGHTS, &e->md_wop, wop};
        a[n++] = (dn_arg){DNNL_ARG_DIFF_SRC, xmd, xp};
    } else {
        a[n++] = (dn_arg){DNNL_ARG_SRC, xmd, xp};
        a[n++] = (dn_arg){DNNL_ARG_DIFF_DST, ymd, yp};
        a[n++] = (dn_arg){DNNL_ARG_DIFF_WEIGHTS, &e->md_wop, wop};
    }
    n = add_scratch(e, ws, a, n);
    if ((st = exec_locked(s, e->prim, a, n)) != dnnl_success)
        return dn_fail(call, "backward convolution", st);
    if (e->post && (st = reorder_run(s, e->post, &e->md_wop, wop, &e->md_w, wp)) != dnnl_success)
        return dn_fail(call, "reorder of the filter gradient", st);
    if (e->xout && (st = reorder_run(s, e->xout, xmd, xp, &e->md_x, ptr_of(c->x_buf))) != dnnl_success)
        return dn_fail(call, "reorder of dx", st);
    return PDNN_SUCCESS;
}

/* Whether x holds a NaN (read in its layout's memory order: the
 * innermost axis is the one of stride 1 in NCHW and NHWC alike). */
static int has_nan(const pdnn__pool2d_call *c)
{
    const float *x = ptr_of(c->x_buf);
    const int64_t d[4] = {c->n, c->c, c->h, c->w};
    int ord[4];
    pdnn__stride_order(c->xs, ord);
    const int64_t n3 = d[ord[3]], s3 = c->xs[ord[3]];
    for (int64_t i0 = 0; i0 < d[ord[0]]; i0++)
        for (int64_t i1 = 0; i1 < d[ord[1]]; i1++)
            for (int64_t i2 = 0; i2 < d[ord[2]]; i2++) {
                const float *r = x + i0 * c->xs[ord[0]] + i1 * c->xs[ord[1]] + i2 * c->xs[ord[2]];
                int nan = 0;
                for (int64_t i3 = 0; i3 < n3; i3++)
                    nan |= r[i3 * s3] != r[i3 * s3];
                if (nan)
                    return 1;
            }
    return 0;
}

static pdnn_status run_pool(pdnn__host_dnnl *s, const pdnn__op_call *call, dn_entry *e, char *ws)
{
    const pdnn__pool2d_call *c = &call->u.pool2d;
    /* oneDNN's max passes over a NaN, which polydnn's pooling returns (as
     * PyTorch's does): such an input goes to the reference, after a scan
     * that costs about what the pooling's own read of x does. */
    if (c->mode == PDNN_POOL_MAX && has_nan(c))
        return pdnn__host_pool2d_ref(NULL, call);
    const dn_ws w = ws_of(e, 1);
    dn_arg a[DN_ARGS];
    int n = 0;
    dnnl_status_t st;
    if (call->op == PDNN__OP_POOL2D_FWD) {
        st = dnnl_success;
        for (int64_t j = 0; j < e->slices && st == dnnl_success; j++) {
            n = 0;
            a[n++] = (dn_arg){DNNL_ARG_SRC, &e->md_x, (float *)ptr_of(c->x_buf) + j * e->slice_c * c->xs[1]};
            a[n++] = (dn_arg){DNNL_ARG_DST, &e->md_y, (float *)ptr_of(c->y_buf) + j * e->slice_c * c->ys[1]};
            n = add_scratch(e, ws, a, n);
            st = exec_locked(s, e->prim, a, n);
        }
        return st == dnnl_success ? PDNN_SUCCESS : dn_fail(call, "pooling", st);
    }
    if (e->pre) {
        dn_arg f[DN_ARGS] = {{DNNL_ARG_SRC, &e->md_x, ptr_of(c->x_buf)},
                             {DNNL_ARG_DST, &e->md_y, ws + w.ytmp},
                             {DNNL_ARG_WORKSPACE, &e->md_pws, ws + w.pws}};
        const int nf = add_scratch(e, ws, f, 3);
        if ((st = exec_locked(s, e->pre, f, nf)) != dnnl_success)
            return dn_fail(call, "pooling forward (for its argmax)", st);
        a[n++] = (dn_arg){DNNL_ARG_WORKSPACE, &e->md_pws, ws + w.pws};
    }
    a[n++] = (dn_arg){DNNL_ARG_DIFF_DST, &e->md_y, ptr_of(c->dy_buf)};
    a[n++] = (dn_arg){DNNL_ARG_DIFF_SRC, &e->md_w, ptr_of(c->dx_buf)};
    n = add_scratch(e, ws, a, n);
    st = exec_locked(s, e->prim, a, n);
    return st == dnnl_success ? PDNN_SUCCESS : dn_fail(call, "pooling backward", st);
}

/* Batch norm. oneDNN returns the batch's mean and biased variance; the
 * saved inverse deviation and the running statistics (unbiased variance)
 * are formed from them here in double as the reference forms them, and
 * the backward takes the variance back from the saved 1/sqrt(var + eps). */
static pdnn_status run_bn(pdnn__host_dnnl *s, const pdnn__op_call *call, dn_entry *e, char *ws)
{
    const pdnn__bn_call *c = &call->u.bn;
    char *aux = ws + up64(e->scratch);
    float *mean = (float *)(void *)aux, *var = mean + c->c, *dg = var + c->c, *db = dg + c->c;
    const int64_t ch = c->c, m = c->n * c->h * c->w;
    const double eps = c->epsilon;
    dn_arg a[DN_ARGS] = {{DNNL_ARG_SRC, &e->md_x, ptr_of(c->x_buf)}, {DNNL_ARG_SCALE, &e->md_b, ptr_of(c->gamma_buf)}};
    int n = 2;
    if (call->op == PDNN__OP_BN_BWD) {
        const float *inv = ptr_of(c->saved_inv_std_buf);
        for (int64_t k = 0; k < ch; k++)
            var[k] = (float)(1.0 / ((double)inv[k] * (double)inv[k]) - eps);
        /* oneDNN 2.6 wants the shift as an input of the backward too
         * (it does not read it): gamma stands in. */
        a[n++] = (dn_arg){DNNL_ARG_SHIFT, &e->md_b, ptr_of(c->gamma_buf)};
        a[n++] = (dn_arg){DNNL_ARG_MEAN, &e->md_b, ptr_of(c->saved_mean_buf)};
        a[n++] = (dn_arg){DNNL_ARG_VARIANCE, &e->md_b, var};
        a[n++] = (dn_arg){DNNL_ARG_DIFF_DST, &e->md_x, ptr_of(c->dy_buf)};
        a[n++] = (dn_arg){DNNL_ARG_DIFF_SRC, &e->md_x,
                          c->dx_buf.region ? ptr_of(c->dx_buf) : aux + up64((size_t)ch * 4 * sizeof(float))};
        a[n++] = (dn_arg){DNNL_ARG_DIFF_SCALE, &e->md_b, c->dgamma_buf.region ? ptr_of(c->dgamma_buf) : (void *)dg};
        a[n++] = (dn_arg){DNNL_ARG_DIFF_SHIFT, &e->md_b, c->dbeta_buf.region ? ptr_of(c->dbeta_buf) : (void *)db};
    } else {
        const int infer = call->op == PDNN__OP_BN_FWD_INFER;
        a[n++] = (dn_arg){DNNL_ARG_SHIFT, &e->md_b, ptr_of(c->beta_buf)};
        a[n++] = (dn_arg){DNNL_ARG_DST, &e->md_x, ptr_of(c->y_buf)};
        a[n++] = (dn_arg){DNNL_ARG_MEAN, &e->md_b, infer ? ptr_of(c->running_mean_buf) : (void *)mean};
        a[n++] = (dn_arg){DNNL_ARG_VARIANCE, &e->md_b, infer ? ptr_of(c->running_var_buf) : (void *)var};
    }
    n = add_scratch(e, ws, a, n);
    const dnnl_status_t st = exec_locked(s, e->prim, a, n);
    if (st != dnnl_success)
        return dn_fail(call, "batch normalization", st);
    if (call->op != PDNN__OP_BN_FWD_TRAIN)
        return PDNN_SUCCESS;
    for (int64_t k = 0; k < ch; k++) {
        if (c->saved_mean_buf.region) {
            ((float *)ptr_of(c->saved_mean_buf))[k] = mean[k];
            ((float *)ptr_of(c->saved_inv_std_buf))[k] = (float)(1.0 / sqrt((double)var[k] + eps));
        }
        if (c->running_mean_buf.region) {
            const double mo = c->momentum;
            float *rm = ptr_of(c->running_mean_buf), *rv = ptr_of(c->running_var_buf);
            rm[k] = (float)((1.0 - mo) * rm[k] + mo * mean[k]);
            rv[k] = (float)((1.0 - mo) * rv[k] + mo * ((double)var[k] * (double)m / (double)(m - 1)));
        }
    }
    return PDNN_SUCCESS;
}

/* Whether any of n floats is not finite (NaN where nan_only). */
static int any_special(const float *x, int64_t n, int nan_only)
{
    int bad = 0;
    if (nan_only)
        for (int64_t i = 0; i < n; i++)
            bad |= x[i] != x[i];
    else
        for (int64_t i = 0; i < n; i++)
            bad |= !(x[i] - x[i] == 0.0f);
    return bad;
}

/* The elementwise ops and softmax. oneDNN's kernels clamp with max and
 * min, which pass over a NaN that the reference returns: an activation
 * of an input holding NaN gets them back afterwards (every activation of
 * NaN is NaN), from a copy of x in the workspace where y overwrites x;
 * softmax of such an input, and relu's backward of a dy that is not
 * finite (oneDNN multiplies it by 0) or of a y holding NaN (oneDNN passes
 * dy there, the reference 0), run the reference. */
static pdnn_status run_eltwise(pdnn__host_dnnl *s, void *dev, const pdnn__op_call *call, const pdnn__plan *plan,
                               dn_entry *e, char *ws)
{
    const void *x;
    void *y;
    const pdnn__algo *ref = NULL;
    int64_t n;
    dn_arg a[DN_ARGS];
    if (call->op == PDNN__OP_RELU_BWD) {
        const pdnn__relu_bwd_call *c = &call->u.relu_bwd;
        x = ptr_of(c->dy_buf), y = ptr_of(c->dx_buf), n = c->n;
        if (any_special(x, n, 0) || any_special(ptr_of(c->y_buf), n, 1))
            ref = &pdnn__host_relu_bwd_direct;
        a[0] = (dn_arg){DNNL_ARG_DST, &e->md_x, ptr_of(c->y_buf)};
        a[1] = (dn_arg){DNNL_ARG_DIFF_DST, &e->md_x, ptr_of(c->dy_buf)};
        a[2] = (dn_arg){DNNL_ARG_DIFF_SRC, &e->md_x, y};
    } else {
        const pdnn__buf xb = call->op == PDNN__OP_SCALE        ? call->u.scale.x_buf
                             : call->op == PDNN__OP_ACTIVATION ? call->u.act.x_buf
                                                               : call->u.softmax.x_buf;
        const pdnn__buf yb = call->op == PDNN__OP_SCALE        ? call->u.scale.y_buf
                             : call->op == PDNN__OP_ACTIVATION ? call->u.act.y_buf
                                                               : call->u.softmax.y_buf;
        x = ptr_of(xb), y = ptr_of(yb);
        n = call->op == PDNN__OP_ND_SOFTMAX ? call->u.softmax.outer * call->u.softmax.n * call->u.softmax.inner
                                            : eltwise_n(call);
        const int nan = call->op != PDNN__OP_SCALE && any_special(x, n, 1);
        if (nan && call->op == PDNN__OP_ND_SOFTMAX) {
            ref = &pdnn__host_softmax_direct;
        } else if (nan && act_in_place(call)) {
            if (!ws) /* the plan gave the copy its room */
                return pdnn__error(PDNN_ERR_INTERNAL, "activation on the host: onednn: no workspace for x's copy");
            void *copy = ws + up64(e->scratch);
            memcpy(copy, x, (size_t)n * sizeof(float));
            x = copy;
        } else if (!nan) {
            x = NULL; /* nothing to put back */
        }
        a[0] = (dn_arg){DNNL_ARG_SRC, &e->md_x, x ? (void *)x : ptr_of(xb)};
        a[1] = (dn_arg){DNNL_ARG_DST, &e->md_x, y};
        a[2] = (dn_arg){0, NULL, NULL};
    }
    if (ref)
        return ref->run(dev, call, plan, (pdnn__buf){NULL, 0}, NULL);
    const int na = add_scratch(e, ws, a, call->op == PDNN__OP_RELU_BWD ? 3 : 2);
    const dnnl_status_t st = exec_locked(s, e->prim, a, na);
    if (st != dnnl_success)
        return dn_fail(call, call->op == PDNN__OP_ND_SOFTMAX ? "softmax" : "eltwise", st);
    if (call->op != PDNN__OP_RELU_BWD && x) {
        const float *xf = x;
        float *yf = y;
        for (int64_t i = 0; i < n; i++)
            if (xf[i] != xf[i])
                yf[i] = xf[i];
    }
    return PDNN_SUCCESS;
}

static pdnn_status dn_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                          pdnn__run_report *rep)
{
    (void)rep;
    pdnn__host_dnnl *s = ((pdnn__host_dev *)dev)->dnnl;
    char why[PDNN__WHY_LEN];
    dn_entry *e = s ? entry_get(s, call, why, sizeof why) : NULL;
    if (!e)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s on the host: onednn: %s", op_name(call->op),
                           s ? why : "no oneDNN state");
    char *w = ws.region ? ptr_of(ws) : NULL;
    pthread_mutex_lock(&s->exec);
    pdnn_status st;
    if (call->op == PDNN__OP_CONV2D_FWD) {
        st = run_conv_fwd(s, call, e, w);
    } else if (call->op == PDNN__OP_GEMM) {
        const pdnn__matmul_call *c = &call->u.matmul;
        dn_arg a[DN_ARGS] = {{DNNL_ARG_SRC, &e->md_x, ptr_of(c->a_buf)},
                             {DNNL_ARG_WEIGHTS, &e->md_w, ptr_of(c->b_buf)},
                             {DNNL_ARG_DST, &e->md_y, ptr_of(c->c_buf)}};
        const dnnl_status_t ds = exec_locked(s, e->prim, a, add_scratch(e, w, a, 3));
        st = ds == dnnl_success ? PDNN_SUCCESS : dn_fail(call, "matmul", ds);
    }
    else if (pdnn__op_is_conv(call->op)) {
        st = run_conv_bwd(s, call, e, w);
    } else if (pdnn__op_is_bn(call->op)) {
        st = run_bn(s, call, e, w);
    } else if (call->op != PDNN__OP_POOL2D_FWD && call->op != PDNN__OP_POOL2D_BWD) {
        st = run_eltwise(s, dev, call, plan, e, w);
    }
    else {
        st = run_pool(s, call, e, w);
    }
    pthread_mutex_unlock(&s->exec);
    entry_put(s, e);
    return st;
}

/* ---- the bias gradient ---------------------------------------------------------
 * db[k] = the sum of dy over N, P and Q. oneDNN's reduction runs its
 * reference kernel for this shape (17-34 ms a call for Deep MNIST's
 * 64x32x28x28 dy); these loops read dy once in memory order into double
 * sums held in the workspace (K doubles), the reference's precision. */

static void bias_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    plan->workspace = (size_t)call->u.conv2d.k * sizeof(double);
}

/* The sum of n floats at stride st, in four chains (an add's latency). */
static double sum_strided(const float *x, int64_t n, int64_t st)
{
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a0 += x[i * st];
        a1 += x[(i + 1) * st];
        a2 += x[(i + 2) * st];
        a3 += x[(i + 3) * st];
    }
    for (; i < n; i++)
        a0 += x[i * st];
    return (a0 + a1) + (a2 + a3);
}

static pdnn_status bias_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                            pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)rep;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const float *dy = ptr_of(c->y_buf);
    const int64_t *st = c->ys;
    float *db = ptr_of(c->bias_buf);
    if (c->k == 0)
        return PDNN_SUCCESS;
    double *acc = ptr_of(ws);
    memset(acc, 0, (size_t)c->k * sizeof *acc);
    if (st[1] == 1) { /* channels innermost: a row of K per pixel */
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t p = 0; p < c->p; p++)
                for (int64_t q = 0; q < c->q; q++) {
                    const float *r = dy + n * st[0] + p * st[2] + q * st[3];
                    for (int64_t k = 0; k < c->k; k++)
                        acc[k] += r[k];
                }
    } else { /* a plane per channel: its rows along Q */
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t k = 0; k < c->k; k++)
                for (int64_t p = 0; p < c->p; p++)
                    acc[k] += sum_strided(dy + n * st[0] + k * st[1] + p * st[2], c->q, st[3]);
    }
    for (int64_t k = 0; k < c->k; k++)
        db[k] = (float)acc[k];
    return PDNN_SUCCESS;
}

/* Ranked before the reference (100). oneDNN's direct convolutions sum in
 * float32 in blocked orders: plain sums, the default tolerance. */
const pdnn__algo pdnn__host_dnnl_conv = {
    .op = PDNN__OP_CONV2D_FWD, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run, .residual = 1,
    .relu_cap = 1, .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_dnnl_conv_bwd_data = {
    .op = PDNN__OP_CONV2D_BWD_DATA, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_dnnl_conv_bwd_filter = {
    .op = PDNN__OP_CONV2D_BWD_FILTER, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_dnnl_conv_bwd_bias = {
    .op = PDNN__OP_CONV2D_BWD_BIAS, .name = "onednn", .rank = 10, .plan = bias_plan, .run = bias_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_dnnl_pool = {
    .op = PDNN__OP_POOL2D_FWD, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_dnnl_matmul = {
    .op = PDNN__OP_GEMM, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
/* Batch norm sums in float in oneDNN's blocking (the reference in
 * double): plain sums, the default tolerance; so are the elementwise
 * ops (oneDNN's polynomial exp, tanh and erf stay within a few ulps) and
 * softmax. relu's backward selects: exact. */
const pdnn__algo pdnn__host_dnnl_bn_fwd_train = {
    .op = PDNN__OP_BN_FWD_TRAIN, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_dnnl_bn_fwd_infer = {
    .op = PDNN__OP_BN_FWD_INFER, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_dnnl_bn_bwd = {
    .op = PDNN__OP_BN_BWD, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_dnnl_scale = {
    .op = PDNN__OP_SCALE, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_dnnl_activation = {
    .op = PDNN__OP_ACTIVATION, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_dnnl_relu_bwd = {
    .op = PDNN__OP_RELU_BWD, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__host_dnnl_softmax = {
    .op = PDNN__OP_ND_SOFTMAX, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__host_dnnl_pool_bwd = {
    .op = PDNN__OP_POOL2D_BWD, .name = "onednn", .rank = 10, .plan = dn_plan, .run = dn_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
