/* ck-basal health: the health the store has accumulated (store/health_store.h), as JSON:
 * runs by state, activations by outcome overall and per flow, the worker counters of
 * every process that drove runs, and the confinement counter. No pool outlives a
 * command, so the pool gauges are 0; `ck-basal exec --health` shows a live pool's.
 * Asked as the ops command "health" (serve/ops_dispatch.h). */
#include "cli/commands.h"
#include "cli/ops_call.h"
#include "proto/confinement.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_health(const struct cli_globals *globals, int argc, char **argv)
{
    enum landlock_policy policy = LANDLOCK_POLICY_REQUIRED;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--landlock=required") == 0) {
            policy = LANDLOCK_POLICY_REQUIRED;
        } else if (strcmp(argv[i], "--landlock=optional") == 0) {
            policy = LANDLOCK_POLICY_OPTIONAL;
        } else {
            fprintf(stderr, "ck-basal health: unknown argument '%s' "
                            "(expected --landlock=required or --landlock=optional)\n", argv[i]);
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
    char *text = json_dumps(h, globals->json ? JSON_COMPACT : JSON_INDENT(2));
    json_decref(h);
    if (text == NULL) {
        fprintf(stderr, "ck-basal health: out of memory\n");
        return EXIT_REFUSED;
    }
    puts(text);
    free(text);
    return EXIT_OK;
}
