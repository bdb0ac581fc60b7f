/* ResNet-50 v1.5, VGG-16 and MobileNet v1 layer tables (see layers.h). */
#include "layers.h"

#include <stddef.h>
#include <string.h>

/* ResNet-50 v1.5 at 224x224: the stride-2 3x3 sits in the bottleneck's
 * middle convolution (v1.5), not in its first 1x1 (v1). */
static const layer_conv resnet50_convs[] = {
    {"conv1", 3, 224, 64, 7, 2, 3, 1},
    {"res2 1x1 64>64", 64, 56, 64, 1, 1, 0, 1},
    {"res2 3x3 64", 64, 56, 64, 3, 1, 1, 1},
    {"res2 1x1 64>256", 64, 56, 256, 1, 1, 0, 1},
    {"res2 1x1 256>64", 256, 56, 64, 1, 1, 0, 1},
    {"res3 1x1 256>128", 256, 56, 128, 1, 1, 0, 1},
    {"res3 3x3 128 /2", 128, 56, 128, 3, 2, 1, 1},
    {"res3 1x1 128>512", 128, 28, 512, 1, 1, 0, 1},
    {"res3 proj 256>512 /2", 256, 56, 512, 1, 2, 0, 1},
    {"res3 1x1 512>128", 512, 28, 128, 1, 1, 0, 1},
    {"res3 3x3 128", 128, 28, 128, 3, 1, 1, 1},
    {"res4 1x1 512>256", 512, 28, 256, 1, 1, 0, 1},
    {"res4 3x3 256 /2", 256, 28, 256, 3, 2, 1, 1},
    {"res4 1x1 256>1024", 256, 14, 1024, 1, 1, 0, 1},
    {"res4 proj 512>1024 /2", 512, 28, 1024, 1, 2, 0, 1},
    {"res4 1x1 1024>256", 1024, 14, 256, 1, 1, 0, 1},
    {"res4 3x3 256", 256, 14, 256, 3, 1, 1, 1},
    {"res5 1x1 1024>512", 1024, 14, 512, 1, 1, 0, 1},
    {"res5 3x3 512 /2", 512, 14, 512, 3, 2, 1, 1},
    {"res5 1x1 512>2048", 512, 7, 2048, 1, 1, 0, 1},
    {"res5 proj 1024>2048 /2", 1024, 14, 2048, 1, 2, 0, 1},
    {"res5 1x1 2048>512", 2048, 7, 512, 1, 1, 0, 1},
    {"res5 3x3 512", 512, 7, 512, 3, 1, 1, 1},
};

static const layer_pool resnet50_pools[] = {
    {"pool1 3x3 /2", 64, 112, 3, 2, 1},
};

/* VGG-16 (configuration D) at 224x224: its 13 convolutions, all 3x3 with
 * padding 1 (conv3_2/3_3, conv4_2/4_3 and conv5_1..5_3 repeat a shape),
 * and the 2x2/2 max pool closing each of its five blocks. */
static const layer_conv vgg16_convs[] = {
    {"conv1_1", 3, 224, 64, 3, 1, 1, 1},    {"conv1_2", 64, 224, 64, 3, 1, 1, 1},
    {"conv2_1", 64, 112, 128, 3, 1, 1, 1},  {"conv2_2", 128, 112, 128, 3, 1, 1, 1},
    {"conv3_1", 128, 56, 256, 3, 1, 1, 1},  {"conv3_2", 256, 56, 256, 3, 1, 1, 1},
    {"conv3_3", 256, 56, 256, 3, 1, 1, 1},  {"conv4_1", 256, 28, 512, 3, 1, 1, 1},
    {"conv4_2", 512, 28, 512, 3, 1, 1, 1},  {"conv4_3", 512, 28, 512, 3, 1, 1, 1},
    {"conv5_1", 512, 14, 512, 3, 1, 1, 1},  {"conv5_2", 512, 14, 512, 3, 1, 1, 1},
    {"conv5_3", 512, 14, 512, 3, 1, 1, 1},
};

static const layer_pool vgg16_pools[] = {
    {"pool1 2x2 /2", 64, 224, 2, 2, 0},  {"pool2 2x2 /2", 128, 112, 2, 2, 0},
    {"pool3 2x2 /2", 256, 56, 2, 2, 0},  {"pool4 2x2 /2", 512, 28, 2, 2, 0},
    {"pool5 2x2 /2", 512, 14, 2, 2, 0},
};

/* MobileNet v1 (width 1.0) at 224x224: the first 3x3 convolution, then
 * 13 depthwise 3x3 (groups == C) + pointwise 1x1 pairs, of which
 * dw/pw 7..11 repeat one shape. It has no max pool. */
static const layer_conv mobilenet_convs[] = {
    {"conv1 /2", 3, 224, 32, 3, 2, 1, 1},
    {"dw1 32", 32, 112, 32, 3, 1, 1, 32},       {"pw1 32>64", 32, 112, 64, 1, 1, 0, 1},
    {"dw2 64 /2", 64, 112, 64, 3, 2, 1, 64},    {"pw2 64>128", 64, 56, 128, 1, 1, 0, 1},
    {"dw3 128", 128, 56, 128, 3, 1, 1, 128},    {"pw3 128>128", 128, 56, 128, 1, 1, 0, 1},
    {"dw4 128 /2", 128, 56, 128, 3, 2, 1, 128}, {"pw4 128>256", 128, 28, 256, 1, 1, 0, 1},
    {"dw5 256", 256, 28, 256, 3, 1, 1, 256},    {"pw5 256>256", 256, 28, 256, 1, 1, 0, 1},
    {"dw6 256 /2", 256, 28, 256, 3, 2, 1, 256}, {"pw6 256>512", 256, 14, 512, 1, 1, 0, 1},
    {"dw7 512", 512, 14, 512, 3, 1, 1, 512},    {"pw7 512>512", 512, 14, 512, 1, 1, 0, 1},
    {"dw12 512 /2", 512, 14, 512, 3, 2, 1, 512}, {"pw12 512>1024", 512, 7, 1024, 1, 1, 0, 1},
    {"dw13 1024", 1024, 7, 1024, 3, 1, 1, 1024}, {"pw13 1024>1024", 1024, 7, 1024, 1, 1, 0, 1},
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

const layer_set layer_set_resnet50 = {"resnet50", "ResNet-50 v1.5",
                                      resnet50_convs, COUNT(resnet50_convs),
                                      resnet50_pools, COUNT(resnet50_pools)};
const layer_set layer_set_vgg16 = {"vgg16", "VGG-16", vgg16_convs, COUNT(vgg16_convs),
                                   vgg16_pools, COUNT(vgg16_pools)};

const layer_set layer_set_mobilenet = {"mobilenet", "MobileNet v1", mobilenet_convs, COUNT(mobilenet_convs), NULL, 0};

const layer_set *layer_set_find(const char *name)
{
    if (strcmp(name, layer_set_mobilenet.name) == 0)
        return &layer_set_mobilenet;
    if (strcmp(name, layer_set_resnet50.name) == 0)
        return &layer_set_resnet50;
    if (strcmp(name, layer_set_vgg16.name) == 0)
        return &layer_set_vgg16;
    return NULL;
}

const char *layer_set_names(void)
{
    return "resnet50, vgg16, mobilenet";
}
