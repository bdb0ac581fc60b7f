/* float16 and bfloat16 in ONNX models (issue 43): a reduced tensor is
 * widened to float32 at import (exact) and the graph computes under the
 * matching precision policy (pdnn_graph_set_precision), its inputs and
 * outputs float32, as ONNX Runtime's converter's keep_io_types. */
#include "core/half.h"
#include "io/onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pdnn_dtype pdnn__onnx_reduced_type(int64_t onnx_type)
{
    return onnx_type == ONNX_FLOAT16 ? PDNN_FLOAT16 : onnx_type == ONNX_BFLOAT16 ? PDNN_BFLOAT16 : PDNN_FLOAT32;
}

pdnn_status pdnn__onnx_saw_reduced(importer *im, pdnn_dtype t, const char *what)
{
    if (t == PDNN_FLOAT32 || im->reduced == t)
        return PDNN_SUCCESS;
    if (im->reduced != PDNN_FLOAT32)
        return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: %s is %s but the model also holds %s; one "
                    "reduced dtype a model", what, pdnn__dtype_name(t), pdnn__dtype_name(im->reduced));
    im->reduced = t;
    /* an explicit options.precision wins: a float16 model can run in bfloat16 */
    return im->precision_given ? PDNN_SUCCESS : pdnn_graph_set_precision(im->graph, t);
}

pdnn_status pdnn__onnx_widen(const Onnx__TensorProto *t, const char *name, int64_t count, float **out)
{
    const pdnn_dtype dt = pdnn__onnx_reduced_type(t->data_type);
    *out = NULL;
    /* The sizes are checked before anything is allocated: a file cannot
     * make us allocate what it does not hold. */
    if (t->has_raw_data && t->raw_data.len != (size_t)count * 2)
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: tensor '%s': raw_data holds %zu bytes, its dims "
                    "need %zu", name, t->raw_data.len, (size_t)count * 2);
    if (!t->has_raw_data && t->n_int32_data != (size_t)count)
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: tensor '%s': %zu values, its dims need %lld", name,
                    t->n_int32_data, (long long)count);
    uint16_t *h = malloc((size_t)(count ? count : 1) * 2);
    *out = malloc((size_t)(count ? count : 1) * 4);
    pdnn_status st = PDNN_SUCCESS;
    if (!h || !*out) {
        st = FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
    } else if (t->has_raw_data) {
        if (count)
            memcpy(h, t->raw_data.data, (size_t)count * 2); /* little-endian, as ONNX stores it */
    } else { /* ONNX keeps each 16-bit pattern in an int32 */
        for (int64_t e = 0; e < count; e++)
            h[e] = (uint16_t)t->int32_data[e];
    }
    if (st == PDNN_SUCCESS)
        pdnn__to_f32(dt, h, *out, (size_t)count);
    free(h);
    if (st != PDNN_SUCCESS) {
        free(*out);
        *out = NULL;
    }
    return st;
}

pdnn_status pdnn__onnx_output_float32(pdnn_graph *g, const char *name, const char *device, int *y)
{
    pdnn_tensor_desc d;
    pdnn_status st = pdnn_graph_node_desc(g, *y, &d);
    if (st != PDNN_SUCCESS || d.dtype == PDNN_FLOAT32)
        return st;
    char nm[128];
    if ((size_t)snprintf(nm, sizeof nm, "%s/float32", name) >= sizeof nm)
        return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: graph output name '%.40s...' is too long", name);
    return pdnn_graph_cast(g, nm, device, *y, PDNN_FLOAT32, y);
}
