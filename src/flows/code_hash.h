/* The code hash (basal.md section 6): what an approval records and every activation
 * rechecks, and the script validator. docs/manifest.md defines the bytes hashed:
 *
 *   SHA-256( "basal.code-hash.v1" 0x00
 *            || u64le(script_len)   || script
 *            || u64le(manifest_len) || manifest )
 *
 * written as 64 lowercase hex characters. The lengths frame the two parts, so no byte
 * can move from one to the other without changing the hash. */
#ifndef BASAL_FLOWS_CODE_HASH_H
#define BASAL_FLOWS_CODE_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The domain tag, including its terminating NUL (19 bytes are hashed). */
#define CODE_HASH_TAG "basal.code-hash.v1"
#define CODE_HASH_TAG_LEN (sizeof CODE_HASH_TAG) /* with the NUL */
#define CODE_HASH_BYTES 32u
#define CODE_HASH_HEX_LEN 64u

/* The digest of (script, manifest). Either pointer may be NULL when its length is 0.
 * Returns 0, or -1 if libcrypto failed (out is then zeroed). */
int code_hash_raw(const void *script, size_t script_len, const void *manifest,
                  size_t manifest_len, uint8_t out[CODE_HASH_BYTES]);

/* The same written as 64 lowercase hex characters and a NUL. Returns 0 or -1 (out is
 * then the empty string). */
int code_hash_hex(const void *script, size_t script_len, const void *manifest,
                  size_t manifest_len, char out[CODE_HASH_HEX_LEN + 1]);

/* True if text is exactly 64 lowercase hex characters (the form an operator passes to
 * flow approve --code-hash). */
bool code_hash_hex_valid(const char *text);

/* A flow script: valid UTF-8, no NUL byte, at most PROTO_MAX_SCRIPT_BYTES (1 MiB),
 * not empty. Returns 0, or -1 with one line in err ("script: ..."; err may be NULL).
 * Never prints. */
int script_validate(const void *script, size_t len, char *err, size_t err_cap);

#endif
