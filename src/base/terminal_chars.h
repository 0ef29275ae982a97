/* The characters that make a terminal act instead of show, in one list for every
 * output and every check of operator text:
 *   C0 controls U+0000..U+001F and DEL U+007F
 *   C1 controls U+0080..U+009F           (U+009B is an 8-bit CSI, U+0085 a line break)
 *   direction controls U+061C U+200E U+200F U+202A..U+202E U+2066..U+2069
 *                                         (they reorder what follows on the line)
 *   line and paragraph separators U+2028 U+2029
 * Used by the JSON every output writes (base/json_out.h), by the escaping of human
 * output (cli/term_text.h), and by the checks of texts an operator's documents show
 * (a manifest's purpose, a catalog's descriptions). */
#ifndef BASAL_BASE_TERMINAL_CHARS_H
#define BASAL_BASE_TERMINAL_CHARS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True if the code point is in the list above. */
bool terminal_char_active(uint32_t cp);

/* The length of the well-formed UTF-8 character at s[0..avail) (avail >= 1), its code
 * point in *cp; 0 if the bytes there are not one (overlong, a surrogate, above
 * U+10FFFF, cut short, a stray continuation byte). */
size_t terminal_utf8_char(const unsigned char *s, size_t avail, uint32_t *cp);

/* The offset of the first active character in s[0..len), or of the first byte that is
 * not UTF-8 (then *cp is the byte), with its code point in *cp; -1 if there is none.
 * With lines_ok a line feed and a tab are not counted (a text of several lines). */
long terminal_chars_find(const char *s, size_t len, bool lines_ok, uint32_t *cp);

/* What kind of character cp is, for a refusal: "a control character", "a C1 control
 * character", "a direction control", "a line separator"; NULL for any other. */
const char *terminal_char_kind(uint32_t cp);

#endif
