/* libFuzzer target for the .npy reader (tools/npy.c). Each input goes
 * through both readers: npy_parse on the bytes, and npy_read_stream on
 * an fmemopen stream, which has no file descriptor and so takes the path
 * a pipe takes (size unknown, read as far as the header allows). Beyond
 * the sanitizers' checks, the two must agree: same status, and on
 * success the same shape and the same bytes. Built and run by
 * tests/fuzz/run-fuzz-npy.sh (clang -fsanitize=fuzzer,address,undefined). */
#include "tools/npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char err_a[512], err_b[512];
    npy_array a, b;
    pdnn_status sa = npy_parse(data, size, &a, err_a, sizeof err_a);
    if (sa == PDNN_SUCCESS && a.count > 0 && !a.data)
        abort();
    if (sa != PDNN_SUCCESS && (a.data || !memchr(err_a, '\0', sizeof err_a) || !err_a[0]))
        abort(); /* a refusal leaves nothing behind and says why */
    /* fmemopen refuses a zero-length buffer on some C libraries. */
    unsigned char empty = 0;
    FILE *f = fmemopen(size ? (void *)data : &empty, size ? size : 1, "rb");
    if (!f)
        abort();
    if (!size)
        (void)fgetc(f);
    pdnn_status sb = npy_read_stream(f, "input", &b, err_b, sizeof err_b);
    fclose(f);
    if (sa != sb) {
        fprintf(stderr, "npy_parse: %d (%s)\nnpy_read_stream: %d (%s)\n", sa, sa ? err_a : "ok", sb,
                sb ? err_b : "ok");
        abort();
    }
    if (sa == PDNN_SUCCESS) {
        if (a.ndim != b.ndim || a.count != b.count || memcmp(a.shape, b.shape, sizeof a.shape[0] * (size_t)a.ndim) ||
            (a.count && memcmp(a.data, b.data, (size_t)a.count * 4)))
            abort();
    }
    npy_free(&a);
    npy_free(&b);
    return 0;
}
