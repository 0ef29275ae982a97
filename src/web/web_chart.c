/* The runs-per-minute chart (web/web_chart.h). */
#include "web/web_chart.h"
#include "web/html_text.h"

#include <string.h>

#define CHART_W 720
#define CHART_H 180
#define BAR_W (CHART_W / WEB_CHART_MINUTES)
#define MINUTE_MS 60000LL

/* The states the chart stacks, bottom first; anything else counts as "other". */
static const struct {
    const char *state;
    const char *colour;
} SERIES[] = {
    {"succeeded", "#2e7d32"}, {"failed", "#c62828"},  {"cancelled", "#757575"},
    {"needs_reconcile", "#ef6c00"}, {"running", "#1565c0"}, {"other", "#7b1fa2"},
};
#define SERIES_N (sizeof SERIES / sizeof SERIES[0])

static size_t series_of(const char *state)
{
    for (size_t i = 0; i + 1 < SERIES_N; i++)
        if (state != NULL && strcmp(state, SERIES[i].state) == 0)
            return i;
    return SERIES_N - 1;
}

void web_chart_runs_per_minute(struct html *h, const json_t *runs, long long now_ms)
{
    long counts[WEB_CHART_MINUTES][SERIES_N];
    memset(counts, 0, sizeof counts);
    long long start = now_ms - WEB_CHART_MINUTES * MINUTE_MS;
    size_t i;
    const json_t *run;
    json_array_foreach(runs, i, run) {
        long long at = json_integer_value(json_object_get(run, "created_at_ms"));
        if (at <= start || at > now_ms)
            continue;
        long long minute = (at - start - 1) / MINUTE_MS;
        if (minute < 0 || minute >= WEB_CHART_MINUTES)
            continue;
        counts[minute][series_of(json_string_value(json_object_get(run, "state")))]++;
    }
    long peak = 1;
    for (size_t m = 0; m < WEB_CHART_MINUTES; m++) {
        long sum = 0;
        for (size_t s = 0; s < SERIES_N; s++)
            sum += counts[m][s];
        if (sum > peak)
            peak = sum;
    }
    html_rawf(h, "<svg id=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
              "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"runs per minute "
              "over the last hour, by state\">", CHART_W, CHART_H + 20, CHART_W, CHART_H + 20);
    html_rawf(h, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
              "stroke=\"#ccc\"/>", CHART_W, CHART_H);
    for (size_t m = 0; m < WEB_CHART_MINUTES; m++) {
        int y = CHART_H;
        for (size_t s = 0; s < SERIES_N; s++) {
            if (counts[m][s] == 0)
                continue;
            int height = (int)(counts[m][s] * (CHART_H - 10) / peak);
            if (height < 1)
                height = 1;
            y -= height;
            html_rawf(h, "<rect class=\"bar\" data-state=\"%s\" data-minute=\"%zu\" x=\"%zu\" "
                      "y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>%ld %s, %zu min "
                      "ago</title></rect>", SERIES[s].state, m, m * BAR_W + 1, y, BAR_W - 2,
                      height, SERIES[s].colour, counts[m][s], SERIES[s].state,
                      (size_t)WEB_CHART_MINUTES - m);
        }
    }
    html_rawf(h, "<text x=\"2\" y=\"%d\" font-size=\"11\">-60 min</text>"
              "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">now</text>"
              "<text x=\"4\" y=\"12\" font-size=\"11\">peak %ld/min</text></svg>",
              CHART_H + 14, CHART_W - 2, CHART_H + 14, peak);
    html_raw(h, "<p class=\"legend\">");
    for (size_t s = 0; s < SERIES_N; s++)
        html_rawf(h, "<span class=\"key\"><svg width=\"10\" height=\"10\"><rect width=\"10\" "
                  "height=\"10\" fill=\"%s\"/></svg> %s</span> ", SERIES[s].colour,
                  SERIES[s].state);
    html_raw(h, "</p>");
}
