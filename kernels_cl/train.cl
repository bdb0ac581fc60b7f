/* The training ops (backends/opencl/cl_train.c): relu backward, the fused
 * softmax cross-entropy (one work-item per row, then one for the batch
 * mean) and the optimizer steps (one work-item per element). Offsets are
 * in elements. */

__kernel void relu_bwd(__global const float *y, long y_off, __global const float *dy, long dy_off,
                       __global float *dx, long dx_off, long n)
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
    /* NaN compares false: no gradient, as on the host. */
    dx[dx_off + i] = y[y_off + i] > 0.0f ? dy[dy_off + i] : 0.0f;
}

/* y = alpha * x; y may be x. */
__kernel void scale(__global const float *x, long x_off, __global float *y, long y_off, float alpha, long n)
{
    const long i = get_global_id(0);
    if (i < n)
        y[y_off + i] = alpha * x[x_off + i];
}

/* Row i: max, log-sum-exp, the loss term into rowloss[i] and, with
 * want_dx, (softmax - onehot) / n. A label outside [0, k) lowers *flag to
 * the row's index (the host reads the first bad row after the kernel). */
__kernel void xent_rows(__global const float *x, long x_off, __global const int *labels, long l_off,
                        __global float *dx, long dx_off, int want_dx, __global float *rowloss, long r_off,
                        __global int *flag, long f_off, long n, long k)
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
    const int label = labels[l_off + i];
    if (label < 0 || label >= k) {
        atomic_min(&flag[f_off], (int)i);
        rowloss[r_off + i] = 0.0f;
        return;
    }
    __global const float *row = x + x_off + i * k;
    float m = row[0];
    for (long j = 1; j < k; j++)
        m = fmax(m, row[j]);
    float s = 0.0f;
    for (long j = 0; j < k; j++)
        s += exp(row[j] - m);
    /* Relative to the maximum: m + log(s) would round to m's ulp (1e-3
     * for logits near 1e4), shifting every probability by as much. */
    rowloss[r_off + i] = log(s) + (m - row[label]);
    if (want_dx) {
        const float inv_s = 1.0f / s, inv_n = 1.0f / (float)n;
        __global float *d = dx + dx_off + i * k;
        for (long j = 0; j < k; j++)
            d[j] = (exp(row[j] - m) * inv_s - (j == label ? 1.0f : 0.0f)) * inv_n;
    }
}

/* loss = mean of rowloss[0, n), compensated (Kahan) so a large batch
 * keeps its low bits. */
__kernel void xent_mean(__global const float *rowloss, long r_off, __global float *loss, long loss_off, long n)
{
    if (get_global_id(0) != 0)
        return;
    float s = 0.0f, comp = 0.0f;
    for (long i = 0; i < n; i++) {
        const float t = rowloss[r_off + i] - comp;
        const float u = s + t;
        comp = (u - s) - t;
        s = u;
    }
    loss[loss_off] = s / (float)n;
}

/* g' = g + wd w; with a velocity v: v = momentum v + g'; w -= lr v (else lr g'). */
__kernel void sgd_step(__global float *w, long w_off, __global const float *g, long g_off, __global float *v,
                       long v_off, int has_v, float lr, float momentum, float wd, long n, int nesterov)
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
    float d = g[g_off + i] + wd * w[w_off + i];
    if (has_v) {
        const float vv = momentum * v[v_off + i] + d;
        v[v_off + i] = vv;
        d = nesterov ? d + momentum * vv : vv;
    }
    w[w_off + i] -= lr * d;
}

/* Adam with the bias corrections bc1 = 1 - b1^step, bc2 = 1 - b2^step
 * (formed on the host in double). */
__kernel void adam_step(__global float *w, long w_off, __global const float *g, long g_off, __global float *m,
                        long m_off, __global float *v, long v_off, float lr, float b1, float b2, float eps, float bc1,
                        float bc2, float wd, long n, int decoupled)
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
    /* AdamW (decoupled) decays w, not the gradient */
    const float d = g[g_off + i] + (decoupled ? 0.0f : wd * w[w_off + i]);
    if (decoupled)
        w[w_off + i] *= 1.0f - lr * wd;
    const float mm = b1 * m[m_off + i] + (1.0f - b1) * d;
    const float vv = b2 * v[v_off + i] + (1.0f - b2) * d * d;
    m[m_off + i] = mm;
    v[v_off + i] = vv;
    w[w_off + i] -= lr * (mm / bc1) / (sqrt(vv / bc2) + eps);
}
