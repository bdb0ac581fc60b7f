/* libFuzzer target of the ONNX importer (src/io/onnx_import.c): any bytes
 * given as a model buffer are either imported into a graph whose inputs
 * and outputs are nodes of it, or refused with an error; never a crash, a
 * hang, a leak or an allocation beyond the fuzzer's limit. Built and run
 * by tests/fuzz/run-fuzz-onnx.sh against a configured, built tree. */
#include "polydnn.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pdnn_onnx_options o;
    pdnn_onnx_options_init(&o);
    /* The first byte picks a batch override for half the inputs, so the
     * shape inference runs with the file's dims and with others. */
    if (size > 0 && (data[0] & 1))
        o.batch = 1 + (data[0] >> 1);
    pdnn_graph *g = NULL;
    pdnn_onnx_io io;
    if (pdnn_graph_import_onnx(NULL, data, size, &o, &g, &io) != PDNN_SUCCESS)
        return 0;
    const int n = pdnn_graph_node_count(g);
    for (int i = 0; i < io.n_inputs; i++)
        if (io.inputs[i] < 0 || io.inputs[i] >= n)
            abort();
    for (int i = 0; i < io.n_outputs; i++)
        if (io.outputs[i] < 0 || io.outputs[i] >= n)
            abort();
    pdnn_graph_destroy(g);
    return 0;
}
