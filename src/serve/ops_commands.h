/* Argument rules of the ops commands (docs/ops-protocol.md, "Commands") that the CLI
 * also checks itself, before it builds a request, to say in its own words what is
 * wrong with the operator's argv (exit 2). ops_dispatch checks them again on whatever
 * it is sent. */
#ifndef BASAL_SERVE_OPS_COMMANDS_H
#define BASAL_SERVE_OPS_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

/* A cancel reason: 1 to RUN_CANCEL_REASON_MAX bytes of UTF-8 without control
 * characters (it goes into the run's error and the audit, one line). */
bool ops_cancel_reason_valid(const char *text);

/* An operator's JSON value (a run's trigger, codemode's input, a reconcile's observed
 * result): at most OPS_JSON_VALUE_MAX_BYTES of UTF-8, one JSON value without duplicate
 * keys. Returns it as compact JSON text (malloc'd), or NULL with why, a phrase that
 * follows the value's name ("is 70000 bytes, over 65536", "is not valid UTF-8", "is not
 * JSON: ... (column N)"; control characters of the parser's message replaced), and
 * *out_of_memory telling a failed allocation from a bad value. */
#define OPS_JSON_VALUE_MAX_BYTES (64u << 10)
char *ops_json_value(const char *text, char *why, size_t why_cap, bool *out_of_memory);

/* codemode.run carries a script of at most this many bytes in the request (the
 * request is bounded by OPS_REQUEST_MAX); a larger one goes as the path of its file. */
#define OPS_CODEMODE_SCRIPT_INLINE_MAX (192u << 10)

#endif
