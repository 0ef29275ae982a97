/* SHA-256 on Windows (behind engine_sha256.h): CNG's BCryptHash with the SHA-256
 * pseudo-handle, so no algorithm provider handle is opened (the handle table stays
 * within sandbox.md's allowlist). libcrypto has no mingw build in Debian. The first
 * call loads bcryptprimitives.dll; confine_windows.c makes it before the mitigations
 * and the handle closing, so no image loads after them. */
#include "worker/engine_sha256.h"

#include "worker/nt_declarations_windows.h"
#include "worker/refuse.h"

#include <string.h>

void sha256(const void *data, size_t len, uint8_t digest[SHA256_DIGEST_BYTES])
{
    /* BCryptHash takes non-const input but only reads it; ULONG bounds one call. */
    PUCHAR input = NULL;
    memcpy(&input, &data, sizeof input);
    if (len > 0xffffffffu || !BCRYPT_SUCCESS(BCryptHash(BCRYPT_SHA256_ALG_HANDLE, NULL, 0, input,
                                                        (ULONG)len, digest,
                                                        SHA256_DIGEST_BYTES))) {
        /* A digest we cannot compute would let replay compare garbage: stop. */
        stderr_write("ck-basal-worker: BCryptHash (SHA-256) failed\n");
        ExitProcess(WORKER_EXIT_PROTOCOL);
    }
}
