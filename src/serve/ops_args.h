/* The checks of an ops request's arguments that the command handlers share
 * (docs/ops-protocol.md, "Commands"). Each returns 0 with its result, or -1 with an
 * error reply (serve/ops_reply.h: exit 2, naming the argument) in *reply. */
#ifndef BASAL_SERVE_OPS_ARGS_H
#define BASAL_SERVE_OPS_ARGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* args holds no key outside names (a NULL-terminated list): the dispatcher checks a
 * command table row's keys with it, before any handler runs. */
int ops_args_only(json_t *args, const char *const *names, json_t **reply);
/* args[name] is a string of 1..max bytes without NUL; *out borrowed from args, NULL
 * when the argument is absent and !required. */
int ops_arg_string(json_t *args, const char *name, bool required, size_t max,
                   const char **out, json_t **reply);
/* args[name] is a JSON integer within [min, max]. */
int ops_arg_integer(json_t *args, const char *name, long long min, long long max,
                    long long *out, json_t **reply);

#endif
