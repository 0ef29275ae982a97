/* The host of a codemode run (see codemode_host.h). */
#include "flows/codemode_host.h"

#include "base/clock.h"
#include "base/json_fields.h"
#include "base/json_js.h"
#include "flows/host_kinds.h"
#include "host/tool_schema.h"
#include "store/codemode_store.h"
#include "store/journal.h"
#include "store/store.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct codemode_host {
    struct codemode_host_config cfg;
    uint32_t calls;      /* non-synchronous calls seen (within the limit or not) */
    uint32_t over_limit; /* refused for passing the limit */
    uint8_t *asked;      /* by position: call() saw it */
    size_t asked_cap;
    char broken[512];
};

struct codemode_host *codemode_host_new(const struct codemode_host_config *cfg)
{
    struct codemode_host *h = calloc(1, sizeof *h);
    if (h != NULL)
        h->cfg = *cfg;
    return h;
}

void codemode_host_free(struct codemode_host *h)
{
    if (h == NULL)
        return;
    free(h->asked);
    free(h);
}

uint32_t codemode_host_tool_calls(const struct codemode_host *h)
{
    return h->calls - h->over_limit;
}

uint32_t codemode_host_over_limit(const struct codemode_host *h)
{
    return h->over_limit;
}

const char *codemode_host_broken(const struct codemode_host *h)
{
    return h->broken[0] != '\0' ? h->broken : NULL;
}

static int mark_asked(struct codemode_host *h, uint32_t position)
{
    size_t byte = position / 8;
    if (byte >= h->asked_cap) {
        size_t cap = h->asked_cap == 0 ? 64 : h->asked_cap;
        while (cap <= byte)
            cap *= 2;
        uint8_t *grown = realloc(h->asked, cap);
        if (grown == NULL)
            return -1;
        memset(grown + h->asked_cap, 0, cap - h->asked_cap);
        h->asked = grown;
        h->asked_cap = cap;
    }
    h->asked[byte] |= (uint8_t)(1u << (position % 8));
    return 0;
}

static bool was_asked(const struct codemode_host *h, uint32_t position)
{
    size_t byte = position / 8;
    return byte < h->asked_cap && (h->asked[byte] & (1u << (position % 8))) != 0;
}

/* ---- synchronous calls -------------------------------------------------------------- */

/* A row a codemode run answers by its effect (now, random), or NULL. */
static const struct host_kind *answered(const char *kind)
{
    const struct host_kind *k = host_kind_find(kind);
    return k != NULL && k->codemode == HOST_KIND_CODEMODE_ANSWER ? k : NULL;
}

static int answer(const struct host_kind *k, const struct host_call *call,
                  struct host_settlement *out)
{
    struct host_kind_site site;
    memset(&site, 0, sizeof site); /* the answers read nothing of a run */
    struct host_kind_call c = {.kind = k, .name = call->kind, .position = call->position};
    return k->effect(&site, &c, out);
}

/* ---- recording ---------------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static void set_broken(struct codemode_host *h,
                                                              const char *fmt, ...)
{
    if (h->broken[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->broken, sizeof h->broken, fmt, ap);
    va_end(ap);
}

/* One transaction around fn; on failure the host stops. 0 or -1. unsynced: the commit
 * does not wait for the disk (a query tool's rows: the run's end, which does, takes
 * them with it; docs/flows.md, "Durability"). */
static int in_txn_as(struct codemode_host *h, bool unsynced,
                     int (*fn)(struct codemode_host *h, const void *arg, char *err, size_t cap),
                     const void *arg)
{
    char err[512] = "";
    struct store *s = h->cfg.store;
    if ((unsynced ? store_begin_txn_unsynced(s, err, sizeof err)
                  : store_begin_txn(s, err, sizeof err)) != 0 ||
        store_end_txn(s, fn(h, arg, err, sizeof err), err, sizeof err) != 0) {
        set_broken(h, "%s", err[0] != '\0' ? err : "store: cannot record a call");
        return -1;
    }
    return 0;
}

static int in_txn(struct codemode_host *h,
                  int (*fn)(struct codemode_host *h, const void *arg, char *err, size_t cap),
                  const void *arg)
{
    return in_txn_as(h, false, fn, arg);
}

struct record_args {
    const struct codemode_call_entry *call;
    const char *reason;
};

static int record_fn(struct codemode_host *h, const void *arg, char *err, size_t cap)
{
    const struct record_args *a = arg;
    return codemode_call_record(h->cfg.store, h->cfg.run_id, a->call, a->reason, err, cap);
}

static int settle_fn(struct codemode_host *h, const void *arg, char *err, size_t cap)
{
    const struct codemode_call_entry *c = arg;
    return codemode_call_settle(h->cfg.store, h->cfg.run_id, c->position, c->settlement,
                                c->value, err, cap);
}

static int over_limit_fn(struct codemode_host *h, const void *arg, char *err, size_t cap)
{
    const struct host_call *call = arg;
    char reason[128];
    snprintf(reason, sizeof reason, "over the run's limit of %u tool calls (later ones are"
             " counted in the run)", h->cfg.max_tool_calls);
    return codemode_audit(h->cfg.store, h->cfg.run_id, call->position, call->kind, false, reason,
                          err, cap);
}

/* ---- deciding and performing -------------------------------------------------------- */

/* What a call is after the checks: the tool, its input, or why it is refused. */
struct verdict {
    const struct tool *tool;
    json_t *input; /* in the call's arguments, or NULL (omitted: null) */
    bool refused;
    char code[32];
    char reason[TOOL_SCHEMA_ERROR_CAP + 160];
};

__attribute__((format(printf, 3, 4))) static void refuse(struct verdict *v, const char *code,
                                                         const char *fmt, ...)
{
    v->refused = true;
    snprintf(v->code, sizeof v->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->reason, sizeof v->reason, fmt, ap);
    va_end(ap);
}

static void judge(const struct codemode_host *h, const char *kind, const json_t *args,
                  struct verdict *v)
{
    memset(v, 0, sizeof *v);
    char shown[FIELD_SHOW_CAP];
    const struct host_kind *row = host_kind_find(kind);
    if (row == NULL || row->codemode != HOST_KIND_CODEMODE_TOOL) {
        refuse(v, HOST_CODE_DENIED, "%s is not part of the codemode API (tools.call only)",
               field_show(kind, false, shown, sizeof shown));
        return;
    }
    const json_t *name = json_array_get(args, 0);
    if (!json_is_array(args) || json_array_size(args) > 2 || !json_is_string(name)) {
        refuse(v, HOST_CODE_INVALID_ARGUMENTS, "tools.call(name, input): name must be a string");
        return;
    }
    const char *text = json_string_value(name);
    v->tool = strlen(text) == json_string_length(name) ? tools_catalog_find(h->cfg.tools, text)
                                                       : NULL;
    if (v->tool == NULL) {
        refuse(v, HOST_CODE_DENIED, "no tool %s in the operator's catalog (%s)",
               field_show(text, true, shown, sizeof shown), TOOLS_CATALOG_FILE);
        return;
    }
    v->input = json_array_size(args) == 2 ? json_array_get(args, 1) : NULL;
    json_t *null_input = json_null(); /* an omitted input is null (a static singleton) */
    char why[TOOL_SCHEMA_ERROR_CAP];
    if (!tool_schema_validate(v->tool->input, v->input != NULL ? v->input : null_input, why,
                              sizeof why))
        refuse(v, HOST_CODE_INVALID_ARGUMENTS, "tool %s: %s", v->tool->name, why);
}

/* Runs the tool's module op; fills *out. */
static int perform(const struct codemode_host *h, const struct verdict *v, const char *key,
                   struct host_settlement *out)
{
    const struct ops_module *found = NULL;
    const struct ops_op *op = ops_catalog_find(h->cfg.modules, v->tool->module, v->tool->op,
                                               &found);
    if (op == NULL || found == NULL) /* the catalogs were checked together at load */
        return host_reject(out, HOST_CODE_DENIED, "tool %s: module op %s.%s is not in %s",
                           v->tool->name, v->tool->module, v->tool->op, OPS_CATALOG_FILE);
    /* A codemode run ends with its activation: nothing could wait for a completion. */
    if (op->long_running)
        return host_reject(out, HOST_CODE_DENIED, "tool %s: %s.%s is a long-running op; only a"
                           " flow run can wait for one", v->tool->name, v->tool->module,
                           v->tool->op);
    struct ops_module module = *found;
    if (h->cfg.deadline_at_ms > 0) {
        long long left = h->cfg.deadline_at_ms - monotonic_ms();
        if (left <= 0)
            return host_reject(out, HOST_CODE_TIMEOUT, "tool %s: the run's wall deadline has"
                               " passed", v->tool->name);
        if (left < (long long)module.timeout_ms)
            module.timeout_ms = (uint32_t)left;
    }
    char *text = json_dumps(v->input != NULL ? v->input : json_null(),
                            JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL)
        return -1;
    int rc = ops_module_invoke(&module, v->tool->op, text, key, NULL, out);
    free(text);
    return rc;
}

static int fill_call(const struct host_call *call, const struct verdict *v,
                     struct codemode_call_entry *c)
{
    memset(c, 0, sizeof *c);
    c->position = call->position;
    c->kind = call->kind;
    c->args = call->args;
    c->args_len = call->args_len;
    if (v->tool != NULL) {
        c->tool = v->tool->name;
        c->module = v->tool->module;
        c->op = v->tool->op;
        c->has_class = true;
        c->mutation = v->tool->mutation;
    }
    c->allowed = !v->refused;
    return journal_digest(call->args, call->args_len, c->digest);
}

/* A refusal: its row, settled, and its audit row in one transaction. */
static int record_refusal(struct codemode_host *h, const struct host_call *call,
                          const struct verdict *v, struct host_settlement *out)
{
    struct codemode_call_entry c;
    if (fill_call(call, v, &c) != 0 || host_reject(out, v->code, "%s", v->reason) != 0)
        return -1;
    c.settled = true;
    c.settlement = out->settlement;
    c.value = out->value;
    struct record_args a = {&c, v->reason};
    if (in_txn(h, record_fn, &a) != 0) {
        host_settlement_free(out);
        return host_reject(out, HOST_CODE_IO_ERROR, "%s", h->broken);
    }
    return 0;
}

static int tool_call(struct codemode_host *h, const struct host_call *call,
                     struct host_settlement *out)
{
    /* A string may hold U+0000: the schema counts it by length, and it reaches the
     * module escaped. What jansson cannot hold (a NUL in an object key) is refused
     * with jansson's own reason. */
    json_error_t je;
    json_t *args = json_js_loadb(call->args, call->args_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    struct verdict v;
    if (args == NULL) {
        memset(&v, 0, sizeof v);
        refuse(&v, HOST_CODE_INVALID_ARGUMENTS, "%s: the arguments are not JSON this host"
               " reads: %.160s", call->kind, je.text);
    } else {
        judge(h, call->kind, args, &v);
    }
    int rc;
    if (v.refused) {
        rc = record_refusal(h, call, &v, out);
    } else {
        bool query = !v.tool->mutation; /* its rows need not wait for the disk */
        struct codemode_call_entry c;
        struct record_args a = {&c, NULL};
        if (fill_call(call, &v, &c) != 0 || codemode_call_key(h->cfg.run_id, call->position,
                                                               c.key) != 0) {
            rc = -1;
        } else if (in_txn_as(h, query, record_fn, &a) != 0) {
            rc = host_reject(out, HOST_CODE_IO_ERROR, "%s", h->broken);
        } else if ((rc = perform(h, &v, c.key, out)) == 0) {
            c.settlement = out->settlement;
            c.value = out->value;
            if (in_txn_as(h, query, settle_fn, &c) != 0) {
                /* The tool ran; the row stays pending for the record. */
                host_settlement_free(out);
                rc = host_reject(out, HOST_CODE_IO_ERROR, "%s", h->broken);
            }
        }
    }
    json_decref(args);
    return rc;
}

static int codemode_host_call(void *self, const struct host_call *call,
                              struct host_settlement *out, long long *delay_ms)
{
    struct codemode_host *h = self;
    *delay_ms = 0;
    const struct host_kind *k = answered(call->kind);
    if (k != NULL)
        return answer(k, call, out);
    if (mark_asked(h, call->position) != 0)
        return -1;
    if (h->broken[0] != '\0')
        return host_reject(out, HOST_CODE_IO_ERROR, "%s", h->broken);
    h->calls++;
    if (h->calls > h->cfg.max_tool_calls) {
        h->over_limit++;
        if (h->over_limit == 1 && in_txn(h, over_limit_fn, call) != 0)
            return host_reject(out, HOST_CODE_IO_ERROR, "%s", h->broken);
        return host_reject(out, HOST_CODE_DENIED, "more than %u tool calls in one codemode run",
                           h->cfg.max_tool_calls);
    }
    return tool_call(h, call, out);
}

/* A call the driver answered without asking (its arguments over max_value_bytes): it
 * counts, and is recorded as refused with what the script saw. */
static void codemode_host_delivered(void *self, const struct host_call *call,
                                    const struct host_settlement *seen, uint32_t delivery_order)
{
    (void)delivery_order;
    struct codemode_host *h = self;
    if (answered(call->kind) != NULL || was_asked(h, call->position) || h->broken[0] != '\0')
        return;
    if (mark_asked(h, call->position) != 0) {
        set_broken(h, "out of memory recording a call");
        return;
    }
    h->calls++;
    if (h->calls > h->cfg.max_tool_calls) {
        h->over_limit++;
        return;
    }
    struct verdict v;
    memset(&v, 0, sizeof v);
    v.refused = true;
    struct codemode_call_entry c;
    if (fill_call(call, &v, &c) != 0) {
        set_broken(h, "SHA-256: libcrypto failed");
        return;
    }
    c.settled = true;
    c.settlement = seen->settlement;
    c.value = seen->value;
    struct record_args a = {&c, "refused by the activation before the host was asked"};
    (void)in_txn(h, record_fn, &a);
}

static const struct host_ops CODEMODE_HOST_OPS = {
    .call = codemode_host_call,
    .delivered = codemode_host_delivered,
    .is_sync = host_kinds_is_sync_op,
};

struct host codemode_host_interface(struct codemode_host *h)
{
    struct host iface = {&CODEMODE_HOST_OPS, h};
    return iface;
}
