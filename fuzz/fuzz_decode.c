/* libFuzzer target: the strict payload decoder.
 * Property: decoding never misbehaves, and a payload that decodes is canonical, so
 * re-encoding it reproduces the input byte for byte and decodes again to the same tag.
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Isrc \
 *        fuzz/fuzz_decode.c src/proto/(all .c files) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/message.h"
#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct proto_msg decoded;
    struct proto_where where;
    enum proto_error err = proto_decode_where(data, size, &decoded, &where);
    if (err != PROTO_OK) {
        /* A failed decode owns nothing and always names its field. */
        if (decoded.tag != 0 || !where.field || where.offset > size)
            abort();
        return 0;
    }

    struct wire_buf encoded = {0};
    if (proto_encode(&decoded, &encoded) != PROTO_OK)
        abort();
    if (encoded.len != size || (size > 0 && memcmp(encoded.data, data, size) != 0))
        abort();

    struct proto_msg again;
    if (proto_decode(encoded.data, encoded.len, &again) != PROTO_OK || again.tag != decoded.tag)
        abort();

    proto_msg_free(&again);
    proto_msg_free(&decoded);
    wire_buf_free(&encoded);
    return 0;
}
