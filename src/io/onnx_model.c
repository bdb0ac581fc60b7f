/* Reading an ONNX model: the file, a check of the protobuf's nesting
 * before protobuf-c unpacks it, and tensors (initializers, Constant
 * values) into host values, external data included. */
/* realpath (confining external data to the model's directory). */
#define _XOPEN_SOURCE 700

#include "io/onnx_internal.h"
#include "core/fileio.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Element count of dims, or -1 when a dim is negative or the product
 * overflows what a tensor may hold. */
static int64_t dims_count(const int64_t *dims, size_t rank)
{
    int64_t c = 1;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] < 0 || (dims[i] > 0 && c > (INT64_MAX / 8) / dims[i]))
            return -1;
        c *= dims[i];
    }
    return c;
}

/* ---- tensors (initializers, Constant) ---- */

/* Reads an external-data tensor's bytes: location confined to im->dir. */
static pdnn_status read_external(importer *im, const Onnx__TensorProto *t, size_t bytes, void **out)
{
    *out = NULL;
    const char *loc = NULL;
    int64_t offset = 0, length = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (!e->key || !e->value)
            continue;
        char *end = NULL;
        if (strcmp(e->key, "location") == 0)
            loc = e->value;
        else if (strcmp(e->key, "offset") == 0 || strcmp(e->key, "length") == 0) {
            errno = 0;
            long long v = strtoll(e->value, &end, 10);
            if (errno || end == e->value || *end || v < 0)
                return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: tensor '%s': bad external %s '%s'",
                                   t->name, e->key, e->value);
            if (e->key[0] == 'o')
                offset = v;
            else
                length = v;
        }
    }
    if (!im->dir)
        return FAIL(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_graph_import_onnx: tensor '%s' has external data but the model was given as a "
                           "buffer without options.base_dir", t->name);
    if (!loc || !loc[0] || loc[0] == '/' || strstr(loc, ".."))
        return FAIL(PDNN_ERR_CORRUPT,
                           "pdnn_graph_import_onnx: tensor '%s': external data location '%s' must be a relative "
                           "path inside the model's directory", t->name, loc ? loc : "(none)");
    if (length >= 0 && (uint64_t)length != bytes)
        return FAIL(PDNN_ERR_CORRUPT,
                           "pdnn_graph_import_onnx: tensor '%s': external length %lld, its dims need %zu bytes",
                           t->name, (long long)length, bytes);
    char path[PATH_MAX], real_dir[PATH_MAX], real_file[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", im->dir, loc) >= (int)sizeof path)
        return FAIL(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_import_onnx: tensor '%s': path too long", t->name);
    if (!realpath(im->dir, real_dir) || !realpath(path, real_file))
        return FAIL(PDNN_ERR_NOT_FOUND, "pdnn_graph_import_onnx: tensor '%s': external data file '%s': %s",
                           t->name, path, strerror(errno));
    size_t dl = strlen(real_dir);
    if (strncmp(real_file, real_dir, dl) != 0 || real_file[dl] != '/')
        return FAIL(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_graph_import_onnx: tensor '%s': external data '%s' leads out of the model's "
                           "directory %s", t->name, loc, real_dir);
    /* Opened without blocking: a FIFO is refused, never waited on. */
    FILE *f = NULL;
    struct stat sb;
    char why[128];
    const int r = pdnn__file_open_read(real_file, &f, &sb, why, sizeof why);
    if (r < 0)
        return FAIL(PDNN_ERR_IO, "pdnn_graph_import_onnx: tensor '%s': external data %s: %s", t->name,
                    real_file, why);
    if (r == 0)
        return FAIL(PDNN_ERR_IO, "pdnn_graph_import_onnx: tensor '%s': cannot open %s: %s", t->name,
                           real_file, strerror(errno));
    pdnn_status st = PDNN_SUCCESS;
    if ((uint64_t)offset > (uint64_t)sb.st_size || (uint64_t)sb.st_size - (uint64_t)offset < bytes)
        st = FAIL(PDNN_ERR_CORRUPT,
                         "pdnn_graph_import_onnx: tensor '%s': %s holds %lld bytes, the tensor needs %zu at "
                         "offset %lld", t->name, real_file, (long long)sb.st_size, bytes, (long long)offset);
    else if (!(*out = malloc(bytes ? bytes : 1)))
        st = FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: tensor '%s': out of host memory (%zu bytes)",
                  t->name, bytes);
    else if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(*out, 1, bytes, f) != bytes)
        st = FAIL(PDNN_ERR_IO, "pdnn_graph_import_onnx: tensor '%s': reading %s failed", t->name, real_file);
    fclose(f);
    if (st != PDNN_SUCCESS) {
        free(*out);
        *out = NULL;
    }
    return st;
}

/* A TensorProto (float or int64) into a host constant value named name. */
/* A bool tensor (raw bytes, or int32_data) as an owned float 0/1 constant. */
static pdnn_status bool_value(importer *im, const Onnx__TensorProto *t, value *v)
{
    const int raw = t->has_raw_data;
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: bool tensor '%s' in external data", v->name);
    if ((raw ? t->raw_data.len : t->n_int32_data) != (size_t)v->count)
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: bool tensor '%s' holds %zu values, its dims need %lld",
                    v->name, raw ? t->raw_data.len : t->n_int32_data, (long long)v->count);
    float *f = malloc((size_t)(v->count ? v->count : 1) * sizeof *f);
    if (!f)
        return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory");
    for (int64_t i = 0; i < v->count; i++)
        f[i] = (raw ? t->raw_data.data[i] : t->int32_data[i]) != 0;
    v->data = f;
    pdnn_status st = pdnn__onnx_add_value(im, v);
    if (st != PDNN_SUCCESS)
        free(f);
    return st;
}

pdnn_status pdnn__onnx_tensor_value(importer *im, const Onnx__TensorProto *t, const char *name)
{
    value v = {.name = name, .node = -1};
    if (!name || !name[0])
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: a tensor has no name");
    if (t->n_dims > 8)
        return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: tensor '%s' has rank %zu (at most 8)",
                           name, t->n_dims);
    v.rank = (int)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++)
        v.dims[i] = t->dims[i];
    v.count = dims_count(v.dims, t->n_dims);
    if (v.count < 0)
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: tensor '%s': dims are negative or overflow",
                           name);
    int dt = t->has_data_type ? t->data_type : 0;
    if (dt == ONNX_BOOL) /* a Where's mask: floats 0 and 1 */
        return bool_value(im, t, &v);
    if (pdnn__onnx_reduced_type(dt) != PDNN_FLOAT32) { /* widened (exact); the policy computes reduced */
        pdnn_status st = pdnn__onnx_saw_reduced(im, pdnn__onnx_reduced_type(dt), name);
        if (st == PDNN_SUCCESS && !(t->has_data_location && t->data_location ==
                                    ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
            st = pdnn__onnx_widen(t, name, v.count, &v.data);
        else if (st == PDNN_SUCCESS)
            st = FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: tensor '%s': external float16 data is not "
                      "supported", name);
        if (st == PDNN_SUCCESS && (st = pdnn__onnx_add_value(im, &v)) != PDNN_SUCCESS)
            free(v.data);
        return st;
    }
    if (dt != ONNX_FLOAT && dt != ONNX_INT64)
        return FAIL(PDNN_ERR_UNSUPPORTED,
                           "pdnn_graph_import_onnx: tensor '%s' has ONNX data type %d; only float (1) and int64 "
                           "(7) are supported", name, dt);
    size_t esz = dt == ONNX_FLOAT ? 4 : 8;
    size_t bytes = (size_t)v.count * esz;
    int external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const void *src = NULL;
    /* Sizes are checked before allocating, so a file cannot make us
     * allocate what it does not hold (external data: read_external). */
    if (external) {
    } else if (t->has_raw_data) {
        if (t->raw_data.len != bytes)
            return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: tensor '%s': raw_data holds %zu bytes, its "
                        "dims need %zu", name, t->raw_data.len, bytes);
        src = t->raw_data.data; /* little-endian, as ONNX stores it */
    } else if (dt == ONNX_FLOAT) {
        if (t->n_float_data != (size_t)v.count)
            return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: tensor '%s': %zu floats, its dims need %lld",
                        name, t->n_float_data, (long long)v.count);
        src = t->float_data;
    } else {
        if (t->n_int64_data != (size_t)v.count)
            return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: tensor '%s': %zu int64s, its dims need %lld",
                        name, t->n_int64_data, (long long)v.count);
        src = t->int64_data;
    }
    void *buf = NULL;
    pdnn_status st = PDNN_SUCCESS;
    if (external) {
        st = read_external(im, t, bytes, &buf);
    } else {
        /* The parsed model outlives the values and nothing writes them:
         * read its bytes in place (protobuf-c allocates each field apart,
         * aligned for any type), one copy of the weights less. */
        static int64_t empty[1]; /* a zero-sized tensor's data: not NULL, never read */
        buf = bytes ? (void *)src : (void *)empty;
        v.alias = 1;
    }
    if (st == PDNN_SUCCESS) {
        if (dt == ONNX_FLOAT)
            v.data = buf;
        else
            v.i64 = buf;
        st = pdnn__onnx_add_value(im, &v);
    }
    if (st != PDNN_SUCCESS && !v.alias)
        free(buf);
    return st;
}

pdnn_status pdnn__onnx_read_file(const char *path, uint8_t **buf, size_t *len)
{
    /* Opened without blocking: a FIFO is refused, never waited on. */
    FILE *f = NULL;
    struct stat sb;
    char why[128];
    const int r = pdnn__file_open_read(path, &f, &sb, why, sizeof why);
    if (r < 0)
        return FAIL(PDNN_ERR_IO, "pdnn_graph_import_onnx: %s: %s", path, why);
    if (r == 0)
        return FAIL(errno == ENOENT ? PDNN_ERR_NOT_FOUND : PDNN_ERR_IO,
                           "pdnn_graph_import_onnx: cannot open %s: %s", path, strerror(errno));
    if ((uint64_t)sb.st_size > MAX_MODEL_BYTES) {
        fclose(f);
        return FAIL(PDNN_ERR_UNSUPPORTED, "pdnn_graph_import_onnx: %s is larger than 2 GiB (weights over "
                           "2 GiB go in external data)", path);
    }
    *len = (size_t)sb.st_size;
    *buf = malloc(*len ? *len : 1);
    if (!*buf) {
        fclose(f);
        return FAIL(PDNN_ERR_OUT_OF_MEMORY, "pdnn_graph_import_onnx: out of host memory reading %s", path);
    }
    size_t got = fread(*buf, 1, *len, f);
    fclose(f);
    if (got != *len) {
        free(*buf);
        *buf = NULL;
        return FAIL(PDNN_ERR_IO, "pdnn_graph_import_onnx: reading %s failed", path);
    }
    return PDNN_SUCCESS;
}

/* Protobuf-c's unpack recurses once per nested message; ONNX nests graphs
 * in attributes and types in types, so a small hostile file could exhaust
 * the stack. This walks the wire format first, guided by the generated
 * descriptors, and refuses nesting deeper than MAX_DEPTH or a field that
 * runs past its message. */

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return 0;
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 1;
    }
    return 0;
}

int pdnn__onnx_nesting_ok(const ProtobufCMessageDescriptor *desc, const uint8_t *p, const uint8_t *end, int depth)
{
    if (depth > MAX_DEPTH)
        return 0;
    while (p < end) {
        uint64_t key, len;
        if (!read_varint(&p, end, &key))
            return 0;
        switch (key & 7) {
        case 0:
            if (!read_varint(&p, end, &len))
                return 0;
            break;
        case 1:
            if (end - p < 8)
                return 0;
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return 0;
            p += 4;
            break;
        case 2: {
            if (!read_varint(&p, end, &len) || len > (uint64_t)(end - p))
                return 0;
            uint64_t num = key >> 3;
            const ProtobufCFieldDescriptor *f =
                desc && num <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(desc, (unsigned)num) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && !pdnn__onnx_nesting_ok(f->descriptor, p, p + len, depth + 1))
                return 0;
            p += len;
            break;
        }
        default: /* groups: not in ONNX */
            return 0;
        }
    }
    return 1;
}
