/* ck-basal event emit MODULE NAME VERSION [--payload JSON] [--id ID] (docs/triggers.md,
 * "Events"): the ops command "event.emit". A running serve records the event and admits
 * one run per listening flow at once; without one the event is recorded pending and the
 * next serve delivers it (serve/ops_dispatch.h answers on the store). */
#include "cli/commands.h"
#include "cli/json_argument.h"
#include "cli/ops_call.h"
#include "cli/term_text.h"
#include "base/names.h"
#include "store/events.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define EVENT_USAGE "usage: ck-basal event emit MODULE NAME VERSION [--payload JSON] [--id ID]"

static int usage(const char *why)
{
    fprintf(stderr, "ck-basal event: %s (%s)\n", why, EVENT_USAGE);
    return EXIT_USAGE;
}

/* A random id: 32 hex digits from getrandom. Fails closed (no id, no event). */
static bool random_id(char out[33])
{
    unsigned char bytes[16];
    size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
        if (n <= 0)
            return false;
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof bytes; i++)
        snprintf(out + 2 * i, 3, "%02x", bytes[i]);
    return true;
}

static void print_flow_list(const json_t *list, const char *label, const char *key)
{
    size_t i;
    const json_t *e;
    json_array_foreach (list, i, e) {
        char flow[TERM_SHOWN_CAP(FLOW_ID_MAX)];
        term_show(flow, sizeof flow, json_string_value(json_object_get(e, "flow")), 0);
        if (strcmp(key, "run") == 0)
            printf("  %s: flow %s, run %" JSON_INTEGER_FORMAT "\n", label, flow,
                   json_integer_value(json_object_get(e, "run")));
    }
}

/* The human rendering; refusals go to stderr, one line per flow. */
static int report(const json_t *data)
{
    const json_t *ev = json_object_get(data, "event");
    char id[TERM_SHOWN_CAP(EVENT_ID_MAX)];
    term_show(id, sizeof id, json_string_value(json_object_get(ev, "id")), 0);
    if (!json_is_true(json_object_get(data, "delivered")) ||
        json_object_get(data, "runs") == NULL) {
        printf("event %s: %s\n", id,
               json_is_true(json_object_get(data, "pending"))
                   ? "recorded; the next serve delivers it"
                   : "recorded before and already delivered; nothing to do");
        return EXIT_OK;
    }
    const json_t *runs = json_object_get(data, "runs");
    const json_t *duplicates = json_object_get(data, "duplicates");
    const json_t *refused = json_object_get(data, "refused");
    printf("event %s: delivered: %zu run(s), %zu duplicate(s), %zu refused\n", id,
           json_array_size(runs), json_array_size(duplicates), json_array_size(refused));
    print_flow_list(runs, "admitted", "run");
    print_flow_list(duplicates, "duplicate (already admitted)", "run");
    size_t i;
    const json_t *e;
    json_array_foreach (refused, i, e) {
        char flow[TERM_SHOWN_CAP(FLOW_ID_MAX)], why[TERM_SHOWN_CAP(1024)];
        fprintf(stderr, "ck-basal event: flow %s refused the event: %s\n",
                term_show(flow, sizeof flow, json_string_value(json_object_get(e, "flow")), 0),
                term_show(why, sizeof why, json_string_value(json_object_get(e, "reason")), 0));
    }
    return json_array_size(refused) > 0 ? EXIT_REFUSED : EXIT_OK;
}

static int event_emit(const struct cli_globals *g, int argc, char **argv)
{
    const char *words[3] = {NULL, NULL, NULL}, *payload_text = NULL, *id = NULL;
    int given = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--payload") == 0 && i + 1 < argc && payload_text == NULL) {
            payload_text = argv[++i];
        } else if (strcmp(argv[i], "--id") == 0 && i + 1 < argc && id == NULL) {
            id = argv[++i];
        } else if (argv[i][0] != '-' && given < 3) {
            words[given++] = argv[i];
        } else {
            char why[160];
            char shown[TERM_SHOWN_CAP(64)];
            snprintf(why, sizeof why, "unexpected argument '%s'", term_show(shown, sizeof shown, argv[i], 0));
            return usage(why);
        }
    }
    if (given != 3)
        return usage("needs a module, an event name and a version");
    if (!object_name_valid(words[0]) || !object_name_valid(words[1]))
        return usage("module and name must be names (1-63 of [a-z0-9_.-], starting with "
                     "[a-z0-9])");
    long long version;
    if (!cli_parse_int(words[2], 1, INT32_MAX, &version))
        return usage("the version must be a whole number from 1 to 2147483647");
    char generated[33];
    if (id == NULL) {
        if (!random_id(generated)) {
            fprintf(stderr, "ck-basal event: no random id (getrandom failed); give --id\n");
            return EXIT_REFUSED;
        }
        id = generated;
    } else if (!events_id_valid(id)) {
        return usage("--id must be 1 to 128 of [A-Za-z0-9._:-]");
    }
    int bad_argument = EXIT_OK;
    char *payload = cli_json_argument("event", "--payload",
                                      payload_text != NULL ? payload_text : "{}", &bad_argument);
    if (payload == NULL)
        return bad_argument;
    if (payload[0] != '{') {
        free(payload);
        return usage("--payload must be a JSON object");
    }
    json_t *args = json_object(), *data = NULL;
    json_object_set_new(args, "module", json_string(words[0]));
    json_object_set_new(args, "name", json_string(words[1]));
    json_object_set_new(args, "version", json_integer(version));
    json_object_set_new(args, "id", json_string(id));
    json_object_set_new(args, "payload", json_string(payload));
    free(payload);
    json_t *request = cli_ops_request("event.emit", args);
    int status = cli_ops_call(g, "event", request, &data);
    json_decref(request);
    if (status != EXIT_OK)
        return status;
    if (g->json) {
        const json_t *refused = json_object_get(data, "refused");
        status = json_array_size(refused) > 0 ? EXIT_REFUSED : EXIT_OK;
        cli_print_json(data);
        return status;
    }
    status = report(data);
    json_decref(data);
    return status;
}

int cmd_event(const struct cli_globals *g, int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "emit") != 0)
        return usage("which subcommand? (emit)");
    return event_emit(g, argc - 1, argv + 1);
}
