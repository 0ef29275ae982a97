/* The code hash and the script validator (flows/code_hash.h; docs/manifest.md). */
#include "flows/code_hash.h"

#include "proto/message.h"
#include "proto/utf8.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

static void put_u64le(uint8_t out[8], uint64_t v)
{
    for (size_t i = 0; i < 8; i++)
        out[i] = (uint8_t)(v >> (8 * i));
}

static int update_part(EVP_MD_CTX *md, const void *bytes, size_t len)
{
    uint8_t framed[8];
    put_u64le(framed, (uint64_t)len);
    if (EVP_DigestUpdate(md, framed, sizeof framed) != 1)
        return -1;
    if (len > 0 && EVP_DigestUpdate(md, bytes, len) != 1)
        return -1;
    return 0;
}

int code_hash_raw(const void *script, size_t script_len, const void *manifest,
                  size_t manifest_len, uint8_t out[CODE_HASH_BYTES])
{
    unsigned int n = 0;
    int rc = -1;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (md != NULL && (script != NULL || script_len == 0) &&
        (manifest != NULL || manifest_len == 0) &&
        EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
        EVP_DigestUpdate(md, CODE_HASH_TAG, CODE_HASH_TAG_LEN) == 1 &&
        update_part(md, script, script_len) == 0 && update_part(md, manifest, manifest_len) == 0 &&
        EVP_DigestFinal_ex(md, out, &n) == 1 && n == CODE_HASH_BYTES)
        rc = 0;
    EVP_MD_CTX_free(md);
    if (rc != 0)
        memset(out, 0, CODE_HASH_BYTES);
    return rc;
}

int code_hash_hex(const void *script, size_t script_len, const void *manifest,
                  size_t manifest_len, char out[CODE_HASH_HEX_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t d[CODE_HASH_BYTES];
    out[0] = '\0';
    if (code_hash_raw(script, script_len, manifest, manifest_len, d) != 0)
        return -1;
    for (size_t i = 0; i < CODE_HASH_BYTES; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[CODE_HASH_HEX_LEN] = '\0';
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
