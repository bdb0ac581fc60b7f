/* polydnn devices: the device mapping, in TensorFlow's style. */
#include "cli.h"

#include <stdio.h>

static void human(uint64_t b, char *buf, size_t len)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (v >= 1024.0 && i < 4) {
        v /= 1024.0;
        i++;
    }
    snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

/* One JSON object per device, one per line (JSON Lines), for scripts. */
static void print_json(const pdnn_device_info *info)
{
    printf("{\"name\": ");
    cli_json_string(stdout, info->name);
    printf(", \"type\": \"%s\", \"index\": %d, \"backend\": ", info->type == PDNN_DEVICE_GPU ? "GPU" : "CPU",
           info->index);
    cli_json_string(stdout, info->backend);
    printf(", \"vendor\": ");
    cli_json_string(stdout, info->vendor);
    printf(", \"device_name\": ");
    cli_json_string(stdout, info->device_name);
    printf(", \"driver_version\": ");
    cli_json_string(stdout, info->driver_version);
    printf(", \"memory_bytes\": %llu, \"max_alloc_bytes\": %llu, \"compute_units\": %d}\n",
           (unsigned long long)info->memory_bytes, (unsigned long long)info->max_alloc_bytes, info->compute_units);
}

int cmd_devices(int argc, char **argv)
{
    int verbose = 0, json = 0;
    const cli_opt opts[] = {
        {'v', "verbose", OPT_FLAG, &verbose, 0, "also print driver versions and why a backend has no devices"},
        {0, "json", OPT_FLAG, &json, 0, "print one JSON object per device and line instead (JSON Lines)"},
    };
    int rc = cli_parse("devices", argc, argv, opts, 2, "Lists every device polydnn can use.");
    if (rc)
        return rc < 0 ? 0 : rc;
    pdnn_context *ctx = NULL;
    if (pdnn_context_create(NULL, &ctx) != PDNN_SUCCESS)
        return cli_fail("creating a context");
    for (int i = 0; i < pdnn_device_count(ctx); i++) {
        pdnn_device *d = NULL;
        pdnn_device_info info;
        if (pdnn_device_get(ctx, i, &d) != PDNN_SUCCESS || pdnn_device_get_info(d, &info) != PDNN_SUCCESS) {
            rc = cli_fail("reading device information");
            break;
        }
        if (json) {
            print_json(&info);
            continue;
        }
        char mem[32], maxa[32];
        human(info.memory_bytes, mem, sizeof mem);
        human(info.max_alloc_bytes, maxa, sizeof maxa);
        printf("/job:localhost/replica:0/task:0%s -> device: %d, backend: %s, vendor: %s, name: %s, "
               "memory: %s, compute units: %d\n",
               info.name, info.index, info.backend, info.vendor, info.device_name, mem,
               info.compute_units);
        if (verbose)
            printf("    driver: %s, largest allocation: %s\n", info.driver_version, maxa);
    }
    if (verbose && !json && pdnn_context_notes(ctx)[0])
        printf("%s", pdnn_context_notes(ctx));
    pdnn_context_destroy(ctx);
    return rc;
}
