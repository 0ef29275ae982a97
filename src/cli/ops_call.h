/* One ops command (serve/ops_dispatch.h, docs/ops-protocol.md "Commands") from the
 * command line: the CLI builds the request from argv, this answers it, and the
 * command renders the reply's data, human or --json, the same whoever answered. */
#ifndef BASAL_CLI_OPS_CALL_H
#define BASAL_CLI_OPS_CALL_H

#include "cli/commands.h"

#include <jansson.h>

/* Answers request (an object {"cmd","args"}, borrowed) on the data home of g.
 * On an ok reply returns EXIT_OK with *data (new: json_decref it). On an
 * error reply prints "ck-basal WHAT: error" (escaped) on stderr and returns the
 * reply's exit status (1 or 2), *data NULL; a data home that cannot be opened is
 * EXIT_REFUSED (cli_open_store printed why). */
int cli_ops_call(const struct cli_globals *g, const char *what, json_t *request,
                 json_t **data);

/* The two halves of cli_ops_call for a command that does something else when no serve
 * runs (run drives the run itself). cli_ops_connect: 1 with *fd when a serve answers
 * on g's data home, 0 when none does, -1 after printing "ck-basal WHAT: why"; home
 * (PATH_MAX bytes) is the data home's path. cli_ops_send: sends request (borrowed) on
 * fd, closes it, and takes the reply as cli_ops_call does. */
int cli_ops_connect(const struct cli_globals *g, const char *what, char *home, int *fd);
int cli_ops_send(const char *what, int fd, json_t *request, json_t **data);

/* {"cmd": cmd, "args": args} (args stolen); NULL when out of memory. */
json_t *cli_ops_request(const char *cmd, json_t *args);

#endif
