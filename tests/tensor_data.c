/* The test helpers that need no Criterion (declared in helpers.h):
 * deterministic data and layout conversions, shared by the Criterion
 * suites and the op-parity harness, which builds without Criterion. */
#include "helpers.h"

void th_fill(float *v, int64_t n, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 1u;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        v[i] = (float)((double)s / 2147483648.0 - 1.0);
    }
}

/* Memory position of logical element (a,b,c,d), written out per layout
 * rather than through the library's stride helper. */
static int64_t pos(pdnn_layout l, const int64_t D[4], int64_t a, int64_t b, int64_t c, int64_t d)
{
    switch (l) {
    case PDNN_NHWC:
    case PDNN_OHWI: return ((a * D[2] + c) * D[3] + d) * D[1] + b;
    case PDNN_HWIO: return ((c * D[3] + d) * D[1] + b) * D[0] + a;
    default: return ((a * D[1] + b) * D[2] + c) * D[3] + d;
    }
}

void th_to_layout(const float *logical, float *out, pdnn_layout l, const int64_t D[4])
{
    int64_t i = 0;
    for (int64_t a = 0; a < D[0]; a++)
        for (int64_t b = 0; b < D[1]; b++)
            for (int64_t c = 0; c < D[2]; c++)
                for (int64_t d = 0; d < D[3]; d++)
                    out[pos(l, D, a, b, c, d)] = logical[i++];
}

void th_from_layout(const float *in, float *logical, pdnn_layout l, const int64_t D[4])
{
    int64_t i = 0;
    for (int64_t a = 0; a < D[0]; a++)
        for (int64_t b = 0; b < D[1]; b++)
            for (int64_t c = 0; c < D[2]; c++)
                for (int64_t d = 0; d < D[3]; d++)
                    logical[i++] = in[pos(l, D, a, b, c, d)];
}

pdnn_tensor_desc th_desc(pdnn_layout l, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    pdnn_tensor_desc d = {PDNN_FLOAT32, l, {d0, d1, d2, d3}, 0};
    return d;
}
