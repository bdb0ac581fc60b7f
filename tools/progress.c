/* Training progress (see progress.h). */
#include "progress.h"

#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_init(progress *p, FILE *out, int tty)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    p->tty = tty >= 0 ? tty != 0 : (out && isatty(fileno(out)));
    p->interval = p->tty ? 0.1 : 10.0;
    p->bar_width = 24;
}

void progress_epoch(progress *p, int epoch, int epochs, int64_t steps, double now)
{
    p->epoch = epoch;
    p->epochs = epochs;
    p->steps = steps > 0 ? steps : 0;
    p->step = 0;
    p->images = 0;
    p->loss_sum = 0;
    p->loss_n = 0;
    p->t0 = now;
    p->t1 = now;
    p->last = now;
    p->drawn = 0;
}

static void fmt_duration(double s, char *buf, size_t len)
{
    if (!(s >= 0) || s > 359999)
        snprintf(buf, len, "--");
    else if (s >= 3600)
        snprintf(buf, len, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60)
        snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, len, "%ds", (int)(s + 0.5));
}

void progress_format(const progress *p, double now, char *buf, size_t len)
{
    double el = now - p->t0;
    double rate = el > 0 ? (double)p->images / el : 0;
    double loss = p->loss_n ? p->loss_sum / (double)p->loss_n : NAN;
    char eta[32] = "--";
    if (p->steps && p->step >= p->steps)
        fmt_duration(0, eta, sizeof eta);
    else if (p->steps && p->step >= 2 && now > p->t1)
        fmt_duration((now - p->t1) / (double)(p->step - 1) * (double)(p->steps - p->step), eta, sizeof eta);
    size_t w = 0;
    w += (size_t)snprintf(buf + w, len - w, "epoch %d/%d step %lld", p->epoch, p->epochs, (long long)p->step);
    if (w < len && p->steps)
        w += (size_t)snprintf(buf + w, len - w, "/%lld", (long long)p->steps);
    if (w < len && p->tty && p->steps) {
        int fill = (int)((double)p->bar_width * (double)p->step / (double)p->steps);
        if (fill > p->bar_width)
            fill = p->bar_width;
        if (w + (size_t)p->bar_width + 4 < len) {
            buf[w++] = ' ';
            buf[w++] = '[';
            for (int i = 0; i < p->bar_width; i++)
                buf[w++] = i < fill ? '#' : '.';
            buf[w++] = ']';
            buf[w] = '\0';
        }
    } else if (w < len && p->steps) {
        w += (size_t)snprintf(buf + w, len - w, " (%d%%)", (int)(100.0 * (double)p->step / (double)p->steps));
    }
    if (w < len)
        snprintf(buf + w, len - w, " %.1f images/s loss %.4f ETA %s", rate, loss, eta);
}

static void show(progress *p, double now)
{
    char line[256];
    progress_format(p, now, line, sizeof line);
    if (p->tty) {
        /* \033[K clears what a longer previous line left. */
        fprintf(p->out, "\r%s\033[K", line);
        p->drawn = 1;
    } else {
        fprintf(p->out, "%s\n", line);
    }
    fflush(p->out);
    p->last = now;
}

void progress_step(progress *p, int64_t images, double loss, double now)
{
    p->step++;
    if (p->step == 1)
        p->t1 = now;
    p->images += images;
    p->loss_sum += loss;
    p->loss_n++;
    if (!p->out)
        return;
    /* The last step's line comes from progress_end_epoch. */
    if (now - p->last >= p->interval && !(p->steps && p->step >= p->steps))
        show(p, now);
}

void progress_clear(progress *p)
{
    if (!p->out || !p->tty || !p->drawn)
        return;
    fputs("\r\033[K", p->out);
    fflush(p->out);
    p->drawn = 0;
}

void progress_end_epoch(progress *p, double now)
{
    if (!p->out)
        return;
    show(p, now);
    if (p->tty)
        fputc('\n', p->out);
    double el = now - p->t0;
    fprintf(p->out, "epoch %d/%d done: %lld images in %.1f s (%.1f images/s), loss %.4f\n", p->epoch, p->epochs,
            (long long)p->images, el, el > 0 ? (double)p->images / el : 0.0,
            p->loss_n ? p->loss_sum / (double)p->loss_n : NAN);
    fflush(p->out);
    p->drawn = 0;
}
