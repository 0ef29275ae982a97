/* The operator's catalog of codemode tools: tools.json in the data home (basal.md
 * sections 1 and 4; docs/codemode.md). A codemode script may call only these, with
 * tools.call(name, input); each tool is one op of a module of the module catalog
 * (modules.json, host/ops_module.h), which runs it.
 *
 *   {"tools": {
 *      "find_tickets": {
 *        "description": "Search open tickets by text.",   1-4096 bytes, required
 *        "module": "tickets", "op": "search",             an op of modules.json
 *        "class": "query",                                "query" or "mutation"
 *        "input": {"type": "object", ...}                 the input's schema
 *      }}}
 *
 * The file belongs to the operator (base/operator_file.h: a regular file owned by the
 * user basal runs as, 0600 or 0644, not a link), at most 256 KiB of UTF-8 JSON; a
 * missing file is an empty catalog (every tools.call is denied). Tool names follow
 * object_name_valid (base/names.h). Unknown fields and duplicate keys are refused, like
 * the module catalog's; every refusal is one line naming the field path:
 *   "tools.json: tools.find_tickets.input.properties.limit.minimum: must be a number".
 * The class must agree with the module catalog: a "query" tool names a query op, a
 * "mutation" tool a mutate op (a mutate op passed off as a query is refused). The
 * input schema is the subset of host/tool_schema.h. Descriptions hold no control
 * characters but newline and tab. */
#ifndef BASAL_HOST_TOOLS_CATALOG_H
#define BASAL_HOST_TOOLS_CATALOG_H

#include "host/ops_module.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define TOOLS_CATALOG_FILE "tools.json"
#define TOOLS_CATALOG_MAX_BYTES (256u << 10)
#define TOOLS_MAX 256u
#define TOOL_DESCRIPTION_MAX 4096u

struct tool {
    char *name;
    char *description;
    char *module;
    char *op;
    bool mutation; /* "class": "mutation" (else "query") */
    json_t *input; /* its schema, checked; a reference the catalog holds */
};

struct tools_catalog {
    struct tool *tools; /* in the file's order */
    size_t count;
};

/* Loads home/tools.json into *out (zeroed and empty if the file does not exist),
 * checking every tool against ops (the loaded module catalog). Returns 0, or -1 with a
 * one-line reason in err and *out zeroed. */
int tools_catalog_load(const char *home, const struct ops_catalog *ops,
                       struct tools_catalog *out, char *err, size_t err_cap);
void tools_catalog_free(struct tools_catalog *c);

/* The tool named name, or NULL. */
const struct tool *tools_catalog_find(const struct tools_catalog *c, const char *name);

/* The catalog as {"tools": [{"name", "description", "class", "module", "op", "input"}]},
 * in order; NULL on no memory. */
json_t *tools_catalog_json(const struct tools_catalog *c);

/* "query" or "mutation". */
const char *tool_class_name(const struct tool *t);

#endif
