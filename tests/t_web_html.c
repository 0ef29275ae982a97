/* The status page's one HTML escaper (web/html_text.h), piece by piece: each
 * character that could open markup becomes an entity, invalid UTF-8 and control
 * characters become U+FFFD, valid UTF-8 (also 4-byte) passes, NUL inside a counted
 * text is replaced, not a cut. tests/t_web.sh proves the page uses it on what a
 * script returned (no img element in a real browser) [guard web-escape]. */
#include "lib/harness.h"

#include "web/html_text.h"

#include <stdlib.h>
#include <string.h>

static void escaped(const char *in, size_t len, const char *want, const char *name)
{
    struct html h;
    html_init(&h);
    html_text_n(&h, in, len);
    char *got = html_take(&h, NULL);
    check_str_eq(got, want, name);
    free(got);
}

#define ESCAPED(in, want, name) escaped((in), sizeof(in) - 1, (want), (name))

int main(void)
{
    ESCAPED("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;",
            "angle brackets are entities");
    ESCAPED("a&b \"q\" 'r'", "a&amp;b &quot;q&quot; &#39;r&#39;",
            "ampersand and both quotes are entities (safe in attributes)");
    ESCAPED("&lt;", "&amp;lt;", "an entity in the text stays text");
    ESCAPED("<!-- x --><script>", "&lt;!-- x --&gt;&lt;script&gt;", "comments and tags");
    ESCAPED("tab\tline\n", "tab\tline\n", "tab and newline pass");
    ESCAPED("a\x01" "b\x1b[2K\x7f", "a\xEF\xBF\xBD" "b\xEF\xBF\xBD[2K\xEF\xBF\xBD",
            "C0 controls, ESC and DEL become U+FFFD");
    ESCAPED("x\xC2\x85y", "x\xEF\xBF\xBDy", "a C1 control (NEL) becomes U+FFFD");
    ESCAPED("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80",
            "valid 2-, 3- and 4-byte UTF-8 passes");
    ESCAPED("\xC0\xBC" "a", "\xEF\xBF\xBD\xEF\xBF\xBD" "a",
            "an overlong '<' (C0 BC) is not a '<': each byte U+FFFD");
    ESCAPED("\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD",
            "an encoded surrogate is replaced");
    ESCAPED("\xE2\x82", "\xEF\xBF\xBD\xEF\xBF\xBD", "a truncated sequence is replaced");
    ESCAPED("a\0<b", "a\xEF\xBF\xBD&lt;b", "NUL inside a counted text is replaced, the rest kept");

    struct html h;
    html_init(&h);
    html_raw(&h, "<p>");
    html_text(&h, NULL);
    html_text(&h, "<x>");
    html_rawf(&h, "</p>%d", 7);
    char *page = html_take(&h, NULL);
    check_str_eq(page, "<p>&lt;x&gt;</p>7", "markup, text and numbers in one buffer");
    free(page);

    html_init(&h);
    char big[9000];
    memset(big, '<', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    html_text(&h, big);
    size_t len = 0;
    page = html_take(&h, &len);
    check_int_eq((long long)len, (long long)(sizeof big - 1) * 4, "a long text grows the buffer");
    free(page);
    return harness_finish();
}
