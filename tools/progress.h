/* The training progress display of `polydnn train`: on a terminal, one
 * line redrawn in place with \r (epoch, step/steps, a bar, images/s, the
 * running loss, ETA); otherwise (a pipe, a log file) a plain line every
 * interval seconds and at the end of each epoch, so logs stay readable.
 * Time comes from the caller (progress_now()), so tests drive a clock. */
#ifndef POLYDNN_PROGRESS_H
#define POLYDNN_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct progress {
    FILE *out;
    int tty;         /* 1: redraw one line; 0: plain periodic lines */
    double interval; /* seconds between plain lines (10) or redraws (0.1) */
    int bar_width;   /* characters inside the bar's brackets */
    int epoch, epochs;
    int64_t steps; /* steps in this epoch; 0 when unknown */
    int64_t step;  /* steps done in this epoch */
    int64_t images;
    double loss_sum; /* the running loss is the mean over the epoch so far */
    int64_t loss_n;
    double t0, last; /* epoch start; last line printed (or redrawn) */
    double t1;       /* when the epoch's first step ended: the ETA counts from
                        there, as that step builds kernels and pays first touches */
    int drawn;       /* tty: a line is on screen without its newline */
} progress;

/* tty: 1 or 0 to force a form, -1 to ask isatty(fileno(out)). */
void progress_init(progress *p, FILE *out, int tty);

/* Starts epoch (1-based) of epochs, with steps steps, at time now. */
void progress_epoch(progress *p, int epoch, int epochs, int64_t steps, double now);

/* One step done: images trained in it and its loss (NaN or infinite
 * losses are shown as such, not averaged away). Prints when due. */
void progress_step(progress *p, int64_t images, double loss, double now);

/* Ends the epoch: the final line (with its newline on a terminal), then
 * "epoch E/N done: I images in S s (R images/s), loss L". */
void progress_end_epoch(progress *p, double now);

/* On a terminal, erases the redrawn line so that the caller's own line
 * (a step's loss on stdout) does not land on top of it; the next step
 * redraws it. Nothing elsewhere. */
void progress_clear(progress *p);

/* The line progress_step would show now, without the \r: for tests and
 * for the caller's own messages. */
void progress_format(const progress *p, double now, char *buf, size_t len);

/* Seconds on a monotonic clock. */
double progress_now(void);

#endif
