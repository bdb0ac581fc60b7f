/* The polydnn tool: flag parsing, the commands, and the small helpers
 * every command shares (running ops from host data: run.h; conv
 * algorithms: algo.h; convolution shapes from flags: conv_shape.h). */
#ifndef POLYDNN_CLI_H
#define POLYDNN_CLI_H

#include "polydnn.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes: 0 success, 1 a runtime failure (library error, failed
 * verification), 2 a usage error (unknown flag, bad value). */
enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* OPT_INTS: a flag that may be repeated and takes comma-separated lists
 * ("--batch 1,8 --batch 16"), every value kept in a cli_ints.
 * OPT_STRS: a flag that may be repeated, each value kept in a cli_strs
 * (file names: no splitting at commas).
 * OPT_HEADING: no flag; its help text is printed as a heading above the
 * flags that follow it in --help. */
typedef enum opt_kind { OPT_INT, OPT_FLAG, OPT_STR, OPT_INTS, OPT_STRS, OPT_HEADING } opt_kind;

enum { CLI_INTS_MAX = 16 };
typedef struct cli_ints {
    int v[CLI_INTS_MAX];
    int n;
} cli_ints;

enum { CLI_STRS_MAX = 1024 };
typedef struct cli_strs {
    const char *v[CLI_STRS_MAX];
    int n;
} cli_strs;

typedef struct cli_opt {
    char short_name;       /* 0: long name only */
    const char *long_name; /* NULL for OPT_HEADING */
    opt_kind kind;
    void *dst;             /* int* (INT, FLAG), const char** (STR), cli_ints* (INTS), cli_strs* (STRS) */
    int min;               /* INT, INTS: smallest accepted value */
    const char *help;
} cli_opt;

/* Parses argv[1..] against opts. Returns 0 on success, EXIT_USAGE after
 * printing a message, or -1 when --help was printed. */
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, int nopts,
              const char *summary);

/* s as a JSON string: quotes, backslashes and control bytes escaped
 * (driver strings and file names are not ours). For --json output. */
void cli_json_string(FILE *f, const char *s);

/* --seed, one convention in every command: a whole number, or "time" for
 * a seed from the clock (printed by the command, so the run can be
 * repeated); not given (text NULL), CLI_SEED_DEFAULT, so that two runs
 * draw the same numbers. Into *seed (0..INT_MAX); 0, or EXIT_USAGE after
 * saying what was wrong. */
#define CLI_SEED_DEFAULT 1
#define CLI_SEED_HELP "N or time: seed of the random inputs (default 1; time: from the clock, printed)"
int cli_seed(const char *cmd, const char *text, int *seed);

int cmd_devices(int argc, char **argv);
int cmd_conv(int argc, char **argv);
int cmd_pool(int argc, char **argv);
int cmd_example(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_train(int argc, char **argv);

/* Prints "polydnn: what: " and cli_last_error(); returns EXIT_RUNTIME. */
int cli_fail(const char *what);

/* A failed host allocation in the tool, named: "polydnn[ cmd]: out of
 * host memory for what: N bytes (X GiB)" on stderr (cmd may be NULL);
 * returns EXIT_RUNTIME. */
int cli_host_oom(const char *cmd, const char *what, uint64_t bytes);

/* The same message kept as the tool's last error, for helpers that return
 * a pdnn_status; returns PDNN_ERR_OUT_OF_MEMORY. */
pdnn_status cli_set_host_oom(const char *what, uint64_t bytes);

/* The tool's last error if one was set since it was last read (then
 * cleared), else pdnn_last_error(). */
const char *cli_last_error(void);

/* A new context with default options and the device named name (NULL:
 * the default device) in it. 0, or EXIT_RUNTIME after printing why (no
 * context is left open then). */
int cli_open_device(const char *name, pdnn_context **ctx, pdnn_device **dev);

void cli_print_memory_stats(pdnn_device *dev);

/* The host reference (/cpu:0) in ctx for --verify, into *host; NULL in
 * *host when dev is the host itself, after saying that there is nothing
 * to compare (the reference checked against itself proves nothing). 0,
 * or EXIT_RUNTIME after printing why the host was not found. */
int cli_host_reference(pdnn_context *ctx, pdnn_device *dev, pdnn_device **host);

/* For the headings of bench's and tune's tables: the current time as
 * "2025-01-31 12:00 UTC", and the command line as typed, in backquotes
 * (arguments with spaces or shell characters quoted). */
void cli_utc_date(char *buf, size_t len);
void cli_print_command(int argc, char **argv);

#endif
