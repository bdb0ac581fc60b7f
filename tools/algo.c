/* The conv2d algorithms of this build as the tool shows them (algo.h). */
#include "algo.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int cli_algo_exists(int id)
{
    return strcmp(pdnn_conv_algo_name((pdnn_conv_algo)id), "unknown") != 0;
}

const char *cli_algo_names(char *buf, size_t len, const char *sep, const char *last_sep)
{
    const int count = pdnn_conv_algo_count();
    int last = -1;
    for (int id = 0; id < count; id++)
        if (cli_algo_exists(id))
            last = id;
    size_t used = 0;
    buf[0] = '\0';
    for (int id = 0; id < count && used < len; id++) {
        if (!cli_algo_exists(id))
            continue;
        const char *s = used == 0 ? "" : id == last && last_sep ? last_sep : sep;
        const int n = snprintf(buf + used, len - used, "%s%s", s, pdnn_conv_algo_name((pdnn_conv_algo)id));
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

const char *cli_algo_flag_help(char *buf, size_t len, const char *what)
{
    char names[512];
    snprintf(buf, len, "%s: %s; help lists them for this shape and device", cli_algo_names(names, sizeof names, "|", NULL),
             what);
    return buf;
}

int cli_algo_parse(const char *cmd, const char *value)
{
    if (value && strcasecmp(value, "help") == 0)
        return CLI_ALGO_HELP;
    const int id = pdnn_conv_algo_parse(value);
    if (id >= 0)
        return id;
    char names[512];
    fprintf(stderr, "polydnn %s: --algo must be one of %s (or help: what each does for this shape), got '%s'\n", cmd,
            cli_algo_names(names, sizeof names, ", ", NULL), value ? value : "");
    return -1;
}

/* "0 B", "1.5 KiB", "12.0 MiB". */
static void bytes_text(char *buf, size_t len, uint64_t b)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (v >= 1024.0 && i < 4) {
        v /= 1024.0;
        i++;
    }
    snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", v, unit[i]);
}

/* Appends to buf the names of the algorithms that apply and that AUTO
 * considers (passed_over 0) or passes over (1), lowest rank first. */
static void append_by_rank(char *buf, size_t len, const pdnn_conv_algo_info *infos, int n, int passed_over)
{
    int done[64] = {0};
    for (;;) {
        int pick = -1;
        for (int i = 0; i < n && i < 64; i++) {
            const int keep = infos[i].applies && infos[i].auto_candidate == !passed_over;
            if (keep && !done[i] && (pick < 0 || infos[i].rank < infos[pick].rank))
                pick = i;
        }
        if (pick < 0)
            return;
        done[pick] = 1;
        const size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", used ? ", " : "", infos[pick].name);
    }
}

int cli_algo_print(pdnn_device *dev, const pdnn_conv2d_params *p, const pdnn_tensor_desc *xd,
                   const pdnn_tensor_desc *wd, pdnn_layout y_layout)
{
    pdnn_device_info dinfo;
    if (pdnn_device_get_info(dev, &dinfo) != PDNN_SUCCESS)
        return cli_fail("reading the device's description");
    const int count = pdnn_conv_algo_count();
    pdnn_conv_algo_info *infos = calloc((size_t)(count > 0 ? count : 1), sizeof *infos);
    if (!infos)
        return cli_host_oom(NULL, "the algorithm list", (uint64_t)(count > 0 ? count : 1) * sizeof *infos);
    int n = 0;
    for (int id = 1; id < count; id++) { /* 0 is AUTO: a choice among the others, not one to query */
        if (!cli_algo_exists(id))
            continue;
        if (pdnn_conv2d_query_algorithm(dev, p, xd, wd, y_layout, (pdnn_conv_algo)id, &infos[n]) != PDNN_SUCCESS) {
            free(infos);
            return cli_fail("querying the algorithms");
        }
        n++;
    }
    printf("\nAlgorithms of this build for this convolution on %s (%s, %s):\n\n", dinfo.name, dinfo.backend,
           dinfo.device_name);
    printf("| algorithm | in %s | applies | AUTO | workspace | tunable | configuration | why not, or why AUTO passes "
           "over it |\n| --- | --- | --- | --- | ---: | --- | --- | --- |\n",
           dinfo.backend);
    for (int i = 0; i < n; i++) {
        const pdnn_conv_algo_info *a = &infos[i];
        char autos[48] = "-", ws[32] = "-";
        if (a->applies) {
            snprintf(autos, sizeof autos, "%s, rank %d", a->auto_candidate ? "candidate" : "passed over", a->rank);
            bytes_text(ws, sizeof ws, a->workspace_bytes);
        }
        printf("| %s | %s | %s | %s | %s | %s | %s | %s |\n", a->name, a->available ? "yes" : "no",
               !a->available ? "-" : a->applies ? "yes" : "no", autos, ws,
               !a->available ? "-" : a->tunable ? "yes" : "no", a->config[0] ? a->config : "-", a->why[0] ? a->why : "-");
    }
    /* The order src/ops/dispatch.c follows when the tuning cache has no
     * measured choice: candidates by rank, then those passed over, the
     * first whose workspace the allocator gives running. */
    char order[1024] = "";
    append_by_rank(order, sizeof order, infos, n, 0);
    char passed[1024] = "";
    append_by_rank(passed, sizeof passed, infos, n, 1);
    if (!order[0] && !passed[0]) {
        printf("\nAUTO: nothing applies to this convolution on %s.\n", dinfo.name);
    } else {
        printf("\nAUTO runs the tuning cache's measured choice for this shape where it has one (polydnn tune "
               "stores it), else the first whose workspace fits of: %s",
               order[0] ? order : "(no candidate)");
        if (passed[0])
            printf("; then of those it passes over: %s", passed);
        printf(".\n");
    }
    free(infos);
    return 0;
}
