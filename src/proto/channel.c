#include "proto/channel.h"

#include <string.h>

enum proto_error proto_send(int fd, const struct proto_msg *msg, struct wire_buf *scratch,
                            enum frame_result *frame)
{
    enum proto_error err = proto_encode(msg, scratch);
    if (err != PROTO_OK)
        return err;
    *frame = frame_write(fd, scratch->data, scratch->len);
    return PROTO_OK;
}

enum frame_result proto_recv(int fd, struct wire_buf *scratch, struct proto_msg *out,
                             enum proto_error *decode_error, struct proto_where *where)
{
    memset(out, 0, sizeof *out); /* safe to free whatever the result */
    enum frame_result result = frame_read(fd, scratch);
    if (result == FRAME_OK)
        *decode_error = proto_decode_where(scratch->data, scratch->len, out, where);
    return result;
}
