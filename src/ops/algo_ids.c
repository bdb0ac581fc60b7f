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
    case PDNN__OP_PAD: return "pad";
    case PDNN__OP_INDEX: return "index";
    case PDNN__OP_WHERE: return "where";
    case PDNN__OP_CAST: return "cast";
    case PDNN__OP_TRANSFORM: return "transform";
    case PDNN__OP_ND_TRANSPOSE: return "transpose";
    case PDNN__OP_ND_SOFTMAX: return "softmax";
    case PDNN__OP_ND_LAYER_NORM: return "layer_norm";
    case PDNN__OP_ND_REDUCE: return "reduce";
    case PDNN__OP_ND_LAYER_NORM_BWD: return "layer_norm_bwd";
    case PDNN__OP_COUNT: break;
    }
    return "op";
}

/* ---- public algorithm ids ------------------------------------------------
 * Three ops have public ids: conv2d forward (pdnn_conv_algo) and the
 * backward data and filter directions (pdnn_conv_bwd_algo_*). Forward:
 * the union of every compiled-in backend's names, an entry's own id where
 * the public enum has one, else the next free id, in backend order.
 * Backward, per direction: 0 "auto", then the union of the backends'
 * names in backend order. Built once, with each backend's entry of each
 * id, so that a call resolves its id to an entry by index, never by
 * name. */

#define MAX_CONV_ALGOS 64
#define MAX_BACKENDS 8

enum { IDS_FWD, IDS_BWD_DATA, IDS_BWD_FILTER, N_ID_OPS };

typedef struct id_table {
    const char *names[MAX_CONV_ALGOS];
    int n;
    /* Per compiled-in backend (pdnn__backend_list's order), the entry
     * named names[id] (any case, as the names were looked up before
     * they were ids); NULL: the backend has none. */
    const pdnn__algo *entry[MAX_BACKENDS][MAX_CONV_ALGOS];
} id_table;

static id_table ids[N_ID_OPS];
static pthread_once_t ids_once = PTHREAD_ONCE_INIT;

static const pdnn__op id_ops[N_ID_OPS] = {PDNN__OP_CONV2D_FWD, PDNN__OP_CONV2D_BWD_DATA, PDNN__OP_CONV2D_BWD_FILTER};

/* Gives name the next free id of t unless an id has it already (backends
 * share names: "direct" is every backend's). */
static void add_name(id_table *t, const char *name)
{
    for (int j = 0; j < t->n; j++)
        if (t->names[j] && strcmp(t->names[j], name) == 0)
            return;
    if (t->n < MAX_CONV_ALGOS)
        t->names[t->n++] = name;
}

static void build_fwd_names(const pdnn__backend *const *bs, int nb, id_table *t)
{
    t->names[0] = "auto";
    t->n = PDNN_CONV_ALGO_COUNT;
    for (int pass = 0; pass < 2; pass++)
        for (int b = 0; b < nb; b++) {
            const pdnn__algo *const *list = bs[b]->algos[PDNN__OP_CONV2D_FWD];
            for (int i = 0; list && list[i]; i++) {
                const pdnn__algo *a = list[i];
                if (pass == 0 && a->id > 0 && a->id < MAX_CONV_ALGOS) {
                    t->names[a->id] = a->name;
                    if (a->id >= t->n)
                        t->n = a->id + 1;
                } else if (pass == 1 && a->id <= 0) {
                    add_name(t, a->name);
                }
            }
        }
}

static void build_bwd_names(const pdnn__backend *const *bs, int nb, pdnn__op op, id_table *t)
{
    t->names[0] = "auto";
    t->n = 1;
    for (int b = 0; b < nb; b++)
        for (int i = 0; bs[b]->algos[op] && bs[b]->algos[op][i]; i++)
            add_name(t, bs[b]->algos[op][i]->name);
}

static void build_ids(void)
{
    int nb = 0;
    const pdnn__backend *const *bs = pdnn__backend_list(&nb);
    build_fwd_names(bs, nb, &ids[IDS_FWD]);
    build_bwd_names(bs, nb, PDNN__OP_CONV2D_BWD_DATA, &ids[IDS_BWD_DATA]);
    build_bwd_names(bs, nb, PDNN__OP_CONV2D_BWD_FILTER, &ids[IDS_BWD_FILTER]);
    for (int o = 0; o < N_ID_OPS; o++)
        for (int b = 0; b < nb && b < MAX_BACKENDS; b++) {
            const pdnn__algo *const *list = bs[b]->algos[id_ops[o]];
            for (int id = 1; id < ids[o].n; id++)
                for (int i = 0; ids[o].names[id] && list && list[i] && !ids[o].entry[b][id]; i++)
                    if (strcasecmp(list[i]->name, ids[o].names[id]) == 0)
                        ids[o].entry[b][id] = list[i];
        }
}

/* op's table, or NULL for an op without public ids. */
static const id_table *ids_of(pdnn__op op)
{
    pthread_once(&ids_once, build_ids);
    for (int o = 0; o < N_ID_OPS; o++)
        if (id_ops[o] == op)
            return &ids[o];
    return NULL;
}

const char *const *pdnn__conv_algo_names(int *n)
{
    const id_table *t = ids_of(PDNN__OP_CONV2D_FWD);
    *n = t->n;
    return t->names;
}

/* The name of id in t; NULL outside [0, n) or where no backend has it. */
static const char *id_name(const id_table *t, int id) { return t && id >= 0 && id < t->n ? t->names[id] : NULL; }

/* The id named name in t (any case), or -1. */
static int id_parse(const id_table *t, const char *name)
{
    for (int i = 0; t && name && i < t->n; i++)
        if (t->names[i] && strcasecmp(name, t->names[i]) == 0)
            return i;
    return -1;
}

int pdnn_conv_algo_count(void) { return ids_of(PDNN__OP_CONV2D_FWD)->n; }

const char *pdnn_conv_algo_name(pdnn_conv_algo algo)
{
    const char *name = id_name(ids_of(PDNN__OP_CONV2D_FWD), (int)algo);
    return name ? name : "unknown";
}

int pdnn_conv_algo_parse(const char *name) { return id_parse(ids_of(PDNN__OP_CONV2D_FWD), name); }

static pdnn__op bwd_op(pdnn_conv_bwd_dir dir)
{
    return dir == PDNN_CONV_BWD_DATA     ? PDNN__OP_CONV2D_BWD_DATA
           : dir == PDNN_CONV_BWD_FILTER ? PDNN__OP_CONV2D_BWD_FILTER
                                         : PDNN__OP_COUNT;
}

int pdnn_conv_bwd_algo_count(pdnn_conv_bwd_dir dir)
{
    const id_table *t = ids_of(bwd_op(dir));
    return t ? t->n : 0;
}

const char *pdnn_conv_bwd_algo_name(pdnn_conv_bwd_dir dir, int id)
{
    const char *name = id_name(ids_of(bwd_op(dir)), id);
    return name ? name : "unknown";
}

int pdnn_conv_bwd_algo_parse(pdnn_conv_bwd_dir dir, const char *name) { return id_parse(ids_of(bwd_op(dir)), name); }

/* dev's backend's index in the registry, or -1. */
static int backend_index(const pdnn_device *dev)
{
    int nb = 0;
    const pdnn__backend *const *bs = pdnn__backend_list(&nb);
    for (int b = 0; b < nb && b < MAX_BACKENDS; b++)
        if (bs[b] == dev->backend)
            return b;
    return -1;
}

int pdnn__algo_id_known(pdnn__op op, int id) { return id_name(ids_of(op), id) != NULL; }

const pdnn__algo *pdnn__algo_by_id(const pdnn_device *dev, pdnn__op op, int id)
{
    const id_table *t = ids_of(op);
    const int b = backend_index(dev);
    return id > 0 && id_name(t, id) && b >= 0 ? t->entry[b][id] : NULL;
}

pdnn_status pdnn__algo_for_id(const pdnn_device *dev, pdnn__op op, int id, const pdnn__algo **out)
{
    *out = pdnn__algo_by_id(dev, op, id);
    if (*out || id == 0)
        return PDNN_SUCCESS;
    const char *name = id_name(ids_of(op), id);
    return pdnn__algo_unavailable(dev, op, name ? name : "unknown");
}

int pdnn__algo_id(pdnn__op op, const pdnn__algo *a)
{
    const id_table *t = ids_of(op);
    for (int b = 0; t && a && b < MAX_BACKENDS; b++)
        for (int id = 1; id < t->n; id++)
            if (t->entry[b][id] == a)
                return id;
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

pdnn_status pdnn__algo_unavailable(const pdnn_device *dev, pdnn__op op, const char *name)
{
    char names[256];
    return pdnn__error(PDNN_ERR_UNSUPPORTED,
                       "%s: algorithm %s is not available on %s (%s backend), which has: %s; use "
                       "PDNN_CONV_ALGO_AUTO",
                       pdnn__op_name(op), name, dev->name, dev->backend->name,
                       pdnn__algo_list(dev, op, names, sizeof names));
}
