/* Checking an operator's JSON document (a flow manifest, the module catalog) field by
 * field, with refusals as one line naming the field path:
 *   "manifest.ops[2].op: missing"
 *   "modules.json: modules.tickets.ops.create.kind: must be \"query\" or \"mutate\""
 * Keys that are not plain (1-48 of [A-Za-z0-9_-]) are shown quoted and escaped, so an
 * untrusted key can neither break the line nor pass for a path. */
#ifndef BASAL_BASE_JSON_FIELDS_H
#define BASAL_BASE_JSON_FIELDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define FIELD_PATH_CAP 256 /* a field path such as manifest.trigger.events[63].version */
#define FIELD_SHOW_CAP 200 /* an untrusted value shown in a refusal, escaped and cut */
#define FIELD_SHOW_BYTES 48

/* Where a refusal goes, and the document's name to put first (NULL: none). */
struct field_check {
    char *err;
    size_t cap;
    const char *file;
};

/* Writes "[file: ]path: message" into the check's buffer, on one line. */
__attribute__((format(printf, 3, 4))) void field_fail_msg(struct field_check *c,
                                                          const char *path, const char *fmt,
                                                          ...);

/* Writes the refusal and is -1, visibly to the static analyzer (which does not follow
 * variadic calls). */
#define field_fail(...) (field_fail_msg(__VA_ARGS__), -1)

/* s escaped for a one-line message, in the style of every output: a line feed, CR and
 * tab as \n \r \t, every other character a terminal acts on (base/terminal_chars.h)
 * as \uXXXX, a byte that is not UTF-8 as
 * \xNN, other characters kept (with quote: quoted, '"' and '\' as \" and \\); cut
 * after about FIELD_SHOW_BYTES source bytes, never inside a character ("..."). Returns
 * buf. */
const char *field_show(const char *s, bool quote, char *buf, size_t cap);

/* "path.key" (just "key" when path is empty), key shown as above unless plain. */
const char *field_key_path(char *buf, size_t cap, const char *path, const char *key);
/* "path[i]". */
const char *field_index_path(char *buf, size_t cap, const char *path, size_t i);

/* strdup, or NULL after writing "out of memory" for path. */
char *field_dup(struct field_check *c, const char *path, const char *s);

/* An object whose keys are all in allowed (NULL-terminated): 0, or -1 refused. */
int field_want_object(struct field_check *c, json_t *v, const char *path,
                      const char *const *allowed);

/* A text the document shows to people (a purpose, a description, a name) holds no
 * character a terminal acts on (base/terminal_chars.h: controls, C1, direction
 * controls, line separators), a line feed and a tab excepted where lines_ok: 0, or -1
 * refused as "path: holds a direction control (U+202E) at byte 3". s[0..len) is UTF-8
 * (jansson checked it). */
int field_want_shown_text(struct field_check *c, const char *path, const char *s, size_t len,
                          bool lines_ok);

/* The JSON document bytes[0..len) (duplicate keys refused, flags added to jansson's),
 * or NULL after writing the refusal for path: "not valid UTF-8", or "invalid JSON at
 * line L column C: <jansson's reason, shown as above>". The caller owns the value. */
json_t *field_load_document(struct field_check *c, const char *path, const char *bytes,
                            size_t len, size_t flags);

/* An integer in [lo, hi] into *out: 0, or -1 refused. */
int field_want_int(struct field_check *c, const json_t *v, const char *path, long long lo,
                   long long hi, long long *out);

#endif
