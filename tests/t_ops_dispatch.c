/* ops_dispatch (serve/ops_dispatch.h, docs/ops-protocol.md "Commands") on a real store,
 * the way the CLI and a serve both call it:
 *   1. an ok reply of each command, with the data its --json prints (and args_text /
 *      value_text, the stored texts exactly, which the human view shows);
 *   2. a request that is not an object, without a "cmd" string, with args that are not
 *      an object, an unknown command: exit 2 [guard: the request's shape is checked];
 *   3. each command's arguments of the wrong type, missing, out of range (a version
 *      of 0, -1, 2^63 as a real, a run id of 0), unknown extra arguments: exit 2 with
 *      nothing stored changed [guard: every argument is checked, whoever sent it];
 *   4. unknown flows and runs, and refusals of the registry: exit 1, nothing stored
 *      changed [guard: a refused ops command changes nothing];
 *   5. with daemon hooks: "health" gets the live figures, a command of the daemon's
 *      column is its handler's, a store command's change is told to it when it
 *      succeeded, an argument outside the row's keys is refused before any handler
 *      [guard: the daemon's hooks; the table's argument column]. */
#include "lib/harness.h"
#include "lib/store_view.h"

#include "flows/code_hash.h"
#include "proto/message.h"
#include "serve/ops_dispatch.h"
#include "serve/ops_reply.h"
#include "store/codemode_store.h"
#include "store/datahome.h"
#include "store/journal.h"
#include "store/runs.h"
#include "store/store.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SCRIPT "const main = async (ctx) => 1;\nreturn await main(trigger);\n"

static char g_root[256];
static char g_home[PATH_MAX];
static char g_db[PATH_MAX];
static struct store *g_store;

/* Every row of the tables a command may write, every column (as hex). */
static char *dump_rows(void)
{
    static const char *const SQL[] = {
        "SELECT * FROM flows ORDER BY id",
        "SELECT * FROM flow_versions ORDER BY flow_id, version",
        "SELECT * FROM approvals ORDER BY flow_id, version",
        "SELECT * FROM runs ORDER BY id",
        "SELECT * FROM journal ORDER BY run_id, position",
        "SELECT * FROM audit ORDER BY rowid",
    };
    return store_dump(g_db, SQL, sizeof SQL / sizeof SQL[0]);
}

/* ops_dispatch of the JSON text request (no daemon). */
static json_t *dispatch_text(const char *request_text)
{
    json_error_t je;
    json_t *request = json_loads(request_text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (request == NULL) {
        fail("ops dispatch: a test request parses", "%s: %s", request_text, je.text);
        return NULL;
    }
    const struct ops_context ctx = {g_store, g_home, NULL};
    json_t *reply = ops_dispatch(&ctx, request);
    json_decref(request);
    return reply;
}

static char *text_of(const json_t *v)
{
    return v != NULL ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

/* request -> an ok reply; returns its data (borrowed from the reply, kept in *reply). */
static json_t *expect_ok(const char *name, const char *request, json_t **reply)
{
    *reply = dispatch_text(request);
    json_t *data = json_object_get(*reply, "data");
    char *shown = text_of(*reply);
    bool ok = check(json_is_true(json_object_get(*reply, "ok")) && data != NULL, name,
                    "%s -> %s", request, shown != NULL ? shown : "(no reply)");
    free(shown);
    return ok ? data : NULL;
}

/* request -> {"ok":false,"exit":code,"error":one line holding want}, and the stored rows
 * as they were. */
static void expect_error(const char *name, int code, const char *want, const char *request)
{
    char *before = dump_rows();
    json_t *reply = dispatch_text(request);
    char *after = dump_rows();
    const char *error = json_string_value(json_object_get(reply, "error"));
    char *shown = text_of(reply);
    char label[320];
    sfmt(label, sizeof label, "%s: exit %d, one line naming the problem", name, code);
    check(json_is_false(json_object_get(reply, "ok")) &&
              json_integer_value(json_object_get(reply, "exit")) == code && error != NULL &&
              strchr(error, '\n') == NULL && strstr(error, want) != NULL &&
              json_object_size(reply) == 3,
          label, "%s -> %s (want \"%s\")", request, shown != NULL ? shown : "(no reply)", want);
    sfmt(label, sizeof label, "%s: nothing stored changed", name);
    check(before != NULL && after != NULL && strcmp(before, after) == 0, label, "rows differ");
    free(shown);
    free(before);
    free(after);
    json_decref(reply);
}

/* One request expect_error refuses: a row of a table the tests walk in order. */
struct refusal {
    const char *name;
    int code;
    const char *want;
    const char *request;
};

static void expect_errors(const struct refusal *rows, size_t count)
{
    for (size_t i = 0; i < count; i++)
        expect_error(rows[i].name, rows[i].code, rows[i].want, rows[i].request);
}

static bool write_file(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX + 64];
    sfmt(path, sizeof path, "%s/%s", dir, name);
    return write_text_file(path, text, 0600);
}

static char g_flow_dir[PATH_MAX];
static char g_hash[CODE_HASH_HEX_LEN + 1];

static void make_flow_dir(void)
{
    static const char MANIFEST[] = "{\"format\":1,\"id\":\"alpha\",\"version\":1,\"purpose\":"
                                   "\"p\",\"trigger\":{\"manual\":true}}\n";
    sfmt(g_flow_dir, sizeof g_flow_dir, "%s/alpha", g_root);
    if (mkdir(g_flow_dir, 0700) != 0 || !write_file(g_flow_dir, "flow.js", SCRIPT) ||
        !write_file(g_flow_dir, "manifest.json", MANIFEST) ||
        code_hash_hex(SCRIPT, strlen(SCRIPT), MANIFEST, strlen(MANIFEST), g_hash) != 0)
        fail("ops dispatch: a flow directory", "%s", strerror(errno));
}

static void request_shape(void)
{
    static const struct refusal BAD_REQUESTS[] = {
        {"request an array [guard: the request's shape is checked]", 2, "not a JSON object",
         "[\"runs\"]"},
        {"request a string", 2, "not a JSON object", "\"runs\""},
        {"request without cmd", 2, "\"cmd\"", "{\"args\":{}}"},
        {"cmd a number", 2, "\"cmd\"", "{\"cmd\":7,\"args\":{}}"},
        {"args an array", 2, "\"args\"", "{\"cmd\":\"runs\",\"args\":[]}"},
        {"args null", 2, "\"args\"", "{\"cmd\":\"runs\",\"args\":null}"},
        {"a key beside cmd and args", 2, "more than", "{\"cmd\":\"runs\",\"args\":{},\"x\":1}"},
        {"unknown command", 2, "unknown command", "{\"cmd\":\"flow.drop\",\"args\":{}}"},
        {"\"run\" without a serve: refused, naming what it needs", 1, "needs a running serve",
         "{\"cmd\":\"run\",\"args\":{\"flow\":\"alpha\"}}"},
        {"\"flow.drain\" without a serve: refused, naming what it needs", 1,
         "needs a running serve", "{\"cmd\":\"flow.drain\",\"args\":{\"id\":\"alpha\"}}"},
        {"\"serve.stop\" without a serve: refused, naming what it needs", 1,
         "needs a running serve", "{\"cmd\":\"serve.stop\"}"},
    };
    expect_errors(BAD_REQUESTS, sizeof BAD_REQUESTS / sizeof BAD_REQUESTS[0]);
}

static void flow_commands(void)
{
    char request[PATH_MAX + 256];
    /* install: errors first, while nothing is installed. */
    static const struct refusal BAD_INSTALLS[] = {
        {"flow.install: dir missing [guard: every argument is checked]", 2, "'dir' is missing",
         "{\"cmd\":\"flow.install\",\"args\":{}}"},
        {"flow.install: dir a number", 2, "'dir' must be a string",
         "{\"cmd\":\"flow.install\",\"args\":{\"dir\":5}}"},
        {"flow.install: dir relative", 2, "absolute",
         "{\"cmd\":\"flow.install\",\"args\":{\"dir\":\"alpha\"}}"},
    };
    expect_errors(BAD_INSTALLS, sizeof BAD_INSTALLS / sizeof BAD_INSTALLS[0]);
    sfmt(request, sizeof request,
         "{\"cmd\":\"flow.install\",\"args\":{\"dir\":\"%s\\u0000/x\"}}", g_root);
    expect_error("flow.install: dir with a NUL", 2, "NUL", request);
    sfmt(request, sizeof request,
         "{\"cmd\":\"flow.install\",\"args\":{\"dir\":\"%s\",\"force\":true}}", g_root);
    expect_error("flow.install: an extra argument", 2, "unexpected argument", request);
    sfmt(request, sizeof request, "{\"cmd\":\"flow.install\",\"args\":{\"dir\":\"%s/none\"}}",
         g_root);
    expect_error("flow.install: a directory that does not exist", 1, "No such file", request);

    json_t *reply;
    sfmt(request, sizeof request, "{\"cmd\":\"flow.install\",\"args\":{\"dir\":\"%s\"}}",
         g_flow_dir);
    json_t *data = expect_ok("flow.install: ok", request, &reply);
    char *got = text_of(data), want[512];
    sfmt(want, sizeof want, "{\"id\":\"alpha\",\"version\":1,\"code_hash\":\"%s\",\"state\":"
         "\"pending\",\"new_flow\":true}", g_hash);
    check(got != NULL && strcmp(got, want) == 0, "flow.install: the data --json prints",
          "%s", got != NULL ? got : "(none)");
    free(got);
    json_decref(reply);

    /* approve */
    static const char *const BAD_APPROVE[][3] = {
        {"flow.approve: version missing", "'version' is missing", "\"id\":\"alpha\",\"code_hash\":\"H\""},
        {"flow.approve: version a string", "'version' must be an integer",
         "\"id\":\"alpha\",\"version\":\"1\",\"code_hash\":\"H\""},
        {"flow.approve: version 0", "'version' must be from 1", "\"id\":\"alpha\",\"version\":0,\"code_hash\":\"H\""},
        {"flow.approve: version -1", "'version' must be from 1",
         "\"id\":\"alpha\",\"version\":-1,\"code_hash\":\"H\""},
        {"flow.approve: a huge version (1e300)", "'version' must be an integer",
         "\"id\":\"alpha\",\"version\":1e300,\"code_hash\":\"H\""},
        {"flow.approve: version 2^63 as a real", "'version' must be an integer",
         "\"id\":\"alpha\",\"version\":9223372036854775808.0,\"code_hash\":\"H\""},
        {"flow.approve: id missing", "'id' is missing", "\"version\":1,\"code_hash\":\"H\""},
        {"flow.approve: id null", "'id' must be a string", "\"id\":null,\"version\":1,\"code_hash\":\"H\""},
        {"flow.approve: code_hash an object", "'code_hash' must be a string",
         "\"id\":\"alpha\",\"version\":1,\"code_hash\":{}"},
        {"flow.approve: code_hash empty", "'code_hash' must be 1 to",
         "\"id\":\"alpha\",\"version\":1,\"code_hash\":\"\""},
    };
    for (size_t i = 0; i < sizeof BAD_APPROVE / sizeof BAD_APPROVE[0]; i++) {
        sfmt(request, sizeof request, "{\"cmd\":\"flow.approve\",\"args\":{%s}}",
             BAD_APPROVE[i][2]);
        sfmt(want, sizeof want, "%s [guard: every argument is checked]", BAD_APPROVE[i][0]);
        expect_error(want, 2, BAD_APPROVE[i][1], request);
    }
    sfmt(request, sizeof request, "{\"cmd\":\"flow.approve\",\"args\":{\"id\":\"beta\","
         "\"version\":1,\"code_hash\":\"%s\"}}", g_hash);
    expect_error("flow.approve: unknown flow [guard: a refused ops command changes nothing]", 1,
                 "beta", request);
    sfmt(request, sizeof request, "{\"cmd\":\"flow.approve\",\"args\":{\"id\":\"alpha\","
         "\"version\":9223372036854775807,\"code_hash\":\"%s\"}}", g_hash);
    expect_error("flow.approve: the largest version, not installed", 1, "version", request);
    expect_error("flow.approve: a wrong code hash", 1, "hash",
                 "{\"cmd\":\"flow.approve\",\"args\":{\"id\":\"alpha\",\"version\":1,"
                 "\"code_hash\":\"00\"}}");
    sfmt(request, sizeof request, "{\"cmd\":\"flow.approve\",\"args\":{\"id\":\"alpha\","
         "\"version\":1,\"code_hash\":\"%s\"}}", g_hash);
    data = expect_ok("flow.approve: ok", request, &reply);
    got = text_of(data);
    sfmt(want, sizeof want, "{\"id\":\"alpha\",\"version\":1,\"code_hash\":\"%s\",\"state\":"
         "\"approved\"}", g_hash);
    check(got != NULL && strcmp(got, want) == 0, "flow.approve: the data --json prints", "%s",
          got != NULL ? got : "(none)");
    free(got);
    json_decref(reply);

    /* disable / enable */
    static const struct refusal BAD_DISABLE_ENABLE[] = {
        {"flow.disable: id missing", 2, "'id' is missing",
         "{\"cmd\":\"flow.disable\",\"args\":{}}"},
        {"flow.enable: id an array", 2, "'id' must be a string",
         "{\"cmd\":\"flow.enable\",\"args\":{\"id\":[\"alpha\"]}}"},
        {"flow.disable: unknown flow", 1, "beta",
         "{\"cmd\":\"flow.disable\",\"args\":{\"id\":\"beta\"}}"},
        {"flow.enable: not a flow id", 1, "flow",
         "{\"cmd\":\"flow.enable\",\"args\":{\"id\":\"Bad Id\\n\"}}"},
    };
    expect_errors(BAD_DISABLE_ENABLE, sizeof BAD_DISABLE_ENABLE / sizeof BAD_DISABLE_ENABLE[0]);
    data = expect_ok("flow.disable: ok", "{\"cmd\":\"flow.disable\",\"args\":{\"id\":\"alpha\"}}",
                     &reply);
    got = text_of(data);
    check_str_eq(got, "{\"id\":\"alpha\",\"enabled\":false}", "flow.disable: the data --json prints");
    free(got);
    json_decref(reply);
    data = expect_ok("flow.enable: ok", "{\"cmd\":\"flow.enable\",\"args\":{\"id\":\"alpha\"}}",
                     &reply);
    got = text_of(data);
    check_str_eq(got, "{\"id\":\"alpha\",\"enabled\":true}", "flow.enable: the data --json prints");
    free(got);
    json_decref(reply);

    /* list */
    expect_error("flow.list: an argument", 2, "unexpected argument",
                 "{\"cmd\":\"flow.list\",\"args\":{\"all\":true}}");
    data = expect_ok("flow.list: ok (args may be left out)", "{\"cmd\":\"flow.list\"}", &reply);
    got = text_of(data);
    sfmt(want, sizeof want, "[{\"id\":\"alpha\",\"enabled\":true,\"latest_version\":1,"
         "\"latest_state\":\"approved\",\"latest_code_hash\":\"%s\",\"approved_version\":1,"
         "\"approved_code_hash\":\"%s\",\"disabled_reason\":null,\"next_fire\":null}]", g_hash, g_hash);
    check(got != NULL && strcmp(got, want) == 0, "flow.list: the data --json prints", "%s",
          got != NULL ? got : "(none)");
    free(got);
    json_decref(reply);
}

/* A run of alpha with two calls (args and a value with a number jansson would not print
 * back the same way) and a codemode run. */
static bool make_runs(void)
{
    char err[512];
    int64_t run_id = 0, cm_id = 0;
    struct journal_entry e;
    memset(&e, 0, sizeof e);
    e.kind = (char *)"kv.set";
    e.args = (char *)"[\"k\",0.1]";
    e.args_len = strlen(e.args);
    e.cls = JOURNAL_LOCAL;
    memset(e.digest, 'a', JOURNAL_DIGEST_HEX);
    memset(e.key, 'b', JOURNAL_KEY_HEX);
    const struct codemode_run_start start = {"script.js", "1", 1, "{}"};
    bool ok = runs_admit(g_store, "alpha", 1, "{\"n\":1}", "t-1", &run_id, err, sizeof err) == 0 &&
              run_id == 1 && journal_insert(g_store, 1, &e, err, sizeof err) == 0 &&
              journal_mailbox_put(g_store, 1, 0, PROTO_SETTLEMENT_FULFILLED, "1.50", err,
                                  sizeof err) == 0 &&
              codemode_run_begin(g_store, &start, &cm_id, err, sizeof err) == 0 && cm_id == 1;
    return check(ok, "ops dispatch: a flow run with a journal and a codemode run", "%s", err);
}

static void run_commands(void)
{
    /* Every refusal first: the runs and journal answers below read the store, and only the
     * cancel at the end changes it. */
    static const struct refusal BAD_RUN_COMMANDS[] = {
        /* runs */
        {"runs: flow a number [guard: every argument is checked]", 2, "'flow' must be a string",
         "{\"cmd\":\"runs\",\"args\":{\"flow\":1}}"},
        {"runs: an extra argument", 2, "unexpected argument",
         "{\"cmd\":\"runs\",\"args\":{\"state\":\"pending\"}}"},
        {"runs: unknown flow", 1, "unknown flow 'beta'",
         "{\"cmd\":\"runs\",\"args\":{\"flow\":\"beta\"}}"},
        {"runs: not a flow id", 1, "not a flow id",
         "{\"cmd\":\"runs\",\"args\":{\"flow\":\"../x\"}}"},
        /* journal */
        {"journal: run missing", 2, "'run' is missing", "{\"cmd\":\"journal\",\"args\":{}}"},
        {"journal: run a number (it is text: N or cN)", 2, "'run' must be a string",
         "{\"cmd\":\"journal\",\"args\":{\"run\":1}}"},
        {"journal: run 0", 2, "'run'", "{\"cmd\":\"journal\",\"args\":{\"run\":\"0\"}}"},
        {"journal: run -1", 2, "'run'", "{\"cmd\":\"journal\",\"args\":{\"run\":\"-1\"}}"},
        {"journal: run past INT64_MAX", 2, "'run'",
         "{\"cmd\":\"journal\",\"args\":{\"run\":\"9223372036854775808\"}}"},
        {"journal: run text", 2, "'run'", "{\"cmd\":\"journal\",\"args\":{\"run\":\"one\"}}"},
        {"journal: unknown run", 1, "unknown run 9",
         "{\"cmd\":\"journal\",\"args\":{\"run\":\"9\"}}"},
        {"journal: unknown codemode run", 1, "unknown codemode run c9",
         "{\"cmd\":\"journal\",\"args\":{\"run\":\"c9\"}}"},
        /* cancel */
        {"cancel: run missing", 2, "'run' is missing", "{\"cmd\":\"cancel\",\"args\":{}}"},
        {"cancel: run a string", 2, "'run' must be an integer",
         "{\"cmd\":\"cancel\",\"args\":{\"run\":\"1\"}}"},
        {"cancel: run 0", 2, "'run' must be from 1", "{\"cmd\":\"cancel\",\"args\":{\"run\":0}}"},
        {"cancel: run a real", 2, "'run' must be an integer",
         "{\"cmd\":\"cancel\",\"args\":{\"run\":1.0}}"},
        {"cancel: reason a number", 2, "'reason' must be a string",
         "{\"cmd\":\"cancel\",\"args\":{\"run\":1,\"reason\":7}}"},
        {"cancel: reason with a line break", 2, "'reason'",
         "{\"cmd\":\"cancel\",\"args\":{\"run\":1,\"reason\":\"a\\nb\"}}"},
        {"cancel: reason empty", 2, "'reason' must be 1 to",
         "{\"cmd\":\"cancel\",\"args\":{\"run\":1,\"reason\":\"\"}}"},
        {"cancel: unknown run", 1, "9", "{\"cmd\":\"cancel\",\"args\":{\"run\":9}}"},
    };
    expect_errors(BAD_RUN_COMMANDS, sizeof BAD_RUN_COMMANDS / sizeof BAD_RUN_COMMANDS[0]);

    /* runs */
    json_t *reply;
    json_t *data = expect_ok("runs: ok", "{\"cmd\":\"runs\",\"args\":{}}", &reply);
    check(json_array_size(data) == 2 &&
              json_integer_value(json_object_get(json_array_get(data, 0), "run")) == 1 &&
              strcmp(json_string_value(json_object_get(json_array_get(data, 1), "run")), "c1") == 0,
          "runs: the flow run, then the codemode run c1", "%zu runs", json_array_size(data));
    json_decref(reply);
    data = expect_ok("runs: of one flow", "{\"cmd\":\"runs\",\"args\":{\"flow\":\"alpha\"}}",
                     &reply);
    check_int_eq((long long)json_array_size(data), 1, "runs: of one flow lists its run only");
    json_decref(reply);

    /* journal */
    data = expect_ok("journal: ok", "{\"cmd\":\"journal\",\"args\":{\"run\":\"1\"}}", &reply);
    json_t *call = json_array_get(json_object_get(data, "calls"), 0);
    check(json_is_real(json_array_get(json_object_get(call, "args"), 1)) &&
              json_is_object(json_object_get(call, "outcome")),
          "journal: the call's args and outcome as JSON values", "%s",
          json_string_value(json_object_get(call, "kind")));
    check_str_eq(json_string_value(json_object_get(call, "args_text")), "[\"k\",0.1]",
                 "journal: args_text is the stored text exactly [guard: the human view shows"
                 " what was recorded]");
    check_str_eq(json_string_value(json_object_get(call, "value_text")), "1.50",
                 "journal: value_text is the stored outcome exactly");
    json_decref(reply);
    data = expect_ok("journal: a codemode run", "{\"cmd\":\"journal\",\"args\":{\"run\":\"c1\"}}",
                     &reply);
    check(json_is_array(json_object_get(data, "calls")) &&
              strcmp(json_string_value(json_object_get(data, "script")), "script.js") == 0,
          "journal: c1 holds its script and calls", "%s",
          json_string_value(json_object_get(data, "kind")));
    json_decref(reply);

    /* cancel */
    data = expect_ok("cancel: ok", "{\"cmd\":\"cancel\",\"args\":{\"run\":1,\"reason\":\"done\"}}",
                     &reply);
    char *got = text_of(data);
    check(got != NULL && strstr(got, "\"run\":1,\"flow\":\"alpha\",\"state\":\"cancelled\","
                                     "\"was\":\"pending\",\"error\":") != NULL &&
              strstr(got, "done") != NULL,
          "cancel: the data --json prints", "%s", got != NULL ? got : "(none)");
    free(got);
    json_decref(reply);
    expect_error("cancel: a run that has ended", 1, "run 1",
                 "{\"cmd\":\"cancel\",\"args\":{\"run\":1}}");
}

static void health_command(void)
{
    static const struct refusal BAD_HEALTHS[] = {
        {"health: landlock missing [guard: every argument is checked]", 2,
         "'landlock' is missing", "{\"cmd\":\"health\",\"args\":{}}"},
        {"health: landlock true", 2, "'landlock' must be a string",
         "{\"cmd\":\"health\",\"args\":{\"landlock\":true}}"},
        {"health: landlock off", 2, "'landlock'",
         "{\"cmd\":\"health\",\"args\":{\"landlock\":\"off\"}}"},
    };
    expect_errors(BAD_HEALTHS, sizeof BAD_HEALTHS / sizeof BAD_HEALTHS[0]);
    json_t *reply;
    json_t *data = expect_ok("health: ok", "{\"cmd\":\"health\",\"args\":{\"landlock\":\"optional\"}}",
                             &reply);
    check(json_is_object(json_object_get(data, "run_states")) &&
              json_integer_value(json_object_get(json_object_get(data, "run_states"),
                                                 "cancelled")) == 1,
          "health: the store's runs by state", "%s", "run_states");
    json_decref(reply);
}

/* A daemon that records what it was offered and told. */
struct fake_daemon {
    int live_health, offered, changes;
    enum ops_change change;
    char flow[32];
};

static void fake_live_health(void *daemon, void *health)
{
    ((struct fake_daemon *)daemon)->live_health++;
    json_object_set_new(health, "fake_live", json_true());
}

static void *fake_run(void *daemon, struct store *st, const void *args)
{
    (void)st;
    (void)args;
    ((struct fake_daemon *)daemon)->offered++;
    return ops_reply_ok(json_string("ran"));
}

static void fake_changed(void *daemon, enum ops_change change, const char *flow)
{
    struct fake_daemon *d = daemon;
    d->changes++;
    d->change = change;
    sfmt(d->flow, sizeof d->flow, "%s", flow != NULL ? flow : "(none)");
}

static json_t *dispatch_with(const struct ops_context *ctx, const char *request_text)
{
    json_t *request = json_loads(request_text, 0, NULL);
    json_t *reply = ops_dispatch(ctx, request);
    json_decref(request);
    return reply;
}

static void daemon_hooks(void)
{
    struct fake_daemon fake = {0, 0, 0, OPS_CHANGES_NOTHING, ""};
    const struct ops_daemon_hooks hooks = {
        .daemon = &fake,
        .add_live_health = fake_live_health,
        .answer = {[OPS_DAEMON_RUN] = fake_run},
        .changed = fake_changed,
    };
    const struct ops_context ctx = {g_store, g_home, &hooks};
    json_t *reply = dispatch_with(&ctx, "{\"cmd\":\"health\",\"args\":{\"landlock\":\"required\"}}");
    check(fake.live_health == 1 && fake.offered == 0 && fake.changes == 0 &&
              json_is_true(json_object_get(json_object_get(reply, "data"), "fake_live")),
          "daemon: health gets the live figures and is not offered to the daemon [guard: the"
          " daemon's hooks]", "live %d, offered %d", fake.live_health, fake.offered);
    json_decref(reply);
    reply = dispatch_with(&ctx, "{\"cmd\":\"run\",\"args\":{}}");
    check(fake.offered == 1 &&
              strcmp(json_string_value(json_object_get(reply, "data")), "ran") == 0,
          "daemon: a command of the daemon's column is its handler's reply", "offered %d",
          fake.offered);
    json_decref(reply);
    reply = dispatch_with(&ctx, "{\"cmd\":\"flow.list\",\"args\":{}}");
    check(fake.offered == 1 && fake.changes == 0 && json_is_array(json_object_get(reply, "data")),
          "daemon: a read-only command (no daemon column, changes nothing) is answered on the"
          " store, and the serve is told nothing",
          "offered %d, changes %d", fake.offered, fake.changes);
    json_decref(reply);
    reply = dispatch_with(&ctx, "{\"cmd\":\"flow.disable\",\"args\":{\"id\":\"nosuch\"}}");
    check(fake.changes == 0 && json_is_false(json_object_get(reply, "ok")),
          "daemon: a refused store command is not told to the serve (it changed nothing)",
          "changes %d", fake.changes);
    json_decref(reply);
    reply = dispatch_with(&ctx, "{\"cmd\":\"flow.disable\",\"args\":{\"id\":\"alpha\"}}");
    check(fake.changes == 1 && fake.change == OPS_DISABLES_FLOW &&
              strcmp(fake.flow, "alpha") == 0 && json_is_true(json_object_get(reply, "ok")),
          "daemon: a store command's change (the row's change column) is told to the serve,"
          " with the flow [guard: a disabled flow's workers end]",
          "changes %d, change %d, flow %s", fake.changes, (int)fake.change, fake.flow);
    json_decref(reply);
    reply = dispatch_with(&ctx, "{\"cmd\":\"run\",\"args\":{\"flow\":\"alpha\",\"now\":true}}");
    check(fake.offered == 1 && json_integer_value(json_object_get(reply, "exit")) == 2 &&
              strcmp(json_string_value(json_object_get(reply, "error")), "unexpected argument") == 0,
          "daemon: an argument outside the row's schema is refused (exit 2) before the"
          " serve's handler runs [guard: the command table's argument column]",
          "offered %d", fake.offered);
    json_decref(reply);
    reply = dispatch_with(&ctx, "{\"cmd\":\"recover\",\"args\":{}}");
    check(fake.offered == 1 && json_integer_value(json_object_get(reply, "exit")) == 1,
          "daemon: a daemon command whose handler the serve lacks is refused, not answered",
          "offered %d", fake.offered);
    json_decref(reply);
}

int main(void)
{
    sfmt(g_root, sizeof g_root, "%s/t_ops_dispatch.XXXXXX", harness_tmp_root());
    if (mkdtemp(g_root) == NULL) {
        fail("ops dispatch: temp directory", "%s", strerror(errno));
        return harness_finish();
    }
    sfmt(g_home, sizeof g_home, "%s/home", g_root);
    sfmt(g_db, sizeof g_db, "%s/basal.db", g_home);
    char err[512];
    if (check(datahome_prepare(g_home, true, NULL, err, sizeof err) == 0 &&
                  store_open(g_home, &g_store, err, sizeof err) == 0,
              "ops dispatch: a data home and its store", "%s", err)) {
        make_flow_dir();
        request_shape();
        flow_commands();
        if (make_runs()) {
            run_commands();
            health_command();
        }
        daemon_hooks();
        store_close(g_store);
    }
    harness_remove_tree(g_root);
    return harness_finish();
}
