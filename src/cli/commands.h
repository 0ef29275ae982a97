/* ck-basal's subcommands. Each takes the arguments after its name and returns the
 * process exit status: 0 ok, 1 refused or failed, 2 usage. */
#ifndef BASAL_CLI_COMMANDS_H
#define BASAL_CLI_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

#define EXIT_OK 0
#define EXIT_REFUSED 1
#define EXIT_USAGE 2

struct cli_globals {
    bool json;        /* machine output */
    const char *home; /* --home DIR, or NULL for the default data home */
};

struct cli_command {
    const char *name;
    const char *synopsis; /* one line for --help */
    int (*run)(const struct cli_globals *globals, int argc, char **argv);
};

int cmd_worker_check(const struct cli_globals *globals, int argc, char **argv);
int cmd_exec(const struct cli_globals *globals, int argc, char **argv);
int cmd_health(const struct cli_globals *globals, int argc, char **argv);
int cmd_setup(const struct cli_globals *globals, int argc, char **argv);
int cmd_flow(const struct cli_globals *globals, int argc, char **argv);

/* The data home: --home if given, else the default (core/datahome.h). Writes it into
 * out; returns 0, or -1 with a one-line reason in err. */
int cli_data_home(const struct cli_globals *globals, char *out, size_t cap, char *err,
                  size_t err_cap);

#endif
