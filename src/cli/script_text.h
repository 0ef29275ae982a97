/* Text a script chose (its result, errors, console output, call arguments and
 * values), made safe for a terminal in human output: control characters (C0 but
 * newline where kept, DEL, C1), the line and paragraph separators and the
 * bidirectional controls that reorder what is shown (Trojan Source) are written as
 * visible escapes (\x1b, \u{202E}); bytes that are not UTF-8 as \xNN. --json output
 * needs none of this: JSON escapes on its own.
 *
 * Local to the codemode and dry-run commands until the CLI's shared escaper lands; the
 * lead switches these calls to it. */
#ifndef BASAL_CLI_SCRIPT_TEXT_H
#define BASAL_CLI_SCRIPT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* text[0..len) escaped, cut after max_out bytes of output ("..." then; 0: no cut), in
 * a malloc'd string; NULL on no memory. */
char *script_text_escape(const char *text, size_t len, bool keep_newlines, size_t max_out);

/* Writes text escaped to f (newlines kept when keep_newlines). */
void script_text_print(FILE *f, const char *text, size_t len, bool keep_newlines);

#endif
