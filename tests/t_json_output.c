/* Every JSON text ck-basal writes is inert on a terminal and exact for a JSON reader
 * (base/json_out.h), and script text never starts a line of human output of its own
 * (docs/codemode.md, "Running a script"). Through the real binaries:
 *
 *   1. A script-chosen string HOSTILE (the C1 CSI U+009B, "2J", RLO U+202E, LRI U+2066,
 *      DEL, LINE SEPARATOR U+2028, NEL U+0085, ESC "[2J", BEL) comes out of the --json
 *      output of exec, run, runs, journal, flow dry-run, codemode run (its console
 *      field), worker-check (a lying worker's Welcome), out of a sink's JSON-lines
 *      file, and out of serve's ops-socket reply read raw, with none of those
 *      characters raw and each as \uXXXX; and the JSON parses back (jansson) to a
 *      value holding HOSTILE exactly [guard json-one-encoder]. serve's log, both
 *      --log-json and key=value, of a data home whose path holds RLO, ESC and NEL
 *      shows them as \uXXXX.
 *   2. A manifest whose purpose holds a direction control is refused by `flow install`
 *      with one line naming manifest.purpose, exit 1, and nothing stored
 *      [guard manifest-shown-text].
 *   3. console.log("hello\nbudget exhausted: cpu") in exec and codemode run: no line
 *      of the output starts with "budget exhausted", the continuation line carries
 *      "log| ", and --json's console keeps the lines so marked [guard console-lines].
 *      Results and errors with a line break stay on one line, the break shown as \n,
 *      and an ESC is shown as \u001b in the console, the result and the error alike
 *      (one style) [guard terminal-escaping]. A console cut inside a message of many
 *      lines keeps only marked lines [guard console-lines].
 *   0. The encoder itself (base/json_out.h), with the flags each output uses: nothing
 *      raw, the value unchanged (json_equal after parsing back), other non-ASCII kept
 *      as UTF-8, a script's own backslash text untouched, jansson's \u001B spelt
 *      \u001b [guard json-one-encoder].
 * Every serve this test starts is stopped and reaped before it ends. */
#include "lib/harness.h"
#include "lib/serve_home.h"

#include "base/json_out.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIMEOUT_MS 60000

/* The string as JavaScript source, and as the UTF-8 bytes it is. */
#define HOSTILE_JS "'\\u009b2J\\u202e\\u2066\\u007f\\u2028\\u0085\\x1b[2J\\x07'"
/* clang-tidy rightly flags direction controls in a literal; here they are the point. */
static const char HOSTILE[] = // NOLINT(misc-misleading-bidirectional)
    "\xc2\x9b" "2J\xe2\x80\xae\xe2\x81\xa6\x7f\xe2\x80\xa8\xc2\x85" // NOLINT(misc-misleading-bidirectional)
    "\x1b[2J\x07";

/* The escapes a JSON text must show for it. */
static const char *const ESCAPED[] = {"\\u009b", "\\u202e", "\\u2066", "\\u007f",
                                      "\\u2028", "\\u0085", "\\u001b", "\\u0007", NULL};

static struct test_home g_h;

/* ---- what may reach a terminal ---------------------------------------------------- */

/* The offset of the first byte a terminal would act on in a JSON text (a line feed of
 * an indented layout excepted), or -1. */
static long raw_active_at(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len; i++) {
        unsigned char b = s[i];
        if ((b < 0x20 && b != '\n') || b == 0x7f)
            return (long)i;
        if (b == 0xc2 && i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f)
            return (long)i;
        if (b == 0xd8 && i + 1 < len && s[i + 1] == 0x9c)
            return (long)i;
        if (b == 0xe2 && i + 2 < len && s[i + 1] == 0x80 &&
            (s[i + 2] == 0x8e || s[i + 2] == 0x8f || (s[i + 2] >= 0xa8 && s[i + 2] <= 0xae)))
            return (long)i;
        if (b == 0xe2 && i + 2 < len && s[i + 1] == 0x81 && s[i + 2] >= 0xa6 && s[i + 2] <= 0xa9)
            return (long)i;
    }
    return -1;
}

/* True if any string in v (keys included) holds needle. */
static bool json_holds(json_t *v, const char *needle)
{
    if (json_is_string(v))
        return strstr(json_string_value(v), needle) != NULL;
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e)
            if (json_holds(e, needle))
                return true;
        return false;
    }
    if (json_is_object(v)) {
        const char *key;
        json_t *e;
        json_object_foreach(v, key, e)
            if (strstr(key, needle) != NULL || json_holds(e, needle))
                return true;
    }
    return false;
}

/* text is one JSON text per line (one line or an indented one: whole), inert, with
 * every escape of HOSTILE, and parses back to a value holding HOSTILE exactly. */
static void expect_inert_json(const char *text, size_t len, bool lines, const char *name)
{
    long at = raw_active_at(text, len);
    const char *missing = NULL;
    for (size_t i = 0; ESCAPED[i] != NULL && missing == NULL; i++)
        if (strstr(text, ESCAPED[i]) == NULL)
            missing = ESCAPED[i];
    json_error_t e;
    json_t *v = json_loadb(text, len, lines ? JSON_DISABLE_EOF_CHECK : 0, &e);
    bool exact = v != NULL && json_holds(v, HOSTILE);
    json_decref(v);
    check(at < 0 && missing == NULL && exact, name,
          "raw character at %ld; missing \"%s\"; parses back exactly: %s (%s); text \"%.400s\"",
          at, missing != NULL ? missing : "", exact ? "yes" : "no", v == NULL ? e.text : "-",
          text);
}

static void expect_command_json(const struct proc_result *r, const char *name)
{
    if (r->started && !r->timed_out && r->out_len > 0)
        expect_inert_json(r->out, r->out_len, false, name);
    else
        fail(name, "%s: stderr \"%.300s\"", proc_describe(r), r->err);
}

/* ---- 0. the encoder ------------------------------------------------------------------ */

static void test_encoder(void)
{
    static const char kept[] = "caf\xc3\xa9 \xc2\xa0 \xe2\x82\xac \xf0\x9f\x98\x80";
    json_t *o = json_pack("{s:s, s:s, s:s, s:[s]}", "h", HOSTILE, "kept", kept, "lit",
                          "\\u001B \\\\ \\", "k\xe2\x80\xae", // NOLINT(misc-misleading-bidirectional)
                          "\x1b\xe2\x80\xa9");
    static const size_t flags[] = {JSON_COMPACT, JSON_INDENT(2) | JSON_SORT_KEYS,
                                   JSON_COMPACT | JSON_ENSURE_ASCII};
    static const char *const names[] = {"compact", "indented", "ASCII"};
    for (size_t i = 0; i < 3; i++) {
        char *text = o != NULL ? json_out_dumps(o, flags[i]) : NULL;
        size_t len = text != NULL ? strlen(text) : 0;
        json_t *back = text != NULL ? json_loads(text, 0, NULL) : NULL;
        bool utf8_kept = i == 2 || (text != NULL && strstr(text, kept) != NULL);
        char name[160];
        sfmt(name, sizeof name, "encoder (%s): nothing raw, the value unchanged, other UTF-8 "
                                "kept, escapes lower case [guard json-one-encoder]", names[i]);
        check(text != NULL && raw_active_at(text, len) < 0 && back != NULL &&
                  json_equal(o, back) && utf8_kept && strstr(text, "\\u001b[2J") != NULL &&
                  strstr(text, "\\\\u001B") != NULL,
              name, "text \"%.300s\"", text != NULL ? text : "(null)");
        json_decref(back);
        free(text);
    }
    json_decref(o);
}

/* ---- 1. every --json output --------------------------------------------------------- */

static const char *EXEC_SCRIPT = "console.log(" HOSTILE_JS ");\nreturn " HOSTILE_JS ";\n";

static void test_exec(void)
{
    const char *js = harness_tmp_file("hostile-exec.js", EXEC_SCRIPT);
    struct proc_result r =
        test_home_cli(&g_h, true, ARGS("exec", "--profile", "codemode", js));
    expect_command_json(&r, "exec --json: the value and console are escaped and exact "
                            "[guard json-one-encoder]");
    proc_result_free(&r);
}

static const char *FLOW_SCRIPT =
    "const h = " HOSTILE_JS ";\n"
    "await kv.set('k', h);\n"
    "await sink.emit('out', {h});\n"
    "if (trigger.fail) throw new Error(h);\n"
    "return {h};\n";

static void test_flow_outputs(void)
{
    if (!check(test_home_flow(&g_h, "hostile", 1, "{\"manual\":true},\"sinks\":[\"out\"]",
                              FLOW_SCRIPT),
               "setup: flow hostile installed and approved", "see stderr"))
        return;
    struct proc_result r = test_home_cli(&g_h, true, ARGS("run", "hostile"));
    expect_command_json(&r, "run --json: the result is escaped and exact [guard json-one-encoder]");
    proc_result_free(&r);
    r = test_home_cli(&g_h, true, ARGS("run", "hostile", "--trigger", "{\"fail\":true}"));
    expect_command_json(&r, "run --json: the error is escaped and exact [guard json-one-encoder]");
    proc_result_free(&r);
    r = test_home_cli(&g_h, true, ARGS("runs", "hostile"));
    expect_command_json(&r, "runs --json: the error is escaped and exact [guard json-one-encoder]");
    proc_result_free(&r);
    r = test_home_cli(&g_h, true, ARGS("journal", "1"));
    expect_command_json(&r, "journal --json: args and values are escaped and exact "
                            "[guard json-one-encoder]");
    proc_result_free(&r);
    r = test_home_cli(&g_h, true, ARGS("flow", "dry-run", "hostile", "--version", "1"));
    expect_command_json(&r, "flow dry-run --json: the calls and result are escaped and exact "
                            "[guard json-one-encoder]");
    proc_result_free(&r);

    char path[PATH_MAX + 32];
    sfmt(path, sizeof path, "%s/sinks/out.jsonl", g_h.home);
    FILE *f = fopen(path, "r");
    char text[8192];
    size_t n = f != NULL ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f != NULL)
        fclose(f);
    text[n] = '\0';
    if (check(n > 0, "sink: the JSON-lines file was written", "%s: %s", path, strerror(errno)))
        expect_inert_json(text, n, true, "sink: the JSON-lines file is escaped and exact "
                                         "[guard json-one-encoder]");
}

static void test_codemode(void)
{
    char path[PATH_MAX + 32];
    sfmt(path, sizeof path, "%s/modules.json", g_h.home);
    bool ok = write_text_file(path, "{\"modules\": {}}", 0600);
    sfmt(path, sizeof path, "%s/tools.json", g_h.home);
    ok = ok && write_text_file(path, "{\"tools\": {}}", 0600);
    if (!check(ok, "setup: empty catalogs", "%s", strerror(errno)))
        return;
    const char *js = harness_tmp_file("hostile-codemode.js", EXEC_SCRIPT);
    struct proc_result r = test_home_cli(&g_h, true, ARGS("codemode", "run", js));
    expect_command_json(&r, "codemode run --json: the console and result are escaped and "
                            "exact [guard json-one-encoder]");
    json_t *o = cli_output_json(&r);
    const char *console = json_str_of(o, "console");
    check(strstr(console, HOSTILE) != NULL, "codemode run --json: the "
          "console field itself holds the string exactly", "%.300s", r.out);
    json_decref(o);
    proc_result_free(&r);
}

static void test_worker_check(void)
{
    char wrapper[PATH_MAX + 16], script[2 * PATH_MAX];
    sfmt(wrapper, sizeof wrapper, "%s/liar.sh", g_h.dir);
    sfmt(script, sizeof script, "#!/bin/sh\nexec %s '--os=%s' \"$@\"\n",
         harness_path("test/tools/fake_worker"), HOSTILE);
    if (!check(write_text_file(wrapper, script, 0700), "setup: lying worker wrapper", "%s",
               strerror(errno)))
        return;
    char entry[PATH_MAX + 32];
    sfmt(entry, sizeof entry, "BASAL_TEST_WORKER=%s", wrapper);
    char *envp[] = {entry, NULL};
    struct cli_opts opts = {.json = true, .envp = envp, .timeout_ms = TIMEOUT_MS};
    struct proc_result r = cli_run(g_h.home, &opts, ARGS("worker-check"));
    expect_command_json(&r, "worker-check --json: a lying worker's Welcome is escaped and "
                            "exact [guard json-one-encoder]");
    proc_result_free(&r);
}

static void test_ops_reply(void)
{
    struct test_serve s;
    if (!check(test_serve_start(&s, &g_h, NULL, NULL), "setup: serve started", "%.300s", s.log)) {
        if (s.p.pid > 0) /* started but never ready: still stopped and reaped */
            (void)test_serve_stop(&s);
        return;
    }
    char *reply = test_ops_request(&g_h, "{\"cmd\":\"journal\",\"args\":{\"run\":\"1\"}}");
    if (reply == NULL)
        fail("ops socket: the raw reply is escaped and exact [guard json-one-encoder]",
             "no reply");
    else
        expect_inert_json(reply, strlen(reply), true, "ops socket: the raw reply is escaped "
                                                      "and exact [guard json-one-encoder]");
    free(reply);
    int status = test_serve_stop(&s);
    check(status == 0, "ops socket: serve stopped and reaped", "status %d", status);
}

/* serve's log, key=value and --log-json, of a data home whose path holds RLO, ESC and
 * NEL (its start line names the home): inert, each shown as \uXXXX. Started here, not
 * by test_serve_start, which waits for the key=value ready line; stopped and reaped
 * whether or not it became ready. */
static void test_serve_log(void)
{
    static const char *const modes[][3] = {
        {"--log-json", "\"event\":\"ready\"", "serve --log-json"},
        {NULL, "event=ready", "serve's key=value log"}};
    for (size_t i = 0; i < 2; i++) {
        struct test_home h;
        char name[64];
        sfmt(name, sizeof name, "log%zu\xe2\x80\xae\x1b[2J\xc2\x85", i); // NOLINT(misc-misleading-bidirectional)
        test_home_begin(&h, g_h.dir, name);
        char what[160];
        sfmt(what, sizeof what, "%s: the home's RLO, ESC and NEL are written as \\uXXXX, "
                                "nothing raw [guard json-one-encoder]", modes[i][2]);
        const char *argv[CLI_MAX_ARGS + 6];
        cli_argv(argv, sizeof argv / sizeof argv[0], NULL, false, h.home,
                 ARGS("serve", modes[i][0]));
        struct test_serve s;
        memset(&s, 0, sizeof s);
        if (proc_start(&s.p, argv, NULL) != 0) {
            fail(what, "serve could not be started");
            continue;
        }
        bool ready = test_serve_wait_log(&s, modes[i][1], SERVE_HOME_TIMEOUT_MS);
        int status = test_serve_stop(&s);
        long at = raw_active_at(s.log, s.len);
        check(ready && at < 0 && strstr(s.log, "\\u202e") != NULL &&
                  strstr(s.log, "\\u001b[2J") != NULL && strstr(s.log, "\\u0085") != NULL &&
                  status == 0,
              what, "ready %d, raw at %ld, serve status %d; log \"%.400s\"", ready, at, status,
              s.log);
    }
}

/* ---- 2. the manifest refusal ----------------------------------------------------------- */

static void test_manifest_refusal(void)
{
    char dir[PATH_MAX + 16], path[PATH_MAX + 48];
    sfmt(dir, sizeof dir, "%s/flow-bidi", g_h.dir);
    bool ok = mkdir(dir, 0755) == 0;
    sfmt(path, sizeof path, "%s/flow.js", dir);
    ok = ok && write_text_file(path, "return 1;\n", 0644);
    sfmt(path, sizeof path, "%s/manifest.json", dir);
    ok = ok && write_text_file(path, "{\"format\":1,\"id\":\"bidi\",\"version\":1,"
                                     "\"purpose\":\"safe \\u202eevil\",\"trigger\":{\"manual\":true}}",
                               0644);
    if (!check(ok, "setup: a manifest with RLO in its purpose", "%s", strerror(errno)))
        return;
    long long flows = test_home_sql(&g_h, "SELECT count(*) FROM flow_versions");
    struct proc_result r = test_home_cli(&g_h, false, ARGS("flow", "install", dir));
    const char *nl = strchr(r.err, '\n');
    check(proc_exited_with(&r, 1) && nl != NULL && nl[1] == '\0' &&
              strstr(r.err, "manifest.purpose: holds a direction control (U+202E)") != NULL,
          "flow install: a purpose with a direction control is refused in one line naming "
          "the field [guard manifest-shown-text]",
          "%s; stderr \"%s\"", proc_describe(&r), r.err);
    proc_result_free(&r);
    check_int_eq(test_home_sql(&g_h, "SELECT count(*) FROM flow_versions"), flows,
                 "flow install: the refused manifest stored nothing");
}

/* ---- 3. console lines ------------------------------------------------------------------ */

/* The first line of text that begins with prefix, or NULL. */
static const char *line_starting(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p != NULL && *p != '\0';) {
        if (strncmp(p, prefix, n) == 0)
            return p;
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return NULL;
}

static const char *FORGE_SCRIPT =
    "console.log('hello\\nbudget exhausted: cpu');\n"
    "console.error('\\x1b[1A');\n"
    "if (trigger.fail) throw new Error('oops \\x1b[1A\\nbudget exhausted: cpu');\n"
    "return 'two\\nbudget exhausted: cpu \\x1b';\n";

static void expect_no_forged_line(const struct proc_result *r, const char *name)
{
    const char *out = line_starting(r->out, "budget exhausted");
    const char *err = line_starting(r->err, "budget exhausted");
    check(r->started && out == NULL && err == NULL, name,
          "%s; stdout \"%.300s\" stderr \"%.300s\"", proc_describe(r), r->out, r->err);
}

static void test_console_forge(void)
{
    const char *js = harness_tmp_file("forge.js", FORGE_SCRIPT);
    struct proc_result r =
        test_home_cli(&g_h, false, ARGS("exec", "--profile", "codemode", js));
    expect_no_forged_line(&r, "exec: a console message's own line break starts no line "
                              "a script could forge [guard console-lines]");
    check(strstr(r.err, "log: hello\nlog| budget exhausted: cpu\n") != NULL &&
              strstr(r.err, "error: \\u001b[1A\n") != NULL &&
              strstr(r.out, "two\\nbudget exhausted: cpu \\u001b") != NULL,
          "exec: the continuation line carries log| ; the result keeps one line; ESC is "
          "\\u001b in the console and the result alike [guard terminal-escaping]",
          "stdout \"%.300s\" stderr \"%.300s\"", r.out, r.err);
    proc_result_free(&r);

    r = test_home_cli(&g_h, false, ARGS("codemode", "run", js));
    expect_no_forged_line(&r, "codemode run: a console message's own line break starts no "
                              "line a script could forge [guard console-lines]");
    check(strstr(r.err, "log: hello\nlog| budget exhausted: cpu\n") != NULL &&
              strstr(r.out, "result: \"two\\nbudget exhausted: cpu \\u001b\"") != NULL,
          "codemode run: the continuation line carries log| , the result is one line",
          "stdout \"%.300s\" stderr \"%.300s\"", r.out, r.err);
    proc_result_free(&r);

    r = test_home_cli(&g_h, false, ARGS("codemode", "run", js, "--input", "{\"fail\":true}"));
    expect_no_forged_line(&r, "codemode run: an error's own line break starts no line "
                              "[guard terminal-escaping]");
    check(strstr(r.out, "error: script error: Error: oops \\u001b[1A") != NULL,
          "codemode run: the error is one line, its ESC shown as \\u001b (one style) "
          "[guard terminal-escaping]",
          "stdout \"%.300s\"", r.out);
    proc_result_free(&r);

    r = test_home_cli(&g_h, true, ARGS("codemode", "run", js));
    json_t *o = cli_output_json(&r);
    const char *console = json_str_of(o, "console");
    check(strcmp(console, "log: hello\nlog| budget exhausted: cpu\nerror: \x1b[1A\n") == 0,
          "codemode run --json: the console keeps its lines, the continuation marked "
          "[guard console-lines]", "%.300s", r.out);
    json_decref(o);
    proc_result_free(&r);

    /* One message of 30 000 short lines: cut, every kept line still marked. */
    const char *many = harness_tmp_file(
        "many.js", "console.log('ab\\n'.repeat(30000) + 'budget exhausted: cpu');\nreturn 1;\n");
    r = test_home_cli(&g_h, false, ARGS("exec", "--profile", "codemode", many));
    const char *cut = "[console output truncated: over 65536 bytes]\n";
    bool marked = r.err_len > strlen(cut) && strcmp(r.err + r.err_len - strlen(cut), cut) == 0;
    size_t lines = 0;
    for (const char *p = r.err; marked && *p != '\0'; lines++) {
        /* a prefix and at least one character of the text, or the cut line */
        marked = ((strncmp(p, "log: ", 5) == 0 || strncmp(p, "log| ", 5) == 0) && p[5] != '\n') ||
                 strcmp(p, cut) == 0;
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : "";
    }
    check(proc_exited_with(&r, 0) && marked && r.err_len <= 65536 && lines > 1000,
          "exec: a console cut inside a message of many lines keeps whole marked lines and "
          "ends with the cut line [guard console-lines]",
          "%s; %zu bytes, %zu lines, ending \"%s\"", proc_describe(&r), r.err_len, lines,
          r.err_len > 80 ? r.err + r.err_len - 80 : r.err);
    proc_result_free(&r);

    if (!test_home_flow(&g_h, "forge", 1, "{\"manual\":true}", FORGE_SCRIPT))
        return;
    r = test_home_cli(&g_h, false, ARGS("run", "forge", "--trigger", "{\"fail\":true}"));
    expect_no_forged_line(&r, "run: an error's own line break starts no line "
                              "[guard terminal-escaping]");
    proc_result_free(&r);
    r = test_home_cli(&g_h, false, ARGS("runs", "forge"));
    expect_no_forged_line(&r, "runs: an error's own line break starts no line "
                              "[guard terminal-escaping]");
    proc_result_free(&r);
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "ck-basal") ||
        !require_binary(harness_path("test/tools/fake_worker"), "fake_worker"))
        return harness_finish();
    char root[PATH_MAX];
    if (!harness_real_tmpdir("json-output", root, sizeof root))
        return harness_finish();
    test_home_begin(&g_h, root, "h");
    test_encoder();
    test_exec();
    test_flow_outputs();
    test_codemode();
    test_worker_check();
    test_ops_reply();
    test_serve_log();
    test_manifest_refusal();
    test_console_forge();
    harness_remove_tree(root);
    return harness_finish();
}
