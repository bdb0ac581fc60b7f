/* The data-movement ops of any rank (backends/opencl/cl_index.c): y reads
 * x at per-axis index tables (ix_index), and a select with broadcast
 * strides (ix_where). One work-item per element of y in row-major order
 * of its dims (rank r <= 8, the unused dims 1). */

/* The coordinate of y's row-major element i along axis k, for k from the
 * last down: at[k] = i % d[k], i /= d[k]. */
#define IX_COORDS(at, i, d, r)                                                                                         \
    long at[8];                                                                                                        \
    {                                                                                                                  \
        long rest_ = (i);                                                                                              \
        for (int k_ = (r) - 1; k_ >= 0; k_--) {                                                                        \
            at[k_] = rest_ % (d)[k_];                                                                                  \
            rest_ /= (d)[k_];                                                                                          \
        }                                                                                                              \
    }

/* tbl: the per-axis indices (axis k's from off[k]), then lerp's idx1
 * (from i1_off) and its weights wt (from wt_off, floats of the same
 * buffer). -1 on any axis gives value. */
__kernel void ix_index(__global const float *x, long x_off, long8 xs8, __global float *y, long y_off, long8 ys8,
                       long8 d8, long8 off8, int r, int lerp, __global const long *tbl, long t_off, long i1_off,
                       __global const float *wt, long wt_off, float value, long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    long d[8], xs[8], ys[8], off[8];
    vstore8(d8, 0, d);
    vstore8(xs8, 0, xs);
    vstore8(ys8, 0, ys);
    vstore8(off8, 0, off);
    IX_COORDS(at, i, d, r)
    long src = 0, yo = 0;
    int fill = 0;
    for (int k = 0; k < r; k++) {
        const long j = tbl[t_off + off[k] + at[k]];
        fill |= j < 0;
        src += j * xs[k];
        yo += at[k] * ys[k];
    }
    float v = value;
    if (!fill && lerp >= 0) {
        const long a = at[lerp], j = tbl[t_off + off[lerp] + a], j1 = tbl[t_off + i1_off + a];
        const float w = wt[wt_off + a];
        v = x[x_off + src] * (1.0f - w) + x[x_off + src + (j1 - j) * xs[lerp]] * w;
    } else if (!fill) {
        v = x[x_off + src];
    }
    y[y_off + yo] = v;
}

__kernel void ix_where(__global const float *m, long m_off, long8 ms8, __global const float *a, long a_off, long8 as8,
                       __global const float *b, long b_off, long8 bs8, __global float *y, long y_off, long8 ys8,
                       long8 d8, int r, long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    long d[8], ms[8], as[8], bs[8], ys[8];
    vstore8(d8, 0, d);
    vstore8(ms8, 0, ms);
    vstore8(as8, 0, as);
    vstore8(bs8, 0, bs);
    vstore8(ys8, 0, ys);
    IX_COORDS(at, i, d, r)
    long mo = 0, ao = 0, bo = 0, yo = 0;
    for (int k = 0; k < r; k++) {
        mo += at[k] * ms[k];
        ao += at[k] * as[k];
        bo += at[k] * bs[k];
        yo += at[k] * ys[k];
    }
    y[y_off + yo] = m[m_off + mo] != 0.0f ? a[a_off + ao] : b[b_off + bo];
}
