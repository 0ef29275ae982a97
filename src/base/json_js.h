/* JSON that JavaScript wrote (a worker's host-call arguments, a script's result), read
 * with jansson without losing a number, and parts of a JSON text kept byte for byte.
 *
 * JavaScript numbers are doubles, and JSON.stringify writes the integral ones below
 * 1e21 as plain digits: 1e19 is "10000000000000000000", which jansson's exact integer
 * parser refuses ("too big integer"), so such a call failed as invalid_arguments.
 * json_js_loadb first parses as jansson always did; only a text that fails is read
 * again with every number as a double (exact: each number JavaScript writes is one),
 * and then every integral double that json_int_t holds is made an integer again, so
 * "5" beside "1e19" is still 5 (dumped "5", not "5.0"). Numbers only a double holds
 * stay reals; json_dumps writes them with up to 17 significant digits, which read
 * back as the same double (1e19 as "1e19", 0.1 as "0.10000000000000001"). Non-finite
 * numbers never occur: JSON.stringify writes them as null.
 *
 * The parent's part only (jansson): the worker never links it. */
#ifndef BASAL_BASE_JSON_JS_H
#define BASAL_BASE_JSON_JS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* json_loadb(text, len, flags), falling back as above. NULL with *error (if not
 * NULL) set by the last attempt when the text is not JSON. */
json_t *json_js_loadb(const char *text, size_t len, size_t flags, json_error_t *error);

/* The same for a NUL-terminated text. */
json_t *json_js_loads(const char *text, size_t flags, json_error_t *error);

/* The exact bytes of element `index` of the JSON array `text` (which must be valid
 * JSON, e.g. a text json_js_loadb accepted as an array): true with its offset and
 * length, false if the array has no such element. */
bool json_js_array_element(const char *text, size_t len, size_t index, size_t *start,
                           size_t *elen);

/* For a JSON object text (valid JSON) of exactly one member: true with the exact bytes
 * of its key (the string token, quotes and escapes included) and of its value; false
 * for any other text (not an object, no member, more than one). */
bool json_js_sole_member(const char *text, size_t len, size_t *key_start, size_t *key_len,
                         size_t *value_start, size_t *value_len);

/* The JSON text text[0..len) (valid JSON) without the whitespace between its tokens,
 * every token byte for byte (a number keeps its digits): malloc'd and NUL-terminated,
 * NULL on no memory. */
char *json_js_compact(const char *text, size_t len);

#endif
