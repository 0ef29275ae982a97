/* The two reply shapes of every ops command (docs/ops-protocol.md): the bottom of the
 * ops command files. The handlers, the dispatcher and the daemon build their replies
 * here; this file includes nothing of theirs. */
#ifndef BASAL_SERVE_OPS_REPLY_H
#define BASAL_SERVE_OPS_REPLY_H

#include <jansson.h>

/* {"ok":true,"data":data} (data stolen; NULL data: null). NULL only when out of memory. */
json_t *ops_reply_ok(json_t *data);
/* {"ok":false,"exit":exit_status,"error":error} (exit 2: the request is malformed; 1:
 * refused or failed). NULL only when out of memory. */
json_t *ops_reply_error(int exit_status, const char *error);

/* Text from the store or a script as a JSON string: the text itself when it is UTF-8,
 * else each byte that is not shown as the four characters "\xNN", as an operator's
 * terminal shows it (cli/term_text.h), so that nothing is dropped. NULL text: null. */
json_t *ops_json_text(const char *text);

#endif
