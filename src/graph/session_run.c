/* pdnn_session_run: what the fetches need, run node by node in graph
 * order with device-to-device copies, each intermediate tensor freed as
 * soon as its last consumer has run. */
#include "core/half.h"
#include "graph/session_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_host(const pdnn_device *d) { return d->backend == &pdnn__host_backend; }

/* A copy of src on dst, device to device where a direct path exists:
 * between the host and a device the device reads or writes the host
 * tensor's memory itself; between two devices of backends that share no
 * context, through a staging buffer on the host. */
static pdnn_status transfer(const pdnn_tensor *src, pdnn_device *dst, pdnn_tensor **out)
{
    pdnn_tensor *t = NULL;
    pdnn_status st = pdnn_tensor_create(dst, &src->desc, &t);
    if (st != PDNN_SUCCESS)
        return st;
    size_t bytes = (size_t)src->bytes;
    pdnn__buf sb = src->block.buf, db = t->block.buf;
    if (src->dev == dst) {
        st = dst->backend->copy(dst->handle, db, sb, bytes);
    } else if (is_host(src->dev)) {
        st = dst->backend->write(dst->handle, db, (const char *)sb.region + sb.offset, bytes);
    } else if (is_host(dst)) {
        st = src->dev->backend->read(src->dev->handle, sb, (char *)db.region + db.offset, bytes);
    } else {
        void *stage = malloc(bytes);
        pdnn__debug("copy %s -> %s goes through the host: the two devices share no context", src->dev->name,
                    dst->name);
        st = stage ? src->dev->backend->read(src->dev->handle, sb, stage, bytes)
                   : pdnn__host_oom("copying between devices", "the staging buffer", bytes);
        if (st == PDNN_SUCCESS)
            st = dst->backend->write(dst->handle, db, stage, bytes);
        free(stage);
    }
    if (st != PDNN_SUCCESS) {
        pdnn_tensor_release(t);
        return st;
    }
    *out = t;
    return PDNN_SUCCESS;
}

/* Runs nd; a convolution's AUTO prefers at most ws_limit bytes of
 * workspace. */
static pdnn_status run_node(const pdnn__node *nd, const pdnn_tensor *const *in, pdnn_tensor *y, size_t ws_limit)
{
    switch (nd->op) {
    case PDNN__OP_CONV2D: {
        pdnn_conv2d_params p = nd->conv;
        p.workspace_limit = ws_limit;
        if (nd->residual)
            return pdnn_conv2d_forward_residual(&p, in[0], in[1], nd->n_inputs > 3 ? in[2] : NULL,
                                                in[nd->n_inputs - 1], y);
        return pdnn_conv2d_forward(&p, in[0], in[1], nd->n_inputs > 2 ? in[2] : NULL, y);
    }
    case PDNN__OP_POOL2D: return pdnn_pool2d_forward(&nd->pool, in[0], y);
    case PDNN__OP_MATMUL: return pdnn_matmul(in[0], in[1], nd->trans_a, nd->trans_b, y);
    case PDNN__OP_ADD: return pdnn_add(in[0], in[1], y);
    case PDNN__OP_ADD_N: return pdnn_add_n(in, nd->n_inputs, y);
    case PDNN__OP_BIAS_ADD: return pdnn_bias_add(in[0], in[1], y);
    case PDNN__OP_RELU: return pdnn_relu(in[0], y);
    case PDNN__OP_MUL: return pdnn_scale(in[0], nd->alpha, y);
    case PDNN__OP_ACT: return pdnn_activation_forward(in[0], nd->act, nd->alpha, nd->beta, y);
    case PDNN__OP_ELTWISE: return pdnn_binary(in[0], in[1], nd->binop, y);
    case PDNN__OP_PADDING: return pdnn_pad(in[0], nd->pads, nd->pad_mode, nd->alpha, y);
    case PDNN__OP_NDMATH: return pdnn__nd_math_run_node(nd, in, y);
    case PDNN__OP_MOVE: return pdnn__move_run(nd, in, y);
    case PDNN__OP_CAST_NODE: return pdnn_cast(in[0], y);
    case PDNN__OP_LOSS_SCALE: return pdnn__loss_scale_run(nd, in, y);
    case PDNN__OP_BN: {
        pdnn_batch_norm_params p;
        pdnn_batch_norm_params_init(&p);
        p.training = 0;
        p.epsilon = nd->alpha;
        /* Inference reads the running statistics and writes nothing else. */
        return pdnn_batch_norm_forward(&p, in[0], in[1], in[2], (pdnn_tensor *)in[3], (pdnn_tensor *)in[4], NULL,
                                       NULL, y);
    }
    case PDNN__OP_CONCAT: return pdnn_concat(in, nd->n_inputs, nd->axis, y);
    case PDNN__OP_TRANSPOSE: return pdnn_transform(in[0], y);
    case PDNN__OP_SOFTMAX: return pdnn_softmax(in[0], y);
    case PDNN__OP_RESHAPE: return pdnn_reshape(in[0], y);
    case PDNN__OP_XENT: return pdnn_softmax_cross_entropy(in[0], in[1], y, NULL);
    case PDNN__OP_XENT_GRAD: {
        pdnn_tensor *loss = NULL;
        pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_LAYOUT_X, {1, 1, 1, 1}, 0};
        if (!in[0])
            return pdnn__error(PDNN_ERR_INTERNAL, "run_node: no logits");
        pdnn_status st = pdnn_tensor_create(in[0]->dev, &d, &loss);
        if (st == PDNN_SUCCESS)
            st = pdnn_softmax_cross_entropy(in[0], in[1], loss, y);
        pdnn_tensor_release(loss);
        return st;
    }
    case PDNN__OP_G_CONV_BWD_DATA: return pdnn_conv2d_backward_data(&nd->conv, in[0], in[1], y);
    case PDNN__OP_G_CONV_BWD_FILTER: return pdnn_conv2d_backward_filter(&nd->conv, in[0], in[1], y);
    case PDNN__OP_G_CONV_BWD_BIAS: return pdnn_conv2d_backward_bias(in[0], y);
    case PDNN__OP_G_POOL_BWD: return pdnn_pool2d_backward(&nd->pool, in[0], in[1], y);
    case PDNN__OP_G_RELU_BWD: return pdnn_relu_backward(in[0], in[1], y);
    case PDNN__OP_BN_TRAIN:
    case PDNN__OP_G_BN_BWD:
    case PDNN__OP_DROPOUT:
    case PDNN__OP_G_CLIP_BWD: return pdnn__run_train_node(nd, in, y);
    case PDNN__OP_PLACEHOLDER:
    case PDNN__OP_VARIABLE:
    case PDNN__OP_CONST:
    case PDNN__OP_APPLY:
    case PDNN__OP_TRAIN:
    case PDNN__OP_ALLREDUCE: break; /* the session's: run_update, run_allreduce */
    }
    return pdnn__error(PDNN_ERR_INTERNAL, "run_node: op %d has no runner", (int)nd->op);
}

/* Node i in a reduced dtype on a device with no path for that op in it
 * (pdnn_bias_add, pdnn_relu... are float32 only; an OpenCL algorithm
 * without a half path): as TensorFlow's autocast keeps such an op in
 * float32, it runs on float32 copies of its reduced inputs and its output
 * is rounded once. Found on the node's first run (the op's refusal),
 * logged as the placement's soft placements are, kept for the session. */
static pdnn_status run_lowp(pdnn_session *s, run_state *r, int i, const pdnn_tensor *const *in, pdnn_tensor *y,
                            size_t ws)
{
    pdnn__node *nd = &s->g->nodes[i];
    int reduced = y->desc.dtype == PDNN_FLOAT16 || y->desc.dtype == PDNN_BFLOAT16;
    for (int q = 0; q < nd->n_inputs && !reduced; q++)
        reduced = in[q] && (in[q]->desc.dtype == PDNN_FLOAT16 || in[q]->desc.dtype == PDNN_BFLOAT16);
    if (!reduced || nd->op == PDNN__OP_CAST_NODE || nd->op == PDNN__OP_LOSS_SCALE)
        return run_node(nd, in, y, ws);
    if (!nd->f32_fallback) {
        pdnn_status st = run_node(nd, in, y, ws);
        if (st != PDNN_ERR_UNSUPPORTED)
            return st;
        char line[1400];
        snprintf(line, sizeof line, "%s (%s) on %s: no %s path (%s); it runs in float32 with casts around it",
                 nd->name, pdnn__op_type(nd), s->placed[i]->name, pdnn__dtype_name(y->desc.dtype), pdnn_last_error());
        if (s->log)
            s->log(s->log_user, line);
        else
            fprintf(stderr, "%s\n", line);
        nd->f32_fallback = 1;
    }
    const pdnn_tensor *in32[512] = {0};
    pdnn_tensor *own[513] = {0};
    pdnn_status st = PDNN_SUCCESS;
    for (int q = 0; q <= nd->n_inputs && st == PDNN_SUCCESS; q++) {
        const pdnn_tensor *t = q < nd->n_inputs ? in[q] : y;
        if (q < nd->n_inputs)
            in32[q] = t;
        if (!t || (t->desc.dtype != PDNN_FLOAT16 && t->desc.dtype != PDNN_BFLOAT16))
            continue;
        pdnn_tensor_desc d = t->desc;
        d.dtype = PDNN_FLOAT32;
        st = pdnn_tensor_create(t->dev, &d, &own[q]);
        if (st != PDNN_SUCCESS)
            break;
        pdnn__session_live(s, r, own[q], +1);
        if (q < nd->n_inputs) {
            st = pdnn_cast(t, own[q]);
            in32[q] = own[q];
        }
    }
    pdnn_tensor *y32 = own[nd->n_inputs] ? own[nd->n_inputs] : y;
    if (st == PDNN_SUCCESS)
        st = run_node(nd, in32, y32, ws);
    if (st == PDNN_SUCCESS && y32 != y)
        st = pdnn_cast(y32, y);
    for (int q = 0; q <= nd->n_inputs; q++) {
        pdnn__session_live(s, r, own[q], -1);
        pdnn_tensor_release(own[q]);
    }
    return st;
}

/* The optimizer's update of one variable in place (its slots and the
 * variable are the session's own tensors, on the variable's device), or
 * the step count's increment. */
static pdnn_status run_update(pdnn_session *s, const pdnn__node *nd, const pdnn_tensor *const *in)
{
    float stepf = 0;
    pdnn_status st = pdnn_tensor_read(s->consts[nd->step], &stepf, sizeof stepf);
    if (st != PDNN_SUCCESS)
        return st;
    if (nd->op == PDNN__OP_TRAIN) {
        stepf += 1.0f;
        return pdnn_tensor_write(s->consts[nd->step], &stepf, sizeof stepf);
    }
    const int n_in = nd->n_inputs - (nd->gate > 0); /* the loss scale's gate last */
    if (nd->gate > 0) {
        float open = 0;
        if ((st = pdnn_tensor_read(in[n_in], &open, sizeof open)) != PDNN_SUCCESS || open == 0.0f)
            return st; /* a gradient was not finite: the step is skipped */
    }
    int var = nd->inputs[0];
    pdnn_tensor *w = s->consts[var];
    pdnn_tensor *s1 = n_in > 2 ? s->consts[nd->inputs[2]] : NULL;
    pdnn_tensor *s2 = n_in > 3 ? s->consts[nd->inputs[3]] : NULL;
    if (in[0] != w || (s1 && s1->dev != w->dev) || (s2 && s2->dev != w->dev))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "variable '%s', its update and its slots must be on one device "
                                                      "(do not give them different devices)",
                           s->g->nodes[var].name);
    pdnn_optimizer_params p = nd->optim;
    if (nd->lr_var > 0 && (st = pdnn_tensor_read(s->consts[nd->lr_var - 1], &p.learning_rate,
                                                 sizeof p.learning_rate)) != PDNN_SUCCESS)
        return st;
    return pdnn_optimizer_update(&p, (int64_t)stepf + 1, w, in[1], s1, s2);
}

static void run_free(run_state *r)
{
    for (int i = 0; i < r->n; i++) {
        if (r->owned && r->owned[i])
            pdnn_tensor_release(r->values[i]);
        for (int d = 0; r->copies && d < r->n_dev; d++)
            pdnn_tensor_release(r->copies[(size_t)i * (size_t)r->n_dev + (size_t)d]);
    }
    free(r->live);
    free(r->values);
    free(r->owned);
    free(r->needed);
    free(r->uses);
    free(r->copies);
    free(r->started);
    free(r->absorb_on);
}

/* Marks what the needed nodes read, transitively (inputs precede their
 * readers). */
static void mark_inputs(const pdnn_graph *g, char *needed)
{
    for (int i = g->n - 1; i >= 0; i--)
        if (needed[i])
            for (int q = 0; q < g->nodes[i].n_inputs; q++)
                if (g->nodes[i].inputs[q] >= 0)
                    needed[g->nodes[i].inputs[q]] = 1;
}

static pdnn_status check_feeds(const pdnn_session *s, const pdnn_node *feeds, pdnn_tensor *const *vals, int n)
{
    for (int k = 0; k < n; k++) {
        int f = feeds[k];
        if (f < 0 || f >= s->g->n)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: feed %d names node %d, which does not exist",
                               k, f);
        const pdnn__node *nd = &s->g->nodes[f];
        if (nd->op != PDNN__OP_PLACEHOLDER)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: feed %d: node '%s' is a %s, not a "
                                                          "Placeholder", k, nd->name, pdnn__op_type(nd));
        if (!vals[k])
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: the value fed to '%s' is NULL", nd->name);
        if (memcmp(vals[k]->desc.dims, nd->out.dims, sizeof nd->out.dims) != 0 ||
            vals[k]->desc.layout != nd->out.layout || vals[k]->desc.dtype != nd->out.dtype ||
            vals[k]->desc.rank != nd->out.rank) {
            char a[160], b[160];
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: placeholder '%s' is %s but was fed %s",
                               nd->name, pdnn__desc_string(&nd->out, a, sizeof a),
                               pdnn__desc_string(&vals[k]->desc, b, sizeof b));
        }
        for (int q = 0; q < k; q++)
            if (feeds[q] == f)
                return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: placeholder '%s' is fed twice",
                                   nd->name);
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn_session_run(pdnn_session *s, const pdnn_node *feeds, pdnn_tensor *const *feed_values, int n_feeds,
                             const pdnn_node *fetches, int n_fetches, pdnn_tensor **fetch_values)
{
    if (!s || n_feeds < 0 || n_fetches < 1 || !fetches || !fetch_values || (n_feeds > 0 && (!feeds || !feed_values)))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_session_run: needs a session, at least one fetch with an output array, and feeds "
                           "with values when n_feeds > 0");
    for (int k = 0; k < n_fetches; k++) {
        fetch_values[k] = NULL;
        if (fetches[k] < 0 || fetches[k] >= s->g->n)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: fetch %d names node %d, which does not "
                                                          "exist", k, fetches[k]);
        if (s->dropped[fetches[k]])
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: constant '%s' is held only as its "
                               "reduced casts (folded when the session was created); fetch a cast of it",
                               s->g->nodes[fetches[k]].name);
    }
    pdnn_status st = check_feeds(s, feeds, feed_values, n_feeds);
    if (st != PDNN_SUCCESS)
        return st;
    const pdnn_graph *g = s->g;
    run_state r = {g->n, s->ctx->n_devices, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t n = (size_t)g->n;
    r.live = calloc((size_t)r.n_dev, sizeof *r.live);
    r.values = calloc(n, sizeof *r.values);
    r.owned = calloc(n, 1);
    r.needed = calloc(n, 1);
    r.uses = calloc(n, sizeof *r.uses);
    r.copies = calloc(n * (size_t)r.n_dev, sizeof *r.copies);
    r.started = calloc((size_t)s->n_buckets + 1, 1);
    r.absorb_on = calloc(n, 1);
    if (!r.live || !r.values || !r.owned || !r.needed || !r.uses || !r.copies || !r.started || !r.absorb_on) {
        run_free(&r);
        return pdnn__host_oom("pdnn_session_run", "the run's tables",
                              n * (sizeof *r.values + 2 + sizeof *r.uses + (size_t)r.n_dev * sizeof *r.copies));
    }
    for (int d = 0; d < r.n_dev; d++)
        r.live[d] = s->live_base[d];
    for (int k = 0; k < n_fetches; k++) {
        r.needed[fetches[k]] = 1;
        r.uses[fetches[k]]++;
    }
    mark_inputs(g, r.needed);
    if (pdnn__session_whole_buckets(s, r.needed))
        mark_inputs(g, r.needed);
    for (int i = 0; i < g->n; i++)
        if (r.needed[i])
            for (int q = 0; q < g->nodes[i].n_inputs; q++)
                if (g->nodes[i].inputs[q] >= 0)
                    r.uses[g->nodes[i].inputs[q]]++;
    /* A Concat's inputs are views of its output unless the run fetches one. */
    for (int j = 0; j < g->n; j++)
        if (s->absorbs[j] && r.needed[j]) {
            r.absorb_on[j] = 1;
            for (int q = 0; q < g->nodes[j].n_inputs; q++)
                r.absorb_on[j] &= r.uses[g->nodes[j].inputs[q]] == 1;
        }

    for (int i = 0; i < g->n && st == PDNN_SUCCESS; i++) {
        if (!r.needed[i])
            continue;
        const pdnn__node *nd = &g->nodes[i];
        pdnn_device *dev = s->placed[i];
        if (s->n_buckets && (st = pdnn__session_start_buckets(s, &r, i)) != PDNN_SUCCESS)
            break;
        if (nd->op == PDNN__OP_PLACEHOLDER) {
            int k = 0;
            while (k < n_feeds && feeds[k] != i)
                k++;
            if (k == n_feeds) {
                char d[96];
                st = pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                                 "You must feed a value for placeholder tensor '%s' with %s", nd->name,
                                 pdnn__desc_string(&nd->out, d, sizeof d));
            } else if (feed_values[k]->dev == dev) {
                r.values[i] = feed_values[k];
                pdnn__session_live(s, &r, r.values[i], +1); /* the caller's, held through the run */
            } else {
                st = transfer(feed_values[k], dev, &r.values[i]);
                r.owned[i] = st == PDNN_SUCCESS;
                if (st == PDNN_SUCCESS)
                    pdnn__session_live(s, &r, r.values[i], +1);
            }
            continue;
        }
        if (pdnn__session_holds(s, i)) {
            r.values[i] = s->consts[i]; /* NULL for a dropped constant: only folded casts read it */
            continue;
        }
        const double t0 = s->prof_runs ? pdnn__now() : 0.0;
        const pdnn_tensor *in[512] = {0};
        /* A train op's inputs are its updates, which have no value (one per
         * variable: MobileNetV2 has 158); a loss scale's update reads every
         * gradient. */
        if (nd->n_inputs > 512 && nd->op != PDNN__OP_TRAIN) {
            st = pdnn__error(PDNN_ERR_UNSUPPORTED, "node '%s' has %d inputs; at most 512 are supported", nd->name,
                             nd->n_inputs);
            break;
        }
        for (int q = 0; q < nd->n_inputs && st == PDNN_SUCCESS; q++) {
            int j = nd->inputs[q];
            if (pdnn__no_value(&g->nodes[j]) || nd->op == PDNN__OP_ALLREDUCE)
                continue; /* ordering only: an update before the step count; AllReduce stages its input */
            if (r.values[j]->dev == dev) {
                in[q] = r.values[j];
                continue;
            }
            pdnn_tensor **slot = copy_slot(s, &r, j, dev);
            if (!*slot) {
                st = transfer(r.values[j], dev, slot);
                if (st == PDNN_SUCCESS)
                    pdnn__session_live(s, &r, *slot, +1);
            }
            in[q] = *slot;
        }
        /* A training batch norm updates its running statistics in place:
         * a copy on another device would take the update and drop it
         * (momentum 0, a tower's copy: no update to lose). */
        for (int q = 3; st == PDNN_SUCCESS && nd->op == PDNN__OP_BN_TRAIN && nd->beta != 0.0f && q < 5; q++)
            if (in[q] != s->consts[nd->inputs[q]])
                st = pdnn__error(PDNN_ERR_UNSUPPORTED, "node '%s' (%s) on %s: its running statistic '%s' is on "
                                 "another device; place them together", nd->name, pdnn__op_type(nd), dev->name,
                                 g->nodes[nd->inputs[q]].name);
        pdnn_tensor *y = NULL;
        int aliased = 0;
        if (st == PDNN_SUCCESS && pdnn__no_value(nd)) {
            st = run_update(s, nd, in);
            if (st != PDNN_SUCCESS) {
                char why[1024];
                snprintf(why, sizeof why, "%s", pdnn_last_error());
                st = pdnn__error(st, "node '%s' (%s) on %s: %s", nd->name, pdnn__op_type(nd), dev->name, why);
                break;
            }
        } else if (st == PDNN_SUCCESS) {
            const int j = s->absorb[i];
            if (r.absorb_on[i]) {
                y = r.values[i]; /* written in place by its inputs' nodes */
                if (!y)          /* cannot happen: its first input's node made it */
                    st = pdnn__error(PDNN_ERR_INTERNAL, "concat node '%s' has no output", nd->name);
            } else if (j >= 0 && r.absorb_on[j]) {
                st = pdnn__session_absorb_view(s, &r, i, j, &y);
            } else if ((aliased = pdnn__session_reshape_alias(s, &r, i, in[0])) != 0) {
                /* Flatten after a global pool: no copy kernel (about 20 us
                 * a run on PoCL) */
                /* in[0] as the run holds it: its value here, or its copy */
                const int x0 = nd->inputs[0];
                pdnn_tensor *xt = r.values[x0]->dev == dev ? r.values[x0] : *copy_slot(s, &r, x0, dev);
                st = pdnn__session_alias_of(xt, 0, &nd->out, pdnn__session_alias_release, &y);
                if (st == PDNN_SUCCESS)
                    pdnn__session_live(s, &r, y, +1);
            } else {
                st = pdnn_tensor_create(dev, &nd->out, &y);
                if (st == PDNN_SUCCESS)
                    pdnn__session_live(s, &r, y, +1);
            }
            if (st != PDNN_SUCCESS) {
                char why[1024], d[96];
                snprintf(why, sizeof why, "%s", pdnn_last_error());
                st = pdnn__error(st, "node '%s' (%s) on %s: allocating its output %s: %s", nd->name,
                                 pdnn__op_type(nd), dev->name, pdnn__desc_string(&nd->out, d, sizeof d), why);
            }
        }
        if (st == PDNN_SUCCESS && !pdnn__no_value(nd)) {
            if (!r.absorb_on[i] && !aliased) /* else its inputs' nodes wrote it, or it is its input */
                st = nd->op == PDNN__OP_ALLREDUCE ? pdnn__session_run_allreduce(s, &r, i, y)
                                                  : run_lowp(s, &r, i, in, y, pdnn__session_workspace_room(s, &r, dev));
            if (st != PDNN_SUCCESS) {
                char why[1024];
                snprintf(why, sizeof why, "%s", pdnn_last_error());
                pdnn_tensor_release(y);
                st = pdnn__error(st, "node '%s' (%s) on %s: %s", nd->name, pdnn__op_type(nd), dev->name, why);
                break;
            }
            r.values[i] = y;
            r.owned[i] = 1;
            pdnn__session_count_packs(s, &r, i);
        }
        if (st == PDNN_SUCCESS && s->prof_runs) {
            st = pdnn_device_synchronize(dev);
            const double dt = pdnn__now() - t0;
            if (s->prof_runs[i]++ == 0)
                s->prof_first[i] = dt;
            s->prof_sec[i] += dt;
            if (!pdnn__no_value(nd)) {
                s->prof_flops[i] = pdnn__session_node_flops(nd, in, y);
                s->prof_algo[i] = nd->op == PDNN__OP_CONV2D ? pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()) : NULL;
            }
        }
        /* Free what no later node needs: inputs whose last use this was,
         * and copies onto this device no later node here reads. */
        for (int q = 0; q < nd->n_inputs && st == PDNN_SUCCESS; q++) {
            int j = nd->inputs[q];
            if (--r.uses[j] == 0 && r.owned[j]) {
                pdnn__session_live(s, &r, r.values[j], -1);
                pdnn_tensor_release(r.values[j]);
                r.values[j] = NULL;
                r.owned[j] = 0;
            }
            pdnn_tensor **slot = copy_slot(s, &r, j, dev);
            if (*slot && !pdnn__session_later_reader_on(s, &r, i, j, dev)) {
                pdnn__session_live(s, &r, *slot, -1);
                pdnn_tensor_release(*slot);
                *slot = NULL;
            }
        }
    }
    /* Buckets started and not waited for (a failed run): the thread must
     * be done with them before the next run refills them. */
    for (int b = 0; b < s->n_buckets; b++)
        if (r.started[b] == 1) {
            pdnn_status wst = pdnn__comm_wait(s->comm, b);
            st = st == PDNN_SUCCESS ? wst : st;
        }
    /* Hand the fetched values over: the run's own tensor once, a copy for a
     * repeated fetch or a value the run does not own (a feed, a constant). */
    for (int k = 0; k < n_fetches && st == PDNN_SUCCESS; k++) {
        int f = fetches[k];
        if (pdnn__no_value(&g->nodes[f])) {
            fetch_values[k] = NULL; /* it ran; it has no value */
        } else if (r.owned[f]) {
            fetch_values[k] = r.values[f];
            r.owned[f] = 0;
        } else if (r.values[f]) {
            st = transfer(r.values[f], r.values[f]->dev, &fetch_values[k]);
        } else { /* cannot happen: a fetched value is never freed during the run */
            st = pdnn__error(PDNN_ERR_INTERNAL, "pdnn_session_run: fetched node %d has no value", f);
        }
    }
    if (st != PDNN_SUCCESS) {
        /* Values handed over already are no longer the run's: give them back. */
        for (int k = 0; k < n_fetches; k++) {
            pdnn_tensor_release(fetch_values[k]);
            fetch_values[k] = NULL;
        }
    }
    run_free(&r);
    return st;
}
