/* The one encoder of every JSON text basal writes for people and their tools: stdout
 * of every --json command, the sinks' JSON-lines files, the replies of the ops socket,
 * serve's JSON log. Its output is jansson's, with every character a terminal acts on
 * (base/terminal_chars.h: C0, DEL, C1, the direction controls, U+2028, U+2029) written
 * as \uXXXX, so the text is inert on a terminal, in `less` and in a log viewer, and
 * the value is the same for any JSON reader. Other characters stay UTF-8 (jansson's
 * JSON_ENSURE_ASCII would escape every one of them). Every \u escape is spelt in lower
 * case (\u001b, as a script's JSON.stringify and the human output spell it; jansson
 * writes \u001B).
 *
 * Re-escaping jansson's output is exact: jansson writes the code points above only
 * inside strings (its structure is ASCII) and already escapes C0 there, so each
 * occurrence is one character of a string and its \uXXXX stands for the same.
 *
 * json_dumps and json_dumpf elsewhere in src/ are for texts between basal's own parts
 * (a request to a module, a journaled value); tests/t_json_dumps.sh keeps that so. */
#ifndef BASAL_BASE_JSON_OUT_H
#define BASAL_BASE_JSON_OUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* json_dumps(value, flags), re-escaped. NULL when jansson fails or memory runs out. */
char *json_out_dumps(const json_t *value, size_t flags);

/* A JSON text that jansson wrote, re-escaped (a new string; NULL without memory). */
char *json_out_escape(const char *text, size_t len);

/* text (malloc'd, from json_out_dumps or json_dumps) with a line feed after it, for a
 * line-delimited peer: the new string (*len, if not NULL, its length with the line
 * feed), or NULL without memory. text is taken over either way. */
char *json_text_as_line(char *text, size_t *len);

/* json_out_dumps and a line feed, written to f. 0, or -1 if it could not be encoded or
 * written (nothing is written when it could not be encoded). */
int json_out_line(FILE *f, const json_t *value, size_t flags);

#endif
