#include "bench_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}


void push(struct samples *s, double x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        double *grown = realloc(s->v, cap * sizeof *grown);
        if (grown == NULL) {
            fprintf(stderr, "benchmark: out of memory\n");
            exit(1);
        }
        s->v = grown;
        s->cap = cap;
    }
    s->v[s->n++] = x;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}


/* Nearest-rank percentiles of the samples (sorts them). */
struct stats summarize(struct samples *s)
{
    struct stats st = {0};
    st.n = s->n;
    if (s->n == 0)
        return st;
    qsort(s->v, s->n, sizeof s->v[0], cmp_double);
    st.min = s->v[0];
    st.max = s->v[s->n - 1];
    st.median = s->n % 2 ? s->v[s->n / 2] : (s->v[s->n / 2 - 1] + s->v[s->n / 2]) / 2;
    size_t rank = (size_t)((double)s->n * 0.95 + 0.999999);
    st.p95 = s->v[(rank == 0 ? 1 : rank) - 1];
    return st;
}

/* Per-call samples from activations with n calls and with none: each activation
 * with n calls, less the median of those without, over n. (Pairing each with its own
 * 0-call run instead would let one slow 0-call run, e.g. the one that retires its
 * worker at 256 activations, make a sample negative.) Sorts t0. */
void per_call_of(const struct samples *tn, struct samples *t0, unsigned n,
                        struct samples *out)
{
    double base = summarize(t0).median;
    for (size_t i = 0; i < tn->n; i++)
        push(out, (tn->v[i] - base) / n);
}

void fmt_time(double us, char *buf, size_t cap)
{
    if (us >= 1000)
        snprintf(buf, cap, "%.2f ms", us / 1000);
    else if (us >= 10)
        snprintf(buf, cap, "%.1f µs", us);
    else
        snprintf(buf, cap, "%.2f µs", us);
}

void fmt_kib(double kib, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.2f MiB", kib / 1024);
}


void row(const char *name, enum unit unit, const struct stats *st, const char *ratio,
                const char *goal, const char *met)
{
    char med[32], p95[32], mn[32];
    void (*fmt)(double, char *, size_t) = unit == TIME ? fmt_time : fmt_kib;
    fmt(st->median, med, sizeof med);
    fmt(st->p95, p95, sizeof p95);
    fmt(st->min, mn, sizeof mn);
    printf("| %s | %zu | %s | %s | %s | %s | %s | %s |\n", name, st->n, med, p95, mn, ratio,
           goal, met);
}

/* "yes", "no", or a split verdict when the median and p95 disagree. */
const char *verdict(bool median_ok, bool p95_ok)
{
    if (median_ok && p95_ok)
        return "**yes** (median and p95)";
    if (median_ok)
        return "**yes** at the median, no at p95";
    return "**no**";
}

