/* Codemode end to end through the real ck-basal and worker (docs/codemode.md): a data
 * home with a module catalog (tests/tools/test_module, which logs every request it
 * receives: op, idempotency key, args) and a tool catalog of a query tool (echo_note)
 * and a mutation tool (add_numbers).
 *
 *   1. a script calls both tools: the result, the console apart from it, the module's
 *      effect log (each call once, with its input and key), `journal c1` with each
 *      call's class, decision and outcome, `runs` listing c1, audit rows;
 *   2. inputs the schema refuses are refused by path as HostError invalid_arguments
 *      (a tool not in the catalog: denied) and the module never runs [guard: input
 *      validated in the parent before the module runs];
 *   3. the 200-call cap: 250 calls, 200 reach the module, 50 are denied [guard: the
 *      codemode host's tool-call limit];
 *   4. a console flood is cut at 64 KiB with a last line saying so, in human and JSON
 *      output and in the store [guard: activation console cut visible];
 *   5. script text in human output is escaped (ESC, bidi controls) [guard: escaper];
 *   6. exit codes and refusals: a failing script exits 1 with the run failed; usage
 *      errors exit 2; a bad tools.json refuses before anything is stored; a script on
 *      stdin; a run left running by a dead process is ended failed ("abandoned");
 *   7. describe: the catalog as JSON and as TypeScript declarations;
 *   8. a store at schema version 1 is migrated to 2 with its rows intact;
 *   9. values exactly: a module's result reaches the script and the store as written
 *      (a number beyond 64 bits, 1.0, -1e400), a string holding U+0000 goes to the
 *      module and back, a NUL in an object key is refused with its reason. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/store_view.h"

#include "store/store_schema.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>



static char g_root[256];

struct scenario {
    char dir[PATH_MAX];
    char home[PATH_MAX];
    char db[PATH_MAX];
    char log[PATH_MAX];
};
static struct scenario S;


/* ck-basal [--json] --home HOME args..., stdin from input (may be NULL). */
static struct proc_result cli_in(bool json, const char *const *args, const char *input)
{
    struct cli_opts opts = {.json = json, .envp = HARNESS_EMPTY_ENV, .input = input};
    return cli_run(S.home, &opts, args);
}

static struct proc_result cli(bool json, const char *const *args)
{
    return cli_in(json, args, NULL);
}

#define MODULES                                                                           \
    "{\"modules\": {\"notes\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"        \
    " \"ops\": {\"echo\": {\"kind\": \"query\"}, \"add\": {\"kind\": \"mutate\"}}}}}"

#define TOOLS                                                                             \
    "{\"tools\": {"                                                                        \
    " \"echo_note\": {\"description\": \"Echo a note back.\", \"module\": \"notes\","       \
    "   \"op\": \"echo\", \"class\": \"query\", \"input\": {\"type\": \"object\","           \
    "   \"required\": [\"text\"], \"additionalProperties\": false, \"properties\": {"        \
    "   \"text\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 40},"              \
    "   \"tags\": {\"type\": \"array\", \"maxItems\": 3, \"items\": {\"type\": \"string\"}}}}},"\
    " \"add_numbers\": {\"description\": \"Add a and b.\", \"module\": \"notes\","          \
    "   \"op\": \"add\", \"class\": \"mutation\", \"input\": {\"type\": \"object\","         \
    "   \"required\": [\"a\", \"b\"], \"properties\": {"                                    \
    "   \"a\": {\"type\": \"integer\", \"minimum\": 0},"                                     \
    "   \"b\": {\"type\": \"integer\", \"maximum\": 100}}}}}}"

static void scenario_begin(const char *name)
{
    memset(&S, 0, sizeof S);
    sfmt(S.dir, sizeof S.dir, "%s/%s", g_root, name);
    if (mkdir(S.dir, 0755) != 0)
        fail("codemode: scenario", "%s: %s", S.dir, strerror(errno));
    sfmt(S.home, sizeof S.home, "%s/home", S.dir);
    sfmt(S.db, sizeof S.db, "%s/basal.db", S.home);
    sfmt(S.log, sizeof S.log, "%s/effects.log", S.dir);
    char path[PATH_MAX + 32];
    cli_home_setup_or_fail(S.home, "codemode: setup", MODULES,
                           harness_path("test/tools/test_module"), S.log);
    sfmt(path, sizeof path, "%s/tools.json", S.home);
    if (!write_text_file(path, TOOLS, 0600))
        fail("codemode: tools.json", "%s", path);
}

/* Writes the script into the scenario and returns its path (static, per call site). */
static const char *script_file(const char *name, const char *text)
{
    static char path[8][PATH_MAX + 64];
    static unsigned next;
    char *p = path[next++ % 8];
    sfmt(p, sizeof path[0], "%s/%s", S.dir, name);
    if (!write_text_file(p, text, 0644))
        fail("codemode: script", "%s", p);
    return p;
}

static long long sql_number(const char *sql)
{
    return store_number(S.db, sql);
}

static char *sql_text(const char *sql)
{
    return store_text(S.db, sql);
}

/* `codemode run --json SCRIPT [extra]`: the exit code and the parsed report. */
struct run_out {
    int exit_code;
    json_t *json;
    char *err;
};

static struct run_out run_json(const char *script, const char *input)
{
    struct proc_result r = input != NULL ? cli(true, ARGS("codemode", "run", script, "--input", input))
                                         : cli(true, ARGS("codemode", "run", script));
    struct run_out o = {r.exited ? r.exit_code : -1, cli_output_json(&r), strdup(r.err)};
    if (o.json == NULL)
        fprintf(stderr, "  codemode run: %s\n  stdout: %s\n  stderr: %s\n", proc_describe(&r),
                r.out, r.err);
    proc_result_free(&r);
    return o;
}

static void run_out_free(struct run_out *o)
{
    json_decref(o->json);
    free(o->err);
}

/* ---- 1. two tools end to end ---------------------------------------------------------- */

static void test_two_tools(void)
{
    scenario_begin("two-tools");
    const char *script = script_file("agent.js",
        "console.log('start', {n: 1});\n"
        "const note = await tools.call('echo_note', {text: 'buy milk', tags: ['home']});\n"
        "const sum = await tools.call('add_numbers', {a: 20, b: 22});\n"
        "return {note, sum, input: trigger};\n");
    struct run_out o = run_json(script, "{\"who\": \"agent\"}");
    check_int_eq(o.exit_code, 0, "two tools: codemode run exits 0");
    check_str_eq(json_str_of(o.json, "run"), "c1", "two tools: the run is c1");
    check_str_eq(json_str_of(o.json, "state"), "succeeded", "two tools: the run succeeded");
    json_t *want = json_loads("{\"note\": {\"text\": \"buy milk\", \"tags\": [\"home\"]}, \"sum\": 42,"
                              " \"input\": {\"who\": \"agent\"}}", 0, NULL);
    check(json_equal(json_object_get(o.json, "result"), want), "two tools: the result has both"
          " tools' answers and the input as trigger", "%s", json_dumped(o.json));
    json_decref(want);
    check_str_eq(json_str_of(o.json, "console"), "log: start {\"n\":1}\n",
                 "two tools: the console is reported apart from the result");
    check_int_eq(json_integer_value(json_object_get(o.json, "tool_calls")), 2,
                 "two tools: two tool calls counted");
    run_out_free(&o);

    /* The module's effect log: each call once, in order, with its input and a key. */
    char *log = read_text_file(S.log);
    char op1[16] = "", op2[16] = "", key1[80] = "", key2[80] = "", args1[256] = "", args2[256] = "";
    int got = log != NULL ? sscanf(log, "%15s %79s %255[^\n]\n%15s %79s %255[^\n]", op1, key1,
                                   args1, op2, key2, args2)
                          : 0;
    check(got == 6 && file_line_count(S.log) == 2 && strcmp(op1, "echo") == 0 &&
              strcmp(args1, "{\"text\":\"buy milk\",\"tags\":[\"home\"]}") == 0 &&
              strcmp(op2, "add") == 0 && strcmp(args2, "{\"a\":20,\"b\":22}") == 0,
          "two tools: the module's effect log has the query then the mutation, once each, with"
          " their inputs", "%s", log != NULL ? log : "(no log)");
    check(strlen(key1) == 64 && strlen(key2) == 64 && strcmp(key1, key2) != 0,
          "two tools: each module call got its own idempotency key", "%s / %s", key1, key2);
    free(log);

    /* journal c1 shows both calls; runs lists c1. */
    struct proc_result r = cli(true, ARGS("journal", "c1"));
    json_t *j = cli_output_json(&r);
    json_t *calls = json_object_get(j, "calls");
    json_t *c0 = json_array_get(calls, 0), *c1 = json_array_get(calls, 1);
    json_t *v0 = json_object_get(json_object_get(c0, "outcome"), "fulfilled");
    json_t *v1 = json_object_get(json_object_get(c1, "outcome"), "fulfilled");
    check(proc_exited_with(&r, 0) && json_array_size(calls) == 2 &&
              strcmp(json_str_of(c0, "tool"), "echo_note") == 0 &&
              strcmp(json_str_of(c0, "class"), "query") == 0 &&
              strcmp(json_str_of(c0, "decision"), "allowed") == 0 &&
              strcmp(json_str_of(c0, "state"), "settled") == 0 && json_is_object(v0) &&
              strcmp(json_str_of(c1, "tool"), "add_numbers") == 0 &&
              strcmp(json_str_of(c1, "class"), "mutation") == 0 &&
              json_integer_value(v1) == 42 && strcmp(json_str_of(c0, "idempotency_key"), key1) == 0 &&
              strcmp(json_str_of(c1, "idempotency_key"), key2) == 0,
          "two tools: journal c1 lists both calls with tool, class, decision, outcome and the"
          " keys the module saw", "%s %s", proc_describe(&r), r.out);
    json_decref(j);
    proc_result_free(&r);
    r = cli(false, ARGS("journal", "c1"));
    check(proc_exited_with(&r, 0) && strstr(r.out, "codemode run c1 (script ") != NULL &&
              strstr(r.out, "echo_note") != NULL && strstr(r.out, "add_numbers") != NULL,
          "two tools: journal c1 in human form", "%s", r.out);
    proc_result_free(&r);
    r = cli(true, ARGS("runs"));
    j = cli_output_json(&r);
    json_t *first = json_array_get(j, 0);
    check(proc_exited_with(&r, 0) && json_array_size(j) == 1 &&
              strcmp(json_str_of(first, "run"), "c1") == 0 &&
              strcmp(json_str_of(first, "kind"), "codemode") == 0 &&
              strcmp(json_str_of(first, "state"), "succeeded") == 0 &&
              json_integer_value(json_object_get(first, "tool_calls")) == 2,
          "two tools: runs lists the codemode run as c1", "%s", r.out);
    json_decref(j);
    proc_result_free(&r);
    check_int_eq(sql_number("SELECT count(*) FROM audit WHERE codemode_run_id = 1 AND"
                            " decision = 'allowed' AND kind = 'tool.call'"),
                 2, "two tools: each call has an audit row naming the codemode run");

    /* Human output: the console on stderr, the result on stdout. */
    r = cli(false, ARGS("codemode", "run", script));
    check(proc_exited_with(&r, 0) && output_has_line(r.out, "codemode run c2: succeeded") &&
              output_has_line_prefix(r.out, "result: {\"note\":") &&
              strstr(r.out, "start") == NULL && output_has_line(r.err, "log: start {\"n\":1}"),
          "two tools: human output: the result on stdout, the console on stderr", "out %s err %s",
          r.out, r.err);
    proc_result_free(&r);
}

/* ---- 2. schema refusals by path --------------------------------------------------------- */

static void test_schema_refusals(void)
{
    scenario_begin("refusals");
    const char *script = script_file("bad.js",
        "const out = [];\n"
        "async function attempt(name, input) {\n"
        "  try { await tools.call(name, input); out.push('admitted'); }\n"
        "  catch (e) { out.push(e.name + ' ' + e.data.code + ' ' + e.data.message); }\n"
        "}\n"
        "await attempt('echo_note', {text: ''});\n"
        "await attempt('echo_note', {text: 'x', tags: ['a', 5]});\n"
        "await attempt('echo_note', {text: 'x', colour: 'red'});\n"
        "await attempt('echo_note', {});\n"
        "await attempt('echo_note', 'just text');\n"
        "await attempt('echo_note');\n"
        "await attempt('add_numbers', {a: 1.5, b: 1});\n"
        "await attempt('add_numbers', {a: -1, b: 1});\n"
        "await attempt('add_numbers', {a: 1, b: 500});\n"
        "await attempt('no_such_tool', {});\n"
        "await attempt('echo_note', {text: 'x'.repeat(300000)});\n"
        "return out;\n");
    struct run_out o = run_json(script, NULL);
    static const struct {
        const char *code, *message;
    } WANT[] = {
        {"invalid_arguments", "tool echo_note: $.text: must be at least 1 characters long, got 0"},
        {"invalid_arguments", "tool echo_note: $.tags[1]: expected string, got number"},
        {"invalid_arguments", "tool echo_note: $.colour: not allowed (additionalProperties is false)"},
        {"invalid_arguments", "tool echo_note: $.text: missing (required)"},
        {"invalid_arguments", "tool echo_note: $: expected object, got string"},
        {"invalid_arguments", "tool echo_note: $: expected object, got null"},
        {"invalid_arguments", "tool add_numbers: $.a: expected integer, got number"},
        {"invalid_arguments", "tool add_numbers: $.a: must be at least 0, got -1"},
        {"invalid_arguments", "tool add_numbers: $.b: must be at most 100, got 500"},
        {"denied", "no tool \"no_such_tool\" in the operator's catalog (tools.json)"},
        {"too_large", "the arguments of tool.call are 300025 bytes of JSON, over the limit of"
                      " 262144"},
    };
    json_t *result = json_object_get(o.json, "result");
    check_int_eq(o.exit_code, 0, "schema refusals: the script catches each and completes");
    for (size_t i = 0; i < sizeof WANT / sizeof WANT[0]; i++) {
        char name[128], want[256];
        sfmt(name, sizeof name, "schema refusals: refusal %zu names the failing path", i + 1);
        sfmt(want, sizeof want, "HostError %s %s", WANT[i].code, WANT[i].message);
        check_str_eq(json_string_value(json_array_get(result, i)), want, name);
    }
    run_out_free(&o);
    check_int_eq(file_line_count(S.log), 0,
                 "schema refusals: the module never ran [guard: input validated in the parent"
                 " before the module runs]");
    check_int_eq(sql_number("SELECT count(*) FROM codemode_calls WHERE run_id = 1 AND"
                            " decision = 'refused' AND settlement = 'rejected'"),
                 10, "schema refusals: each refusal the parent made is recorded as a refused call"
                 " (the worker refuses an oversized input itself: it never becomes a call)");
    check_int_eq(sql_number("SELECT count(*) FROM audit WHERE codemode_run_id = 1 AND"
                            " decision = 'refused' AND reason LIKE 'tool %: $%'"),
                 9, "schema refusals: each validation refusal is audited with its path");
}

/* ---- 3. the call cap ----------------------------------------------------------------- */

static void test_call_cap(void)
{
    scenario_begin("cap");
    const char *script = script_file("many.js",
        "let performed = 0, denied = 0, message = '';\n"
        "for (let i = 0; i < 250; i++) {\n"
        "  try { await tools.call('echo_note', {text: 'n' + i}); performed++; }\n"
        "  catch (e) { denied++; message = e.data.code + ': ' + e.data.message; }\n"
        "}\n"
        "return {performed, denied, message};\n");
    struct run_out o = run_json(script, NULL);
    json_t *want = json_loads("{\"performed\": 200, \"denied\": 50, \"message\": \"denied: more"
                              " than 200 tool calls in one codemode run\"}", 0, NULL);
    check(o.exit_code == 0 && json_equal(json_object_get(o.json, "result"), want),
          "call cap: of 250 calls 200 are served and 50 denied", "exit %d, %s", o.exit_code,
          json_dumped(json_object_get(o.json, "result")));
    json_decref(want);
    check(json_integer_value(json_object_get(o.json, "tool_calls")) == 200 &&
              json_integer_value(json_object_get(o.json, "over_limit_calls")) == 50,
          "call cap: the report counts 200 calls and 50 over the limit", "%s",
          json_dumped(o.json));
    run_out_free(&o);
    check_int_eq(file_line_count(S.log), 200,
                 "call cap: the module ran exactly 200 times [guard: the codemode tool-call"
                 " limit]");
    check_int_eq(sql_number("SELECT count(*) FROM codemode_calls WHERE run_id = 1"), 200,
                 "call cap: 200 call rows, none for the calls over the limit");
    check_int_eq(sql_number("SELECT tool_calls * 1000 + over_limit_calls FROM codemode_runs"
                            " WHERE id = 1"),
                 200050, "call cap: the run row counts both");
    check_int_eq(sql_number("SELECT count(*) FROM audit WHERE codemode_run_id = 1 AND"
                            " decision = 'refused' AND reason LIKE 'over the run''s limit%'"),
                 1, "call cap: the first call over the limit is audited");
}

/* ---- 4. console flood ---------------------------------------------------------------- */

#define CUT_LINE "[console output truncated: over 65536 bytes]"

static void test_console_flood(void)
{
    scenario_begin("flood");
    const char *script = script_file("flood.js",
        "for (let i = 0; i < 2000; i++) console.log('line ' + i + ' ' + 'x'.repeat(90));\n"
        "return 'done';\n");
    struct proc_result r = cli(false, ARGS("codemode", "run", script));
    size_t cut = strlen(CUT_LINE "\n");
    check(proc_exited_with(&r, 0) && r.err_len >= cut &&
              strcmp(r.err + r.err_len - cut, CUT_LINE "\n") == 0 && r.err_len <= 65536 + 64,
          "console flood: stderr ends with the truncation line, at most 64 KiB [guard: the cut"
          " is visible]", "%s, %zu bytes of stderr ending '%s'", proc_describe(&r), r.err_len,
          r.err_len > 80 ? r.err + r.err_len - 80 : r.err);
    check(output_has_line(r.out, "result: \"done\"") &&
              output_has_line_prefix(r.out, "console: truncated at 65536 bytes") &&
              strstr(r.out, "line 1 ") == NULL,
          "console flood: stdout has the result and says the console was cut, no console text",
          "%s", r.out);
    proc_result_free(&r);
    struct run_out o = run_json(script, NULL);
    const char *console = json_str_of(o.json, "console");
    size_t len = strlen(console);
    check(json_is_true(json_object_get(o.json, "console_truncated")) && len <= 65536 &&
              len > cut && strcmp(console + len - cut, CUT_LINE "\n") == 0 &&
              strncmp(console, "log: line 0 ", 12) == 0,
          "console flood: --json has console_truncated and the console ending in the line",
          "truncated %s, %zu bytes", json_is_true(json_object_get(o.json, "console_truncated"))
                                         ? "true" : "false", len);
    run_out_free(&o);
    check_int_eq(sql_number("SELECT console_truncated FROM codemode_runs WHERE id = 2"), 1,
                 "console flood: the run row records the cut");
}

/* ---- 5. escaping ------------------------------------------------------------------- */

/* U+202E RIGHT-TO-LEFT OVERRIDE in UTF-8, built from bytes so that no source line
 * holds it. */
static const char RLO[] = {(char)0xe2, (char)0x80, (char)0xae, '\0'};

static void test_escaping(void)
{
    scenario_begin("escape");
    const char *script = script_file("escape.js",
        "console.log('red \\u001b[31m and \\u202e reversed');\n"
        "return 'x\\u202ey';\n");
    struct proc_result r = cli(false, ARGS("codemode", "run", script));
    check(proc_exited_with(&r, 0) &&
              output_has_line(r.err, "log: red \\u001b[31m and \\u202e reversed") &&
              output_has_line(r.out, "result: \"x\\u202ey\"") &&
              strchr(r.err, 0x1b) == NULL && strstr(r.out, RLO) == NULL &&
              strstr(r.err, RLO) == NULL,
          "escaping: control and bidi characters of script text are shown, never sent raw",
          "out %s err %s", r.out, r.err);
    proc_result_free(&r);
}

/* ---- 6. exits and refusals ----------------------------------------------------------- */

static void test_exits(void)
{
    scenario_begin("exits");
    const char *failing = script_file("fail.js", "await tools.call('echo_note', {text: 'a'});\n"
                                                 "throw new Error('boom');\n");
    struct run_out o = run_json(failing, NULL);
    check(o.exit_code == 1 && strcmp(json_str_of(o.json, "state"), "failed") == 0 &&
              strncmp(json_str_of(o.json, "error"), "script error: Error: boom", 25) == 0,
          "exits: a script that throws: exit 1, the run failed with the error", "exit %d %s",
          o.exit_code, o.json != NULL ? json_dumped(o.json) : "");
    run_out_free(&o);
    check_int_eq(sql_number("SELECT count(*) FROM codemode_runs WHERE id = 1 AND state = 'failed'"
                            " AND error LIKE 'script error:%'"),
                 1, "exits: the failed run is stored as failed");
    /* Where the throw is: the script's file, line 2 and the column of "Error" (quickjs
     * patch 0008 [guard frame-columns]: without it "fail.js:2)"). */
    char where[PATH_MAX + 128];
    sfmt(where, sizeof where, "script error: Error: boom (%s:2:11)", failing);
    char error_sql[PATH_MAX + 256];
    sfmt(error_sql, sizeof error_sql, "SELECT count(*) FROM codemode_runs WHERE id = 1 AND error = '%s'", where);
    check_int_eq(sql_number(error_sql), 1,
                 "exits: the failed run's error names the script's file, line and column");

    const struct cli_refusal cases[] = {
        {"exits: no script is usage", ARGS("codemode", "run"), 2, "needs a script"},
        {"exits: --input that is not JSON is usage",
         ARGS("codemode", "run", failing, "--input", "{nope"), 2, "--input is not JSON"},
        {"exits: an unknown option is usage", ARGS("codemode", "run", failing, "--bogus"), 2,
         "unknown option '--bogus'"},
        {"exits: a missing script file is usage",
         ARGS("codemode", "run", "/nonexistent/agent.js"), 2, "cannot open"},
        {"exits: an unknown subcommand is usage", ARGS("codemode", "walk"), 2,
         "unknown subcommand 'walk'"},
        {"exits: describe --format bogus is usage", ARGS("codemode", "describe", "--format", "x"),
         2, "--format must be json or typescript"},
        /* Compiled by a confined worker before the run is recorded [guard codemode-compiles]. */
        {"exits: a script that does not compile is refused before it starts, its place named",
         ARGS("codemode", "run", script_file("syntax.js", "const a = 1;\nlet b = ;\n")), 1,
         "the script does not compile: syntax error: SyntaxError: unexpected token in "
         "expression: ';' ("},
    };
    cli_expect_refusals(S.home, cases, sizeof cases / sizeof cases[0]);
    check_int_eq(sql_number("SELECT count(*) FROM codemode_runs"), 1,
                 "exits: the refused scripts recorded no run (only the failing one is stored)");
    o = run_json(failing, NULL);
    check(o.json != NULL && strcmp(json_str_of(o.json, "error"), where) == 0,
          "exits: --json's error names the script's file, line and column", "%s; want %s",
          o.json != NULL ? json_dumped(o.json) : "", where);
    run_out_free(&o);
    struct proc_result hr = cli(false, ARGS("codemode", "run", failing));
    check(proc_exited_with(&hr, 1) && (strstr(hr.out, where) != NULL || strstr(hr.err, where) != NULL),
          "exits: the human output names the script's file, line and column", "%s; out %s err %s",
          proc_describe(&hr), hr.out, hr.err);
    proc_result_free(&hr);
    const char *empty = script_file("empty.js", "");
    struct proc_result r = cli(false, ARGS("codemode", "run", empty));
    check(proc_exited_with(&r, 2) && strstr(r.err, "script") != NULL,
          "exits: an empty script is usage", "%s %s", proc_describe(&r), r.err);
    proc_result_free(&r);

    /* A catalog that does not load refuses before anything is stored. */
    char path[PATH_MAX + 32];
    sfmt(path, sizeof path, "%s/tools.json", S.home);
    write_text_file(path, "{\"tools\": {\"x\": {\"description\": \"d\", \"module\": \"notes\", \"op\":"
                     " \"echo\", \"class\": \"query\", \"input\": {}, \"price\": 1}}}", 0600);
    long long before = sql_number("SELECT count(*) FROM codemode_runs");
    r = cli(false, ARGS("codemode", "run", failing));
    check(proc_exited_with(&r, 1) &&
              strcmp(r.err, "ck-basal codemode run: tools.json: tools.x.price: unknown field\n") == 0,
          "exits: a bad tools.json refuses with one line naming the field", "%s %s",
          proc_describe(&r), r.err);
    proc_result_free(&r);
    check_int_eq(sql_number("SELECT count(*) FROM codemode_runs"), before,
                 "exits: a refused run stores nothing");
    write_text_file(path, TOOLS, 0600);

    /* The script from stdin. */
    r = cli_in(true, ARGS("codemode", "run", "-"), "return await tools.call('echo_note',"
                                                   " {text: 'from stdin'});\n");
    json_t *j = cli_output_json(&r);
    check(proc_exited_with(&r, 0) &&
              strcmp(json_str_of(json_object_get(j, "result"), "text"), "from stdin") == 0,
          "exits: a script read from stdin ('-') runs", "%s %s", proc_describe(&r), r.out);
    json_decref(j);
    proc_result_free(&r);
    char *name = sql_text("SELECT script_name FROM codemode_runs ORDER BY id DESC LIMIT 1");
    check(name != NULL && strcmp(name, "-") == 0, "exits: a stdin script is recorded as '-'",
          "%s", name != NULL ? name : "(none)");
    free(name);

    /* A run a dead process left running is ended by the next run. */
    bool planted = store_exec_changes(S.db, "INSERT INTO codemode_runs (script_name, script,"
                                            " script_sha256, input, state, owner, created_at,"
                                            " updated_at) VALUES ('x', x'00', printf('%064d', 0),"
                                            " '{}', 'running', 'pid:999999999:5', 1, 1)") == 1;
    long long planted_id = planted ? sql_number("SELECT max(id) FROM codemode_runs") : -1;
    r = cli_in(false, ARGS("codemode", "run", "-"), "return 1;\n");
    proc_result_free(&r);
    char sql[160];
    sfmt(sql, sizeof sql, "SELECT state || ': ' || error FROM codemode_runs WHERE id = %lld",
         planted_id);
    char *state = sql_text(sql);
    check(planted && state != NULL &&
              strcmp(state, "failed: abandoned: the process running it ended before the run"
                            " did") == 0,
          "exits: a run left running by a dead process is ended failed (abandoned)", "%s",
          state != NULL ? state : "(none)");
    free(state);
}

/* ---- 7. describe ------------------------------------------------------------------------ */

static void test_describe(void)
{
    scenario_begin("describe");
    struct proc_result r = cli(true, ARGS("codemode", "describe"));
    json_t *j = cli_output_json(&r);
    json_t *tools = json_object_get(j, "tools");
    json_t *t0 = json_array_get(tools, 0), *t1 = json_array_get(tools, 1);
    check(proc_exited_with(&r, 0) && json_array_size(tools) == 2 &&
              strcmp(json_str_of(t0, "name"), "echo_note") == 0 &&
              strcmp(json_str_of(t0, "class"), "query") == 0 &&
              strcmp(json_str_of(t1, "class"), "mutation") == 0 &&
              json_is_object(json_object_get(t1, "input")),
          "describe: the catalog as JSON, in order, with classes and schemas", "%s", r.out);
    json_decref(j);
    proc_result_free(&r);
    r = cli(false, ARGS("codemode", "describe", "--format", "typescript"));
    check(proc_exited_with(&r, 0) &&
              strstr(r.out, "function call(name: \"echo_note\", input: {") != NULL &&
              strstr(r.out, "function call(name: \"add_numbers\", input: {") != NULL,
          "describe: TypeScript declarations, one overload per tool", "%s", r.out);
    proc_result_free(&r);
}

/* ---- 8. migration ------------------------------------------------------------------------ */

static void test_migration(void)
{
    memset(&S, 0, sizeof S);
    sfmt(S.dir, sizeof S.dir, "%s/migrate", g_root);
    sfmt(S.home, sizeof S.home, "%s/home", S.dir);
    sfmt(S.db, sizeof S.db, "%s/basal.db", S.home);
    if (mkdir(S.dir, 0755) != 0 || mkdir(S.home, 0700) != 0) {
        fail("migration: directories", "%s", strerror(errno));
        return;
    }
    bool made = store_create(S.db, store_schema_migration(1),
                             "INSERT INTO flows (id, created_at) VALUES ('old', 1);"
                             "INSERT INTO kv (flow_id, key, value) VALUES ('old', 'k', '7');"
                             "INSERT INTO audit (at, kind, decision) VALUES (1, 'x', 'allowed');"
                             "PRAGMA user_version = 1;");
    if (!ok(made, "migration: a store at schema version 1 made"))
        return;
    struct proc_result r = cli(true, ARGS("setup"));
    json_t *j = cli_output_json(&r);
    json_t *store = json_object_get(j, "store");
    check(proc_exited_with(&r, 0) &&
              json_integer_value(json_object_get(store, "schema_version_before")) == 1 &&
              json_integer_value(json_object_get(store, "schema_version")) == STORE_SCHEMA_VERSION,
          "migration: setup migrates a version 1 store", "%s %s", r.out, r.err);
    json_decref(j);
    proc_result_free(&r);
    check_int_eq(sql_number("PRAGMA user_version"), STORE_SCHEMA_VERSION,
                 "migration: the store is at this build's version");
    check_int_eq(sql_number("SELECT (SELECT count(*) FROM flows WHERE id = 'old') +"
                            " (SELECT count(*) FROM kv WHERE value = '7') * 10 +"
                            " (SELECT count(*) FROM audit WHERE codemode_run_id IS NULL) * 100"),
                 111, "migration: the older rows are intact (audit gains codemode_run_id)");
    check_int_eq(sql_number("SELECT count(*) FROM codemode_runs"), 0,
                 "migration: the codemode tables exist");
}

/* ---- 9. values exactly ------------------------------------------------------------------- */

/* A module's result reaches the script and the store as the module wrote it (a number
 * beyond 64 bits or a double keeps its digits, only the whitespace between tokens goes),
 * and a string holding U+0000 is an input like any other: it reaches the module and
 * comes back. A NUL in an object key is refused with the reason. */
static void test_exact_values(void)
{
    scenario_begin("exact-values");
    char text[4096], path[PATH_MAX + 32];
    sfmt(text, sizeof text,
         "{\"modules\": {\"notes\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"
         " \"ops\": {\"echo\": {\"kind\": \"query\"}, \"raw\": {\"kind\": \"query\"}}}}}",
         harness_path("test/tools/test_module"), S.log);
    sfmt(path, sizeof path, "%s/modules.json", S.home);
    bool made = write_text_file(path, text, 0600);
    sfmt(path, sizeof path, "%s/tools.json", S.home);
    made = made && write_text_file(path,
        "{\"tools\": {"
        " \"echo_note\": {\"description\": \"Echo.\", \"module\": \"notes\", \"op\": \"echo\","
        "   \"class\": \"query\", \"input\": {\"type\": \"object\", \"properties\": {"
        "   \"text\": {\"type\": \"string\", \"maxLength\": 3}}}},"
        " \"reply\": {\"description\": \"Replies its input.\", \"module\": \"notes\","
        "   \"op\": \"raw\", \"class\": \"query\", \"input\": {\"type\": \"string\"}}}}", 0600);
    if (!ok(made, "exact values: catalogs written"))
        return;
    const char *script = script_file("exact.js",
        "const v = await tools.call('reply', '{\"result\" : [ 1.0, 18446744073709551616,'\n"
        "  + ' {\"s\": \"a b\"}, -1e400 ] }\\n');\n"
        "const nul = await tools.call('echo_note', {text: 'a\\u0000b'});\n"
        "let key = null;\n"
        "try { await tools.call('echo_note', {['k\\u0000']: 1}); } catch (e) { key = e.data; }\n"
        "return {big: v[1] === 18446744073709551616, inf: v[3] === -Infinity,\n"
        "        nul: nul.text.length === 3 && nul.text.charCodeAt(1) === 0, key};\n");
    struct run_out o = run_json(script, NULL);
    const json_t *result = json_object_get(o.json, "result");
    const json_t *key = json_object_get(result, "key");
    check(o.exit_code == 0 && json_is_true(json_object_get(result, "big")) &&
              json_is_true(json_object_get(result, "inf")),
          "exact values: a reply with a number beyond 64 bits (and beyond a double) reaches the"
          " script [guard: a module's result is held to the JSON grammar, not converted]",
          "%s %s", json_dumped(o.json), o.err);
    char *stored = sql_text("SELECT value FROM codemode_calls WHERE position = 0");
    check_str_eq(stored, "[1.0,18446744073709551616,{\"s\":\"a b\"},-1e400]",
                 "exact values: the store keeps the result as the module wrote it, digits and"
                 " all, without the whitespace between tokens");
    free(stored);
    check(json_is_true(json_object_get(result, "nul")),
          "exact values: a string holding U+0000 passes the schema, reaches the module and"
          " comes back", "%s", json_dumped(o.json));
    check(strcmp(json_str_of(key, "code"), "invalid_arguments") == 0 &&
              strstr(json_str_of(key, "message"), "NUL byte in object key") != NULL &&
              strstr(json_str_of(key, "message"), "64 bits") == NULL,
          "exact values: a NUL in an object key is refused with the reason", "%s", json_dumped(key));
    run_out_free(&o);
    char *log = read_text_file(S.log);
    check(log != NULL && strstr(log, "echo ") != NULL && strstr(log, "\"a\\u0000b\"") != NULL,
          "exact values: the module got the string with its U+0000, escaped", "%s",
          log != NULL ? log : "(no log)");
    free(log);
}

int main(void)
{
    if (!require_parent_and_module("codemode: ck-basal", "codemode: test_module") ||
        !harness_tmpdir_copy("codemode", g_root, sizeof g_root))
        return harness_finish();
    test_two_tools();
    test_schema_refusals();
    test_call_cap();
    test_console_flood();
    test_escaping();
    test_exits();
    test_describe();
    test_migration();
    test_exact_values();
    harness_remove_tree(g_root);
    return harness_finish();
}
