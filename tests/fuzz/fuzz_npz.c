/* libFuzzer target for the .npz reader (tools/npz.c, which parses its
 * members with tools/npy.c). Beyond the sanitizers' checks: a refusal
 * leaves nothing behind and says why; a success has named members whose
 * arrays hold their data. Built and run by tests/fuzz/run-fuzz-npz.sh
 * from the seed corpus tests/fuzz/npz-corpus (tests/npz_numpy.py make). */
#include "tools/npz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char err[512];
    npz_archive a;
    pdnn_status st = npz_parse(data, size, "input", &a, err, sizeof err);
    if (st != PDNN_SUCCESS) {
        if (a.count || a.members || !memchr(err, '\0', sizeof err) || !err[0])
            abort();
        return 0;
    }
    for (int i = 0; i < a.count; i++) {
        const npz_member *m = &a.members[i];
        if (!m->name || !m->name[0] || npz_find(&a, m->name) != m || (m->array.count > 0 && !m->array.data))
            abort();
    }
    npz_free(&a);
    /* The reader that knows what it wants (the corpus's numpy files hold
     * weights and bias): a success holds exactly those, within bounds. */
    static const npz_expect want[2] = {{"weights", 4096}, {"bias", 4096}};
    st = npz_parse_expect(data, size, "input", want, 2, "the test", &a, err, sizeof err);
    if (st != PDNN_SUCCESS) {
        if (a.count || a.members || !err[0])
            abort();
        return 0;
    }
    if (a.count != 2 || !npz_find(&a, "weights") || !npz_find(&a, "bias"))
        abort();
    npz_free(&a);
    return 0;
}
