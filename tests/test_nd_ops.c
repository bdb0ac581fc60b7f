/* The ops that are not image ops on PDNN_ND tensors of any rank, on every
 * device: concat along every axis of ranks 1 to 6 against loops, reshape
 * between ND and image descriptors, and the refusals (broadcast, matmul
 * and transform shapes that do not fit, named in the message). Their
 * arithmetic is the parity harness's (tests/parity_nd.c). */
#include "helpers.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static pdnn_tensor_desc nd(int rank, const int64_t *d)
{
    pdnn_tensor_desc t;
    memset(&t, 0, sizeof t);
    t.dtype = PDNN_FLOAT32;
    t.layout = PDNN_ND;
    t.rank = rank;
    for (int i = 0; i < PDNN_MAX_RANK; i++)
        t.dims[i] = i < rank ? d[i] : 1;
    return t;
}

Test(nd_ops, concat_every_axis_of_ranks_1_to_6)
{
    pdnn_context *ctx = th_context();
    const int ndev = pdnn_device_count(ctx);
    const int64_t base[6] = {2, 3, 1, 5, 4, 3};
    const int64_t parts[2] = {2, 3};
    for (int di = 0; di < ndev; di++) {
        pdnn_device *dev = NULL;
        cr_assert_eq(pdnn_device_get(ctx, di, &dev), PDNN_SUCCESS);
        for (int rank = 1; rank <= 6; rank++)
            for (int axis = 0; axis < rank; axis++) {
                int64_t xd[2][6], yd[6];
                pdnn_tensor *xs[2];
                float *xv[2];
                memcpy(yd, base, sizeof yd);
                yd[axis] = parts[0] + parts[1];
                for (int i = 0; i < 2; i++) {
                    memcpy(xd[i], base, sizeof xd[i]);
                    xd[i][axis] = parts[i];
                    const pdnn_tensor_desc d = nd(rank, xd[i]);
                    const int64_t n = pdnn_tensor_desc_elements(&d);
                    xv[i] = malloc(sizeof(float) * (size_t)n);
                    th_fill(xv[i], n, (uint32_t)(rank * 10 + axis + i * 100));
                    xs[i] = th_upload(dev, &d, xv[i]);
                }
                const pdnn_tensor_desc ydesc = nd(rank, yd);
                pdnn_tensor *y = th_upload(dev, &ydesc, NULL);
                cr_assert_eq(pdnn_concat((const pdnn_tensor *const *)xs, 2, axis, y), PDNN_SUCCESS, "%s",
                             pdnn_last_error());
                float *got = th_download(y);
                /* Row-major: inner = product of dims after the axis. */
                int64_t inner = 1, outer = 1;
                for (int k = axis + 1; k < rank; k++)
                    inner *= base[k];
                for (int k = 0; k < axis; k++)
                    outer *= base[k];
                for (int64_t o = 0; o < outer; o++)
                    for (int i = 0, off = 0; i < 2; off += (int)parts[i], i++)
                        for (int64_t e = 0; e < parts[i] * inner; e++)
                            cr_assert_eq(got[(o * yd[axis] + off) * inner + e], xv[i][o * parts[i] * inner + e],
                                         "rank %d axis %d input %d", rank, axis, i);
                free(got);
                for (int i = 0; i < 2; i++) {
                    free(xv[i]);
                    pdnn_tensor_release(xs[i]);
                }
                /* An axis past the rank is refused, naming it. */
                cr_assert_eq(pdnn_concat((const pdnn_tensor *const *)xs, 0, rank, y), PDNN_ERR_INVALID_ARGUMENT);
                pdnn_tensor_release(y);
            }
    }
    pdnn_context_destroy(ctx);
}

Test(nd_ops, reshape_and_transform_between_nd_and_images)
{
    pdnn_context *ctx = th_context();
    pdnn_device *dev = NULL;
    cr_assert_eq(pdnn_device_get(ctx, pdnn_device_count(ctx) - 1, &dev), PDNN_SUCCESS);
    float v[120];
    th_fill(v, 120, 7);
    const int64_t d5[] = {2, 3, 1, 4, 5}, d0[] = {0};
    const pdnn_tensor_desc x5 = nd(5, d5), s = nd(0, d0), img = th_desc(PDNN_NHWC, 2, 5, 3, 4);
    pdnn_tensor *x = th_upload(dev, &x5, v), *y = th_upload(dev, &img, NULL);
    cr_assert_eq(pdnn_reshape(x, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *got = th_download(y);
    cr_assert_eq(memcmp(got, v, sizeof v), 0);
    free(got);
    /* A transform with an ND side is a copy where the memory orders agree
     * (NHWC {2,5,3,4} is {2,3,4,5} in memory) and refused where not. */
    pdnn_tensor *z = th_upload(dev, &x5, NULL);
    cr_assert_eq(pdnn_transform(y, z), PDNN_SUCCESS, "%s", pdnn_last_error());
    got = th_download(z);
    cr_assert_eq(memcmp(got, v, sizeof v), 0);
    free(got);
    const pdnn_tensor_desc nchw = th_desc(PDNN_NCHW, 2, 5, 3, 4);
    pdnn_tensor *w = th_upload(dev, &nchw, NULL);
    cr_assert_eq(pdnn_transform(z, w), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "in memory order must match"), "%s", pdnn_last_error());
    /* A scalar reshapes to any one-element tensor and back. */
    const float one = 2.5f;
    const int64_t d3[] = {1, 1, 1};
    const pdnn_tensor_desc t3 = nd(3, d3);
    pdnn_tensor *a = th_upload(dev, &s, &one), *b = th_upload(dev, &t3, NULL);
    cr_assert_eq(pdnn_reshape(a, b), PDNN_SUCCESS, "%s", pdnn_last_error());
    got = th_download(b);
    cr_assert_eq(got[0], one);
    free(got);
    pdnn_tensor *ts[] = {x, y, z, w, a, b};
    for (int i = 0; i < 6; i++)
        pdnn_tensor_release(ts[i]);
    pdnn_context_destroy(ctx);
}

Test(nd_ops, shapes_that_do_not_fit_are_refused_by_name)
{
    pdnn_context *ctx = th_context();
    pdnn_device *dev = NULL;
    cr_assert_eq(pdnn_device_get(ctx, 0, &dev), PDNN_SUCCESS);
    const int64_t a[] = {2, 3, 4}, b[] = {3, 5}, y[] = {2, 3, 4}, m[] = {4, 6}, c[] = {2, 3, 6}, d0[] = {0};
    const pdnn_tensor_desc da = nd(3, a), db = nd(2, b), dy = nd(3, y), dm = nd(2, m), dc = nd(3, c), ds = nd(0, d0);
    pdnn_tensor *ta = th_upload(dev, &da, NULL), *tb = th_upload(dev, &db, NULL), *ty = th_upload(dev, &dy, NULL);
    pdnn_tensor *tm = th_upload(dev, &dm, NULL), *tc = th_upload(dev, &dc, NULL), *ts = th_upload(dev, &ds, NULL);
    /* {2,3,4} + {3,5}: 4 against 5 from the right. */
    cr_assert_eq(pdnn_binary(ta, tb, PDNN_BINARY_ADD, ty), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "[3,5] ND"), "%s", pdnn_last_error());
    /* y of the wrong rank. */
    cr_assert_eq(pdnn_binary(ta, ts, PDNN_BINARY_ADD, tm), PDNN_ERR_INVALID_ARGUMENT);
    /* {2,3,4} @ {4,6} = {2,3,6}; @ {3,5} does not fit; a scalar is no operand. */
    cr_assert_eq(pdnn_matmul(ta, tm, 0, 0, tc), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_matmul(ta, tb, 0, 0, tc), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "numpy's matmul"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_matmul(ts, tm, 0, 0, tc), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_tensor *all[] = {ta, tb, ty, tm, tc, ts};
    for (int i = 0; i < 6; i++)
        pdnn_tensor_release(all[i]);
    pdnn_context_destroy(ctx);
}
