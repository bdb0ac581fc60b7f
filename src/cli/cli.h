/* The polydnn tool: shared declarations. */
#ifndef POLYDNN_CLI_H
#define POLYDNN_CLI_H

#include "polydnn.h"

#include <stdint.h>

/* Exit codes: 0 success, 1 a runtime failure (library error, failed
 * verification), 2 a usage error (unknown flag, bad value). */
enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* OPT_INTS: a flag that may be repeated and takes comma-separated lists
 * ("--batch 1,8 --batch 16"), every value kept in a cli_ints. */
typedef enum opt_kind { OPT_INT, OPT_FLAG, OPT_STR, OPT_INTS } opt_kind;

enum { CLI_INTS_MAX = 16 };
typedef struct cli_ints {
    int v[CLI_INTS_MAX];
    int n;
} cli_ints;

typedef struct cli_opt {
    char short_name;       /* 0: long name only */
    const char *long_name;
    opt_kind kind;
    void *dst;             /* int* (INT, FLAG), const char** (STR) or cli_ints* (INTS) */
    int min;               /* INT, INTS: smallest accepted value */
    const char *help;
} cli_opt;

/* Parses argv[1..] against opts. Returns 0 on success, EXIT_USAGE after
 * printing a message, or -1 when --help was printed. */
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, int nopts,
              const char *summary);

int cmd_devices(int argc, char **argv);
int cmd_conv(int argc, char **argv);
int cmd_pool(int argc, char **argv);
int cmd_example(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tune(int argc, char **argv);

/* Helpers shared by conv and pool. */
double cli_now(void);
void cli_fill(float *v, int64_t n, uint64_t *state);
int cli_open_device(const char *name, pdnn_context **ctx, pdnn_device **dev);
void cli_print_memory_stats(pdnn_device *dev);
/* Max abs and rel error of got against want. */
void cli_errors(const float *got, const float *want, int64_t n, double *max_abs, double *max_rel);
int cli_fail(const char *what); /* prints pdnn_last_error(), returns EXIT_RUNTIME */
/* Runs op once to warm up (building programs, touching memory), then
 * iters times, waits for dev, and sets *ms (may be NULL) to the time per
 * call. Returns 0 or EXIT_RUNTIME after printing what failed. */
/* One conv2d or pool2d call as an op for the timers (b may be NULL). */
typedef struct cli_conv_call {
    const pdnn_conv2d_params *p;
    const pdnn_tensor *x, *w, *b;
    pdnn_tensor *y;
} cli_conv_call;
pdnn_status cli_conv_op(void *arg); /* arg: a cli_conv_call */
typedef struct cli_pool_call {
    const pdnn_pool2d_params *p;
    const pdnn_tensor *x;
    pdnn_tensor *y;
} cli_pool_call;
pdnn_status cli_pool_op(void *arg); /* arg: a cli_pool_call */
int cli_time(pdnn_device *dev, const char *what, int iters, pdnn_status (*op)(void *), void *arg, double *ms);
/* One warm-up call, then the best of iters calls, in ms. The library's
 * status is returned as it is (nothing printed), so that the caller can
 * tell "not available here" from a failure. */
pdnn_status cli_time_best(pdnn_device *dev, pdnn_status (*op)(void *), void *arg, int iters, double *ms);
/* Reads a whole tensor into a new malloc'd array (*out). */
int cli_read(const pdnn_tensor *t, float **out);

#endif
