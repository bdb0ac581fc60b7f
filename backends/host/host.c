/* The host backend: a plain-C reference of every op ("direct"). It is the
 * oracle the other backends are tested against, so it is written for
 * clarity, with double accumulation, and makes no attempt at speed; where
 * configure finds oneDNN, host_dnnl.c's algorithms are ranked before it. */
#include "backends/host/host_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HOST_ALIGN 256

static void read_cpu_model(char *vendor, size_t vlen, char *model, size_t mlen)
{
    snprintf(vendor, vlen, "unknown");
    snprintf(model, mlen, "host CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    int got_vendor = 0, got_model = 0;
    while ((!got_vendor || !got_model) && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *val = colon + 1;
        while (*val == ' ' || *val == '\t')
            val++;
        val[strcspn(val, "\n")] = '\0';
        if (!got_vendor && strncmp(line, "vendor_id", 9) == 0) {
            snprintf(vendor, vlen, "%s", val);
            got_vendor = 1;
        } else if (!got_model && strncmp(line, "model name", 10) == 0) {
            snprintf(model, mlen, "%s", val);
            got_model = 1;
        }
    }
    fclose(f);
}

static pdnn_status host_enumerate(void ***devs, pdnn__device_props **props, int *n, const char **why)
{
    *why = NULL;
    void **d = malloc(sizeof *d);
    pdnn__device_props *p = calloc(1, sizeof *p);
    if (!d || !p) {
        free(d);
        free(p);
        return pdnn__host_oom("host backend", "the device table", sizeof *d + sizeof *p);
    }
    pdnn__host_dev *h = calloc(1, sizeof *h);
#ifdef PDNN_HAVE_DNNL_HOST
    if (h && !(h->dnnl = pdnn__host_dnnl_new())) {
        free(h);
        h = NULL;
    }
#endif
    if (!h) {
        free(d);
        free(p);
        return pdnn__host_oom("host backend", "the device's state", sizeof *h);
    }
    d[0] = h;
    p->kind = PDNN__KIND_HOST;
    read_cpu_model(p->vendor, sizeof p->vendor, p->name, sizeof p->name);
    snprintf(p->driver_version, sizeof p->driver_version, "polydnn %s", pdnn_version());
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    p->memory_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    p->max_alloc_bytes = p->memory_bytes;
    p->base_align = HOST_ALIGN;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    p->compute_units = cpus > 0 ? (int)cpus : 1;
    p->dlpack_type = 1; /* kDLCPU */
    p->dlpack_id = 0;
    *devs = d;
    *props = p;
    *n = 1;
    return PDNN_SUCCESS;
}

static void host_close(void *dev)
{
    pdnn__host_dev *h = dev;
    if (!h)
        return;
#ifdef PDNN_HAVE_DNNL_HOST
    pdnn__host_dnnl_free(h->dnnl);
#endif
    free(h);
}

static pdnn_status host_region_alloc(void *dev, size_t bytes, void **region)
{
    (void)dev;
    void *p = NULL;
    if (bytes == 0 || posix_memalign(&p, HOST_ALIGN, bytes) != 0)
        return pdnn__host_oom("host", "a region", bytes);
    *region = p;
    return PDNN_SUCCESS;
}

static void host_region_free(void *dev, void *region)
{
    (void)dev;
    free(region);
}

static float *at(pdnn__buf b) { return (float *)((char *)b.region + b.offset); }

static pdnn_status host_write(void *dev, pdnn__buf dst, const void *src, size_t bytes)
{
    (void)dev;
    memcpy((char *)dst.region + dst.offset, src, bytes);
    return PDNN_SUCCESS;
}

static pdnn_status host_read(void *dev, pdnn__buf src, void *dst, size_t bytes)
{
    (void)dev;
    memcpy(dst, (const char *)src.region + src.offset, bytes);
    return PDNN_SUCCESS;
}

static pdnn_status host_copy(void *dev, pdnn__buf dst, pdnn__buf src, size_t bytes)
{
    (void)dev;
    memmove((char *)dst.region + dst.offset, (const char *)src.region + src.offset, bytes);
    return PDNN_SUCCESS;
}

static pdnn_status host_copy_rows(void *dev, pdnn__buf dst, size_t dst_pitch, pdnn__buf src, size_t src_pitch,
                                  size_t width, size_t rows)
{
    (void)dev;
    char *d = (char *)dst.region + dst.offset;
    const char *s = (const char *)src.region + src.offset;
    for (size_t r = 0; r < rows; r++)
        memcpy(d + r * dst_pitch, s + r * src_pitch, width);
    return PDNN_SUCCESS;
}

static pdnn_status host_sync(void *dev)
{
    (void)dev;
    return PDNN_SUCCESS;
}

/* y[n,k,p,q] = relu?(bias[k] + sum over c in k's group, r, s of
 *   x[n, c, p*stride - pad + r*dil, q*stride - pad + s*dil] * w[k, c', r, s])
 * with out-of-image input read as zero. Layouts enter only through the
 * element strides, so every layout combination shares this one loop. */
static pdnn_status host_conv2d(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                               pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const float *x = at(c->x_buf), *w = at(c->w_buf);
    const float *bias = c->bias_buf.region ? at(c->bias_buf) : NULL;
    const float *z = c->z_buf.region ? at(c->z_buf) : NULL;
    float *y = at(c->y_buf);
    const int64_t cpg = c->c / c->groups; /* input channels per group  */
    const int64_t kpg = c->k / c->groups; /* output channels per group */
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t k = 0; k < c->k; k++) {
            const int64_t g = k / kpg;
            for (int64_t p = 0; p < c->p; p++)
                for (int64_t q = 0; q < c->q; q++) {
                    double acc = bias ? bias[k] : 0.0;
                    for (int64_t ci = 0; ci < cpg; ci++) {
                        const int64_t cx = g * cpg + ci;
                        for (int64_t r = 0; r < c->r; r++) {
                            const int64_t ih = p * c->stride_h - c->pad_top + r * c->dil_h;
                            if (ih < 0 || ih >= c->h)
                                continue;
                            for (int64_t s = 0; s < c->s; s++) {
                                const int64_t iw = q * c->stride_w - c->pad_left + s * c->dil_w;
                                if (iw < 0 || iw >= c->w)
                                    continue;
                                const double xv = x[n * c->xs[0] + cx * c->xs[1] + ih * c->xs[2] +
                                                    iw * c->xs[3]];
                                const double wv = w[k * c->ws[0] + ci * c->ws[1] + r * c->ws[2] +
                                                    s * c->ws[3]];
                                acc += xv * wv;
                            }
                        }
                    }
                    const int64_t yi = n * c->ys[0] + k * c->ys[1] + p * c->ys[2] + q * c->ys[3];
                    if (z)
                        acc += z[yi];
                    if (c->relu && acc < 0.0)
                        acc = 0.0;
                    if (c->relu && c->relu_cap > 0.0f && acc > (double)c->relu_cap)
                        acc = (double)c->relu_cap;
                    y[yi] = (float)acc;
                }
        }
    return PDNN_SUCCESS;
}

/* One pooling window of the forward: its in-image bounds [h0,h1) x
 * [w0,w1) and its divisor for mode (host_pool2d's rule). */
static void pool_window(const pdnn__pool2d_call *c, int64_t p, int64_t q, int64_t *h0, int64_t *h1, int64_t *w0,
                        int64_t *w1, double *divisor)
{
    int64_t a0 = p * c->stride_h - c->pad_top, b0 = q * c->stride_w - c->pad_left;
    int64_t a1 = a0 + c->win_h, b1 = b0 + c->win_w;
    if (a1 > c->h + c->pad_bottom)
        a1 = c->h + c->pad_bottom;
    if (b1 > c->w + c->pad_right)
        b1 = c->w + c->pad_right;
    const double padded = (double)((a1 - a0) * (b1 - b0));
    *h0 = a0 < 0 ? 0 : a0;
    *w0 = b0 < 0 ? 0 : b0;
    *h1 = a1 > c->h ? c->h : a1;
    *w1 = b1 > c->w ? c->w : b1;
    *divisor = c->mode == PDNN_POOL_AVG_INCLUDE_PADDING ? padded : (double)((*h1 - *h0) * (*w1 - *w0));
}

/* The window's maximum as the forward returns it: the first maximum in
 * row-major order, or the last NaN (NaN propagates, as in PyTorch); its
 * position in *ah, *aw. The window holds at least one element. */
static float window_max(const pdnn__pool2d_call *c, const float *x, int64_t n, int64_t ch, int64_t h0, int64_t h1,
                        int64_t w0, int64_t w1, int64_t *ah, int64_t *aw)
{
    float mx = 0.0f;
    *ah = *aw = -1;
    for (int64_t a = h0; a < h1; a++)
        for (int64_t b = w0; b < w1; b++) {
            const float v = x[n * c->xs[0] + ch * c->xs[1] + a * c->xs[2] + b * c->xs[3]];
            if (*ah < 0 || v > mx || isnan(v)) {
                mx = v;
                *ah = a;
                *aw = b;
            }
        }
    return mx;
}

/* PyTorch's pooling windows: the include-padding divisor counts the
 * window up to the end of the padding; max and exclude-padding use only
 * in-image elements. Core guarantees each window holds one of those. */
static pdnn_status host_pool2d(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                               pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__pool2d_call *c = &call->u.pool2d;
    const float *x = at(c->x_buf);
    float *y = at(c->y_buf);
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t ch = 0; ch < c->c; ch++)
            for (int64_t p = 0; p < c->p; p++)
                for (int64_t q = 0; q < c->q; q++) {
                    int64_t h0, h1, w0, w1, ah, aw;
                    double divisor;
                    pool_window(c, p, q, &h0, &h1, &w0, &w1, &divisor);
                    float out;
                    if (c->mode == PDNN_POOL_MAX) {
                        out = window_max(c, x, n, ch, h0, h1, w0, w1, &ah, &aw);
                    } else {
                        double acc = 0.0;
                        for (int64_t ih = h0; ih < h1; ih++)
                            for (int64_t iw = w0; iw < w1; iw++)
                                acc += x[n * c->xs[0] + ch * c->xs[1] + ih * c->xs[2] + iw * c->xs[3]];
                        out = (float)(acc / divisor);
                    }
                    y[n * c->ys[0] + ch * c->ys[1] + p * c->ys[2] + q * c->ys[3]] = out;
                }
    return PDNN_SUCCESS;
}

/* dx[n,c,h,w] = sum over k in c's group, r, s with h + pad - r*dil a
 * multiple of the stride landing on an output row p (and likewise for w)
 * of dy[n,k,p,q] * w[k, c', r, s]: the forward's adjoint, as a gather so
 * that every dx element is written once, in a fixed order. */
static pdnn_status host_conv2d_bwd_data(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                        pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const float *dy = at(c->y_buf), *w = at(c->w_buf);
    float *dx = at(c->x_buf);
    const int64_t cpg = c->c / c->groups, kpg = c->k / c->groups;
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t ch = 0; ch < c->c; ch++) {
            const int64_t g = ch / cpg, ci = ch % cpg;
            for (int64_t ih = 0; ih < c->h; ih++)
                for (int64_t iw = 0; iw < c->w; iw++) {
                    double acc = 0.0;
                    for (int64_t r = 0; r < c->r; r++) {
                        const int64_t th = ih + c->pad_top - r * c->dil_h;
                        if (th < 0 || th % c->stride_h != 0 || th / c->stride_h >= c->p)
                            continue;
                        const int64_t p = th / c->stride_h;
                        for (int64_t s = 0; s < c->s; s++) {
                            const int64_t tw = iw + c->pad_left - s * c->dil_w;
                            if (tw < 0 || tw % c->stride_w != 0 || tw / c->stride_w >= c->q)
                                continue;
                            const int64_t q = tw / c->stride_w;
                            for (int64_t kk = 0; kk < kpg; kk++) {
                                const int64_t k = g * kpg + kk;
                                acc += (double)dy[n * c->ys[0] + k * c->ys[1] + p * c->ys[2] + q * c->ys[3]] *
                                       (double)w[k * c->ws[0] + ci * c->ws[1] + r * c->ws[2] + s * c->ws[3]];
                            }
                        }
                    }
                    dx[n * c->xs[0] + ch * c->xs[1] + ih * c->xs[2] + iw * c->xs[3]] = (float)acc;
                }
        }
    return PDNN_SUCCESS;
}

/* dw[k,c',r,s] = sum over n, p, q of dy[n,k,p,q] * x[n, c, p*stride -
 * pad + r*dil, q*stride - pad + s*dil] (c = c' in k's group; out-of-image
 * taps contribute nothing). */
static pdnn_status host_conv2d_bwd_filter(void *dev, const pdnn__op_call *call, const pdnn__plan *plan,
                                          pdnn__buf ws, pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const float *dy = at(c->y_buf), *x = at(c->x_buf);
    float *dw = at(c->w_buf);
    const int64_t cpg = c->c / c->groups, kpg = c->k / c->groups;
    for (int64_t k = 0; k < c->k; k++) {
        const int64_t g = k / kpg;
        for (int64_t ci = 0; ci < cpg; ci++)
            for (int64_t r = 0; r < c->r; r++)
                for (int64_t s = 0; s < c->s; s++) {
                    double acc = 0.0;
                    for (int64_t n = 0; n < c->n; n++)
                        for (int64_t p = 0; p < c->p; p++) {
                            const int64_t ih = p * c->stride_h - c->pad_top + r * c->dil_h;
                            if (ih < 0 || ih >= c->h)
                                continue;
                            for (int64_t q = 0; q < c->q; q++) {
                                const int64_t iw = q * c->stride_w - c->pad_left + s * c->dil_w;
                                if (iw < 0 || iw >= c->w)
                                    continue;
                                acc += (double)dy[n * c->ys[0] + k * c->ys[1] + p * c->ys[2] + q * c->ys[3]] *
                                       (double)x[n * c->xs[0] + (g * cpg + ci) * c->xs[1] + ih * c->xs[2] +
                                                 iw * c->xs[3]];
                            }
                        }
                    dw[k * c->ws[0] + ci * c->ws[1] + r * c->ws[2] + s * c->ws[3]] = (float)acc;
                }
    }
    return PDNN_SUCCESS;
}

/* db[k] = sum over n, p, q of dy[n,k,p,q]. */
static pdnn_status host_conv2d_bwd_bias(void *dev, const pdnn__op_call *call, const pdnn__plan *plan,
                                        pdnn__buf ws, pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const float *dy = at(c->y_buf);
    float *db = at(c->bias_buf);
    for (int64_t k = 0; k < c->k; k++) {
        double acc = 0.0;
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t p = 0; p < c->p; p++)
                for (int64_t q = 0; q < c->q; q++)
                    acc += dy[n * c->ys[0] + k * c->ys[1] + p * c->ys[2] + q * c->ys[3]];
        db[k] = (float)acc;
    }
    return PDNN_SUCCESS;
}


/* dx[n,c,h,w] = the sum over the windows (p,q) that hold (h,w) of
 * dy[n,c,p,q] / divisor (average), or of dy[n,c,p,q] where (h,w) is the
 * element the forward returned: the first maximum in row-major order, or
 * the last NaN (max). A gather: each dx element written once. */
static pdnn_status host_pool2d_bwd(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                   pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__pool2d_call *c = &call->u.pool2d;
    const float *x = at(c->x_buf), *dy = at(c->dy_buf);
    float *dx = at(c->dx_buf);
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t ch = 0; ch < c->c; ch++)
            for (int64_t ih = 0; ih < c->h; ih++)
                for (int64_t iw = 0; iw < c->w; iw++) {
                    /* Windows p with p*stride - pad <= ih < p*stride - pad + win. */
                    const int64_t th = ih + c->pad_top, tw = iw + c->pad_left;
                    int64_t p0 = th - c->win_h + 1 > 0 ? (th - c->win_h + 1 + c->stride_h - 1) / c->stride_h : 0;
                    int64_t q0 = tw - c->win_w + 1 > 0 ? (tw - c->win_w + 1 + c->stride_w - 1) / c->stride_w : 0;
                    int64_t p1 = th / c->stride_h, q1 = tw / c->stride_w;
                    if (p1 >= c->p)
                        p1 = c->p - 1;
                    if (q1 >= c->q)
                        q1 = c->q - 1;
                    double acc = 0.0;
                    for (int64_t p = p0; p <= p1; p++)
                        for (int64_t q = q0; q <= q1; q++) {
                            int64_t h0, h1, w0, w1;
                            double divisor;
                            pool_window(c, p, q, &h0, &h1, &w0, &w1, &divisor);
                            const double g = dy[n * c->ys[0] + ch * c->ys[1] + p * c->ys[2] + q * c->ys[3]];
                            if (c->mode != PDNN_POOL_MAX) {
                                acc += g / divisor;
                                continue;
                            }
                            int64_t ah, aw;
                            (void)window_max(c, x, n, ch, h0, h1, w0, w1, &ah, &aw);
                            if (ah == ih && aw == iw)
                                acc += g;
                        }
                    dx[n * c->dxs[0] + ch * c->dxs[1] + ih * c->dxs[2] + iw * c->dxs[3]] = (float)acc;
                }
    return PDNN_SUCCESS;
}

/* max(v, 0) that keeps NaN as NaN, so a bad value is not hidden. */
/* ---- batch normalization ---------------------------------------------- */

/* Element (n, ch, i) of an activation, i = h * W + w (xs[2] = W * xs[3]
 * in both layouts). */
static int64_t bn_index(const pdnn__bn_call *c, int64_t n, int64_t ch, int64_t i)
{
    return n * c->xs[0] + ch * c->xs[1] + i * c->xs[3];
}

/* Per channel, two passes in double: the mean, then the mean squared
 * deviation (never negative); then y, the saved and running statistics. */
static pdnn_status host_bn_fwd_train(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                     pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__bn_call *c = &call->u.bn;
    const float *x = at(c->x_buf), *gamma = at(c->gamma_buf), *beta = at(c->beta_buf);
    float *y = at(c->y_buf);
    const int64_t hw = c->h * c->w, m = c->n * hw;
    for (int64_t ch = 0; ch < c->c; ch++) {
        double sum = 0.0, sq = 0.0;
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t i = 0; i < hw; i++)
                sum += x[bn_index(c, n, ch, i)];
        const double mean = sum / (double)m;
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t i = 0; i < hw; i++) {
                const double d = x[bn_index(c, n, ch, i)] - mean;
                sq += d * d;
            }
        const double var = sq / (double)m, inv = 1.0 / sqrt(var + (double)c->epsilon);
        const double g = gamma[ch], b = beta[ch];
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t i = 0; i < hw; i++) {
                const int64_t e = bn_index(c, n, ch, i);
                y[e] = (float)(g * ((x[e] - mean) * inv) + b);
            }
        if (c->saved_mean_buf.region) {
            at(c->saved_mean_buf)[ch] = (float)mean;
            at(c->saved_inv_std_buf)[ch] = (float)inv;
        }
        if (c->running_mean_buf.region) {
            const double mo = c->momentum;
            float *rm = at(c->running_mean_buf), *rv = at(c->running_var_buf);
            rm[ch] = (float)((1.0 - mo) * rm[ch] + mo * mean);
            rv[ch] = (float)((1.0 - mo) * rv[ch] + mo * (sq / (double)(m - 1)));
        }
    }
    return PDNN_SUCCESS;
}

static pdnn_status host_bn_fwd_infer(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                     pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__bn_call *c = &call->u.bn;
    const float *x = at(c->x_buf), *gamma = at(c->gamma_buf), *beta = at(c->beta_buf);
    const float *rm = at(c->running_mean_buf), *rv = at(c->running_var_buf);
    float *y = at(c->y_buf);
    const int64_t hw = c->h * c->w;
    for (int64_t ch = 0; ch < c->c; ch++) {
        const double mean = rm[ch], inv = 1.0 / sqrt((double)rv[ch] + (double)c->epsilon);
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t i = 0; i < hw; i++) {
                const int64_t e = bn_index(c, n, ch, i);
                y[e] = (float)((double)gamma[ch] * ((x[e] - mean) * inv) + (double)beta[ch]);
            }
    }
    return PDNN_SUCCESS;
}

/* dbeta = sum dy, dgamma = sum dy * xhat, and
 * dx = gamma * inv / m * (m * dy - dbeta - xhat * dgamma). */
static pdnn_status host_bn_bwd(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                               pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__bn_call *c = &call->u.bn;
    const float *x = at(c->x_buf), *dy = at(c->dy_buf), *gamma = at(c->gamma_buf);
    const float *sm = at(c->saved_mean_buf), *si = at(c->saved_inv_std_buf);
    const int64_t hw = c->h * c->w, m = c->n * hw;
    for (int64_t ch = 0; ch < c->c; ch++) {
        const double mean = sm[ch], inv = si[ch];
        double db = 0.0, dg = 0.0;
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t i = 0; i < hw; i++) {
                const int64_t e = bn_index(c, n, ch, i);
                db += dy[e];
                dg += dy[e] * ((x[e] - mean) * inv);
            }
        if (c->dgamma_buf.region)
            at(c->dgamma_buf)[ch] = (float)dg;
        if (c->dbeta_buf.region)
            at(c->dbeta_buf)[ch] = (float)db;
        if (!c->dx_buf.region)
            continue;
        float *dx = at(c->dx_buf);
        const double k = (double)gamma[ch] * inv / (double)m;
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t i = 0; i < hw; i++) {
                const int64_t e = bn_index(c, n, ch, i);
                const double xhat = (x[e] - mean) * inv;
                dx[e] = (float)(k * ((double)m * dy[e] - db - xhat * dg));
            }
    }
    return PDNN_SUCCESS;
}

static float relu1(float v) { return v > 0.0f ? v : (isnan(v) ? v : 0.0f); }

static pdnn_status host_add(void *dev, pdnn__buf a, pdnn__buf b, pdnn__buf y, int64_t n)
{
    (void)dev;
    const float *pa = at(a), *pb = at(b);
    float *py = at(y);
    for (int64_t i = 0; i < n; i++)
        py[i] = pa[i] + pb[i];
    return PDNN_SUCCESS;
}

static pdnn_status host_bias_add(void *dev, pdnn__buf x, pdnn__buf bias, pdnn__buf y, int64_t n, int64_t c,
                                 int64_t inner, int relu)
{
    (void)dev;
    const float *px = at(x), *pb = at(bias);
    float *py = at(y);
    for (int64_t i = 0; i < n; i++) {
        const float v = px[i] + pb[(i / inner) % c];
        py[i] = relu ? relu1(v) : v;
    }
    return PDNN_SUCCESS;
}

static pdnn_status host_relu(void *dev, pdnn__buf x, pdnn__buf y, int64_t n)
{
    (void)dev;
    const float *px = at(x);
    float *py = at(y);
    for (int64_t i = 0; i < n; i++)
        py[i] = relu1(px[i]);
    return PDNN_SUCCESS;
}

/* Subtracting the max keeps exp from overflowing. A NaN input is skipped
 * by the max but makes the sum, and so every output of its row, NaN. */
static pdnn_status host_softmax(void *dev, pdnn__buf x, pdnn__buf y, int64_t outer, int64_t c, int64_t inner)
{
    (void)dev;
    const float *px = at(x);
    float *py = at(y);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *xr = px + o * c * inner + i;
            float *yr = py + o * c * inner + i;
            double m = -INFINITY;
            for (int64_t k = 0; k < c; k++)
                if (xr[k * inner] > m)
                    m = xr[k * inner];
            double sum = 0.0;
            for (int64_t k = 0; k < c; k++)
                sum += exp(xr[k * inner] - m);
            for (int64_t k = 0; k < c; k++)
                yr[k * inner] = (float)(exp(xr[k * inner] - m) / sum);
        }
    return PDNN_SUCCESS;
}

/* Row-major C = op(A) op(B); A is stored k x m when trans_a, B n x k
 * when trans_b; for each matrix of the batch (backend.h). */
static pdnn_status host_matmul(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                               pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    const pdnn__matmul_call *mc = &call->u.matmul;
    const int64_t m = mc->m, n = mc->n, k = mc->k;
    const int trans_a = mc->trans_a, trans_b = mc->trans_b;
    for (int64_t t = 0; t < pdnn__matmul_batch(mc); t++) {
        const float *pa = at(mc->a_buf) + t * mc->stride_a, *pb = at(mc->b_buf) + t * mc->stride_b;
        float *pc = at(mc->c_buf) + t * m * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0.0;
                for (int64_t p = 0; p < k; p++) {
                    const double av = trans_a ? pa[p * m + i] : pa[i * k + p];
                    const double bv = trans_b ? pb[j * k + p] : pb[p * n + j];
                    acc += av * bv;
                }
                pc[i * n + j] = (float)acc;
            }
    }
    return PDNN_SUCCESS;
}

/* The reference pooling, forward or backward by call->op: oneDNN's max
 * pooling passes over NaNs, the reference returns them (host_dnnl.c). */
pdnn_status pdnn__host_pool2d_ref(void *dev, const pdnn__op_call *call)
{
    return call->op == PDNN__OP_POOL2D_BWD ? host_pool2d_bwd(dev, call, NULL, (pdnn__buf){NULL, 0}, NULL)
                                           : host_pool2d(dev, call, NULL, (pdnn__buf){NULL, 0}, NULL);
}

/* ---- peak rates ---------------------------------------------------------
 * What this build's plain C reaches on the one core the host backend uses:
 * 64 independent multiply-add chains the compiler can keep in vector
 * registers (-O2 vectorises the fixed-length inner loop), and memcpy
 * between buffers larger than the caches. */

#define PEAK_LANES 64
#define PEAK_MIN_SECONDS 0.02

static double host_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The factors come in and the sum goes out through volatiles, so that
 * the compiler can neither fold the chains nor drop them. */
static volatile float host_peak_a = 0.999f, host_peak_b = 0.001f, host_peak_sink;

/* Seconds for iters rounds of the chains. */
static double host_fma_pass(long iters)
{
    const float a = host_peak_a, b = host_peak_b; /* the chains converge to b / (1 - a) = 1 */
    float acc[PEAK_LANES];
    for (int j = 0; j < PEAK_LANES; j++)
        acc[j] = (float)j * 1e-3f;
    double t0 = host_now();
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < PEAK_LANES; j++)
            acc[j] = acc[j] * a + b;
    double t = host_now() - t0;
    float s = 0.0f;
    for (int j = 0; j < PEAK_LANES; j++)
        s += acc[j];
    host_peak_sink = s;
    return t;
}

static pdnn_status host_measure_peak(void *dev, double *gflops, double *gbytes_per_s)
{
    (void)dev;
    *gflops = *gbytes_per_s = 0.0;
    long iters = 1024;
    double t = host_fma_pass(iters);
    while (t < PEAK_MIN_SECONDS && iters < (1L << 30)) {
        iters *= 4;
        t = host_fma_pass(iters);
    }
    for (int r = 0; r < 2; r++) {
        double u = host_fma_pass(iters);
        if (u < t)
            t = u;
    }
    *gflops = 2.0 * PEAK_LANES * (double)iters / (t > 0 ? t : 1e-9) * 1e-9;

    /* 64 MiB each, or 1/16 of the machine when that is smaller. */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t bytes = (size_t)64 << 20;
    if (pages > 0 && page > 0 && (uint64_t)pages * (uint64_t)page / 16 < bytes)
        bytes = (size_t)((uint64_t)pages * (uint64_t)page / 16);
    char *src = malloc(bytes), *dst = malloc(bytes);
    if (!src || !dst) {
        free(src);
        free(dst);
        *gflops = 0.0;
        return pdnn__host_oom("host backend: measuring the copy bandwidth", "the source and destination",
                              2 * (uint64_t)bytes);
    }
    /* Touch every page first, so that the timed copies only stream. */
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    /* Called through a volatile pointer: dst is freed unread, and a
     * compiler may drop a copy nobody reads. */
    static void *(*volatile copy)(void *, const void *, size_t) = memcpy;
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = host_now();
        copy(dst, src, bytes);
        double u = host_now() - t0;
        if (u < best)
            best = u;
    }
    free(src);
    free(dst);
    *gbytes_per_s = 2.0 * (double)bytes / (best > 0 ? best : 1e-9) * 1e-9;
    return PDNN_SUCCESS;
}

/* The reference runs every valid call: nothing to refuse, no workspace. */
static void host_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev, (void)call, (void)plan;
}

static const pdnn__algo host_conv_direct = {
    .op = PDNN__OP_CONV2D_FWD, .name = "direct", .id = PDNN_CONV_ALGO_DIRECT, .rank = 100,
    .plan = host_plan, .run = host_conv2d, .residual = 1, .relu_cap = 1,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
static const pdnn__algo host_pool_direct = {
    .op = PDNN__OP_POOL2D_FWD, .name = "direct", .rank = 100, .plan = host_plan, .run = host_pool2d,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
static const pdnn__algo host_conv_bwd_data_direct = {
    .op = PDNN__OP_CONV2D_BWD_DATA, .name = "direct", .rank = 100, .plan = host_plan, .run = host_conv2d_bwd_data,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
static const pdnn__algo host_conv_bwd_filter_direct = {
    .op = PDNN__OP_CONV2D_BWD_FILTER, .name = "direct", .rank = 100, .plan = host_plan,
    .run = host_conv2d_bwd_filter,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
static const pdnn__algo host_conv_bwd_bias_direct = {
    .op = PDNN__OP_CONV2D_BWD_BIAS, .name = "direct", .rank = 100, .plan = host_plan, .run = host_conv2d_bwd_bias,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
static const pdnn__algo host_pool_bwd_direct = {
    .op = PDNN__OP_POOL2D_BWD, .name = "direct", .rank = 100, .plan = host_plan, .run = host_pool2d_bwd,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
static const pdnn__algo host_bn_fwd_train_direct = {
    .op = PDNN__OP_BN_FWD_TRAIN, .name = "direct", .rank = 100, .plan = host_plan, .run = host_bn_fwd_train,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
static const pdnn__algo host_bn_fwd_infer_direct = {
    .op = PDNN__OP_BN_FWD_INFER, .name = "direct", .rank = 100, .plan = host_plan, .run = host_bn_fwd_infer,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
static const pdnn__algo host_bn_bwd_direct = {
    .op = PDNN__OP_BN_BWD, .name = "direct", .rank = 100, .plan = host_plan, .run = host_bn_bwd,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
/* oneDNN's algorithms (host_dnnl.c) come first where built; "direct",
 * the reference, stays in every table. */
#ifdef PDNN_HAVE_DNNL_HOST
#define DNNL_FIRST(a) &a,
#else
#define DNNL_FIRST(a)
#endif
static const pdnn__algo *const host_bn_fwd_train_algos[] = {DNNL_FIRST(pdnn__host_dnnl_bn_fwd_train) &host_bn_fwd_train_direct, NULL};
static const pdnn__algo *const host_bn_fwd_infer_algos[] = {DNNL_FIRST(pdnn__host_dnnl_bn_fwd_infer) &host_bn_fwd_infer_direct, NULL};
static const pdnn__algo *const host_bn_bwd_algos[] = {DNNL_FIRST(pdnn__host_dnnl_bn_bwd) &host_bn_bwd_direct, NULL};
static const pdnn__algo *const host_conv_algos[] = {DNNL_FIRST(pdnn__host_dw_nchw) DNNL_FIRST(pdnn__host_dnnl_conv) &host_conv_direct, NULL};
static const pdnn__algo *const host_pool_algos[] = {DNNL_FIRST(pdnn__host_dnnl_pool) &host_pool_direct, NULL};
static const pdnn__algo *const host_conv_bwd_data_algos[] = {DNNL_FIRST(pdnn__host_dnnl_conv_bwd_data) &host_conv_bwd_data_direct, NULL};
static const pdnn__algo *const host_conv_bwd_filter_algos[] = {DNNL_FIRST(pdnn__host_dnnl_conv_bwd_filter) &host_conv_bwd_filter_direct, NULL};
static const pdnn__algo *const host_conv_bwd_bias_algos[] = {DNNL_FIRST(pdnn__host_dnnl_conv_bwd_bias) &host_conv_bwd_bias_direct, NULL};
static const pdnn__algo *const host_pool_bwd_algos[] = {DNNL_FIRST(pdnn__host_dnnl_pool_bwd) &host_pool_bwd_direct, NULL};
/* The training ops' references (host_train.c). */
extern const pdnn__algo pdnn__host_relu_bwd_direct, pdnn__host_softmax_xent_direct, pdnn__host_optimizer_direct;
static const pdnn__algo *const host_relu_bwd_algos[] = {DNNL_FIRST(pdnn__host_dnnl_relu_bwd) &pdnn__host_relu_bwd_direct, NULL};
static const pdnn__algo *const host_softmax_xent_algos[] = {&pdnn__host_softmax_xent_direct, NULL};
static const pdnn__algo *const host_optimizer_algos[] = {&pdnn__host_optimizer_direct, NULL};
extern const pdnn__algo pdnn__host_scale_direct, pdnn__host_activation_direct, pdnn__host_transform_direct;
static const pdnn__algo *const host_transform_algos[] = {&pdnn__host_transform_direct, NULL};
extern const pdnn__algo pdnn__host_binary_direct, pdnn__host_pad_direct;
static const pdnn__algo *const host_binary_algos[] = {&pdnn__host_binary_direct, NULL};
static const pdnn__algo *const host_pad_algos[] = {&pdnn__host_pad_direct, NULL};
extern const pdnn__algo pdnn__host_index_direct, pdnn__host_where_direct; /* host_index.c */
static const pdnn__algo *const host_index_algos[] = {&pdnn__host_index_direct, NULL};
static const pdnn__algo *const host_where_algos[] = {&pdnn__host_where_direct, NULL};
static const pdnn__algo *const host_scale_algos[] = {DNNL_FIRST(pdnn__host_dnnl_scale) &pdnn__host_scale_direct, NULL};
static const pdnn__algo *const host_activation_algos[] = {DNNL_FIRST(pdnn__host_dnnl_activation) &pdnn__host_activation_direct, NULL};
/* The N-d math ops' references (host_nd_math.c). */
extern const pdnn__algo pdnn__host_transpose_direct, pdnn__host_softmax_direct, pdnn__host_layer_norm_direct,
    pdnn__host_reduce_direct;
static const pdnn__algo *const host_transpose_algos[] = {&pdnn__host_transpose_direct, NULL};
static const pdnn__algo *const host_softmax_algos[] = {DNNL_FIRST(pdnn__host_dnnl_softmax) &pdnn__host_softmax_direct, NULL};
static const pdnn__algo *const host_layer_norm_algos[] = {&pdnn__host_layer_norm_direct, NULL};
static const pdnn__algo *const host_reduce_algos[] = {&pdnn__host_reduce_direct, NULL};
extern const pdnn__algo pdnn__host_layer_norm_bwd_direct; /* host_nd_grad.c */
static const pdnn__algo *const host_layer_norm_bwd_algos[] = {&pdnn__host_layer_norm_bwd_direct, NULL};
static void host_matmul_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan) { (void)dev, (void)call, (void)plan; }
static const pdnn__algo host_matmul_direct = {
    .op = PDNN__OP_GEMM, .name = "direct", .rank = 100, .plan = host_matmul_plan, .run = host_matmul,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
static const pdnn__algo *const host_matmul_algos[] = {DNNL_FIRST(pdnn__host_dnnl_matmul) &host_matmul_direct, NULL};

static const pdnn__algo *const host_cast_algos[] = {&pdnn__host_cast_direct, NULL}; /* host_lowp.c */

const pdnn__backend pdnn__host_backend = {
    .name = "host",
    .enumerate = host_enumerate,
    .device_close = host_close,
    .region_alloc = host_region_alloc,
    .region_free = host_region_free,
    .write = host_write,
    .read = host_read,
    .copy = host_copy,
    .copy_rows = host_copy_rows,
    .synchronize = host_sync,
    .algos = {[PDNN__OP_CONV2D_FWD] = host_conv_algos,
              [PDNN__OP_POOL2D_FWD] = host_pool_algos,
              [PDNN__OP_CONV2D_BWD_DATA] = host_conv_bwd_data_algos,
              [PDNN__OP_CONV2D_BWD_FILTER] = host_conv_bwd_filter_algos,
              [PDNN__OP_CONV2D_BWD_BIAS] = host_conv_bwd_bias_algos,
              [PDNN__OP_POOL2D_BWD] = host_pool_bwd_algos,
              [PDNN__OP_BN_FWD_TRAIN] = host_bn_fwd_train_algos,
              [PDNN__OP_BN_FWD_INFER] = host_bn_fwd_infer_algos,
              [PDNN__OP_BN_BWD] = host_bn_bwd_algos,
              [PDNN__OP_RELU_BWD] = host_relu_bwd_algos,
              [PDNN__OP_SOFTMAX_XENT] = host_softmax_xent_algos,
              [PDNN__OP_OPTIMIZER] = host_optimizer_algos,
              [PDNN__OP_GEMM] = host_matmul_algos,
              [PDNN__OP_SCALE] = host_scale_algos,
              [PDNN__OP_ACTIVATION] = host_activation_algos,
              [PDNN__OP_TRANSFORM] = host_transform_algos,
              [PDNN__OP_BINARY] = host_binary_algos,
              [PDNN__OP_PAD] = host_pad_algos,
              [PDNN__OP_ND_TRANSPOSE] = host_transpose_algos,
              [PDNN__OP_ND_SOFTMAX] = host_softmax_algos,
              [PDNN__OP_ND_LAYER_NORM] = host_layer_norm_algos,
              [PDNN__OP_ND_REDUCE] = host_reduce_algos,
              [PDNN__OP_INDEX] = host_index_algos,
              [PDNN__OP_WHERE] = host_where_algos,
              [PDNN__OP_CAST] = host_cast_algos,
              [PDNN__OP_ND_LAYER_NORM_BWD] = host_layer_norm_bwd_algos},
    .add = host_add,
    .bias_add = host_bias_add,
    .relu = host_relu,
    .softmax = host_softmax,
    .measure_peak = host_measure_peak,
    .run_reduced = pdnn__host_run_reduced,
    .reduced_ops = PDNN__HOST_REDUCED_OPS,
};
