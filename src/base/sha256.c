/* The low-level functions are deprecated in OpenSSL 3 in favour of EVP (see the
 * header for why they are used). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "base/sha256.h"

#include <openssl/sha.h>

void sha256_parts(const void *const *parts, const size_t *lens, size_t n,
                  uint8_t digest[SHA256_BYTES])
{
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    for (size_t i = 0; i < n; i++)
        if (lens[i] > 0)
            SHA256_Update(&ctx, parts[i], lens[i]);
    SHA256_Final(digest, &ctx);
}
