/* The low-level SHA-256 functions are deprecated in OpenSSL 3 in favour of EVP, whose
 * first use fetches providers and reads configuration files: exactly what a confined
 * process must not do. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "worker/engine_sha256.h"

#include <openssl/sha.h>

void sha256(const void *data, size_t len, uint8_t digest[SHA256_DIGEST_BYTES])
{
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, data, len);
    SHA256_Final(digest, &ctx);
}
