#include "ck/build_version.h"

#include "base/error_line.h"
#include "ck/child_process.h"

#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int copy_field(char *out, size_t cap, const char *text)
{
    size_t n = strlen(text);
    if (n == 0 || n >= cap)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)text[i]) && strchr(".-_+", text[i]) == NULL)
            return -1;
    memcpy(out, text, n + 1);
    return 0;
}

static int parse_json(const char *text, struct build_version *out)
{
    json_t *o = json_loads(text, 0, NULL);
    json_t *v = json_object_get(o, "version"), *g = json_object_get(o, "git"),
           *s = json_object_get(o, "store_schema");
    int rc = -1;
    if (json_is_string(v) && json_is_string(g) && json_is_integer(s) &&
        json_integer_value(s) > 0 && json_integer_value(s) < 100000 &&
        copy_field(out->version, sizeof out->version, json_string_value(v)) == 0 &&
        copy_field(out->git, sizeof out->git, json_string_value(g)) == 0) {
        out->store_schema = (int)json_integer_value(s);
        rc = 0;
    }
    json_decref(o);
    return rc;
}

/* "ck-basal 0.1.0 (git 9a841751da47)\n" */
static int parse_line(const char *text, struct build_version *out)
{
    char version[64], git[64];
    if (sscanf(text, "ck-basal %63s (git %63[^)])", version, git) != 2)
        return -1;
    if (copy_field(out->version, sizeof out->version, version) != 0 ||
        copy_field(out->git, sizeof out->git, git) != 0)
        return -1;
    out->store_schema = -1;
    return 0;
}

int build_version_query(const char *path, struct build_version *out, char *err,
                        size_t err_cap)
{
    memset(out, 0, sizeof *out);
    char answer[1024], why[256] = "", program[PATH_MAX], a_version[] = "--version",
                                         a_json[] = "--json";
    snprintf(program, sizeof program, "%s", path);
    char *argv[] = {program, a_version, a_json, NULL};
    int status = child_run(argv, answer, sizeof answer, 1, why, sizeof why);
    if (status != 0)
        return error_line(err, err_cap, "%s --version: %s", path,
                          why[0] != '\0' ? why : "failed");
    if ((answer[0] == '{' ? parse_json(answer, out) : parse_line(answer, out)) != 0)
        return error_line(err, err_cap, "%s --version: an answer ck cannot read", path);
    return 0;
}

/* -1, 0, 1 as a < b, a == b, a > b for dotted decimal versions; -2 if not one. */
static int compare_versions(const char *a, const char *b)
{
    for (;;) {
        if (!isdigit((unsigned char)*a) || !isdigit((unsigned char)*b))
            return -2;
        char *ea, *eb;
        unsigned long long x = strtoull(a, &ea, 10), y = strtoull(b, &eb, 10);
        if (x != y)
            return x < y ? -1 : 1;
        if ((*ea != '.' && *ea != '\0') || (*eb != '.' && *eb != '\0'))
            return -2;
        if (*ea == '\0' || *eb == '\0')
            return *ea == *eb ? 0 : (*ea == '\0' ? -1 : 1);
        a = ea + 1;
        b = eb + 1;
    }
}

int build_version_order(const struct build_version *installed, const struct build_version *next,
                        enum build_order *order, char *err, size_t err_cap)
{
    int c = compare_versions(next->version, installed->version);
    if (c == -2)
        return error_line(err, err_cap, "cannot order versions '%s' and '%s' (not dotted "
                                        "decimal)", installed->version, next->version);
    if (c != 0) {
        *order = c < 0 ? BUILD_DOWNGRADE : BUILD_UPGRADE;
        return 0;
    }
    if (installed->store_schema > 0 && next->store_schema > 0 &&
        next->store_schema != installed->store_schema) {
        *order = next->store_schema < installed->store_schema ? BUILD_DOWNGRADE : BUILD_UPGRADE;
        return 0;
    }
    if (installed->store_schema > 0 && next->store_schema < 0) {
        /* Builds that do not state their schema predate the ones that do. */
        *order = BUILD_DOWNGRADE;
        return 0;
    }
    if (installed->store_schema < 0 && next->store_schema > 0) {
        /* An older build (no JSON form) of the same VERSION: the store decides. */
        *order = BUILD_OTHER;
        return 0;
    }
    *order = strcmp(installed->git, next->git) == 0 && strcmp(installed->git, "unknown") != 0 &&
                     installed->store_schema == next->store_schema
                 ? BUILD_SAME
                 : BUILD_OTHER;
    return 0;
}

void build_version_text(const struct build_version *v, char *out, size_t cap)
{
    if (v->store_schema > 0)
        snprintf(out, cap, "%s (git %s, store schema %d)", v->version, v->git, v->store_schema);
    else
        snprintf(out, cap, "%s (git %s)", v->version, v->git);
}
