/* SHA-256 (FIPS 180-4) for the worker: the digest of a host call's argument bytes,
 * compared with the journal's during replay. The worker's own small implementation,
 * so that no crypto library (and nothing it might open or probe at first use) is
 * linked into the confined process. Pure computation: no allocation, no system call. */
#ifndef BASAL_WORKER_ENGINE_SHA256_H
#define BASAL_WORKER_ENGINE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_BYTES 32u

struct sha256 {
    uint32_t state[8];
    uint64_t total; /* bytes hashed so far */
    uint8_t block[64];
    size_t used;    /* bytes waiting in block */
};

void sha256_init(struct sha256 *ctx);
void sha256_update(struct sha256 *ctx, const void *data, size_t len);
void sha256_final(struct sha256 *ctx, uint8_t digest[SHA256_DIGEST_BYTES]);

/* One call: digest of data[0..len). */
void sha256(const void *data, size_t len, uint8_t digest[SHA256_DIGEST_BYTES]);

#endif
