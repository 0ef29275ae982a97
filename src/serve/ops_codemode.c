/* "codemode.run" (docs/ops-protocol.md): `ck-basal codemode run` asked of a running
 * serve, which makes the run on its own store (flows/codemode_run.h). */
#include "serve/ops_commands.h"
#include "serve/ops_args.h"
#include "serve/ops_commands_internal.h"
#include "serve/ops_reply.h"
#include "base/bounded_file.h"
#include "flows/code_hash.h"
#include "flows/codemode_run.h"
#include "proto/message.h"
#include "store/codemode_store.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *ops_cmd_codemode_run(struct store *st, const char *home, json_t *args,
                             enum landlock_policy policy)
{
    const char *name, *script, *path, *input_text;
    json_t *reply;
    if (ops_arg_string(args, "script_name", true, CODEMODE_SCRIPT_NAME_MAX, &name, &reply) != 0 ||
        ops_arg_string(args, "script", false, PROTO_MAX_SCRIPT_BYTES, &script, &reply) != 0 ||
        ops_arg_string(args, "script_path", false, PATH_MAX - 1, &path, &reply) != 0 ||
        ops_arg_string(args, "input", true, OPS_JSON_VALUE_MAX_BYTES, &input_text, &reply) != 0)
        return reply;
    reply = NULL; /* the checks set it only when they refuse */
    if ((script == NULL) == (path == NULL))
        return ops_reply_error(2, "codemode run: give exactly one of 'script' and 'script_path'");
    if (path != NULL && path[0] != '/')
        return ops_reply_error(2, "argument 'script_path' must be an absolute path");
    /* The rule the CLI applies to --input, applied again to what was sent. */
    char why[512], err[1024];
    bool out_of_memory;
    char *input = ops_json_value(input_text, why, sizeof why, &out_of_memory);
    if (input == NULL) {
        snprintf(err, sizeof err, "codemode run: the input %s", why);
        return ops_reply_error(out_of_memory ? 1 : 2, err);
    }
    char *bytes = NULL;
    size_t len = script != NULL ? strlen(script) : 0;
    if (path != NULL &&
        read_bounded_file(path, "script", PROTO_MAX_SCRIPT_BYTES, &bytes, &len, err, sizeof err) != 0)
        reply = ops_reply_error(1, err);
    else if (len > PROTO_MAX_SCRIPT_BYTES)
        reply = ops_reply_error(2, "codemode run: the script is over the bytes allowed");
    else if (script_validate(bytes != NULL ? bytes : script, len, why, sizeof why) != 0)
        reply = ops_reply_error(2, why);
    if (reply == NULL) {
        struct codemode_run_request req = {name, bytes != NULL ? bytes : script, len, input,
                                           policy};
        json_t *report = codemode_run_execute(st, home, &req, err, sizeof err);
        reply = report != NULL ? ops_reply_ok(report) : ops_reply_error(1, err);
    }
    free(bytes);
    free(input);
    return reply;
}
