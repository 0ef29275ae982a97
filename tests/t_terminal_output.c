/* What ck-basal prints for people, through the real binaries (docs/operations.md,
 * "Commands"; src/cli/term_text.h).
 *
 *   1. Forgery attempts: a script's console lines, result and error, a flow run's
 *      result and error, a journal's kind, args and values, and a lying worker's
 *      Welcome and log carry ESC sequences (erase line ESC[2K, carriage return, set
 *      title ESC]0;...BEL), DEL, the C1 CSI U+009B, NEL U+0085 and direction controls
 *      (U+202E, U+2066, U+200E). The human output of exec, run, runs, journal and
 *      worker-check holds none of them raw (only line breaks where lines are meant:
 *      console and the worker's log) and shows each escaped; the --json output of the
 *      same command carries the exact text (control) [guard terminal-escaping].
 *   2. Console output past 64 KiB ends with a visible truncation marker (human) and
 *      console_truncated (--json); a short console has neither (control) [guard
 *      console-truncation-shown].
 *   0. The escaper itself (cli/term_text.h), piece by piece: every class it escapes,
 *      what it keeps, and a cut that never splits an escape or a character.
 *   3. Exit statuses: `runs` of a flow that is not installed is a one-line error,
 *      exit 1 (an installed flow without runs: "no runs", exit 0); a --trigger or
 *      --observed that is not JSON, not UTF-8 or too long is a usage error, exit 2,
 *      storing nothing [guard exit-status-usage]. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/store_view.h"

#include "cli/term_text.h"
#include "proto/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* The UTF-8 of the direction controls the forgeries use; clang-tidy rightly flags such
 * characters in a literal, here they are the point. */
#define RLO "\xe2\x80\xae" /* U+202E */ // NOLINT(misc-misleading-bidirectional)
#define LRI "\xe2\x81\xa6" /* U+2066 */ // NOLINT(misc-misleading-bidirectional)
#define LRM "\xe2\x80\x8e" /* U+200E */ // NOLINT(misc-misleading-bidirectional)
#define LRE "\xe2\x80\xaa" /* U+202A */ // NOLINT(misc-misleading-bidirectional)
#define PDI "\xe2\x81\xa9" /* U+2069 */ // NOLINT(misc-misleading-bidirectional)
#define RLM "\xe2\x80\x8f" /* U+200F */ // NOLINT(misc-misleading-bidirectional)
#define ALM "\xd8\x9c"     /* U+061C */ // NOLINT(misc-misleading-bidirectional)

static char g_dir[PATH_MAX / 2];
static char g_home[PATH_MAX];


/* ck-basal [--json] [--home g_home] args..., with BASAL_TEST_WORKER=worker if set. */
static struct proc_result cli_with(bool json, const char *worker, const char *const *args)
{
    char entry[PATH_MAX + 32];
    sfmt(entry, sizeof entry, "BASAL_TEST_WORKER=%s", worker != NULL ? worker : "");
    char *envp[] = {worker != NULL ? entry : NULL, NULL};
    struct cli_opts opts = {.json = json, .envp = envp};
    return cli_run(g_home, &opts, args);
}

static struct proc_result cli(bool json, const char *const *args)
{
    return cli_with(json, NULL, args);
}

/* ---- what may reach a terminal ---------------------------------------------------- */

/* The offset of the first character a terminal would act on: a C0 control other than
 * a line break (where lines_ok), DEL, a C1 control, a direction control, a line
 * separator, or a byte that is not UTF-8; -1 if there is none. */
static long raw_control_at(const char *text, size_t len, bool lines_ok)
{
    const unsigned char *s = (const unsigned char *)text;
    if (!utf8_valid(s, len))
        return 0; /* somewhere: the whole is not UTF-8 */
    for (size_t i = 0; i < len; i++) {
        unsigned char b = s[i];
        if ((b < 0x20 && !(b == '\n' && lines_ok)) || b == 0x7f)
            return (long)i;
        if (b == 0xc2 && i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f)
            return (long)i; /* U+0080..U+009F */
        if (b == 0xd8 && i + 1 < len && s[i + 1] == 0x9c)
            return (long)i; /* U+061C */
        if (b == 0xe2 && i + 2 < len && s[i + 1] == 0x80 &&
            (s[i + 2] == 0x8e || s[i + 2] == 0x8f || (s[i + 2] >= 0xa8 && s[i + 2] <= 0xae)))
            return (long)i; /* U+200E, U+200F, U+2028..U+202E */
        if (b == 0xe2 && i + 2 < len && s[i + 1] == 0x81 && s[i + 2] >= 0xa6 && s[i + 2] <= 0xa9)
            return (long)i; /* U+2066..U+2069 */
    }
    return -1;
}

/* Human output of one command: nothing raw on stdout (lines only between lines) or
 * stderr, and every wanted escaped form present in out or err. */
static void expect_escaped(const struct proc_result *r, bool err_lines_ok,
                           const char *const *want_out, const char *const *want_err,
                           const char *name)
{
    long at_out = raw_control_at(r->out, r->out_len, true);
    long at_err = raw_control_at(r->err, r->err_len, err_lines_ok);
    const char *missing = NULL;
    for (size_t i = 0; want_out != NULL && want_out[i] != NULL && missing == NULL; i++)
        if (strstr(r->out, want_out[i]) == NULL)
            missing = want_out[i];
    for (size_t i = 0; want_err != NULL && want_err[i] != NULL && missing == NULL; i++)
        if (strstr(r->err, want_err[i]) == NULL)
            missing = want_err[i];
    check(r->started && !r->timed_out && at_out < 0 && at_err < 0 && missing == NULL, name,
          "%s; raw control at stdout+%ld stderr+%ld; missing \"%s\"; stdout \"%.300s\" "
          "stderr \"%.300s\"",
          proc_describe(r), at_out, at_err, missing != NULL ? missing : "", r->out, r->err);
}

/* ---- 0. the escaper ------------------------------------------------------------------ */

static void expect_term(const char *in, size_t len, unsigned flags, const char *want,
                        const char *name)
{
    char out[256];
    size_t used = term_escape(out, sizeof out, in, len, flags);
    check(used == len && strcmp(out, want) == 0, name, "got \"%s\" (%zu of %zu bytes), want \"%s\"",
          out, used, len, want);
}

#define TERM(in, flags, want, name) expect_term((in), sizeof(in) - 1, (flags), (want), (name))

static void test_escaper(void)
{
    TERM("a\x1b[2K\rb\tc\x07\x7f\x00" "d", 0, "a\\u001b[2K\\rb\\tc\\u0007\\u007f\\u0000d",
         "escaper: C0 controls, DEL and NUL escaped [guard terminal-escaping]");
    TERM("one\ntwo", 0, "one\\ntwo", "escaper: a line break escaped by default");
    TERM("one\ntwo\r", TERM_KEEP_NEWLINES, "one\ntwo\\r",
         "escaper: TERM_KEEP_NEWLINES keeps line breaks only");
    TERM("\xc2\x80\xc2\x9b\xc2\x9f\xc2\xa0", 0, "\\u0080\\u009b\\u009f\xc2\xa0",
         "escaper: C1 controls escaped, U+00A0 kept [guard terminal-escaping]");
    TERM(LRE RLO LRI PDI LRM RLM ALM "\xe2\x80\xa8\xe2\x80\xa9",
         0, "\\u202a\\u202e\\u2066\\u2069\\u200e\\u200f\\u061c\\u2028\\u2029",
         "escaper: direction controls and line separators escaped [guard terminal-escaping]");
    TERM("\x9b\xe2\x80\xc3(", 0, "\\x9b\\xe2\\x80\\xc3(",
         "escaper: bytes that are not UTF-8 escaped one by one [guard terminal-escaping]");
    TERM("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \\x1b \xe2\x80\x8b", 0,
         "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \\x1b \xe2\x80\x8b",
         "escaper: other UTF-8, a backslash and text that looks escaped are kept (control)");
    char small[8]; /* "ab" and the NUL fit; "ab\\u001b" would need 9 */
    size_t used = term_escape(small, sizeof small, "ab\x1b" "cd", 5, 0);
    check(used == 2 && strcmp(small, "ab") == 0,
          "escaper: a cut never splits an escape (the whole \\u001b or nothing)",
          "consumed %zu, got \"%s\"", used, small);
    char shown[12];
    term_show(shown, sizeof shown, "abcdef" RLO "g", 0); // NOLINT(misc-misleading-bidirectional)
    check(strcmp(shown, "abcdef...") == 0, "escaper: term_show marks a cut with ...",
          "got \"%s\"", shown);
}

/* ---- 1a. exec: console, result, error ------------------------------------------------ */

/* Console lines, a result with C1 and direction controls (JSON escapes C0 itself). */
static const char *CONSOLE_SCRIPT =
    "console.log('\\x1b[2K\\rforged ok line');\n"
    "console.log('\\x1b]0;pwned title\\x07after');\n"
    "console.error('\\u009b31mred\\u202eevil \\x7f del');\n"
    "console.log('two\\nlines');\n"
    "return '\\u009b2K\\u202eresult\\u2066\\u200e';\n";

static const char CONSOLE_EXACT[] =
    "log: \x1b[2K\rforged ok line\n"
    "log: \x1b]0;pwned title\x07" "after\n"
    "error: \xc2\x9b" "31mred" RLO "evil \x7f del\n"
    "log: two\nlog| lines\n";
static const char RESULT_EXACT[] = "\xc2\x9b" "2K" RLO "result" LRI LRM; // NOLINT(misc-misleading-bidirectional)

/* A one-line error (the human line shows a detail's first line): cursor up, erase. */
static const char *ERROR_SCRIPT = "throw new Error('\\x1b[1A\\x1b[2Kforged\\u202e\\u0085 \\x7f');\n";
static const char ERROR_EXACT[] = "Error: \x1b[1A\x1b[2Kforged" RLO "\xc2\x85 \x7f"; // NOLINT(misc-misleading-bidirectional)

static void test_exec(void)
{
    const char *console_js = harness_tmp_file("console.js", CONSOLE_SCRIPT);
    const char *error_js = harness_tmp_file("error.js", ERROR_SCRIPT);

    struct proc_result r = cli(false, ARGS("exec", "--profile", "codemode", console_js));
    expect_escaped(&r, true,
                   ARGS("\"\\u009b2K\\u202eresult\\u2066\\u200e\""),
                   ARGS("log: \\u001b[2K\\rforged ok line\n",
                        "log: \\u001b]0;pwned title\\u0007after\n",
                        "error: \\u009b31mred\\u202eevil \\u007f del\n", "log: two\nlog| lines\n"),
                   "exec: console lines and a result with ESC, CR, BEL, DEL, C1 CSI and "
                   "direction controls are printed escaped [guard terminal-escaping]");
    check(proc_exited_with(&r, 0) && strstr(r.err, "truncated") == NULL,
          "exec: a short console shows no truncation marker (control)", "%s",
          proc_describe(&r));
    proc_result_free(&r);

    r = cli(true, ARGS("exec", "--profile", "codemode", console_js));
    json_t *o = cli_output_json(&r);
    const char *console = json_string_value(json_object_get(o, "console"));
    const char *value = json_string_value(json_object_get(o, "value"));
    check(console != NULL && strcmp(console, CONSOLE_EXACT) == 0 && value != NULL &&
              strcmp(value, RESULT_EXACT) == 0 && json_object_get(o, "console_truncated") == NULL,
          "exec --json: console and result carry the exact text (control)", "%s: %.300s",
          proc_describe(&r), r.out);
    json_decref(o);
    proc_result_free(&r);

    r = cli(false, ARGS("exec", error_js));
    expect_escaped(&r, false, ARGS("script error: Error: \\u001b[1A\\u001b[2Kforged\\u202e\\u0085 \\u007f ("),
                   NULL,
                   "exec: a script error's ESC sequences, NEL, DEL and RLO are printed escaped "
                   "[guard terminal-escaping]");
    proc_result_free(&r);
    r = cli(true, ARGS("exec", error_js));
    o = cli_output_json(&r);
    const char *detail = json_string_value(json_object_get(o, "detail"));
    check(detail != NULL && strncmp(detail, ERROR_EXACT, sizeof ERROR_EXACT - 1) == 0,
          "exec --json: the error detail carries the exact text (control)", "%.300s", r.out);
    json_decref(o);
    proc_result_free(&r);
}

/* ---- 2. console truncation ---------------------------------------------------------- */

static void test_console_truncation(void)
{
    /* 2000 lines of 100 bytes: three times the 64 KiB kept. */
    const char *loud = harness_tmp_file(
        "loud.js", "for (let i = 0; i < 2000; i++) console.log('x'.repeat(100));\nreturn 1;\n");
    struct proc_result r = cli(false, ARGS("exec", "--profile", "codemode", loud));
    const char *marker = "[console output truncated: over 65536 bytes]\n";
    size_t mlen = strlen(marker);
    bool last = r.err_len >= mlen && strcmp(r.err + r.err_len - mlen, marker) == 0;
    check(proc_exited_with(&r, 0) && last && r.err_len < (80u << 10),
          "exec: console output past 64 KiB ends with a visible truncation marker "
          "[guard console-truncation-shown]",
          "%s; %zu bytes on stderr ending \"%s\"", proc_describe(&r), r.err_len,
          r.err_len > 60 ? r.err + r.err_len - 60 : r.err);
    proc_result_free(&r);
    r = cli(true, ARGS("exec", "--profile", "codemode", loud));
    json_t *o = cli_output_json(&r);
    check(json_is_true(json_object_get(o, "console_truncated")),
          "exec --json: console_truncated is true when console output was dropped "
          "[guard console-truncation-shown]", "%.200s", r.out);
    json_decref(o);
    proc_result_free(&r);
}

/* ---- 1b. flow runs, runs, journal ------------------------------------------------- */

static const char *FORGE_FLOW =
    "await kv.set('k\\u009b', '\\u202eval\\x1b[2K');\n"
    "const v = await kv.get('k\\u009b');\n"
    "if (trigger.fail) throw new Error('\\x1b[1A\\x1b[2Krun forged\\u202e');\n"
    "return {v, s: '\\u009b\\u200e'};\n";

static bool install_flow(const char *id, const char *script)
{
    char dir[PATH_MAX], manifest[512], name[120], why[1024];
    sfmt(dir, sizeof dir, "%s/flow-%s", g_dir, id);
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"test\","
         "\"trigger\":{\"manual\":true}}", id);
    bool written = mkdir(dir, 0755) == 0 && flow_dir_write(dir, manifest, script);
    enum flow_added step = written ? cli_install_approve(g_home, HARNESS_EMPTY_ENV, dir, id, 1,
                                                        why, sizeof why)
                                   : FLOW_INSTALL_FAILED;
    if (!written)
        sfmt(why, sizeof why, "cannot write %s", dir);
    sfmt(name, sizeof name, "setup: install flow %s", id);
    if (!check(step != FLOW_INSTALL_FAILED, name, "%s", why))
        return false;
    sfmt(name, sizeof name, "setup: approve flow %s", id);
    return check(step == FLOW_ADDED, name, "%s", why);
}

static bool sql_exec(const char *sql)
{
    char db[PATH_MAX + 16];
    sfmt(db, sizeof db, "%s/basal.db", g_home);
    return store_exec(db, sql);
}

static long long sql_number(const char *sql)
{
    char db[PATH_MAX + 16];
    sfmt(db, sizeof db, "%s/basal.db", g_home);
    return store_number(db, sql);
}

static void test_flow_output(void)
{
    if (!install_flow("forge", FORGE_FLOW))
        return;
    /* Run 1 succeeds with a forged result. */
    struct proc_result r = cli(false, ARGS("run", "forge"));
    expect_escaped(&r, false,
                   ARGS("run 1 of flow forge: succeeded\n",
                        "result: {\"v\":\"\\u202eval\\u001b[2K\",\"s\":\"\\u009b\\u200e\"}\n"),
                   NULL,
                   "run: a result with RLO, C1 CSI and LRM is printed escaped "
                   "[guard terminal-escaping]");
    check(proc_exited_with(&r, 0), "run: the forged result's run succeeded", "%s",
          proc_describe(&r));
    proc_result_free(&r);
    /* Run 2 fails with a forged error. */
    r = cli(false, ARGS("run", "forge", "--trigger", "{\"fail\":true}"));
    expect_escaped(&r, false,
                   ARGS("run 2 of flow forge: failed\n",
                        "error: script error: Error: \\u001b[1A\\u001b[2Krun forged\\u202e ("),
                   NULL, "run: a script error with ESC sequences and RLO is printed escaped "
                         "[guard terminal-escaping]");
    proc_result_free(&r);
    r = cli(true, ARGS("run", "forge", "--trigger", "{\"fail\":true}"));
    json_t *o = cli_output_json(&r);
    const char *error = json_string_value(json_object_get(o, "error"));
    check(error != NULL && strstr(error, "Error: \x1b[1A\x1b[2Krun forged" RLO) != NULL, // NOLINT(misc-misleading-bidirectional)
          "run --json: the error carries the exact text (control)", "%.300s", r.out);
    json_decref(o);
    proc_result_free(&r);

    r = cli(false, ARGS("runs", "forge"));
    expect_escaped(&r, false, ARGS("script error: Error: \\u001b[1A\\u001b[2Krun forged\\u202e"), NULL,
                   "runs: the error column is printed escaped [guard terminal-escaping]");
    proc_result_free(&r);

    /* A kind as a hostile worker could have had journaled. */
    check(sql_exec("UPDATE journal SET kind = 'kv.set' || char(27) || '[2K' || char(13) ||"
                     " char(8238) WHERE run_id = 1 AND position = 0"),
          "setup: a forged kind in the journal", "sqlite failed");
    r = cli(false, ARGS("journal", "1"));
    expect_escaped(&r, false,
                   ARGS("kv.set\\u001b[2K\\r\\u202e", "\"\\u202eval\\u001b[2K\"",
                        "args [\"k\\u009b\",\"\\u202eval\\u001b[2K\"]"),
                   NULL,
                   "journal: a kind, args and values with ESC, CR, C1 and RLO are printed "
                   "escaped [guard terminal-escaping]");
    proc_result_free(&r);
    r = cli(true, ARGS("journal", "1"));
    o = cli_output_json(&r);
    json_t *first = json_array_get(json_object_get(o, "calls"), 0);
    const char *kind = json_string_value(json_object_get(first, "kind"));
    const char *key = json_string_value(json_array_get(json_object_get(first, "args"), 0));
    check(kind != NULL && strcmp(kind, "kv.set\x1b[2K\r" RLO) == 0 && key != NULL && // NOLINT(misc-misleading-bidirectional)
              strcmp(key, "k\xc2\x9b") == 0,
          "journal --json: the kind and args carry the exact text (control)", "%.300s", r.out);
    json_decref(o);
    proc_result_free(&r);
}

/* ---- 1c. a lying worker ------------------------------------------------------------- */

static void test_lying_worker(void)
{
    /* The parent starts its worker with an empty environment: the wrapper names all by
     * absolute path, and passes the forged texts as raw bytes in single quotes. */
    char wrapper[PATH_MAX + 16], script[2 * PATH_MAX];
    sfmt(wrapper, sizeof wrapper, "%s/liar.sh", g_dir);
    sfmt(script, sizeof script,
         "#!/bin/sh\nexec %s '--os=\x1b[2K\rlinux" RLO "' "
         "'--say=all is well\x1b]0;title\x07\nsecond line\xc2\x9b" "31m\n' \"$@\"\n",
         harness_path("test/tools/fake_worker"));
    if (!check(write_text_file(wrapper, script, 0700), "setup: lying worker wrapper", "%s",
               strerror(errno)))
        return;
    struct proc_result r = cli_with(false, wrapper, ARGS("worker-check"));
    expect_escaped(&r, false,
                   ARGS("Welcome reports os '\\u001b[2K\\rlinux\\u202e'",
                        "all is well\\u001b]0;title\\u0007\n            | second line\\u009b31m\n"),
                   NULL,
                   "worker-check: a lying worker's Welcome text and log are printed escaped, "
                   "its log keeping its lines [guard terminal-escaping]");
    check(proc_exited_with(&r, 1), "worker-check: the lying worker is refused", "%s",
          proc_describe(&r));
    check(strstr(r.out, "\nsecond line") == NULL,
          "worker-check: no line of the worker's log begins a line of the output "
          "[guard console-lines]", "stdout \"%.400s\"", r.out);
    proc_result_free(&r);
    r = cli_with(true, wrapper, ARGS("worker-check"));
    json_t *o = cli_output_json(&r);
    const char *reason = json_string_value(json_object_get(o, "reason"));
    check(reason != NULL && strstr(reason, "'\x1b[2K\rlinux" RLO "'") != NULL, // NOLINT(misc-misleading-bidirectional)
          "worker-check --json: the reason carries the exact text (control)", "%.300s", r.out);
    json_decref(o);
    proc_result_free(&r);
}

/* ---- 3. exit statuses ------------------------------------------------------------- */

static void expect_exit(const char *const *args, int code, const char *needle, const char *what)
{
    long long runs_before = sql_number("SELECT count(*) FROM runs");
    struct proc_result r = cli(false, args);
    const char *nl = strchr(r.err, '\n');
    char name[256];
    sfmt(name, sizeof name, "exit status: %s exits %d with one line [guard exit-status-usage]",
         what, code);
    check(proc_exited_with(&r, code) && r.out_len == 0 && nl != NULL && nl[1] == '\0' &&
              (needle == NULL || strstr(r.err, needle) != NULL),
          name, "%s; stderr \"%s\"", proc_describe(&r), r.err);
    proc_result_free(&r);
    sfmt(name, sizeof name, "exit status: %s stores nothing", what);
    check_int_eq(sql_number("SELECT count(*) FROM runs"), runs_before, name);
}

static void test_exit_statuses(void)
{
    expect_exit(ARGS("runs", "nosuch"), 1, "ck-basal runs: unknown flow 'nosuch'\n",
                "runs of a flow that is not installed");
    if (!install_flow("quiet", "return 1;\n"))
        return;
    struct proc_result r = cli(false, ARGS("runs", "quiet"));
    check(proc_exited_with(&r, 0) && strcmp(r.out, "no runs\n") == 0,
          "exit status: runs of an installed flow without runs says no runs, exit 0 (control)",
          "%s; stdout \"%s\"", proc_describe(&r), r.out);
    proc_result_free(&r);

    char big[70000];
    memset(big, ' ', sizeof big - 3);
    big[0] = '"';
    big[sizeof big - 3] = '"';
    big[sizeof big - 2] = '\0';
    expect_exit(ARGS("run", "quiet", "--trigger", "{\"a\":"), 2, "--trigger is not JSON",
                "run --trigger that is not JSON");
    expect_exit(ARGS("run", "quiet", "--trigger", "{\"a\":1,\"a\":2}"), 2, "--trigger",
                "run --trigger with a duplicate key");
    expect_exit(ARGS("run", "quiet", "--trigger", big), 2, "--trigger", "an oversized --trigger");
    expect_exit(ARGS("run", "quiet", "--trigger", "\"\xff\xfe\""), 2, "not valid UTF-8",
                "a --trigger of invalid UTF-8");
    expect_exit(ARGS("flow", "reconcile", "1", "0", "--observed", "{"), 2, "--observed",
                "flow reconcile --observed that is not JSON");
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "ck-basal") ||
        !require_binary(harness_path("test/tools/fake_worker"), "fake_worker"))
        return harness_finish();
    if (!harness_real_tmpdir("terminal-output", g_dir, sizeof g_dir))
        return harness_finish();
    sfmt(g_home, sizeof g_home, "%s/home", g_dir);
    struct proc_result r = cli(false, ARGS("setup"));
    bool ok = check(proc_exited_with(&r, 0), "setup: data home", "%s", proc_describe(&r));
    proc_result_free(&r);
    test_escaper();
    if (ok) {
        test_exec();
        test_console_truncation();
        test_flow_output();
        test_lying_worker();
        test_exit_statuses();
    }
    harness_remove_tree(g_dir);
    return harness_finish();
}
