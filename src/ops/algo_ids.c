/* Names and numbers of the algorithm registries: op names, the public
 * conv2d ids (forward and backward) as the union of every compiled-in
 * backend's names, and the lookups of a device's entries. */
#include "ops/dispatch_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *pdnn__op_name(pdnn__op op)
{
    switch (op) {
    case PDNN__OP_CONV2D_FWD: return "conv2d";
    case PDNN__OP_POOL2D_FWD: return "pool2d";
    case PDNN__OP_CONV2D_BWD_DATA: return "conv2d_bwd_data";
    case PDNN__OP_CONV2D_BWD_FILTER: return "conv2d_bwd_filter";
    case PDNN__OP_CONV2D_BWD_BIAS: return "conv2d_bwd_bias";
    case PDNN__OP_POOL2D_BWD: return "pool2d_bwd";
    case PDNN__OP_BN_FWD_TRAIN: return "batch_norm_fwd_train";
    case PDNN__OP_BN_FWD_INFER: return "batch_norm_fwd_infer";
    case PDNN__OP_BN_BWD: return "batch_norm_bwd";
    case PDNN__OP_RELU_BWD: return "relu_bwd";
    case PDNN__OP_SOFTMAX_XENT: return "softmax_xent";
    case PDNN__OP_OPTIMIZER: return "optimizer";
    case PDNN__OP_GEMM: return "matmul";
    case PDNN__OP_SCALE: return "scale";
    case PDNN__OP_ACTIVATION: return "activation";
    case PDNN__OP_BINARY: return "binary";
    case PDNN__OP_TRANSFORM: return "transform";
    case PDNN__OP_COUNT: break;
    }
    return "op";
}

/* ---- conv2d algorithm ids ------------------------------------------------
 * The public ids are the union of every compiled-in backend's conv2d
 * names: an entry's own id where the public enum has one, else the next
 * free id, in backend order. Built once. */

#define MAX_CONV_ALGOS 64
static const char *conv_names[MAX_CONV_ALGOS];
static int n_conv_names;
static pthread_once_t conv_names_once = PTHREAD_ONCE_INIT;

static void build_conv_names(void)
{
    int nb = 0;
    const pdnn__backend *const *bs = pdnn__backend_list(&nb);
    conv_names[0] = "auto";
    n_conv_names = PDNN_CONV_ALGO_COUNT;
    for (int pass = 0; pass < 2; pass++)
        for (int b = 0; b < nb; b++) {
            const pdnn__algo *const *list = bs[b]->algos[PDNN__OP_CONV2D_FWD];
            for (int i = 0; list && list[i]; i++) {
                const pdnn__algo *a = list[i];
                if (pass == 0 && a->id > 0 && a->id < MAX_CONV_ALGOS) {
                    conv_names[a->id] = a->name;
                    if (a->id >= n_conv_names)
                        n_conv_names = a->id + 1;
                } else if (pass == 1 && a->id <= 0) {
                    int known = 0;
                    for (int j = 0; j < n_conv_names; j++)
                        known |= conv_names[j] && strcmp(conv_names[j], a->name) == 0;
                    if (!known && n_conv_names < MAX_CONV_ALGOS)
                        conv_names[n_conv_names++] = a->name;
                }
            }
        }
}

const char *const *pdnn__conv_algo_names(int *n)
{
    pthread_once(&conv_names_once, build_conv_names);
    *n = n_conv_names;
    return conv_names;
}

int pdnn_conv_algo_count(void)
{
    int n = 0;
    pdnn__conv_algo_names(&n);
    return n;
}

const char *pdnn_conv_algo_name(pdnn_conv_algo algo)
{
    int n = 0;
    const char *const *names = pdnn__conv_algo_names(&n);
    if ((int)algo < 0 || (int)algo >= n || !names[algo])
        return "unknown";
    return names[algo];
}

int pdnn_conv_algo_parse(const char *name)
{
    int n = 0;
    const char *const *names = pdnn__conv_algo_names(&n);
    for (int i = 0; name && i < n; i++)
        if (names[i] && strcasecmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* Backward ids, per direction: 0 "auto", then the union of the backends'
 * names for that op in backend order. */
static const char *bwd_names[2][MAX_CONV_ALGOS];
static int n_bwd_names[2];
static pthread_once_t bwd_names_once = PTHREAD_ONCE_INIT;

static void build_bwd_names(void)
{
    int nb = 0;
    const pdnn__backend *const *bs = pdnn__backend_list(&nb);
    for (int d = 0; d < 2; d++) {
        const pdnn__op op = d == PDNN_CONV_BWD_DATA ? PDNN__OP_CONV2D_BWD_DATA : PDNN__OP_CONV2D_BWD_FILTER;
        bwd_names[d][0] = "auto";
        n_bwd_names[d] = 1;
        for (int b = 0; b < nb; b++)
            for (int i = 0; bs[b]->algos[op] && bs[b]->algos[op][i]; i++) {
                const char *name = bs[b]->algos[op][i]->name;
                int known = 0;
                for (int j = 0; j < n_bwd_names[d]; j++)
                    known |= strcmp(bwd_names[d][j], name) == 0;
                if (!known && n_bwd_names[d] < MAX_CONV_ALGOS)
                    bwd_names[d][n_bwd_names[d]++] = name;
            }
    }
}

int pdnn_conv_bwd_algo_count(pdnn_conv_bwd_dir dir)
{
    if (dir != PDNN_CONV_BWD_DATA && dir != PDNN_CONV_BWD_FILTER)
        return 0;
    pthread_once(&bwd_names_once, build_bwd_names);
    return n_bwd_names[dir];
}

const char *pdnn_conv_bwd_algo_name(pdnn_conv_bwd_dir dir, int id)
{
    if (id < 0 || id >= pdnn_conv_bwd_algo_count(dir))
        return "unknown";
    return bwd_names[dir][id];
}

int pdnn_conv_bwd_algo_parse(pdnn_conv_bwd_dir dir, const char *name)
{
    const int n = pdnn_conv_bwd_algo_count(dir);
    for (int i = 0; name && i < n; i++)
        if (strcasecmp(name, bwd_names[dir][i]) == 0)
            return i;
    return -1;
}

/* ---- registry lookups ------------------------------------------------- */

const pdnn__algo *const *pdnn__algos(const pdnn_device *dev, pdnn__op op)
{
    static const pdnn__algo *const none[] = {NULL};
    const pdnn__algo *const *a = (unsigned)op < PDNN__OP_COUNT ? dev->backend->algos[op] : NULL;
    return a ? a : none;
}

const pdnn__algo *pdnn__algo_find(const pdnn_device *dev, pdnn__op op, const char *name)
{
    const pdnn__algo *const *list = pdnn__algos(dev, op);
    for (int i = 0; name && list[i]; i++)
        if (strcasecmp(list[i]->name, name) == 0)
            return list[i];
    return NULL;
}

/* Names of dev's algorithms for op as "a, b, c", for messages. */
const char *pdnn__algo_list(const pdnn_device *dev, pdnn__op op, char *buf, size_t len)
{
    const pdnn__algo *const *list = pdnn__algos(dev, op);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; list[i] && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", list[i]->name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}
