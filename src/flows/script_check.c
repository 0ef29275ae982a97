/* script_check_compiles: one single-use worker, a compile-only activation. */
#include "flows/script_check.h"
#include "base/error_line.h"
#include "host/host.h"
#include "supervisor/activation.h"
#include "supervisor/pool.h"

#include <string.h>

/* A compile-only activation makes no host call; one that arrives anyway is refused. */
static int refuse_call(void *self, const struct host_call *call, struct host_settlement *out,
                       long long *delay_ms)
{
    (void)self;
    (void)call;
    *delay_ms = 0;
    return host_reject(out, HOST_CODE_DENIED, "no host call while a script is compiled");
}

static const struct host_ops REFUSING = {.call = refuse_call};

/* The compile-only activation on a worker of pool chosen as use says; the verdict. */
static int check_on(struct pool *pool, const char *flow, enum pool_use use,
                    enum proto_profile profile, const char *script, size_t len,
                    const char *name, char *err, size_t err_cap)
{
    struct activation_request req;
    memset(&req, 0, sizeof req);
    activation_request_defaults(&req, profile);
    req.activation_id = 1;
    req.script = script;
    req.script_len = len;
    req.script_name = name;
    req.compile_only = true;
    struct host host = {&REFUSING, NULL};
    struct activation_outcome out;
    pool_run(pool, flow, use, &req, &host, &out);
    char what[1024];
    activation_describe(&out, what, sizeof what);
    int rc = 0;
    if (out.status == ACTIVATION_FAILED && out.failure_kind != NULL &&
        strcmp(out.failure_kind, "syntax_error") == 0)
        rc = error_line(err, err_cap, "the script does not compile: %s", what);
    else if (out.status != ACTIVATION_COMPLETED)
        rc = error_line(err, err_cap, "cannot check that the script compiles in a confined worker: %s",
                        what);
    activation_outcome_free(&out);
    return rc;
}

int script_check_compiles(const char *script, size_t len, const char *name, char *err,
                          size_t err_cap)
{
    struct pool_config cfg;
    pool_config_defaults(&cfg);
    cfg.spares = 0; /* one single-use worker, ended before this returns */
    struct pool *pool = pool_new(&cfg);
    if (pool == NULL)
        return error_line(err, err_cap, "cannot check the script: out of memory");
    int rc = check_on(pool, "install", POOL_USE_DRY_RUN, PROTO_PROFILE_FLOW, script, len, name,
                      err, err_cap);
    pool_free(pool);
    return rc;
}

int script_check_compiles_for_run(struct pool *pool, const char *run, const char *script,
                                  size_t len, const char *name, char *err, size_t err_cap)
{
    return check_on(pool, run, POOL_USE_CODEMODE_CHECK, PROTO_PROFILE_CODEMODE, script, len,
                    name, err, err_cap);
}
