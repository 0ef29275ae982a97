/* The codemode tool catalog, tools.json (see tools_catalog.h). */
#include "host/tools_catalog.h"

#include "base/json_fields.h"
#include "base/names.h"
#include "base/operator_file.h"
#include "host/tool_schema.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tool_class_name(const struct tool *t)
{
    return t->mutation ? "mutation" : "query";
}

static int want_string(struct field_check *c, json_t *parent, const char *path,
                       const char *key, json_t **out)
{
    char at[FIELD_PATH_CAP];
    field_key_path(at, sizeof at, path, key);
    *out = json_object_get(parent, key);
    if (*out == NULL)
        return field_fail(c, at, "missing");
    if (!json_is_string(*out))
        return field_fail(c, at, "must be a string");
    return 0;
}

/* The description: 1..TOOL_DESCRIPTION_MAX bytes, no character a terminal acts on but
 * newline and tab (it is shown to people and put into generated declarations). */
static int parse_description(struct field_check *c, json_t *tool, const char *path,
                             struct tool *t)
{
    json_t *v;
    if (want_string(c, tool, path, "description", &v) != 0)
        return -1;
    char at[FIELD_PATH_CAP];
    field_key_path(at, sizeof at, path, "description");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n > TOOL_DESCRIPTION_MAX)
        return field_fail(c, at, "must be 1 to %u bytes", TOOL_DESCRIPTION_MAX);
    if (field_want_shown_text(c, at, s, n, true) != 0)
        return -1;
    t->description = field_dup(c, at, s);
    return t->description != NULL ? 0 : -1;
}

/* module, op and class, agreeing with the module catalog. */
static int parse_target(struct field_check *c, json_t *tool, const char *path,
                        const struct ops_catalog *ops, struct tool *t)
{
    json_t *module, *op, *cls;
    char at[FIELD_PATH_CAP];
    if (want_string(c, tool, path, "module", &module) != 0 ||
        want_string(c, tool, path, "op", &op) != 0 || want_string(c, tool, path, "class", &cls) != 0)
        return -1;
    if (!object_name_valid(json_string_value(module)))
        return field_fail(c, field_key_path(at, sizeof at, path, "module"),
                          "not a name (1-63 of [a-z0-9_.-], starting with a-z or 0-9)");
    if (!object_name_valid(json_string_value(op)))
        return field_fail(c, field_key_path(at, sizeof at, path, "op"),
                          "not a name (1-63 of [a-z0-9_.-], starting with a-z or 0-9)");
    const char *class_text = json_string_value(cls);
    field_key_path(at, sizeof at, path, "class");
    if (strcmp(class_text, "query") != 0 && strcmp(class_text, "mutation") != 0)
        return field_fail(c, at, "must be \"query\" or \"mutation\"");
    t->mutation = strcmp(class_text, "mutation") == 0;
    const struct ops_op *entry =
        ops_catalog_find(ops, json_string_value(module), json_string_value(op), NULL);
    if (entry == NULL)
        return field_fail(c, field_key_path(at, sizeof at, path, "op"),
                          "%s has no op %s.%s", OPS_CATALOG_FILE, json_string_value(module),
                          json_string_value(op));
    if (entry->mutate != t->mutation)
        return field_fail(c, at, "\"%s\" but %s marks %s.%s as %s", class_text,
                          OPS_CATALOG_FILE, json_string_value(module), json_string_value(op),
                          entry->mutate ? "mutate" : "query");
    t->module = field_dup(c, path, json_string_value(module));
    t->op = field_dup(c, path, json_string_value(op));
    return t->module != NULL && t->op != NULL ? 0 : -1;
}

static int parse_tool(struct field_check *c, const char *name, json_t *tool, const char *path,
                      const struct ops_catalog *ops, struct tool *t)
{
    static const char *const keys[] = {"description", "module", "op", "class", "input", NULL};
    if (!object_name_valid(name))
        return field_fail(c, path, "not a tool name (1-63 of [a-z0-9_.-], starting with a-z"
                          " or 0-9)");
    if (field_want_object(c, tool, path, keys) != 0)
        return -1;
    if ((t->name = field_dup(c, path, name)) == NULL)
        return -1;
    if (parse_description(c, tool, path, t) != 0 || parse_target(c, tool, path, ops, t) != 0)
        return -1;
    char at[FIELD_PATH_CAP];
    field_key_path(at, sizeof at, path, "input");
    json_t *input = json_object_get(tool, "input");
    if (input == NULL)
        return field_fail(c, at, "missing");
    if (tool_schema_check(c, input, at) != 0)
        return -1;
    t->input = json_incref(input);
    return 0;
}

static int parse_catalog(struct field_check *c, json_t *root, const struct ops_catalog *ops,
                         struct tools_catalog *out)
{
    static const char *const keys[] = {"tools", NULL};
    if (field_want_object(c, root, "", keys) != 0)
        return -1;
    json_t *tools = json_object_get(root, "tools");
    if (tools == NULL)
        return field_fail(c, "tools", "missing");
    if (!json_is_object(tools))
        return field_fail(c, "tools", "must be an object of tools by name");
    size_t n = json_object_size(tools);
    if (n > TOOLS_MAX)
        return field_fail(c, "tools", "%zu tools, more than the %u allowed", n, TOOLS_MAX);
    if (n > 0 && (out->tools = calloc(n, sizeof *out->tools)) == NULL)
        return field_fail(c, "tools", "out of memory");
    const char *name;
    json_t *tool;
    json_object_foreach(tools, name, tool) {
        char at[FIELD_PATH_CAP];
        field_key_path(at, sizeof at, "tools", name);
        if (out->count >= n) /* cannot happen: the object did not change */
            return field_fail(c, at, "internal error");
        out->count++;
        if (parse_tool(c, name, tool, at, ops, &out->tools[out->count - 1]) != 0)
            return -1;
    }
    return 0;
}

int tools_catalog_load(const char *home, const struct ops_catalog *ops,
                       struct tools_catalog *out, char *err, size_t err_cap)
{
    struct field_check c = {err, err_cap, TOOLS_CATALOG_FILE};
    memset(out, 0, sizeof *out);
    if (err != NULL && err_cap > 0)
        err[0] = '\0';
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", home, TOOLS_CATALOG_FILE) >= sizeof path)
        return field_fail(&c, "", "the data home path is too long");
    char *buf = NULL, why[256];
    size_t len = 0;
    int found = operator_file_read(path, TOOLS_CATALOG_MAX_BYTES, &buf, &len, why, sizeof why);
    if (found < 0)
        return field_fail(&c, "", "%s", why);
    if (found == 0)
        return 0; /* no catalog: no tools */
    json_t *root = field_load_document(&c, "", buf, len, 0);
    free(buf);
    if (root == NULL)
        return -1;
    int rc = parse_catalog(&c, root, ops, out);
    json_decref(root);
    if (rc != 0)
        tools_catalog_free(out);
    return rc;
}

void tools_catalog_free(struct tools_catalog *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->count; i++) {
        struct tool *t = &c->tools[i];
        free(t->name);
        free(t->description);
        free(t->module);
        free(t->op);
        json_decref(t->input);
    }
    free(c->tools);
    memset(c, 0, sizeof *c);
}

const struct tool *tools_catalog_find(const struct tools_catalog *c, const char *name)
{
    if (c == NULL || name == NULL)
        return NULL;
    for (size_t i = 0; i < c->count; i++)
        if (strcmp(c->tools[i].name, name) == 0)
            return &c->tools[i];
    return NULL;
}

json_t *tools_catalog_json(const struct tools_catalog *c)
{
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < c->count; i++) {
        const struct tool *t = &c->tools[i];
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O}", "name", t->name, "description",
                              t->description, "class", tool_class_name(t), "module", t->module,
                              "op", t->op, "input", t->input);
        if (o == NULL || json_array_append_new(list, o) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list != NULL ? json_pack("{s:o}", "tools", list) : NULL;
}
