/* libFuzzer target for the IDX data-set reader (tools/idx.c): each input
 * is read as an image file and as a label file, plain or gzip'd as its
 * first bytes say. Beyond the sanitizers' checks: a refusal leaves nothing
 * behind and says why; a success holds what its header declares. The
 * reader takes a path, so the input goes through one memfd, named by its
 * /proc/self/fd entry (a regular file, as the reader requires). Built and
 * run by tests/fuzz/run-fuzz-idx.sh from tests/fuzz/idx-corpus. */
#define _GNU_SOURCE
#include "tools/idx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz-idx", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();
    char err[512];
    idx_images im;
    pdnn_status st = idx_read_images(path, PDNN_NCHW, &im, err, sizeof err);
    if (st != PDNN_SUCCESS) {
        if (im.data || im.count || !err[0])
            abort();
    } else {
        if (im.count < 0 || im.rows < 0 || im.cols < 0 || (im.count * im.rows * im.cols > 0 && !im.data))
            abort();
        for (int64_t i = 0; i < im.count * im.rows * im.cols; i++)
            if (!(im.data[i] >= 0.0f && im.data[i] <= 1.0f))
                abort();
        idx_images_free(&im);
    }
    idx_labels lb;
    st = idx_read_labels(path, 10, &lb, err, sizeof err);
    if (st != PDNN_SUCCESS) {
        if (lb.data || lb.count || !err[0])
            abort();
        return 0;
    }
    for (int64_t i = 0; i < lb.count; i++)
        if (lb.data[i] < 0 || lb.data[i] > 9)
            abort();
    idx_labels_free(&lb);
    return 0;
}
