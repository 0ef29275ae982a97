/* Operator-registered modules for ops.call(module, op, args) (basal.md section 7).
 *
 * The catalog is one JSON file in the data home, modules.json, written by the
 * operator (0600 or 0644, owned by the operator; a group- or world-writable catalog
 * is refused):
 *
 *   {"modules": {
 *      "tickets": {
 *        "program": "/usr/local/lib/basal/tickets",   absolute path of an executable
 *        "args": ["--profile", "prod"],               optional, at most 16 strings
 *        "timeout_ms": 10000,                         optional, 1..600000 (10000)
 *        "max_reply_bytes": 1048576,                  optional, 1..8 MiB (1 MiB)
 *        "ops": {
 *          "lookup": {"kind": "query"},
 *          "create": {"kind": "mutate", "idempotent": true},
 *          "notify": {"kind": "mutate"},
 *          "approve": {"kind": "mutate", "idempotent": true, "long_running": true,
 *                      "completion_timeout_s": 604800, "completion_event": "decided"}
 *        }}}}
 *
 * A module may have "endpoint": a loopback HTTP endpoint (host/module_endpoint.h)
 * instead of "program" (exactly one of them; "args" only with "program"): each call
 * is then one POST of the request below, whose 2xx body is read as the reply is.
 *
 * A catalog may also say which sinks are module ops instead of JSON-lines files
 * (host/sink.h): "sinks": {"N": {"module": M, "op": O}} (both fields required, M.O an
 * op of "modules" whose kind is "mutate"; anything else refuses the whole catalog at
 * load). sink.emit(N, item) then calls M.O as ops.call(M, O, item) would, with the
 * emit's idempotency key; a sink not listed stays the file.
 *
 * Module and op names follow the manifest's name form (object_name_valid in
 * flows/manifest.h); unknown fields and duplicate keys are refused like the
 * manifest's; "idempotent" (default false) says the op honours the idempotency key.
 * "long_running" (default false) says the op may take longer than any call may wait
 * (days: a human's approval, a build): its module may answer {"accepted": true} and
 * complete the call later, by its idempotency key (`ck-basal flow complete KEY`,
 * flows/long_running.h), within "completion_timeout_s" (1..OPS_COMPLETION_TIMEOUT_MAX_S,
 * default 7 days; only on a long-running op), after which the call is rejected
 * "timeout"; "completion_event" (optional, only on a long-running op) names an event of
 * the module whose id is the call's key and whose payload is the reply, which completes
 * it as well (serve/event_delivery.h). A sink cannot be a long-running op.
 * A missing catalog file is an empty catalog.
 *
 * Invocation: the program runs with argv = [program, args...], an environment of
 * only PATH=/usr/bin:/bin, working directory "/", stdin a pipe carrying one JSON
 * object, stdout a pipe, stderr kept (its last 512 bytes go into error messages),
 * every other descriptor closed, in its own process group, as the init (pid 1) of a
 * PID namespace of its own and with SIGKILL as its parent-death signal:
 *   - when the program ends, by itself or killed, the kernel kills everything it
 *     started (whatever group or session a descendant moved to) before the program
 *     counts as ended: nothing a module starts outlives it;
 *   - when ck-basal dies, the program is killed, and with it its namespace.
 * As root the namespace is made directly; otherwise inside a new user namespace that
 * maps only the caller's uid and gid (the program sees itself as the same user; it
 * cannot change its groups). Where the kernel allows neither (no CAP_SYS_ADMIN and no
 * unprivileged user namespaces) the call is rejected "module_error" and nothing runs.
 * A program that is set-user-ID or has file capabilities loses the parent-death
 * signal at exec, and a program may clear it itself: such a program can outlive
 * ck-basal, which is why its process is recorded (the hook below) and recover and
 * flow reconcile wait for it. The request:
 *
 *   {"module": M, "op": O, "args": <the script's args>, "idempotency_key": K}
 * and, for a long-running op, "long_running": true.
 *
 * The reply, the whole of stdout, one JSON object:
 *   {"result": <any JSON>}                          fulfilled with that value
 *   {"error": {"code": C, "message": S}}            rejected with code C (1-32 of
 *                                                   [a-z0-9_]) and message S
 *   {"accepted": true}                              a long-running op only: the module
 *                                                   has the call and completes it later
 * Anything else (exit status not 0, not one of those objects, invalid JSON) is
 * rejected "module_error"; more than max_reply_bytes is "too_large"; no reply within
 * timeout_ms kills the program (and so its namespace) and is "timeout". Once the
 * program has exited, its reply is what arrived within 200 ms more; a reaped program
 * is never signalled. The caller's own calls are not interrupted: invoke returns only
 * after the program was reaped. */
#ifndef BASAL_HOST_OPS_MODULE_H
#define BASAL_HOST_OPS_MODULE_H

#include "base/process_identity.h"
#include "host/host.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OPS_CATALOG_FILE "modules.json"
#define OPS_CATALOG_MAX_BYTES (256u << 10)
#define OPS_TIMEOUT_DEFAULT_MS 10000u
#define OPS_TIMEOUT_MAX_MS 600000u
#define OPS_REPLY_DEFAULT_BYTES (1u << 20)
#define OPS_REPLY_MAX_BYTES (8u << 20)
#define OPS_MAX_PROGRAM_ARGS 16u
#define HOST_CODE_MODULE_ERROR "module_error"
#define OPS_COMPLETION_TIMEOUT_DEFAULT_S 604800u  /* 7 days */
#define OPS_COMPLETION_TIMEOUT_MAX_S 2592000u     /* 30 days */
/* ops_module_invoke's answer when a long-running op's module accepted the call. */
#define OPS_MODULE_ACCEPTED HOST_CALL_LONG_RUNNING

struct ops_op {
    char *name;
    bool mutate;     /* "kind": "mutate" (else a query) */
    bool idempotent; /* honours the idempotency key */
    bool long_running; /* may accept a call and complete it later */
    uint32_t completion_timeout_s; /* long_running: how long a completion may take */
    char *completion_event; /* long_running: the module's event that completes a call, or
                               NULL */
};

struct ops_module {
    char *name;
    char *program;  /* exactly one of program and endpoint; the other is NULL */
    char *endpoint; /* a loopback HTTP endpoint (host/module_endpoint.h) */
    char **args; /* args[arg_count] is NULL */
    size_t arg_count;
    uint32_t timeout_ms;
    uint32_t max_reply_bytes;
    struct ops_op *ops;
    size_t op_count;
};

struct ops_sink {
    char *name;   /* the sink's name, as manifests grant it */
    char *module; /* a module of the catalog */
    char *op;     /* one of its ops, always a mutation */
};

struct ops_catalog {
    struct ops_module *modules;
    size_t count;
    struct ops_sink *sinks; /* the sinks that are module ops */
    size_t sink_count;
};

/* Loads home/modules.json into *out (zeroed and empty if the file does not exist).
 * Returns 0, or -1 with a one-line reason in err naming the field path
 * ("modules.json: modules.tickets.ops.create.kind: must be \"query\" or \"mutate\"")
 * and *out zeroed. */
int ops_catalog_load(const char *home, struct ops_catalog *out, char *err, size_t err_cap);
void ops_catalog_free(struct ops_catalog *c);

/* The op, or NULL. *module_out (if not NULL) gets its module. */
const struct ops_op *ops_catalog_find(const struct ops_catalog *c, const char *module,
                                      const char *op, const struct ops_module **module_out);

/* The module op that sink name is (NULL: the sink is its JSON-lines file). *module_out
 * (if not NULL) gets its module. */
const struct ops_op *ops_catalog_sink(const struct ops_catalog *c, const char *name,
                                      const struct ops_module **module_out);

/* Told who the program's process is before the program runs. */
struct ops_process_hook {
    /* The process exists and waits (nothing of the program has run): record it.
     * Return 0 to let it run, or -1 with a one-line reason in err to end it unrun
     * (the call is then rejected "module_error" with that reason). */
    int (*started)(void *ctx, const struct process_identity *process, char *err,
                   size_t err_cap);
    void *ctx;
};

/* Runs op of module m with args_json (the script's args value as JSON text) and the
 * idempotency key; fills *out as described above. hook may be NULL. Returns 0,
 * OPS_MODULE_ACCEPTED (a long-running op's module accepted the call; *out untouched),
 * or -1 only when not even a rejection could be made (out of memory). */
int ops_module_invoke(const struct ops_module *m, const char *op, const char *args_json,
                      const char *idempotency_key, const struct ops_process_hook *hook,
                      struct host_settlement *out);

/* A long-running call's completion, given as the module's reply would have been
 * ({"result": ...} or {"error": {"code", "message"}}), into *out exactly as that reply
 * settles. Returns 0, or -1 with a one-line reason in why (not JSON, another form, a bad
 * error code) and *out untouched. */
int ops_module_completion(const char *reply, size_t reply_len, struct host_settlement *out,
                          char *why, size_t why_cap);

#endif
