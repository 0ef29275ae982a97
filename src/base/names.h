/* The names an operator gives things, checked the same way wherever they appear: a
 * flow's id (in manifests, on the command line, in the store) and the names of
 * modules, ops, events, sinks and tools (in manifests and the operator's catalogs).
 * Both forms are plain lowercase ASCII, so a name is also safe as a file name, a SQL
 * value and a word in human output. */
#ifndef BASAL_BASE_NAMES_H
#define BASAL_BASE_NAMES_H

#include <stdbool.h>

#define FLOW_ID_MAX 63u       /* a flow id: 1-63 of [a-z0-9_-] */
#define OBJECT_NAME_MAX 63u   /* module, op, event, sink and tool names */

/* A flow id: 1-63 of [a-z0-9_-]. */
bool flow_id_valid(const char *id);

/* A module, op, event, sink or tool name: 1-63 of [a-z0-9_.-], starting with
 * [a-z0-9]. */
bool object_name_valid(const char *s);

#endif
