/* The messages between ck-basal (parent) and ck-basal-worker, and their strict binary
 * encoding inside a frame payload (docs/protocol.md has the byte layouts).
 *
 * A payload is one tag byte followed by the message's fields in a fixed order:
 * integers big-endian, enums and booleans one byte, digests 32 raw bytes, texts and
 * lists a u32 count then their elements. Decoding checks every length against its
 * field maximum and against the bytes remaining before it allocates anything, and
 * rejects unknown tags, bad enum values, invalid UTF-8, NUL inside a text and trailing
 * bytes. JSON values are carried as UTF-8 text and never parsed here.
 *
 * Encoding applies the same rules, so a sender learns at once that the other side
 * would refuse a message.
 *
 * Memory: only malloc/free/memcpy; nothing else, so the confined worker can use it.
 * A decoded message owns its texts and lists (free them with proto_msg_free). A
 * message built for proto_encode may point at the caller's memory; encode never takes
 * ownership, and such a message must not be passed to proto_msg_free. */
#ifndef BASAL_PROTO_MESSAGE_H
#define BASAL_PROTO_MESSAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto/confinement.h"
#include "proto/frame.h"
#include "proto/wire.h"

/* Hello and Welcome carry it; the worker refuses any other version. */
#define PROTO_VERSION 4u /* 2: Activate.script_name, compile_only; 3: Welcome.seatbelt;
                          * 4: Welcome's five Windows fields */

/* Field maxima, in bytes of UTF-8 unless said otherwise. */
#define PROTO_MAX_SCRIPT_BYTES (1u << 20)   /* 1 MiB: Activate.script */
#define PROTO_MAX_SCRIPT_NAME_BYTES 1024u   /* Activate.script_name */
#define PROTO_MAX_JSON_BYTES (16u << 20)    /* 16 MiB: any one JSON value */
#define PROTO_MAX_KIND_BYTES 4096u          /* host call and failure kinds */
#define PROTO_MAX_DETAIL_BYTES 4096u        /* failure and refusal details */
#define PROTO_MAX_IDENTITY_BYTES 4096u      /* engine, worker version, os, console stream */
#define PROTO_MAX_CONSOLE_BYTES (64u << 10) /* 64 KiB: one Console text */
#define PROTO_MAX_LIST_ENTRIES 1000000u     /* positions, prefix entries */
#define PROTO_DIGEST_BYTES 32u              /* args digest, prelude hash */
/* Together a message is bounded by PROTO_MAX_FRAME (frame.h), whatever its fields. */

/* Tag byte. The high bit is the direction: clear from the parent, set from the
 * worker. Values are part of the protocol and never reused. */
enum proto_tag {
    PROTO_HELLO = 0x01,
    PROTO_ACTIVATE = 0x02,
    PROTO_DELIVER = 0x03,
    PROTO_LONG_RUNNING = 0x04,
    PROTO_SHUTDOWN = 0x05,

    PROTO_WELCOME = 0x81,
    PROTO_HOST_CALL = 0x82,
    PROTO_BLOCKED = 0x83,
    PROTO_FINISHED = 0x84,
    PROTO_REFUSED = 0x85,
    PROTO_CONSOLE = 0x86,
};

/* Wire enums start at 1 so that a zeroed byte is never a valid value. */
enum proto_profile {
    PROTO_PROFILE_FLOW = 1,
    PROTO_PROFILE_CODEMODE = 2,
};

enum proto_settlement {
    PROTO_SETTLEMENT_FULFILLED = 1,
    PROTO_SETTLEMENT_REJECTED = 2,
};

enum proto_outcome {
    PROTO_OUTCOME_COMPLETED = 1,        /* value */
    PROTO_OUTCOME_FAILED = 2,           /* failure_kind, failure_detail */
    PROTO_OUTCOME_SUSPENDED = 3,        /* waiting on long-running host calls */
    PROTO_OUTCOME_STALLED = 4,          /* nothing pending and nothing can progress */
    PROTO_OUTCOME_BUDGET_EXHAUSTED = 5, /* exhausted */
};

enum proto_budget {
    PROTO_BUDGET_CPU = 1,
    PROTO_BUDGET_MEMORY = 2,
    PROTO_BUDGET_STACK = 3,
};
#define PROTO_BUDGET_COUNT 3

enum proto_refusal {
    PROTO_REFUSAL_MALFORMED = 1,
    PROTO_REFUSAL_OVERSIZED = 2,
    PROTO_REFUSAL_UNEXPECTED_FRAME = 3,
    PROTO_REFUSAL_VERSION_MISMATCH = 4,
    PROTO_REFUSAL_UNKNOWN_POSITION = 5,
    PROTO_REFUSAL_DELIVERY_ORDER_REGRESSION = 6,
};

/* UTF-8 text without NUL. Decoded: an owned copy, NUL-terminated after `len` bytes.
 * For encoding: any `len` bytes (str may be NULL when len is 0). */
struct proto_text {
    const char *str;
    size_t len;
};

/* A text naming a C string, for building messages to encode. */
static inline struct proto_text proto_text_of(const char *cstr)
{
    struct proto_text text = {.str = cstr, .len = cstr ? strlen(cstr) : 0};
    return text;
}

/* A list of journal positions (LongRunning, Blocked). */
struct proto_positions {
    const uint32_t *items;
    size_t count;
};

/* ---- parent to worker ---- */

struct proto_hello {
    uint32_t version;
};

struct proto_budgets {
    uint32_t cpu_ms;
    uint64_t heap_bytes;
    uint32_t stack_bytes;
    uint32_t max_value_bytes; /* largest host-call argument or result */
};

/* One settled host call from the journal, replayed before new calls leave. */
struct proto_recorded_entry {
    uint32_t position;
    struct proto_text kind;
    uint8_t args_digest[PROTO_DIGEST_BYTES];
    enum proto_settlement settlement;
    struct proto_text value; /* JSON */
    uint32_t delivery_order;
};

struct proto_activate {
    uint64_t activation_id;
    enum proto_profile profile;
    struct proto_text script;
    struct proto_text script_name; /* what errors call it ("" : "script.js") */
    bool compile_only;             /* compile the script, run none of it: completed null */
    struct proto_text trigger; /* JSON */
    struct proto_budgets budgets;
    const struct proto_recorded_entry *prefix;
    size_t prefix_count;
};

struct proto_deliver {
    uint32_t position;
    enum proto_settlement settlement;
    struct proto_text value; /* JSON */
    uint32_t delivery_order;
};

/* ---- worker to parent ---- */

struct proto_welcome {
    uint32_t protocol_version;
    struct proto_text engine; /* e.g. "quickjs 2021-03-27" */
    uint8_t prelude_hash[PROTO_DIGEST_BYTES];
    struct proto_text worker_version;
    struct proto_text os; /* "linux", "macos", "windows" */
    bool seccomp;         /* one byte, 0 or 1 */
    enum landlock_policy landlock_policy;
    uint32_t landlock_runtime_abi; /* 0: the kernel has no Landlock */
    uint32_t landlock_applied_abi; /* 0: no ruleset applied */
    bool seatbelt; /* macOS: the Seatbelt profile is in force (one byte, 0 or 1) */
    /* Windows (sandbox.md "Windows"), one byte each, all false elsewhere */
    bool windows_lpac_token;          /* the LPAC token attested */
    bool windows_untrusted_integrity; /* the primary lowered to Untrusted */
    bool windows_no_thread_token;     /* no impersonation token left on the thread */
    bool windows_mitigations;         /* every required mitigation in force */
    bool windows_handle_inventory;    /* the handle table fits one image profile */
};

struct proto_host_call {
    uint32_t position;
    struct proto_text kind;
    struct proto_text args; /* JSON */
};

/* Only the fields the outcome names are encoded; the others are ignored (and zero
 * after decoding). */
struct proto_finished {
    enum proto_outcome outcome;
    struct proto_text value; /* COMPLETED: JSON */
    struct proto_text failure_kind;   /* FAILED */
    struct proto_text failure_detail; /* FAILED */
    enum proto_budget exhausted;      /* BUDGET_EXHAUSTED */
};

struct proto_refused {
    enum proto_refusal reason;
    struct proto_text detail; /* e.g. the state the frame was unexpected in */
};

struct proto_console {
    struct proto_text stream; /* stream or level, e.g. "log", "error" */
    struct proto_text text;
};

struct proto_msg {
    enum proto_tag tag;
    union {
        struct proto_hello hello;
        struct proto_activate activate;
        struct proto_deliver deliver;
        struct proto_positions long_running;
        /* Shutdown has no fields */
        struct proto_welcome welcome;
        struct proto_host_call host_call;
        struct proto_positions blocked;
        struct proto_finished finished;
        struct proto_refused refused;
        struct proto_console console;
    };
};

enum proto_error {
    PROTO_OK = 0,
    PROTO_ERR_UNKNOWN_TAG,         /* tag byte names no message */
    PROTO_ERR_TRUNCATED,           /* a field, or a list's entries, runs past the end */
    PROTO_ERR_FIELD_TOO_LONG,      /* a length exceeds the field's maximum */
    PROTO_ERR_TOO_MANY_ENTRIES,    /* a list count exceeds PROTO_MAX_LIST_ENTRIES */
    PROTO_ERR_INVALID_UTF8,        /* overlong, surrogate, > U+10FFFF, broken sequence */
    PROTO_ERR_EMBEDDED_NUL,        /* a text contains a NUL byte */
    PROTO_ERR_BAD_ENUM,            /* an enum or boolean byte out of range */
    PROTO_ERR_TRAILING_BYTES,      /* bytes left after the last field */
    PROTO_ERR_NO_MEMORY,           /* allocation failed */
    PROTO_ERR_TOO_LARGE_FOR_FRAME, /* encode: the payload exceeds PROTO_MAX_FRAME */
    PROTO_ERR_INVALID_ARGUMENT,    /* encode: NULL data with a non-zero length */
};

/* Where a message failed to encode or decode, for a one-line error. */
struct proto_where {
    const char *field; /* static, e.g. "activate.prefix.value"; "tag" for the tag */
    size_t offset;     /* decode: payload offset at which the field starts */
};

/* Replaces buf's contents with the payload for msg (not including the frame header).
 * On error buf's contents are unspecified. */
enum proto_error proto_encode(const struct proto_msg *msg, struct wire_buf *buf);
enum proto_error proto_encode_where(const struct proto_msg *msg, struct wire_buf *buf,
                                    struct proto_where *where);

/* Decodes exactly payload[0..len) into *out. On success *out owns every text and list
 * (proto_msg_free releases them) and the payload may be freed. On error nothing is
 * owned: *out is left zeroed. `where` may be NULL. */
enum proto_error proto_decode(const uint8_t *payload, size_t len, struct proto_msg *out);
enum proto_error proto_decode_where(const uint8_t *payload, size_t len, struct proto_msg *out,
                                    struct proto_where *where);

/* Releases what proto_decode allocated and zeroes *msg. Only for decoded messages. */
void proto_msg_free(struct proto_msg *msg);

/* Takes over one text of a decoded message: returns its NUL-terminated bytes (the
 * caller frees them) and leaves the text empty, so proto_msg_free skips it. */
char *proto_text_take(struct proto_text *text);

/* "hello", "welcome", ... for a tag; "unknown" for a byte that is none. */
const char *proto_msg_name(unsigned tag);
/* "unknown_tag", "truncated", ... (the enum without PROTO_ERR_, lower case). */
const char *proto_error_name(enum proto_error err);
/* Names of the wire enums, for logs and Refused details; "unknown" if out of range. */
const char *proto_refusal_name(enum proto_refusal reason);
const char *proto_outcome_name(enum proto_outcome outcome);
const char *proto_budget_name(enum proto_budget budget);

/* True for a tag the worker sends (high bit set), false for one the parent sends. */
static inline bool proto_tag_from_worker(unsigned tag)
{
    return (tag & 0x80u) != 0;
}

#endif
