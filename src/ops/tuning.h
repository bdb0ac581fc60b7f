/* The persistent tuning cache (tuning.c): autotuner results keyed by
 * device, kernel and shape, shared by every backend. */
#ifndef PDNN_TUNING_H
#define PDNN_TUNING_H

#include "backend.h"

#include <stddef.h>

/* Where the tuning cache lives (pdnn__cache_dir()/tuning-v1.tsv), written
 * into buf; NULL when no directory is known, and results then stay in
 * memory. */
const char *pdnn__tuning_file(char *buf, size_t len);

/* Copies the value stored for (device, kernel, shape) into value and
 * returns 1, or returns 0 if there is none (or it does not fit in len). */
int pdnn__tuning_lookup(const char *device, const char *kernel, const char *shape, char *value, size_t len);

/* As pdnn__tuning_lookup, but for the mode: FORCE only trusts entries this
 * process stored (so each shape is searched again once), OFF none. */
int pdnn__tuning_lookup_for(pdnn_tuning_mode mode, const char *device, const char *kernel, const char *shape,
                            char *value, size_t len);

/* Records a result in memory and in the file (merged with what other
 * processes wrote, under the file's lock). Failing to write the file is not
 * an error: the result stays in memory, and pdnn_tuning_cache_flush says
 * so. */
pdnn_status pdnn__tuning_store(const char *device, const char *kernel, const char *shape, const char *value,
                               double gflops);

/* How many times this process has read the cache file (tests: a store
 * re-reads it only when another process changed it). */
long pdnn__tuning_file_reads(void);

/* Drops what was loaded, so the next lookup reads the file again (tests). */
void pdnn__tuning_forget(void);

#endif
