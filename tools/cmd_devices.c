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

int cmd_devices(int argc, char **argv)
{
    int verbose = 0;
    const cli_opt opts[] = {
        {'v', "verbose", OPT_FLAG, &verbose, 0, "also print driver versions and why a backend has no devices"},
    };
    int rc = cli_parse("devices", argc, argv, opts, 1, "Lists every device polydnn can use.");
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
    if (verbose && pdnn_context_notes(ctx)[0])
        printf("%s", pdnn_context_notes(ctx));
    pdnn_context_destroy(ctx);
    return rc;
}
