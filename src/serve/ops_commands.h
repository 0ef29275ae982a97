/* Argument rules of the ops commands (docs/ops-protocol.md, "Commands") that the CLI
 * also checks itself, before it builds a request, to say in its own words what is
 * wrong with the operator's argv (exit 2). ops_dispatch checks them again on whatever
 * it is sent. */
#ifndef BASAL_SERVE_OPS_COMMANDS_H
#define BASAL_SERVE_OPS_COMMANDS_H

#include <stdbool.h>

/* A cancel reason: 1 to RUN_CANCEL_REASON_MAX bytes of UTF-8 without control
 * characters (it goes into the run's error and the audit, one line). */
bool ops_cancel_reason_valid(const char *text);

#endif
