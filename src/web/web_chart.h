/* The health page's chart: runs per minute over the last hour, stacked by state, as
 * inline SVG rendered on the server (no script, no external asset). A run counts in
 * the minute it was admitted (created_at_ms), under the state it has now. */
#ifndef BASAL_WEB_WEB_CHART_H
#define BASAL_WEB_WEB_CHART_H

#include <jansson.h>

struct html;

#define WEB_CHART_MINUTES 60

/* runs: the runs command's data (an array of runs). */
void web_chart_runs_per_minute(struct html *h, const json_t *runs, long long now_ms);

#endif
