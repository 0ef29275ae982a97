/* The input schema of a codemode tool: a documented subset of JSON Schema
 * (docs/codemode.md, "Input schemas"), checked when the catalog loads and used to
 * validate every tools.call input in the parent before the tool's module runs.
 *
 * A schema is a JSON object with only these keywords (any other is refused when the
 * catalog loads, so a keyword the operator relies on, such as "pattern", can never be
 * silently ignored):
 *   type                  "object", "array", "string", "number", "integer", "boolean",
 *                         "null", or a non-empty list of distinct ones
 *   description, title    text for people and the TypeScript declarations (not checked)
 *   enum                  1..256 distinct strings, numbers, booleans or null
 *   minimum, maximum      numbers; a number value must lie within them (inclusive)
 *   minLength, maxLength  whole numbers; a string's length in characters (code points)
 *   minItems, maxItems    whole numbers; an array's length
 *   items                 a schema each element of an array must match
 *   properties            an object of schemas, one per property name
 *   required              distinct property names an object must have
 *   additionalProperties  true (the default), false, or a schema for every property
 *                         not in properties
 * As in JSON Schema, a keyword constrains only values of its own type (minLength says
 * nothing about a number), "integer" is a number without a fraction (2.0 is one), and
 * no "type" admits any value. Schemas nest at most TOOL_SCHEMA_MAX_DEPTH deep.
 *
 * A refused input is described by the path of the first failing value, from "$" (the
 * input itself), properties as ".name" (or ["odd key"] quoted and escaped) and
 * elements as "[2]":
 *   "$.items[2].name: expected string, got number"
 *   "$.limit: must be at most 50, got 80"
 *   "$.title: missing (required)"
 *   "$.colour: not allowed (additionalProperties is false)" */
#ifndef BASAL_HOST_TOOL_SCHEMA_H
#define BASAL_HOST_TOOL_SCHEMA_H

#include "base/json_fields.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define TOOL_SCHEMA_MAX_DEPTH 32u
#define TOOL_SCHEMA_MAX_ENUM 256u
#define TOOL_SCHEMA_TEXT_MAX 4096u /* bytes of a description or title */
#define TOOL_SCHEMA_ERROR_CAP 512u /* a refusal: path and problem */

/* Checks that schema (at path, for refusals such as "tools.find.input.properties.limit.
 * minimum: must be a number") is a schema of the subset above. 0, or -1 refused. */
int tool_schema_check(struct field_check *c, json_t *schema, const char *path);

/* Validates value against a schema that passed tool_schema_check (value is only read:
 * jansson iterates non-const objects). True if it matches; else false with "PATH:
 * problem" (one line, at most TOOL_SCHEMA_ERROR_CAP bytes) in err. */
bool tool_schema_validate(const json_t *schema, json_t *value, char *err, size_t err_cap);

/* The schema's "type" as a bit set of the names above (0: any type). For callers that
 * render a schema (the TypeScript declarations). */
enum tool_schema_type {
    TOOL_TYPE_OBJECT = 1u << 0,
    TOOL_TYPE_ARRAY = 1u << 1,
    TOOL_TYPE_STRING = 1u << 2,
    TOOL_TYPE_NUMBER = 1u << 3,
    TOOL_TYPE_INTEGER = 1u << 4,
    TOOL_TYPE_BOOLEAN = 1u << 5,
    TOOL_TYPE_NULL = 1u << 6,
};
unsigned tool_schema_types(const json_t *schema);

#endif
