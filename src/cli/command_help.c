/* The usage text of every command and subcommand (command_help.h): one row each. */
#include "cli/command_help.h"

#include <stdbool.h>
#include <string.h>

struct command_usage {
    const char *command;
    const char *subcommand; /* NULL: the command has none */
    const char *arguments;  /* after "ck-basal COMMAND [SUBCOMMAND]" */
    const char *text;       /* what it does, then its options, each line indented */
    const char *example;
};

#define LANDLOCK_OPTION                                                                   \
    "  --landlock=required|optional  required (the default) refuses a kernel without\n" \
    "                 Landlock; optional lets a worker run without it\n"

static const struct command_usage USAGES[] = {
    {"setup", NULL, "",
     "Create or check the data home (owner-only) and its store, migrating an older store;\n"
     "then report what the kernel offers the worker. Safe to run again at any time.\n",
     "ck-basal --home ~/basal-home setup"},
    {"flow", "install", "DIR",
     "Install the flow in DIR (its flow.js and manifest.json) as a new version pending\n"
     "approval; prints its code hash and the command that approves it.\n",
     "ck-basal flow install ./notes-flow"},
    {"flow", "approve", "ID --version N --code-hash HEX",
     "Approve version N of flow ID, named by its code hash (flow install printed it).\n",
     "ck-basal flow approve notes-summary --version 1 --code-hash 4384d8eb...5828"},
    {"flow", "list", "",
     "List the flows: enabled, latest and approved version, 12 hex digits of the approved\n"
     "code hash, and when each scheduled flow fires next (its zone and UTC).\n",
     "ck-basal flow list"},
    {"flow", "show", "ID",
     "One flow: enabled or not, its latest and approved versions with their whole code\n"
     "hashes, why serve disabled it, its next fire.\n",
     "ck-basal flow show notes-summary"},
    {"flow", "schedule", "ID [--count N]",
     "The next fire times of a scheduled flow, in its time zone and in UTC.\n"
     "  --count N  how many (default 5, at most 1000)\n",
     "ck-basal flow schedule nightly-report --count 10"},
    {"flow", "disable", "ID",
     "Switch a flow off: no new run is admitted until flow enable.\n",
     "ck-basal flow disable notes-summary"},
    {"flow", "enable", "ID",
     "Switch a flow on again (also clears serve's own disabling for a rate limit).\n",
     "ck-basal flow enable notes-summary"},
    {"flow", "drain", "ID",
     "A running serve admits no more runs of the flow and answers once its runs have\n"
     "ended; new runs are refused until flow enable or the next serve.\n",
     "ck-basal flow drain notes-summary"},
    {"flow", "reconcile", "RUN POSITION --observed JSON | --not-applied | --cancel",
     "Settle a mutation whose outcome is in doubt (the run waits in needs_reconcile),\n"
     "or a suspended run's long-running call that waits for its module, then the run\n"
     "resumes:\n"
     "  --observed JSON  it took effect, with this result\n"
     "  --not-applied    it did not take effect (it is performed again)\n"
     "  --cancel         end the run instead\n",
     "ck-basal flow reconcile 12 3 --observed '{\"bytes\":42}'"},
    {"flow", "complete", "KEY REPLY",
     "Complete a long-running call as its module: KEY is the call's idempotency key\n"
     "(the request's \"idempotency_key\"), REPLY the module's reply, {\"result\": ...} or\n"
     "{\"error\": {\"code\": ..., \"message\": ...}}. The suspended run resumes and the\n"
     "script receives it; refused if no call waits with that key.\n",
     "ck-basal flow complete 3f2a...e9 '{\"result\": {\"approved\": true}}'"},
    {"flow", "dry-run", "DIR | ID --version N [--trigger JSON] [--fixtures FILE] [--allow-queries]",
     "Show what a version would do before approving it: reads are real, nothing takes\n"
     "effect, every host call is listed.\n"
     "  --version N      the installed version N of flow ID (else the flow in DIR)\n"
     "  --trigger JSON   the trigger payload (default {})\n"
     "  --fixtures FILE  answers for the calls that are not performed (docs/operations.md)\n"
     "  --allow-queries  perform the modules' query operations for real\n",
     "ck-basal flow dry-run ./notes-flow --fixtures examples/demo-flow/fixtures.json"},
    {"serve", NULL,
     "[--max-runs N] [--backlog N] [--grace-seconds N] [--spares N] [--rate-limit N]\n"
     "       [--log-json] [--metrics 127.0.0.1:PORT] [--web 127.0.0.1:PORT [--web-allow-remote]]\n"
     "       [--landlock=required|optional]",
     "The engine as a service on the data home, in the foreground: runs flows, fires the\n"
     "scheduled ones, recovers what a dead process left, answers the other commands over\n"
     "the ops socket; one line per event on standard error; SIGTERM or SIGINT stop it.\n"
     "  --max-runs N       runner threads (default twice the CPUs, at most 256)\n"
     "  --backlog N        runs a flow may have waiting (default 100)\n"
     "  --grace-seconds N  time running activations get to end at a stop (default 30)\n"
     "  --spares N         warm spare workers (default 2)\n"
     "  --rate-limit N     admissions per flow per minute (default 60); a flow refused\n"
     "                     3 minutes in a row is disabled\n"
     "  --log-json         log lines as JSON\n"
     "  --metrics 127.0.0.1:PORT  Prometheus metrics on a loopback address\n"
     "  --web 127.0.0.1:PORT  the operator's status page on a loopback address (docs/web.md;\n"
     "                     ck-basal web-url prints its one-time login URL)\n"
     "  --web-allow-remote   let --web take an address that is not loopback (plain HTTP)\n"
     LANDLOCK_OPTION,
     "ck-basal serve --metrics 127.0.0.1:9464"},
    {"event", "emit", "MODULE NAME VERSION [--payload JSON] [--id ID]",
     "Emit an event: a running serve admits one run of every enabled flow that listens to\n"
     "it; without a serve it is recorded and the next serve delivers it.\n"
     "  --payload JSON  the runs' trigger (a JSON object, default {})\n"
     "  --id ID         names the event (default random): the same id again admits no\n"
     "                  second run\n",
     "ck-basal event emit git push 1 --payload '{\"ref\":\"main\"}'"},
    {"run", NULL, "ID [--trigger JSON] [--trigger-id TEXT] [--detach] [--landlock=required|optional]",
     "Admit a manual run of flow ID and drive it to its end here, then print its result\n"
     "(a running serve drives it instead).\n"
     "  --trigger JSON     the trigger payload (default {})\n"
     "  --trigger-id TEXT  the id admission deduplicates on\n"
     "  --detach           with a serve: return at once with the run id\n" LANDLOCK_OPTION,
     "ck-basal run notes-summary --trigger '{\"notes\":\"/srv/notes\"}'"},
    {"recover", NULL, "[--landlock=required|optional]",
     "Drive every run a dead process left running or pending to its end.\n" LANDLOCK_OPTION,
     "ck-basal recover"},
    {"cancel", NULL, "RUN [--reason TEXT]",
     "End a run that has not ended (pending, suspended, needs_reconcile, or running with\n"
     "its process gone); audited with the reason.\n"
     "  --reason TEXT  why (kept in the audit)\n",
     "ck-basal cancel 12 --reason 'superseded'"},
    {"runs", NULL, "[FLOW]",
     "List runs (all, or of one flow) with their states; codemode runs as c<id>.\n",
     "ck-basal runs notes-summary"},
    {"journal", NULL, "RUN | c<id>",
     "Every host call of a run: position, kind, arguments, class, outcome, delivery order.\n",
     "ck-basal journal 12"},
    {"backup", NULL, "DEST",
     "Copy the store to DEST, a new file (0600), with SQLite's online backup API: safe\n"
     "while serve runs. The copy is synced and checked (integrity_check) in DEST's\n"
     "directory before it is renamed into place; an existing DEST is refused.\n",
     "ck-basal backup /backups/basal-2026-12-03.db"},
    {"codemode", "run", "SCRIPT.js|- [--input JSON] [--landlock=required|optional]",
     "Run an agent's script once against the operator's tools (tools.json in the data\n"
     "home), every tool call validated, recorded and audited; - reads standard input.\n"
     "  --input JSON  the script's input (default {})\n" LANDLOCK_OPTION,
     "ck-basal codemode run agent.js --input '{\"item\":\"milk\"}'"},
    {"codemode", "describe", "[--format json|typescript]",
     "Describe the operator's tools as JSON (the default) or TypeScript declarations.\n",
     "ck-basal codemode describe --format typescript"},
    {"codemode", "check", "SCRIPT.js|- [--tsc PATH]",
     "Type-check the script against the TypeScript declarations of the operator's tools\n"
     "with tsc and the tsconfig basal ships; runs nothing, records nothing. Findings\n"
     "name the script's own lines; exit 1 when there are any or tsc cannot run.\n"
     "  --tsc PATH  the compiler (default: tsc in PATH; Debian: apt-get install\n"
     "              node-typescript)\n",
     "ck-basal codemode check agent.js"},
    {"codemode", "tsconfig", "",
     "Print the tsconfig.json codemode check uses, for a directory holding the\n"
     "declarations as tools.d.ts and the script, wrapped as the body of an async\n"
     "function, as script.ts.\n",
     "ck-basal codemode tsconfig > tsconfig.json"},
    {"worker-check", NULL, "[--landlock=required|optional]",
     "Start a confined worker, check its Welcome and the kernel's view of it, and show\n"
     "the result; exit 1 when it is refused.\n" LANDLOCK_OPTION,
     "ck-basal worker-check"},
    {"exec", NULL,
     "SCRIPT.js [SCRIPT.js ...] [--profile flow|codemode] [--trigger JSON] [--cpu-ms N]\n"
     "       [--heap-bytes N] [--stack-bytes N] [--max-value-bytes N] [--deadline-ms N]\n"
     "       [--flow ID] [--repeat N] [--landlock=required|optional] [--health]",
     "Run scripts through one worker pool with a fixed test host and no store; print each\n"
     "result.\n"
     "  --profile flow|codemode  the budgets and worker kind (default flow)\n"
     "  --trigger JSON           the trigger payload (default {})\n"
     "  --cpu-ms N               JavaScript CPU budget in milliseconds\n"
     "  --heap-bytes N           heap budget\n"
     "  --stack-bytes N          engine stack budget\n"
     "  --max-value-bytes N      largest host-call argument or result, and script result\n"
     "  --deadline-ms N          wall deadline: the worker is killed when it passes\n"
     "  --flow ID                the flow id the pool binds its workers to\n"
     "  --repeat N               run each script N times\n"
     "  --health                 print the pool's health after the last run\n" LANDLOCK_OPTION,
     "ck-basal exec --repeat 3 sum.js"},
    {"web-url", NULL, "",
     "Print the one-time login URL of the status page of the serve --web running on the\n"
     "data home: it works once, within 10 minutes, and sets the page's session cookie.\n",
     "ck-basal web-url"},
    {"health", NULL, "[--format json|prometheus] [--landlock=required|optional]",
     "Health from the store: runs by state, activations by outcome, worker counters,\n"
     "confinement (from a running serve, with its live pool).\n"
     "  --format json|prometheus  JSON (the default) or Prometheus text\n" LANDLOCK_OPTION,
     "ck-basal health --format prometheus"},
};
#define USAGE_COUNT (sizeof USAGES / sizeof USAGES[0])

static void print_usage(FILE *out, const struct command_usage *u)
{
    fprintf(out, "usage: ck-basal [--json] [--home DIR] %s%s%s%s%s\n\n%s\nexample:\n  %s\n",
            u->command, u->subcommand != NULL ? " " : "",
            u->subcommand != NULL ? u->subcommand : "", u->arguments[0] != '\0' ? " " : "",
            u->arguments, u->text, u->example);
}

int cli_command_help(FILE *out, const char *command, const char *subcommand)
{
    bool known_sub = false;
    for (size_t i = 0; i < USAGE_COUNT; i++)
        if (strcmp(USAGES[i].command, command) == 0 && USAGES[i].subcommand != NULL &&
            subcommand != NULL && strcmp(USAGES[i].subcommand, subcommand) == 0)
            known_sub = true;
    int printed = 0;
    for (size_t i = 0; i < USAGE_COUNT; i++) {
        const struct command_usage *u = &USAGES[i];
        if (strcmp(u->command, command) != 0)
            continue;
        if (known_sub && strcmp(u->subcommand, subcommand) != 0)
            continue;
        if (printed++ > 0)
            fputc('\n', out);
        print_usage(out, u);
    }
    if (printed > 0)
        fprintf(out, "\nglobal options (anywhere on the line): --json  machine-readable output;\n"
                     "  --home DIR  the data home; --store URI  a PostgreSQL store (default\n"
                     "  $BASAL_STORE, else SQLite in the data home). Exit status: 0 ok, 1 refused\n"
                     "  or failed, 2 usage.\n");
    return printed > 0 ? 0 : -1;
}
