/* The session's runners for the nodes that training an imported model
 * adds (graph.h: BN_TRAIN, G_BN_BWD, DROPOUT, G_CLIP_BWD). Each is built
 * from public ops, so every backend that has those runs it. */
#include "core/half.h"
#include "graph/graph.h"

#include <stdlib.h>
#include <string.h>

/* The 0/1 flag variable (polydnn/training): 1 trains. */
static pdnn_status read_flag(const pdnn_tensor *t, int *on)
{
    float v = 0.0f;
    pdnn_status st = pdnn_tensor_read(t, &v, sizeof v);
    *on = v != 0.0f;
    return st;
}

/* A one-element tensor of y's layout holding v (a broadcast operand). */
static pdnn_status scalar_like(const pdnn_tensor *y, float v, pdnn_tensor **out)
{
    pdnn_tensor_desc d = y->desc;
    for (int k = 0; k < PDNN_MAX_RANK; k++)
        d.dims[k] = 1;
    unsigned char b[4]; /* v in y's dtype */
    pdnn__from_f32(y->desc.dtype, &v, b, 1);
    pdnn_status st = pdnn_tensor_create(y->dev, &d, out);
    if (st == PDNN_SUCCESS && (st = pdnn_tensor_write(*out, b, pdnn__dtype_size(y->desc.dtype))) != PDNN_SUCCESS) {
        pdnn_tensor_release(*out);
        *out = NULL;
    }
    return st;
}

static void drop_parent(void *t) { pdnn_tensor_release(t); }

/* Part k (0 or 1) of a batch-statistics node's output {2C}: a {C} tensor
 * of the same memory (mean, then 1/sqrt(var + eps)), holding t. */
static pdnn_status stats_part(const pdnn_tensor *t, const pdnn_tensor *gamma, int k, pdnn_tensor **out)
{
    const int64_t c = pdnn_tensor_desc_elements(&gamma->desc);
    if (pdnn_tensor_desc_elements(&t->desc) != 2 * c || t->desc.dtype != gamma->desc.dtype)
        return pdnn__error(PDNN_ERR_INTERNAL, "FusedBatchNormGradV3: statistics of %lld %s values for %lld %s "
                           "channels", (long long)pdnn_tensor_desc_elements(&t->desc),
                           pdnn__dtype_name(t->desc.dtype), (long long)c, pdnn__dtype_name(gamma->desc.dtype));
    pdnn__buf b = t->block.buf;
    b.offset += (size_t)(k * c) * sizeof(float);
    pdnn__tensor_ref((pdnn_tensor *)t);
    pdnn_status st = pdnn__tensor_wrap(t->dev, &gamma->desc, b, drop_parent, (void *)t, out);
    if (st != PDNN_SUCCESS)
        pdnn_tensor_release((pdnn_tensor *)t);
    return st;
}

/* The batch's mean and 1/sqrt(var + eps) into y ({2C}), through a
 * training-mode forward into a scratch output (no running statistics
 * touched): computed once for both of a batch norm's gradient nodes. */
static pdnn_status batch_stats(const pdnn__node *nd, const pdnn_tensor *x, const pdnn_tensor *gamma,
                               pdnn_tensor *stats)
{
    pdnn_tensor *y = NULL, *beta = NULL, *mean = NULL, *inv = NULL;
    pdnn_batch_norm_params p;
    pdnn_batch_norm_params_init(&p);
    p.epsilon = nd->alpha;
    pdnn_status st = stats_part(stats, gamma, 0, &mean);
    if (st == PDNN_SUCCESS)
        st = stats_part(stats, gamma, 1, &inv);
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_create(x->dev, &gamma->desc, &beta);
    const size_t cb = (size_t)pdnn_tensor_desc_bytes(&gamma->desc);
    float *zeros = st == PDNN_SUCCESS ? calloc(1, cb) : NULL;
    if (st == PDNN_SUCCESS)
        st = zeros ? pdnn_tensor_write(beta, zeros, cb) : pdnn__host_oom("FusedBatchNormGradV3", "zeros", cb);
    free(zeros);
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_create(x->dev, &x->desc, &y);
    if (st == PDNN_SUCCESS)
        st = pdnn_batch_norm_forward(&p, x, gamma, beta, NULL, NULL, mean, inv, y);
    pdnn_tensor_release(y);
    pdnn_tensor_release(beta);
    pdnn_tensor_release(mean);
    pdnn_tensor_release(inv);
    return st;
}

/* splitmix64: the dropout mask's counter-based generator. */
static uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static pdnn_status dropout(const pdnn__node *nd, const pdnn_tensor *const *in, pdnn_tensor *y)
{
    int on = 0;
    float stepf = 0.0f;
    pdnn_status st = read_flag(in[1], &on);
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_read(in[2], &stepf, sizeof stepf);
    if (st != PDNN_SUCCESS)
        return st;
    if (!on || nd->alpha <= 0.0f)
        return pdnn_scale(in[0], 1.0f, y);
    const int64_t n = pdnn_tensor_desc_elements(&y->desc);
    float *mask = malloc((size_t)n * sizeof *mask);
    if (!mask)
        return pdnn__host_oom("Dropout", "its mask", (uint64_t)n * sizeof *mask);
    /* keep with probability 1 - ratio, scaled by 1 / (1 - ratio) */
    const double keep = 1.0 - (double)nd->alpha;
    const float scale = (float)(1.0 / keep);
    const uint64_t base = mix64(nd->seed ^ mix64((uint64_t)stepf));
    for (int64_t e = 0; e < n; e++)
        mask[e] = (double)(mix64(base + (uint64_t)e) >> 11) * 0x1.0p-53 < keep ? scale : 0.0f;
    /* a reduced y: the mask in its dtype (rounded in place: 2 bytes an
     * element fit where the floats were) */
    const size_t es = pdnn__dtype_size(y->desc.dtype);
    if (y->desc.dtype != PDNN_FLOAT32)
        for (int64_t e = 0; e < n; e++)
            pdnn__from_f32(y->desc.dtype, &mask[e], (char *)mask + (size_t)e * es, 1);
    pdnn_tensor *m = NULL;
    st = pdnn_tensor_create(y->dev, &y->desc, &m);
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_write(m, mask, (size_t)n * es);
    free(mask);
    if (st == PDNN_SUCCESS)
        st = pdnn_binary(in[0], m, PDNN_BINARY_MUL, y);
    pdnn_tensor_release(m);
    return st;
}

pdnn_status pdnn__run_train_node(const pdnn__node *nd, const pdnn_tensor *const *in, pdnn_tensor *y)
{
    pdnn_status st = PDNN_SUCCESS;
    switch (nd->op) {
    case PDNN__OP_BN_TRAIN: {
        int on = 0;
        if ((st = read_flag(in[5], &on)) != PDNN_SUCCESS)
            return st;
        const pdnn_batch_norm_params p = {.training = on, .epsilon = nd->alpha, .momentum = nd->beta};
        /* The running statistics are the session's variables: updated in place. */
        return pdnn_batch_norm_forward(&p, in[0], in[1], in[2], (pdnn_tensor *)in[3], (pdnn_tensor *)in[4], NULL,
                                       NULL, y);
    }
    case PDNN__OP_G_BN_BWD: {
        /* axis 2: the batch statistics (x, gamma); 0, 1: dx, dgamma (x,
         * dy, gamma, those statistics) */
        if (nd->axis == 2)
            return batch_stats(nd, in[0], in[1], y);
        pdnn_tensor *mean = NULL, *inv = NULL;
        pdnn_batch_norm_params p;
        pdnn_batch_norm_params_init(&p);
        st = stats_part(in[3], in[2], 0, &mean);
        if (st == PDNN_SUCCESS)
            st = stats_part(in[3], in[2], 1, &inv);
        if (st == PDNN_SUCCESS)
            st = pdnn_batch_norm_backward(&p, in[0], in[1], in[2], mean, inv, nd->axis == 0 ? y : NULL,
                                          nd->axis == 1 ? y : NULL, NULL);
        pdnn_tensor_release(mean);
        pdnn_tensor_release(inv);
        return st;
    }
    case PDNN__OP_DROPOUT: return dropout(nd, in, y);
    case PDNN__OP_G_CLIP_BWD: {
        /* dy masked twice by relu's gradient: where y - lo > 0, then where hi - y > 0 */
        pdnn_tensor *c = NULL, *t = NULL;
        st = pdnn_tensor_create(y->dev, &y->desc, &t);
        if (st == PDNN_SUCCESS && nd->alpha != 0.0f)
            st = scalar_like(y, nd->alpha, &c);
        if (st == PDNN_SUCCESS)
            st = c ? pdnn_binary(in[0], c, PDNN_BINARY_SUB, t) : pdnn_scale(in[0], 1.0f, t);
        if (st == PDNN_SUCCESS)
            st = pdnn_relu_backward(t, in[1], y);
        pdnn_tensor_release(c);
        c = NULL;
        if (st == PDNN_SUCCESS)
            st = scalar_like(y, nd->beta, &c);
        if (st == PDNN_SUCCESS)
            st = pdnn_binary(c, in[0], PDNN_BINARY_SUB, t);
        if (st == PDNN_SUCCESS)
            st = pdnn_relu_backward(t, y, y);
        pdnn_tensor_release(c);
        pdnn_tensor_release(t);
        return st;
    }
    default: break;
    }
    return pdnn__error(PDNN_ERR_INTERNAL, "pdnn__run_train_node: op %d is not a training node", (int)nd->op);
}
