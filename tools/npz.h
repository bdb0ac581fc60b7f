/* .npz checkpoints: a ZIP archive of float32 .npy members, one per named
 * array (NAME.npy), which numpy.load (and so PyTorch, through
 * torch.from_numpy) reads without polydnn.
 *
 * Size limits: no ZIP64. The writer refuses an archive whose members or
 * total size reach 4 GiB (0xFFFFFFFF bytes) or that has more than 65534
 * members; the reader refuses a ZIP64 end record (numpy writes one only
 * past those limits) but accepts the ZIP64 extra field numpy.savez puts in
 * every local header (force_zip64) when its sizes agree with the central
 * directory. */
#ifndef POLYDNN_NPZ_H
#define POLYDNN_NPZ_H

#include "npy.h"

#include <stddef.h>
#include <stdint.h>

/* The longest member name, without ".npy". */
#define NPZ_MAX_NAME 255
/* What the reader reads at most: the whole archive is held in memory. */
#define NPZ_MAX_FILE_BYTES ((uint64_t)0xFFFFFFFFu)

typedef struct npz_entry {
    const char *name; /* the array's name: [A-Za-z0-9_.-], 1..NPZ_MAX_NAME bytes, unique */
    int ndim;
    const int64_t *shape;
    const float *data;
} npz_entry;

typedef struct npz_member {
    char *name; /* without ".npy" */
    npy_array array;
} npz_member;

typedef struct npz_archive {
    int count;
    npz_member *members; /* in archive order */
} npz_archive;

/* Writes the entries as NAME.npy members, deflate-compressed (zlib, raw
 * deflate), each with its CRC-32, then the central directory and the end
 * record; member times are fixed (1980-01-01), so equal arrays give equal
 * files. Through pdnn__file_replace_named (src/core/fileio.c), as
 * npy_write: a temporary file in path's directory, flushed, fsync'd,
 * renamed; on failure a file already at path is unchanged. */
pdnn_status npz_write(const char *path, int count, const npz_entry *entries, char *err, size_t errlen);

/* Reads a whole archive strictly: the end record (one disk, counts agree,
 * the central directory exactly before it), each central entry and its
 * local header (signatures, method stored or deflate, no encryption,
 * names and sizes agreeing, data inside the file), inflates to exactly the
 * declared size, checks the CRC-32, and parses each member with npy_parse
 * (float32, C order). Member names must end in .npy, be unique and hold no
 * '/'. Errors: PDNN_ERR_IO, PDNN_ERR_CORRUPT, PDNN_ERR_OUT_OF_MEMORY, with
 * a message naming path (and the member) and the problem; *out is then
 * empty. */
pdnn_status npz_read(const char *path, npz_archive *out, char *err, size_t errlen);

/* npz_read on an in-memory archive of len bytes; name is used in messages. */
pdnn_status npz_parse(const unsigned char *buf, size_t len, const char *name, npz_archive *out, char *err,
                      size_t errlen);

/* What a reader expects of one member: its name (without ".npy") and the
 * most bytes its array's data may take; the member's declared size may
 * pass that by at most NPZ_HEADER_ALLOWANCE (the .npy header). */
typedef struct npz_expect {
    const char *name;
    uint64_t max_bytes;
} npz_expect;

/* numpy writes headers of at most 64 KiB (format 1.0's 16-bit length). */
#define NPZ_HEADER_ALLOWANCE ((uint64_t)65536 + 16)

/* npz_read for a reader that knows what it wants (a checkpoint of a given
 * model): before any member is inflated, the central directory is walked
 * and every name checked against want (an unknown name, a repeated one or
 * a missing one is refused: "no array 'X'", "array 'X' is not in WHAT"),
 * and each declared size against its max_bytes, so that a hostile archive
 * costs at most what the wanted arrays need. what names the wanted set in
 * messages ("this model"). */
pdnn_status npz_read_expect(const char *path, const npz_expect *want, int n_want, const char *what,
                            npz_archive *out, char *err, size_t errlen);

/* npz_read_expect on an in-memory archive. */
pdnn_status npz_parse_expect(const unsigned char *buf, size_t len, const char *name, const npz_expect *want,
                             int n_want, const char *what, npz_archive *out, char *err, size_t errlen);

/* The member called name (without ".npy"), or NULL. */
const npz_member *npz_find(const npz_archive *a, const char *name);

void npz_free(npz_archive *a);

#endif
