/* Tool input schemas and the tool catalog (host/tool_schema.h, host/tools_catalog.h):
 *
 *   1. inputs a schema refuses are refused by the path of the first failing value
 *      ("$.items[2].name: expected string, got number"), for every keyword of the
 *      subset, and inputs it admits pass [guard: tools.call input validation];
 *   2. a schema outside the subset is refused when the catalog loads, naming the field
 *      path (an unknown keyword such as "pattern" is never silently ignored) [guard:
 *      schema subset checked at load];
 *   3. tools.json: unknown fields, duplicate keys, a bad tool name, a class that
 *      disagrees with modules.json, a missing module op, a group-writable or linked
 *      file are refused with one line naming the problem; a missing file is an empty
 *      catalog [guard: operator catalog checks];
 *   4. the TypeScript declarations: one overload per tool, operator text cannot end a
 *      comment or hide bidi controls, names and literals are JSON strings.
 * tsc itself compiles the declarations in tests/t_codemode_typescript.sh. */
#include "lib/harness.h"

#include "host/ops_module.h"
#include "host/tool_schema.h"
#include "host/tool_typescript.h"
#include "host/tools_catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);
    if (v == NULL)
        fail("schema: test JSON", "%s: %s", text, e.text);
    return v;
}

/* The schema must load; then value must be refused with exactly want (NULL: admitted). */
static void expect(const char *name, const char *schema_text, const char *value_text,
                   const char *want)
{
    char err[512] = "";
    struct field_check c = {err, sizeof err, NULL};
    json_t *schema = parse(schema_text), *value = parse(value_text);
    if (schema == NULL || value == NULL) {
        json_decref(schema);
        json_decref(value);
        return;
    }
    if (tool_schema_check(&c, schema, "input") != 0) {
        fail(name, "the schema was refused: %s", err);
    } else {
        char why[TOOL_SCHEMA_ERROR_CAP];
        bool ok = tool_schema_validate(schema, value, why, sizeof why);
        if (want == NULL)
            check(ok, name, "refused: %s", why);
        else if (ok)
            fail(name, "admitted; expected \"%s\"", want);
        else
            check_str_eq(why, want, name);
    }
    json_decref(schema);
    json_decref(value);
}

#define TICKET_SCHEMA                                                                        \
    "{\"type\": \"object\", \"required\": [\"title\", \"items\"],"                              \
    " \"additionalProperties\": false, \"properties\": {"                                       \
    "  \"title\": {\"type\": \"string\", \"minLength\": 2, \"maxLength\": 5},"                   \
    "  \"priority\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 3},"                   \
    "  \"ratio\": {\"type\": \"number\", \"minimum\": -0.5},"                                    \
    "  \"state\": {\"enum\": [\"open\", \"closed\", null]},"                                     \
    "  \"note\": {\"type\": [\"string\", \"null\"]},"                                            \
    "  \"odd key\": {\"type\": \"boolean\"},"                                                    \
    "  \"meta\": {\"type\": \"object\", \"additionalProperties\": {\"type\": \"number\"}},"      \
    "  \"items\": {\"type\": \"array\", \"minItems\": 1, \"maxItems\": 3, \"items\": {"          \
    "     \"type\": \"object\", \"required\": [\"name\"],"                                     \
    "     \"properties\": {\"name\": {\"type\": \"string\"}}}}}}"

static void validation_by_path(void)
{
    const char *s = TICKET_SCHEMA;
    expect("schema: a matching input is admitted",
           s, "{\"title\": \"abc\", \"items\": [{\"name\": \"x\", \"extra\": 1}], \"priority\": 2,"
              " \"state\": null, \"note\": null, \"meta\": {\"a\": 1.5}, \"odd key\": true}", NULL);
    expect("schema: integer 2.0 counts as an integer", s,
           "{\"title\": \"abc\", \"items\": [{\"name\": \"x\"}], \"priority\": 2.0}", NULL);
    expect("schema: refused by path: an element's property of the wrong type", s,
           "{\"title\": \"abc\", \"items\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": 7}]}",
           "$.items[2].name: expected string, got number");
    expect("schema: refused by path: a required property missing", s,
           "{\"items\": [{\"name\": \"a\"}]}", "$.title: missing (required)");
    expect("schema: refused by path: a required property of an element missing", s,
           "{\"title\": \"abc\", \"items\": [{\"nom\": \"a\"}]}", "$.items[0].name: missing (required)");
    expect("schema: refused by path: additionalProperties false", s,
           "{\"title\": \"abc\", \"items\": [{\"name\": \"a\"}], \"colour\": 1}",
           "$.colour: not allowed (additionalProperties is false)");
    expect("schema: refused by path: below minimum", s,
           "{\"title\": \"abc\", \"items\": [{\"name\": \"a\"}], \"priority\": 0}",
           "$.priority: must be at least 1, got 0");
    expect("schema: refused by path: above maximum", s,
           "{\"title\": \"abc\", \"items\": [{\"name\": \"a\"}], \"priority\": 80}",
           "$.priority: must be at most 3, got 80");
    expect("schema: refused by path: a fraction is not an integer", s,
           "{\"title\": \"abc\", \"items\": [{\"name\": \"a\"}], \"priority\": 1.5}",
           "$.priority: expected integer, got number");
    expect("schema: refused by path: a real below a real minimum", s,
           "{\"title\": \"abc\", \"items\": [{\"name\": \"a\"}], \"ratio\": -0.75}",
           "$.ratio: must be at least -0.5, got -0.75");
    expect("schema: refused by path: too short (characters)", s,
           "{\"title\": \"a\", \"items\": [{\"name\": \"a\"}]}",
           "$.title: must be at least 2 characters long, got 1");
    /* Five characters of two bytes each: lengths are code points, not bytes. */
    expect("schema: lengths count characters, not bytes", s,
           "{\"title\": \"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\", \"items\": [{\"name\": \"a\"}]}",
           NULL);
    expect("schema: refused by path: too long (characters)", s,
           "{\"title\": \"abcdef\", \"items\": [{\"name\": \"a\"}]}",
           "$.title: must be at most 5 characters long, got 6");
    expect("schema: refused by path: too few items", s, "{\"title\": \"abc\", \"items\": []}",
           "$.items: must have at least 1 items, got 0");
    expect("schema: refused by path: too many items", s,
           "{\"title\": \"abc\", \"items\": [{\"name\": \"a\"}, {\"name\": \"a\"}, {\"name\": \"a\"},"
           " {\"name\": \"a\"}]}",
           "$.items: must have at most 3 items, got 4");
    expect("schema: refused by path: not in the enum", s,
           "{\"title\": \"abc\", \"items\": [{\"name\": \"a\"}], \"state\": \"maybe\"}",
           "$.state: not one of the allowed values (\"open\", \"closed\", null)");
    expect("schema: refused by path: none of a list of types", s,
           "{\"title\": \"abc\", \"items\": [{\"name\": \"a\"}], \"note\": 3}",
           "$.note: expected string or null, got number");
    expect("schema: refused by path: an odd key is quoted and escaped", s,
           "{\"title\": \"abc\", \"items\": [{\"name\": \"a\"}], \"odd key\": \"yes\"}",
           "$[\"odd key\"]: expected boolean, got string");
    expect("schema: refused by path: additionalProperties as a schema", s,
           "{\"title\": \"abc\", \"items\": [{\"name\": \"a\"}], \"meta\": {\"a\": 1, \"b\": \"x\"}}",
           "$.meta.b: expected number, got string");
    expect("schema: refused by path: the input itself", s, "[1, 2]",
           "$: expected object, got array");
    expect("schema: refused: an omitted input (null) against an object schema", s, "null",
           "$: expected object, got null");
    expect("schema: no type admits any value", "{}", "[1, {\"a\": null}]", NULL);
    expect("schema: an escape in a key cannot break the line or pass for a path",
           "{\"additionalProperties\": false}", "{\"a\\nb\\u001b[31m\": 1}",
           "$[\"a\\nb\\u001b[31m\"]: not allowed (additionalProperties is false)");
}

/* The schema must be refused at load, with the line want. */
static void expect_refused_schema(const char *name, const char *schema_text, const char *want)
{
    char err[512] = "";
    struct field_check c = {err, sizeof err, "tools.json"};
    json_t *schema = parse(schema_text);
    if (schema == NULL)
        return;
    if (tool_schema_check(&c, schema, "tools.t.input") == 0)
        fail(name, "admitted; expected \"%s\"", want);
    else
        check_str_eq(err, want, name);
    json_decref(schema);
}

static void schema_subset(void)
{
    expect_refused_schema("schema load: an unknown keyword is refused, not ignored [guard]",
                          "{\"type\": \"string\", \"pattern\": \"^a\"}",
                          "tools.json: tools.t.input.pattern: not a keyword of the schema subset"
                          " basal enforces (docs/codemode.md)");
    expect_refused_schema("schema load: a nested unknown keyword names its path",
                          "{\"properties\": {\"a\": {\"items\": {\"format\": \"date\"}}}}",
                          "tools.json: tools.t.input.properties.a.items.format: not a keyword of"
                          " the schema subset basal enforces (docs/codemode.md)");
    expect_refused_schema("schema load: an unknown type name",
                          "{\"type\": \"date\"}",
                          "tools.json: tools.t.input.type: must be one of object, array, string,"
                          " number, integer, boolean, null");
    expect_refused_schema("schema load: a type listed twice", "{\"type\": [\"string\", \"string\"]}",
                          "tools.json: tools.t.input.type[1]: listed twice");
    expect_refused_schema("schema load: minimum not a number", "{\"minimum\": \"1\"}",
                          "tools.json: tools.t.input.minimum: must be a number");
    expect_refused_schema("schema load: minLength above maxLength",
                          "{\"minLength\": 5, \"maxLength\": 2}",
                          "tools.json: tools.t.input.minLength: is above maxLength");
    expect_refused_schema("schema load: a negative maxItems", "{\"maxItems\": -1}",
                          "tools.json: tools.t.input.maxItems: must be between 0 and 2147483647,"
                          " not -1");
    expect_refused_schema("schema load: an enum of objects", "{\"enum\": [{\"a\": 1}]}",
                          "tools.json: tools.t.input.enum[0]: must be a string, a number, true,"
                          " false or null");
    expect_refused_schema("schema load: an enum value twice (1 and 1.0)", "{\"enum\": [1, 1.0]}",
                          "tools.json: tools.t.input.enum[1]: listed twice");
    expect_refused_schema("schema load: required not a list of names", "{\"required\": [1]}",
                          "tools.json: tools.t.input.required[0]: must be a property name (a"
                          " string without NUL)");
    expect_refused_schema("schema load: a schema that is not an object",
                          "{\"properties\": {\"a\": true}}",
                          "tools.json: tools.t.input.properties.a: must be a schema (a JSON"
                          " object)");
    char deep[2048];
    size_t o = 0;
    for (int i = 0; i < 40; i++)
        o += (size_t)snprintf(deep + o, sizeof deep - o, "{\"items\": ");
    o += (size_t)snprintf(deep + o, sizeof deep - o, "{}");
    for (int i = 0; i < 40; i++)
        o += (size_t)snprintf(deep + o, sizeof deep - o, "}");
    char err[512] = "";
    struct field_check c = {err, sizeof err, "tools.json"};
    json_t *schema = parse(deep);
    check(schema != NULL && tool_schema_check(&c, schema, "input") != 0 &&
              strstr(err, "schemas nest more than 32 deep") != NULL,
          "schema load: nesting is bounded", "%s", err);
    json_decref(schema);
}

/* ---- the catalog ------------------------------------------------------------------- */

static char g_root[256];
static char g_home[PATH_MAX];

static bool write_file(const char *name, const char *text, mode_t mode)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", g_home, name);
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return false;
    size_t len = strlen(text);
    bool ok = write(fd, text, len) == (ssize_t)len;
    return close(fd) == 0 && ok && chmod(path, mode) == 0;
}

#define MODULES                                                                          \
    "{\"modules\": {\"tickets\": {\"program\": \"/bin/true\", \"ops\": {"                  \
    "\"search\": {\"kind\": \"query\"}, \"create\": {\"kind\": \"mutate\"}}}}}"

#define TOOL(name, cls, op, input)                                                       \
    "\"" name "\": {\"description\": \"d\", \"module\": \"tickets\", \"op\": \"" op "\","    \
    " \"class\": \"" cls "\", \"input\": " input "}"

/* Loads tools.json with text; refused with a line containing want (NULL: loads). */
static void catalog_case(const char *name, const char *text, mode_t mode, const char *want)
{
    struct ops_catalog ops;
    struct tools_catalog tools;
    char err[512] = "";
    if (!write_file("modules.json", MODULES, 0600) ||
        ops_catalog_load(g_home, &ops, err, sizeof err) != 0) {
        fail(name, "modules.json: %s", err);
        return;
    }
    if (text != NULL && !write_file("tools.json", text, mode)) {
        fail(name, "cannot write tools.json: %s", strerror(errno));
        ops_catalog_free(&ops);
        return;
    }
    int rc = tools_catalog_load(g_home, &ops, &tools, err, sizeof err);
    if (want == NULL)
        check(rc == 0, name, "refused: %s", err);
    else
        check(rc != 0 && strstr(err, want) != NULL && strchr(err, '\n') == NULL, name,
              "got rc %d, \"%s\"; expected \"%s\"", rc, err, want);
    if (rc == 0)
        tools_catalog_free(&tools);
    ops_catalog_free(&ops);
}

static void catalog(void)
{
    snprintf(g_home, sizeof g_home, "%s/home", g_root);
    if (mkdir(g_home, 0700) != 0) {
        fail("catalog: home", "%s", strerror(errno));
        return;
    }
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/tools.json", g_home);
    unlink(path);
    catalog_case("catalog: a missing tools.json is an empty catalog", NULL, 0600, NULL);
    catalog_case("catalog: a good catalog loads",
                 "{\"tools\": {" TOOL("find", "query", "search", "{\"type\": \"object\"}") ", "
                 TOOL("open", "mutation", "create", "{}") "}}", 0644, NULL);
    catalog_case("catalog: an unknown field is refused by path",
                 "{\"tools\": {\"find\": {\"description\": \"d\", \"module\": \"tickets\","
                 " \"op\": \"search\", \"class\": \"query\", \"input\": {}, \"cost\": 1}}}", 0600,
                 "tools.json: tools.find.cost: unknown field");
    catalog_case("catalog: a duplicate key is refused",
                 "{\"tools\": {" TOOL("find", "query", "search", "{}") ", "
                 TOOL("find", "query", "search", "{}") "}}", 0600, "duplicate object key");
    catalog_case("catalog: a tool name outside the name form is refused",
                 "{\"tools\": {" TOOL("Find Me", "query", "search", "{}") "}}", 0600,
                 "tools.json: tools.\"Find Me\": not a tool name");
    catalog_case("catalog: a mutate op passed off as a query is refused [guard: class agrees"
                 " with modules.json]",
                 "{\"tools\": {" TOOL("open", "query", "create", "{}") "}}", 0600,
                 "tools.json: tools.open.class: \"query\" but modules.json marks tickets.create as"
                 " mutate");
    catalog_case("catalog: an op missing from modules.json is refused",
                 "{\"tools\": {" TOOL("gone", "query", "vanish", "{}") "}}", 0600,
                 "tools.json: tools.gone.op: modules.json has no op tickets.vanish");
    catalog_case("catalog: a schema keyword outside the subset is refused by path",
                 "{\"tools\": {" TOOL("find", "query", "search",
                                      "{\"properties\": {\"q\": {\"pattern\": \"x\"}}}") "}}",
                 0600, "tools.json: tools.find.input.properties.q.pattern: not a keyword");
    catalog_case("catalog: a missing input schema is refused",
                 "{\"tools\": {\"find\": {\"description\": \"d\", \"module\": \"tickets\","
                 " \"op\": \"search\", \"class\": \"query\"}}}", 0600,
                 "tools.json: tools.find.input: missing");
    catalog_case("catalog: a control character in a description is refused",
                 "{\"tools\": {\"find\": {\"description\": \"a\\u001b[2Jb\", \"module\": \"tickets\","
                 " \"op\": \"search\", \"class\": \"query\", \"input\": {}}}}", 0600,
                 "tools.json: tools.find.description: holds a control character (U+001B) at byte 1");
    catalog_case("catalog: a direction control in a description is refused "
                 "[guard catalog-shown-text]",
                 "{\"tools\": {\"find\": {\"description\": \"ab\\u202ec\", \"module\": \"tickets\","
                 " \"op\": \"search\", \"class\": \"query\", \"input\": {}}}}", 0600,
                 "tools.json: tools.find.description: holds a direction control (U+202E) at byte 2");
    catalog_case("catalog: a C1 control in a description is refused [guard catalog-shown-text]",
                 "{\"tools\": {\"find\": {\"description\": \"\\u009b2J\", \"module\": \"tickets\","
                 " \"op\": \"search\", \"class\": \"query\", \"input\": {}}}}", 0600,
                 "tools.json: tools.find.description: holds a C1 control character (U+009B) at byte 0");
    catalog_case("catalog: a line separator in a schema's title is refused "
                 "[guard catalog-shown-text]",
                 "{\"tools\": {" TOOL("find", "query", "search",
                                      "{\"title\": \"a\\u2028b\"}") "}}",
                 0600, "tools.json: tools.find.input.title: holds a line separator (U+2028) at byte 1");
    catalog_case("catalog: an isolate in a property's name is refused [guard catalog-shown-text]",
                 "{\"tools\": {" TOOL("find", "query", "search",
                                      "{\"properties\": {\"q\\u2066\": {}}}") "}}",
                 0600, "holds a direction control (U+2066) at byte 1 (one line of text)");
    catalog_case("catalog: a description of several lines with a tab is kept (control)",
                 "{\"tools\": {\"find\": {\"description\": \"one\\n\\ttwo \\u00e9\", \"module\": \"tickets\","
                 " \"op\": \"search\", \"class\": \"query\", \"input\": {}}}}", 0600, NULL);
    catalog_case("catalog: a group-writable tools.json is refused [guard: operator-owned file]",
                 "{\"tools\": {}}", 0664,
                 "tools.json: group- or world-writable (mode 0664); make it 0600 or 0644");
    catalog_case("catalog: invalid JSON is refused with its place", "{\"tools\": {", 0600,
                 "tools.json: invalid JSON at line 1");
    char target[PATH_MAX + 32];
    snprintf(target, sizeof target, "%s/real-tools.json", g_home);
    unlink(path);
    int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool made = fd >= 0 && write(fd, "{\"tools\": {}}", 13) == 13;
    if (fd >= 0)
        close(fd);
    if (made && symlink(target, path) == 0)
        catalog_case("catalog: a tools.json that is a symbolic link is refused", NULL, 0600,
                     "tools.json: a symbolic link: refused");
    else
        fail("catalog: a tools.json that is a symbolic link is refused", "cannot make the link");
    unlink(path);
}

/* ---- TypeScript ------------------------------------------------------------------------- */

static void typescript(void)
{
    struct ops_catalog ops;
    struct tools_catalog tools;
    char err[512] = "";
    const char *catalog_text =
        "{\"tools\": {"
        "\"find.v2\": {\"description\": \"Find.\\nEnds */ here\", \"module\":"
        " \"tickets\", \"op\": \"search\", \"class\": \"query\", \"input\": {\"type\": \"object\","
        " \"required\": [\"q\"], \"additionalProperties\": false, \"properties\": {"
        " \"q\": {\"type\": \"string\", \"description\": \"x */ y\", \"maxLength\": 9},"
        " \"odd-key\": {\"enum\": [\"a\\\"b\", 2, null]},"
        " \"n\": {\"type\": \"integer\", \"minimum\": 1}}}},"
        "\"open\": {\"description\": \"Open one.\", \"module\": \"tickets\", \"op\": \"create\","
        " \"class\": \"mutation\", \"input\": {\"type\": \"array\", \"items\": {\"type\":"
        " [\"string\", \"null\"]}}}}}";
    if (!write_file("modules.json", MODULES, 0600) || !write_file("tools.json", catalog_text, 0600) ||
        ops_catalog_load(g_home, &ops, err, sizeof err) != 0) {
        fail("typescript: catalog", "%s", err);
        return;
    }
    if (tools_catalog_load(g_home, &ops, &tools, err, sizeof err) != 0) {
        fail("typescript: catalog", "%s", err);
        ops_catalog_free(&ops);
        return;
    }
    char *ts = tool_typescript(&tools);
    if (check(ts != NULL, "typescript: declarations made", "NULL")) {
        check(strstr(ts, "function call(name: \"find.v2\", input: {") != NULL &&
                  strstr(ts, "function call(name: \"open\", input: Array<string | null>)") != NULL,
              "typescript: one overload of tools.call per tool, typed from its schema", "%s", ts);
        check(strstr(ts, "    q: string;") != NULL && strstr(ts, "    n?: number;") != NULL &&
                  strstr(ts, "\"odd-key\"?: \"a\\\"b\" | 2 | null;") != NULL,
              "typescript: required and optional properties, quoted keys, enum literals", "%s",
              ts);
        const char *find = strstr(ts, "name: \"find.v2\"");
        const char *end = find != NULL ? strstr(find, "): Promise<any>;") : NULL;
        const char *index_sig = find != NULL ? strstr(find, "[key: string]") : NULL;
        check(end != NULL && (index_sig == NULL || index_sig > end),
              "typescript: additionalProperties false has no index signature", "%s", ts);
        /* The only comment ends are the generator's own: every operator "*" "/" is split. */
        check(strstr(ts, "Ends *\\/ here") != NULL && strstr(ts, "x *\\/ y") != NULL,
              "typescript: operator text cannot end a comment", "%s", ts);
        /* A direction control never reaches the generator: the catalog refuses it
         * ("catalog: a direction control in a description is refused" above). */
        check(strstr(ts, "An integer; Bounds") == NULL && strstr(ts, "An integer, at least 1.") != NULL,
              "typescript: bounds and integer-ness documented", "%s", ts);
        check(strstr(ts, "declare const console") != NULL &&
                  strstr(ts, "declare const trigger") != NULL &&
                  strstr(ts, "interface HostError") != NULL,
              "typescript: the rest of the codemode API is declared", "%s", ts);
    }
    free(ts);
    tools_catalog_free(&tools);
    ops_catalog_free(&ops);
}

int main(void)
{
    const char *root = harness_tmpdir("tool-schema");
    if (root == NULL)
        return harness_finish();
    snprintf(g_root, sizeof g_root, "%s", root);
    validation_by_path();
    schema_subset();
    catalog();
    typescript();
    harness_remove_tree(g_root);
    return harness_finish();
}
