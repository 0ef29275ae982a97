/* net.fetch end to end through the real ck-basal and worker (src/host/net_fetch.h,
 * docs/flows.md "net.fetch"), against local HTTPS servers (tests/tools/https_server.py)
 * with a CA made for this run (tests/tools/make_test_ca.sh). The test-only setting
 * maps names to addresses (BASAL_TEST_NET_RESOLVE), trusts the test CA and, where a
 * check says so, allows loopback; every other class stays refused.
 *
 *   1. a GET, a HEAD, a binary body (base64), a POST with a header and a body (the
 *      server sees them and the call's Idempotency-Key), joined repeated headers, the
 *      classes in the journal (query, mutation, keyed_mutation);
 *   2. grants: a host or a method not granted, http, credentials in the URL;
 *   3. each refused address class, through a name the test resolver maps to it with
 *      the loopback allowance off (and some with it on), a name with one good and one
 *      private address, and localhost through the system resolver [guard: every
 *      resolved address checked];
 *   4. numeric spellings of an address in the URL (decimal, octal, hex, 127.1,
 *      bracketed IPv6, dotted) refused before any resolution [guard: numeric hosts];
 *   5. redirects: to a granted host (followed), into a private address, to a host not
 *      granted, to http, to a numeric host, more than 5, 303 of a POST becoming GET,
 *      a keyed POST redirected to a host not marked idempotent [guard: each redirect
 *      checked as a new request];
 *   6. a rebinding resolver (first answer loopback, then private): the request
 *      connects to the checked address, the next one is refused [guard: one
 *      resolution per request, the connection pinned];
 *   7. oversized bodies (Content-Length and chunked) and headers (one long line, too
 *      many lines) [guard: response bounds];
 *   8. a slow body and a server that never completes the TLS handshake against small
 *      test timeouts, and the activation's deadline cutting the 30 s [guard: timeouts];
 *   9. forbidden request headers and header injection, none reaching the server
 *      [guard: forbidden headers];
 *  10. a POST in doubt after a SIGKILL goes to needs_reconcile and is never resent;
 *      a POST to a host marked idempotent is resent with the same Idempotency-Key
 *      [guard: classes on resume];
 *  11. the test setting's names are absent from the release binary, and the release
 *      build ignores them. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/store_view.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 120000

static char g_root[PATH_MAX];
static char g_ca[PATH_MAX + 16], g_cert[PATH_MAX + 16], g_key[PATH_MAX + 16];
static char g_log[PATH_MAX + 16];
static char g_home[PATH_MAX + 32];
static char g_db[PATH_MAX + 48];
static int g_port, g_silent_port;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- servers ---------------------------------------------------------------------- */

static struct test_server g_https, g_silent, g_plain;
static int g_plain_port;

/* Reads "port N\n" from the server's stdout. */
static int read_port(struct proc *p)
{
    char line[64];
    size_t n = 0;
    long long until = now_ms() + 20000;
    while (n + 1 < sizeof line) {
        long long left = until - now_ms();
        struct pollfd pfd = {p->out_fd, POLLIN, 0};
        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
            return -1;
        ssize_t r = read(p->out_fd, line + n, 1);
        if (r <= 0)
            return -1;
        if (line[n] == '\n')
            break;
        n++;
    }
    line[n] = '\0';
    if (strncmp(line, "port ", 5) != 0)
        return -1;
    char *end = NULL;
    long port = strtol(line + 5, &end, 10);
    return end != line + 5 && *end == '\0' && port > 0 && port < 65536 ? (int)port : -1;
}

enum server_kind { SERVER_TLS, SERVER_SILENT, SERVER_PLAIN };

static int server_start(struct test_server *s, enum server_kind kind)
{
    const char *script = harness_path("../tests/tools/https_server.py");
    const char *argv_tls[] = {"/usr/bin/python3", script, "--cert", g_cert, "--key", g_key,
                              "--log", g_log, NULL};
    const char *argv_silent[] = {"/usr/bin/python3", script, "--silent", NULL};
    const char *argv_plain[] = {"/usr/bin/python3", script, "--log", g_log, NULL};
    const char *const *argv = kind == SERVER_TLS ? argv_tls
                              : kind == SERVER_SILENT ? argv_silent : argv_plain;
    if (proc_start(&s->p, argv, NULL) != 0)
        return -1;
    s->running = true;
    return read_port(&s->p);
}

/* Lines of the server's request log containing needle. */
static int log_count(const char *needle)
{
    return (int)file_occurrences(g_log, needle);
}

/* ---- ck-basal ------------------------------------------------------------------------ */

/* The environment of a run: the test CA and the name map, the loopback allowance
 * if asked, and extra (NULL or one more VAR=VALUE). */
struct env {
    char vars[6][2048];
    char *list[7];
};

#define CLASS_MAP                                                                              \
    "c-loopback.basal.test=127.0.0.1;c-loopback6.basal.test=::1;"                              \
    "c-private10.basal.test=10.0.0.1;c-private172.basal.test=172.16.5.4;"                      \
    "c-private192.basal.test=192.168.1.1;c-cgnat.basal.test=100.64.0.1;"                       \
    "c-linklocal.basal.test=169.254.169.254;c-multicast.basal.test=224.0.0.1;"                 \
    "c-unspecified.basal.test=0.0.0.0;c-broadcast.basal.test=255.255.255.255;"                 \
    "c-doc.basal.test=192.0.2.1;c-bench.basal.test=198.18.0.1;c-reserved.basal.test=240.0.0.1;" \
    "c-ula.basal.test=fd00::1;c-linklocal6.basal.test=fe80::1;c-multicast6.basal.test=ff02::1;"  \
    "c-unspecified6.basal.test=::;c-mapped.basal.test=::ffff:10.0.0.1;"                        \
    "c-mappedloop.basal.test=::ffff:127.0.0.1;c-compat.basal.test=::10.0.0.1;"                 \
    "c-nat64.basal.test=64:ff9b::a9fe:a9fe;c-6to4.basal.test=2002:c0a8:101::1;"                \
    "c-doc6.basal.test=2001:db8::1;"

static char *const *env_make(struct env *e, bool loopback, const char *extra)
{
    size_t n = 0;
    sfmt(e->vars[n++], sizeof e->vars[0], "BASAL_TEST_NET_CA=%s", g_ca);
    sfmt(e->vars[n++], sizeof e->vars[0],
         "BASAL_TEST_NET_RESOLVE=pub.basal.test=127.0.0.1;keyed.basal.test=127.0.0.1;"
         "getonly.basal.test=127.0.0.1;priv.basal.test=10.0.0.1;"
         "rebind.basal.test=127.0.0.1>10.0.0.1;mixed.basal.test=127.0.0.1+10.0.0.1;"
         "silent.basal.test=127.0.0.1;" CLASS_MAP);
    if (loopback)
        sfmt(e->vars[n++], sizeof e->vars[0], "BASAL_TEST_NET_ALLOW_LOOPBACK=1");
    if (extra != NULL)
        sfmt(e->vars[n++], sizeof e->vars[0], "%s", extra);
    for (size_t i = 0; i < n; i++)
        e->list[i] = e->vars[i];
    e->list[n] = NULL;
    return e->list;
}

static struct proc_result cli_with(const char *parent, char *const *envp, const char *const *args)
{
    struct cli_opts opts = {.json = true, .envp = envp, .parent = parent, .timeout_ms = TIMEOUT_MS};
    return cli_run(g_home, &opts, args);
}

static struct proc_result cli(char *const *envp, const char *const *args)
{
    return cli_with(harness_test_parent(), envp, args);
}

static char *const NO_ENV[] = {NULL};

static void home_begin(const char *name)
{
    sfmt(g_home, sizeof g_home, "%s/%s", g_root, name);
    sfmt(g_db, sizeof g_db, "%s/basal.db", g_home);
    struct proc_result r = cli(NO_ENV, ARGS("setup"));
    if (!proc_exited_with(&r, 0))
        fail("net.fetch: setup", "%s: %s", proc_describe(&r), r.err);
    proc_result_free(&r);
}

/* The helper every test flow starts with: f(url, opts) returns the result or
 * {code, message}. */
static const char *PRELUDE =
    "const P = trigger.port, S = trigger.silent, T_PLAIN = trigger.plain;\n"
    "const u = (host, path) => `https://${host}:${P}${path}`;\n"
    "async function f(url, opts) {\n"
    "  try { return await net.fetch(url, opts); }\n"
    "  catch (e) { if (e.name !== 'HostError') throw e; return {code: e.data.code, message: e.data.message}; }\n"
    "}\n";

static bool flow_add(const char *id, const char *body, const char *grants, const char *extra)
{
    char dir[PATH_MAX + 64], why[1024];
    static char manifest[16384], script[65536];
    sfmt(dir, sizeof dir, "%s/flow-%s", g_home, id);
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"test\","
         "\"trigger\":{\"manual\":true},\"net\":{\"fetch\":[%s]}%s}", id, grants,
         extra != NULL ? extra : "");
    sfmt(script, sizeof script, "%s%s", PRELUDE, body);
    if (!flow_dir_write(dir, manifest, script))
        return false;
    bool done = cli_install_approve(g_home, NO_ENV, dir, id, 1, why, sizeof why) == FLOW_ADDED;
    return check(done, id, "%s", done ? "installed and approved" : why) && done;
}

static const char *trigger_json(void)
{
    static char t[64];
    sfmt(t, sizeof t, "{\"port\":%d,\"silent\":%d,\"plain\":%d}", g_port, g_silent_port,
         g_plain_port);
    return t;
}

/* run ID; the result (owned), the exit code and whether it was killed. */
struct run_out {
    int exit_code;
    bool killed;
    json_t *json;   /* the whole --json output */
    json_t *result; /* its "result" (borrowed) */
    long long ms;
};

static struct run_out run_flow_with(const char *parent, const char *id, char *const *envp)
{
    long long t0 = now_ms();
    struct proc_result r = cli_with(parent, envp, ARGS("run", id, "--trigger", trigger_json()));
    struct run_out o = {r.exited ? r.exit_code : -1, died_by_signal(&r, SIGKILL), NULL, NULL,
                        now_ms() - t0};
    o.json = cli_output_json(&r);
    o.result = json_object_get(o.json, "result");
    if (o.result == NULL && !o.killed)
        fprintf(stderr, "  run %s: %s\n  out: %.2000s\n  err: %.2000s\n", id, proc_describe(&r),
                r.out, r.err);
    proc_result_free(&r);
    return o;
}

static struct run_out run_flow(const char *id, char *const *envp)
{
    return run_flow_with(harness_test_parent(), id, envp);
}

/* The string field key of result[i] ("" if none). */
static const char *field(const json_t *result, size_t i, const char *key)
{
    const char *s = json_string_value(json_object_get(json_array_get(result, i), key));
    return s != NULL ? s : "";
}

static long long status_of(const json_t *result, size_t i)
{
    return json_integer_value(json_object_get(json_array_get(result, i), "status"));
}

/* Checks that result[i] was rejected with code and a message containing needle. */
static void expect_code(const json_t *result, size_t i, const char *code, const char *needle,
                        const char *name)
{
    const char *got = field(result, i, "code"), *msg = field(result, i, "message");
    check(strcmp(got, code) == 0 && (needle == NULL || strstr(msg, needle) != NULL), name,
          "got code '%s' message '%s' (status %lld), expected %s with '%s'", got, msg,
          status_of(result, i), code, needle != NULL ? needle : "");
}

static void expect_status(const json_t *result, size_t i, long long status, const char *body,
                          const char *name)
{
    const char *got = field(result, i, "body");
    check(status_of(result, i) == status && (body == NULL || strcmp(got, body) == 0), name,
          "status %lld body '%.80s' code '%s' message '%s'", status_of(result, i), got,
          field(result, i, "code"), field(result, i, "message"));
}

static char *sql_text(const char *sql)
{
    return store_text(g_db, sql);
}

/* ---- 1, 2: requests and grants ------------------------------------------------------- */

#define GRANTS_MAIN                                                                            \
    "{\"host\":\"pub.basal.test\",\"methods\":[\"GET\",\"HEAD\",\"POST\"]},"                   \
    "{\"host\":\"keyed.basal.test\",\"methods\":[\"GET\",\"POST\"],\"idempotent\":true},"      \
    "{\"host\":\"getonly.basal.test\"},{\"host\":\"priv.basal.test\"},"                        \
    "{\"host\":\"rebind.basal.test\"},{\"host\":\"mixed.basal.test\"},"                        \
    "{\"host\":\"silent.basal.test\"},{\"host\":\"localhost\"}"

static void test_requests(void)
{
    static const char *BODY =
        "return [\n"
        "  await f(u('pub.basal.test', '/ok')),\n"                                        /* 0 */
        "  await f(u('pub.basal.test', '/ok'), {method: 'HEAD'}),\n"                      /* 1 */
        "  await f(u('pub.basal.test', '/bin')),\n"                                       /* 2 */
        "  await f(u('PUB.basal.test.', '/echo?post'), {method: 'post', body: 'payload',"
        "    headers: {'X-Custom': 'v', 'Accept': 'text/plain'}}),\n"                      /* 3 */
        "  await f(u('pub.basal.test', '/echo?get')),\n"                                  /* 4 */
        "  await f(u('getonly.basal.test', '/echo?notgranted'), {method: 'POST'}),\n"     /* 5 */
        "  await f(u('other.basal.test', '/ok')),\n"                                      /* 6 */
        "  await f(`http://pub.basal.test:${P}/ok`),\n"                                  /* 7 */
        "  await f(`https://u:p@pub.basal.test:${P}/ok`),\n"                             /* 8 */
        "  await f(`ftp://pub.basal.test:${P}/ok`),\n"                                   /* 9 */
        "  await f(u('pub.basal.test', '/ok'), {method: 'TRACE'}),\n"                     /* 10 */
        "  await f(u('pub.basal.test', '/ok'), {body: 'x'}),\n"                           /* 11 */
        "  await f(u('pub.basal.test', '/ok'), {timeout: 1}),\n"                          /* 12 */
        "  await f(u('keyed.basal.test', '/echo?keyed'), {method: 'POST', body: 'k'}),\n" /* 13 */
        "  await f(u('localhost', '/ok')),\n"                                             /* 14 */
        "];\n";
    if (!flow_add("requests", BODY, GRANTS_MAIN, NULL))
        return;
    struct env e;
    struct run_out o = run_flow("requests", env_make(&e, true, NULL));
    const json_t *r = o.result;
    check(o.exit_code == 0 && json_array_size(r) == 15, "requests: the run succeeds",
          "exit %d, %zu results", o.exit_code, json_array_size(r));
    expect_status(r, 0, 200, "hello", "GET over https: status 200 and the body as text");
    const json_t *h0 = json_object_get(json_array_get(r, 0), "headers");
    char *h0_text = json_dumps(h0, JSON_COMPACT);
    check(json_is_false(json_object_get(json_array_get(r, 0), "base64")) &&
              strcmp(json_string_value(json_object_get(h0, "x-multi")) ?: "", "1, 2") == 0 &&
              strncmp(field(r, 0, "url"), "https://pub.basal.test:", 23) == 0,
          "GET: base64 false, repeated headers joined, lowercased names, the final url",
          "headers %s url %s", h0_text != NULL ? h0_text : "-", field(r, 0, "url"));
    free(h0_text);
    expect_status(r, 1, 200, "", "HEAD: status 200, no body");
    check(json_is_true(json_object_get(json_array_get(r, 2), "base64")) &&
              strncmp(field(r, 2, "body"), "AAECAwQFBgcICQoL", 16) == 0 &&
              strlen(field(r, 2, "body")) == 344,
          "a body that is not UTF-8 comes as base64 with base64 true", "%.40s",
          field(r, 2, "body"));
    json_t *echo = json_loads(field(r, 3, "body"), 0, NULL);
    json_t *eh = json_object_get(echo, "headers");
    const char *key = json_string_value(json_object_get(eh, "idempotency-key"));
    char *journal_key =
        sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 3");
    check(status_of(r, 3) == 200 &&
              strcmp(json_string_value(json_object_get(echo, "method")) ?: "", "POST") == 0 &&
              strcmp(json_string_value(json_object_get(echo, "body")) ?: "", "payload") == 0 &&
              strcmp(json_string_value(json_object_get(eh, "x-custom")) ?: "", "v") == 0 &&
              strcmp(json_string_value(json_object_get(eh, "user-agent")) ?: "", "basal") == 0 &&
              json_object_get(eh, "cookie") == NULL && json_object_get(eh, "expect") == NULL &&
              key != NULL && journal_key != NULL && strcmp(key, journal_key) == 0,
          "POST (method any case, host any case with a trailing dot): the server gets the "
          "body, the header and Idempotency-Key = the call's key",
          "echo %s journal key %s", field(r, 3, "body"), journal_key ? journal_key : "-");
    json_decref(echo);
    free(journal_key);
    echo = json_loads(field(r, 4, "body"), 0, NULL);
    check(json_object_get(json_object_get(echo, "headers"), "idempotency-key") == NULL,
          "GET carries no Idempotency-Key", "%s", field(r, 4, "body"));
    json_decref(echo);
    expect_code(r, 5, "denied", "POST to 'getonly.basal.test' is not granted",
                "a method the grant does not list is denied [guard: method grants]");
    check(log_count("notgranted") == 0, "the refused method never reached the server", "%d",
          log_count("notgranted"));
    expect_code(r, 6, "denied", "host 'other.basal.test' is not granted",
                "a host not granted is denied [guard: host grants]");
    expect_code(r, 7, "denied", "https only", "plain http is denied without the test setting");
    expect_code(r, 8, "invalid_arguments", "credentials", "a URL with credentials is refused");
    expect_code(r, 9, "denied", "https only", "another scheme is denied");
    expect_code(r, 10, "invalid_arguments", "method", "an unknown method is refused");
    expect_code(r, 11, "invalid_arguments", "no body", "a GET with a body is refused");
    expect_code(r, 12, "invalid_arguments", "unknown option", "an unknown option is refused");
    expect_status(r, 13, 200, NULL, "a POST to a host marked idempotent succeeds");
    expect_status(r, 14, 200, "hello",
                  "localhost through the system resolver, loopback allowed by the test setting");
    /* The test setting's plain http: allowed only when asked for. */
    static const char *PLAIN = "return [await f(`http://pub.basal.test:${T_PLAIN}/ok?plain`)];\n";
    if (flow_add("plain", PLAIN, GRANTS_MAIN, NULL)) {
        struct run_out p = run_flow("plain", env_make(&e, true, "BASAL_TEST_NET_ALLOW_HTTP=1"));
        expect_status(p.result, 0, 200, "hello", "plain http with the test setting's allowance");
        json_decref(p.json);
        p = run_flow("plain", env_make(&e, true, NULL));
        expect_code(p.result, 0, "denied", "https only", "plain http without the allowance");
        json_decref(p.json);
    }
    char *classes = sql_text("SELECT group_concat(position || ':' || class, ' ') FROM journal "
                             "WHERE run_id = 1 AND position IN (0, 3, 13) ORDER BY position");
    check_str_eq(classes, "0:query 3:mutation 13:keyed_mutation",
                 "journal classes: GET query, POST mutation, POST to an idempotent host "
                 "keyed_mutation");
    free(classes);
    json_decref(o.json);
}

/* ---- 3, 4: address classes and numeric hosts -------------------------------------------- */

static const struct {
    const char *host, *text;
} CLASSES[] = {
    {"c-loopback", "loopback"},          {"c-loopback6", "loopback"},
    {"c-private10", "private"},          {"c-private172", "private"},
    {"c-private192", "private"},         {"c-cgnat", "CGNAT"},
    {"c-linklocal", "link-local"},       {"c-multicast", "multicast"},
    {"c-unspecified", "unspecified"},    {"c-broadcast", "broadcast"},
    {"c-doc", "documentation"},          {"c-bench", "benchmarking"},
    {"c-reserved", "reserved"},          {"c-ula", "unique local"},
    {"c-linklocal6", "link-local"},      {"c-multicast6", "multicast"},
    {"c-unspecified6", "unspecified"},   {"c-mapped", "IPv4-mapped"},
    {"c-mappedloop", "IPv4-mapped"},     {"c-compat", "IPv4-compatible"},
    {"c-nat64", "NAT64"},                {"c-6to4", "6to4"},
    {"c-doc6", "documentation"},
};
#define CLASS_COUNT (sizeof CLASSES / sizeof CLASSES[0])

static void test_classes(void)
{
    static char grants[8192], body[8192];
    size_t g = 0, b = 0;
    b += (size_t)snprintf(body + b, sizeof body - b, "return [\n");
    for (size_t i = 0; i < CLASS_COUNT; i++) {
        g += (size_t)snprintf(grants + g, sizeof grants - g, "%s{\"host\":\"%s.basal.test\"}",
                              i > 0 ? "," : "", CLASSES[i].host);
        b += (size_t)snprintf(body + b, sizeof body - b, "  await f(u('%s.basal.test', '/ok')),\n",
                              CLASSES[i].host);
    }
    snprintf(grants + g, sizeof grants - g, ",{\"host\":\"mixed.basal.test\"},"
             "{\"host\":\"localhost\"}");
    snprintf(body + b, sizeof body - b, "  await f(u('mixed.basal.test', '/ok')),\n"
             "  await f(u('localhost', '/ok')),\n];\n");
    if (!flow_add("classes", body, grants, NULL))
        return;
    struct env e;
    int before = log_count("GET /ok");
    struct run_out o = run_flow("classes", env_make(&e, false, NULL));
    const json_t *r = o.result;
    check(o.exit_code == 0 && json_array_size(r) == CLASS_COUNT + 2, "classes: the run succeeds",
          "exit %d, %zu results", o.exit_code, json_array_size(r));
    for (size_t i = 0; i < CLASS_COUNT; i++) {
        char name[160];
        sfmt(name, sizeof name, "a name resolving to a %s address (%s) is denied, loopback "
             "allowance off [guard: address classes]", CLASSES[i].text, CLASSES[i].host);
        expect_code(r, i, "denied", CLASSES[i].text, name);
    }
    expect_code(r, CLASS_COUNT, "denied", "refused",
                "a name with one loopback and one private address is denied "
                "[guard: every address checked]");
    expect_code(r, CLASS_COUNT + 1, "denied", "loopback",
                "localhost through the system resolver is denied (loopback)");
    check(log_count("GET /ok") == before, "no refused address reached the test server", "%d -> %d",
          before, log_count("GET /ok"));
    json_decref(o.json);

    /* The allowance admits loopback only: every other class stays refused. */
    o = run_flow("classes", env_make(&e, true, NULL));
    r = o.result;
    for (size_t i = 0; i < CLASS_COUNT; i++) {
        if (strcmp(CLASSES[i].text, "loopback") == 0 || strcmp(CLASSES[i].host, "c-mappedloop") == 0)
            continue; /* allowed now (mapped loopback too) */
        char name[160];
        sfmt(name, sizeof name, "with the loopback allowance, %s (%s) is still denied",
             CLASSES[i].text, CLASSES[i].host);
        expect_code(r, i, "denied", CLASSES[i].text, name);
    }
    expect_code(r, CLASS_COUNT, "denied", "private",
                "with the loopback allowance, loopback + private is still denied");
    json_decref(o.json);
}

static void test_numeric(void)
{
    static const char *BODY =
        "const hosts = ['127.0.0.1', '2130706433', '017700000001', '0x7f000001', '127.1',"
        " '0x7f.1', '[::1]', '[::ffff:127.0.0.1]', '10.0.0.1', '1.2.3.4'];\n"
        "const out = [];\n"
        "for (const h of hosts) out.push(await f(`https://${h}:${P}/ok`));\n"
        "return out;\n";
    if (!flow_add("numeric", BODY, "{\"host\":\"pub.basal.test\"}", NULL))
        return;
    struct env e;
    int before = log_count("GET /ok");
    struct run_out o = run_flow("numeric", env_make(&e, true, NULL));
    static const char *const SPELLINGS[] = {"dotted", "decimal", "octal", "hex", "short 127.1",
                                            "hex dotted", "bracketed IPv6", "bracketed mapped",
                                            "private dotted", "public dotted"};
    for (size_t i = 0; i < 10; i++) {
        char name[160];
        sfmt(name, sizeof name, "URL host as a %s address is denied as an IP literal, even with "
             "loopback allowed [guard: numeric hosts]", SPELLINGS[i]);
        expect_code(o.result, i, "denied", "IP address literal", name);
    }
    check(log_count("GET /ok") == before, "no numeric URL reached the test server", "%d -> %d",
          before, log_count("GET /ok"));
    json_decref(o.json);

    /* The same spellings as grants: the manifest refuses them at install. */
    static const char *const GRANTS[] = {"127.0.0.1", "2130706433", "017700000001", "0x7f000001",
                                         "127.1", "[::1]"};
    for (size_t i = 0; i < sizeof GRANTS / sizeof GRANTS[0]; i++) {
        char dir[PATH_MAX + 64], path[PATH_MAX + 96], manifest[512], name[160];
        sfmt(dir, sizeof dir, "%s/flow-numeric-grant-%zu", g_home, i);
        mkdir(dir, 0755);
        sfmt(manifest, sizeof manifest,
             "{\"format\":1,\"id\":\"ng%zu\",\"version\":1,\"purpose\":\"t\",\"trigger\":"
             "{\"manual\":true},\"net\":{\"fetch\":[{\"host\":\"%s\"}]}}", i, GRANTS[i]);
        sfmt(path, sizeof path, "%s/manifest.json", dir);
        write_text_file(path, manifest, 0644);
        sfmt(path, sizeof path, "%s/flow.js", dir);
        write_text_file(path, "return 1;", 0644);
        struct proc_result r = cli(NO_ENV, ARGS("flow", "install", dir));
        sfmt(name, sizeof name, "a manifest granting '%s' is refused at install (IP literal)",
             GRANTS[i]);
        check(r.exited && r.exit_code != 0 && strstr(r.err, "IP address literal") != NULL, name,
              "%s: %s", proc_describe(&r), r.err);
        proc_result_free(&r);
    }
}

/* ---- 5, 6: redirects and rebinding --------------------------------------------------------- */

static void test_redirects(void)
{
    static const char *BODY =
        "const r = (to, code) => u('pub.basal.test', `/redirect?code=${code || 302}&to=${encodeURIComponent(to)}`);\n"
        "let chain5 = u('pub.basal.test', '/ok'), chain6;\n"
        "for (let i = 0; i < 5; i++) chain5 = r(chain5);\n"
        "chain6 = r(chain5);\n"
        "return [\n"
        "  await f(r(u('pub.basal.test', '/ok?followed'))),\n"                            /* 0 */
        "  await f(r(u('priv.basal.test', '/ok?private'))),\n"                            /* 1 */
        "  await f(r(u('other.basal.test', '/ok'))),\n"                                   /* 2 */
        "  await f(r(`http://pub.basal.test:${P}/ok`)),\n"                               /* 3 */
        "  await f(r(`https://127.0.0.1:${P}/ok?numeric`)),\n"                           /* 4 */
        "  await f(chain5),\n"                                                            /* 5 */
        "  await f(chain6),\n"                                                            /* 6 */
        "  await f(r(u('pub.basal.test', '/echo?after303'), 303), {method: 'POST', body: 'b'}),\n" /* 7 */
        "  await f(u('keyed.basal.test', `/redirect?code=307&to=${encodeURIComponent(u('pub.basal.test', '/echo?keyed307'))}`),"
        "    {method: 'POST', body: 'k'}),\n"                                             /* 8 */
        "  await f(r(u('rebind.basal.test', '/ok?rebind1'))),\n"                          /* 9 */
        "  await f(u('rebind.basal.test', '/ok?rebind2')),\n"                             /* 10 */
        "];\n";
    if (!flow_add("redirects", BODY, GRANTS_MAIN, NULL))
        return;
    struct env e;
    struct run_out o = run_flow("redirects", env_make(&e, true, NULL));
    const json_t *r = o.result;
    expect_status(r, 0, 200, "hello", "a redirect to a granted host is followed");
    check(strstr(field(r, 0, "url"), "/ok?followed") != NULL, "the result's url is the final one",
          "%s", field(r, 0, "url"));
    expect_code(r, 1, "denied", "10.0.0.1",
                "a redirect into a private address is denied [guard: redirects re-checked]");
    check(strstr(field(r, 1, "message"), "after 1 redirect") != NULL,
          "the message says a redirect led there", "%s", field(r, 1, "message"));
    expect_code(r, 2, "denied", "not granted", "a redirect to a host not granted is denied");
    expect_code(r, 3, "denied", "https only", "a redirect to http is denied");
    expect_code(r, 4, "denied", "IP address literal", "a redirect to a numeric host is denied");
    check(log_count("/ok?numeric") == 0 && log_count("/ok?private") == 0,
          "no refused redirect target reached a server", "%d %d", log_count("/ok?numeric"),
          log_count("/ok?private"));
    expect_status(r, 5, 200, "hello", "5 redirects are followed");
    expect_code(r, 6, "too_many_redirects", "more than 5", "a 6th redirect is refused");
    json_t *echo = json_loads(field(r, 7, "body"), 0, NULL);
    check(strcmp(json_string_value(json_object_get(echo, "method")) ?: "", "GET") == 0 &&
              strcmp(json_string_value(json_object_get(echo, "body")) ?: "", "") == 0,
          "a POST answered 303 continues as a GET without the body", "%s", field(r, 7, "body"));
    json_decref(echo);
    expect_code(r, 8, "denied", "not marked idempotent",
                "a keyed POST redirected (307) to a host not marked idempotent is denied");
    check(log_count("/echo?keyed307") == 0, "the keyed POST was not resent to the other host",
          "%d", log_count("/echo?keyed307"));
    expect_status(r, 9, 200, "hello",
                  "rebinding: a request to a name whose next answer is private connects to the "
                  "address checked [guard: connection pinned]");
    expect_code(r, 10, "denied", "10.0.0.1",
                "rebinding: the next request resolves again and refuses the private answer");
    json_decref(o.json);
}

/* ---- 7, 8, 9: bounds, timeouts, headers ------------------------------------------------------ */

static void test_bounds(void)
{
    static const char *BODY =
        "return [\n"
        "  await f(u('pub.basal.test', '/size/2000'), {maxBytes: 1000}),\n"              /* 0 */
        "  await f(u('pub.basal.test', '/stream/2000'), {maxBytes: 1000}),\n"            /* 1 */
        "  await f(u('pub.basal.test', '/size/1000'), {maxBytes: 1000}),\n"              /* 2 */
        "  await f(u('pub.basal.test', '/stream/1048577')),\n"                           /* 3 */
        "  await f(u('pub.basal.test', '/bighead')),\n"                                  /* 4 */
        "  await f(u('pub.basal.test', '/manyheaders')),\n"                              /* 5 */
        "  await f(u('pub.basal.test', '/ok'), {maxBytes: 0}),\n"                        /* 6 */
        "  await f(u('pub.basal.test', '/ok'), {maxBytes: 8388609}),\n"                  /* 7 */
        "  (await f(u('pub.basal.test', '/stream/200000'))).body.length,\n"              /* 8 */
        "  await f(u('pub.basal.test', '/size/2000'), {method: 'HEAD', maxBytes: 1000}),\n" /* 9 */
        "];\n";
    if (!flow_add("bounds", BODY, GRANTS_MAIN, NULL))
        return;
    struct env e;
    struct run_out o = run_flow("bounds", env_make(&e, true, NULL));
    const json_t *r = o.result;
    expect_code(r, 0, "too_large", "1000 bytes",
                "a body over maxBytes (Content-Length) is too_large [guard: body bound]");
    expect_code(r, 1, "too_large", "1000 bytes",
                "a body over maxBytes (chunked, no length) is too_large [guard: body bound]");
    expect_status(r, 2, 200, NULL, "a body of exactly maxBytes is delivered");
    expect_code(r, 3, "too_large", "1048576", "a body over the default 1 MiB is too_large");
    expect_code(r, 4, "too_large", "headers",
                "a 20000-byte response header is too_large [guard: header bounds]");
    expect_code(r, 5, "too_large", "headers",
                "150 response headers are too_large [guard: header bounds]");
    expect_code(r, 6, "invalid_arguments", "maxBytes", "maxBytes 0 is refused");
    expect_code(r, 7, "invalid_arguments", "maxBytes", "maxBytes over 8 MiB is refused");
    check(json_integer_value(json_array_get(r, 8)) == 200000,
          "a 200000-byte chunked body arrives whole", "%lld",
          json_integer_value(json_array_get(r, 8)));
    expect_status(r, 9, 200, "", "a HEAD announcing more than maxBytes is not too_large (no body)");
    json_decref(o.json);
}

static void test_timeouts(void)
{
    static const char *BODY =
        "return [\n"
        "  await f(u('pub.basal.test', '/slowbody')),\n"
        "  await f(`https://silent.basal.test:${S}/ok`),\n"
        "];\n";
    if (!flow_add("timeouts", BODY, GRANTS_MAIN, NULL))
        return;
    struct env e;
    struct run_out o = run_flow("timeouts", env_make(&e, true, "BASAL_TEST_NET_TIMEOUTS=500,1500"));
    const json_t *r = o.result;
    expect_code(r, 0, "timeout", NULL,
                "a body trickling past the total timeout is a timeout [guard: total timeout]");
    expect_code(r, 1, "timeout", NULL,
                "a server that never completes the TLS handshake is a timeout [guard: connect "
                "timeout]");
    check(o.ms < 15000, "both timeouts end the calls within 5x their bounds", "%lld ms", o.ms);
    json_decref(o.json);

    /* No test timeouts: the 30 s of a call are cut to the activation's deadline. */
    static const char *DEADLINE = "return [await f(u('pub.basal.test', '/slowbody'))];\n";
    if (!flow_add("deadline", DEADLINE, GRANTS_MAIN, ",\"deadline\":\"3s\""))
        return;
    o = run_flow("deadline", env_make(&e, true, NULL));
    check(o.ms < 20000 && o.exit_code != -1,
          "a fetch never outlives the activation's deadline (3 s run deadline, 30 s fetch "
          "bound) [guard: deadline cut]", "%lld ms, exit %d", o.ms, o.exit_code);
    json_decref(o.json);
}

static void test_headers(void)
{
    static const char *BODY =
        "const bad = ['Host', 'cookie', 'Cookie2', 'Authorization', 'Proxy-Authorization',"
        " 'proxy-connection', 'Connection', 'Keep-Alive', 'TE', 'Trailer', 'Transfer-Encoding',"
        " 'Upgrade', 'Idempotency-Key', 'Content-Length', 'Expect'];\n"
        "const out = [];\n"
        "for (const h of bad) out.push(await f(u('pub.basal.test', '/echo?forbidden'), {headers: {[h]: 'x'}}));\n"
        "out.push(await f(u('pub.basal.test', '/echo?forbidden'), {headers: {'X-A': 'a\\r\\nX-Injected: 1'}}));\n"
        "out.push(await f(u('pub.basal.test', '/echo?forbidden'), {headers: {'Bad Name': 'a'}}));\n"
        "out.push(await f(u('pub.basal.test', '/echo?forbidden'), {headers: {'X-A': 1}}));\n"
        "const many = {}; for (let i = 0; i < 65; i++) many['X-' + i] = 'v';\n"
        "out.push(await f(u('pub.basal.test', '/echo?forbidden'), {headers: many}));\n"
        "out.push(await f(u('pub.basal.test', '/echo?allowed'), {headers: {'X-Empty': ''}}));\n"
        "return out;\n";
    if (!flow_add("headers", BODY, GRANTS_MAIN, NULL))
        return;
    struct env e;
    struct run_out o = run_flow("headers", env_make(&e, true, NULL));
    const json_t *r = o.result;
    static const char *const NAMES[] = {"Host", "cookie", "Cookie2", "Authorization",
                                        "Proxy-Authorization", "proxy-connection", "Connection",
                                        "Keep-Alive", "TE", "Trailer", "Transfer-Encoding",
                                        "Upgrade", "Idempotency-Key", "Content-Length", "Expect"};
    for (size_t i = 0; i < 15; i++) {
        char name[160];
        sfmt(name, sizeof name, "a script may not set %s [guard: forbidden headers]", NAMES[i]);
        expect_code(r, i, "denied", "may not set", name);
    }
    expect_code(r, 15, "invalid_arguments", "control characters",
                "a header value with CR LF is refused [guard: header injection]");
    expect_code(r, 16, "invalid_arguments", "token", "a header name that is not a token is refused");
    expect_code(r, 17, "invalid_arguments", "string", "a header value that is not a string is refused");
    expect_code(r, 18, "invalid_arguments", "65 headers", "more than 64 request headers are refused");
    check(log_count("forbidden") == 0, "no refused header reached the server", "%d",
          log_count("forbidden"));
    json_t *echo = json_loads(field(r, 19, "body"), 0, NULL);
    const json_t *v = json_object_get(json_object_get(echo, "headers"), "x-empty");
    check(json_is_string(v) && json_string_length(v) == 0, "a header with an empty value is sent",
          "%s", field(r, 19, "body"));
    json_decref(echo);
    json_decref(o.json);
}

/* ---- 10: crashes ------------------------------------------------------------------------------ */

static void test_crash(const char *home, const char *host, const char *marker, bool keyed)
{
    home_begin(home);
    char body[512], name[200];
    sfmt(body, sizeof body,
         "const r = await net.fetch(u('%s', '/echo?%s'), {method: 'POST', body: 'once'});\n"
         "return r.status;\n", host, marker);
    if (!flow_add("crash", body, GRANTS_MAIN, NULL))
        return;
    struct env e;
    env_make(&e, true, "BASAL_TEST_KILL_AT=after_dispatch:0");
    struct run_out o = run_flow("crash", e.list);
    sfmt(name, sizeof name, "%s POST: the parent died by SIGKILL after the request left", home);
    ok(o.killed, name);
    json_decref(o.json);
    sfmt(name, sizeof name, "%s POST: the server got it once before the crash", home);
    check_int_eq(log_count(marker), 1, name);
    struct env plain;
    struct proc_result rr = cli(env_make(&plain, true, NULL), ARGS("recover"));
    json_t *rec = cli_output_json(&rr);
    proc_result_free(&rr);
    char *state = sql_text("SELECT state FROM runs WHERE id = 1");
    if (!keyed) {
        check_str_eq(state, "needs_reconcile",
                     "unkeyed POST in doubt after SIGKILL: recover puts the run in "
                     "needs_reconcile [guard: unkeyed mutation never resent]");
        check_int_eq(log_count(marker), 1, "unkeyed POST in doubt: never sent again");
    } else {
        check_str_eq(state, "succeeded", "keyed POST in doubt: recover resends it and the run "
                                         "succeeds [guard: keyed mutation resent]");
        char *text = read_text_file(g_log), first[128] = "", second[128] = "";
        int seen = 0;
        for (char *line = text, *next; line != NULL && *line != '\0'; line = next) {
            next = strchr(line, '\n');
            if (next != NULL)
                *next++ = '\0';
            if (strstr(line, marker) == NULL)
                continue;
            const char *k = strstr(line, "idem=");
            snprintf(seen++ == 0 ? first : second, sizeof first, "%s", k != NULL ? k + 5 : "");
        }
        free(text);
        char *jkey =
            sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 0");
        check(seen == 2 && strcmp(first, second) == 0 && jkey != NULL && strcmp(first, jkey) == 0,
              "keyed POST: sent twice, both times with the journal's Idempotency-Key",
              "%d sends, keys %s / %s, journal %s", seen, first, second, jkey ? jkey : "-");
        free(jkey);
    }
    free(state);
    json_decref(rec);
}

/* ---- 11: release -------------------------------------------------------------------------------- */

static bool file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    size_t cap = 64u << 20, len = 0;
    char *buf = malloc(cap);
    if (buf != NULL)
        len = fread(buf, 1, cap, f);
    fclose(f);
    bool found = buf != NULL && memmem(buf, len, needle, strlen(needle)) != NULL;
    free(buf);
    return found;
}

static void test_release(void)
{
    static const char *const NAMES[] = {"BASAL_TEST_NET_ALLOW_LOOPBACK", "BASAL_TEST_NET_ALLOW_HTTP",
                                        "BASAL_TEST_NET_CA", "BASAL_TEST_NET_RESOLVE",
                                        "BASAL_TEST_NET_TIMEOUTS", "BASAL_TEST_GIT_PROGRAM",
                                        "BASAL_TEST_GIT_TIMEOUT_MS"};
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        char name[160];
        sfmt(name, sizeof name, "test setting %s present in the test build (control)", NAMES[i]);
        ok(file_contains(harness_path("test/bin/ck-basal"), NAMES[i]), name);
        sfmt(name, sizeof name, "test setting %s absent from the release build", NAMES[i]);
        ok(!file_contains(harness_release_parent(), NAMES[i]), name);
    }
    /* The release build ignores the setting: the name is not mapped, loopback not
     * allowed, the test CA not trusted. */
    static const char *BODY = "return [await f(u('pub.basal.test', '/ok?release')), await f(u('localhost', '/ok?release'))];\n";
    home_begin("release");
    if (!flow_add("release", BODY, GRANTS_MAIN, NULL))
        return;
    struct env e;
    struct run_out o = run_flow_with(harness_release_parent(), "release", env_make(&e, true, NULL));
    expect_code(o.result, 0, "network_error", "resolve",
                "release build: the name map of the test setting is ignored");
    expect_code(o.result, 1, "denied", "loopback",
                "release build: loopback stays refused whatever the environment says");
    check(log_count("release") == 0, "release build: nothing reached the test server", "%d",
          log_count("release"));
    json_decref(o.json);
}

int main(void)
{
    const char *tmp = harness_tmpdir("net-fetch");
    if (tmp == NULL || !require_binary(harness_test_parent(), "net.fetch: test ck-basal") ||
        !require_binary("/usr/bin/python3", "net.fetch: python3 for the test server") ||
        !require_binary("/usr/bin/openssl", "net.fetch: openssl for the test CA"))
        return harness_finish();
    snprintf(g_root, sizeof g_root, "%s", tmp);
    sfmt(g_ca, sizeof g_ca, "%s/ca.pem", g_root);
    sfmt(g_cert, sizeof g_cert, "%s/server.pem", g_root);
    sfmt(g_key, sizeof g_key, "%s/server.key", g_root);
    sfmt(g_log, sizeof g_log, "%s/requests.log", g_root);
    const char *ca_argv[] = {"/bin/bash", harness_path("../tests/tools/make_test_ca.sh"), g_root,
                             NULL};
    struct proc_result ca = proc_run(ca_argv, NULL, 0, 60000);
    bool made = check(proc_exited_with(&ca, 0), "a test CA and server certificate are made",
                      "%s: %s", proc_describe(&ca), ca.err);
    proc_result_free(&ca);
    if (!made)
        return harness_finish();
    g_port = server_start(&g_https, SERVER_TLS);
    g_silent_port = server_start(&g_silent, SERVER_SILENT);
    g_plain_port = server_start(&g_plain, SERVER_PLAIN);
    if (!check(g_port > 0 && g_silent_port > 0 && g_plain_port > 0,
               "the test servers listen on loopback", "%d %d %d", g_port, g_silent_port,
               g_plain_port)) {
        test_server_stop(&g_https);
        test_server_stop(&g_silent);
        test_server_stop(&g_plain);
        return harness_finish();
    }
    home_begin("main");
    test_requests();
    test_classes();
    test_numeric();
    test_redirects();
    test_bounds();
    test_timeouts();
    test_headers();
    test_crash("crash-unkeyed", "pub.basal.test", "postplain", false);
    test_crash("crash-keyed", "keyed.basal.test", "postkeyed", true);
    test_release();
    test_server_stop(&g_https);
    test_server_stop(&g_silent);
    test_server_stop(&g_plain);
    harness_remove_tree(g_root);
    return harness_finish();
}
