/* SHA-256 of a host call's argument bytes, compared with the journal's digest during
 * replay. OpenSSL's libcrypto computes it through its low-level SHA256_Init/Update/
 * Final, which are pure computation: no allocation, no provider lookup, no system
 * call, so they are safe under the worker's seccomp filter (the EVP interface would
 * load providers and configuration on first use). */
#ifndef BASAL_WORKER_ENGINE_SHA256_H
#define BASAL_WORKER_ENGINE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_BYTES 32u

/* Digest of data[0..len). */
void sha256(const void *data, size_t len, uint8_t digest[SHA256_DIGEST_BYTES]);

#endif
