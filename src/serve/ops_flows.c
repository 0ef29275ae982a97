/* The ops commands of the flow registry (docs/ops-protocol.md, "Commands"):
 * "flow.list", "flow.install", "flow.approve", "flow.disable" and "flow.enable" on
 * flows/flows.h, which checks and writes each in one transaction (a refusal stores
 * nothing). Their data is what `ck-basal flow ... --json` prints. */
#include "serve/ops_args.h"
#include "serve/ops_commands_internal.h"
#include "serve/ops_reply.h"
#include "flows/flows.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#define ERR_CAP 1024
#define ARG_TEXT_MAX 4096u /* an id or a hash: flows/flows.h checks its form */

json_t *ops_cmd_flow_list(struct store *st, json_t *args)
{
    (void)args; /* none (the command table's schema) */
    struct flow_summary *rows;
    size_t n;
    char err[ERR_CAP];
    if (flows_list(st, &rows, &n, err, sizeof err) != 0)
        return ops_reply_error(1, err);
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        const struct flow_summary *f = &rows[i];
        bool approved = f->approved_version > 0;
        json_t *o = json_object();
        json_object_set_new(o, "id", ops_json_text(f->id));
        json_object_set_new(o, "enabled", json_boolean(f->enabled));
        json_object_set_new(o, "latest_version", json_integer(f->latest_version));
        json_object_set_new(o, "latest_state",
                            json_string(f->latest_approved ? "approved" : "pending"));
        json_object_set_new(o, "latest_code_hash", ops_json_text(f->latest_hash));
        json_object_set_new(o, "approved_version",
                            approved ? json_integer(f->approved_version) : json_null());
        json_object_set_new(o, "approved_code_hash",
                            approved ? ops_json_text(f->approved_hash) : json_null());
        json_object_set_new(o, "disabled_reason", f->disabled_reason[0] != '\0'
                                                      ? ops_json_text(f->disabled_reason)
                                                      : json_null());
        json_object_set_new(o, "next_fire", ops_flow_next_fire(st, f->id));
        json_array_append_new(list, o);
    }
    free(rows);
    return ops_reply_ok(list);
}

json_t *ops_cmd_flow_install(struct store *st, json_t *args)
{
    const char *dir;
    json_t *reply;
    if (ops_arg_string(args, "dir", true, PATH_MAX - 1, &dir, &reply) != 0)
        return reply;
    /* The answering process's working directory is not the client's (a serve). */
    if (dir[0] != '/')
        return ops_reply_error(2, "argument 'dir' must be an absolute path");
    struct flow_installed in;
    char err[ERR_CAP];
    if (flows_install_dir(st, dir, &in, err, sizeof err) != 0)
        return ops_reply_error(1, err);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(in.id));
    json_object_set_new(o, "version", json_integer(in.version));
    json_object_set_new(o, "code_hash", json_string(in.code_hash));
    json_object_set_new(o, "state", json_string("pending"));
    json_object_set_new(o, "new_flow", json_boolean(in.new_flow));
    return ops_reply_ok(o);
}

json_t *ops_cmd_flow_approve(struct store *st, json_t *args)
{
    const char *id, *hash;
    long long version;
    json_t *reply;
    if (ops_arg_string(args, "id", true, ARG_TEXT_MAX, &id, &reply) != 0 ||
        ops_arg_integer(args, "version", 1, INT64_MAX, &version, &reply) != 0 ||
        ops_arg_string(args, "code_hash", true, ARG_TEXT_MAX, &hash, &reply) != 0)
        return reply;
    char err[ERR_CAP];
    if (flows_approve(st, id, version, hash, err, sizeof err) != 0)
        return ops_reply_error(1, err);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "version", json_integer(version));
    json_object_set_new(o, "code_hash", json_string(hash));
    json_object_set_new(o, "state", json_string("approved"));
    return ops_reply_ok(o);
}

json_t *ops_cmd_flow_toggle(struct store *st, json_t *args, bool enable)
{
    const char *id;
    json_t *reply;
    if (ops_arg_string(args, "id", true, ARG_TEXT_MAX, &id, &reply) != 0)
        return reply;
    char err[ERR_CAP];
    if (flows_set_enabled(st, id, enable, err, sizeof err) != 0)
        return ops_reply_error(1, err);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "enabled", json_boolean(enable));
    return ops_reply_ok(o);
}
