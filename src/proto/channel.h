/* One message per frame on a pipe: proto_encode + frame_write, frame_read +
 * proto_decode, for the two ends that just want messages. */
#ifndef BASAL_PROTO_CHANNEL_H
#define BASAL_PROTO_CHANNEL_H

#include "proto/frame.h"
#include "proto/message.h"
#include "proto/wire.h"

/* Encodes msg into scratch (storage reused between calls) and writes it as one frame.
 * If msg cannot be encoded nothing is written, the codec error is returned and *frame
 * is left alone; otherwise PROTO_OK with the write's result in *frame. */
enum proto_error proto_send(int fd, const struct proto_msg *msg, struct wire_buf *scratch,
                            enum frame_result *frame);

/* Reads one frame into scratch and decodes it into *out. Returns the frame result;
 * only when it is FRAME_OK is *decode_error set: PROTO_OK (then *out owns a message,
 * free it with proto_msg_free) or why the payload was malformed (then *out is zeroed
 * and `where`, if not NULL, says which field). */
enum frame_result proto_recv(int fd, struct wire_buf *scratch, struct proto_msg *out,
                             enum proto_error *decode_error, struct proto_where *where);

#endif
