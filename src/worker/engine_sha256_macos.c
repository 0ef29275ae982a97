/* SHA-256 on macOS (behind engine_sha256.h): CommonCrypto's CC_SHA256_Init/Update/
 * Final, part of libSystem, so the worker links no libcrypto. Pure computation: no
 * file, no Mach service, nothing the Seatbelt profile denies. CC_LONG is 32 bits, so
 * longer input is fed in pieces. */
#include "worker/engine_sha256.h"

#include <CommonCrypto/CommonDigest.h>

void sha256(const void *data, size_t len, uint8_t digest[SHA256_DIGEST_BYTES])
{
    CC_SHA256_CTX ctx;
    (void)CC_SHA256_Init(&ctx);
    const unsigned char *at = data;
    while (len > 0) {
        CC_LONG piece = len > 0x40000000u ? 0x40000000u : (CC_LONG)len;
        (void)CC_SHA256_Update(&ctx, at, piece);
        at += piece;
        len -= piece;
    }
    (void)CC_SHA256_Final(digest, &ctx);
}
