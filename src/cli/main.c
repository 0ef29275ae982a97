/* ck-basal: the parent. Dispatches to one subcommand per file in src/cli. */
#include "version.h"
#include "cli/command_help.h"
#include "cli/commands.h"
#include "store/store.h"
#include "store/store_schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cli_command COMMANDS[] = {
    {"setup", " create or check the data home (owner-only) and the store; report what the "
              "kernel offers",
     cmd_setup},
    {"flow", "install DIR | approve ID --version N --code-hash HEX | list | show ID\n"
             "       | schedule ID [--count N] | disable ID | enable ID | drain ID\n"
             "       | reconcile RUN POSITION --observed JSON | --not-applied | --cancel\n"
             "       | complete KEY REPLY\n"
             "       | dry-run DIR | ID --version N [--trigger JSON] [--fixtures FILE] "
             "[--allow-queries]\n"
             "      install a flow (pending), approve a version by its code hash, list flows\n"
             "      (with each one's next fire), show one (hashes whole), show a schedule's\n"
             "      next fire times, switch one off or on, drain one (a running serve admits\n"
             "      no more runs of it and answers when its runs ended), settle a mutation in\n"
             "      doubt or a long-running call (then resume), complete a long-running call\n"
             "      as its module (by the call's idempotency key, with the module's reply),\n"
             "      show what a version would do before approving it (reads real, no effect)",
     cmd_flow},
    {"serve", "[--max-runs N] [--backlog N] [--grace-seconds N] [--spares N] [--rate-limit N]\n"
              "       [--log-json] [--metrics 127.0.0.1:PORT] [--web 127.0.0.1:PORT [--web-allow-remote]]\n"
              "       [--landlock=required|optional]\n"
              "      the engine as a service on the data home: runs flows (different flows at\n"
              "      once, a flow's runs in order), fires scheduled flows, recovers what a dead\n"
              "      process left, answers the other commands over the ops socket; logs one\n"
              "      line per event on stderr; --rate-limit: admissions per flow per minute\n"
              "      (default 60; a flow refused in 3 minutes in a row is disabled); --web: the\n"
              "      operator's status page (docs/web.md)",
     cmd_serve},
    {"web-url", " print the one-time login URL of the status page a serve --web shows",
     cmd_web_url},
    {"event", "emit MODULE NAME VERSION [--payload JSON] [--id ID]\n"
              "      emit an event: a running serve admits one run of every enabled flow that\n"
              "      listens to it (the payload its trigger; one per flow per id); without a\n"
              "      serve it is recorded and the next serve delivers it",
     cmd_event},
    {"run", "ID [--trigger JSON] [--trigger-id TEXT] [--detach] [--landlock=required|optional]\n"
            "      admit a manual run of flow ID and drive it to its end here (a running serve\n"
            "      drives it instead; --detach then returns at once); print its result",
     cmd_run},
    {"recover", "[--landlock=required|optional]  drive every run a dead process left running"
                " or pending to its end",
     cmd_recover},
    {"cancel", "RUN [--reason TEXT]  end a run that has not ended (pending, suspended,"
               " needs_reconcile,\n      or running with its process gone); audited",
     cmd_cancel},
    {"runs", "[FLOW]  list runs (all, or of one flow) with their states; codemode runs as c<id>",
     cmd_runs},
    {"journal", "RUN | c<id>  every host call of a run: position, kind, args, class, outcome, "
                "delivery order",
     cmd_journal},
    {"backup", "DEST  copy the store to DEST, a new file (0600), with SQLite's online backup:\n"
               "      safe while serve runs; checked (integrity_check) before it appears",
     cmd_backup},
    {"codemode", "run SCRIPT.js|- [--input JSON] [--landlock=required|optional]\n"
                 "       | describe [--format json|typescript] | check SCRIPT.js|- [--tsc PATH]\n"
                 "       | tsconfig\n"
                 "      run an agent's script once against the operator's tools (tools.json),\n"
                 "      every tool call validated, recorded and audited; describe the tools as\n"
                 "      JSON or TypeScript declarations; type-check a script with tsc",
     cmd_codemode},
    {"worker-check", "[--landlock=required|optional]  start a confined worker, check its "
                     "Welcome and the kernel's view of it, and show the result",
     cmd_worker_check},
    {"exec", "SCRIPT.js [SCRIPT.js ...] [--profile flow|codemode] [--trigger JSON] [--cpu-ms N]\n"
             "       [--heap-bytes N] [--stack-bytes N] [--max-value-bytes N] [--deadline-ms N]\n"
             "       [--flow ID] [--repeat N] [--landlock=required|optional] [--health]\n"
             "      run scripts through one worker pool with the test host; print each result",
     cmd_exec},
    {"health", "[--format json|prometheus] [--landlock=required|optional]\n"
               "      health from the store as JSON (or Prometheus text): runs by state,"
               " activations by\n      outcome, worker counters, confinement (from a running serve,"
               " with its live pool)",
     cmd_health},
};
#define COMMAND_COUNT (sizeof COMMANDS / sizeof COMMANDS[0])

static void print_help(FILE *out)
{
    fprintf(out, "usage: ck-basal [--json] [--home DIR] [--store URI] COMMAND [ARGS]\n"
                 "       ck-basal --version [--json] | --help\n\ncommands:\n");
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %s %s\n", COMMANDS[i].name, COMMANDS[i].synopsis);
    fprintf(out, "\noptions:\n"
                 "  --json     machine-readable output\n"
                 "  --home DIR the data home (default $XDG_DATA_HOME/cortexkit/basal,\n"
                 "             else ~/.local/share/cortexkit/basal)\n"
                 "  --store URI  the store: a PostgreSQL connection URI (postgresql://...,\n"
                 "             no password in it: use a service file or PGPASSFILE); default\n"
                 "             $BASAL_STORE, else SQLite (basal.db) in the data home\n"
                 "  all anywhere on the line; COMMAND [SUBCOMMAND] --help: its own usage\n"
                 "\nexit status: 0 ok, 1 refused or failed, 2 usage\n");
}

/* A global option taking a value (--home DIR, --store URI) at argv[*i] into *slot.
 * Returns 1, or EXIT_USAGE + 1 after printing a usage error. The value is not echoed
 * back: a URI is no place for it, and a second one may differ only in secrets. */
static int take_value(const char **slot, const char *what, int argc, char **argv, int *i)
{
    if (*i + 1 >= argc || argv[*i + 1][0] == '\0') {
        fprintf(stderr, "ck-basal: %s needs %s\n", argv[*i], what);
        return EXIT_USAGE + 1;
    }
    if (*slot != NULL && strcmp(*slot, argv[*i + 1]) != 0) {
        fprintf(stderr, "ck-basal: %s given twice, differently\n", argv[*i]);
        return EXIT_USAGE + 1;
    }
    *slot = argv[++*i];
    return 1;
}

/* A global option at argv[*i] (--json, --home DIR, --store URI) into g, *i moved past
 * its value. Returns 1 if it was one, 0 if not, or EXIT_USAGE + 1 after printing a
 * usage error. */
static int take_global(struct cli_globals *g, int argc, char **argv, int *i)
{
    if (strcmp(argv[*i], "--json") == 0) {
        g->json = true;
        return 1;
    }
    if (strcmp(argv[*i], "--home") == 0)
        return take_value(&g->home, "a directory", argc, argv, i);
    if (strcmp(argv[*i], "--store") == 0)
        return take_value(&g->store, "a PostgreSQL connection URI", argc, argv, i);
    return 0;
}

static int is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int main(int argc, char **argv)
{
    struct cli_globals globals = {.json = false, .home = NULL, .store = NULL};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        int taken = take_global(&globals, argc, argv, &i);
        if (taken > 1)
            return taken - 1;
        if (taken == 1)
            continue;
        if (is_help(argv[i])) {
            print_help(stdout);
            return EXIT_OK;
        } else if (strcmp(argv[i], "--version") == 0) {
            /* --json before or after it: the form ck upgrade compares builds by. */
            bool json = globals.json || (i + 1 < argc && strcmp(argv[i + 1], "--json") == 0);
            if (json)
                printf("{\"program\":\"ck-basal\",\"version\":\"%s\",\"git\":\"%s\","
                       "\"store_schema\":%d}\n",
                       BASAL_VERSION, BASAL_GIT_REV, STORE_SCHEMA_VERSION);
            else
                printf("ck-basal %s (git %s)\n", BASAL_VERSION, BASAL_GIT_REV);
            return EXIT_OK;
        } else {
            fprintf(stderr, "ck-basal: unknown option '%s' (see ck-basal --help)\n", argv[i]);
            return EXIT_USAGE;
        }
    }
    if (i >= argc) {
        print_help(stderr);
        return EXIT_USAGE;
    }
    const struct cli_command *command = NULL;
    for (size_t c = 0; c < COMMAND_COUNT; c++)
        if (strcmp(argv[i], COMMANDS[c].name) == 0)
            command = &COMMANDS[c];
    if (command == NULL) {
        fprintf(stderr, "ck-basal: unknown command '%s' (see ck-basal --help)\n", argv[i]);
        return EXIT_USAGE;
    }
    /* The command's own words, the global options taken out wherever they stand (in
     * place: argv is ours); --help or -h anywhere prints its usage and runs nothing. */
    char **words = argv + i + 1;
    int count = 0;
    bool help = false;
    for (int a = i + 1; a < argc; a++) {
        int taken = take_global(&globals, argc, argv, &a);
        if (taken > 1)
            return taken - 1;
        if (taken == 1)
            continue;
        help = help || is_help(argv[a]);
        words[count++] = argv[a];
    }
    words[count] = NULL;
    if (help) {
        const char *sub = count > 0 && words[0][0] != '-' ? words[0] : NULL;
        return cli_command_help(stdout, command->name, sub) == 0 ? EXIT_OK : EXIT_USAGE;
    }
    if (globals.store == NULL)
        globals.store = getenv("BASAL_STORE");
    char err[256];
    if (store_use(globals.store, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal: %s\n", err);
        return EXIT_USAGE;
    }
    return command->run(&globals, count, words);
}
