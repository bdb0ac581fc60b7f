/* Flag parsing shared by every command: short (-n 4, -n4) and long
 * (--batch 4, --batch=4) forms, strict integers; and the few helpers
 * that open devices and print headings for every command. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *value_hint(const cli_opt *o)
{
    return o->kind == OPT_FLAG ? "" : o->kind == OPT_INTS ? " V[,V...]" : o->kind == OPT_STRS ? " V (repeatable)" : " V";
}

static void print_help(const char *cmd, const cli_opt *opts, int nopts, const char *summary)
{
    printf("usage: polydnn %s [flags]\n%s\n\nflags:\n", cmd, summary);
    for (int i = 0; i < nopts; i++) {
        char left[64];
        if (opts[i].kind == OPT_HEADING) {
            printf("\n%s\n", opts[i].help);
            continue;
        }
        if (opts[i].short_name)
            snprintf(left, sizeof left, "-%c, --%s%s", opts[i].short_name, opts[i].long_name, value_hint(&opts[i]));
        else
            snprintf(left, sizeof left, "    --%s%s", opts[i].long_name, value_hint(&opts[i]));
        printf("  %-30s %s\n", left, opts[i].help);
    }
    printf("  %-30s %s\n", "-h, --help", "show this help");
}

/* One whole number of val (up to end, or the first `stop` character),
 * at least o->min, into *out; *next is where parsing stopped. whole is
 * the flag's full value, for messages. */
static int parse_int(const char *cmd, const cli_opt *o, const char *flag, const char *whole, const char *val,
                     char stop, int *out, const char **next)
{
    errno = 0;
    char *end = NULL;
    long v = strtol(val, &end, 10);
    if (end == val || (*end != '\0' && *end != stop) || errno != 0 || v > INT_MAX || v < INT_MIN) {
        fprintf(stderr, "polydnn %s: %s expects %s, got '%s'\n", cmd, flag,
                stop ? "whole numbers separated by commas" : "a whole number", whole);
        return EXIT_USAGE;
    }
    if (v < o->min) {
        fprintf(stderr, "polydnn %s: %s must be at least %d, got %ld\n", cmd, flag, o->min, v);
        return EXIT_USAGE;
    }
    *out = (int)v;
    *next = end;
    return 0;
}

static int set_value(const char *cmd, const cli_opt *o, const char *flag, const char *val)
{
    if (o->kind == OPT_STR) {
        *(const char **)o->dst = val;
        return 0;
    }
    if (o->kind == OPT_STRS) {
        cli_strs *list = o->dst;
        if (list->n == CLI_STRS_MAX) {
            fprintf(stderr, "polydnn %s: %s may be given at most %d times\n", cmd, flag, CLI_STRS_MAX);
            return EXIT_USAGE;
        }
        list->v[list->n++] = val;
        return 0;
    }
    const char *next = NULL;
    if (o->kind == OPT_INT)
        return parse_int(cmd, o, flag, val, val, '\0', (int *)o->dst, &next);
    cli_ints *list = o->dst;
    for (const char *p = val;; p = next + 1) {
        int v = 0;
        int rc = parse_int(cmd, o, flag, val, p, ',', &v, &next);
        if (rc)
            return rc;
        if (list->n == CLI_INTS_MAX) {
            fprintf(stderr, "polydnn %s: %s takes at most %d values\n", cmd, flag, CLI_INTS_MAX);
            return EXIT_USAGE;
        }
        list->v[list->n++] = v;
        if (*next == '\0')
            return 0;
    }
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, int nopts,
              const char *summary)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            print_help(cmd, opts, nopts, summary);
            return -1;
        }
        const cli_opt *o = NULL;
        const char *inline_val = NULL;
        if (a[0] == '-' && a[1] == '-' && a[2]) {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            for (int k = 0; k < nopts && !o; k++)
                if (opts[k].kind != OPT_HEADING && strlen(opts[k].long_name) == len && strncmp(opts[k].long_name, name, len) == 0)
                    o = &opts[k];
            if (o && eq)
                inline_val = eq + 1;
        } else if (a[0] == '-' && a[1] && a[1] != '-') {
            for (int k = 0; k < nopts && !o; k++)
                if (opts[k].kind != OPT_HEADING && opts[k].short_name == a[1])
                    o = &opts[k];
            if (o && a[2])
                inline_val = a + 2;
        }
        if (!o) {
            fprintf(stderr, "polydnn %s: unknown flag '%s' (see polydnn %s --help)\n", cmd, a, cmd);
            return EXIT_USAGE;
        }
        if (o->kind == OPT_FLAG) {
            if (inline_val) {
                fprintf(stderr, "polydnn %s: %s takes no value\n", cmd, a);
                return EXIT_USAGE;
            }
            *(int *)o->dst = 1;
            continue;
        }
        const char *val = inline_val;
        if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "polydnn %s: %s needs a value\n", cmd, a);
                return EXIT_USAGE;
            }
            val = argv[++i];
        }
        int rc = set_value(cmd, o, a, val);
        if (rc)
            return rc;
    }
    return 0;
}

int cli_seed(const char *cmd, const char *text, int *seed)
{
    if (!text) {
        *seed = CLI_SEED_DEFAULT;
        return 0;
    }
    if (strcmp(text, "time") == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *seed = (int)(((uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u) % 1000000007u);
        return 0;
    }
    errno = 0;
    char *end = NULL;
    const long v = strtol(text, &end, 10);
    if (end == text || *end || errno || v < 0 || v > INT_MAX) {
        fprintf(stderr, "polydnn %s: --seed takes a whole number from 0 to %d, or time; got '%s'\n", cmd, INT_MAX,
                text);
        return EXIT_USAGE;
    }
    *seed = (int)v;
    return 0;
}

/* The tool's own last failure (a host allocation), printed in place of
 * the library's message once. */
static char tool_error[256];

static void host_oom_text(char *buf, size_t len, const char *what, uint64_t bytes)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "out of host memory for %s: %llu bytes (%.1f %s)", what, (unsigned long long)bytes, v,
             unit[u]);
}

int cli_host_oom(const char *cmd, const char *what, uint64_t bytes)
{
    char msg[256];
    host_oom_text(msg, sizeof msg, what, bytes);
    fprintf(stderr, "polydnn%s%s: %s\n", cmd ? " " : "", cmd ? cmd : "", msg);
    return EXIT_RUNTIME;
}

pdnn_status cli_set_host_oom(const char *what, uint64_t bytes)
{
    host_oom_text(tool_error, sizeof tool_error, what, bytes);
    return PDNN_ERR_OUT_OF_MEMORY;
}

const char *cli_last_error(void)
{
    static char taken[sizeof tool_error];
    if (!tool_error[0])
        return pdnn_last_error();
    memcpy(taken, tool_error, sizeof taken);
    tool_error[0] = '\0';
    return taken;
}

int cli_fail(const char *what)
{
    fprintf(stderr, "polydnn: %s: %s\n", what, cli_last_error());
    return EXIT_RUNTIME;
}

int cli_open_device(const char *name, pdnn_context **ctx, pdnn_device **dev)
{
    *ctx = NULL;
    if (pdnn_context_create(NULL, ctx) != PDNN_SUCCESS)
        return cli_fail("creating a context");
    pdnn_status st = name ? pdnn_device_find(*ctx, name, dev) : pdnn_device_default(*ctx, dev);
    if (st != PDNN_SUCCESS) {
        int rc = cli_fail("choosing a device");
        pdnn_context_destroy(*ctx);
        *ctx = NULL;
        return rc;
    }
    return 0;
}

void cli_print_memory_stats(pdnn_device *dev)
{
    pdnn_memory_stats s;
    pdnn_device_info info;
    if (pdnn_device_get_memory_stats(dev, &s) != PDNN_SUCCESS || pdnn_device_get_info(dev, &info) != PDNN_SUCCESS)
        return;
    printf("memory %s: in use %llu B (peak %llu B), reserved %llu B (peak %llu B), regions %llu, "
           "allocations %llu, largest %llu B, largest free chunk %llu B, limit %llu B\n",
           info.name, (unsigned long long)s.bytes_in_use, (unsigned long long)s.peak_bytes_in_use,
           (unsigned long long)s.bytes_reserved, (unsigned long long)s.peak_bytes_reserved,
           (unsigned long long)s.num_regions, (unsigned long long)s.num_allocs,
           (unsigned long long)s.largest_alloc, (unsigned long long)s.largest_free_chunk,
           (unsigned long long)s.limit);
}

int cli_host_reference(pdnn_context *ctx, pdnn_device *dev, pdnn_device **host)
{
    *host = NULL;
    pdnn_device *h = NULL;
    if (pdnn_device_find(ctx, "/cpu:0", &h) != PDNN_SUCCESS)
        return cli_fail("finding the host reference");
    if (h == dev) {
        pdnn_device_info info;
        pdnn_device_get_info(h, &info);
        printf("verify: %s is the host reference; nothing to compare (verify another device, e.g. --device "
               "/gpu:0)\n",
               info.name);
        return 0;
    }
    *host = h;
    return 0;
}

void cli_utc_date(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm) == 0)
        snprintf(buf, len, "unknown date");
}

void cli_print_command(int argc, char **argv)
{
    printf("`polydnn");
    for (int i = 0; i < argc; i++)
        printf(argv[i][strcspn(argv[i], " \t'\"`$*?|&;<>()")] ? " '%s'" : " %s", argv[i]);
    printf("`");
}

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}
