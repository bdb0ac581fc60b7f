/* polydnn tune --backward: each row's backward data and backward filter
 * run first in the tuning context, so that what they run inside is tuned
 * and stored: the forward kernels the backward-as-forward algorithms call
 * (wg_gemm on GPUs, at shapes no forward layer has: dy as the filter,
 * x's channels as the batch) and AUTO's choice among the backward
 * algorithms. Then each is timed against the untuned context in
 * alternation and printed as a row. */
#include "tune_backward.h"

#include "run.h"

#include <stdio.h>
#include <stdlib.h>

enum { ROUNDS = 3 };

static void fill(float *v, int64_t n, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((double)(*s >> 40) / (double)(1ull << 24) - 0.5);
    }
}

/* One device's tensors of a row: x, w, dy and the gradients dx, dw. */
typedef struct bwd_tensors {
    pdnn_tensor *x, *w, *dy, *dx, *dw;
} bwd_tensors;

static void release(bwd_tensors *t)
{
    pdnn_tensor_release(t->x);
    pdnn_tensor_release(t->w);
    pdnn_tensor_release(t->dy);
    pdnn_tensor_release(t->dx);
    pdnn_tensor_release(t->dw);
}

static pdnn_status make(pdnn_device *dev, const pdnn_tensor_desc *d, const float *v, pdnn_tensor **out)
{
    pdnn_status st = pdnn_tensor_create(dev, d, out);
    if (st == PDNN_SUCCESS && v)
        st = pdnn_tensor_write(*out, v, (size_t)pdnn_tensor_desc_bytes(d));
    return st;
}

static pdnn_status open_tensors(pdnn_device *dev, const pdnn_tensor_desc *xd, const pdnn_tensor_desc *wd,
                                const pdnn_tensor_desc *yd, const float *x, const float *w, const float *dy,
                                bwd_tensors *t)
{
    pdnn_status st = make(dev, xd, x, &t->x);
    if (st == PDNN_SUCCESS)
        st = make(dev, wd, w, &t->w);
    if (st == PDNN_SUCCESS)
        st = make(dev, yd, dy, &t->dy);
    if (st == PDNN_SUCCESS)
        st = make(dev, xd, NULL, &t->dx);
    if (st == PDNN_SUCCESS)
        st = make(dev, wd, NULL, &t->dw);
    return st;
}

/* One call of direction dir (0 data, 1 filter) to the end; its seconds. */
static pdnn_status once(const pdnn_conv2d_params *p, pdnn_device *dev, bwd_tensors *t, int dir, double *s)
{
    const double t0 = cli_now();
    pdnn_status st = dir == 0 ? pdnn_conv2d_backward_data(p, t->dy, t->w, t->dx)
                              : pdnn_conv2d_backward_filter(p, t->x, t->dy, t->dw);
    if (st == PDNN_SUCCESS)
        st = pdnn_device_synchronize(dev);
    *s = cli_now() - t0;
    return st;
}

int tune_backward_row(pdnn_device *dev_off, pdnn_device *dev_tune, const char *name, const conv_shape *cs1,
                      pdnn_layout layout, int batch, FILE *out)
{
    conv_shape cs = *cs1;
    cs.n = batch;
    pdnn_tensor_desc xd, wd, yd = {PDNN_FLOAT32, layout, {0, 0, 0, 0}, 0};
    conv_shape_descs(&cs, layout, &xd, &wd);
    if (pdnn_conv2d_output_dims(&xd, &wd, &cs.p, yd.dims) != PDNN_SUCCESS)
        return cli_fail(name);
    const int64_t xn = pdnn_tensor_desc_elements(&xd), wn = pdnn_tensor_desc_elements(&wd),
                  yn = pdnn_tensor_desc_elements(&yd);
    float *x = malloc((size_t)xn * sizeof(float)), *w = malloc((size_t)wn * sizeof(float)),
          *dy = malloc((size_t)yn * sizeof(float));
    bwd_tensors off = {0}, tun = {0};
    int rc = 0;
    if (!x || !w || !dy) {
        fprintf(stderr, "polydnn tune: out of host memory for %s\n", name);
        rc = EXIT_RUNTIME;
        goto done;
    }
    uint64_t seed = 7;
    fill(x, xn, &seed);
    fill(w, wn, &seed);
    fill(dy, yn, &seed);
    if (open_tensors(dev_off, &xd, &wd, &yd, x, w, dy, &off) != PDNN_SUCCESS ||
        open_tensors(dev_tune, &xd, &wd, &yd, x, w, dy, &tun) != PDNN_SUCCESS) {
        rc = cli_fail("creating the backward tensors");
        goto done;
    }
    for (int dir = 0; dir < 2; dir++) {
        /* The tuning context's first call searches where the cache has
         * nothing; the untuned one's first call builds its kernels. */
        double search = 0, s = 0, best_off = 1e30, best_tun = 1e30;
        if (once(&cs.p, dev_tune, &tun, dir, &search) != PDNN_SUCCESS ||
            once(&cs.p, dev_off, &off, dir, &s) != PDNN_SUCCESS) {
            rc = cli_fail(name);
            goto done;
        }
        for (int i = 0; i < ROUNDS; i++) {
            if (once(&cs.p, dev_off, &off, dir, &s) != PDNN_SUCCESS) {
                rc = cli_fail(name);
                goto done;
            }
            best_off = s < best_off ? s : best_off;
            if (once(&cs.p, dev_tune, &tun, dir, &s) != PDNN_SUCCESS) {
                rc = cli_fail(name);
                goto done;
            }
            best_tun = s < best_tun ? s : best_tun;
        }
        fprintf(out, "| %s | %s | %d | %s | %.3f | %.3f | %.2f | %.1f |\n", name,
                layout == PDNN_NHWC ? "NHWC" : "NCHW", batch, dir == 0 ? "data" : "filter", best_off * 1e3,
                best_tun * 1e3, best_off / best_tun, search);
        fflush(out);
    }
done:
    release(&off);
    release(&tun);
    free(x);
    free(w);
    free(dy);
    return rc;
}

void tune_backward_heading(FILE *out)
{
    fprintf(out, "\nBackward (--backward): each direction's first call in the tuning context tunes what runs inside it "
                 "(search s: that call's wall time); then untuned and tuned alternated, best of %d, ms.\n\n"
                 "| layer | layout | batch | direction | untuned ms | tuned ms | speedup | search s |\n"
                 "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |\n",
            ROUNDS);
}
