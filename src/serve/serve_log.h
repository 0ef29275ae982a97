/* serve's event log on stderr, one line per event, for journald and grep
 * (docs/operations.md, "serve's log"):
 *
 *   ts=2026-12-02T05:00:00.123Z event=run_ended run=12 flow=notes state=succeeded duration_ms=41
 *
 * or, with --log-json, the same fields as one JSON object per line. Values that are not
 * plain ([A-Za-z0-9_.:/@+-]) are double-quoted with \", \\ and every control
 * character escaped, so a line is always one line and never a terminal control. Lines
 * from different threads never interleave (one write per line). */
#ifndef BASAL_SERVE_SERVE_LOG_H
#define BASAL_SERVE_SERVE_LOG_H

#include <stdbool.h>

void serve_log_json(bool json);

/* The end of serve_log's pairs: a null pointer of the type the pairs have. */
#define LOG_END ((const char *)0)

/* event, then key/value pairs of strings ending with LOG_END: serve_log("run_ended",
 * "run", "12", "flow", "notes", LOG_END). */
void serve_log(const char *event, ...) __attribute__((sentinel));

#endif
