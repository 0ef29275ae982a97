/* codemode_run_execute: see flows/codemode_run.h. */
#include "flows/codemode_run.h"

#include "base/clock.h"
#include "base/error_line.h"
#include "flows/codemode_host.h"
#include "host/ops_module.h"
#include "host/tools_catalog.h"
#include "store/codemode_store.h"
#include "flows/script_check.h"
#include "supervisor/activation.h"
#include "supervisor/pool.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the run leaves for the report and the store. */
struct run_end {
    struct codemode_run_end row;
    char error[1024];
};

static void decide_end(const struct activation_outcome *out, const struct codemode_host *h,
                       struct run_end *end)
{
    memset(end, 0, sizeof *end);
    const char *broken = codemode_host_broken(h);
    if (broken != NULL)
        snprintf(end->error, sizeof end->error, "%s", broken);
    else if (out->status != ACTIVATION_COMPLETED)
        activation_describe(out, end->error, sizeof end->error);
    bool ok = out->status == ACTIVATION_COMPLETED && broken == NULL;
    end->row.state = ok ? CODEMODE_SUCCEEDED : CODEMODE_FAILED;
    end->row.outcome = activation_status_name(out->status);
    end->row.result = ok ? out->value : NULL;
    end->row.error = end->error[0] != '\0' ? end->error : NULL;
    end->row.console = out->console;
    end->row.console_truncated = out->console_truncated;
    end->row.tool_calls = codemode_host_tool_calls(h);
    end->row.over_limit_calls = codemode_host_over_limit(h);
    end->row.worker_pid = (long)out->pid;
    end->row.wall_ms = out->wall_ms;
}

static json_t *json_value_of(const char *text)
{
    if (text == NULL)
        return json_null();
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    return v != NULL ? v : json_string(text);
}

static json_t *report_of(int64_t id, const struct run_end *end,
                         const struct activation_outcome *out)
{
    char ref[24];
    codemode_run_ref(id, ref);
    const struct codemode_run_end *r = &end->row;
    json_t *o = json_object();
    json_object_set_new(o, "run", json_string(ref));
    json_object_set_new(o, "id", json_integer(id));
    json_object_set_new(o, "state", json_string(codemode_run_state_name(r->state)));
    json_object_set_new(o, "outcome", json_string(r->outcome));
    json_object_set_new(o, "result", json_value_of(r->result));
    json_object_set_new(o, "error", r->error != NULL ? json_string(r->error) : json_null());
    if (out->status == ACTIVATION_FAILED && out->detail != NULL)
        json_object_set_new(o, "detail", json_string(out->detail));
    json_object_set_new(o, "console", json_string(r->console != NULL ? r->console : ""));
    json_object_set_new(o, "console_truncated", json_boolean(r->console_truncated));
    json_object_set_new(o, "tool_calls", json_integer(r->tool_calls));
    json_object_set_new(o, "over_limit_calls", json_integer(r->over_limit_calls));
    json_object_set_new(o, "wall_ms", json_integer(r->wall_ms));
    json_t *report = json_object();
    json_object_set_new(report, "run", o);
    json_object_set_new(report, "result_text",
                        r->result != NULL ? json_string(r->result) : json_null());
    return report;
}

/* Drives run id to its end and stores it. */
/* The pool's one worker: the one that compiled the script, kept for this activation. */
#define RUN_WORKER "codemode"

static json_t *drive(struct store *st, struct pool *pool, int64_t id,
                     const struct codemode_run_request *rq, const struct tools_catalog *tools,
                     const struct ops_catalog *modules, char *err, size_t err_cap)
{
    struct activation_request req;
    memset(&req, 0, sizeof req);
    activation_request_defaults(&req, PROTO_PROFILE_CODEMODE);
    req.activation_id = (uint64_t)id;
    req.script = rq->script;
    req.script_len = rq->script_len;
    /* What the script's error locations call it. */
    req.script_name = strcmp(rq->script_name, "-") == 0 ? "<stdin>" : rq->script_name;
    req.trigger = rq->input;
    req.max_host_calls = CODEMODE_RUN_MAX_HOST_CALLS;
    struct codemode_host_config hc = {st, id, tools, modules, CODEMODE_MAX_HOST_CALLS,
                                      monotonic_ms() + req.deadline_ms};
    struct codemode_host *h = codemode_host_new(&hc);
    struct activation_outcome out;
    memset(&out, 0, sizeof out);
    if (h == NULL) {
        out.status = ACTIVATION_NO_WORKER;
        out.detail = strdup("out of memory");
    } else {
        struct host host = codemode_host_interface(h);
        pool_run(pool, RUN_WORKER, POOL_USE_CODEMODE, &req, &host, &out);
    }
    json_t *report = NULL;
    if (h != NULL) {
        struct run_end end;
        char why[512];
        decide_end(&out, h, &end);
        if (codemode_run_finish(st, id, &end.row, why, sizeof why) != 0)
            error_line(err, err_cap, "run %c%" PRId64 ": %s", CODEMODE_RUN_PREFIX, id, why);
        else if ((report = report_of(id, &end, &out)) == NULL)
            error_line(err, err_cap, "out of memory");
    } else {
        error_line(err, err_cap, "out of memory");
    }
    activation_outcome_free(&out);
    codemode_host_free(h);
    return report;
}

void *codemode_run_execute(struct store *st, const char *home,
                           const struct codemode_run_request *req, char *err, size_t err_cap)
{
    struct ops_catalog modules;
    struct tools_catalog tools;
    memset(&modules, 0, sizeof modules);
    memset(&tools, 0, sizeof tools);
    json_t *report = NULL;
    int64_t id = 0;
    /* Every refusal before the run row: nothing is stored. */
    struct codemode_run_start start = {req->script_name, req->script, req->script_len,
                                       req->input};
    /* A script that does not compile is refused before it starts (its place named). */
    const char *shown_name = strcmp(req->script_name, "-") == 0 ? "<stdin>" : req->script_name;
    /* One single-use worker: it compiles the script, then runs it; ended before this
     * returns. */
    struct pool_config cfg;
    pool_config_defaults(&cfg);
    cfg.policy = req->policy;
    cfg.spares = 0;
    struct pool *pool = pool_new(&cfg);
    if (pool != NULL) /* it confines itself while the catalogs load */
        pool_launch(pool, POOL_USE_CODEMODE_CHECK);
    if (pool == NULL)
        error_line(err, err_cap, "out of memory");
    else if (ops_catalog_load(home, &modules, err, err_cap) == 0 &&
             tools_catalog_load(home, &modules, &tools, err, err_cap) == 0 &&
             script_check_compiles_for_run(pool, RUN_WORKER, req->script, req->script_len,
                                           shown_name, err, err_cap) == 0 &&
             codemode_runs_abandon(st, NULL, err, err_cap) == 0 &&
             codemode_run_begin(st, &start, &id, err, err_cap) == 0)
        report = drive(st, pool, id, req, &tools, &modules, err, err_cap);
    pool_free(pool);
    tools_catalog_free(&tools);
    ops_catalog_free(&modules);
    return report;
}
