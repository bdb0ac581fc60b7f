/* oneDNN as the host-CPU peer of `polydnn bench` (see peer_dnnl.h). Both
 * oneDNN C APIs are spoken: 2.x (Debian 12) describes an op in a struct
 * and then makes its primitive descriptor, 3.x makes the descriptor in one
 * call and holds memory descriptors by handle; md_* below hide that. */
#include "peer_dnnl.h"
#include "run.h" /* cli_now: the tool's one clock */

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <stdio.h>
#include <stdlib.h>

struct peer_dnnl {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
};

#if DNNL_VERSION_MAJOR >= 3
typedef dnnl_memory_desc_t md_t;        /* a handle */
typedef const_dnnl_memory_desc_t md_ref;
#define MD(m) (m)
static dnnl_status_t md_init(md_t *m, int nd, const dnnl_dims_t dims, dnnl_format_tag_t tag)
{
    return dnnl_memory_desc_create_with_tag(m, nd, dims, dnnl_f32, tag);
}
static void md_free(md_t m)
{
    if (m)
        dnnl_memory_desc_destroy(m);
}
#else
typedef dnnl_memory_desc_t md_t;        /* a struct */
typedef const dnnl_memory_desc_t *md_ref;
#define MD(m) (&(m))
static dnnl_status_t md_init(md_t *m, int nd, const dnnl_dims_t dims, dnnl_format_tag_t tag)
{
    return dnnl_memory_desc_init_by_tag(m, nd, dims, dnnl_f32, tag);
}
static void md_free(md_t m)
{
    (void)m;
}
#endif

static int fail(char *err, size_t len, const char *what, dnnl_status_t st)
{
    snprintf(err, len, "oneDNN: %s failed with %s", what, dnnl_status2str(st));
    return -1;
}

int peer_dnnl_open(peer_dnnl **out, char *err, size_t errlen)
{
    *out = NULL;
    peer_dnnl *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "oneDNN: out of host memory for the peer's state: %zu bytes", sizeof *p);
        return -1;
    }
    dnnl_status_t st = dnnl_engine_create(&p->engine, dnnl_cpu, 0);
    if (st != dnnl_success) {
        free(p);
        return fail(err, errlen, "creating the CPU engine", st);
    }
    st = dnnl_stream_create(&p->stream, p->engine, dnnl_stream_default_flags);
    if (st != dnnl_success) {
        dnnl_engine_destroy(p->engine);
        free(p);
        return fail(err, errlen, "creating a stream", st);
    }
    *out = p;
    return 0;
}

void peer_dnnl_close(peer_dnnl *p)
{
    if (!p)
        return;
    dnnl_stream_destroy(p->stream);
    dnnl_engine_destroy(p->engine);
    free(p);
}

void peer_dnnl_describe(char *buf, size_t len)
{
    const dnnl_version_t *v = dnnl_version();
    const char *rt = v->cpu_runtime == DNNL_RUNTIME_OMP          ? "OpenMP"
                     : v->cpu_runtime == DNNL_RUNTIME_TBB        ? "TBB"
                     : v->cpu_runtime == DNNL_RUNTIME_SEQ        ? "sequential"
                     : v->cpu_runtime == DNNL_RUNTIME_THREADPOOL ? "threadpool"
                                                                 : "other";
    snprintf(buf, len, "oneDNN %d.%d.%d (%s)", v->major, v->minor, v->patch, rt);
}

/* Runs prim with its args once and waits. */
static dnnl_status_t exec(peer_dnnl *p, dnnl_primitive_t prim, int nargs, const dnnl_exec_arg_t *args)
{
    dnnl_status_t st = dnnl_primitive_execute(prim, p->stream, nargs, args);
    return st == dnnl_success ? dnnl_stream_wait(p->stream) : st;
}

/* Copies user-format weights into a memory of oneDNN's chosen format. */
static int reorder(peer_dnnl *p, dnnl_memory_t from, md_ref from_md, dnnl_memory_t to, md_ref to_md, char *err,
                   size_t errlen)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, from_md, p->engine, to_md, p->engine, NULL);
    if (st == dnnl_success)
        st = dnnl_primitive_create(&prim, pd);
    if (st == dnnl_success) {
        const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
        st = exec(p, prim, 2, args);
    }
    if (prim)
        dnnl_primitive_destroy(prim);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return st == dnnl_success ? 0 : fail(err, errlen, "reordering the weights", st);
}

int peer_dnnl_conv(peer_dnnl *p, const peer_conv *c, const float *x, const float *w, float *y, int iters,
                   double *ms, char *err, size_t errlen)
{
    const int grouped = c->groups > 1;
    const dnnl_dims_t xdims = {c->n, c->c, c->h, c->w};
    const dnnl_dims_t ydims = {c->n, c->k, c->p, c->q};
    /* Grouped weights are 5-D in oneDNN, {G, K/G, C/G, R, S}; goihw and
     * gohwi hold them exactly as polydnn's OIHW and OHWI do. */
    const dnnl_dims_t wdims4 = {c->k, c->c, c->r, c->s};
    const dnnl_dims_t wdims5 = {c->groups, c->k / c->groups, c->c / c->groups, c->r, c->s};
    const dnnl_dims_t strides = {c->stride_h, c->stride_w};
    const dnnl_dims_t dilates = {c->dil_h - 1, c->dil_w - 1}; /* oneDNN counts the gaps */
    const dnnl_dims_t pad_l = {c->pad_top, c->pad_left}, pad_r = {c->pad_bottom, c->pad_right};
    const dnnl_format_tag_t act = c->nhwc ? dnnl_nhwc : dnnl_nchw;
    const dnnl_format_tag_t wtag = grouped ? (c->nhwc ? dnnl_gohwi : dnnl_goihw) : (c->nhwc ? dnnl_ohwi : dnnl_oihw);
    const int wnd = grouped ? 5 : 4;

    md_t xmd = {0}, ymd = {0}, wuser_md = {0}, wany_md = {0};
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t xm = NULL, ym = NULL, wuser = NULL, wconv = NULL;
    int rc = -1;
    dnnl_status_t st = md_init(&xmd, 4, xdims, act);
    if (st == dnnl_success)
        st = md_init(&ymd, 4, ydims, act);
    if (st == dnnl_success)
        st = md_init(&wuser_md, wnd, grouped ? wdims5 : wdims4, wtag);
    /* "any": the weights in whatever blocked layout oneDNN runs fastest. */
    if (st == dnnl_success)
        st = md_init(&wany_md, wnd, grouped ? wdims5 : wdims4, dnnl_format_tag_any);
    if (st != dnnl_success) {
        fail(err, errlen, "describing the tensors", st);
        goto out;
    }
#if DNNL_VERSION_MAJOR >= 3
    st = dnnl_convolution_forward_primitive_desc_create(&pd, p->engine, dnnl_forward_inference, dnnl_convolution_auto,
                                                        MD(xmd), MD(wany_md), NULL, MD(ymd), strides, dilates, pad_l,
                                                        pad_r, NULL);
#else
    {
        dnnl_convolution_desc_t cd;
        st = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_auto, MD(xmd),
                                                        MD(wany_md), NULL, MD(ymd), strides, dilates, pad_l, pad_r);
        if (st == dnnl_success)
            st = dnnl_primitive_desc_create(&pd, &cd, NULL, p->engine, NULL);
    }
#endif
    if (st != dnnl_success) {
        fail(err, errlen, "creating the convolution", st);
        goto out;
    }
    md_ref wconv_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    /* The activations stay where the caller has them; oneDNN allocates
     * only the reordered weights. */
    if ((st = dnnl_primitive_create(&prim, pd)) != dnnl_success ||
        (st = dnnl_memory_create(&xm, MD(xmd), p->engine, (void *)x)) != dnnl_success ||
        (st = dnnl_memory_create(&ym, MD(ymd), p->engine, y)) != dnnl_success ||
        (st = dnnl_memory_create(&wuser, MD(wuser_md), p->engine, (void *)w)) != dnnl_success ||
        (st = dnnl_memory_create(&wconv, wconv_md, p->engine, DNNL_MEMORY_ALLOCATE)) != dnnl_success) {
        fail(err, errlen, "creating the primitive and its memory", st);
        goto out;
    }
    if (reorder(p, wuser, MD(wuser_md), wconv, wconv_md, err, errlen))
        goto out;
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wconv}, {DNNL_ARG_DST, ym}};
    if ((st = exec(p, prim, 3, args)) != dnnl_success) {
        fail(err, errlen, "running the convolution", st);
        goto out;
    }
    double best = 1e30;
    for (int i = 0; i < iters; i++) {
        double t0 = cli_now();
        if ((st = exec(p, prim, 3, args)) != dnnl_success) {
            fail(err, errlen, "running the convolution", st);
            goto out;
        }
        double t = cli_now() - t0;
        if (t < best)
            best = t;
    }
    *ms = best * 1e3;
    rc = 0;
out:
    if (wconv)
        dnnl_memory_destroy(wconv);
    if (wuser)
        dnnl_memory_destroy(wuser);
    if (ym)
        dnnl_memory_destroy(ym);
    if (xm)
        dnnl_memory_destroy(xm);
    if (prim)
        dnnl_primitive_destroy(prim);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    md_free(wany_md);
    md_free(wuser_md);
    md_free(ymd);
    md_free(xmd);
    return rc;
}

int peer_dnnl_conv_bwd(peer_dnnl *p, const peer_conv *c, int dir, const float *a, const float *b, int iters,
                       double *ms, char *err, size_t errlen)
{
    const int grouped = c->groups > 1;
    const dnnl_dims_t xdims = {c->n, c->c, c->h, c->w};
    const dnnl_dims_t ydims = {c->n, c->k, c->p, c->q};
    const dnnl_dims_t wdims4 = {c->k, c->c, c->r, c->s};
    const dnnl_dims_t wdims5 = {c->groups, c->k / c->groups, c->c / c->groups, c->r, c->s};
    const dnnl_dims_t strides = {c->stride_h, c->stride_w};
    const dnnl_dims_t dilates = {c->dil_h - 1, c->dil_w - 1};
    const dnnl_dims_t pad_l = {c->pad_top, c->pad_left}, pad_r = {c->pad_bottom, c->pad_right};
    const dnnl_format_tag_t act = c->nhwc ? dnnl_nhwc : dnnl_nchw;
    const dnnl_format_tag_t wtag = grouped ? (c->nhwc ? dnnl_gohwi : dnnl_goihw) : (c->nhwc ? dnnl_ohwi : dnnl_oihw);
    const int wnd = grouped ? 5 : 4;
    md_t xmd = {0}, ymd = {0}, wuser_md = {0}, wany_md = {0};
    dnnl_primitive_desc_t fwd = NULL, pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t m0 = NULL, m1 = NULL, mout = NULL, wuser = NULL;
    int rc = -1;
    dnnl_status_t st = md_init(&xmd, 4, xdims, act);
    if (st == dnnl_success)
        st = md_init(&ymd, 4, ydims, act);
    if (st == dnnl_success)
        st = md_init(&wuser_md, wnd, grouped ? wdims5 : wdims4, wtag);
    if (st == dnnl_success)
        st = md_init(&wany_md, wnd, grouped ? wdims5 : wdims4, dnnl_format_tag_any);
    if (st != dnnl_success) {
        fail(err, errlen, "describing the tensors", st);
        goto out;
    }
    /* The backward primitives take the forward's descriptor as a hint. */
#if DNNL_VERSION_MAJOR >= 3
    st = dnnl_convolution_forward_primitive_desc_create(&fwd, p->engine, dnnl_forward_training, dnnl_convolution_auto,
                                                        MD(xmd), MD(wany_md), NULL, MD(ymd), strides, dilates, pad_l,
                                                        pad_r, NULL);
    if (st == dnnl_success && dir == 0)
        st = dnnl_convolution_backward_data_primitive_desc_create(&pd, p->engine, dnnl_convolution_auto, MD(xmd),
                                                                  MD(wany_md), MD(ymd), strides, dilates, pad_l,
                                                                  pad_r, fwd, NULL);
    else if (st == dnnl_success)
        st = dnnl_convolution_backward_weights_primitive_desc_create(&pd, p->engine, dnnl_convolution_auto, MD(xmd),
                                                                     MD(wany_md), NULL, MD(ymd), strides, dilates,
                                                                     pad_l, pad_r, fwd, NULL);
#else
    {
        dnnl_convolution_desc_t fd, bd;
        st = dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_auto, MD(xmd),
                                                        MD(wany_md), NULL, MD(ymd), strides, dilates, pad_l, pad_r);
        if (st == dnnl_success)
            st = dnnl_primitive_desc_create(&fwd, &fd, NULL, p->engine, NULL);
        if (st == dnnl_success && dir == 0)
            st = dnnl_dilated_convolution_backward_data_desc_init(&bd, dnnl_convolution_auto, MD(xmd), MD(wany_md),
                                                                  MD(ymd), strides, dilates, pad_l, pad_r);
        else if (st == dnnl_success)
            st = dnnl_dilated_convolution_backward_weights_desc_init(&bd, dnnl_convolution_auto, MD(xmd),
                                                                     MD(wany_md), NULL, MD(ymd), strides, dilates,
                                                                     pad_l, pad_r);
        if (st == dnnl_success)
            st = dnnl_primitive_desc_create(&pd, &bd, NULL, p->engine, fwd);
    }
#endif
    if (st != dnnl_success) {
        fail(err, errlen, dir == 0 ? "creating the backward-data convolution" : "creating the backward-weights "
                                                                                 "convolution", st);
        goto out;
    }
    dnnl_exec_arg_t args[3];
    if ((st = dnnl_primitive_create(&prim, pd)) != dnnl_success) {
        fail(err, errlen, "creating the primitive", st);
        goto out;
    }
    if (dir == 0) { /* dy, w (reordered to oneDNN's layout once) -> dx */
        md_ref wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        if ((st = dnnl_memory_create(&m0, MD(ymd), p->engine, (void *)a)) != dnnl_success ||
            (st = dnnl_memory_create(&wuser, MD(wuser_md), p->engine, (void *)b)) != dnnl_success ||
            (st = dnnl_memory_create(&m1, wmd, p->engine, DNNL_MEMORY_ALLOCATE)) != dnnl_success ||
            (st = dnnl_memory_create(&mout, MD(xmd), p->engine, DNNL_MEMORY_ALLOCATE)) != dnnl_success) {
            fail(err, errlen, "creating the memory", st);
            goto out;
        }
        if (reorder(p, wuser, MD(wuser_md), m1, wmd, err, errlen))
            goto out;
        args[0] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, m0};
        args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, m1};
        args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, mout};
    } else { /* x, dy -> dw in oneDNN's layout */
        md_ref wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 0);
        if ((st = dnnl_memory_create(&m0, MD(xmd), p->engine, (void *)a)) != dnnl_success ||
            (st = dnnl_memory_create(&m1, MD(ymd), p->engine, (void *)b)) != dnnl_success ||
            (st = dnnl_memory_create(&mout, wmd, p->engine, DNNL_MEMORY_ALLOCATE)) != dnnl_success) {
            fail(err, errlen, "creating the memory", st);
            goto out;
        }
        args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m0};
        args[1] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, m1};
        args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS, mout};
    }
    if ((st = exec(p, prim, 3, args)) != dnnl_success) {
        fail(err, errlen, "running the backward convolution", st);
        goto out;
    }
    double best = 1e30;
    for (int i = 0; i < iters; i++) {
        double t0 = cli_now();
        if ((st = exec(p, prim, 3, args)) != dnnl_success) {
            fail(err, errlen, "running the backward convolution", st);
            goto out;
        }
        double t = cli_now() - t0;
        if (t < best)
            best = t;
    }
    *ms = best * 1e3;
    rc = 0;
out:
    if (mout)
        dnnl_memory_destroy(mout);
    if (m1)
        dnnl_memory_destroy(m1);
    if (m0)
        dnnl_memory_destroy(m0);
    if (wuser)
        dnnl_memory_destroy(wuser);
    if (prim)
        dnnl_primitive_destroy(prim);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (fwd)
        dnnl_primitive_desc_destroy(fwd);
    md_free(wany_md);
    md_free(wuser_md);
    md_free(ymd);
    md_free(xmd);
    return rc;
}
