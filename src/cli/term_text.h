/* Text that a script or a worker chose (a result, an error, a call's kind and
 * arguments, console lines, a worker's log), made safe for an operator's terminal.
 * Every human-readable output of ck-basal passes such text through here; --json
 * output goes through base/json_out.h instead, which escapes the same characters the
 * JSON way, so both outputs spell an escape alike.
 *
 * Escaped, visibly, in one style (JSON's spelling of the character):
 *   line feed, CR, tab     "\n", "\r", "\t"
 *   other C0 controls, DEL "\u0000".."\u001f", "\u007f" (ESC is "\u001b")
 *   C1 controls            "\u0080".."\u009f" (U+009B is an 8-bit CSI)
 *   direction controls     "\u200e" "\u200f" "\u061c" "\u202a".."\u202e"
 *                          "\u2066".."\u2069" (they reorder what follows on the line)
 *   line separators        "\u2028" "\u2029"
 *   bytes that are not     "\xNN" for each byte: no character, so no \u (a lone 0x9b
 *     strict UTF-8           stays inert on any terminal)
 * (the list is base/terminal_chars.h's). Everything else (printable ASCII, any other
 * valid UTF-8) is kept as is. A backslash is kept too: what is printed is for reading,
 * and --json carries the exact text.
 *
 * With TERM_KEEP_NEWLINES a "\n" is written as a line break: for console output, which
 * is lines by nature and whose every line begins with basal's prefix ("log: ", or a
 * continuation's "log| ": supervisor/activation.h). A worker's log keeps its lines
 * through term_put_lines, which marks each continuation. Every other output is one
 * line per field, so a text can neither start a line of its own nor move the cursor. */
#ifndef BASAL_CLI_TERM_TEXT_H
#define BASAL_CLI_TERM_TEXT_H

#include <stddef.h>
#include <stdio.h>

#define TERM_KEEP_NEWLINES 1u

/* The longest piece one source character becomes ("\u202e"). */
#define TERM_PIECE_MAX 6u
/* Room to show n source bytes whole: no byte becomes more than 6 ("\u001b"; a 2-byte C1
 * becomes 6, a 3-byte direction control 6), plus the NUL. */
#define TERM_SHOWN_CAP(n) (6 * (n) + 1)

/* Escapes src[0..len) into dst[0..cap), NUL-terminated (cap >= 1). Stops before the
 * first piece that does not fit whole, so an escape or a character is never cut.
 * Returns how many source bytes were consumed (len if all of it fitted). */
size_t term_escape(char *dst, size_t cap, const char *src, size_t len, unsigned flags);

/* term_escape into dst, and "..." after what fitted when src had to be cut (dst must
 * hold at least 4 bytes). Returns dst, for a printf argument. */
const char *term_show(char *dst, size_t cap, const char *src, unsigned flags);

/* Writes src[0..len) escaped to f, whole. */
void term_put(FILE *f, const char *src, size_t len, unsigned flags);

/* term_put of a NUL-terminated text; NULL writes nothing. */
void term_puts(FILE *f, const char *text, unsigned flags);

/* text escaped, its lines kept, each line break that more text follows written as a
 * line break and then continuation (ours, such as "            | "), so no line of
 * text begins a line of the output (a worker's log cannot forge a verdict line). */
void term_put_lines(FILE *f, const char *text, const char *continuation);

/* "ck-basal WHAT: TEXT\n" on stderr, TEXT escaped (WHAT is ours). */
void term_error_line(const char *what, const char *text);

#endif
