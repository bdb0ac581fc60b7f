/* float16 and bfloat16 in the ops: the one-dtype rule every op's
 * validation applies (pdnn__one_dtype) and pdnn_cast. */
#include "core/context.h"
#include "core/half.h"
#include "ops/dispatch.h"

#include <string.h>

pdnn_status pdnn__one_dtype(const char *op, const pdnn_tensor *const *ts, const char *const *names, int n)
{
    int first = -1;
    for (int i = 0; i < n; i++) {
        if (!ts[i])
            continue;
        const pdnn_dtype t = ts[i]->desc.dtype;
        if (!pdnn__dtype_is_float(t))
            return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s: %s is not float32, float16 or bfloat16 (it is %s)", op,
                               names[i], pdnn__dtype_name(t));
        if (first < 0)
            first = i;
        else if (t != ts[first]->desc.dtype)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "%s: %s is %s but %s is %s; one call takes one dtype (pdnn_cast converts)", op,
                               names[first], pdnn__dtype_name(ts[first]->desc.dtype), names[i],
                               pdnn__dtype_name(t));
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn_cast(const pdnn_tensor *x, pdnn_tensor *y)
{
    static const char op[] = "pdnn_cast";
    if (!x || !y)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, !x ? "x" : "y");
    if (x->dev != y->dev)
        return pdnn__device_mismatch(op, "x", x, "y", y);
    const pdnn_tensor *one[] = {x, y};
    const char *names[] = {"x", "y"};
    for (int i = 0; i < 2; i++) {
        const pdnn_status st = pdnn__one_dtype(op, &one[i], &names[i], 1);
        if (st != PDNN_SUCCESS)
            return st;
    }
    if (memcmp(x->desc.dims, y->desc.dims, sizeof x->desc.dims) != 0 || x->desc.layout != y->desc.layout) {
        char dx[128], dy[128];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: x is %s but y is %s; they must match in dims and layout",
                           op, pdnn__desc_string(&x->desc, dx, sizeof dx), pdnn__desc_string(&y->desc, dy, sizeof dy));
    }
    pdnn_status st = pdnn__check_alias(op, y, "y", x, "x", 0);
    if (st != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_CAST;
    call.dtype = x->desc.dtype;
    call.u.cast.n = pdnn_tensor_desc_elements(&x->desc);
    call.u.cast.from = x->desc.dtype;
    call.u.cast.to = y->desc.dtype;
    call.u.cast.x_buf = x->block.buf;
    call.u.cast.y_buf = y->block.buf;
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}
