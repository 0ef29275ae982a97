/* SHA-256 in the parent (journal digests, code hashes): libcrypto's low-level
 * SHA256_Init/Update/Final, pure computation. The EVP interface would fetch providers
 * and read openssl.cnf on its first use, about 1 ms of every cold command's start
 * (docs/benchmarks.md, issue 32) for the same digest. */
#ifndef BASAL_BASE_SHA256_H
#define BASAL_BASE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32u

/* The digest of parts[0..n) one after the other (part i is lens[i] bytes; a part of
 * length 0 may be NULL). */
void sha256_parts(const void *const *parts, const size_t *lens, size_t n,
                  uint8_t digest[SHA256_BYTES]);

#endif
