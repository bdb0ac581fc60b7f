/* PNG and JPEG files to network inputs (see image.h). The libraries'
 * errors come back through setjmp/longjmp into the reader that called
 * them, which frees what it holds and returns -1: neither library ever
 * exits the process. */
#include "config.h" /* PDNN_HAVE_PNG, PDNN_HAVE_JPEG */
#include "image.h"

#include "core/fileio.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PDNN_HAVE_PNG
#include <png.h>
#endif
#ifdef PDNN_HAVE_JPEG
#include <jpeglib.h>
#endif

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && len)
        vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

image_format image_sniff(const unsigned char *buf, size_t len)
{
    static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len >= 8 && memcmp(buf, png_sig, 8) == 0)
        return IMAGE_PNG;
    if (len >= 3 && buf[0] == 0xFF && buf[1] == 0xD8 && buf[2] == 0xFF)
        return IMAGE_JPEG;
    return IMAGE_NONE;
}

void image_free(image *img)
{
    free(img->data);
    memset(img, 0, sizeof *img);
}

#if defined(PDNN_HAVE_PNG) || defined(PDNN_HAVE_JPEG)
/* The declared size, checked before anything of that size is allocated. */
static int size_ok(const char *path, uint64_t w, uint64_t h, char *err, size_t len)
{
    if (w == 0 || h == 0 || w > (uint64_t)IMAGE_MAX_PIXELS || h > (uint64_t)IMAGE_MAX_PIXELS ||
        w * h > (uint64_t)IMAGE_MAX_PIXELS) {
        fail(err, len, "%s: declares a %llux%llu image; polydnn decodes 1 to %lld pixels", path,
             (unsigned long long)w, (unsigned long long)h, (long long)IMAGE_MAX_PIXELS);
        return 0;
    }
    return 1;
}
#endif

#ifdef PDNN_HAVE_PNG
/* What the reader owns, reached from the error handler and freed after a
 * longjmp: only through this (heap) object, never locals changed after
 * setjmp. */
typedef struct png_job {
    const char *path;
    char msg[256];
    unsigned char *pixels; /* the decoded rows, rowbytes each */
    png_bytep *rows;
} png_job;

static void png_fail(png_structp png, png_const_charp msg)
{
    png_job *j = png_get_error_ptr(png);
    snprintf(j->msg, sizeof j->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp msg)
{
    (void)png, (void)msg; /* benign (an unknown ancillary chunk, a gamma note); errors come through png_fail */
}

static int read_png(FILE *f, const char *path, image *img, char *err, size_t len)
{
    png_job *j = calloc(1, sizeof *j);
    if (!j)
        return fail(err, len, "%s: out of host memory", path);
    j->path = path;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, j, png_fail, png_warn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        free(j);
        return fail(err, len, "%s: out of host memory (libpng)", path);
    }
    int rc = -1;
    if (setjmp(png_jmpbuf(png))) {
        fail(err, len, "%s: not a valid PNG image: %s", path, j->msg);
        goto out;
    }
    png_init_io(png, f);
    png_read_info(png, info);
    const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    if (!size_ok(path, w, h, err, len))
        goto out;
    const int type = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    /* Everything to 8 or 16 bits of gray or RGB: a palette expanded, low
     * gray depths widened, alpha (or a tRNS colour key) dropped unblended,
     * as PIL's convert("RGB") drops it. */
    if (type == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if ((type & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_strip_alpha(png); /* palette_to_rgb would otherwise turn a tRNS chunk into alpha */
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    const int ch = png_get_channels(png, info), bits = png_get_bit_depth(png, info);
    const size_t rowbytes = png_get_rowbytes(png, info);
    if ((ch != 1 && ch != 3) || (bits != 8 && bits != 16) || rowbytes != (size_t)w * (size_t)ch * (size_t)(bits / 8)) {
        fail(err, len, "%s: a PNG of colour type %d, depth %d this reader does not turn into gray or RGB", path, type,
             depth);
        goto out;
    }
    j->pixels = malloc(rowbytes * h);
    j->rows = malloc(sizeof *j->rows * h);
    img->data = malloc(sizeof *img->data * (size_t)w * h * (size_t)ch);
    if (!j->pixels || !j->rows || !img->data) {
        fail(err, len, "%s: out of host memory for a %ux%u image", path, (unsigned)w, (unsigned)h);
        goto out;
    }
    for (png_uint_32 y = 0; y < h; y++)
        j->rows[y] = j->pixels + rowbytes * y;
    png_read_image(png, j->rows);
    png_read_end(png, NULL); /* a missing IEND, or a bad CRC after the pixels, is an error too */
    const size_t n = (size_t)w * h * (size_t)ch;
    for (size_t i = 0; i < n; i++)
        img->data[i] = bits == 8 ? (float)j->pixels[i]
                                 : (float)((j->pixels[2 * i] << 8) | j->pixels[2 * i + 1]) / 257.0f;
    img->width = (int)w, img->height = (int)h, img->channels = ch;
    rc = 0;
out:
    if (rc)
        image_free(img);
    png_destroy_read_struct(&png, &info, NULL);
    free(j->pixels);
    free(j->rows);
    free(j);
    return rc;
}
#endif

#ifdef PDNN_HAVE_JPEG
/* libjpeg's error manager with the jump back; corrupt-data warnings
 * (a truncated file is one: libjpeg pads it with gray and goes on) are
 * kept and turned into an error. */
typedef struct jpeg_job {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
    int warned;
    unsigned char *row;
} jpeg_job;

static void jpeg_fail(j_common_ptr c)
{
    jpeg_job *j = (jpeg_job *)c->err;
    c->err->format_message(c, j->msg);
    longjmp(j->jump, 1);
}

static void jpeg_note(j_common_ptr c, int level)
{
    jpeg_job *j = (jpeg_job *)c->err;
    if (level < 0 && !j->warned) { /* a corrupt-data warning: the first one is the message */
        c->err->format_message(c, j->msg);
        j->warned = 1;
    }
}

static void jpeg_quiet(j_common_ptr c)
{
    (void)c; /* no printing to stderr: messages come back through msg */
}

static int read_jpeg(FILE *f, const char *path, image *img, char *err, size_t len)
{
    jpeg_job *j = calloc(1, sizeof *j);
    struct jpeg_decompress_struct *c = calloc(1, sizeof *c);
    if (!j || !c) {
        free(j);
        free(c);
        return fail(err, len, "%s: out of host memory", path);
    }
    c->err = jpeg_std_error(&j->pub);
    j->pub.error_exit = jpeg_fail;
    j->pub.emit_message = jpeg_note;
    j->pub.output_message = jpeg_quiet;
    int rc = -1;
    if (setjmp(j->jump)) {
        fail(err, len, "%s: not a valid JPEG image: %s", path, j->msg);
        goto out;
    }
    jpeg_create_decompress(c);
    jpeg_stdio_src(c, f);
    jpeg_read_header(c, TRUE);
    if (!size_ok(path, c->image_width, c->image_height, err, len))
        goto out;
    if (c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK) {
        fail(err, len, "%s: a CMYK JPEG; polydnn reads gray and colour (YCbCr, RGB) JPEGs only", path);
        goto out;
    }
    c->out_color_space = c->num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    /* libjpeg's default upsampling and DCT, as PIL's decoder leaves them. */
    jpeg_start_decompress(c);
    const int ch = c->output_components;
    const size_t w = c->output_width, h = c->output_height;
    j->row = malloc(w * (size_t)ch);
    img->data = malloc(sizeof *img->data * w * h * (size_t)ch);
    if (!j->row || !img->data) {
        fail(err, len, "%s: out of host memory for a %zux%zu image", path, w, h);
        goto out;
    }
    while (c->output_scanline < c->output_height) {
        const size_t y = c->output_scanline;
        JSAMPROW r = j->row;
        if (jpeg_read_scanlines(c, &r, 1) != 1)
            break;
        for (size_t i = 0; i < w * (size_t)ch; i++)
            img->data[y * w * (size_t)ch + i] = (float)j->row[i];
    }
    if (!j->warned)
        jpeg_finish_decompress(c);
    if (j->warned) {
        fail(err, len, "%s: corrupt or truncated JPEG data: %s", path, j->msg);
        goto out;
    }
    img->width = (int)w, img->height = (int)h, img->channels = ch;
    rc = 0;
out:
    if (rc)
        image_free(img);
    jpeg_destroy_decompress(c);
    free(j->row);
    free(j);
    free(c);
    return rc;
}
#endif

/* Opens path and says what it is: 0 with *out at its start and *fmt a
 * format this build decodes, else -1 with err saying why not. */
static int open_image(const char *path, FILE **out, image_format *fmt, char *err, size_t errlen)
{
    FILE *f = NULL;
    struct stat sb;
    char why[128] = "";
    const int o = pdnn__file_open_read(path, &f, &sb, why, sizeof why);
    if (o < 0)
        return fail(err, errlen, "%s: %s", path, why);
    if (o == 0)
        return fail(err, errlen, "%s: %s", path, strerror(errno ? errno : ENOENT));
    unsigned char head[8];
    const size_t got = fread(head, 1, sizeof head, f);
    *fmt = image_sniff(head, got);
    int rc = -1;
    if (sb.st_size == 0)
        fail(err, errlen, "%s: is empty (0 bytes)", path);
    else if (*fmt == IMAGE_NONE)
        fail(err, errlen, "%s: is neither a PNG nor a JPEG image (by its first bytes)", path);
#ifndef PDNN_HAVE_PNG
    else if (*fmt == IMAGE_PNG)
        fail(err, errlen, "%s: is a PNG image, and this polydnn was built without libpng (Debian: apt-get install "
             "libpng-dev, then ./configure again; docs/building.md)", path);
#endif
#ifndef PDNN_HAVE_JPEG
    else if (*fmt == IMAGE_JPEG)
        fail(err, errlen, "%s: is a JPEG image, and this polydnn was built without libjpeg (Debian: apt-get install "
             "libjpeg62-turbo-dev, then ./configure again; docs/building.md)", path);
#endif
    else if (fseek(f, 0, SEEK_SET) != 0)
        fail(err, errlen, "%s: %s", path, strerror(errno));
    else
        rc = 0;
    if (rc)
        fclose(f);
    else
        *out = f;
    return rc;
}

int image_probe(const char *path, char *err, size_t errlen)
{
    FILE *f = NULL;
    image_format fmt;
    if (open_image(path, &f, &fmt, err, errlen))
        return -1;
    fclose(f);
    return 0;
}

int image_read(const char *path, image *img, char *err, size_t errlen)
{
    memset(img, 0, sizeof *img);
    FILE *f = NULL;
    image_format fmt = IMAGE_NONE;
    if (open_image(path, &f, &fmt, err, errlen))
        return -1;
    int rc = -1;
#ifdef PDNN_HAVE_PNG
    if (fmt == IMAGE_PNG)
        rc = read_png(f, path, img, err, errlen);
#endif
#ifdef PDNN_HAVE_JPEG
    if (fmt == IMAGE_JPEG)
        rc = read_jpeg(f, path, img, err, errlen);
#endif
    fclose(f);
    return rc;
}

void image_prep_init(image_prep *p)
{
    memset(p, 0, sizeof *p);
    p->fit = IMAGE_CROP;
    p->scale = 1.0f / 255.0f;
    for (int c = 0; c < 3; c++)
        p->mean[c] = 0.0f, p->std[c] = 1.0f;
}

/* PIL's resampling weights (Resample.c, precompute_coeffs) for out_count
 * outputs starting at out_first of an in_size -> out_size resize: output
 * i's centre in input coordinates, a triangle of half-width max(scale, 1)
 * around it, normalized. k holds ksize weights per output, first[i] the
 * first input index they weigh. */
static void weights(int64_t in_size, int64_t out_size, int64_t out_first, int out_count, int ksize, double *k,
                    int64_t *first, int *count)
{
    const double scale = (double)in_size / (double)out_size, fs = scale < 1.0 ? 1.0 : scale, support = fs;
    for (int i = 0; i < out_count; i++) {
        const double centre = ((double)(out_first + i) + 0.5) * scale;
        int64_t lo = (int64_t)(centre - support + 0.5), hi = (int64_t)(centre + support + 0.5);
        lo = lo < 0 ? 0 : lo;
        hi = hi > in_size ? in_size : hi;
        if (hi - lo > ksize)
            hi = lo + ksize;
        double sum = 0.0;
        double *ki = k + (size_t)i * (size_t)ksize;
        for (int64_t x = lo; x < hi; x++) {
            const double t = fabs(((double)x - centre + 0.5) / fs);
            ki[x - lo] = t < 1.0 ? 1.0 - t : 0.0;
            sum += ki[x - lo];
        }
        for (int64_t x = lo; x < hi; x++)
            ki[x - lo] = sum != 0.0 ? ki[x - lo] / sum : 0.0;
        first[i] = lo;
        count[i] = (int)(hi - lo);
    }
}

/* Python's round() of a half-integer: to even (torchvision's CenterCrop
 * offsets are int(round((size - crop) / 2.0))). */
static int64_t crop_offset(int64_t size, int64_t crop)
{
    const int64_t d = size - crop;
    return d % 2 == 0 ? d / 2 : ((d / 2) % 2 == 0 ? d / 2 : d / 2 + 1);
}

/* torchvision's Resize(shorter) size: the shorter side to shorter, the
 * longer int(shorter * long / short). */
static void resized(int64_t w, int64_t h, int64_t shorter, int64_t *rw, int64_t *rh)
{
    const int64_t s = w < h ? w : h, l = w < h ? h : w;
    const int64_t nl = (int64_t)((double)shorter * (double)l / (double)s);
    *rw = w < h ? shorter : nl;
    *rh = w < h ? nl : shorter;
}

/* The smallest shorter side whose Resize covers W x H: from the exact
 * ratio up, past int()'s truncation of the longer side. */
static int64_t cover(int64_t iw, int64_t ih, int64_t W, int64_t H)
{
    const int wide = iw >= ih;
    const int64_t want_s = wide ? H : W, want_l = wide ? W : H, s_in = wide ? ih : iw, l_in = wide ? iw : ih;
    int64_t s = (int64_t)ceil((double)want_l * (double)s_in / (double)l_in), rw = 0, rh = 0;
    if (s < want_s)
        s = want_s;
    for (resized(iw, ih, s, &rw, &rh); rw < W || rh < H; resized(iw, ih, s, &rw, &rh))
        s++;
    return s;
}

int image_prepare(const image *img, const image_prep *p, const char *name, float *out, char *err, size_t errlen)
{
    if (p->channels != 1 && p->channels != 3)
        return fail(err, errlen, "%s: the network's input has %d channels; images fill 1 (gray) or 3 (RGB)", name,
                    p->channels);
    const int64_t H = p->height, W = p->width, iw = img->width, ih = img->height;
    if (H < 1 || W < 1 || iw < 1 || ih < 1)
        return fail(err, errlen, "%s: a %lldx%lld image into a %lldx%lld input: no pixels", name, (long long)iw,
                    (long long)ih, (long long)W, (long long)H);
    int64_t rw = W, rh = H, x0 = 0, y0 = 0;
    if (p->fit == IMAGE_CROP) {
        const int64_t s = p->shorter > 0 ? p->shorter : cover(iw, ih, W, H);
        resized(iw, ih, s, &rw, &rh);
        if (rw < W || rh < H)
            return fail(err, errlen,
                        "%s: --resize %lld makes this %lldx%lld image %lldx%lld, smaller than the network's %lldx%lld "
                        "input (W x H)", name, (long long)s, (long long)iw, (long long)ih, (long long)rw,
                        (long long)rh, (long long)W, (long long)H);
        x0 = crop_offset(rw, W);
        y0 = crop_offset(rh, H);
    }
    /* Luminance first where the network wants gray (PIL's convert("L")
     * weights, ITU-R 601-2), replication last where it wants RGB. */
    const int C = img->channels == 3 && p->channels == 1 ? 1 : img->channels;
    const float *src = img->data;
    float *gray = NULL;
    if (C != img->channels) {
        gray = malloc(sizeof *gray * (size_t)iw * (size_t)ih);
        if (!gray)
            return fail(err, errlen, "%s: out of host memory", name);
        for (int64_t i = 0; i < iw * ih; i++)
            gray[i] = 0.299f * src[3 * i] + 0.587f * src[3 * i + 1] + 0.114f * src[3 * i + 2];
        src = gray;
    }
    /* Separable, as PIL: along rows into tmp (only the input rows the
     * crop's outputs weigh), then along columns. */
    const double sx = (double)iw / (double)rw, sy = (double)ih / (double)rh;
    const int kx = (int)ceil(sx < 1 ? 1 : sx) * 2 + 1, ky = (int)ceil(sy < 1 ? 1 : sy) * 2 + 1;
    double *wx = calloc((size_t)W * (size_t)kx, sizeof *wx), *wy = calloc((size_t)H * (size_t)ky, sizeof *wy);
    int64_t *fx = calloc((size_t)W, sizeof *fx), *fy = calloc((size_t)H, sizeof *fy);
    int *cx = calloc((size_t)W, sizeof *cx), *cy = calloc((size_t)H, sizeof *cy);
    double *tmp = NULL;
    int rc = -1;
    if (!wx || !wy || !fx || !fy || !cx || !cy) {
        fail(err, errlen, "%s: out of host memory", name);
        goto out;
    }
    weights(iw, rw, x0, (int)W, kx, wx, fx, cx);
    weights(ih, rh, y0, (int)H, ky, wy, fy, cy);
    const int64_t r0 = fy[0], r1 = fy[H - 1] + cy[H - 1]; /* the input rows weighed */
    tmp = calloc((size_t)(r1 - r0) * (size_t)W * (size_t)C, sizeof *tmp);
    if (!tmp) {
        fail(err, errlen, "%s: out of host memory", name);
        goto out;
    }
    for (int64_t y = r0; y < r1; y++)
        for (int64_t x = 0; x < W; x++)
            for (int c = 0; c < C; c++) {
                double s = 0.0;
                for (int t = 0; t < cx[x]; t++)
                    s += wx[x * kx + t] * src[(y * iw + fx[x] + t) * C + c];
                tmp[((y - r0) * W + x) * C + c] = s;
            }
    for (int64_t y = 0; y < H; y++)
        for (int64_t x = 0; x < W; x++)
            for (int c = 0; c < p->channels; c++) {
                const int sc = C == 1 ? 0 : c; /* gray replicated */
                double s = 0.0;
                for (int t = 0; t < cy[y]; t++)
                    s += wy[y * ky + t] * tmp[((fy[y] + t - r0) * W + x) * C + sc];
                const float v = ((float)s * p->scale - p->mean[c]) / p->std[c];
                out[p->nhwc ? (y * W + x) * p->channels + c : (c * H + y) * W + x] = v;
            }
    rc = 0;
out:
    free(gray);
    free(wx), free(wy), free(fx), free(fy), free(cx), free(cy);
    free(tmp);
    return rc;
}

int image_parse_values(const char *text, float v[3])
{
    int n = 0;
    for (const char *s = text; n < 3;) {
        char *end = NULL;
        errno = 0;
        double a = strtod(s, &end);
        if (end == s || errno)
            return 0;
        if (*end == '/') { /* a fraction: 1/255 */
            const char *d = end + 1;
            const double b = strtod(d, &end);
            if (end == d || errno || b == 0.0)
                return 0;
            a /= b;
        }
        if (!isfinite(a))
            return 0;
        v[n++] = (float)a;
        if (*end == '\0')
            break;
        if (*end != ',')
            return 0;
        s = end + 1;
    }
    if (n == 2)
        return 0;
    if (n == 1)
        v[1] = v[2] = v[0];
    return n;
}

int image_flags(image_prep *p, int resize, int stretch, const char *scale, const char *mean, const char *std,
                char *err, size_t errlen)
{
    float v[3];
    if (resize && stretch) {
        snprintf(err, errlen, "--resize (shorter side, then the centre crop) and --stretch exclude each other");
        return -1;
    }
    p->fit = stretch ? IMAGE_STRETCH : IMAGE_CROP;
    p->shorter = resize;
    if (scale) {
        if (image_parse_values(scale, v) != 1 || v[0] == 0.0f) {
            snprintf(err, errlen, "--scale takes one non-zero number or fraction (1/255), got '%s'", scale);
            return -1;
        }
        p->scale = v[0];
    }
    const char *text[2] = {mean, std};
    float *dst[2] = {p->mean, p->std};
    for (int i = 0; i < 2; i++) {
        if (!text[i])
            continue;
        if (!image_parse_values(text[i], dst[i]) || (i == 1 && (dst[i][0] == 0 || dst[i][1] == 0 || dst[i][2] == 0))) {
            snprintf(err, errlen, "--%s takes V or R,G,B (numbers%s), got '%s'", i ? "std" : "mean",
                     i ? ", none 0" : "", text[i]);
            return -1;
        }
    }
    return 0;
}
