/* Loopback HTTP endpoint modules (src/host/module_endpoint.c, through
 * ops_module_invoke), in process, against tests/tools/module_server.py, a loopback
 * server this test starts (one on TCP, one on a Unix socket) that logs every request
 * before it answers:
 *   1. the catalog takes 127.0.0.0/8, [::1] and unix: endpoints and refuses, naming
 *      the field, a name (no DNS), a non-loopback address, https, a missing port,
 *      user information, a relative socket path, program and endpoint together or
 *      neither, args with an endpoint [guard: loopback literal only];
 *   2. a call POSTs the same request object as a program module gets, as JSON, with
 *      the Idempotency-Key header; {"result"} fulfils, {"error"} rejects with the
 *      module's code; a Unix socket endpoint works alike;
 *   3. refusals: a 302 is not followed [guard: no redirects], a non-2xx status
 *      [guard: 2xx only], a reply over max_reply_bytes [guard: reply bound], no reply
 *      within timeout_ms [guard: time bound], a body that is not JSON, nothing
 *      listening; with http_proxy pointing at the server, a call still goes straight
 *      to its endpoint [guard: no proxy]. */
#include "host/host.h"
#include "host/module_endpoint.h"
#include "host/ops_module.h"
#include "base/clock.h"
#include "lib/cli_home.h"
#include "lib/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char home[PATH_MAX];
static char log_path[PATH_MAX];
static char sock_path[PATH_MAX];
static int port;

/* The server's first line: "port N" or "unix PATH". */
static bool read_ready(struct test_server *s, char *line, size_t cap)
{
    return fd_read_line(s->p.out_fd, line, cap, 10000);
}

static bool server_start(struct test_server *s, const char *unix_path)
{
    const char *script = harness_path("../tests/tools/module_server.py");
    const char *argv_tcp[] = {"/usr/bin/python3", script, "--log", log_path, NULL};
    const char *argv_unix[] = {"/usr/bin/python3", script, "--log", log_path, "--unix",
                               unix_path, NULL};
    if (proc_start(&s->p, unix_path != NULL ? argv_unix : argv_tcp, NULL) != 0)
        return false;
    s->running = true;
    char line[PATH_MAX + 16];
    if (!read_ready(s, line, sizeof line))
        return false;
    if (unix_path != NULL)
        return strncmp(line, "unix ", 5) == 0;
    if (strncmp(line, "port ", 5) != 0)
        return false;
    char *end = NULL;
    long parsed = strtol(line + 5, &end, 10);
    port = (int)parsed;
    return end != line + 5 && parsed > 0 && parsed < 65536;
}

static int log_count(const char *needle)
{
    return (int)file_occurrences(log_path, needle);
}

static bool write_catalog(const char *text)
{
    char path[PATH_MAX + 32];
    sfmt(path, sizeof path, "%s/%s", home, OPS_CATALOG_FILE);
    (void)unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    size_t len = strlen(text);
    bool ok = write(fd, text, len) == (ssize_t)len;
    close(fd);
    return ok;
}

/* A catalog of one module "e" with the module's fields (without "ops"). */
static void one_module(char *buf, size_t cap, const char *fields)
{
    sfmt(buf, cap, "{\"modules\": {\"e\": {%s, \"ops\": {\"go\": {\"kind\": \"mutate\"}}}}}",
         fields);
}

static void refuse(const char *fields, const char *want, const char *name)
{
    char buf[4096], err[512] = "";
    one_module(buf, sizeof buf, fields);
    struct ops_catalog c;
    int rc = write_catalog(buf) ? ops_catalog_load(home, &c, err, sizeof err) : -2;
    check(rc == -1 && strstr(err, want) != NULL && strchr(err, '\n') == NULL, name,
          "rc %d, error \"%s\", want \"%s\"", rc, err, want);
    if (rc == 0)
        ops_catalog_free(&c);
}

static void accept_endpoint(const char *endpoint, const char *name)
{
    char buf[4096], fields[2048], err[512] = "";
    sfmt(fields, sizeof fields, "\"endpoint\": \"%s\"", endpoint);
    one_module(buf, sizeof buf, fields);
    struct ops_catalog c;
    const struct ops_module *m = NULL;
    int rc = write_catalog(buf) ? ops_catalog_load(home, &c, err, sizeof err) : -2;
    bool found = rc == 0 && ops_catalog_find(&c, "e", "go", &m) != NULL && m != NULL &&
                 m->program == NULL && m->endpoint != NULL && strcmp(m->endpoint, endpoint) == 0;
    check(found, name, "rc %d, %s", rc, err);
    if (rc == 0)
        ops_catalog_free(&c);
}

static void test_catalog(void)
{
    accept_endpoint("http://127.0.0.1:8080/ops", "catalog: http://127.0.0.1:PORT/PATH loads");
    accept_endpoint("http://127.7.8.9:1/a/b?c=d", "catalog: any address of 127.0.0.0/8 loads");
    accept_endpoint("http://[::1]:65535/", "catalog: http://[::1]:PORT/ loads");
    accept_endpoint("unix:/run/basal/tickets.sock", "catalog: unix:/PATH loads");
    static const char *const want_loopback = "modules.e.endpoint: the host must be a loopback";
    refuse("\"endpoint\": \"http://localhost:8080/\"", want_loopback,
           "catalog: a name (localhost) is refused, never resolved [guard: loopback literal only]");
    refuse("\"endpoint\": \"http://10.0.0.1:8080/\"", want_loopback,
           "catalog: a private address is refused [guard: loopback literal only]");
    refuse("\"endpoint\": \"http://128.0.0.1:8080/\"", want_loopback,
           "catalog: 128.0.0.1 is refused [guard: loopback literal only]");
    refuse("\"endpoint\": \"http://[::2]:8080/\"", want_loopback,
           "catalog: [::2] is refused [guard: loopback literal only]");
    refuse("\"endpoint\": \"http://0x7f.1:8080/\"", want_loopback,
           "catalog: a numeric spelling that is not a dotted quad is refused");
    refuse("\"endpoint\": \"https://127.0.0.1:8443/\"", "modules.e.endpoint: must be http://",
           "catalog: https (or any other scheme) is refused");
    refuse("\"endpoint\": \"http://127.0.0.1/x\"", "must name a loopback address literal and a port",
           "catalog: a missing port is refused");
    refuse("\"endpoint\": \"http://127.0.0.1:0/\"", "the port must be 1..65535",
           "catalog: port 0 is refused");
    refuse("\"endpoint\": \"http://u:p@127.0.0.1:80/\"", "user information is refused",
           "catalog: user information is refused");
    refuse("\"endpoint\": \"http://127.0.0.1:80/a b\"", "the path must be printable ASCII",
           "catalog: a path with a space is refused");
    refuse("\"endpoint\": \"unix:run/x.sock\"", "a Unix socket path must be absolute",
           "catalog: a relative Unix socket path is refused");
    refuse("\"endpoint\": \"http://127.0.0.1:80/\", \"program\": \"/bin/true\"",
           "modules.e: needs exactly one of \"program\" and \"endpoint\"",
           "catalog: program and endpoint together are refused");
    refuse("\"timeout_ms\": 5", "modules.e: needs exactly one of \"program\" and \"endpoint\"",
           "catalog: a module with neither program nor endpoint is refused");
    refuse("\"endpoint\": \"http://127.0.0.1:80/\", \"args\": []",
           "modules.e.args: only a program module takes args",
           "catalog: args with an endpoint are refused");
    refuse("\"endpoint\": 80", "modules.e.endpoint: must be a string",
           "catalog: a non-string endpoint is refused");
}

/* ---- calls ------------------------------------------------------------------------------ */

static char module_name[] = "e";

static struct ops_module endpoint_module(char *endpoint, uint32_t timeout_ms, uint32_t max_reply)
{
    struct ops_module m;
    memset(&m, 0, sizeof m);
    m.name = module_name;
    m.endpoint = endpoint;
    m.timeout_ms = timeout_ms;
    m.max_reply_bytes = max_reply;
    return m;
}

/* Calls path on the TCP server; *code and the value are the settlement's. */
static json_t *call(const char *path, uint32_t timeout_ms, uint32_t max_reply, const char *key,
                    struct host_settlement *out)
{
    char url[256];
    sfmt(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    struct ops_module m = endpoint_module(url, timeout_ms, max_reply);
    out->settlement = 0;
    out->value = NULL;
    if (ops_module_invoke(&m, "go", "{\"n\":7}", key, NULL, out) != 0)
        return NULL;
    return out->value != NULL ? json_loads(out->value, JSON_DECODE_ANY, NULL) : NULL;
}

static void expect_reject(const char *path, uint32_t timeout_ms, uint32_t max_reply,
                          const char *code, const char *want, const char *name)
{
    struct host_settlement out;
    json_t *v = call(path, timeout_ms, max_reply, "k-reject", &out);
    const char *c = json_string_value(json_object_get(v, "code"));
    const char *msg = json_string_value(json_object_get(v, "message"));
    check(out.settlement == PROTO_SETTLEMENT_REJECTED && c != NULL && strcmp(c, code) == 0 &&
              msg != NULL && strstr(msg, want) != NULL && strchr(msg, '\n') == NULL,
          name, "settlement %d, value %s, want %s with \"%s\"", out.settlement,
          out.value != NULL ? out.value : "(null)", code, want);
    json_decref(v);
    host_settlement_free(&out);
}

static void test_calls(void)
{
    struct host_settlement out;
    json_t *v = call("/reply", 5000, 65536, "key-1", &out);
    json_t *result = json_object_get(v, "request");
    const char *key = json_string_value(json_object_get(v, "key"));
    check(out.settlement == PROTO_SETTLEMENT_FULFILLED && result != NULL &&
              strcmp(json_str_of(result, "module"), "e") == 0 &&
              strcmp(json_str_of(result, "op"), "go") == 0 &&
              strcmp(json_str_of(result, "idempotency_key"), "key-1") == 0 &&
              json_integer_value(json_object_get(json_object_get(result, "args"), "n")) == 7 &&
              key != NULL && strcmp(key, "key-1") == 0,
          "call: {\"result\"} fulfils; the request is the program modules' object and the key"
          " is the Idempotency-Key header",
          "settlement %d, value %s", out.settlement, out.value != NULL ? out.value : "(null)");
    json_decref(v);
    host_settlement_free(&out);
    check_int_eq(log_count("POST /reply idem=key-1 ctype=application/json body={\"module\":\"e\""),
                 1, "call: one POST, as application/json, carrying the key");

    v = call("/reply", 5000, 65536, NULL, &out);
    check(out.settlement == PROTO_SETTLEMENT_FULFILLED &&
              json_is_null(json_object_get(v, "key")) &&
              log_count("POST /reply idem=- ") == 1,
          "call: a call without a key sends no Idempotency-Key header", "%s",
          out.value != NULL ? out.value : "(null)");
    json_decref(v);
    host_settlement_free(&out);

    expect_reject("/error", 5000, 65536, "no_such_ticket", "ticket 7 is gone",
                  "call: {\"error\"} rejects with the module's code and message");
    int before = log_count("POST /reply ");
    expect_reject("/redirect", 5000, 65536, HOST_CODE_MODULE_ERROR, "HTTP status 302: a redirect",
                  "call: a 302 is refused [guard: no redirects]");
    check_int_eq(log_count("POST /reply "), before,
                 "call: the redirect's target was never asked [guard: no redirects]");
    check_int_eq(log_count(" /reply ") - log_count("POST /reply "), 0,
                 "call: no GET of the redirect's target either [guard: no redirects]");
    expect_reject("/status/500", 5000, 65536, HOST_CODE_MODULE_ERROR, "HTTP status 500",
                  "call: a 500 with a {\"result\"} body is refused [guard: 2xx only]");
    expect_reject("/status/404", 5000, 65536, HOST_CODE_MODULE_ERROR, "HTTP status 404",
                  "call: a 404 is refused [guard: 2xx only]");
    expect_reject("/big/5000", 5000, 4096, HOST_CODE_TOO_LARGE, "reply larger than 4096 bytes",
                  "call: a reply over max_reply_bytes is too_large [guard: reply bound]");
    v = call("/big/4096", 5000, 4096, "k-fits", &out);
    check(out.settlement == PROTO_SETTLEMENT_FULFILLED && json_string_length(v) == 4096 - 14,
          "call: a reply of exactly max_reply_bytes fulfils (control for the bound)", "%.80s",
          out.value != NULL ? out.value : "(null)");
    json_decref(v);
    host_settlement_free(&out);
    long long t0 = monotonic_ms();
    expect_reject("/slow/5000", 300, 65536, HOST_CODE_TIMEOUT, "no reply within 300 ms",
                  "call: no reply within timeout_ms is timeout [guard: time bound]");
    long long took = monotonic_ms() - t0;
    check(took < 3000, "call: the timeout ends the call near timeout_ms", "took %lld ms", took);
    expect_reject("/notjson", 5000, 65536, HOST_CODE_MODULE_ERROR, "the reply is not JSON",
                  "call: a body that is not JSON is module_error");

    /* guard: no proxy. With http_proxy naming the server, a call to a port where
     * nothing listens would reach the server as a proxy request. */
    char proxy[64];
    sfmt(proxy, sizeof proxy, "http://127.0.0.1:%d", port);
    setenv("http_proxy", proxy, 1);
    setenv("HTTP_PROXY", proxy, 1);
    setenv("ALL_PROXY", proxy, 1);
    char nothing_listens[] = "http://127.0.0.1:1/via-proxy";
    struct ops_module closed = endpoint_module(nothing_listens, 3000, 65536);
    int rc = ops_module_invoke(&closed, "go", "null", "k-proxy", NULL, &out);
    char code[64];
    host_settlement_code(&out, code, sizeof code);
    check(rc == 0 && strcmp(code, HOST_CODE_MODULE_ERROR) == 0 && log_count("via-proxy") == 0,
          "call: http_proxy is ignored; nothing listening is module_error [guard: no proxy]",
          "rc %d, %s, proxy saw it %d times", rc, out.value != NULL ? out.value : "(null)",
          log_count("via-proxy"));
    host_settlement_free(&out);
    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    unsetenv("ALL_PROXY");
}

static void test_unix_socket(void)
{
    struct test_server u = {0};
    if (!check(server_start(&u, sock_path), "unix: the server listens", "%s", sock_path)) {
        test_server_stop(&u);
        return;
    }
    char endpoint[PATH_MAX + 8];
    sfmt(endpoint, sizeof endpoint, "unix:%s", sock_path);
    struct ops_module m = endpoint_module(endpoint, 5000, 65536);
    struct host_settlement out = {0, NULL};
    int rc = ops_module_invoke(&m, "go", "[1,2]", "key-unix", NULL, &out);
    json_t *v = out.value != NULL ? json_loads(out.value, JSON_DECODE_ANY, NULL) : NULL;
    check(rc == 0 && out.settlement == PROTO_SETTLEMENT_FULFILLED &&
              strcmp(json_str_of(v, "key"), "key-unix") == 0 &&
              log_count("POST / idem=key-unix ctype=application/json") == 1,
          "unix: a unix:/PATH endpoint gets the POST and its reply fulfils", "rc %d, %s", rc,
          out.value != NULL ? out.value : "(null)");
    json_decref(v);
    host_settlement_free(&out);
    test_server_stop(&u);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (!harness_tmpdir_copy("endpoint", home, sizeof home))
        return harness_finish();
    sfmt(log_path, sizeof log_path, "%s/requests.log", home);
    sfmt(sock_path, sizeof sock_path, "%s/module.sock", home);
    test_catalog();
    struct test_server s = {0};
    if (check(server_start(&s, NULL), "server: the loopback module listens", "port %d", port)) {
        test_calls();
        test_unix_socket();
    }
    test_server_stop(&s);
    harness_remove_tree(home);
    return harness_finish();
}
