/* What the benchmark programs share: a monotonic clock in microseconds, growable
 * sample sets with nearest-rank percentiles, and the Markdown row every table uses
 * ("| name | n | median | p95 | min | ratio | goal | met |"). */
#ifndef BASAL_BENCH_STATS_H
#define BASAL_BENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>

double now_us(void);

struct samples {
    double *v;
    size_t n, cap;
};

/* Appends x (exits the program when out of memory: a benchmark cannot go on). */
void push(struct samples *s, double x);

struct stats {
    size_t n;
    double median, p95, min, max;
};

/* Nearest-rank percentiles of the samples (sorts them). */
struct stats summarize(struct samples *s);

/* Per-call samples from runs with n calls (tn) and with none (t0): each run with n
 * calls, less the median of those without, over n. Sorts t0. */
void per_call_of(const struct samples *tn, struct samples *t0, unsigned n, struct samples *out);

void fmt_time(double us, char *buf, size_t cap);
void fmt_kib(double kib, char *buf, size_t cap);

enum unit { TIME, KIB };

/* One table row on stdout. */
void row(const char *name, enum unit unit, const struct stats *st, const char *ratio,
         const char *goal, const char *met);

/* "yes", "no", or a split verdict when the median and p95 disagree. */
const char *verdict(bool median_ok, bool p95_ok);

#endif
