/* The conv2d algorithms of this build as the tool shows them: every list
 * of names and every --algo value comes from the library's registry
 * (pdnn_conv_algo_count, pdnn_conv_algo_name), so an algorithm a backend
 * registers appears here with no change to the tool. */
#ifndef POLYDNN_CLI_ALGO_H
#define POLYDNN_CLI_ALGO_H

#include "polydnn.h"

#include <stddef.h>

/* What cli_algo_parse returns for --algo help. */
enum { CLI_ALGO_HELP = -2 };

/* Whether id names an algorithm of this build: ids between those the
 * backends register may name none ("unknown"). */
int cli_algo_exists(int id);

/* The names of this build's algorithms, "auto" first, joined by sep; the
 * last one by last_sep when it is not NULL ("a, b or c"). Returns buf. */
const char *cli_algo_names(char *buf, size_t len, const char *sep, const char *last_sep);

/* An --algo flag's help text: the names, then what (e.g. "the algorithm
 * (default auto: ...)"), then what --algo help does. Returns buf. */
const char *cli_algo_flag_help(char *buf, size_t len, const char *what);

/* --algo's value: the algorithm's id, CLI_ALGO_HELP for "help", or -1
 * after printing "polydnn CMD: --algo must be one of ..." (a usage
 * error). */
int cli_algo_parse(const char *cmd, const char *value);

/* Prints, for the convolution of xd by wd with p (output in y_layout) on
 * dev, every algorithm of this build as a Markdown table: whether dev's
 * backend has it, whether it applies, its place in AUTO's order, its
 * workspace, whether it is tunable, the configuration it would run, and
 * why it does not apply or why AUTO passes over it; then the order in
 * which AUTO tries them. Runs nothing. 0, or EXIT_RUNTIME after printing
 * what failed. */
int cli_algo_print(pdnn_device *dev, const pdnn_conv2d_params *p, const pdnn_tensor_desc *xd,
                   const pdnn_tensor_desc *wd, pdnn_layout y_layout);

#endif
