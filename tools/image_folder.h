/* A folder of labelled images laid out as torchvision's ImageFolder
 * expects (DIR/<class>/<image>): what `polydnn train --model --images DIR`
 * trains on. Scanning only lists the files; image.c decodes them. */
#ifndef POLYDNN_IMAGE_FOLDER_H
#define POLYDNN_IMAGE_FOLDER_H

#include <stddef.h>
#include <stdint.h>

typedef struct image_folder {
    int nclass;
    char **classes;  /* the class folders' names, sorted */
    int64_t n;
    char **paths;    /* n image files, by class, each class's files sorted */
    int32_t *labels; /* n class indices */
} image_folder;

/* Lists dir's images into *f. Each subfolder of dir is a class; classes
 * and files are taken in the byte order of their names (Python's sorted,
 * as torchvision does), so label k is the k-th class name. Files ending
 * in .png, .jpg or .jpeg (any case) count; hidden entries (a leading dot)
 * and other files are skipped, as torchvision skips them. With `as` set
 * (the training folder), labels are as's indices of the class names and
 * a class that as lacks is an error. 0, or -1 with err naming the folder
 * and what was wrong (missing, not a folder, no class folder, no image);
 * *f is then empty. */
int image_folder_scan(const char *dir, const image_folder *as, image_folder *f, char *err, size_t errlen);

void image_folder_free(image_folder *f);

struct image_prep;

/* Decodes f's images order[0..n) and prepares each (image_prepare with p)
 * into x + i * (p's C*H*W), its label into y[i], on `threads` worker
 * threads (0: one per CPU of the process's CPU set), so that decoding a
 * folder takes the cores, not one. An image that fails leaves its slot
 * zero, y[i] = -1 and its message, naming the file, in errs[i] (malloc'd;
 * NULL for the others). Returns how many failed. */
int64_t image_folder_decode(const image_folder *f, const int64_t *order, int64_t n, const struct image_prep *p,
                            int threads, float *x, int32_t *y, char **errs);

#endif
