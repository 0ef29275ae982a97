/* ck-basal run ID [--trigger JSON], ck-basal recover and ck-basal flow reconcile: drive
 * runs to their end in this process (flows/run_driver.h), or, when a serve runs on the
 * home, ask it to (ops commands "run", "recover", "flow.reconcile"): it alone then
 * changes the runs. ck-basal cancel RUN: the operator ends a run that
 * has not (store/runs.h, runs_cancel), asked as the ops command "cancel"
 * (serve/ops_dispatch.h). ck-basal flow complete KEY REPLY: a module completes a
 * long-running call (flows/long_running.h), the ops command "flow.complete". */
#include "cli/commands.h"
#include "cli/json_argument.h"
#include "cli/ops_call.h"
#include "cli/term_text.h"
#include "flows/long_running.h"
#include "flows/reconcile.h"
#include "flows/run_driver.h"
#include "store/runs.h"
#include "store/store.h"
#include "proto/utf8.h"
#include "base/names.h"
#include "serve/ops_commands.h"
#include "serve/run_view.h"

#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUN_USAGE "usage: ck-basal run ID [--trigger JSON] [--trigger-id TEXT] [--detach] " \
                  "[--landlock=required|optional]"
#define RECOVER_USAGE "usage: ck-basal recover [--landlock=required|optional]"

/* Prints how a run ended from its view (serve/run_view.h), whether this process drove
 * it or a serve did; returns the exit status it means. */
static int report_view(const struct cli_globals *g, json_t *view)
{
    json_t *o = json_object_get(view, "run");
    const char *state = json_string_value(json_object_get(o, "state"));
    int status = state != NULL && strcmp(state, "succeeded") == 0 ? EXIT_OK : EXIT_REFUSED;
    if (g->json) {
        cli_print_json(json_incref(o));
        return status;
    }
    /* result and error are the script's: escaped, one line each (cli/term_text.h). */
    printf("run %" PRId64 " of flow ", (int64_t)json_integer_value(json_object_get(o, "run")));
    term_puts(stdout, json_string_value(json_object_get(o, "flow")), 0);
    printf(": %s\n", state != NULL ? state : "?");
    const char *result = json_string_value(json_object_get(view, "result_text"));
    if (result != NULL) {
        fputs("result: ", stdout);
        term_puts(stdout, result, 0);
        putchar('\n');
    }
    const char *error = json_string_value(json_object_get(o, "error"));
    if (error != NULL) {
        fputs("error: ", stdout);
        term_puts(stdout, error, 0);
        putchar('\n');
    }
    if (state != NULL && strcmp(state, "suspended") == 0) {
        long long id = (long long)json_integer_value(json_object_get(o, "run"));
        printf("waiting for long-running calls (ck-basal journal %lld shows them and their"
               " keys): ck-basal flow complete KEY REPLY, or flow reconcile %lld POSITION ...,"
               " resumes it\n", id, id);
    }
    return status;
}

static int report(const struct cli_globals *g, const struct run_report *rep)
{
    json_t *view = run_view_json(rep);
    if (view == NULL) {
        fprintf(stderr, "ck-basal: out of memory\n");
        return EXIT_REFUSED;
    }
    int status = report_view(g, view);
    json_decref(view);
    return status;
}

/* A serve runs on the home: it admits the run and (unless detach) answers when the run
 * has ended. Returns the exit status. */
static int run_through_serve(const struct cli_globals *g, int fd, const char *flow,
                             const char *trigger, const char *trigger_id, bool detach)
{
    json_t *args = json_object();
    json_object_set_new(args, "flow", json_string(flow));
    json_object_set_new(args, "trigger", json_string(trigger));
    json_object_set_new(args, "trigger_id", trigger_id != NULL ? json_string(trigger_id) : json_null());
    json_object_set_new(args, "detach", json_boolean(detach));
    json_t *request = cli_ops_request("run", args), *data = NULL;
    if (request == NULL) {
        close(fd);
        term_error_line("run", "out of memory");
        return EXIT_REFUSED;
    }
    int status = cli_ops_send("run", fd, request, &data);
    json_decref(request);
    if (status != EXIT_OK)
        return status;
    if (!detach) {
        status = report_view(g, data);
    } else if (g->json) {
        cli_print_json(json_incref(data));
    } else {
        printf("run %" PRId64 " of flow ", (int64_t)json_integer_value(json_object_get(data, "run")));
        term_puts(stdout, flow, 0);
        printf(": pending (handed to serve)\n");
    }
    json_decref(data);
    return status;
}

/* "ck-basal WHAT: run N: ERR" and suffix on stderr; err may quote the script or the
 * store, so it is escaped (cli/term_text.h). */
static void run_error(const char *what, int64_t run_id, const char *err, const char *suffix)
{
    char shown[TERM_SHOWN_CAP(1024)];
    fprintf(stderr, "ck-basal %s: run %" PRId64 ": %s%s\n", what, run_id,
            term_show(shown, sizeof shown, err, 0), suffix);
}

static bool parse_landlock(const char *arg, struct pool_config *cfg)
{
    if (strcmp(arg, "--landlock=required") == 0)
        cfg->policy = LANDLOCK_POLICY_REQUIRED;
    else if (strcmp(arg, "--landlock=optional") == 0)
        cfg->policy = LANDLOCK_POLICY_OPTIONAL;
    else
        return false;
    return true;
}

struct session {
    struct store *store;
    char home[PATH_MAX];
    struct pool_config cfg;
    struct run_driver driver;
};

static int session_open(const struct cli_globals *g, const char *what, struct session *s)
{
    if (cli_open_store(g, what, &s->store, s->home) != 0)
        return -1;
    memset(&s->driver, 0, sizeof s->driver);
    s->cfg.spares = 0; /* one run at a time: no spare to keep warm */
    s->driver.store = s->store;
    s->driver.home = s->home;
    s->driver.pool = pool_new(&s->cfg);
    if (s->driver.pool == NULL) {
        fprintf(stderr, "ck-basal %s: out of memory\n", what);
        store_close(s->store);
        return -1;
    }
    return 0;
}

static void session_close(struct session *s)
{
    pool_free(s->driver.pool);
    store_close(s->store);
}

int cmd_run(const struct cli_globals *g, int argc, char **argv)
{
    struct session s;
    pool_config_defaults(&s.cfg);
    const char *id = NULL, *trigger_text = NULL, *trigger_id = NULL;
    bool detach = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--detach") == 0) {
            detach = true;
            continue;
        }
        if ((strcmp(argv[i], "--trigger") == 0 || strcmp(argv[i], "--trigger-id") == 0) &&
            i + 1 < argc) {
            if (strcmp(argv[i], "--trigger") == 0)
                trigger_text = argv[++i];
            else
                trigger_id = argv[++i];
        } else if (parse_landlock(argv[i], &s.cfg)) {
            continue;
        } else if (argv[i][0] == '-' || id != NULL) {
            fprintf(stderr, "ck-basal run: unexpected argument '%s' (%s)\n", argv[i], RUN_USAGE);
            return EXIT_USAGE;
        } else {
            id = argv[i];
        }
    }
    if (id == NULL) {
        fprintf(stderr, "ck-basal run: which flow? (%s)\n", RUN_USAGE);
        return EXIT_USAGE;
    }
    if (trigger_id != NULL && (trigger_id[0] == '\0' || strlen(trigger_id) > RUN_TRIGGER_ID_MAX ||
                               !utf8_valid((const uint8_t *)trigger_id, strlen(trigger_id)))) {
        fprintf(stderr, "ck-basal run: --trigger-id must be 1 to %u bytes of UTF-8\n",
                RUN_TRIGGER_ID_MAX);
        return EXIT_USAGE;
    }
    int bad_argument = EXIT_OK;
    char *trigger = cli_json_argument("run", "--trigger", trigger_text != NULL ? trigger_text : "{}",
                                  &bad_argument);
    if (trigger == NULL)
        return bad_argument;
    /* With a serve on the home, the run is its to drive (it queues behind the flow's
     * runs); without one, this process drives it, and --detach has nothing to hand to. */
    char home[PATH_MAX];
    int fd = -1;
    int served = cli_ops_connect(g, "run", home, &fd);
    if (served < 0) {
        free(trigger);
        return EXIT_REFUSED;
    }
    if (served == 1) {
        int st = run_through_serve(g, fd, id, trigger, trigger_id, detach);
        free(trigger);
        return st;
    }
    if (detach) {
        fprintf(stderr, "ck-basal run: --detach needs a running serve (none on this data home)\n");
        free(trigger);
        return EXIT_USAGE;
    }
    if (session_open(g, "run", &s) != 0) {
        free(trigger);
        return EXIT_REFUSED;
    }
    char err[1024];
    int64_t version = 0, run_id = 0;
    struct run_claim claim;
    int status = EXIT_REFUSED;
    /* Admitted and claimed in one commit: this process drives it at once. Its worker
     * starts once the flow is known to be runnable, and confines itself while the
     * commit waits for the disk. */
    bool runnable = run_preflight(&s.driver, id, &version, err, sizeof err) == 0;
    if (runnable)
        pool_launch(s.driver.pool, POOL_USE_FLOW);
    if (!runnable ||
        runs_admit_claimed(s.store, id, version, trigger, trigger_id, &run_id, &claim, err,
                           sizeof err) != 0) {
        term_error_line("run", err);
    } else {
        struct run_report rep;
        if (run_drive_claimed(&s.driver, run_id, &claim, &rep, err, sizeof err) != 0)
            run_error("run", run_id, err, "");
        else
            status = report(g, &rep);
        run_report_free(&rep);
    }
    free(trigger);
    session_close(&s);
    return status;
}

/* recover with a serve on the home: the serve drives the runs (they are its runners'
 * anyway) and answers with each one's end, rendered as when this process drives them. */
static int recover_through_serve(const struct cli_globals *g, int fd)
{
    json_t *request = cli_ops_request("recover", json_object()), *data = NULL;
    if (request == NULL) {
        close(fd);
        term_error_line("recover", "out of memory");
        return EXIT_REFUSED;
    }
    int status = cli_ops_send("recover", fd, request, &data);
    json_decref(request);
    if (status != EXIT_OK)
        return status;
    const json_t *runs = json_object_get(data, "runs");
    size_t i;
    json_t *item;
    json_array_foreach (runs, i, item) {
        const char *error = json_string_value(json_object_get(item, "error"));
        if (error != NULL) {
            term_error_line("recover", error);
            status = EXIT_REFUSED;
        } else if (report_view(g, item) != EXIT_OK) {
            status = EXIT_REFUSED;
        }
    }
    if (json_array_size(runs) == 0 && !g->json)
        printf("nothing to recover\n");
    json_decref(data);
    return status;
}

int cmd_recover(const struct cli_globals *g, int argc, char **argv)
{
    struct session s;
    pool_config_defaults(&s.cfg);
    for (int i = 0; i < argc; i++) {
        if (!parse_landlock(argv[i], &s.cfg)) {
            fprintf(stderr, "ck-basal recover: unexpected argument '%s' (%s)\n", argv[i],
                    RECOVER_USAGE);
            return EXIT_USAGE;
        }
    }
    /* With a serve on the home it drives them: two drivers must never race for a run. */
    char home[PATH_MAX];
    int fd = -1;
    int served = cli_ops_connect(g, "recover", home, &fd);
    if (served < 0)
        return EXIT_REFUSED;
    if (served == 1)
        return recover_through_serve(g, fd);
    if (session_open(g, "recover", &s) != 0)
        return EXIT_REFUSED;
    char err[1024];
    int64_t *ids = NULL;
    size_t count = 0, timed_out = 0;
    /* Long-running calls past their time are rejected first: their runs resume too. */
    if (long_running_expire(s.store, store_now_ms(), &timed_out, NULL, err, sizeof err) != 0 ||
        runs_recoverable(s.store, &ids, &count, err, sizeof err) != 0) {
        term_error_line("recover", err);
        session_close(&s);
        return EXIT_REFUSED;
    }
    int status = EXIT_OK;
    for (size_t i = 0; i < count; i++) {
        struct run_report rep;
        if (run_drive(&s.driver, ids[i], &rep, err, sizeof err) != 0) {
            run_error("recover", ids[i], err, "");
            status = EXIT_REFUSED;
        } else if (report(g, &rep) != EXIT_OK) {
            status = EXIT_REFUSED;
        }
        run_report_free(&rep);
    }
    if (count == 0 && !g->json)
        printf("nothing to recover\n");
    free(ids);
    session_close(&s);
    return status;
}

/* What flow reconcile prints for a cancelled run, either way. */
static void print_cancelled(const struct cli_globals *g, long long run_id)
{
    if (g->json) {
        json_t *o = json_object();
        json_object_set_new(o, "run", json_integer(run_id));
        json_object_set_new(o, "state", json_string("cancelled"));
        cli_print_json(o);
    } else {
        printf("run %lld cancelled\n", run_id);
    }
}

/* flow reconcile with a serve on the home: the serve settles the run (and audits it),
 * then resumes it and answers when it has ended, as `run` does. */
static int reconcile_through_serve(const struct cli_globals *g, int fd, long long run_id,
                                   uint32_t position, enum reconcile_decision decision,
                                   const char *observed)
{
    static const char *const NAMES[] = {
        [RECONCILE_OBSERVED] = "observed",
        [RECONCILE_NOT_APPLIED] = "not_applied",
        [RECONCILE_CANCEL] = "cancel",
    };
    json_t *args = json_object();
    json_object_set_new(args, "run", json_integer(run_id));
    json_object_set_new(args, "position", json_integer(position));
    json_object_set_new(args, "decision", json_string(NAMES[decision]));
    if (observed != NULL)
        json_object_set_new(args, "observed", json_string(observed));
    json_t *request = cli_ops_request("flow.reconcile", args), *data = NULL;
    if (request == NULL) {
        close(fd);
        term_error_line("flow reconcile", "out of memory");
        return EXIT_REFUSED;
    }
    int status = cli_ops_send("flow reconcile", fd, request, &data);
    json_decref(request);
    if (status != EXIT_OK)
        return status;
    if (decision == RECONCILE_CANCEL)
        print_cancelled(g, run_id);
    else
        status = report_view(g, data);
    json_decref(data);
    return status;
}

#define RECONCILE_USAGE "usage: ck-basal flow reconcile RUN POSITION --observed JSON | " \
                        "--not-applied | --cancel"

int cmd_flow_reconcile(const struct cli_globals *g, int argc, char **argv)
{
    struct session s;
    pool_config_defaults(&s.cfg);
    const char *texts[2] = {NULL, NULL};
    int given = 0, decisions = 0;
    enum reconcile_decision decision = RECONCILE_CANCEL;
    const char *observed_text = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--observed") == 0 && i + 1 < argc) {
            decision = RECONCILE_OBSERVED;
            observed_text = argv[++i];
            decisions++;
        } else if (strcmp(argv[i], "--not-applied") == 0) {
            decision = RECONCILE_NOT_APPLIED;
            decisions++;
        } else if (strcmp(argv[i], "--cancel") == 0) {
            decision = RECONCILE_CANCEL;
            decisions++;
        } else if (parse_landlock(argv[i], &s.cfg)) {
            continue;
        } else if (argv[i][0] != '-' && given < 2) {
            texts[given++] = argv[i];
        } else {
            fprintf(stderr, "ck-basal flow reconcile: unexpected argument '%s' (%s)\n", argv[i],
                    RECONCILE_USAGE);
            return EXIT_USAGE;
        }
    }
    long long run_id, position;
    if (given != 2 || decisions != 1 || !cli_parse_int(texts[0], 1, INT64_MAX, &run_id) ||
        !cli_parse_int(texts[1], 0, UINT32_MAX, &position)) {
        fprintf(stderr, "ck-basal flow reconcile: %s (%s)\n",
                decisions != 1 ? "give exactly one of --observed, --not-applied, --cancel"
                               : "needs a run id and a position",
                RECONCILE_USAGE);
        return EXIT_USAGE;
    }
    char *observed = NULL;
    if (decision == RECONCILE_OBSERVED) {
        int bad_argument = EXIT_OK;
        observed = cli_json_argument("flow reconcile", "--observed", observed_text, &bad_argument);
        if (observed == NULL)
            return bad_argument;
    }
    /* With a serve on the home, it settles the run and resumes it. */
    char home[PATH_MAX];
    int fd = -1;
    int served = cli_ops_connect(g, "flow reconcile", home, &fd);
    if (served != 0) {
        int status = served < 0 ? EXIT_REFUSED
                                : reconcile_through_serve(g, fd, run_id, (uint32_t)position,
                                                          decision, observed);
        free(observed);
        return status;
    }
    if (session_open(g, "flow reconcile", &s) != 0) {
        free(observed);
        return EXIT_REFUSED;
    }
    char err[1024];
    int status = EXIT_REFUSED;
    if (reconcile_settle(s.store, run_id, (uint32_t)position, decision, observed, err,
                         sizeof err) != 0) {
        term_error_line("flow reconcile", err);
    } else if (decision == RECONCILE_CANCEL) {
        print_cancelled(g, run_id);
        status = EXIT_OK;
    } else {
        struct run_report rep;
        if (run_drive(&s.driver, run_id, &rep, err, sizeof err) != 0)
            run_error("flow reconcile", run_id, err,
                      " (it is pending: ck-basal recover resumes it)");
        else
            status = report(g, &rep);
        run_report_free(&rep);
    }
    free(observed);
    session_close(&s);
    return status;
}

#define COMPLETE_USAGE "usage: ck-basal flow complete KEY REPLY"

int cmd_flow_complete(const struct cli_globals *g, int argc, char **argv)
{
    if (argc != 2 || argv[0][0] == '-' || argv[1][0] == '-') {
        fprintf(stderr, "ck-basal flow complete: needs the call's idempotency key and the"
                " module's reply (%s)\n", COMPLETE_USAGE);
        return EXIT_USAGE;
    }
    json_t *args = json_object(), *done = NULL;
    json_object_set_new(args, "key", json_string(argv[0]));
    json_object_set_new(args, "reply", json_string(argv[1]));
    json_t *request = cli_ops_request("flow.complete", args);
    int status = cli_ops_call(g, "flow complete", request, &done);
    json_decref(request);
    if (status != EXIT_OK)
        return status;
    if (g->json) {
        cli_print_json(done);
        return EXIT_OK;
    }
    char flow[TERM_SHOWN_CAP(FLOW_ID_MAX)];
    printf("run %lld of flow %s: position %lld completed; %s\n",
           (long long)json_integer_value(json_object_get(done, "run")),
           term_show(flow, sizeof flow, json_string_value(json_object_get(done, "flow")), 0),
           (long long)json_integer_value(json_object_get(done, "position")),
           json_is_true(json_object_get(done, "resumed"))
               ? "the run is pending again (a serve resumes it; without one, ck-basal recover)"
               : "the run takes it when its activation ends");
    json_decref(done);
    return EXIT_OK;
}

#define CANCEL_USAGE "usage: ck-basal cancel RUN [--reason TEXT]"

int cmd_cancel(const struct cli_globals *g, int argc, char **argv)
{
    const char *id_text = NULL, *reason = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--reason") == 0 && i + 1 < argc && reason == NULL) {
            reason = argv[++i];
        } else if (argv[i][0] == '-' || id_text != NULL) {
            fprintf(stderr, "ck-basal cancel: unexpected argument '%s' (%s)\n", argv[i],
                    CANCEL_USAGE);
            return EXIT_USAGE;
        } else {
            id_text = argv[i];
        }
    }
    long long run_id;
    if (id_text == NULL || !cli_parse_int(id_text, 1, INT64_MAX, &run_id)) {
        fprintf(stderr, "ck-basal cancel: needs a run id (%s)\n", CANCEL_USAGE);
        return EXIT_USAGE;
    }
    if (reason != NULL && !ops_cancel_reason_valid(reason)) {
        fprintf(stderr, "ck-basal cancel: --reason must be 1 to %u bytes of printable UTF-8 on"
                " one line\n", RUN_CANCEL_REASON_MAX);
        return EXIT_USAGE;
    }
    json_t *args = json_object(), *cancelled;
    json_object_set_new(args, "run", json_integer(run_id));
    if (reason != NULL)
        json_object_set_new(args, "reason", json_string(reason));
    json_t *request = cli_ops_request("cancel", args);
    int status = cli_ops_call(g, "cancel", request, &cancelled);
    json_decref(request);
    if (status != EXIT_OK)
        return status;
    if (g->json) {
        cli_print_json(cancelled);
        return EXIT_OK;
    }
    char flow[TERM_SHOWN_CAP(FLOW_ID_MAX)], was[TERM_SHOWN_CAP(16)];
    printf("run %lld of flow %s: cancelled (was %s)\n", run_id,
           term_show(flow, sizeof flow, json_string_value(json_object_get(cancelled, "flow")), 0),
           term_show(was, sizeof was, json_string_value(json_object_get(cancelled, "was")), 0));
    json_decref(cancelled);
    return EXIT_OK;
}
