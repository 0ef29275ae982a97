/* An operator's JSON on the command line (--input, --trigger, --observed): at most
 * 64 KiB of UTF-8, one JSON value without duplicate keys. */
#ifndef BASAL_CLI_JSON_ARGUMENT_H
#define BASAL_CLI_JSON_ARGUMENT_H

#define CLI_JSON_ARGUMENT_MAX_BYTES (64u << 10)

/* The value as compact JSON text (malloc'd), or NULL after printing one line
 * "ck-basal WHAT: OPTION ..." on stderr; *status is then the exit status: usage for an
 * argument that is too long, not UTF-8 or not JSON, refused when out of memory. */
char *cli_json_argument(const char *what, const char *option, const char *text, int *status);

#endif
