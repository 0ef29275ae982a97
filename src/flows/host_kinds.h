/* Every host-call kind the parent serves, one row each (host_kinds.c holds the table).
 *
 * A row says what a kind is and how each host treats it:
 *   name      the HostCall kind ("kv.get", "git.revParse")
 *   sync      the engine blocks on it (now, random): answered at once, whatever delay
 *   cls       its journal class before its arguments are looked at; the grant check
 *             may refine it (ops.call by the catalog, sink.emit to a sink the catalog
 *             makes a module op by that op, net.fetch by method and grant)
 *   parse     reads the arguments ONCE into the call (NULL: nothing to read before the
 *             effect); a malformed call is refused "invalid_arguments"
 *   grant     the grant check against the approved manifest (and the operator's
 *             catalog) on the parsed call, before anything is journaled (NULL: none)
 *   effect    performs the call from what parse read and grant decided
 *   check     a dry run's: every check the effect makes, changing nothing (kv.set,
 *             kv.delete, fs.write; NULL for the others)
 *   dry_run   how a dry run treats it (enum host_kind_dry_run)
 *   codemode  how a codemode run treats it (enum host_kind_codemode)
 *   audit_after  its effect can still refuse "denied" (fs's guard against a path
 *             swapped between the decision and the open): a run audits it after the
 *             effect, by the outcome, instead of before, and a resend the decision
 *             refuses is answered with that refusal (the path changed since the crash)
 *
 * A run's host (flow_host.c) decides every call with host_kind_decide and performs it
 * with host_kind_perform, journaling around it; a dry run (dry_run_host.c) and a
 * codemode run (codemode_host.c) read the same rows. The worker's list of the script's
 * API (worker/host_apis.c) names the same kinds with the same sync flag
 * (tests/t_host_kinds.c compares them). Adding a kind is one row here and its
 * functions in host_kinds.c (docs/architecture.md, "Host-call kinds"). */
#ifndef BASAL_FLOWS_HOST_KINDS_H
#define BASAL_FLOWS_HOST_KINDS_H

#include "flows/manifest.h"
#include "host/fs_builtin.h"
#include "host/git_builtin.h"
#include "host/host.h"
#include "host/net_fetch.h"
#include "host/ops_module.h"
#include "store/journal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOST_CODE_UNSUPPORTED "unsupported"

enum host_kind_dry_run {
    HOST_KIND_DRY_PERFORM = 0, /* performed as a run performs it (now, random, kv.get,
                                  fs reads; kv in a read transaction rolled back) */
    HOST_KIND_DRY_CHECK,       /* every check made, then captured (kv.set, kv.delete,
                                  fs.write): a call a run would refuse is refused */
    HOST_KIND_DRY_CAPTURE,     /* never performed: a fixture's answer or HostError dry_run */
    HOST_KIND_DRY_QUERY,       /* performed with --allow-queries when the grant decided
                                  it is a query (ops.call, net.fetch, git.*), else captured */
    HOST_KIND_DRY_UNSUPPORTED, /* not a flow's kind: refused as a run refuses it */
};

enum host_kind_codemode {
    HOST_KIND_CODEMODE_REFUSED = 0, /* not part of the codemode API: "denied" */
    HOST_KIND_CODEMODE_ANSWER,      /* answered by the row's effect (now, random) */
    HOST_KIND_CODEMODE_TOOL,        /* a tool of the operator's catalog (tool.call) */
};

/* What a call is decided and performed against. A dry run leaves store-less fields
 * NULL where its rows need none; a codemode run needs none for its answers. */
struct host_kind_site {
    const struct manifest *manifest;
    const struct ops_catalog *catalog;
    const char *home; /* the data home (fs, sinks) */
    struct store *store; /* kv, in the caller's transaction */
    const char *flow_id;
    int64_t run_id;
    long long deadline_at_ms; /* CLOCK_MONOTONIC ms of the activation's deadline (0: none) */
    struct net_fetch_session **net; /* made at the first net.fetch; the caller frees it */
};

struct host_kind;

/* One call: its arguments parsed once, the decision, and what the effect is told. */
struct host_kind_call {
    const struct host_kind *kind; /* NULL: no kind of this build ("unsupported") */
    const char *name;             /* the call's kind as the worker sent it */
    const void *args;             /* its argument array (jansson json_t *), or NULL */
    const char *args_text;        /* the arguments as sent (kv.set stores them) */
    size_t args_len;
    uint32_t position;
    /* the decision */
    enum journal_class cls;
    bool refused; /* denied, unsupported, invalid_arguments: answered without performing */
    char code[32];
    char reason[512];
    /* what parse read and grant decided */
    const struct ops_module *module; /* ops.call, sink.emit to a module sink: the
                                        catalog's module and op (else NULL) */
    const char *op;
    bool long_running;             /* ops.call of an op the catalog marks long_running */
    uint32_t completion_timeout_s; /* its completion_timeout_s */
    const char *completion_event;  /* its completion_event, or NULL */
    const char *sink; /* sink.emit: the granted sink */
    struct net_fetch_request *net;
    struct git_request *git;
    struct fs_request *fs;
    /* the effect's inputs and outputs */
    const char *key;   /* the idempotency key (NULL: none, a dry run's fs.write) */
    bool resend;       /* performed again after a crash */
    const struct ops_process_hook *module_hook; /* told of an ops.call's process (or NULL) */
    bool cut_by_deadline; /* out: a module cut short by the activation's deadline timed out */
    char err[512];        /* out: why the effect returned -1 (a store error), or "" */
};

struct host_kind { /* the columns, ordered for size (host_kinds.c lists them by ROW) */
    const char *name;
    void (*parse)(const struct host_kind_site *site, struct host_kind_call *call);
    void (*grant)(const struct host_kind_site *site, struct host_kind_call *call);
    int (*effect)(const struct host_kind_site *site, struct host_kind_call *call,
                  struct host_settlement *out);
    int (*check)(const struct host_kind_site *site, struct host_kind_call *call,
                 struct host_settlement *out, bool *would_change, char *err, size_t err_cap);
    enum journal_class cls;
    enum host_kind_dry_run dry_run;
    enum host_kind_codemode codemode;
    bool sync;
    bool audit_after;
};

/* The row of kind, or NULL. */
const struct host_kind *host_kind_find(const char *kind);

/* Every row, in the table's order (*count of them). */
const struct host_kind *host_kinds_all(size_t *count);

/* The class of kind before its arguments are looked at (query for one without a
 * row, as a run journals its refusal). */
enum journal_class host_kind_class(const char *kind);

/* True for the kinds the engine waits for synchronously (a row marked sync). */
bool host_kinds_is_sync(const char *kind);
/* host_kinds_is_sync in the shape of struct host_ops's is_sync (self unused): the flow,
 * dry-run and codemode hosts all answer from the table. */
bool host_kinds_is_sync_op(void *self, const char *kind);

/* Decides a new call: fills call->kind, cls and the refusal, after running the row's
 * parse and grant (once; what they read stays in call for the effect). call's name,
 * args (NULL: not a JSON array, refused "invalid_arguments" before any grant),
 * args_text, args_len and position must be set; the rest is cleared here. Nothing
 * is performed or stored. Free with host_kind_call_free. */
void host_kind_decide(const struct host_kind_site *site, struct host_kind_call *call);

/* Performs a decided, granted call through its row's effect (a refused call or one
 * without a row is refused with its decision). Fills *out; 0, HOST_CALL_LONG_RUNNING
 * (a long-running op's module accepted it: *out untouched), or -1 if not even a
 * rejection could be made (out of memory). */
int host_kind_perform(const struct host_kind_site *site, struct host_kind_call *call,
                      struct host_settlement *out);

/* Where a decided call goes that its arguments do not name, as a journal row keeps it
 * (store/journal.h, destination) into out: "sink file" or "sink module M op O" for a
 * sink.emit (the catalog's "sinks" decides), "" for every other kind (ops.call's module
 * and op, net.fetch's URL, fs's path are in its arguments). */
void host_kind_destination(const struct host_kind_call *call, char *out, size_t cap);

/* Frees what parse and grant kept (the parsed request of net.fetch and git.*). */
void host_kind_call_free(struct host_kind_call *call);

/* The manifest's net.fetch grants as host/net_fetch.h takes them (items has room for
 * MANIFEST_MAX_LIST), and its git.read grants as host/git_builtin.h takes them. */
struct net_grants host_kinds_net_grants(const struct manifest *m, struct net_grant *items);
struct git_grants host_kinds_git_grants(const struct manifest *m);

#endif
