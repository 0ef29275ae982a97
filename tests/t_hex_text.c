/* base/hex_text.h on its own: the digits of the journal's digests and keys and of the
 * web page's secrets and CSRF tokens, compared with known text (every byte value's
 * two digits, lower case, the NUL after them). */
#include "lib/harness.h"

#include "base/hex_text.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    const unsigned char bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
    char out[2 * sizeof bytes + 2];
    memset(out, 'x', sizeof out);
    hex_text(bytes, sizeof bytes, out);
    check_str_eq(out, "00017f80abff", "hex_text: two lower-case digits a byte, high first");
    ok(out[sizeof out - 1] == 'x', "hex_text: nothing written past the NUL");

    unsigned char every[256];
    for (size_t i = 0; i < sizeof every; i++)
        every[i] = (unsigned char)i;
    char all[2 * sizeof every + 1], want[2 * sizeof every + 1];
    hex_text(every, sizeof every, all);
    for (size_t i = 0; i < sizeof every; i++)
        snprintf(want + 2 * i, 3, "%02x", (unsigned)i);
    check_str_eq(all, want, "hex_text: every byte value as printf's %02x spells it");

    char empty[1] = {'x'};
    hex_text(bytes, 0, empty);
    ok(empty[0] == '\0', "hex_text: no bytes is the empty text");
    return harness_finish();
}
