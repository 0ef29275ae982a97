/* The status page's HTTP server (web/web_server.h): authentication, routes, the
 * security headers every answer carries, and the two actions. */
#include "web/web_server.h"
#include "base/error_line.h"
#include "base/listen_address.h"
#include "base/microhttpd_library.h"
#include "flows/reconcile.h"
#include "store/store.h"
#include "web/html_text.h"
#include "web/web_auth.h"
#include "web/web_live.h"
#include "web/web_pages.h"

#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <openssl/crypto.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* A browser opens a few connections per tab; more than this are refused. */
#define WEB_CONNECTION_LIMIT 32u
#define WEB_CONNECTION_TIMEOUT_S 30u
#define WEB_CONNECTION_MEMORY (64u << 10)
/* A form's fields: the CSRF token, a run id, a position, a decision, a reason and an
 * observed JSON value (at most the ops limit of an operator's JSON value). */
#define WEB_FIELD_MAX (64u << 10)
#define WEB_BODY_MAX (160u << 10)
#define SESSION_COOKIE "basal_web"

#define CSP "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " \
            "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

struct web_server {
    struct MHD_Daemon *daemon;
    struct web_env env;
    char home[PATH_MAX];
    char token[WEB_SECRET_HEX + 1];
    char csrf[WEB_SECRET_HEX + 1];
    bool allow_remote;
    unsigned port;
};

enum form_field { FIELD_CSRF, FIELD_RUN, FIELD_POSITION, FIELD_DECISION, FIELD_REASON,
                  FIELD_OBSERVED, FIELD_COUNT };
static const char *const FIELD_NAMES[FIELD_COUNT] = {"csrf", "run", "position", "decision",
                                                      "reason", "observed"};

/* One request's state between libmicrohttpd's calls: a POST's form, as it arrives. */
struct request {
    struct MHD_PostProcessor *post;
    char *field[FIELD_COUNT];
    size_t field_len[FIELD_COUNT];
    size_t body_len;
    bool bad_form; /* too large, a field twice, an unknown field */
};

/* ---------------------------------------------------------------- answers */

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, char *body, size_t len,
                             const char *type, const char *location, const char *cookie)
{
    struct MHD_Response *r = mhd_lib.create_response_from_buffer_with_free_callback(len, body, free);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    enum MHD_Result ok = MHD_YES;
    const char *const headers[][2] = {
        {MHD_HTTP_HEADER_CONTENT_TYPE, type},
        {"Content-Security-Policy", CSP},
        {"X-Content-Type-Options", "nosniff"},
        {"X-Frame-Options", "DENY"},
        {"Referrer-Policy", "no-referrer"},
        {MHD_HTTP_HEADER_CACHE_CONTROL, "no-store"},
        {"Cross-Origin-Opener-Policy", "same-origin"},
        {"Cross-Origin-Resource-Policy", "same-origin"},
    };
    for (size_t i = 0; ok == MHD_YES && i < sizeof headers / sizeof headers[0]; i++)
        ok = mhd_lib.add_response_header(r, headers[i][0], headers[i][1]);
    if (ok == MHD_YES && location != NULL)
        ok = mhd_lib.add_response_header(r, MHD_HTTP_HEADER_LOCATION, location);
    if (ok == MHD_YES && cookie != NULL)
        ok = mhd_lib.add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, cookie);
    if (ok == MHD_YES)
        ok = mhd_lib.queue_response(c, status, r);
    mhd_lib.destroy_response(r);
    return ok;
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text)
{
    char *body = strdup(text);
    if (body == NULL)
        return MHD_NO;
    return queue(c, status, body, strlen(body), "text/plain; charset=utf-8", NULL, NULL);
}

static enum MHD_Result answer_html(struct MHD_Connection *c, unsigned status, struct html *h)
{
    size_t len = 0;
    char *body = html_take(h, &len);
    if (body == NULL)
        return answer_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "the page could not be rendered\n");
    return queue(c, status, body, len, "text/html; charset=utf-8", NULL, NULL);
}

static enum MHD_Result answer_message(struct MHD_Connection *c, unsigned status,
                                      const char *title, const char *text)
{
    struct html h;
    html_init(&h);
    web_page_message(&h, title, text);
    return answer_html(c, status, &h);
}

static enum MHD_Result answer_asset(struct MHD_Connection *c, const char *text, const char *type)
{
    char *body = strdup(text);
    if (body == NULL)
        return MHD_NO;
    return queue(c, MHD_HTTP_OK, body, strlen(body), type, NULL, NULL);
}

static enum MHD_Result redirect(struct MHD_Connection *c, const char *location, const char *cookie)
{
    char *body = strdup("");
    if (body == NULL)
        return MHD_NO;
    return queue(c, MHD_HTTP_SEE_OTHER, body, 0, "text/plain; charset=utf-8", location, cookie);
}

/* ---------------------------------------------------------------- ops */

/* The data of an ops command's reply (new reference), or NULL with the reply's error. */
static json_t *ops_data(struct web_server *s, const char *cmd, json_t *args, char *err,
                        size_t err_cap)
{
    json_t *request = json_pack("{s:s, s:o}", "cmd", cmd, "args", args != NULL ? args : json_object());
    if (request == NULL) {
        error_line(err, err_cap, "out of memory");
        return NULL;
    }
    json_t *reply = s->env.ops(s->env.ctx, request);
    json_decref(request);
    if (reply == NULL) {
        error_line(err, err_cap, "out of memory");
        return NULL;
    }
    json_t *data = NULL;
    if (json_is_true(json_object_get(reply, "ok")))
        data = json_incref(json_object_get(reply, "data"));
    else
        error_line(err, err_cap, "%s", json_string_value(json_object_get(reply, "error")) != NULL
                                           ? json_string_value(json_object_get(reply, "error"))
                                           : "the command failed");
    json_decref(reply);
    return data;
}

static long long now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* ---------------------------------------------------------------- pages */

static const char *get_arg(struct MHD_Connection *c, const char *name)
{
    const char *v = mhd_lib.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

static enum MHD_Result page_flows(struct web_server *s, struct MHD_Connection *c)
{
    char err[1024];
    json_t *flows = ops_data(s, "flow.list", NULL, err, sizeof err);
    if (flows == NULL)
        return answer_message(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "flows", err);
    json_t *health = ops_data(s, "health", json_pack("{s:s}", "landlock", s->env.landlock), err,
                              sizeof err);
    struct html h;
    html_init(&h);
    web_page_flows(&h, flows, health);
    json_decref(flows);
    json_decref(health);
    return answer_html(c, MHD_HTTP_OK, &h);
}

static enum MHD_Result page_runs(struct web_server *s, struct MHD_Connection *c, bool table_only)
{
    struct web_runs_query q = {get_arg(c, "flow"), get_arg(c, "state"), 0};
    const char *page = get_arg(c, "page");
    if (page != NULL) {
        char *end;
        long n = strtol(page, &end, 10);
        if (*end != '\0' || n < 0 || n > 1000000)
            return answer_message(c, MHD_HTTP_BAD_REQUEST, "runs", "page must be a number from 0");
        q.page = n;
    }
    char err[1024];
    json_t *args = q.flow != NULL ? json_pack("{s:s}", "flow", q.flow) : json_object();
    if (args == NULL)
        return answer_message(c, MHD_HTTP_BAD_REQUEST, "runs", "the flow is not UTF-8 text");
    json_t *runs = ops_data(s, "runs", args, err, sizeof err);
    if (runs == NULL)
        return answer_message(c, MHD_HTTP_BAD_REQUEST, "runs", err);
    struct html h;
    html_init(&h);
    if (table_only)
        web_runs_table(&h, runs, &q);
    else
        web_page_runs(&h, runs, &q);
    json_decref(runs);
    return answer_html(c, MHD_HTTP_OK, &h);
}

static enum MHD_Result page_run(struct web_server *s, struct MHD_Connection *c)
{
    const char *id = get_arg(c, "id");
    if (id == NULL || strlen(id) > 24)
        return answer_message(c, MHD_HTTP_BAD_REQUEST, "run", "which run? (/run?id=N)");
    char err[1024];
    json_t *args = json_pack("{s:s}", "run", id);
    if (args == NULL)
        return answer_message(c, MHD_HTTP_BAD_REQUEST, "run", "the run id is not UTF-8 text");
    json_t *run = ops_data(s, "journal", args, err, sizeof err);
    if (run == NULL)
        return answer_message(c, MHD_HTTP_NOT_FOUND, "run", err);
    struct html h;
    html_init(&h);
    web_page_run(&h, run, s->csrf);
    json_decref(run);
    return answer_html(c, MHD_HTTP_OK, &h);
}

static enum MHD_Result page_health(struct web_server *s, struct MHD_Connection *c)
{
    char err[1024];
    json_t *health = ops_data(s, "health", json_pack("{s:s}", "landlock", s->env.landlock), err,
                              sizeof err);
    if (health == NULL)
        return answer_message(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "health", err);
    json_t *runs = ops_data(s, "runs", NULL, err, sizeof err);
    struct html h;
    html_init(&h);
    web_page_health(&h, health, runs, now_ms());
    json_decref(health);
    json_decref(runs);
    return answer_html(c, MHD_HTTP_OK, &h);
}

/* ---------------------------------------------------------------- actions */

static bool run_id_of(const char *text, long long *out)
{
    if (text == NULL || text[0] < '1' || text[0] > '9' || strlen(text) > 18 ||
        strspn(text, "0123456789") != strlen(text))
        return false;
    *out = strtoll(text, NULL, 10);
    return true;
}

/* A journal position: decimal digits, 0 to UINT32_MAX. */
static bool position_of(const char *text, long long *out)
{
    size_t n = text != NULL ? strlen(text) : 0;
    if (n == 0 || n > 10 || strspn(text, "0123456789") != n || (n > 1 && text[0] == '0'))
        return false;
    *out = strtoll(text, NULL, 10);
    return *out <= (long long)UINT32_MAX;
}

static enum MHD_Result after_action(struct MHD_Connection *c, long long run)
{
    char location[48];
    snprintf(location, sizeof location, "/run?id=%lld", run);
    return redirect(c, location, NULL);
}

/* The CLI's `cancel`: the ops command "cancel" (store/runs.h, its audit row). */
static enum MHD_Result action_cancel(struct web_server *s, struct MHD_Connection *c,
                                     struct request *r)
{
    long long run;
    if (!run_id_of(r->field[FIELD_RUN], &run))
        return answer_message(c, MHD_HTTP_BAD_REQUEST, "cancel", "the form names no run");
    json_t *args = json_pack("{s:I}", "run", (json_int_t)run);
    if (args != NULL && r->field[FIELD_REASON] != NULL && r->field[FIELD_REASON][0] != '\0')
        json_object_set_new(args, "reason", json_string(r->field[FIELD_REASON]));
    char err[1024];
    json_t *done = ops_data(s, "cancel", args, err, sizeof err);
    if (done == NULL)
        return answer_message(c, MHD_HTTP_CONFLICT, "cancel refused", err);
    json_decref(done);
    return after_action(c, run);
}

/* The CLI's `flow reconcile`: reconcile_settle on a store connection of this thread. */
static enum MHD_Result action_reconcile(struct web_server *s, struct MHD_Connection *c,
                                        struct request *r)
{
    long long run, position;
    const char *decision_text = r->field[FIELD_DECISION];
    enum reconcile_decision decision;
    if (!run_id_of(r->field[FIELD_RUN], &run) || !position_of(r->field[FIELD_POSITION], &position) ||
        decision_text == NULL)
        return answer_message(c, MHD_HTTP_BAD_REQUEST, "reconcile",
                              "the form needs a run, a position and a decision");
    if (strcmp(decision_text, "observed") == 0)
        decision = RECONCILE_OBSERVED;
    else if (strcmp(decision_text, "not-applied") == 0)
        decision = RECONCILE_NOT_APPLIED;
    else if (strcmp(decision_text, "cancel") == 0)
        decision = RECONCILE_CANCEL;
    else
        return answer_message(c, MHD_HTTP_BAD_REQUEST, "reconcile",
                              "decision must be observed, not-applied or cancel");
    char *observed = NULL;
    if (decision == RECONCILE_OBSERVED) {
        const char *text = r->field[FIELD_OBSERVED] != NULL ? r->field[FIELD_OBSERVED] : "";
        /* The CLI's check of --observed: one JSON value, compact. */
        json_error_t jerr;
        json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
        observed = v != NULL ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        json_decref(v);
        if (observed == NULL)
            return answer_message(c, MHD_HTTP_BAD_REQUEST, "reconcile",
                                  "the observed value is not one JSON value");
    }
    char err[1024];
    struct store *st;
    int rc = store_open(s->home, &st, err, sizeof err);
    if (rc == 0) {
        rc = reconcile_settle(st, run, (uint32_t)position, decision, observed, err, sizeof err);
        store_close(st);
    }
    free(observed);
    if (rc != 0)
        return answer_message(c, MHD_HTTP_CONFLICT, "reconcile refused", err);
    return after_action(c, run);
}

/* ---------------------------------------------------------------- requests */

static enum MHD_Result form_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *filename, const char *content_type,
                                  const char *transfer_encoding, const char *data, uint64_t off,
                                  size_t size)
{
    struct request *r = cls;
    (void)kind;
    (void)filename;
    (void)content_type;
    (void)transfer_encoding;
    size_t i = 0;
    while (i < FIELD_COUNT && strcmp(key, FIELD_NAMES[i]) != 0)
        i++;
    if (i == FIELD_COUNT || (off == 0 && r->field[i] != NULL) ||
        r->field_len[i] + size > WEB_FIELD_MAX || memchr(data, '\0', size) != NULL) {
        r->bad_form = true;
        return MHD_NO;
    }
    char *grown = realloc(r->field[i], r->field_len[i] + size + 1);
    if (grown == NULL) {
        r->bad_form = true;
        return MHD_NO;
    }
    memcpy(grown + r->field_len[i], data, size);
    r->field_len[i] += size;
    grown[r->field_len[i]] = '\0';
    r->field[i] = grown;
    return MHD_YES;
}

static void request_done(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)c;
    (void)code;
    struct request *r = *state;
    if (r == NULL)
        return;
    if (r->post != NULL)
        mhd_lib.destroy_post_processor(r->post);
    for (size_t i = 0; i < FIELD_COUNT; i++) {
        if (r->field[i] != NULL)
            OPENSSL_cleanse(r->field[i], r->field_len[i]);
        free(r->field[i]);
    }
    free(r);
    *state = NULL;
}

static bool authorized(struct web_server *s, struct MHD_Connection *c)
{
    return web_secret_equal(mhd_lib.lookup_connection_value(c, MHD_COOKIE_KIND, SESSION_COOKIE),
                            s->token);
}

/* Where a login goes next: a path of this page only ("/run?id=3"), never another
 * origin ("//host", "/\\host") or anything a header could not carry as it is. */
static bool local_path(const char *next)
{
    static const char PATH_BYTES[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789/?=&_.-";
    size_t n = next != NULL ? strlen(next) : 0;
    return n > 0 && n < 256 && next[0] == '/' && next[1] != '/' &&
           strspn(next, PATH_BYTES) == n;
}

/* GET /login?code=C[&next=PATH]: the one-time code `ck-basal web-url` printed, for the
 * cookie. */
static enum MHD_Result login(struct web_server *s, struct MHD_Connection *c)
{
    char err[512];
    int taken = web_login_code_take(s->home, get_arg(c, "code"), err, sizeof err);
    if (taken < 0)
        return answer_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "the login could not be checked\n");
    if (taken == 0)
        return answer_text(c, MHD_HTTP_UNAUTHORIZED,
                           "unauthorized: this login link is spent, expired or wrong "
                           "(ck-basal web-url prints a new one)\n");
    char cookie[160];
    snprintf(cookie, sizeof cookie, SESSION_COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict",
             s->token);
    const char *next = get_arg(c, "next");
    enum MHD_Result ok = redirect(c, local_path(next) ? next : "/flows", cookie);
    OPENSSL_cleanse(cookie, sizeof cookie);
    return ok;
}

static enum MHD_Result route_post(struct web_server *s, struct MHD_Connection *c,
                                  const char *url, struct request *r)
{
    bool is_cancel = strcmp(url, "/run/cancel") == 0;
    if (!is_cancel && strcmp(url, "/run/reconcile") != 0)
        return answer_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
    if (r->bad_form)
        return answer_text(c, MHD_HTTP_BAD_REQUEST, "the form is malformed or too large\n");
    /* The cookie alone would let another site's form act (the browser sends it if the
     * SameSite rule ever lets it): the form must also carry the page's CSRF token. */
    if (!web_secret_equal(r->field[FIELD_CSRF], s->csrf))
        return answer_text(c, MHD_HTTP_FORBIDDEN, "forbidden: no valid CSRF token\n");
    return is_cancel ? action_cancel(s, c, r) : action_reconcile(s, c, r);
}

static enum MHD_Result route_get(struct web_server *s, struct MHD_Connection *c, const char *url)
{
    if (strcmp(url, "/") == 0)
        return redirect(c, "/flows", NULL);
    if (strcmp(url, "/flows") == 0)
        return page_flows(s, c);
    if (strcmp(url, "/runs") == 0)
        return page_runs(s, c, false);
    if (strcmp(url, "/runs/table") == 0)
        return page_runs(s, c, true);
    if (strcmp(url, "/run") == 0)
        return page_run(s, c);
    if (strcmp(url, "/health") == 0)
        return page_health(s, c);
    if (strcmp(url, "/style.css") == 0)
        return answer_asset(c, WEB_STYLESHEET, "text/css; charset=utf-8");
    if (strcmp(url, "/live.js") == 0)
        return answer_asset(c, WEB_LIVE_SCRIPT, "text/javascript; charset=utf-8");
    return answer_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **state)
{
    struct web_server *s = cls;
    (void)version;
    bool is_get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
    bool is_post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
    struct request *r = *state;
    if (r == NULL) {
        r = calloc(1, sizeof *r);
        if (r == NULL)
            return MHD_NO;
        *state = r;
        /* Only a form of an authorized session is read at all. */
        if (is_post && authorized(s, c))
            r->post = mhd_lib.create_post_processor(c, 4096, form_field, r);
        if (is_post && r->post == NULL)
            r->bad_form = true;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        r->body_len += *upload_data_size;
        if (r->body_len > WEB_BODY_MAX)
            r->bad_form = true;
        if (r->post != NULL && !r->bad_form &&
            mhd_lib.post_process(r->post, upload_data, *upload_data_size) != MHD_YES)
            r->bad_form = true;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (is_get && strcmp(url, "/login") == 0)
        return login(s, c);
    /* Nothing but the login is shown without the session cookie, not even a 404. */
    if (!authorized(s, c))
        return answer_text(c, MHD_HTTP_UNAUTHORIZED,
                           "unauthorized: open the URL `ck-basal web-url` prints\n");
    if (is_get)
        return route_get(s, c, url);
    if (is_post)
        return route_post(s, c, url, r);
    return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: GET or POST\n");
}

static enum MHD_Result accept_peer(void *cls, const struct sockaddr *addr, socklen_t len)
{
    const struct web_server *s = cls;
    /* Defence in depth behind the loopback bind. */
    return s->allow_remote || peer_is_loopback(addr, len) ? MHD_YES : MHD_NO;
}

/* ---------------------------------------------------------------- start, stop */

struct web_server *web_server_start(const char *listen, bool allow_remote,
                                    const struct web_env *env, char *err, size_t err_cap)
{
    if (listen == NULL || env == NULL || env->ops == NULL || env->home == NULL) {
        error_line(err, err_cap, "web: no address or no data home");
        return NULL;
    }
    struct listen_address address;
    if (listen_address_parse("web", listen, allow_remote,
                             "the page is for the operator alone (127.0.0.0/8 or [::1]; "
                             "--web-allow-remote to serve it elsewhere)",
                             &address, err, err_cap) != 0 ||
        microhttpd_library_load(err, err_cap) != 0)
        return NULL;
    struct web_server *s = calloc(1, sizeof *s);
    if (s == NULL) {
        error_line(err, err_cap, "out of memory");
        return NULL;
    }
    s->env = *env;
    s->allow_remote = allow_remote;
    int n = snprintf(s->home, sizeof s->home, "%s", env->home);
    if (n <= 0 || (size_t)n >= sizeof s->home ||
        web_token_ensure(s->home, s->token, NULL, err, err_cap) != 0 ||
        web_csrf_token(s->token, s->csrf) != 0) {
        if (n <= 0 || (size_t)n >= sizeof s->home)
            error_line(err, err_cap, "web: the data home's path is too long");
        else if (s->token[0] != '\0')
            error_line(err, err_cap, "web: the CSRF token could not be made");
        OPENSSL_cleanse(s, sizeof *s);
        free(s);
        return NULL;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
    if (address.ipv6)
        flags |= MHD_USE_IPv6;
    s->daemon = mhd_lib.start_daemon(
        flags, 0, accept_peer, s, answer, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address.addr,
        MHD_OPTION_CONNECTION_LIMIT, WEB_CONNECTION_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT,
        WEB_CONNECTION_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)WEB_CONNECTION_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, request_done, s, MHD_OPTION_END);
    const union MHD_DaemonInfo *info =
        s->daemon != NULL ? mhd_lib.get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT) : NULL;
    char base[128];
    if (info != NULL && info->port != 0) {
        s->port = info->port;
        snprintf(base, sizeof base, address.ipv6 ? "http://[%s]:%u" : "http://%s:%u",
                 address.host, s->port);
    }
    if (s->daemon == NULL || s->port == 0 || web_address_write(s->home, base, err, err_cap) != 0) {
        if (s->daemon == NULL)
            error_line(err, err_cap, "web: cannot listen on %s (in use, or not an address of "
                       "this machine)", listen);
        else if (s->port == 0)
            error_line(err, err_cap, "web: cannot tell the port bound for %s", listen);
        if (s->daemon != NULL)
            mhd_lib.stop_daemon(s->daemon);
        OPENSSL_cleanse(s, sizeof *s);
        free(s);
        return NULL;
    }
    return s;
}

unsigned web_server_port(const struct web_server *server)
{
    return server->port;
}

void web_server_stop(struct web_server *server)
{
    if (server == NULL)
        return;
    web_address_remove(server->home);
    mhd_lib.stop_daemon(server->daemon);
    OPENSSL_cleanse(server, sizeof *server);
    free(server);
}
