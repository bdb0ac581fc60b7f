/* --precision and --loss-scale: see precision.h. */
#include "precision.h"
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int cli_precision(const char *cmd, const char *text, pdnn_dtype *out)
{
    *out = PDNN_FLOAT32;
    if (!text || strcmp(text, "fp32") == 0 || strcmp(text, "float32") == 0)
        return 0;
    if (strcmp(text, "fp16") == 0 || strcmp(text, "float16") == 0 || strcmp(text, "mixed_float16") == 0)
        *out = PDNN_FLOAT16;
    else if (strcmp(text, "bf16") == 0 || strcmp(text, "bfloat16") == 0 || strcmp(text, "mixed_bfloat16") == 0)
        *out = PDNN_BFLOAT16;
    else {
        fprintf(stderr, "polydnn %s: --precision: expected fp32, fp16 or bf16, got '%s'\n", cmd, text);
        return EXIT_USAGE;
    }
    return 0;
}

int cli_loss_scale(const char *cmd, const char *text, pdnn_dtype compute, float *scale)
{
    *scale = compute == PDNN_FLOAT16 ? 32768.0f : 0.0f;
    if (!text)
        return 0;
    char *end = NULL;
    const double v = strtod(text, &end);
    if (!*text || *end || !(v >= 1.0) || !isfinite((float)v)) {
        fprintf(stderr, "polydnn %s: --loss-scale: expected a number of at least 1 (e.g. 32768), got '%s'\n", cmd,
                text);
        return EXIT_USAGE;
    }
    *scale = (float)v;
    return 0;
}

int cli_graph_precision(pdnn_graph *g, pdnn_dtype compute, float scale)
{
    if (compute != PDNN_FLOAT32 && pdnn_graph_set_precision(g, compute) != PDNN_SUCCESS)
        return cli_fail("setting the precision policy");
    /* TensorFlow's growth interval: the scale doubles after 2000 finite steps */
    if (scale > 0 && pdnn_graph_set_loss_scale(g, scale, 2000) != PDNN_SUCCESS)
        return cli_fail("setting the loss scale");
    return 0;
}

static float read_scale(const ls_history *h, pdnn_session *s)
{
    float v = NAN;
    if (pdnn_session_variable_read(s, h->var, &v, sizeof v) != PDNN_SUCCESS)
        return NAN;
    return v;
}

void ls_history_init(ls_history *h, const pdnn_graph *g, pdnn_session *s, int64_t step)
{
    memset(h, 0, sizeof *h);
    if (pdnn_graph_find(g, "loss_scale", &h->var) != PDNN_SUCCESS) {
        h->var = -1;
        return;
    }
    h->step[0] = step;
    h->scale[0] = read_scale(h, s);
    h->n = 1;
}

void ls_history_step(ls_history *h, pdnn_session *s, int64_t step, FILE *out, int json)
{
    if (h->var < 0 || h->n == 0)
        return;
    const float v = read_scale(h, s), last = h->scale[h->n - 1];
    if (v == last)
        return;
    if (json)
        fprintf(out, "{\"event\": \"loss_scale\", \"step\": %lld, \"from\": %.9g, \"to\": %.9g}\n", (long long)step,
                (double)last, (double)v);
    else
        fprintf(out, "step %lld: loss scale %g -> %g (%s)\n", (long long)step, (double)last, (double)v,
                v < last ? "a gradient was not finite: the step was skipped" : "2000 finite steps");
    if (h->n == (int)(sizeof h->scale / sizeof h->scale[0])) { /* keep the first and the latest */
        memmove(&h->step[1], &h->step[2], sizeof h->step[0] * (size_t)(h->n - 2));
        memmove(&h->scale[1], &h->scale[2], sizeof h->scale[0] * (size_t)(h->n - 2));
        h->n--;
        h->dropped++;
    }
    h->step[h->n] = step;
    h->scale[h->n++] = v;
}

void ls_history_print(const ls_history *h, FILE *out, int json)
{
    if (h->var < 0 || h->n == 0)
        return;
    if (json) {
        fprintf(out, "{\"event\": \"loss_scale_history\", \"dropped\": %d, \"history\": [", h->dropped);
        for (int i = 0; i < h->n; i++)
            fprintf(out, "%s{\"step\": %lld, \"scale\": %.9g}", i ? ", " : "", (long long)h->step[i],
                    (double)h->scale[i]);
        fprintf(out, "]}\n");
        return;
    }
    fprintf(out, "loss scale:");
    for (int i = 0; i < h->n; i++)
        fprintf(out, "%s %g from step %lld%s", i ? "," : "", (double)h->scale[i], (long long)h->step[i],
                i == 0 && h->dropped ? " (then changes left out)" : "");
    fprintf(out, "\n");
}
