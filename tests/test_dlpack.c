/* DLPack export and import: layouts and strides, zero copy on the host and
 * on OpenCL, ownership in every order, version and flag handling, bad
 * input, and our struct layout against Debian's dlpack.h. */
#include "helpers.h"
#include "polydnn_dlpack.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* From dlpack_abi.c, compiled against Debian's <dlpack/dlpack.h> when it
 * is installed: offsets and sizes of its legacy structs, or 0 if absent. */
int dlabi_available(void);
size_t dlabi_value(const char *what);

static pdnn_device *host_of(pdnn_context *ctx)
{
    pdnn_device *d = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &d), PDNN_SUCCESS);
    return d;
}

/* A foreign tensor: host floats plus a managed struct whose deleter counts
 * its calls. */
typedef struct foreign {
    DLManagedTensorVersioned v;
    DLManagedTensor l;
    int64_t shape[8], strides[8];
    float *data;
    int deleted;
} foreign;

static void count_v(DLManagedTensorVersioned *self) { ((foreign *)self->manager_ctx)->deleted++; }
static void count_l(DLManagedTensor *self) { ((foreign *)self->manager_ctx)->deleted++; }

/* Fills f with a host tensor of logical dims d laid out as l. */
static void foreign_init(foreign *f, pdnn_layout l, int64_t n, int64_t c, int64_t h, int64_t w)
{
    memset(f, 0, sizeof *f);
    int64_t d[4] = {n, c, h, w};
    memcpy(f->shape, d, sizeof d);
    int64_t st[4];
    /* Strides written out independently of the library's helper. */
    if (l == PDNN_NHWC) {
        st[0] = h * w * c; st[1] = 1; st[2] = w * c; st[3] = c;
    } else {
        st[0] = c * h * w; st[1] = h * w; st[2] = w; st[3] = 1;
    }
    memcpy(f->strides, st, sizeof st);
    f->data = malloc(sizeof(float) * (size_t)(n * c * h * w));
    cr_assert_not_null(f->data);
    th_fill(f->data, n * c * h * w, 7);
    DLTensor t = {f->data, {kDLCPU, 0}, 4, {kDLFloat, 32, 1}, f->shape, f->strides, 0};
    f->v.version.major = 1;
    f->v.version.minor = 1;
    f->v.manager_ctx = f;
    f->v.deleter = count_v;
    f->v.dl_tensor = t;
    f->l.manager_ctx = f;
    f->l.deleter = count_l;
    f->l.dl_tensor = t;
}

Test(dlpack, export_host_shapes_strides_and_shared_data)
{
    pdnn_context *ctx = th_context();
    pdnn_device *h = host_of(ctx);
    const pdnn_layout layouts[] = {PDNN_NCHW, PDNN_NHWC, PDNN_OIHW, PDNN_OHWI, PDNN_HWIO};
    const int64_t want[5][4] = {{60, 20, 5, 1}, {60, 1, 15, 3}, {60, 20, 5, 1}, {60, 1, 15, 3}, {1, 2, 30, 6}};
    for (int li = 0; li < 5; li++) {
        pdnn_tensor_desc d = th_desc(layouts[li], 2, 3, 4, 5);
        float v[120];
        th_fill(v, 120, (uint32_t)li);
        pdnn_tensor *t = th_upload(h, &d, v);
        DLManagedTensorVersioned *m = NULL;
        cr_assert_eq(pdnn_tensor_to_dlpack_versioned(t, &m), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(m->version.major, 1);
        cr_assert_eq(m->version.minor, 1);
        cr_assert_eq(m->flags, 0);
        cr_assert_eq(m->dl_tensor.device.device_type, kDLCPU);
        cr_assert_eq(m->dl_tensor.device.device_id, 0);
        cr_assert_eq(m->dl_tensor.ndim, 4);
        cr_assert_eq(m->dl_tensor.dtype.code, kDLFloat);
        cr_assert_eq(m->dl_tensor.dtype.bits, 32);
        cr_assert_eq(m->dl_tensor.dtype.lanes, 1);
        cr_assert_eq(m->dl_tensor.byte_offset, 0);
        for (int i = 0; i < 4; i++) {
            cr_assert_eq(m->dl_tensor.shape[i], d.dims[i]);
            cr_assert_eq(m->dl_tensor.strides[i], want[li][i], "%s stride %d: %lld", pdnn_layout_name(layouts[li]),
                         i, (long long)m->dl_tensor.strides[i]);
        }
        cr_assert_eq(memcmp(m->dl_tensor.data, v, sizeof v), 0, "the export is the tensor's memory");
        ((float *)m->dl_tensor.data)[7] = 42.0f; /* shared, not copied */
        float *back = th_download(t);
        cr_assert_eq(back[7], 42.0f);
        free(back);
        pdnn_tensor_release(t);
        m->deleter(m);
    }
    pdnn_tensor_desc x = th_desc(PDNN_LAYOUT_X, 9, 1, 1, 1);
    pdnn_tensor *b = th_upload(h, &x, NULL);
    DLManagedTensor *l = NULL;
    cr_assert_eq(pdnn_tensor_to_dlpack(b, &l), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(l->dl_tensor.ndim, 1);
    cr_assert_eq(l->dl_tensor.shape[0], 9);
    cr_assert_eq(l->dl_tensor.strides[0], 1);
    l->deleter(l);
    pdnn_tensor_release(b);
    pdnn_memory_stats s;
    cr_assert_eq(pdnn_device_get_memory_stats(h, &s), PDNN_SUCCESS);
    cr_assert_eq(s.bytes_in_use, 0, "every export returned its memory");
    pdnn_context_destroy(ctx);
}

/* int32 (labels) goes both ways as {kDLInt, 32, 1}, and the ops that
 * take float32 refuse it. */
Test(dlpack, int32_round_trip_and_float_ops_refuse_it)
{
    pdnn_context *ctx = th_context();
    pdnn_device *h = host_of(ctx);
    pdnn_tensor_desc d = th_desc(PDNN_LAYOUT_X, 5, 1, 1, 1);
    d.dtype = PDNN_INT32;
    const int32_t v[5] = {3, -1, 0, 2147483647, 9};
    pdnn_tensor *t = NULL;
    cr_assert_eq(pdnn_tensor_create(h, &d, &t), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_tensor_write(t, v, sizeof v), PDNN_SUCCESS, "%s", pdnn_last_error());
    DLManagedTensor *m = NULL;
    cr_assert_eq(pdnn_tensor_to_dlpack(t, &m), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(m->dl_tensor.dtype.code, kDLInt);
    cr_assert_eq(m->dl_tensor.dtype.bits, 32);
    cr_assert_eq(memcmp(m->dl_tensor.data, v, sizeof v), 0);
    pdnn_tensor *back = NULL;
    cr_assert_eq(pdnn_tensor_from_dlpack(ctx, m, PDNN_DLPACK_ACTIVATION, &back), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    pdnn_tensor_desc bd;
    cr_assert_eq(pdnn_tensor_get_desc(back, &bd), PDNN_SUCCESS);
    cr_assert_eq(bd.dtype, PDNN_INT32);
    cr_assert_eq(bd.dims[0], 5);
    int32_t got[5];
    cr_assert_eq(pdnn_tensor_read(back, got, sizeof got), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(memcmp(got, v, sizeof v), 0);
    /* float32 ops refuse it by name. */
    pdnn_tensor_desc fd = th_desc(PDNN_LAYOUT_X, 5, 1, 1, 1);
    pdnn_tensor *f = th_upload(h, &fd, NULL);
    cr_assert_eq(pdnn_relu(t, f), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "x is not float32"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_add(f, t, f), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "b is not float32"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_relu_backward(f, t, f), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "dy is not float32"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_conv2d_backward_bias(f, t), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "db is not float32"), "%s", pdnn_last_error());
    pdnn_tensor_desc id4 = th_desc(PDNN_NCHW, 1, 1, 4, 4), fd4 = th_desc(PDNN_NCHW, 1, 1, 2, 2);
    id4.dtype = PDNN_INT32;
    pdnn_tensor *i4 = th_upload(h, &id4, NULL), *y4 = th_upload(h, &fd4, NULL);
    pdnn_pool2d_params pp;
    pdnn_pool2d_params_init(&pp);
    pp.window_h = pp.window_w = pp.stride_h = pp.stride_w = 2;
    cr_assert_eq(pdnn_pool2d_forward(&pp, i4, y4), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "input is not float32"), "%s", pdnn_last_error());
    pdnn_tensor_release(i4);
    pdnn_tensor_release(y4);
    pdnn_tensor_release(back);
    pdnn_tensor_release(t);
    pdnn_tensor_release(f);
    pdnn_context_destroy(ctx);
}

Test(dlpack, import_host_zero_copy_both_layouts_and_conv_matches)
{
    pdnn_context *ctx = th_context();
    pdnn_device *h = host_of(ctx);
    for (int li = 0; li < 2; li++) {
        pdnn_layout l = li ? PDNN_NHWC : PDNN_NCHW;
        foreign fx, fw;
        foreign_init(&fx, l, 2, 3, 6, 7);
        foreign_init(&fw, PDNN_NCHW, 4, 3, 3, 3); /* OIHW strides */
        pdnn_tensor *x = NULL, *w = NULL;
        cr_assert_eq(pdnn_tensor_from_dlpack_versioned(ctx, &fx.v, PDNN_DLPACK_ACTIVATION, &x), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        cr_assert_eq(pdnn_tensor_from_dlpack(ctx, &fw.l, PDNN_DLPACK_FILTER, &w), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        pdnn_tensor_desc dx, dw;
        cr_assert_eq(pdnn_tensor_get_desc(x, &dx), PDNN_SUCCESS);
        cr_assert_eq(pdnn_tensor_get_desc(w, &dw), PDNN_SUCCESS);
        cr_assert_eq(dx.layout, l, "strides decide the layout");
        cr_assert_eq(dw.layout, PDNN_OIHW);
        cr_assert_eq(pdnn_tensor_device(x), h);

        /* Zero copy: exporting the import gives the producer's pointer, and
         * a write through polydnn lands in the producer's array. */
        DLManagedTensorVersioned *again = NULL;
        cr_assert_eq(pdnn_tensor_to_dlpack_versioned(x, &again), PDNN_SUCCESS);
        cr_assert_eq(again->dl_tensor.data, (void *)fx.data);
        again->deleter(again);
        float probe[2 * 3 * 6 * 7];
        memcpy(probe, fx.data, sizeof probe);
        probe[5] = -3.5f;
        cr_assert_eq(pdnn_tensor_write(x, probe, sizeof probe), PDNN_SUCCESS);
        cr_assert_eq(fx.data[5], -3.5f);

        /* The same conv on uploaded copies gives the same numbers. */
        pdnn_tensor *xc = th_upload(h, &dx, fx.data), *wc = th_upload(h, &dw, fw.data);
        pdnn_conv2d_params p;
        pdnn_conv2d_params_init(&p);
        p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
        int64_t od[4];
        cr_assert_eq(pdnn_conv2d_output_dims(&dx, &dw, &p, od), PDNN_SUCCESS);
        pdnn_tensor_desc dy = th_desc(l, od[0], od[1], od[2], od[3]);
        pdnn_tensor *y1 = th_upload(h, &dy, NULL), *y2 = th_upload(h, &dy, NULL);
        cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y1), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_conv2d_forward(&p, xc, wc, NULL, y2), PDNN_SUCCESS, "%s", pdnn_last_error());
        float *a = th_download(y1), *b = th_download(y2);
        for (int64_t i = 0; i < od[0] * od[1] * od[2] * od[3]; i++)
            cr_assert_eq(a[i], b[i], "element %lld", (long long)i);
        free(a);
        free(b);
        pdnn_tensor_release(y1);
        pdnn_tensor_release(y2);
        pdnn_tensor_release(xc);
        pdnn_tensor_release(wc);

        cr_assert_eq(fx.deleted, 0);
        pdnn_tensor_release(x);
        cr_assert_eq(fx.deleted, 1, "releasing the import calls the producer's deleter once");
        pdnn_tensor_release(w);
        cr_assert_eq(fw.deleted, 1);
        free(fx.data);
        free(fw.data);
    }
    pdnn_context_destroy(ctx);
}

Test(dlpack, export_outlives_tensor_and_context_in_any_order)
{
    for (int order = 0; order < 3; order++) {
        pdnn_context *ctx = th_context();
        pdnn_device *h = host_of(ctx);
        pdnn_tensor_desc d = th_desc(PDNN_NCHW, 1, 2, 3, 4);
        float v[24];
        th_fill(v, 24, 3);
        pdnn_tensor *t = th_upload(h, &d, v);
        DLManagedTensor *m = NULL;
        cr_assert_eq(pdnn_tensor_to_dlpack(t, &m), PDNN_SUCCESS);
        if (order == 0) { /* deleter first */
            m->deleter(m);
            pdnn_memory_stats s;
            cr_assert_eq(pdnn_device_get_memory_stats(h, &s), PDNN_SUCCESS);
            cr_assert_gt(s.bytes_in_use, 0, "the tensor still holds its memory");
            pdnn_tensor_release(t);
            cr_assert_eq(pdnn_device_get_memory_stats(h, &s), PDNN_SUCCESS);
            cr_assert_eq(s.bytes_in_use, 0);
            pdnn_context_destroy(ctx);
        } else if (order == 1) { /* release first: the export keeps the data */
            pdnn_tensor_release(t);
            pdnn_memory_stats s;
            cr_assert_eq(pdnn_device_get_memory_stats(h, &s), PDNN_SUCCESS);
            cr_assert_gt(s.bytes_in_use, 0);
            cr_assert_eq(memcmp(m->dl_tensor.data, v, sizeof v), 0);
            m->deleter(m);
            cr_assert_eq(pdnn_device_get_memory_stats(h, &s), PDNN_SUCCESS);
            cr_assert_eq(s.bytes_in_use, 0);
            pdnn_context_destroy(ctx);
        } else { /* tensor and context gone, the consumer still reads */
            pdnn_tensor_release(t);
            pdnn_context_destroy(ctx);
            cr_assert_eq(memcmp(m->dl_tensor.data, v, sizeof v), 0);
            m->deleter(m); /* frees the context (ASan/valgrind check this) */
        }
    }
}

Test(dlpack, versions_flags_and_ownership_on_failure)
{
    pdnn_context *ctx = th_context();
    foreign f;
    foreign_init(&f, PDNN_NCHW, 1, 1, 2, 2);
    pdnn_tensor *t = NULL;
    f.v.version.major = 2;
    cr_assert_eq(pdnn_tensor_from_dlpack_versioned(ctx, &f.v, PDNN_DLPACK_ACTIVATION, &t), PDNN_ERR_UNSUPPORTED);
    cr_assert_null(t);
    cr_assert_not_null(strstr(pdnn_last_error(), "major version 2"), "%s", pdnn_last_error());
    cr_assert_eq(f.deleted, 1, "a major-version mismatch calls the deleter, once");

    f.deleted = 0;
    f.v.version.major = 1;
    f.v.version.minor = 7; /* a newer minor is fine */
    f.v.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    cr_assert_eq(pdnn_tensor_from_dlpack_versioned(ctx, &f.v, PDNN_DLPACK_ACTIVATION, &t), PDNN_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(pdnn_last_error(), "read-only"), "%s", pdnn_last_error());
    cr_assert_eq(f.deleted, 0, "other failures leave ownership with the caller");

    f.v.flags = DLPACK_FLAG_BITMASK_IS_COPIED;
    cr_assert_eq(pdnn_tensor_from_dlpack_versioned(ctx, &f.v, PDNN_DLPACK_ACTIVATION, &t), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    pdnn_tensor_release(t);
    cr_assert_eq(f.deleted, 1);
    free(f.data);
    pdnn_context_destroy(ctx);
}

static void expect_fail(pdnn_context *ctx, foreign *f, pdnn_dlpack_role role, pdnn_status want, const char *needle)
{
    pdnn_tensor *t = (pdnn_tensor *)f; /* must be reset to NULL */
    pdnn_status st = pdnn_tensor_from_dlpack(ctx, &f->l, role, &t);
    cr_assert_eq(st, want, "want %s, got %s: %s", pdnn_status_string(want), pdnn_status_string(st),
                 pdnn_last_error());
    cr_assert_null(t);
    cr_assert_not_null(strstr(pdnn_last_error(), needle), "message lacks \"%s\": %s", needle, pdnn_last_error());
    cr_assert_eq(f->deleted, 0);
}

Test(dlpack, bad_input_is_refused_with_a_message)
{
    pdnn_context *ctx = th_context();
    foreign f;
    foreign_init(&f, PDNN_NCHW, 2, 3, 4, 5);
    pdnn_tensor *t = NULL;
    cr_assert_eq(pdnn_tensor_from_dlpack(NULL, &f.l, PDNN_DLPACK_ACTIVATION, &t), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_tensor_from_dlpack(ctx, NULL, PDNN_DLPACK_ACTIVATION, &t), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_tensor_from_dlpack(ctx, &f.l, PDNN_DLPACK_ACTIVATION, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_tensor_from_dlpack_versioned(ctx, NULL, PDNN_DLPACK_ACTIVATION, &t),
                 PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_tensor_to_dlpack(NULL, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_tensor_to_dlpack_versioned(NULL, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_device_to_dlpack(NULL, NULL), PDNN_ERR_INVALID_ARGUMENT);

    DLTensor keep = f.l.dl_tensor;
    f.l.dl_tensor.device.device_type = (DLDeviceType)99;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "device type 99");
    f.l.dl_tensor.device.device_type = kDLVulkan;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "kDLVulkan");
    f.l.dl_tensor.device.device_type = kDLOpenCL;
    f.l.dl_tensor.device.device_id = 57;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_NOT_FOUND, "no device {kDLOpenCL, 57}");
    f.l.dl_tensor.device.device_type = kDLCUDA;
    f.l.dl_tensor.device.device_id = 0;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_NOT_FOUND, "no device {kDLCUDA, 0}");
    f.l.dl_tensor = keep;
    f.l.dl_tensor.device.device_id = 1; /* there is one host */
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_NOT_FOUND, "{kDLCPU, 1}");
    f.l.dl_tensor = keep;

    f.l.dl_tensor.dtype = (DLDataType){kDLFloat, 16, 2}; /* float16 itself: test_precision.c */
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "code 2, bits 16, lanes 2");
    f.l.dl_tensor.dtype = (DLDataType){kDLBfloat, 32, 1};
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "bfloat16 ({kDLBfloat, 16, 1})");
    f.l.dl_tensor.dtype = (DLDataType){kDLInt, 16, 1};
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "code 0, bits 16");
    f.l.dl_tensor.dtype = (DLDataType){kDLInt, 32, 2};
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "code 0, bits 32, lanes 2");
    f.l.dl_tensor.dtype = (DLDataType){kDLFloat, 32, 4};
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "lanes 4");
    f.l.dl_tensor.dtype = keep.dtype;

    f.l.dl_tensor.ndim = 9;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "9-D");
    /* {2,3,4} with strides {60,20,5}: not compact, named. */
    f.l.dl_tensor.ndim = 3;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "strides [60,20,5] of shape [2,3,4]");
    f.l.dl_tensor.ndim = 4;
    f.shape[2] = 0;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "zero-size");
    f.shape[2] = -4;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_INVALID_ARGUMENT, "negative");
    f.shape[2] = INT64_MAX / 8;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_INVALID_ARGUMENT, "64 bits");
    f.shape[2] = 4;
    f.l.dl_tensor.shape = NULL;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_INVALID_ARGUMENT, "shape is NULL");
    f.l.dl_tensor.shape = f.shape;
    f.l.dl_tensor.data = NULL;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_INVALID_ARGUMENT, "data is NULL for a tensor of 480 bytes");
    f.l.dl_tensor.data = f.data;
    f.l.dl_tensor.byte_offset = 2;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "aligned");
    f.l.dl_tensor.byte_offset = UINT64_MAX - 8;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_INVALID_ARGUMENT, "size_t");
    f.l.dl_tensor.byte_offset = 0;

    /* H and W swapped in memory: neither NCHW nor NHWC. */
    int64_t tr[4] = {60, 20, 1, 4};
    f.l.dl_tensor.strides = tr;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "describe none of NCHW, NHWC");
    expect_fail(ctx, &f, PDNN_DLPACK_FILTER, PDNN_ERR_UNSUPPORTED, "OIHW, OHWI, HWIO");
    f.l.dl_tensor.strides = f.strides;
    expect_fail(ctx, &f, (pdnn_dlpack_role)5, PDNN_ERR_INVALID_ARGUMENT, "role 5");

    /* NULL strides are compact row-major, and strides of size-1 dims are
     * not checked (PyTorch leaves them loose). */
    f.l.dl_tensor.strides = NULL;
    cr_assert_eq(pdnn_tensor_from_dlpack(ctx, &f.l, PDNN_DLPACK_ACTIVATION, &t), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    pdnn_tensor_release(t);
    cr_assert_eq(f.deleted, 1);
    f.deleted = 0;
    f.shape[0] = 1;
    int64_t loose[4] = {999, 20, 5, 1};
    f.l.dl_tensor.strides = loose;
    cr_assert_eq(pdnn_tensor_from_dlpack(ctx, &f.l, PDNN_DLPACK_ACTIVATION, &t), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    pdnn_tensor_release(t);

    /* A 1-D import is a layout-X vector (a bias). */
    f.l.dl_tensor.ndim = 1;
    f.shape[0] = 5;
    int64_t one = 1;
    f.l.dl_tensor.strides = &one;
    cr_assert_eq(pdnn_tensor_from_dlpack(ctx, &f.l, PDNN_DLPACK_ACTIVATION, &t), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    pdnn_tensor_desc d;
    cr_assert_eq(pdnn_tensor_get_desc(t, &d), PDNN_SUCCESS);
    cr_assert_eq(d.layout, PDNN_LAYOUT_X);
    cr_assert_eq(d.dims[0], 5);
    pdnn_tensor_release(t);
    int64_t two = 2;
    f.l.dl_tensor.strides = &two;
    f.deleted = 0;
    expect_fail(ctx, &f, PDNN_DLPACK_ACTIVATION, PDNN_ERR_UNSUPPORTED, "not compact");
    free(f.data);
    pdnn_context_destroy(ctx);
}

Test(dlpack, opencl_round_trip_keeps_the_cl_mem_and_offset)
{
    pdnn_device *devs[8];
    int n = 0;
    pdnn_context *ctx = th_accel_context(devs, &n);
    for (int i = 0; i < n; i++) {
        pdnn_device_info info;
        cr_assert_eq(pdnn_device_get_info(devs[i], &info), PDNN_SUCCESS);
        if (strcmp(info.backend, "opencl") != 0)
            continue;
        DLDevice dd;
        cr_assert_eq(pdnn_device_to_dlpack(devs[i], &dd), PDNN_SUCCESS);
        cr_assert_eq(dd.device_type, kDLOpenCL);
        /* A first tensor pushes the second one to a non-zero offset. */
        pdnn_tensor_desc dpad = th_desc(PDNN_NCHW, 1, 1, 1, 100);
        pdnn_tensor *pad = th_upload(devs[i], &dpad, NULL);
        pdnn_tensor_desc dx = th_desc(PDNN_NHWC, 2, 5, 9, 9), dw = th_desc(PDNN_OIHW, 6, 5, 3, 3);
        float xv[2 * 5 * 81], wv[6 * 5 * 9];
        th_fill(xv, 2 * 5 * 81, 11);
        th_fill(wv, 6 * 5 * 9, 12);
        pdnn_tensor *x = th_upload(devs[i], &dx, xv), *w = th_upload(devs[i], &dw, wv);
        DLManagedTensorVersioned *m = NULL;
        cr_assert_eq(pdnn_tensor_to_dlpack_versioned(x, &m), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(m->dl_tensor.device.device_type, kDLOpenCL);
        cr_assert_eq(m->dl_tensor.device.device_id, dd.device_id);
        cr_assert_gt(m->dl_tensor.byte_offset, 0, "the tensor's offset in its cl_mem is byte_offset");
        pdnn_tensor *xi = NULL;
        cr_assert_eq(pdnn_tensor_from_dlpack_versioned(ctx, m, PDNN_DLPACK_ACTIVATION, &xi), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        cr_assert_eq(pdnn_tensor_device(xi), devs[i], "imported back onto the same device");
        pdnn_tensor_release(x); /* the import keeps the memory through the export */
        pdnn_conv2d_params p;
        pdnn_conv2d_params_init(&p);
        int64_t od[4];
        cr_assert_eq(pdnn_conv2d_output_dims(&dx, &dw, &p, od), PDNN_SUCCESS);
        pdnn_tensor_desc dy = th_desc(PDNN_NCHW, od[0], od[1], od[2], od[3]);
        pdnn_tensor *y = th_upload(devs[i], &dy, NULL);
        cr_assert_eq(pdnn_conv2d_forward(&p, xi, w, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
        float *got = th_download(y);
        /* Same conv on the host from the original data. */
        pdnn_device *h = host_of(ctx);
        pdnn_tensor *hx = th_upload(h, &dx, xv), *hw = th_upload(h, &dw, wv), *hy = th_upload(h, &dy, NULL);
        cr_assert_eq(pdnn_conv2d_forward(&p, hx, hw, NULL, hy), PDNN_SUCCESS);
        float *ref = th_download(hy);
        for (int64_t e = 0; e < od[0] * od[1] * od[2] * od[3]; e++)
            cr_assert_float_eq(got[e], ref[e], 1e-4f, "element %lld", (long long)e);
        free(got);
        free(ref);
        pdnn_tensor_release(hx);
        pdnn_tensor_release(hw);
        pdnn_tensor_release(hy);
        pdnn_tensor_release(y);
        pdnn_tensor_release(w);
        pdnn_tensor_release(pad);
        pdnn_tensor_release(xi); /* calls the export's deleter: memory back */
        pdnn_memory_stats s;
        cr_assert_eq(pdnn_device_get_memory_stats(devs[i], &s), PDNN_SUCCESS);
        cr_assert_eq(s.bytes_in_use, 0);

        /* A pointer that is no cl_mem of ours is refused. */
        foreign f;
        foreign_init(&f, PDNN_NCHW, 1, 1, 2, 2);
        f.l.dl_tensor.device = dd;
        pdnn_tensor *bad = NULL;
        cr_assert_neq(pdnn_tensor_from_dlpack(ctx, &f.l, PDNN_DLPACK_ACTIVATION, &bad), PDNN_SUCCESS);
        cr_assert_null(bad);
        cr_assert_not_null(strstr(pdnn_last_error(), "cl_mem"), "%s", pdnn_last_error());
        free(f.data);
    }
    pdnn_context_destroy(ctx);
}

Test(dlpack, legacy_struct_layout_matches_debian_dlpack_h)
{
    if (!dlabi_available())
        cr_skip_test("Debian's <dlpack/dlpack.h> is not installed (apt-get install libdlpack-dev)");
    cr_assert_eq(dlabi_value("sizeof DLTensor"), sizeof(DLTensor));
    cr_assert_eq(dlabi_value("sizeof DLManagedTensor"), sizeof(DLManagedTensor));
    cr_assert_eq(dlabi_value("sizeof DLDevice"), sizeof(DLDevice));
    cr_assert_eq(dlabi_value("sizeof DLDataType"), sizeof(DLDataType));
    cr_assert_eq(dlabi_value("offset data"), offsetof(DLTensor, data));
    cr_assert_eq(dlabi_value("offset device"), offsetof(DLTensor, device));
    cr_assert_eq(dlabi_value("offset ndim"), offsetof(DLTensor, ndim));
    cr_assert_eq(dlabi_value("offset dtype"), offsetof(DLTensor, dtype));
    cr_assert_eq(dlabi_value("offset shape"), offsetof(DLTensor, shape));
    cr_assert_eq(dlabi_value("offset strides"), offsetof(DLTensor, strides));
    cr_assert_eq(dlabi_value("offset byte_offset"), offsetof(DLTensor, byte_offset));
    cr_assert_eq(dlabi_value("offset manager_ctx"), offsetof(DLManagedTensor, manager_ctx));
    cr_assert_eq(dlabi_value("offset deleter"), offsetof(DLManagedTensor, deleter));
    cr_assert_eq(dlabi_value("kDLCPU"), (size_t)kDLCPU);
    cr_assert_eq(dlabi_value("kDLCUDA"), (size_t)kDLCUDA);
    cr_assert_eq(dlabi_value("kDLOpenCL"), (size_t)kDLOpenCL);
    cr_assert_eq(dlabi_value("kDLFloat"), (size_t)kDLFloat);
    /* The versioned struct (absent from 0.6) as DLPack 1.x lays it out. */
    cr_assert_eq(offsetof(DLManagedTensorVersioned, manager_ctx), 8);
    cr_assert_eq(offsetof(DLManagedTensorVersioned, deleter), 16);
    cr_assert_eq(offsetof(DLManagedTensorVersioned, flags), 24);
    cr_assert_eq(offsetof(DLManagedTensorVersioned, dl_tensor), 32);
}

/* The context, a tensor, an import of the tensor's export (whose release
 * deletes that export) and a second export, released in all 24 orders.
 * Whatever is left keeps the device: its memory is accounted until the
 * last of tensor, import and export goes, whether or not the context was
 * destroyed. ASan and valgrind (CI) check the frees themselves. */
Test(dlpack, context_tensor_import_and_export_released_in_every_order)
{
    static const int perms[24][4] = {
        {0, 1, 2, 3}, {0, 1, 3, 2}, {0, 2, 1, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {0, 3, 2, 1},
        {1, 0, 2, 3}, {1, 0, 3, 2}, {1, 2, 0, 3}, {1, 2, 3, 0}, {1, 3, 0, 2}, {1, 3, 2, 0},
        {2, 0, 1, 3}, {2, 0, 3, 1}, {2, 1, 0, 3}, {2, 1, 3, 0}, {2, 3, 0, 1}, {2, 3, 1, 0},
        {3, 0, 1, 2}, {3, 0, 2, 1}, {3, 1, 0, 2}, {3, 1, 2, 0}, {3, 2, 0, 1}, {3, 2, 1, 0}};
    for (int p = 0; p < 24; p++) {
        pdnn_context *ctx = th_context();
        pdnn_device *h = host_of(ctx);
        pdnn_tensor_desc d = th_desc(PDNN_NCHW, 1, 4, 4, 4); /* 256 bytes */
        float v[64];
        th_fill(v, 64, (uint32_t)p);
        pdnn_tensor *t = th_upload(h, &d, v);
        DLManagedTensorVersioned *e1 = NULL;
        DLManagedTensor *e2 = NULL;
        cr_assert_eq(pdnn_tensor_to_dlpack_versioned(t, &e1), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_tensor_to_dlpack(t, &e2), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_tensor *imp = NULL;
        cr_assert_eq(pdnn_tensor_from_dlpack_versioned(ctx, e1, PDNN_DLPACK_ACTIVATION, &imp), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        int holders = 3; /* t, imp, e2 hold the memory; the context holds nothing */
        int destroyed = 0;
        for (int k = 0; k < 4; k++) {
            switch (perms[p][k]) {
            case 0: pdnn_context_destroy(ctx); destroyed = 1; break;
            case 1: pdnn_tensor_release(t); holders--; break;
            case 2: pdnn_tensor_release(imp); holders--; break;
            default:
                cr_assert_eq(memcmp(e2->dl_tensor.data, v, sizeof v), 0, "order %d: the export still reads", p);
                e2->deleter(e2);
                holders--;
            }
            if (holders == 0)
                break; /* the devices may be gone now (the last holder freed them) */
            pdnn_memory_stats s;
            cr_assert_eq(pdnn_device_get_memory_stats(h, &s), PDNN_SUCCESS);
            cr_assert_eq(s.bytes_in_use, sizeof v, "order %d step %d: %llu in use", p, k,
                         (unsigned long long)s.bytes_in_use);
        }
        if (!destroyed) /* last in this order */
            pdnn_context_destroy(ctx);
    }
}

Test(dlpack, export_to_a_null_out_is_refused)
{
    pdnn_context *ctx = th_context();
    pdnn_device *h = host_of(ctx);
    pdnn_tensor_desc d = th_desc(PDNN_NCHW, 1, 1, 2, 2);
    pdnn_tensor *t = th_upload(h, &d, NULL);
    cr_assert_eq(pdnn_tensor_to_dlpack(t, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "pdnn_tensor_to_dlpack: out is NULL"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_tensor_to_dlpack_versioned(t, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "pdnn_tensor_to_dlpack_versioned: out is NULL"), "%s",
                       pdnn_last_error());
    /* Outside Python there is no capsule to make. */
    void *cap = &cap;
    cr_assert_eq(pdnn_tensor_to_dlpack_capsule(t, 1, &cap), PDNN_ERR_UNSUPPORTED);
    cr_assert_null(cap);
    cr_assert_not_null(strstr(pdnn_last_error(), "no Python interpreter"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_tensor_to_dlpack_capsule(t, 0, NULL), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_tensor_release(t);
    pdnn_memory_stats s;
    cr_assert_eq(pdnn_device_get_memory_stats(h, &s), PDNN_SUCCESS);
    cr_assert_eq(s.bytes_in_use, 0, "no refused export kept the tensor");
    pdnn_context_destroy(ctx);
}

/* A second tensor over exactly t's memory (its export, imported back). */
static pdnn_tensor *alias_of(pdnn_context *ctx, pdnn_tensor *t, pdnn_dlpack_role role)
{
    DLManagedTensorVersioned *m = NULL;
    cr_assert_eq(pdnn_tensor_to_dlpack_versioned(t, &m), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor *a = NULL;
    cr_assert_eq(pdnn_tensor_from_dlpack_versioned(ctx, m, role, &a), PDNN_SUCCESS, "%s", pdnn_last_error());
    return a;
}

static void expect_alias_refused(pdnn_status st, const char *needle)
{
    cr_assert_eq(st, PDNN_ERR_INVALID_ARGUMENT, "got %s: %s", pdnn_status_string(st), pdnn_last_error());
    cr_assert_not_null(strstr(pdnn_last_error(), needle), "message lacks \"%s\": %s", needle, pdnn_last_error());
}

/* An output imported over its own input's memory: conv2d, pool2d, softmax
 * and matmul refuse it, naming both tensors; relu, add and bias_add run in
 * place as they do for y == x, and get the right numbers. */
Test(dlpack, ops_refuse_an_output_over_an_input_and_keep_in_place_ops)
{
    pdnn_context *ctx = th_context();
    for (int i = 0; i < pdnn_device_count(ctx); i++) {
        pdnn_device *dev = NULL;
        cr_assert_eq(pdnn_device_get(ctx, i, &dev), PDNN_SUCCESS);
        pdnn_device_info info;
        cr_assert_eq(pdnn_device_get_info(dev, &info), PDNN_SUCCESS);
        if (strcmp(info.backend, "cuda") == 0)
            continue; /* CUDA imports are covered by test_cuda on a GPU */
        pdnn_tensor_desc dx = th_desc(PDNN_NCHW, 1, 4, 4, 4), dw = th_desc(PDNN_OIHW, 4, 4, 1, 1);
        float xv[64], wv[16];
        th_fill(xv, 64, 21);
        th_fill(wv, 16, 22);
        pdnn_tensor *x = th_upload(dev, &dx, xv), *w = th_upload(dev, &dw, wv);
        pdnn_tensor *y = alias_of(ctx, x, PDNN_DLPACK_ACTIVATION);
        pdnn_conv2d_params cp;
        pdnn_conv2d_params_init(&cp);
        expect_alias_refused(pdnn_conv2d_forward(&cp, x, w, NULL, y), "conv2d: output and input are the same memory");
        pdnn_tensor *wy = alias_of(ctx, w, PDNN_DLPACK_ACTIVATION); /* {4,4,1,1}: an output over the filter */
        pdnn_conv2d_params cq;
        pdnn_conv2d_params_init(&cq);
        pdnn_tensor_desc dx1 = th_desc(PDNN_NCHW, 4, 4, 1, 1);
        pdnn_tensor *x1 = th_upload(dev, &dx1, xv);
        expect_alias_refused(pdnn_conv2d_forward(&cq, x1, w, NULL, wy), "conv2d: output and filter are the same memory");
        pdnn_tensor_release(x1);
        pdnn_pool2d_params pp;
        pdnn_pool2d_params_init(&pp);
        pp.window_h = pp.window_w = 1;
        pp.stride_h = pp.stride_w = 1;
        expect_alias_refused(pdnn_pool2d_forward(&pp, x, y), "pool2d: output and input are the same memory");
        expect_alias_refused(pdnn_softmax(x, y), "pdnn_softmax: y and x are the same memory");
        /* In place where the op allows y == x. */
        cr_assert_eq(pdnn_relu(x, y), PDNN_SUCCESS, "%s", pdnn_last_error());
        float *got = th_download(x);
        for (int e = 0; e < 64; e++)
            cr_assert_eq(got[e], xv[e] > 0.0f ? xv[e] : 0.0f);
        free(got);
        cr_assert_eq(pdnn_add(x, x, y), PDNN_SUCCESS, "%s", pdnn_last_error());
        got = th_download(y);
        for (int e = 0; e < 64; e++)
            cr_assert_eq(got[e], 2.0f * (xv[e] > 0.0f ? xv[e] : 0.0f));
        free(got);
        cr_assert_eq(pdnn_reshape(x, y), PDNN_SUCCESS, "%s", pdnn_last_error()); /* the same bytes: nothing to do */
        /* matmul: c over a. */
        pdnn_tensor_desc dm = th_desc(PDNN_NCHW, 4, 4, 1, 1);
        pdnn_tensor *a = th_upload(dev, &dm, wv), *b = th_upload(dev, &dm, wv);
        pdnn_tensor *c = alias_of(ctx, a, PDNN_DLPACK_ACTIVATION);
        pdnn_status st = pdnn_matmul(a, b, 0, 0, c);
        if (st != PDNN_ERR_UNSUPPORTED) /* a backend without matmul refuses anyway */
            expect_alias_refused(st, "pdnn_matmul: c and a are the same memory");
        pdnn_tensor_release(c);
        pdnn_tensor_release(a);
        pdnn_tensor_release(b);
        pdnn_tensor_release(wy);
        pdnn_tensor_release(y);
        pdnn_tensor_release(x);
        pdnn_tensor_release(w);
        pdnn_memory_stats s;
        cr_assert_eq(pdnn_device_get_memory_stats(dev, &s), PDNN_SUCCESS);
        cr_assert_eq(s.bytes_in_use, 0);
    }
    pdnn_context_destroy(ctx);
}

/* Host memory imported twice at different offsets: partial overlaps are
 * refused even by the ops that run in place. */
Test(dlpack, partial_overlap_is_refused_on_the_host)
{
    pdnn_context *ctx = th_context();
    foreign f;
    foreign_init(&f, PDNN_NCHW, 1, 2, 4, 4); /* 32 floats */
    foreign g = f;                            /* the same memory, one channel */
    f.shape[1] = g.shape[1] = 1;
    f.v.manager_ctx = &f;
    f.v.dl_tensor.shape = f.shape;
    f.v.dl_tensor.strides = f.strides;
    g.v.manager_ctx = &g;
    g.v.dl_tensor.shape = g.shape;
    g.v.dl_tensor.strides = g.strides;
    g.v.dl_tensor.byte_offset = 8 * sizeof(float); /* half a channel on */
    pdnn_tensor *x = NULL, *y = NULL;
    cr_assert_eq(pdnn_tensor_from_dlpack_versioned(ctx, &f.v, PDNN_DLPACK_ACTIVATION, &x), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    cr_assert_eq(pdnn_tensor_from_dlpack_versioned(ctx, &g.v, PDNN_DLPACK_ACTIVATION, &y), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    expect_alias_refused(pdnn_relu(x, y), "pdnn_relu: y and x overlap in memory");
    expect_alias_refused(pdnn_add(x, x, y), "pdnn_add: y and a overlap in memory");
    expect_alias_refused(pdnn_reshape(x, y), "pdnn_reshape: y and x overlap in memory");
    const pdnn_tensor *in[2] = {x, x};
    expect_alias_refused(pdnn_add_n(in, 2, y), "pdnn_add_n: y and inputs[1] overlap in memory");
    pdnn_pool2d_params pp;
    pdnn_pool2d_params_init(&pp);
    pp.window_h = pp.window_w = 1;
    pp.stride_h = pp.stride_w = 1;
    expect_alias_refused(pdnn_pool2d_forward(&pp, x, y), "pool2d: output and input overlap in memory");
    /* A bias over part of the output. */
    foreign b = f;
    b.v.manager_ctx = &b;
    b.shape[0] = 1; /* length C = 1 */
    b.v.dl_tensor.ndim = 1;
    b.v.dl_tensor.shape = b.shape;
    b.v.dl_tensor.strides = NULL;
    b.v.dl_tensor.byte_offset = 20 * sizeof(float);
    pdnn_tensor *bias = NULL;
    cr_assert_eq(pdnn_tensor_from_dlpack_versioned(ctx, &b.v, PDNN_DLPACK_ACTIVATION, &bias), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    expect_alias_refused(pdnn_bias_add(x, bias, y), "pdnn_bias_add: y and x overlap");
    expect_alias_refused(pdnn_bias_add(y, bias, y), "pdnn_bias_add: y and bias overlap");
    pdnn_tensor_release(bias);
    pdnn_tensor_release(x);
    pdnn_tensor_release(y);
    cr_assert_eq(f.deleted + g.deleted + b.deleted, 3);
    free(f.data);
    pdnn_context_destroy(ctx);
}

/* Ranks other than 1 and 4 import as ND, zero-copy, compact row-major
 * only (strides NULL or C order; a dim of 1 may have any stride), and
 * export with their rank and C-order strides. */
Test(dlpack, nd_ranks_round_trip_zero_copy)
{
    pdnn_context *ctx = th_context();
    const int64_t shapes[][6] = {{0}, {3, 5}, {2, 3, 7}, {2, 1, 3, 2, 5}, {2, 3, 1, 2, 3, 2}};
    const int ranks[] = {0, 2, 3, 5, 6};
    for (int si = 0; si < 5; si++) {
        const int r = ranks[si];
        foreign f;
        foreign_init(&f, PDNN_NCHW, 1, 1, 1, 1);
        free(f.data);
        int64_t n = 1, st = 1;
        for (int i = r - 1; i >= 0; i--) {
            f.shape[i] = shapes[si][i];
            f.strides[i] = shapes[si][i] == 1 ? 99 : st; /* size-1 dims: any stride */
            st *= shapes[si][i];
            n *= shapes[si][i];
        }
        f.data = malloc(sizeof(float) * (size_t)n);
        th_fill(f.data, n, (uint32_t)si);
        f.l.dl_tensor.data = f.data;
        f.l.dl_tensor.ndim = r;
        f.l.dl_tensor.strides = si == 2 ? NULL : f.strides;
        pdnn_tensor *t = NULL;
        cr_assert_eq(pdnn_tensor_from_dlpack(ctx, &f.l, PDNN_DLPACK_ACTIVATION, &t), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        pdnn_tensor_desc d;
        cr_assert_eq(pdnn_tensor_get_desc(t, &d), PDNN_SUCCESS);
        cr_assert_eq(d.layout, PDNN_ND);
        cr_assert_eq(d.rank, r);
        for (int i = 0; i < r; i++)
            cr_assert_eq(d.dims[i], shapes[si][i]);
        /* Zero-copy: a write through polydnn is seen in the foreign memory. */
        float *mark = calloc((size_t)n, sizeof(float));
        mark[n - 1] = 42.0f;
        cr_assert_eq(pdnn_tensor_write(t, mark, sizeof(float) * (size_t)n), PDNN_SUCCESS);
        cr_assert_eq(f.data[n - 1], 42.0f);
        free(mark);
        DLManagedTensor *m = NULL;
        cr_assert_eq(pdnn_tensor_to_dlpack(t, &m), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(m->dl_tensor.ndim, r);
        cr_assert_eq(m->dl_tensor.data, (void *)f.data);
        for (int i = r - 1, want = 1; i >= 0; i--) {
            cr_assert_eq(m->dl_tensor.shape[i], shapes[si][i]);
            cr_assert_eq(m->dl_tensor.strides[i], want);
            want *= (int)shapes[si][i];
        }
        m->deleter(m);
        pdnn_tensor_release(t);
        cr_assert_eq(f.deleted, 1);
        free(f.data);
    }
    pdnn_context_destroy(ctx);
}
