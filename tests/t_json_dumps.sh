#!/usr/bin/env bash
# Every JSON text basal writes for people and their tools goes through one encoder,
# base/json_out.h, which escapes what a terminal acts on [guard json-one-encoder]: a
# json_dump* call elsewhere in src/ is allowed only in the files listed here, each of
# which writes JSON to another part of basal (a worker, a module, the store, serve),
# never to a stream an operator reads. A scratch tree with a json_dumps to stdout in a
# command makes the same check fail (control).
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib/harness.sh
scratch_dir json-dumps

# file: where its JSON goes (why jansson's own encoder is right there)
ALLOWED="
src/base/json_out.c: the encoder itself
src/serve/ops_client.c: a request to serve's ops socket
src/serve/ops_args.c: an argument normalized for the store
src/serve/scheduler.c: a scheduled run's trigger, stored
src/flows/host_kinds.c: a module's input, a sink's item before its line is encoded
src/flows/codemode_host.c: a tool's input to its module
src/host/host.c: a settlement's value to the worker
src/host/test_host.c: exec's test host values, kept in memory
src/host/ops_module.c: a request to a module program
src/host/tool_schema.c: allowed values quoted (ASCII) in a refusal the script receives
src/web/web_server.c: the reconcile form's observed value, normalized for the store as the CLI's
"

# check TREE: prints each json_dump* call outside the allowed files.
check() {
    allowed=$(printf '%s\n' "$ALLOWED" | sed -n 's/^\(src\/[^:]*\):.*/\1/p')
    (cd "$1" && grep -rnE '\bjson_dump(s|f|b|fd|_file|_callback)?\s*\(' src --include='*.c' --include='*.h') |
        grep -vE '^[^:]+:[0-9]+:\s*(/?\*|//)' |
        while IFS= read -r hit; do
            file=${hit%%:*}
            printf '%s\n' "$allowed" | grep -qxF "$file" || echo "$hit"
        done
}

wrong=$(check .)
if [ -z "$wrong" ]; then
    echo "ok - json output: no json_dump* outside base/json_out.c but in the files that write to basal's own parts [guard json-one-encoder]"
else
    echo "not ok - json output: json_dump* outside the encoder: $(printf '%s' "$wrong" | head -3 | tr '\n' ';') [guard json-one-encoder]"
fi

mkdir -p "$scratch/src/cli"
printf 'static void p(json_t *o)\n{\n    char *t = json_dumps(o, 0);\n    puts(t);\n}\n' >"$scratch/src/cli/cmd_x.c"
red=$(check "$scratch")
if printf '%s\n' "$red" | grep -q '^src/cli/cmd_x.c:3:'; then
    echo "ok - json output: a json_dumps in a command is found (control)"
else
    echo "not ok - json output: a json_dumps in a command was not found: '$red'"
fi
