/* Per-axis pooling arithmetic (see pool_math.h). The semantics are the
 * host reference's (backends/host/host.c), which is deliberately not built
 * on these functions so that it stays an independent oracle for them. */
#include "ops/pool_math.h"

void pdnn__pool_axes(const pdnn__pool2d_call *c, pdnn__pool_axis *h, pdnn__pool_axis *w)
{
    h->in = c->h;
    h->out = c->p;
    h->win = c->win_h;
    h->stride = c->stride_h;
    h->pad_a = c->pad_top;
    h->pad_b = c->pad_bottom;
    w->in = c->w;
    w->out = c->q;
    w->win = c->win_w;
    w->stride = c->stride_w;
    w->pad_a = c->pad_left;
    w->pad_b = c->pad_right;
}

int64_t pdnn__pool_divisor_extent(const pdnn__pool_axis *a, pdnn_pool_mode mode, int64_t o)
{
    const int64_t start = o * a->stride - a->pad_a; /* never before -pad_a */
    int64_t end = start + a->win;
    if (mode == PDNN_POOL_AVG_INCLUDE_PADDING) {
        if (end > a->in + a->pad_b)
            end = a->in + a->pad_b;
        return end - start;
    }
    if (end > a->in)
        end = a->in;
    return end - (start > 0 ? start : 0);
}

int64_t pdnn__pool_padded_length(const pdnn__pool_axis *a, int64_t *copied)
{
    const int64_t len = (a->out - 1) * a->stride + a->win;
    if (copied) {
        /* len >= win > pad_a, so at least one element fits. */
        const int64_t room = len - a->pad_a;
        *copied = a->in < room ? a->in : room;
    }
    return len;
}

void pdnn__pool_avg_scale(const pdnn__pool_axis *h, const pdnn__pool_axis *w, pdnn_pool_mode mode,
                          float *scale)
{
    const double full = (double)h->win * (double)w->win;
    for (int64_t p = 0; p < h->out; p++) {
        const double dh = (double)pdnn__pool_divisor_extent(h, mode, p);
        for (int64_t q = 0; q < w->out; q++)
            scale[p * w->out + q] = (float)(full / (dh * (double)pdnn__pool_divisor_extent(w, mode, q)));
    }
}
