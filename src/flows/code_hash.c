/* The code hash and the script validator (flows/code_hash.h; docs/manifest.md). */
#include "flows/code_hash.h"

#include "base/hex_text.h"
#include "base/sha256.h"
#include "proto/message.h"
#include "proto/utf8.h"

#include <stdio.h>
#include <string.h>

static void put_u64le(uint8_t out[8], uint64_t v)
{
    for (size_t i = 0; i < 8; i++)
        out[i] = (uint8_t)(v >> (8 * i));
}

int code_hash_raw(const void *script, size_t script_len, const void *manifest,
                  size_t manifest_len, uint8_t out[CODE_HASH_BYTES])
{
    if ((script == NULL && script_len > 0) || (manifest == NULL && manifest_len > 0)) {
        memset(out, 0, CODE_HASH_BYTES);
        return -1;
    }
    /* Each part is framed by its length, so no two (script, manifest) pairs hash the
     * same bytes. */
    uint8_t script_framed[8], manifest_framed[8];
    put_u64le(script_framed, (uint64_t)script_len);
    put_u64le(manifest_framed, (uint64_t)manifest_len);
    const void *parts[] = {CODE_HASH_TAG, script_framed, script, manifest_framed, manifest};
    const size_t lens[] = {CODE_HASH_TAG_LEN, sizeof script_framed, script_len,
                           sizeof manifest_framed, manifest_len};
    sha256_parts(parts, lens, sizeof parts / sizeof parts[0], out);
    return 0;
}

int code_hash_hex(const void *script, size_t script_len, const void *manifest,
                  size_t manifest_len, char out[CODE_HASH_HEX_LEN + 1])
{
    uint8_t d[CODE_HASH_BYTES];
    out[0] = '\0';
    if (code_hash_raw(script, script_len, manifest, manifest_len, d) != 0)
        return -1;
    hex_text(d, CODE_HASH_BYTES, out);
    return 0;
}

bool code_hash_hex_valid(const char *text)
{
    size_t i = 0;
    for (; text[i] != '\0'; i++) {
        char ch = text[i];
        if (i >= CODE_HASH_HEX_LEN || !((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
            return false;
    }
    return i == CODE_HASH_HEX_LEN;
}

int script_validate(const void *script, size_t len, char *err, size_t err_cap)
{
    const char *why = NULL;
    char detail[96];
    if (len == 0) {
        why = "empty";
    } else if (script == NULL) {
        why = "no bytes";
    } else if (len > PROTO_MAX_SCRIPT_BYTES) {
        snprintf(detail, sizeof detail, "%zu bytes, more than the %u allowed", len,
                 PROTO_MAX_SCRIPT_BYTES);
        why = detail;
    } else if (memchr(script, 0, len) != NULL) {
        snprintf(detail, sizeof detail, "contains a NUL byte at offset %zu",
                 (size_t)((const char *)memchr(script, 0, len) - (const char *)script));
        why = detail;
    } else if (!utf8_valid(script, len)) {
        why = "not valid UTF-8";
    }
    if (why == NULL)
        return 0;
    if (err != NULL && err_cap > 0)
        snprintf(err, err_cap, "script: %s", why);
    return -1;
}
