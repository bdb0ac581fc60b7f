#include "profile.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct prof_row {
    pdnn_node node;
    const char *op;
    int64_t runs;
    double sec, first;
} prof_row;

static int by_time(const void *a, const void *b)
{
    const prof_row *x = a, *y = b;
    return (x->sec < y->sec) - (x->sec > y->sec);
}

int cli_print_profile(FILE *out, const pdnn_graph *g, const pdnn_session *s, int top)
{
    int n = pdnn_graph_node_count(g);
    prof_row *rows = calloc((size_t)(n > 0 ? n : 1), sizeof *rows);
    prof_row *ops = calloc((size_t)(n > 0 ? n : 1), sizeof *ops);
    if (!rows || !ops) {
        free(rows);
        free(ops);
        fprintf(out, "profile: out of host memory for %d rows\n", n);
        return 1;
    }
    int nr = 0, no = 0;
    double total = 0;
    for (pdnn_node i = 0; i < n; i++) {
        int64_t runs = 0;
        double sec = 0, first = 0;
        if (pdnn_session_node_profile(s, i, &runs, &sec, &first)) {
            fprintf(out, "profile: %s\n", pdnn_last_error());
            free(rows);
            free(ops);
            return 1;
        }
        if (runs == 0)
            continue;
        const char *op = pdnn_graph_node_op(g, i);
        /* Rank by the steady state: the first run builds kernels. */
        const double later = runs > 1 ? sec - first : sec;
        rows[nr++] = (prof_row){i, op, runs, later, first};
        total += later;
        int k = 0;
        while (k < no && strcmp(ops[k].op, op) != 0)
            k++;
        if (k == no)
            ops[no++] = (prof_row){-1, op, 0, 0, 0};
        ops[k].runs += runs > 1 ? runs - 1 : runs;
        ops[k].sec += later;
        ops[k].first += first;
    }
    qsort(rows, (size_t)nr, sizeof *rows, by_time);
    qsort(ops, (size_t)no, sizeof *ops, by_time);
    const double pct = total > 0 ? 100.0 / total : 0;
    fprintf(out,
            "\nprofile: %d nodes ran, %.1f ms in all after each node's first run (each node's device synchronized "
            "after it; a first run also builds kernels)\n\n",
            nr, total * 1e3);
    fprintf(out, "| node | op | device | algorithm | first ms | later runs | ms/run | GFLOP/s | total ms | %% |\n"
                 "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int k = 0; k < nr && k < top; k++) {
        pdnn_device *d = NULL;
        pdnn_device_info info = {0};
        if (pdnn_session_node_device(s, rows[k].node, &d) != PDNN_SUCCESS || pdnn_device_get_info(d, &info))
            snprintf(info.name, sizeof info.name, "?");
        const char *dn = info.name;
        const int64_t later = rows[k].runs > 1 ? rows[k].runs - 1 : 1;
        const char *algo = "";
        double flops = 0;
        if (pdnn_session_node_work(s, rows[k].node, &algo, &flops) != PDNN_SUCCESS)
            algo = "";
        const double per = rows[k].sec / (double)later;
        char gf[32] = "-";
        if (flops > 0 && per > 0)
            snprintf(gf, sizeof gf, "%.1f", flops / per / 1e9);
        fprintf(out, "| %s | %s | %s | %s | %.1f | %lld | %.3f | %s | %.1f | %.1f |\n",
                pdnn_graph_node_name(g, rows[k].node), rows[k].op, dn, algo[0] ? algo : "-", rows[k].first * 1e3,
                (long long)(rows[k].runs - 1), per * 1e3, gf, rows[k].sec * 1e3, rows[k].sec * pct);
    }
    if (nr > top)
        fprintf(out, "| (%d more nodes) | | | | | | | | | |\n", nr - top);
    fprintf(out, "\n| op | first runs ms | later runs | total ms | %% |\n| --- | ---: | ---: | ---: | ---: |\n");
    for (int k = 0; k < no; k++)
        fprintf(out, "| %s | %.1f | %lld | %.1f | %.1f |\n", ops[k].op, ops[k].first * 1e3, (long long)ops[k].runs,
                ops[k].sec * 1e3, ops[k].sec * pct);
    free(rows);
    free(ops);
    return 0;
}
