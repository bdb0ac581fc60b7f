/* `--profile` of `polydnn train` and `polydnn run`: the session's per-node
 * times (pdnn_session_config.profile) as two tables, the nodes taking the
 * most time and the totals per op type. */
#ifndef POLYDNN_PROFILE_H
#define POLYDNN_PROFILE_H

#include "polydnn.h"

#include <stdio.h>

/* Prints to out; top is how many node rows at most (the op-type table is
 * always whole). Returns 0, or 1 after printing why it could not. */
int cli_print_profile(FILE *out, const pdnn_graph *g, const pdnn_session *s, int top);

#endif
