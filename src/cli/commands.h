/* ck-basal's subcommands. Each takes the arguments after its name and returns the
 * process exit status: 0 ok, 1 refused or failed, 2 usage. */
#ifndef BASAL_CLI_COMMANDS_H
#define BASAL_CLI_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXIT_OK 0
#define EXIT_REFUSED 1
#define EXIT_USAGE 2

struct cli_globals {
    bool json;        /* machine output */
    const char *home; /* --home DIR, or NULL for the default data home */
    const char *store; /* --store URI, else $BASAL_STORE, else NULL: SQLite in the home */
};

struct cli_command {
    const char *name;
    const char *synopsis; /* one line for --help */
    int (*run)(const struct cli_globals *globals, int argc, char **argv);
};

int cmd_worker_check(const struct cli_globals *globals, int argc, char **argv);
int cmd_exec(const struct cli_globals *globals, int argc, char **argv);
int cmd_health(const struct cli_globals *globals, int argc, char **argv);
int cmd_serve(const struct cli_globals *globals, int argc, char **argv);
int cmd_setup(const struct cli_globals *globals, int argc, char **argv);
int cmd_web_url(const struct cli_globals *globals, int argc, char **argv);
int cmd_flow(const struct cli_globals *globals, int argc, char **argv);
int cmd_run(const struct cli_globals *globals, int argc, char **argv);
int cmd_recover(const struct cli_globals *globals, int argc, char **argv);
int cmd_cancel(const struct cli_globals *globals, int argc, char **argv);
int cmd_runs(const struct cli_globals *globals, int argc, char **argv);
int cmd_journal(const struct cli_globals *globals, int argc, char **argv);
int cmd_event(const struct cli_globals *globals, int argc, char **argv);
int cmd_backup(const struct cli_globals *globals, int argc, char **argv);
/* flow reconcile (dispatched by cmd_flow). */
int cmd_flow_reconcile(const struct cli_globals *globals, int argc, char **argv);
/* flow complete (dispatched by cmd_flow). */
int cmd_flow_complete(const struct cli_globals *globals, int argc, char **argv);
/* codemode run | describe (cmd_codemode.c). */
int cmd_codemode(const struct cli_globals *globals, int argc, char **argv);
/* flow dry-run (dispatched by cmd_flow; cmd_dry_run.c). */
int cmd_flow_dry_run(const struct cli_globals *globals, int argc, char **argv);

/* Codemode runs in `runs` and `journal` (codemode_view.c), rendered from the data of
 * the ops commands "runs" and "journal" (json_t *). */
/* One run of the "runs" data as a row of the `runs` table. */
void codemode_view_run_line(const void *run);
/* The "journal" data of a codemode run as `journal c<id>` shows it. */
void codemode_view_journal(const void *run);

/* The data home: --home if given, else the default (store/datahome.h). Writes it into
 * out; returns 0, or -1 with a one-line reason in err. */
int cli_data_home(const struct cli_globals *globals, char *out, size_t cap, char *err,
                  size_t err_cap);

struct store;

/* Opens the store of an existing data home (ck-basal setup makes it) into *st and the
 * home's path into home (PATH_MAX bytes). On failure prints "ck-basal WHAT: reason"
 * on stderr and returns -1. */
int cli_open_store(const struct cli_globals *globals, const char *what, struct store **st,
                   char *home);

/* Prints o compactly on one line and releases it (a json_t *). */
void cli_print_json(void *o);

/* A run id or position as an operator writes it: decimal digits only, within
 * [min, max]. */
bool cli_parse_int(const char *text, long long min, long long max, long long *out);

#endif
