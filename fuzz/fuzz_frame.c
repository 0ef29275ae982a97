/* libFuzzer target: frame parsing from memory and from a file descriptor.
 * The input is a byte stream of frames. frame_parse walks it in memory; frame_read
 * reads the same bytes from a memfd, and so does the worker's buffered frame_reader
 * from a second one. All three must agree on every payload and on how the stream
 * ends, and every payload goes through the decoder.
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Isrc \
 *        fuzz/fuzz_frame.c src/proto/(all .c files) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto/frame.h"
#include "proto/frame_reader.h"
#include "proto/message.h"
#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int stream_fd = -1, reader_fd = -1;
static struct wire_buf read_payload; /* reused across inputs */

/* Replaces the memfd's contents with the input and rewinds it. */
static int load_stream(int *fd, const uint8_t *data, size_t size)
{
    if (*fd < 0)
        *fd = memfd_create("fuzz_frame", 0);
    int stream = *fd;
    if (stream < 0 || ftruncate(stream, 0) != 0 || lseek(stream, 0, SEEK_SET) != 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(stream, data + done, size - done);
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return lseek(stream, 0, SEEK_SET) == 0 ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (load_stream(&stream_fd, data, size) != 0 || load_stream(&reader_fd, data, size) != 0)
        abort();
    struct frame_reader reader;
    frame_reader_init(&reader);

    size_t offset = 0;
    for (;;) {
        const uint8_t *payload = NULL;
        size_t payload_len = 0;
        size_t consumed = 0;
        enum frame_result parsed =
            frame_parse(data + offset, size - offset, &payload, &payload_len, &consumed);
        enum frame_result read_result = frame_read(stream_fd, &read_payload);
        const uint8_t *buffered = NULL;
        size_t buffered_len = 0;
        enum frame_result reader_result =
            frame_reader_next(reader_fd, &reader, &buffered, &buffered_len);
        if (parsed != read_result || parsed != reader_result)
            abort();
        if (parsed != FRAME_OK)
            break;
        if (consumed != PROTO_FRAME_HEADER_BYTES + payload_len || consumed > size - offset ||
            payload_len > PROTO_MAX_FRAME)
            abort();
        if (read_payload.len != payload_len ||
            (payload_len > 0 && memcmp(read_payload.data, payload, payload_len) != 0))
            abort();
        if (buffered_len != payload_len ||
            (payload_len > 0 && memcmp(buffered, payload, payload_len) != 0))
            abort();

        struct proto_msg msg;
        if (proto_decode(payload, payload_len, &msg) == PROTO_OK)
            proto_msg_free(&msg);
        offset += consumed;
    }
    frame_reader_free(&reader);
    return 0;
}
