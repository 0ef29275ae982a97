/* Codemode runs as `ck-basal runs` lists them and `ck-basal journal c<id>` shows one,
 * rendered from the data of the ops commands "runs" and "journal"
 * (serve/ops_dispatch.h; docs/operations.md has the formats). */
#include "cli/commands.h"
#include "cli/term_text.h"
#include "base/names.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define SHOWN_MAX 120 /* bytes of args or values in the human listing */

static const char *text(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* A cell of script text: escaped and cut. */
static void print_cell(const char *cell)
{
    char shown[SHOWN_MAX + 4];
    fputs(term_show(shown, sizeof shown, cell, 0), stdout);
}

void codemode_view_run_line(const void *run)
{
    char ref[TERM_SHOWN_CAP(24)], state[TERM_SHOWN_CAP(16)], error[SHOWN_MAX + 4];
    printf("%-6s %-20s %-7s %-16s %s\n", term_show(ref, sizeof ref, text(run, "run"), 0),
           "(codemode)", "-", term_show(state, sizeof state, text(run, "state"), 0),
           term_show(error, sizeof error, text(run, "error"), 0));
}

static void print_call(const json_t *c)
{
    const json_t *settled = json_object_get(c, "outcome");
    const char *outcome = !json_is_object(settled) ? "(no outcome)"
                          : json_object_get(settled, "fulfilled") != NULL ? "fulfilled"
                                                                          : "rejected";
    const char *tool = text(c, "tool"), *cls = text(c, "class");
    char kind[40 + 4], tool_shown[TERM_SHOWN_CAP(OBJECT_NAME_MAX)], cls_shown[TERM_SHOWN_CAP(16)];
    char decision[TERM_SHOWN_CAP(16)], state[TERM_SHOWN_CAP(16)];
    printf("%-5u %-10s %-24s %-9s %-8s %-8s %-12s ",
           (unsigned)json_integer_value(json_object_get(c, "position")),
           term_show(kind, sizeof kind, text(c, "kind"), 0),
           term_show(tool_shown, sizeof tool_shown, tool != NULL ? tool : "-", 0),
           term_show(cls_shown, sizeof cls_shown, cls != NULL ? cls : "-", 0),
           term_show(decision, sizeof decision, text(c, "decision"), 0),
           term_show(state, sizeof state, text(c, "state"), 0), outcome);
    print_cell(text(c, "value_text"));
    fputs("   args ", stdout);
    print_cell(text(c, "args_text"));
    fputs("\n", stdout);
}

void codemode_view_journal(const void *run)
{
    char ref[TERM_SHOWN_CAP(24)], sha[TERM_SHOWN_CAP(12)], state[TERM_SHOWN_CAP(16)];
    const char *digest = text(run, "script_sha256");
    char head[13] = "";
    if (digest != NULL)
        snprintf(head, sizeof head, "%.12s", digest);
    printf("codemode run %s (script ", term_show(ref, sizeof ref, text(run, "run"), 0));
    print_cell(text(run, "script"));
    printf(", sha256 %s...): %s\n", term_show(sha, sizeof sha, head, 0),
           term_show(state, sizeof state, text(run, "state"), 0));
    json_int_t over = json_integer_value(json_object_get(run, "over_limit_calls"));
    if (over > 0)
        printf("%" JSON_INTEGER_FORMAT " more tool calls were refused over the run's limit"
               " (not listed)\n", over);
    printf("%-5s %-10s %-24s %-9s %-8s %-8s %-12s %s\n", "POS", "KIND", "TOOL", "CLASS",
           "DECISION", "STATE", "OUTCOME", "VALUE");
    const json_t *calls = json_object_get(run, "calls");
    for (size_t i = 0; i < json_array_size(calls); i++)
        print_call(json_array_get(calls, i));
}
