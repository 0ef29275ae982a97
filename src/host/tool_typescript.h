/* The tool catalog as TypeScript declarations (`ck-basal codemode describe --format
 * typescript`): what an agent harness puts in front of a model so that it writes a
 * codemode script against typed APIs (docs/codemode.md).
 *
 * One overload of tools.call per tool, typed from its input schema and documented
 * (JSDoc) from its description, class, module op and the schema's descriptions and
 * bounds; then the rest of the codemode API a script sees: HostError, console and
 * trigger. Results are `any` (the catalog describes inputs only). The output compiles
 * with `tsc --noEmit --strict --lib es2022` beside a script wrapped as the body of an
 * async function (tests/t_codemode_typescript.sh).
 *
 * Schema to type: string, number (integer too), boolean, null; an enum is the union
 * of its literals; an array is Array<items> (unknown[] without items); an object lists
 * its properties (optional unless required; an optional one named like a member every
 * object inherits, "constructor" or "toString", also admits that member, so leaving
 * it out type-checks) and, unless additionalProperties is false, an index signature;
 * a list of types is their union; no type is unknown. Every
 * operator text is made safe for a comment ("*" "/" split, control characters
 * dropped, bidirectional controls written as \u{...}); every name and literal is a
 * JSON string with non-ASCII escaped. */
#ifndef BASAL_HOST_TOOL_TYPESCRIPT_H
#define BASAL_HOST_TOOL_TYPESCRIPT_H

#include "host/tools_catalog.h"

/* The declarations as a malloc'd NUL-terminated text; NULL on no memory. */
char *tool_typescript(const struct tools_catalog *c);

#endif
