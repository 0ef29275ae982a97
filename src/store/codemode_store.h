/* Codemode runs on the store (docs/codemode.md): one row per `ck-basal codemode run`
 * with the script's exact bytes, its input, its end and its console, one row per
 * tools.call within the run's limit, and an audit row per decision (schema version 2,
 * store/store_schema.c).
 *
 * A codemode run is never resumed: it is running while its process drives it, then
 * succeeded or failed. A run left running by a process that no longer exists (the
 * owner string of store/runs.h) is ended failed by codemode_runs_abandon, which
 * `codemode run` calls before it starts one; a call row it left pending stays pending
 * for the record (the tool may or may not have run).
 *
 * Writers run inside the caller's transaction unless they say otherwise. Operators
 * address a codemode run as "c<id>" (CODEMODE_RUN_PREFIX). None of these prints. */
#ifndef BASAL_STORE_CODEMODE_STORE_H
#define BASAL_STORE_CODEMODE_STORE_H

#include "proto/message.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

#define CODEMODE_RUN_PREFIX 'c'
#define CODEMODE_SCRIPT_NAME_MAX 4096u

enum codemode_run_state {
    CODEMODE_RUNNING = 0,
    CODEMODE_SUCCEEDED,
    CODEMODE_FAILED,
};

const char *codemode_run_state_name(enum codemode_run_state state);

/* What a run starts with. */
struct codemode_run_start {
    const char *script_name; /* the path as given, or "-" for stdin */
    const char *script;
    size_t script_len;
    const char *input; /* compact JSON text */
};

/* Inserts a running run owned by this process, in its own transaction. 0 with *id, or
 * -1 with the reason. */
int codemode_run_begin(struct store *s, const struct codemode_run_start *start, int64_t *id,
                       char *err, size_t err_cap);

/* How a run ended. */
struct codemode_run_end {
    enum codemode_run_state state;
    const char *outcome;  /* activation_status_name */
    const char *result;   /* JSON text, or NULL */
    const char *error;    /* one line, or NULL */
    const char *console;  /* or NULL */
    bool console_truncated;
    uint32_t tool_calls;       /* tools.call calls within the limit */
    uint32_t over_limit_calls; /* refused for passing it (no row each) */
    long worker_pid;
    long long wall_ms;
};

/* Ends run id (it must be running), in its own transaction. 0 or -1. */
int codemode_run_finish(struct store *s, int64_t id, const struct codemode_run_end *end,
                        char *err, size_t err_cap);

/* Ends failed every running run whose owner no longer exists, in one transaction;
 * *count (may be NULL) gets how many. 0 or -1. */
int codemode_runs_abandon(struct store *s, int *count, char *err, size_t err_cap);

/* One tools.call as recorded. */
struct codemode_call {
    uint32_t position;
    char *kind;
    char *tool;   /* NULL when the call named no tool of the catalog */
    char *module; /* NULL unless a tool was found */
    char *op;
    bool has_class;
    bool mutation;
    char *args; /* the exact argument bytes (JSON text) */
    size_t args_len;
    char digest[65];
    char key[65]; /* "" when none */
    bool allowed;
    bool settled;
    enum proto_settlement settlement;
    char *value; /* JSON text or NULL */
};

void codemode_call_free(struct codemode_call *c);

/* A call to record: the same fields, borrowed. */
struct codemode_call_entry {
    uint32_t position;
    const char *kind;
    const char *tool, *module, *op; /* NULL when no tool was found */
    bool has_class;
    bool mutation;
    const char *args;
    size_t args_len;
    char digest[65];
    char key[65];
    bool allowed;
    bool settled;
    enum proto_settlement settlement;
    const char *value;
};

/* Inside the caller's transaction: the call row (pending when e->settled is false,
 * else with its outcome) and the audit row of its decision (reason may be NULL). */
int codemode_call_record(struct store *s, int64_t run_id, const struct codemode_call_entry *e,
                         const char *reason, char *err, size_t err_cap);

/* Inside the caller's transaction: the outcome of a pending call. */
int codemode_call_settle(struct store *s, int64_t run_id, uint32_t position,
                         enum proto_settlement settlement, const char *value, char *err,
                         size_t err_cap);

/* Inside the caller's transaction: one audit row for the run without a call row (the
 * first call over the run's limit). */
int codemode_audit(struct store *s, int64_t run_id, int64_t position, const char *kind,
                   bool allowed, const char *reason, char *err, size_t err_cap);

/* SHA-256 hex of a domain tag, the run id and the position: the idempotency key a
 * tool's module gets (distinct from every flow run's). 0 or -1. */
int codemode_call_key(int64_t run_id, uint32_t position, char out[65]);

/* A run as read back. */
struct codemode_run_row {
    int64_t id;
    char *script_name;
    char script_sha256[65];
    char *input;
    enum codemode_run_state state;
    char owner[65];
    char *outcome;
    char *result;
    char *error;
    char *console;
    bool console_truncated;
    int64_t tool_calls, over_limit_calls;
    int64_t worker_pid; /* 0 if none */
    int64_t wall_ms;    /* -1 if not ended */
    int64_t created_at, updated_at;
};

void codemode_run_row_free(struct codemode_run_row *r);

/* 1 (found), 0 (no such run), -1 (store error). */
int codemode_run_get(struct store *s, int64_t id, struct codemode_run_row *out, char *err,
                     size_t err_cap);

/* Every codemode run by id. *rows malloc'd: free each, then the array. 0 or -1. */
int codemode_runs_list(struct store *s, struct codemode_run_row **rows, size_t *count,
                       char *err, size_t err_cap);

/* The calls of run id by position. *rows malloc'd: free each, then the array. 0 or -1. */
int codemode_calls_load(struct store *s, int64_t id, struct codemode_call **rows,
                        size_t *count, char *err, size_t err_cap);

/* "c12" into out; parse: true with *id for "c" and 1-18 digits (> 0). */
void codemode_run_ref(int64_t id, char out[24]);
bool codemode_run_ref_parse(const char *text, int64_t *id);

#endif
