/* Image files (PNG through libpng, JPEG through libjpeg-turbo) decoded and
 * turned into a network's input: what `polydnn run --input cat.png` does,
 * kept apart from the command so that training from a folder of images
 * can reuse it. Three steps, each usable alone:
 *
 *   image_read     one file -> an image of 1 (gray) or 3 (RGB) float
 *                  channels, 0..255, HWC; the format by its first bytes
 *   image_prepare  an image -> C x H x W floats: channels converted,
 *                  resized (torchvision's Resize + CenterCrop, or
 *                  stretched), scaled and normalized, NCHW or NHWC
 *
 * Nothing here exits the process or prints: every failure is a message
 * naming the file in err. A build without libpng or libjpeg refuses that
 * format with the library's name and its Debian package. */
#ifndef POLYDNN_IMAGE_H
#define POLYDNN_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* The largest image decoded, in pixels (width * height), checked against
 * the file's declared size before anything is allocated: 2^26, 64 Mi
 * pixels (PIL refuses twice its 89.5 M warning limit). */
#define IMAGE_MAX_PIXELS ((int64_t)1 << 26)

typedef enum image_format { IMAGE_NONE, IMAGE_PNG, IMAGE_JPEG } image_format;

typedef struct image {
    int width, height;
    int channels; /* 1 (gray) or 3 (RGB); alpha is dropped, a palette expanded */
    float *data;  /* height x width x channels, each 0..255 (16-bit samples / 257) */
} image;

/* What the first bytes of buf (len of them) say it is: PNG's 8-byte
 * signature, JPEG's FF D8 FF, else IMAGE_NONE. */
image_format image_sniff(const unsigned char *buf, size_t len);

/* Decodes path into *img (its data malloc'd). 0, or -1 with err naming
 * path and what was wrong: missing, not a regular file (a FIFO is refused,
 * never waited on), empty, neither PNG nor JPEG, corrupt or truncated
 * (JPEG's corrupt-data warnings count as errors), more than
 * IMAGE_MAX_PIXELS, a JPEG in CMYK, a format this build lacks; *img is
 * then empty. */
int image_read(const char *path, image *img, char *err, size_t errlen);

/* image_read's checks short of decoding (there, regular, not empty, PNG
 * or JPEG, a format this build has): 0, or -1 with err. Cheap: to refuse
 * a batch's bad names before any of it is decoded. */
int image_probe(const char *path, char *err, size_t errlen);

void image_free(image *img);

/* Resizing: IMAGE_CROP scales the shorter side to `shorter` (aspect kept;
 * 0: the smallest size that covers height x width) and cuts the centre
 * height x width out (torchvision's Resize(shorter) + CenterCrop);
 * IMAGE_STRETCH resizes straight to height x width. Both filter as PIL's
 * bilinear resize does (a triangle widened by the downscale factor, so a
 * shrink averages every input pixel it covers). */
typedef enum image_fit { IMAGE_CROP, IMAGE_STRETCH } image_fit;

typedef struct image_prep {
    int channels;          /* the network's C: 1 (RGB -> luminance) or 3 (gray -> replicated) */
    int height, width;     /* the network's H and W */
    image_fit fit;
    int shorter;           /* IMAGE_CROP: the shorter side before the crop; 0: just cover */
    float scale;           /* each 0..255 value times scale, */
    float mean[3], std[3]; /* then (v - mean[c]) / std[c] */
    int nhwc;              /* the output's layout: 0 NCHW, 1 NHWC */
} image_prep;

/* The defaults: CROP covering the input, scale 1/255, mean 0, std 1 (the
 * values of torchvision's ToTensor), NCHW. channels, height and width
 * still to be set. */
void image_prep_init(image_prep *p);

/* img as the network's input: channels * height * width floats at out in
 * p's layout. 0, or -1 with err (name is the image's file, for the
 * message): a channel count other than 1 or 3, a --resize smaller than
 * the crop. */
int image_prepare(const image *img, const image_prep *p, const char *name, float *out, char *err, size_t errlen);

/* Parses "V" or "V,V,V" (each V a number or a fraction "1/255") into
 * v[0..2] (one value is repeated); returns how many were given (1 or 3),
 * or 0 when text is not that. */
int image_parse_values(const char *text, float v[3]);

/* The command-line image flags into p: resize (--resize N, 0: none) or
 * stretch, scale, mean and std (NULL: p's own). 0, or -1 with err saying
 * which flag was wrong and why. */
int image_flags(image_prep *p, int resize, int stretch, const char *scale, const char *mean, const char *std,
                char *err, size_t errlen);

#endif
