/* Convolution shapes from flags or layer tables (see conv_shape.h). */
#include "conv_shape.h"
#include "algo.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void shape_opts(shape_flags *f, cli_opt out[N_SHAPE_OPTS])
{
    const cli_opt opts[N_SHAPE_OPTS] = {
        {'c', "in-channels", OPT_INT, &f->c, 1, "input channels C (default 3)"},
        {'H', "height", OPT_INT, &f->h, 1, "input height (default 32)"},
        {'W', "width", OPT_INT, &f->w, 1, "input width (default 32)"},
        {'k', "out-channels", OPT_INT, &f->k, 1, "output channels K (default 32)"},
        {'y', "filter-height", OPT_INT, &f->y, 1, "filter height R (default 3)"},
        {'x', "filter-width", OPT_INT, &f->x, 1, "filter width S (default 3)"},
        {'p', "pad-h", OPT_INT, &f->p, 0, "padding top and bottom (default 0)"},
        {'q', "pad-w", OPT_INT, &f->q, 0, "padding left and right (default 0)"},
        {0, "padding", OPT_STR, &f->padding, 0, "same|valid: TensorFlow's padding (overrides -p/-q)"},
        {'u', "stride-h", OPT_INT, &f->u, 1, "vertical stride (default 1)"},
        {'v', "stride-w", OPT_INT, &f->v, 1, "horizontal stride (default 1)"},
        {'l', "dilation-h", OPT_INT, &f->l, 1, "vertical dilation (default 1)"},
        {'j', "dilation-w", OPT_INT, &f->j, 1, "horizontal dilation (default 1)"},
        {'g', "groups", OPT_INT, &f->g, 1, "groups; C for depthwise (default 1)"},
    };
    memcpy(out, opts, sizeof opts);
}

int shape_flags_given(const shape_flags *f)
{
    return f->c > 0 || f->h > 0 || f->w > 0 || f->k > 0 || f->y > 0 || f->x > 0 || f->p >= 0 || f->q >= 0 ||
           f->u > 0 || f->v > 0 || f->l > 0 || f->j > 0 || f->g > 0 || f->padding;
}

int conv_from_flags(const char *cmd, const shape_flags *f, int64_t batch, conv_shape *cs)
{
    pdnn_conv2d_params_init(&cs->p);
    cs->n = batch;
    cs->c = f->c > 0 ? f->c : 3;
    cs->h = f->h > 0 ? f->h : 32;
    cs->w = f->w > 0 ? f->w : 32;
    cs->k = f->k > 0 ? f->k : 32;
    cs->r = f->y > 0 ? f->y : 3;
    cs->s = f->x > 0 ? f->x : 3;
    cs->p.stride_h = f->u > 0 ? f->u : 1;
    cs->p.stride_w = f->v > 0 ? f->v : 1;
    cs->p.dilation_h = f->l > 0 ? f->l : 1;
    cs->p.dilation_w = f->j > 0 ? f->j : 1;
    cs->p.groups = f->g > 0 ? f->g : 1;
    cs->p.pad_top = cs->p.pad_bottom = f->p >= 0 ? f->p : 0;
    cs->p.pad_left = cs->p.pad_right = f->q >= 0 ? f->q : 0;
    if (cs->c % cs->p.groups != 0 || cs->k % cs->p.groups != 0) {
        fprintf(stderr, "polydnn %s: groups %d must divide the input channels %lld and the output channels %lld\n",
                cmd, cs->p.groups, (long long)cs->c, (long long)cs->k);
        return EXIT_USAGE;
    }
    if (f->padding) {
        if (strcasecmp(f->padding, "valid") == 0) {
            pdnn_conv2d_set_padding_valid(&cs->p);
        } else if (strcasecmp(f->padding, "same") != 0) {
            fprintf(stderr, "polydnn %s: --padding must be same or valid, got '%s'\n", cmd, f->padding);
            return EXIT_USAGE;
        } else if (pdnn_conv2d_set_padding_same(&cs->p, cs->h, cs->w, cs->r, cs->s) != PDNN_SUCCESS) {
            fprintf(stderr, "polydnn %s: --padding same: %s\n", cmd, pdnn_last_error());
            return EXIT_USAGE;
        }
    }
    return 0;
}

void conv_from_layer(const layer_conv *L, int64_t batch, conv_shape *cs)
{
    pdnn_conv2d_params_init(&cs->p);
    cs->n = batch;
    cs->c = L->c;
    cs->h = cs->w = L->hw;
    cs->k = L->k;
    cs->r = cs->s = L->rs;
    cs->p.stride_h = cs->p.stride_w = L->stride;
    cs->p.pad_top = cs->p.pad_bottom = cs->p.pad_left = cs->p.pad_right = L->pad;
    cs->p.groups = L->groups;
}

int conv_shape_equal(const conv_shape *a, const conv_shape *b)
{
    const pdnn_conv2d_params *p = &a->p, *q = &b->p;
    return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w && a->k == b->k && a->r == b->r &&
           a->s == b->s && p->stride_h == q->stride_h && p->stride_w == q->stride_w && p->pad_top == q->pad_top &&
           p->pad_bottom == q->pad_bottom && p->pad_left == q->pad_left && p->pad_right == q->pad_right &&
           p->dilation_h == q->dilation_h && p->dilation_w == q->dilation_w && p->groups == q->groups &&
           p->relu == q->relu;
}

void conv_shape_name(char *buf, size_t len, const conv_shape *cs)
{
    const pdnn_conv2d_params *p = &cs->p;
    int n = snprintf(buf, len, "c%lld %lldx%lld k%lld %lldx%lld", (long long)cs->c, (long long)cs->h,
                     (long long)cs->w, (long long)cs->k, (long long)cs->r, (long long)cs->s);
    if (n > 0 && (size_t)n < len && (p->stride_h != 1 || p->stride_w != 1))
        n += snprintf(buf + n, len - (size_t)n, " /%d,%d", p->stride_h, p->stride_w);
    if (n > 0 && (size_t)n < len && (p->pad_top || p->pad_bottom || p->pad_left || p->pad_right))
        n += snprintf(buf + n, len - (size_t)n, " pad %d,%d,%d,%d", p->pad_top, p->pad_bottom, p->pad_left,
                      p->pad_right);
    if (n > 0 && (size_t)n < len && (p->dilation_h != 1 || p->dilation_w != 1))
        n += snprintf(buf + n, len - (size_t)n, " dil %d,%d", p->dilation_h, p->dilation_w);
    if (n > 0 && (size_t)n < len && p->groups != 1)
        snprintf(buf + n, len - (size_t)n, " g%d", p->groups);
}

void conv_shape_descs(const conv_shape *cs, pdnn_layout layout, pdnn_tensor_desc *xd, pdnn_tensor_desc *wd)
{
    *xd = (pdnn_tensor_desc){PDNN_FLOAT32, layout, {cs->n, cs->c, cs->h, cs->w}, 0};
    *wd = (pdnn_tensor_desc){PDNN_FLOAT32, layout == PDNN_NHWC ? PDNN_OHWI : PDNN_OIHW,
                             {cs->k, cs->c / cs->p.groups, cs->r, cs->s}, 0};
}

int conv_shape_algo_help(pdnn_device *dev, const char *name, const conv_shape *cs, pdnn_layout layout)
{
    pdnn_tensor_desc xd, wd;
    conv_shape_descs(cs, layout, &xd, &wd);
    printf("\n## %s, %s, batch %lld\n", name, pdnn_layout_name(layout), (long long)cs->n);
    return cli_algo_print(dev, &cs->p, &xd, &wd, layout);
}
