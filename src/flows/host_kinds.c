/* The table of host-call kinds (see host_kinds.h): each kind's parser, grant check
 * and effect, then the rows. */
#include "flows/host_kinds.h"

#include "base/clock.h"
#include "host/sink.h"
#include "store/kv_store.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

__attribute__((format(printf, 3, 4))) static void refuse(struct host_kind_call *c,
                                                         const char *code, const char *fmt,
                                                         ...)
{
    c->refused = true;
    snprintf(c->code, sizeof c->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
}

static const char *string_at(const json_t *args, size_t i)
{
    const json_t *v = json_array_get(args, i);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* ---- now, random ---------------------------------------------------------------------- */

static int now_effect(const struct host_kind_site *site, struct host_kind_call *call,
                      struct host_settlement *out)
{
    (void)site;
    (void)call;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    return host_fulfil_text(out, text);
}

static int random_effect(const struct host_kind_site *site, struct host_kind_call *call,
                         struct host_settlement *out)
{
    (void)site;
    (void)call;
    uint64_t bits;
    if (getrandom(&bits, sizeof bits, 0) != (ssize_t)sizeof bits)
        return host_reject(out, HOST_CODE_IO_ERROR, "random: getrandom failed");
    char text[40];
    /* 53 random bits as a double in [0, 1), printed exactly. */
    snprintf(text, sizeof text, "%.17g", (double)(bits >> 11) * 0x1.0p-53);
    return host_fulfil_text(out, text);
}

/* ---- kv ---------------------------------------------------------------------------------- */

/* In the caller's transaction (store/kv_store.h reads the key and value). */
static int kv_effect(const struct host_kind_site *site, struct host_kind_call *call,
                     struct host_settlement *out)
{
    /* A store error (-1, call->err): the caller rolls its transaction back. */
    return kv_store_call(site->store, site->flow_id, call->name, call->args, call->args_text,
                         call->args_len, out, call->err, sizeof call->err);
}

static int kv_check(const struct host_kind_site *site, struct host_kind_call *call,
                    struct host_settlement *out, bool *would_change, char *err, size_t err_cap)
{
    return kv_store_check(site->store, site->flow_id, call->name, call->args, call->args_text,
                          call->args_len, out, would_change, err, err_cap);
}

/* ---- fs ------------------------------------------------------------------------------------ */

static void fs_parse(const struct host_kind_site *site, struct host_kind_call *call)
{
    (void)site;
    call->refused = fs_builtin_parse(call->name, call->args, &call->fs, call->code,
                                     sizeof call->code, call->reason, sizeof call->reason) != 0;
}

/* The manifest's roots, then the path under them (host/fs_builtin.h). */
static void fs_grant(const struct host_kind_site *site, struct host_kind_call *call)
{
    const struct manifest *m = site->manifest;
    if (m->fs_read.count + m->fs_write.count == 0) {
        refuse(call, HOST_CODE_DENIED, "%s: the manifest grants no fs roots", call->name);
        return;
    }
    struct fs_grants g = {(const char *const *)m->fs_read.items, m->fs_read.count,
                          (const char *const *)m->fs_write.items, m->fs_write.count,
                          site->home, NULL};
    call->refused = fs_builtin_authorize(&g, call->fs, call->code, sizeof call->code,
                                         call->reason, sizeof call->reason) != 0;
}

static int fs_effect(const struct host_kind_site *site, struct host_kind_call *call,
                     struct host_settlement *out)
{
    (void)site;
    return fs_builtin_perform(call->fs, call->key, false, out, NULL);
}

static int fs_write_check(const struct host_kind_site *site, struct host_kind_call *call,
                          struct host_settlement *out, bool *would_change, char *err,
                          size_t err_cap)
{
    (void)site;
    (void)err;
    (void)err_cap;
    return fs_builtin_perform(call->fs, NULL, true, out, would_change);
}

/* ---- net.fetch ---------------------------------------------------------------------------- */

_Static_assert((unsigned)NET_METHOD_GET == (unsigned)MANIFEST_METHOD_GET &&
                   (unsigned)NET_METHOD_HEAD == (unsigned)MANIFEST_METHOD_HEAD &&
                   (unsigned)NET_METHOD_POST == (unsigned)MANIFEST_METHOD_POST &&
                   (unsigned)NET_METHOD_PUT == (unsigned)MANIFEST_METHOD_PUT &&
                   (unsigned)NET_METHOD_PATCH == (unsigned)MANIFEST_METHOD_PATCH &&
                   (unsigned)NET_METHOD_DELETE == (unsigned)MANIFEST_METHOD_DELETE,
               "net.fetch method bits differ from the manifest's");
struct net_grants host_kinds_net_grants(const struct manifest *m, struct net_grant *items)
{
    size_t n = m->fetch_count;
    if (n > MANIFEST_MAX_LIST) /* the parser allows no more */
        n = MANIFEST_MAX_LIST;
    for (size_t i = 0; i < n; i++)
        items[i] = (struct net_grant){m->fetch[i].host, m->fetch[i].methods, m->fetch[i].idempotent};
    struct net_grants g = {items, n};
    return g;
}

static void net_parse(const struct host_kind_site *site, struct host_kind_call *call)
{
    (void)site;
    call->refused = net_fetch_parse(call->args, &call->net, call->code, sizeof call->code,
                                    call->reason, sizeof call->reason) != 0;
}

static void net_grant(const struct host_kind_site *site, struct host_kind_call *call)
{
    struct net_grant items[MANIFEST_MAX_LIST];
    struct net_grants grants = host_kinds_net_grants(site->manifest, items);
    enum net_fetch_class cls;
    if (net_fetch_grant(&grants, call->net, &cls, call->code, sizeof call->code, call->reason,
                        sizeof call->reason) != 0) {
        call->refused = true;
        return;
    }
    call->cls = cls == NET_FETCH_QUERY ? JOURNAL_QUERY
                : cls == NET_FETCH_KEYED ? JOURNAL_KEYED_MUTATION : JOURNAL_MUTATION;
}

static int net_effect(const struct host_kind_site *site, struct host_kind_call *call,
                      struct host_settlement *out)
{
    char why[320];
    if (*site->net == NULL && (*site->net = net_fetch_session_new(why, sizeof why)) == NULL)
        return host_reject(out, HOST_CODE_IO_ERROR, "net.fetch: %s", why);
    struct net_grant items[MANIFEST_MAX_LIST];
    struct net_grants grants = host_kinds_net_grants(site->manifest, items);
    return net_fetch_perform(*site->net, &grants, call->net, call->key, site->deadline_at_ms,
                             out);
}

/* ---- git.* ----------------------------------------------------------------------------------- */

struct git_grants host_kinds_git_grants(const struct manifest *m)
{
    struct git_grants g = {(const char *const *)m->git_read.items, m->git_read.count};
    return g;
}

static void git_parse(const struct host_kind_site *site, struct host_kind_call *call)
{
    (void)site;
    call->refused = git_builtin_parse(call->name, call->args, &call->git, call->code,
                                      sizeof call->code, call->reason, sizeof call->reason) != 0;
}

static void git_grant(const struct host_kind_site *site, struct host_kind_call *call)
{
    struct git_grants grants = host_kinds_git_grants(site->manifest);
    call->refused = git_builtin_grant(&grants, call->git, call->code, sizeof call->code,
                                      call->reason, sizeof call->reason) != 0;
}

static int git_effect(const struct host_kind_site *site, struct host_kind_call *call,
                      struct host_settlement *out)
{
    return git_builtin_run(call->git, site->deadline_at_ms, out);
}

/* ---- ops.call ------------------------------------------------------------------------------- */

/* Calls the decided module op with args (ops.call's third argument, a module sink's
 * item) and the call's key: what ops.call and sink.emit to a module sink share. The
 * module gets the catalog's time, cut to what is left of the activation's. */
static int invoke_module_op(const struct host_kind_site *site, struct host_kind_call *call,
                            const json_t *args, struct host_settlement *out)
{
    if (call->module == NULL) /* the grant sets it for every call it sends to a module */
        return host_reject(out, HOST_CODE_DENIED, "%s: no module was decided", call->name);
    struct ops_module module = *call->module;
    if (site->deadline_at_ms > 0) {
        long long left = site->deadline_at_ms - monotonic_ms();
        if (left <= 0)
            return host_reject(out, HOST_CODE_TIMEOUT, "%s %s.%s: the activation's wall"
                               " deadline has passed", call->name, module.name, call->op);
        if (left < (long long)module.timeout_ms)
            module.timeout_ms = (uint32_t)left;
    }
    bool cut = module.timeout_ms < call->module->timeout_ms;
    char *text = args != NULL ? json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("null");
    if (text == NULL)
        return -1;
    int rc = ops_module_invoke(&module, call->op, text, call->key, call->module_hook, out);
    free(text);
    if (rc == 0 && cut) {
        char code[64];
        host_settlement_code(out, code, sizeof code);
        call->cut_by_deadline = strcmp(code, HOST_CODE_TIMEOUT) == 0;
    }
    return rc;
}

/* The class of a call to a catalog op: a query, a mutation the module deduplicates on
 * the key (resent after a crash), or one it does not (in doubt after a crash). */
static enum journal_class module_op_class(const struct ops_op *op)
{
    return !op->mutate      ? JOURNAL_QUERY
           : op->idempotent ? JOURNAL_KEYED_MUTATION
                            : JOURNAL_MUTATION;
}

static void ops_parse(const struct host_kind_site *site, struct host_kind_call *call)
{
    (void)site;
    if (string_at(call->args, 0) == NULL || string_at(call->args, 1) == NULL)
        refuse(call, HOST_CODE_INVALID_ARGUMENTS, "ops.call(module, op, args): module and op"
               " must be strings");
}

static void ops_grant(const struct host_kind_site *site, struct host_kind_call *call)
{
    const char *module = string_at(call->args, 0), *op = string_at(call->args, 1);
    const struct manifest *m = site->manifest;
    bool granted = false;
    for (size_t i = 0; i < m->op_count && !granted; i++)
        granted = strcmp(m->ops[i].module, module) == 0 && strcmp(m->ops[i].op, op) == 0;
    if (!granted) {
        refuse(call, HOST_CODE_DENIED, "ops.call %.80s.%.80s is not granted by the manifest",
               module, op);
        return;
    }
    const struct ops_op *entry = ops_catalog_find(site->catalog, module, op, &call->module);
    if (entry == NULL) {
        refuse(call, HOST_CODE_DENIED, "ops.call %.80s.%.80s: the operator's catalog (%s) has"
               " no such op", module, op, OPS_CATALOG_FILE);
        return;
    }
    call->op = entry->name;
    call->cls = module_op_class(entry);
    call->long_running = entry->long_running;
    call->completion_timeout_s = entry->completion_timeout_s;
    call->completion_event = entry->completion_event;
}

static int ops_effect(const struct host_kind_site *site, struct host_kind_call *call,
                      struct host_settlement *out)
{
    return invoke_module_op(site, call, json_array_get(call->args, 2), out);
}

/* ---- sink.emit ------------------------------------------------------------------------------ */

static void sink_parse(const struct host_kind_site *site, struct host_kind_call *call)
{
    (void)site;
    call->sink = string_at(call->args, 0);
    if (call->sink == NULL || json_array_size(call->args) != 2)
        refuse(call, HOST_CODE_INVALID_ARGUMENTS, "sink.emit(name, item): name must be a"
               " string and item a JSON value");
}

static void sink_grant(const struct host_kind_site *site, struct host_kind_call *call)
{
    const struct manifest_strings *sinks = &site->manifest->sinks;
    bool granted = false;
    for (size_t i = 0; i < sinks->count && !granted; i++)
        granted = strcmp(sinks->items[i], call->sink) == 0;
    if (!granted) {
        refuse(call, HOST_CODE_DENIED, "sink '%.80s' is not granted by the manifest", call->sink);
        return;
    }
    /* A sink the operator made a module op (modules.json "sinks") is journaled as that
     * op's mutation; any other stays its file, keyed by the line it writes. */
    const struct ops_op *entry = ops_catalog_sink(site->catalog, call->sink, &call->module);
    if (entry != NULL) {
        call->op = entry->name;
        call->cls = module_op_class(entry);
    }
}

static int sink_effect(const struct host_kind_site *site, struct host_kind_call *call,
                       struct host_settlement *out)
{
    const char *name = call->sink;
    if (call->module != NULL) /* resent with its key, as an ops.call of the op is */
        return invoke_module_op(site, call, json_array_get(call->args, 1), out);
    if (call->resend) {
        int found = sink_contains_key(site->home, name, call->key);
        if (found < 0)
            return host_reject(out, HOST_CODE_IO_ERROR, "sink '%s': cannot read it back", name);
        if (found > 0) /* the line was written before the crash */
            return host_fulfil_text(out, "{\"bytes\":0,\"already_written\":true}");
    }
    char *item = json_dumps(json_array_get(call->args, 1), JSON_COMPACT | JSON_ENCODE_ANY);
    if (item == NULL)
        return -1;
    struct sink_record rec = {site->flow_id, site->run_id, call->position, call->key, item};
    int rc = sink_append(site->home, name, &rec, out);
    free(item);
    return rc;
}

/* ---- tool.call ------------------------------------------------------------------------------ */

/* A flow has no tools: its run refuses tool.call as it refuses an unknown kind. */
static void not_for_flows(const struct host_kind_site *site, struct host_kind_call *call)
{
    (void)site;
    refuse(call, HOST_CODE_UNSUPPORTED, "%.80s is not available in this build of basal",
           call->name);
}

/* ---- the table ------------------------------------------------------------------------------ */

/* Short names for the columns' values, only for the table below. */
#define SYNC JOURNAL_SYNC
#define LOCAL JOURNAL_LOCAL
#define QUERY JOURNAL_QUERY
#define KEYED JOURNAL_KEYED_MUTATION
#define PERFORM HOST_KIND_DRY_PERFORM
#define CHECK HOST_KIND_DRY_CHECK
#define CAPTURE HOST_KIND_DRY_CAPTURE
#define DRY_QUERY HOST_KIND_DRY_QUERY
#define CM_NO HOST_KIND_CODEMODE_REFUSED
#define CM_ANSWER HOST_KIND_CODEMODE_ANSWER
#define CM_TOOL HOST_KIND_CODEMODE_TOOL
#define ROW(name_, sync_, cls_, parse_, grant_, effect_, check_, dry_, cm_, audit_)         \
    {.name = (name_), .sync = (sync_), .cls = (cls_), .parse = (parse_), .grant = (grant_),  \
     .effect = (effect_), .check = (check_), .dry_run = (dry_), .codemode = (cm_),           \
     .audit_after = (audit_)}
#define GIT_ROW(name)                                                                      \
    ROW(name, false, QUERY, git_parse, git_grant, git_effect, NULL, DRY_QUERY, CM_NO, false)

static const struct host_kind KINDS[] = {
    /* name, sync, class, parse, grant, effect, check, dry run, codemode, audit_after */
    ROW("now", true, SYNC, NULL, NULL, now_effect, NULL, PERFORM, CM_ANSWER, false),
    ROW("random", true, SYNC, NULL, NULL, random_effect, NULL, PERFORM, CM_ANSWER, false),
    ROW("kv.get", false, LOCAL, NULL, NULL, kv_effect, NULL, PERFORM, CM_NO, false),
    ROW("kv.set", false, LOCAL, NULL, NULL, kv_effect, kv_check, CHECK, CM_NO, false),
    ROW("kv.delete", false, LOCAL, NULL, NULL, kv_effect, kv_check, CHECK, CM_NO, false),
    ROW("fs.read", false, QUERY, fs_parse, fs_grant, fs_effect, NULL, PERFORM, CM_NO, true),
    ROW("fs.list", false, QUERY, fs_parse, fs_grant, fs_effect, NULL, PERFORM, CM_NO, true),
    ROW("fs.stat", false, QUERY, fs_parse, fs_grant, fs_effect, NULL, PERFORM, CM_NO, true),
    ROW("fs.write", false, KEYED, fs_parse, fs_grant, fs_effect, fs_write_check, CHECK, CM_NO,
        true),
    ROW("net.fetch", false, QUERY, net_parse, net_grant, net_effect, NULL, DRY_QUERY, CM_NO,
        false),
    GIT_ROW("git.log"),
    GIT_ROW("git.revParse"),
    GIT_ROW("git.describeTags"),
    GIT_ROW("git.show"),
    GIT_ROW("git.diff"),
    GIT_ROW("git.lsFiles"),
    ROW("ops.call", false, QUERY, ops_parse, ops_grant, ops_effect, NULL, DRY_QUERY, CM_NO,
        false),
    ROW("sink.emit", false, KEYED, sink_parse, sink_grant, sink_effect, NULL, CAPTURE, CM_NO,
        false),
    ROW("tool.call", false, QUERY, NULL, not_for_flows, NULL, NULL, HOST_KIND_DRY_UNSUPPORTED,
        CM_TOOL, false),
};

#undef GIT_ROW
#undef ROW
#undef CM_TOOL
#undef CM_ANSWER
#undef CM_NO
#undef DRY_QUERY
#undef CAPTURE
#undef CHECK
#undef PERFORM
#undef KEYED
#undef QUERY
#undef LOCAL
#undef SYNC

/* ---- lookups and the decision --------------------------------------------------------------- */

const struct host_kind *host_kind_find(const char *kind)
{
    for (size_t i = 0; kind != NULL && i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (strcmp(KINDS[i].name, kind) == 0)
            return &KINDS[i];
    return NULL;
}

const struct host_kind *host_kinds_all(size_t *count)
{
    *count = sizeof KINDS / sizeof KINDS[0];
    return KINDS;
}

enum journal_class host_kind_class(const char *kind)
{
    const struct host_kind *k = host_kind_find(kind);
    return k != NULL ? k->cls : JOURNAL_QUERY;
}

bool host_kinds_is_sync(const char *kind)
{
    const struct host_kind *k = host_kind_find(kind);
    return k != NULL && k->sync;
}

bool host_kinds_is_sync_op(void *self, const char *kind)
{
    (void)self;
    return host_kinds_is_sync(kind);
}

void host_kind_decide(const struct host_kind_site *site, struct host_kind_call *call)
{
    const char *name = call->name;
    const void *args = call->args;
    const char *text = call->args_text;
    size_t len = call->args_len;
    uint32_t position = call->position;
    memset(call, 0, sizeof *call);
    call->name = name;
    call->args = args;
    call->args_text = text;
    call->args_len = len;
    call->position = position;
    call->kind = host_kind_find(name);
    call->cls = call->kind != NULL ? call->kind->cls : JOURNAL_QUERY;
    if (args == NULL) {
        refuse(call, HOST_CODE_INVALID_ARGUMENTS, "%.80s: arguments are not a JSON array", name);
        return;
    }
    if (call->kind == NULL) {
        refuse(call, HOST_CODE_UNSUPPORTED, "%.80s is not available in this build of basal",
               name);
        return;
    }
    if (call->kind->parse != NULL)
        call->kind->parse(site, call);
    if (!call->refused && call->kind->grant != NULL)
        call->kind->grant(site, call);
}

int host_kind_perform(const struct host_kind_site *site, struct host_kind_call *call,
                      struct host_settlement *out)
{
    if (call->refused || call->kind == NULL || call->kind->effect == NULL)
        return host_reject(out, call->refused ? call->code : HOST_CODE_UNSUPPORTED, "%s",
                           call->refused ? call->reason : "not a kind of this build");
    return call->kind->effect(site, call, out);
}

void host_kind_destination(const struct host_kind_call *call, char *out, size_t cap)
{
    if (call->sink == NULL || call->refused)
        snprintf(out, cap, "%s", "");
    else if (call->module != NULL)
        snprintf(out, cap, "sink module %.63s op %.63s", call->module->name, call->op);
    else
        snprintf(out, cap, "%s", "sink file");
}

void host_kind_call_free(struct host_kind_call *call)
{
    net_fetch_request_free(call->net);
    git_request_free(call->git);
    fs_request_free(call->fs);
    call->net = NULL;
    call->git = NULL;
    call->fs = NULL;
}
