/* Is this byte string one JSON text (RFC 8259)? A grammar check only: nothing is
 * built, no number is converted, and the cost is linear in the length with memory
 * proportional to the nesting depth (no recursion: a worker's "[[[[..." cannot
 * exhaust the parent's stack).
 *
 * Exactly the grammar: one value with optional whitespace around it; strings with no
 * raw control character (below 0x20) and only the escapes \" \\ \/ \b \f \n \r \t and
 * \u followed by four hex digits. A \u escape of a lone surrogate ("\ud800") is
 * grammatical and accepted: JSON.stringify writes it for a string holding one, and
 * the JSON library the parent uses elsewhere would refuse it. Bytes at or above 0x80
 * are accepted as they are: the caller has already checked the text is UTF-8 (the
 * protocol codec does for every text it decodes). */
#ifndef BASAL_BASE_JSON_TEXT_H
#define BASAL_BASE_JSON_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* True if text[0..len) is one JSON text. False also when the nesting bookkeeping
 * cannot be allocated (fail closed). */
bool json_text_valid(const char *text, size_t len);

#endif
