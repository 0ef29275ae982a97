/* ck-basal health: the health the store has accumulated (store/health_store.h), as JSON
 * (through json_out, so a flow id's terminal controls are escaped): runs by state,
 * activations by outcome, budget exhaustions by kind, the worker counters of every
 * process that drove runs and the confinement counter, overall and per flow. No pool
 * outlives a command, so the pool gauges are 0; `ck-basal exec --health` shows a live
 * pool's.
 * Asked as the ops command "health" (serve/ops_dispatch.h): from a running serve, with
 * its live pool gauges and queue depths. --format prometheus prints the same health as
 * Prometheus text (serve/metrics_text.h). */
#include "cli/commands.h"
#include "cli/ops_call.h"
#include "base/json_out.h"
#include "proto/confinement.h"
#include "serve/metrics_text.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_health(const struct cli_globals *globals, int argc, char **argv)
{
    enum landlock_policy policy = LANDLOCK_POLICY_REQUIRED;
    bool prometheus = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--format") == 0 || strncmp(argv[i], "--format=", 9) == 0) {
            const char *format = argv[i][8] == '=' ? argv[i] + 9
                                 : i + 1 < argc    ? argv[++i]
                                                   : NULL;
            if (format == NULL) {
                fprintf(stderr, "ck-basal health: --format needs json or prometheus\n");
                return EXIT_USAGE;
            }
            if (strcmp(format, "json") != 0 && strcmp(format, "prometheus") != 0) {
                fprintf(stderr, "ck-basal health: --format must be json or prometheus\n");
                return EXIT_USAGE;
            }
            prometheus = strcmp(format, "prometheus") == 0;
        } else if (strcmp(argv[i], "--landlock=required") == 0) {
            policy = LANDLOCK_POLICY_REQUIRED;
        } else if (strcmp(argv[i], "--landlock=optional") == 0) {
            policy = LANDLOCK_POLICY_OPTIONAL;
        } else {
            fprintf(stderr, "ck-basal health: unknown argument '%s' (expected "
                            "--format json|prometheus or --landlock=required|optional)\n",
                    argv[i]);
            return EXIT_USAGE;
        }
    }
    json_t *args = json_object(), *h;
    json_object_set_new(args, "landlock", json_string(policy == LANDLOCK_POLICY_OPTIONAL
                                                          ? "optional" : "required"));
    json_t *request = cli_ops_request("health", args);
    int status = cli_ops_call(globals, "health", request, &h);
    json_decref(request);
    if (status != EXIT_OK)
        return status;
    if (prometheus) {
        char err[512];
        char *page = metrics_text(h, err, sizeof err);
        json_decref(h);
        if (page == NULL) {
            fprintf(stderr, "ck-basal health: %s\n", err);
            return EXIT_REFUSED;
        }
        fputs(page, stdout);
        free(page);
        return EXIT_OK;
    }
    char *text = json_out_dumps(h, globals->json ? JSON_COMPACT : JSON_INDENT(2));
    json_decref(h);
    if (text == NULL) {
        fprintf(stderr, "ck-basal health: out of memory\n");
        return EXIT_REFUSED;
    }
    puts(text);
    free(text);
    return EXIT_OK;
}
