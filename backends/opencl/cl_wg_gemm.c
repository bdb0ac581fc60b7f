/* Implicit-GEMM convolution with work-group tiles through local memory
 * (kernels_cl/conv2d_wg_gemm.cl), the GPU-class kernel: which calls it
 * claims, its configurations (a search space in the style of CLBlast's
 * Xgemm), the reduction's table, the filter packing, the split of long
 * reductions and the launch. On CPUs it runs when asked for (and in the
 * parity harness), but AUTO passes over it there: PoCL keeps the
 * register-tiled kernels, which were built for it. */
#include "backends/opencl/cl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const pdnn__algo pdnn__cl_algo_wg_gemm;

/* A work-group computes a tm x tn tile of y (channels x pixels) in steps
 * of tk of the reduction; each of its (tm/rm) x (tn/rn) work-items holds
 * an rm x rn block. db: double-buffered local tiles; pad: one float of
 * padding per local row (the NHWC input tile is written down its
 * columns, which without it hit one bank). Ratios tm*tn/(tm+tn) are the
 * multiply-adds per global float loaded: 32 for 64 x 64, 43 for 128 x 64,
 * 64 for 128 x 128. spl: the tiles per compute unit below which the
 * reduction is split across work-groups (wg_parts). 2 suits one resident
 * work-group per unit; a GPU unit holds several (an H200 SM has room for
 * 7 of the 128 x 64 ones), which the late layers' filter gradients (few
 * output tiles, long reductions) leave idle: the spl=6 entries let the
 * tuner (polydnn tune --backward) split those further. */
typedef struct wg_cfg {
    int tm, tn, tk, rm, rn, db, pad, spl;
} wg_cfg;
static const wg_cfg wg_cands[] = {
    {64, 64, 16, 4, 4, 1, 1, 2},   {128, 64, 16, 8, 4, 1, 1, 2}, {64, 128, 16, 4, 8, 1, 1, 2},
    {128, 128, 8, 8, 8, 1, 1, 2},  {32, 64, 16, 4, 4, 1, 1, 2},  {64, 32, 16, 4, 4, 1, 1, 2},
    {32, 32, 8, 4, 4, 1, 1, 2},    {64, 64, 16, 4, 4, 0, 1, 2},  {16, 64, 16, 2, 4, 1, 0, 2},
    {128, 64, 16, 8, 4, 1, 1, 6},  {64, 64, 16, 4, 4, 1, 1, 6},
};
#define N_WGG ((int)(sizeof wg_cands / sizeof wg_cands[0]))

static size_t wg_items(int i) { return (size_t)(wg_cands[i].tm / wg_cands[i].rm) * (wg_cands[i].tn / wg_cands[i].rn); }

/* The tiles, and the two chunks of the reduction's table (int4, one
 * entry per work-item of half the group each: TC in the kernel). */
static size_t wg_local_bytes(int i)
{
    const wg_cfg *g = &wg_cands[i];
    return (size_t)(g->db ? 2 : 1) * g->tk * (g->tm + g->tn + 2 * g->pad) * sizeof(float) + wg_items(i) / 2 * 2 * 16;
}

static void wg_name(int i, char *buf, size_t len)
{
    /* spl=2 unnamed: the names the tuning caches hold from before it. */
    if (i >= 0 && i < N_WGG && wg_cands[i].spl != 2)
        snprintf(buf, len, "tm=%d tn=%d tk=%d rm=%d rn=%d db=%d pad=%d spl=%d", wg_cands[i].tm, wg_cands[i].tn,
                 wg_cands[i].tk, wg_cands[i].rm, wg_cands[i].rn, wg_cands[i].db, wg_cands[i].pad, wg_cands[i].spl);
    else if (i >= 0 && i < N_WGG)
        snprintf(buf, len, "tm=%d tn=%d tk=%d rm=%d rn=%d db=%d pad=%d", wg_cands[i].tm, wg_cands[i].tn,
                 wg_cands[i].tk, wg_cands[i].rm, wg_cands[i].rn, wg_cands[i].db, wg_cands[i].pad);
    else
        snprintf(buf, len, "?");
}

static int64_t cpg_of(const pdnn__conv2d_call *c) { return c->groups > 0 ? c->c / c->groups : c->c; }
static int64_t red_of(const pdnn__conv2d_call *c) { return cpg_of(c) * c->r * c->s; }

/* x's pixels are its contiguous axis (NCHW-like): the reduction runs
 * (r, s) fastest and the input tile is loaded along the pixels. */
static int x_pix(const pdnn__conv2d_call *c) { return c->xs[3] == 1 && c->xs[1] != 1; }

/* Why c is outside what the kernel runs (NULL: inside): int indices as
 * implicit_gemm's, and the table's x offsets in int too. */
static const char *wg_shape_why(const pdnn__conv2d_call *c)
{
    const char *why = pdnn__cl_conv_int_why(c);
    if (why)
        return why;
    const int64_t cpg = cpg_of(c);
    /* The table's offset of the last (c, r, s) in x. */
    const int64_t off = (cpg > 0 ? cpg - 1 : 0) * c->xs[1] + (c->r - 1) * c->dil_h * c->xs[2] +
                        (c->s - 1) * c->dil_w * c->xs[3];
    if (c->xs[1] < 0 || c->xs[2] < 0 || c->xs[3] < 0 || off > INT32_MAX)
        return "one image's channel group spans more than 2^31 elements";
    return NULL;
}

static int wg_applies(void *dev, const pdnn__op_call *call, int i)
{
    const cl_dev *d = dev;
    return i >= 0 && i < N_WGG && !wg_shape_why(&call->u.conv2d) && wg_items(i) <= d->max_wg &&
           wg_local_bytes(i) <= d->local_mem;
}

/* The filter is read in place where it already is wp's order: k
 * contiguous and, for the channel-fastest reduction (x channels-last),
 * HWIO (e = (r*S + s)*cpg + c at e*K). */
static int wg_in_place(const pdnn__conv2d_call *c)
{
    const int64_t cpg = cpg_of(c);
    return !x_pix(c) && c->ws[0] == 1 && c->ws[1] == c->k && c->ws[3] == cpg * c->k && c->ws[2] == c->s * cpg * c->k;
}

/* Parts the reduction is cut into: where the output's tiles are fewer
 * than spl per compute unit and the reduction has at least 8 steps per
 * extra part, enough parts to give every unit spl tiles' work (at most
 * 64). Returns the parts and their steps (*per). */
static int64_t wg_parts(const cl_dev *d, const pdnn__conv2d_call *c, int i, int64_t *per)
{
    const wg_cfg *g = &wg_cands[i];
    const int64_t npix = c->n * c->p * c->q, kpg = c->k / (c->groups > 0 ? c->groups : 1);
    const int64_t tiles = (npix + g->tn - 1) / g->tn * ((kpg + g->tm - 1) / g->tm) * c->groups;
    const int64_t steps = (red_of(c) + g->tk - 1) / g->tk, want = g->spl * (int64_t)d->cu;
    int64_t parts = 1;
    if (tiles > 0 && tiles < want && steps >= 16) {
        parts = (want + tiles - 1) / tiles;
        if (parts > steps / 8)
            parts = steps / 8;
        if (parts > 64)
            parts = 64;
        if (parts < 1)
            parts = 1;
    }
    *per = (steps + parts - 1) / parts;
    if (*per < 1)
        *per = 1;
    return (steps + *per - 1) / *per;
}

/* The workspace: the partial tiles where the reduction is split (parts
 * of wg_parts), then the packed filter (the tail, which plan leaves out
 * where it is kept). The table is kept per device (wg_table). */
static size_t wg_part_bytes(const pdnn__conv2d_call *c, int64_t parts)
{
    return parts > 1 ? (size_t)(parts * c->k * c->n * c->p * c->q) * sizeof(float) : 0;
}

static size_t wg_packed(void *dev, const pdnn__op_call *call, int i)
{
    (void)dev;
    (void)i;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    return wg_in_place(c) ? 0 : (size_t)(red_of(c) * c->k) * sizeof(float);
}

static size_t wg_ws(void *dev, const pdnn__op_call *call, int i)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    int64_t per;
    return wg_part_bytes(c, wg_parts(dev, c, i, &per)) + wg_packed(dev, call, i);
}

/* The reduction's table (int4 per step: row and column offsets, offset
 * in x) depends on the filter's shape, the dilation, the reduction's
 * order and x's strides only, not on the tiles: it is built once per
 * such key and kept with the device (freed with it, or the least recently
 * used of WG_TABLES), so the hot path has no extra launch. A few KiB to
 * 74 KiB each (3x3 x 512 channels), outside the device's allocator. */
#define WG_TABLES 64
struct pdnn__cl_wg_table {
    struct pdnn__cl_wg_table *next;
    int64_t key[9];
    cl_mem buf;
};

/* The table of c (filt: R, S, cpg, E) into *out, built where the device
 * has none yet with the kernel of the program built with opts. */
static pdnn_status wg_table(cl_dev *d, const pdnn__conv2d_call *c, const char *opts, cl_int4 filt, cl_mem *out)
{
    const int64_t key[9] = {c->r, c->s, cpg_of(c), c->dil_h, c->dil_w, x_pix(c), c->xs[1], c->xs[2], c->xs[3]};
    pdnn__cl_wg_table **pp = &d->wg_tables, *t;
    int n = 0;
    for (; (t = *pp) != NULL; pp = &t->next, n++)
        if (memcmp(t->key, key, sizeof key) == 0) {
            *pp = t->next; /* to the front */
            t->next = d->wg_tables;
            d->wg_tables = t;
            *out = t->buf;
            return PDNN_SUCCESS;
        }
    if (n >= WG_TABLES) {
        /* The last is the least recently used; commands still queued
         * on it hold it until they end (clReleaseMemObject). */
        for (pp = &d->wg_tables; (*pp)->next; pp = &(*pp)->next)
            ;
        clReleaseMemObject((*pp)->buf);
        free(*pp);
        *pp = NULL;
    }
    cl_kernel tk = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d_wg_gemm.cl", opts, "wgg_table", &tk);
    if (st != PDNN_SUCCESS)
        return st;
    t = calloc(1, sizeof *t);
    if (!t)
        return pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    memcpy(t->key, key, sizeof key);
    const int64_t red = red_of(c);
    cl_int err = CL_SUCCESS;
    t->buf = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, (size_t)(red > 0 ? red : 1) * 16, NULL, &err);
    if (!t->buf) {
        free(t);
        return pdnn__cl_fail("clCreateBuffer(wg_gemm's table)", err);
    }
    const cl_long zero = 0;
    cl_int4 dil = int4_of(c->dil_h, c->dil_w, x_pix(c), 0);
    cl_long4 xs = strides4(c->xs);
    SET_ARG(tk, 0, t->buf);
    SET_ARG(tk, 1, zero);
    SET_ARG(tk, 2, filt);
    SET_ARG(tk, 3, dil);
    SET_ARG(tk, 4, xs);
    size_t tg = (size_t)(red + 63) / 64 * 64, tl = 64;
    if (err == CL_SUCCESS && tg > 0)
        err = clEnqueueNDRangeKernel(d->queue, tk, 1, NULL, &tg, &tl, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        clReleaseMemObject(t->buf);
        free(t);
        return pdnn__cl_fail("wg_gemm's table (wgg_table)", err);
    }
    t->next = d->wg_tables;
    d->wg_tables = t;
    *out = t->buf;
    /* tests/oclgrind_wg_gemm.sh counts these: one per shape, not per call. */
    pdnn__debug("OpenCL: wg_gemm's reduction table built (%lld steps of %lldx%lld taps)", (long long)red,
                (long long)c->r, (long long)c->s);
    return PDNN_SUCCESS;
}

void pdnn__cl_wg_tables_release(cl_dev *d)
{
    while (d->wg_tables) {
        pdnn__cl_wg_table *t = d->wg_tables;
        d->wg_tables = t->next;
        clReleaseMemObject(t->buf);
        free(t);
    }
}

/* Enqueues call with configuration i and workspace ws. Called with
 * d->lock held. */
static pdnn_status wg_enqueue(void *dev, const pdnn__op_call *call, int i, pdnn__buf ws)
{
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const wg_cfg *g = &wg_cands[i];
    const int64_t cpg = cpg_of(c), kpg = c->k / c->groups, npix = c->n * c->p * c->q, red = red_of(c);
    if (npix == 0 || c->k == 0)
        return PDNN_SUCCESS;
    int64_t per;
    const int64_t parts = wg_parts(d, c, i, &per);
    char opts[96];
    snprintf(opts, sizeof opts, "-DTM=%d -DTN=%d -DTK=%d -DRM=%d -DRN=%d -DDB=%d -DLPAD=%d", g->tm, g->tn, g->tk,
             g->rm, g->rn, g->db, g->pad);
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d_wg_gemm.cl", opts, "conv2d_wg_gemm", &k);
    if (st != PDNN_SUCCESS)
        return st;
    size_t kwg = 0, mult = 0;
    if (clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL) == CL_SUCCESS &&
        kwg < wg_items(i))
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "OpenCL: wg_gemm's configuration %d needs work-groups of %zu work-items; its kernel "
                           "allows %zu on this device",
                           i, wg_items(i), kwg);
    /* A group that is not a whole number of the device's SIMD width
     * (warp, wavefront) leaves lanes idle in every step: refused, as a
     * configuration past the local memory is. Every configuration here is
     * a multiple of 64, which covers NVIDIA's 32, AMD's 64 and 32 and
     * Intel's 16 (tests/test_cl_device_table checks it). */
    if (clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof mult, &mult,
                                 NULL) == CL_SUCCESS &&
        mult > 1 && wg_items(i) % mult)
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "OpenCL: wg_gemm's configuration %d has work-groups of %zu work-items, not a multiple of "
                           "this device's preferred %zu",
                           i, wg_items(i), mult);
    cl_int err = CL_SUCCESS;
    /* No workspace (in-place filter, one part): y stands in, unread. */
    cl_mem wsr = ws.region ? ws.region : c->y_buf.region, tab = NULL;
    const cl_long tab_off = 0; /* ints, 4 per step */
    const size_t part_bytes = wg_part_bytes(c, parts);
    const cl_long part_off = elem_off(ws);
    cl_int4 filt = int4_of((int)c->r, (int)c->s, (int)cpg, (int)red);
    st = wg_table(d, c, opts, filt, &tab);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem wpb;
    cl_long wp_off;
    if (wg_in_place(c)) {
        wpb = c->w_buf.region;
        wp_off = elem_off(c->w_buf);
    } else {
        const int kept = c->wpack.region != NULL;
        wpb = kept ? c->wpack.region : ws.region;
        wp_off = kept ? elem_off(c->wpack)
                      : (cl_long)((ws.offset + part_bytes) / sizeof(float));
        if (!kept || c->wpack_fill) {
            cl_kernel pk = NULL;
            st = pdnn__cl_kernel(d, "conv2d_wg_gemm.cl", opts, "wgg_pack", &pk);
            if (st != PDNN_SUCCESS)
                return st;
            cl_mem w = c->w_buf.region;
            cl_long wo = elem_off(c->w_buf);
            cl_long4 wst = strides4(c->ws);
            cl_int kk = (cl_int)c->k, xpix = x_pix(c);
            SET_ARG(pk, 0, w);
            SET_ARG(pk, 1, wo);
            SET_ARG(pk, 2, wst);
            SET_ARG(pk, 3, wpb);
            SET_ARG(pk, 4, wp_off);
            SET_ARG(pk, 5, filt);
            SET_ARG(pk, 6, kk);
            SET_ARG(pk, 7, xpix);
            if (err != CL_SUCCESS)
                return pdnn__cl_fail("clSetKernelArg(wgg_pack)", err);
            size_t pl[2] = {64, 1};
            size_t pg[2] = {(size_t)(c->k + 63) / 64 * 64, (size_t)red};
            err = clEnqueueNDRangeKernel(d->queue, pk, 2, NULL, pg, pl, 0, NULL, NULL);
            if (err != CL_SUCCESS)
                return pdnn__cl_fail("clEnqueueNDRangeKernel(wgg_pack)", err);
        }
    }
    cl_mem x = c->x_buf.region, y = c->y_buf.region;
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : x;
    cl_mem res = c->z_buf.region ? (cl_mem)c->z_buf.region : x;
    cl_long xo = elem_off(c->x_buf), yo = elem_off(c->y_buf);
    cl_long bo = c->bias_buf.region ? elem_off(c->bias_buf) : 0;
    cl_long ro = c->z_buf.region ? elem_off(c->z_buf) : 0;
    cl_long4 xs = strides4(c->xs), ys = strides4(c->ys);
    cl_int4 dims = int4_of((int)c->n, (int)c->p, (int)c->q, (int)c->k);
    cl_int4 inp = int4_of((int)c->h, (int)c->w, (int)cpg, (int)kpg);
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->pad_top, c->pad_left);
    cl_int4 redv = int4_of((int)red, (int)per, (int)c->groups, 0);
    cl_int4 flags = int4_of(c->bias_buf.region != NULL, c->z_buf.region != NULL, pdnn__cl_relu_word(c), 0);
    cl_int4 mode = int4_of(x_pix(c), c->ys[1] == 1, parts > 1, 0);
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, wpb);
    SET_ARG(k, 3, wp_off);
    SET_ARG(k, 4, tab);
    SET_ARG(k, 5, tab_off);
    SET_ARG(k, 6, b);
    SET_ARG(k, 7, bo);
    SET_ARG(k, 8, res);
    SET_ARG(k, 9, ro);
    SET_ARG(k, 10, y);
    SET_ARG(k, 11, yo);
    SET_ARG(k, 12, wsr);
    SET_ARG(k, 13, part_off);
    SET_ARG(k, 14, xs);
    SET_ARG(k, 15, ys);
    SET_ARG(k, 16, dims);
    SET_ARG(k, 17, inp);
    SET_ARG(k, 18, geom);
    SET_ARG(k, 19, redv);
    SET_ARG(k, 20, flags);
    SET_ARG(k, 21, mode);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(conv2d_wg_gemm)", err);
    size_t local[3] = {wg_items(i), 1, 1};
    size_t global[3] = {(size_t)((npix + g->tn - 1) / g->tn) * wg_items(i), (size_t)((kpg + g->tm - 1) / g->tm),
                        (size_t)(c->groups * parts)};
    err = clEnqueueNDRangeKernel(d->queue, k, 3, NULL, global, local, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clEnqueueNDRangeKernel(conv2d_wg_gemm)", err);
    if (parts == 1)
        return PDNN_SUCCESS;
    cl_kernel rk = NULL;
    st = pdnn__cl_kernel(d, "conv2d_wg_gemm.cl", opts, "wgg_reduce", &rk);
    if (st != PDNN_SUCCESS)
        return st;
    cl_int np = (cl_int)parts;
    SET_ARG(rk, 0, wsr);
    SET_ARG(rk, 1, part_off);
    SET_ARG(rk, 2, b);
    SET_ARG(rk, 3, bo);
    SET_ARG(rk, 4, res);
    SET_ARG(rk, 5, ro);
    SET_ARG(rk, 6, y);
    SET_ARG(rk, 7, yo);
    SET_ARG(rk, 8, ys);
    SET_ARG(rk, 9, dims);
    SET_ARG(rk, 10, np);
    SET_ARG(rk, 11, flags);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(wgg_reduce)", err);
    size_t rl[2] = {64, 1};
    size_t rg[2] = {(size_t)(npix + 63) / 64 * 64, (size_t)c->k};
    err = clEnqueueNDRangeKernel(d->queue, rk, 2, NULL, rg, rl, 0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueNDRangeKernel(wgg_reduce)", err);
}

static int gpu_class_everywhere;
void pdnn__opencl_gpu_class_everywhere(int on) { gpu_class_everywhere = on; }
/* Also POLYDNN_GPU_CLASS=1, for runs through the public API under
 * Oclgrind (bench/wg_intensity.py's backward table); read once. */
static int gpu_class_env;
static pthread_once_t gpu_class_once = PTHREAD_ONCE_INIT;
static void gpu_class_read(void)
{
    const char *v = getenv("POLYDNN_GPU_CLASS");
    gpu_class_env = v && strcmp(v, "1") == 0;
}
static int gpu_class_on(void)
{
    pthread_once(&gpu_class_once, gpu_class_read);
    return gpu_class_everywhere || gpu_class_env;
}
int pdnn__cl_gpu_class_passes(const cl_dev *d) { return pdnn__cl_is_cpu(d) && !gpu_class_on(); }

static const pdnn__cl_tunable tunable = {&pdnn__cl_algo_wg_gemm, "conv2d_wg_gemm", wg_applies, wg_ws, wg_packed,
                                         wg_enqueue};

static void wg_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int dflt = pdnn__cl_default_config(d, &tunable, NULL);
    if (pdnn__cl_plan_tunable(&tunable, dev, call, dflt, plan) < 0) {
        const char *why = wg_shape_why(c);
        if (why)
            pdnn__plan_refuse(plan, "wg_gemm: %s", why);
        else
            pdnn__plan_refuse(plan,
                              "wg_gemm: no configuration fits this device (%zu work-items and %llu bytes of local "
                              "memory per work-group at most)",
                              d->max_wg, (unsigned long long)d->local_mem);
        return;
    }
    if (plan->workspace > SIZE_MAX / 2) {
        pdnn__plan_refuse(plan, "wg_gemm: its workspace is larger than this machine addresses");
        return;
    }
    if (pdnn__cl_is_cpu(d) && !gpu_class_on())
        pdnn__plan_skip(plan, "AUTO runs wg_gemm on GPU-class devices; on CPUs the register-tiled kernels run");
}

static pdnn_status wg_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                          pdnn__run_report *rep)
{
    return pdnn__cl_run_tunable(&tunable, dev, call, plan, ws, rep);
}

const pdnn__algo pdnn__cl_algo_wg_gemm = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "wg_gemm",
    /* First on GPU-class devices, before gemm_1x1 (20), for every
     * convolution (bench/results-gpu.md); passed over on CPUs. */
    .rank = 15,
    .gpu_class = 1,
    .n_configs = N_WGG,
    .config_name = wg_name,
    .plan = wg_plan,
    .run = wg_run,
    .residual = 1, /* z added in the epilogue (flags.s1) */
    .relu_cap = 1, /* and the relu's cap applied (flags.s2) */
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};

extern const pdnn__algo pdnn__cl_algo_gemm_1x1, pdnn__cl_algo_implicit_gemm;

const pdnn__algo *pdnn__cl_plan_fwd_inner(void *dev, const pdnn__op_call *in, pdnn__plan *ip, int with_1x1)
{
    const pdnn__algo *const order[] = {&pdnn__cl_algo_wg_gemm, &pdnn__cl_algo_gemm_1x1, &pdnn__cl_algo_implicit_gemm};
    for (int i = 0; i < 3; i++) {
        if (i == 1 && !with_1x1)
            continue;
        if (in->dtype != PDNN_FLOAT32 && !(order[i]->dtypes & PDNN__DTYPE_BIT(in->dtype)))
            continue; /* no path for the call's storage dtype (wg_gemm) */
        memset(ip, 0, sizeof *ip);
        ip->supported = 1;
        ip->config = -1;
        ip->rank = order[i]->rank;
        order[i]->plan(dev, in, ip);
        /* wg_gemm only where AUTO would run it (GPU-class devices). */
        if (ip->supported && (i > 0 || !ip->auto_skip))
            return order[i];
    }
    return &pdnn__cl_algo_implicit_gemm;
}
