/* An operator's JSON on the command line (--input, --trigger, --observed): the rule of
 * serve/ops_commands.h (ops_json_value), which a serve applies again to what it is
 * sent. */
#ifndef BASAL_CLI_JSON_ARGUMENT_H
#define BASAL_CLI_JSON_ARGUMENT_H


/* The value as compact JSON text (malloc'd), or NULL after printing one line
 * "ck-basal WHAT: OPTION ..." on stderr; *status is then the exit status: usage for an
 * argument that is too long, not UTF-8 or not JSON, refused when out of memory. */
char *cli_json_argument(const char *what, const char *option, const char *text, int *status);

#endif
