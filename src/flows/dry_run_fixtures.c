/* The fixtures of a dry run (see dry_run_fixtures.h). */
#include "flows/dry_run_fixtures.h"

#include "base/bounded_file.h"
#include "base/json_fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURES_LABEL "fixtures"
#define KIND_MAX 64u
#define CODE_MAX 32u
#define MESSAGE_MAX 1024u

static bool code_valid(const char *s, size_t n)
{
    if (n == 0 || n > CODE_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

static bool kind_valid(const char *s, size_t n)
{
    if (n == 0 || n > KIND_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return false;
    return true;
}

static bool message_valid(const char *s, size_t n)
{
    (void)s;
    return n <= MESSAGE_MAX;
}

/* The field key of obj (at path): present, a string, and valid(); else refused "missing"
 * or with must. */
static int want_string(struct field_check *c, const json_t *obj, const char *path,
                       const char *key, bool (*valid)(const char *s, size_t n), const char *must)
{
    char at[FIELD_PATH_CAP];
    const json_t *v = json_object_get(obj, key);
    field_key_path(at, sizeof at, path, key);
    if (v == NULL)
        return field_fail(c, at, "missing");
    if (!json_is_string(v) || !valid(json_string_value(v), json_string_length(v)))
        return field_fail(c, at, "%s", must);
    return 0;
}

static int check_error(struct field_check *c, json_t *error, const char *path)
{
    static const char *const keys[] = {"code", "message", NULL};
    if (field_want_object(c, error, path, keys) != 0)
        return -1;
    char message_must[64];
    snprintf(message_must, sizeof message_must, "must be a string of at most %u bytes",
             MESSAGE_MAX);
    if (want_string(c, error, path, "code", code_valid, "must be 1-32 of [a-z0-9_]") != 0 ||
        want_string(c, error, path, "message", message_valid, message_must) != 0)
        return -1;
    return 0;
}

static int check_entry(struct field_check *c, json_t *e, const char *path)
{
    static const char *const keys[] = {"kind", "position", "args", "result", "error", NULL};
    if (field_want_object(c, e, path, keys) != 0)
        return -1;
    if (want_string(c, e, path, "kind", kind_valid,
                    "must be a call's kind (1-64 printable ASCII characters, such as"
                    " \"ops.call\")") != 0)
        return -1;
    char at[FIELD_PATH_CAP];
    const json_t *position = json_object_get(e, "position");
    long long ignored;
    if (position != NULL &&
        field_want_int(c, position, field_key_path(at, sizeof at, path, "position"), 0,
                       UINT32_MAX, &ignored) != 0)
        return -1;
    const json_t *args = json_object_get(e, "args");
    if (args != NULL && !json_is_array(args))
        return field_fail(c, field_key_path(at, sizeof at, path, "args"),
                          "must be a list (the call's arguments)");
    json_t *result = json_object_get(e, "result"), *error = json_object_get(e, "error");
    if ((result == NULL) == (error == NULL))
        return field_fail(c, path, "must have exactly one of result and error");
    if (error != NULL && check_error(c, error, field_key_path(at, sizeof at, path, "error")) != 0)
        return -1;
    return 0;
}

int dry_run_fixtures_load(const char *path, struct dry_run_fixtures *out, char *err,
                          size_t err_cap)
{
    memset(out, 0, sizeof *out);
    struct field_check c = {err, err_cap, FIXTURES_LABEL};
    char *buf = NULL;
    size_t len = 0;
    if (read_bounded_file(path, FIXTURES_LABEL, DRY_RUN_FIXTURES_MAX_BYTES, &buf, &len, err,
                          err_cap) != 0)
        return -1;
    json_t *root = field_load_document(&c, "", buf, len, 0);
    free(buf);
    if (root == NULL)
        return -1;
    static const char *const keys[] = {"fixtures", NULL};
    int rc = field_want_object(&c, root, "", keys);
    json_t *list = json_object_get(root, "fixtures");
    if (rc == 0 && list == NULL)
        rc = field_fail(&c, "fixtures", "missing");
    if (rc == 0 && (!json_is_array(list) || json_array_size(list) > DRY_RUN_FIXTURES_MAX))
        rc = field_fail(&c, "fixtures", "must be a list of at most %u entries",
                        DRY_RUN_FIXTURES_MAX);
    for (size_t i = 0; rc == 0 && i < json_array_size(list); i++) {
        char at[FIELD_PATH_CAP];
        rc = check_entry(&c, json_array_get(list, i),
                         field_index_path(at, sizeof at, "fixtures", i));
    }
    if (rc == 0)
        out->entries = json_incref(list);
    json_decref(root);
    return rc;
}

void dry_run_fixtures_free(struct dry_run_fixtures *f)
{
    if (f == NULL)
        return;
    json_decref(f->entries);
    f->entries = NULL;
}

int dry_run_fixture_answer(const struct dry_run_fixtures *f, uint32_t position,
                           const char *kind, const void *args, struct host_settlement *out)
{
    if (f == NULL || f->entries == NULL)
        return 0;
    size_t i;
    json_t *e;
    json_array_foreach(f->entries, i, e) {
        const json_t *want_args = json_object_get(e, "args");
        const json_t *want_pos = json_object_get(e, "position");
        if (strcmp(json_string_value(json_object_get(e, "kind")), kind) != 0 ||
            (want_pos != NULL && json_integer_value(want_pos) != (json_int_t)position) ||
            (want_args != NULL && !json_equal(want_args, (const json_t *)args)))
            continue;
        const json_t *result = json_object_get(e, "result");
        if (result != NULL)
            return host_fulfil_json(out, result) == 0 ? 1 : -1;
        int rc = host_fulfil_json(out, json_object_get(e, "error"));
        out->settlement = PROTO_SETTLEMENT_REJECTED;
        return rc == 0 ? 1 : -1;
    }
    return 0;
}
