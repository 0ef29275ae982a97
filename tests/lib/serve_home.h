/* Scaffolding for tests that drive ck-basal as an operator does: a scratch data home,
 * the CLI in it, flows installed and approved, a `serve` process read through its log,
 * and raw requests on its ops socket. */
#ifndef BASAL_TESTS_SERVE_HOME_H
#define BASAL_TESTS_SERVE_HOME_H

#include "cli_home.h"
#include "harness.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define SERVE_HOME_TIMEOUT_MS CLI_TIMEOUT_MS

struct test_home {
    char dir[PATH_MAX];
    char home[PATH_MAX];
    char db[PATH_MAX + 16];
    char sock[PATH_MAX + 16];
};

/* Makes root/name and fills h's paths (root/name/home, its store and ops socket) without
 * making the home: for a test that sets it up its own way (cli_home_setup). */
void test_home_paths(struct test_home *h, const char *root, const char *name);
/* test_home_paths, then `ck-basal setup` in the home (fails the test otherwise). */
void test_home_begin(struct test_home *h, const char *root, const char *name);

/* ck-basal [--json] --home H args... (the test build, the test's environment). */
struct proc_result test_home_cli(const struct test_home *h, bool json, const char *const *args);

/* Writes a flow (id, version, trigger JSON such as {"manual":true}, script) into a
 * directory, installs and approves it. trigger_json is spliced in after "trigger": and
 * may go on with more manifest members (`{"manual":true},"ops":[...]`). False (with a
 * line on stderr) on failure. */
bool test_home_flow(const struct test_home *h, const char *id, int version,
                    const char *trigger_json, const char *script);

/* The "hold" module's entry in a modules.json: test_module's hold_query, a call that
 * holds (120 s at most) until the test closes a FIFO. printf arguments: the program, its
 * log. */
#define TEST_HOLD_MODULE_JSON                                                            \
    "\"hold\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"                      \
    " \"timeout_ms\": 120000, \"ops\": {\"hold_query\": {\"kind\": \"query\"}}}"

/* h's modules.json with the hold module alone (its log h->dir/effects.log). */
bool test_home_hold_catalog(const struct test_home *h);

/* Flow id (version 1) whose run awaits the hold module's hold_query on a new FIFO
 * h->dir/ID.fifo and then returns ret (a JS expression); trigger_json as test_home_flow's,
 * the hold op granted after it. Returns the FIFO's read end (non-blocking): the held call
 * writes its "hold PID GRAND" line there (hold_line_read) and returns once the test closes
 * it. -1 on failure (a line on stderr). */
int test_home_held_flow(const struct test_home *h, const char *id, const char *trigger_json,
                        const char *ret);

/* A number from the store (read-only connection), or -1. */
long long test_home_sql(const struct test_home *h, const char *sql);

struct test_serve {
    struct proc p;
    char log[65536]; /* its stderr so far (the tail, past 64 KiB) */
    size_t len;
    bool up;
};

/* Starts `serve` with extra options and extra environment entries ("K=V", NULL-ended;
 * may be NULL), and waits for its event=ready line. */
bool test_serve_start(struct test_serve *s, const struct test_home *h, const char *const *extra,
                      const char *const *env);
/* Reads serve's stderr until needle shows; false on EOF or timeout_ms. */
bool test_serve_wait_log(struct test_serve *s, const char *needle, int timeout_ms);
/* Reads serve's stderr until needle shows count times in all; false on EOF or timeout_ms. */
bool test_serve_wait_log_count(struct test_serve *s, const char *needle, int count,
                               int timeout_ms);
/* How many times needle shows in the log read so far. */
int test_serve_log_count(const struct test_serve *s, const char *needle);
/* Waits for serve's exit: its exit status, 128 + the signal that killed it, or -1 (the
 * timeout). */
int test_serve_end(struct test_serve *s, int timeout_ms);
/* SIGTERM, then test_serve_end. */
int test_serve_stop(struct test_serve *s);

/* test.clock {"ms": ms} on h's serve (started with BASAL_TEST_CLOCK_MS): moves the test
 * clock; serve answers after a whole look of its scheduler. True if it said ok (else
 * the reply goes to stderr). */
bool test_serve_clock(const struct test_home *h, long long ms);

/* One request on h's ops socket; the reply line (malloc'd) or NULL. */
char *test_ops_request(const struct test_home *h, const char *request_json);

/* The test module's effect log (test/tools/test_module writes "OP KEY {...,"n":N,...}"
 * per effect): the next effect line at *cursor, a NUL-terminated text the caller owns
 * (lines are cut in place), with its op, key and n; *cursor moves past it. Lines
 * without the three are skipped. False at the end. */
bool test_effect_log_next(char **cursor, char op[32], char key[96], int *n);

#endif
