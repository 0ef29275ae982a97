#include "proto/message.h"

#include <stdlib.h>
#include <string.h>

#include "proto/utf8.h"

/* Smallest encoding of one recorded prefix entry: position, empty kind, digest,
 * settlement, empty value, delivery order. A count is checked against the bytes
 * remaining with it before the entry array is allocated. */
#define RECORDED_ENTRY_MIN_BYTES (4u + 4u + PROTO_DIGEST_BYTES + 1u + 4u + 4u)
#define POSITION_BYTES 4u

/* ------------------------------------------------------------------ names */

const char *proto_msg_name(unsigned tag)
{
    switch (tag) {
    case PROTO_HELLO:
        return "hello";
    case PROTO_ACTIVATE:
        return "activate";
    case PROTO_DELIVER:
        return "deliver";
    case PROTO_LONG_RUNNING:
        return "long_running";
    case PROTO_SHUTDOWN:
        return "shutdown";
    case PROTO_WELCOME:
        return "welcome";
    case PROTO_HOST_CALL:
        return "host_call";
    case PROTO_BLOCKED:
        return "blocked";
    case PROTO_FINISHED:
        return "finished";
    case PROTO_REFUSED:
        return "refused";
    case PROTO_CONSOLE:
        return "console";
    default:
        return "unknown";
    }
}

const char *proto_error_name(enum proto_error err)
{
    switch (err) {
    case PROTO_OK:
        return "ok";
    case PROTO_ERR_UNKNOWN_TAG:
        return "unknown_tag";
    case PROTO_ERR_TRUNCATED:
        return "truncated";
    case PROTO_ERR_FIELD_TOO_LONG:
        return "field_too_long";
    case PROTO_ERR_TOO_MANY_ENTRIES:
        return "too_many_entries";
    case PROTO_ERR_INVALID_UTF8:
        return "invalid_utf8";
    case PROTO_ERR_EMBEDDED_NUL:
        return "embedded_nul";
    case PROTO_ERR_BAD_ENUM:
        return "bad_enum";
    case PROTO_ERR_TRAILING_BYTES:
        return "trailing_bytes";
    case PROTO_ERR_NO_MEMORY:
        return "no_memory";
    case PROTO_ERR_TOO_LARGE_FOR_FRAME:
        return "too_large_for_frame";
    case PROTO_ERR_INVALID_ARGUMENT:
        return "invalid_argument";
    }
    return "unknown";
}

const char *proto_refusal_name(enum proto_refusal reason)
{
    switch (reason) {
    case PROTO_REFUSAL_MALFORMED:
        return "malformed";
    case PROTO_REFUSAL_OVERSIZED:
        return "oversized";
    case PROTO_REFUSAL_UNEXPECTED_FRAME:
        return "unexpected_frame";
    case PROTO_REFUSAL_VERSION_MISMATCH:
        return "version_mismatch";
    case PROTO_REFUSAL_UNKNOWN_POSITION:
        return "unknown_position";
    case PROTO_REFUSAL_DELIVERY_ORDER_REGRESSION:
        return "delivery_order_regression";
    }
    return "unknown";
}

const char *proto_outcome_name(enum proto_outcome outcome)
{
    switch (outcome) {
    case PROTO_OUTCOME_COMPLETED:
        return "completed";
    case PROTO_OUTCOME_FAILED:
        return "failed";
    case PROTO_OUTCOME_SUSPENDED:
        return "suspended";
    case PROTO_OUTCOME_STALLED:
        return "stalled";
    case PROTO_OUTCOME_BUDGET_EXHAUSTED:
        return "budget_exhausted";
    }
    return "unknown";
}

const char *proto_budget_name(enum proto_budget budget)
{
    switch (budget) {
    case PROTO_BUDGET_CPU:
        return "cpu";
    case PROTO_BUDGET_MEMORY:
        return "memory";
    case PROTO_BUDGET_STACK:
        return "stack";
    }
    return "unknown";
}

/* Largest valid byte of each wire enum (the smallest is always 1). */
#define PROFILE_MAX PROTO_PROFILE_CODEMODE
#define SETTLEMENT_MAX PROTO_SETTLEMENT_REJECTED
#define OUTCOME_MAX PROTO_OUTCOME_BUDGET_EXHAUSTED
#define BUDGET_MAX PROTO_BUDGET_STACK
#define REFUSAL_MAX PROTO_REFUSAL_DELIVERY_ORDER_REGRESSION
#define LANDLOCK_POLICY_MAX LANDLOCK_POLICY_OPTIONAL

/* The rules every text field obeys, on both sides. */
static enum proto_error check_text(const uint8_t *bytes, size_t len, size_t max_len)
{
    if (len > max_len)
        return PROTO_ERR_FIELD_TOO_LONG;
    if (len == 0)
        return PROTO_OK;
    if (!bytes)
        return PROTO_ERR_INVALID_ARGUMENT;
    if (memchr(bytes, 0, len))
        return PROTO_ERR_EMBEDDED_NUL;
    if (!utf8_valid(bytes, len))
        return PROTO_ERR_INVALID_UTF8;
    return PROTO_OK;
}

/* ------------------------------------------------------------------ encode */

/* The first error sticks, with the field it happened in; later puts do nothing. */
struct encoder {
    struct wire_buf *buf;
    enum proto_error err;
    const char *field;
};

static void encode_fail(struct encoder *enc, const char *field, enum proto_error err)
{
    if (enc->err == PROTO_OK) {
        enc->err = err;
        enc->field = field;
    }
}

static void put_u8(struct encoder *enc, const char *field, uint8_t value)
{
    if (enc->err == PROTO_OK && !wire_put_u8(enc->buf, value))
        encode_fail(enc, field, PROTO_ERR_NO_MEMORY);
}

static void put_u32(struct encoder *enc, const char *field, uint32_t value)
{
    if (enc->err == PROTO_OK && !wire_put_u32(enc->buf, value))
        encode_fail(enc, field, PROTO_ERR_NO_MEMORY);
}

static void put_u64(struct encoder *enc, const char *field, uint64_t value)
{
    if (enc->err == PROTO_OK && !wire_put_u64(enc->buf, value))
        encode_fail(enc, field, PROTO_ERR_NO_MEMORY);
}

static void put_enum(struct encoder *enc, const char *field, unsigned value, unsigned max_value)
{
    if (value < 1 || value > max_value)
        encode_fail(enc, field, PROTO_ERR_BAD_ENUM);
    else
        put_u8(enc, field, (uint8_t)value);
}

static void put_digest(struct encoder *enc, const char *field,
                       const uint8_t digest[PROTO_DIGEST_BYTES])
{
    if (enc->err == PROTO_OK && !wire_put_raw(enc->buf, digest, PROTO_DIGEST_BYTES))
        encode_fail(enc, field, PROTO_ERR_NO_MEMORY);
}

static void put_text(struct encoder *enc, const char *field, struct proto_text text,
                     size_t max_len)
{
    if (enc->err != PROTO_OK)
        return;
    enum proto_error err = check_text((const uint8_t *)text.str, text.len, max_len);
    if (err != PROTO_OK) {
        encode_fail(enc, field, err);
        return;
    }
    if (!wire_put_blob(enc->buf, text.str, text.len))
        encode_fail(enc, field, PROTO_ERR_NO_MEMORY);
    else if (enc->buf->len > PROTO_MAX_FRAME)
        encode_fail(enc, field, PROTO_ERR_TOO_LARGE_FOR_FRAME); /* stop growing early */
}

static bool check_count(struct encoder *enc, const char *field, const void *items, size_t count)
{
    if (count > PROTO_MAX_LIST_ENTRIES) {
        encode_fail(enc, field, PROTO_ERR_TOO_MANY_ENTRIES);
        return false;
    }
    if (count > 0 && !items) {
        encode_fail(enc, field, PROTO_ERR_INVALID_ARGUMENT);
        return false;
    }
    return true;
}

static void put_positions(struct encoder *enc, const char *field, struct proto_positions list)
{
    if (!check_count(enc, field, list.items, list.count))
        return;
    put_u32(enc, field, (uint32_t)list.count);
    for (size_t i = 0; i < list.count && enc->err == PROTO_OK; i++)
        put_u32(enc, field, list.items[i]);
}

static void encode_activate(struct encoder *enc, const struct proto_activate *m)
{
    put_u64(enc, "activate.activation_id", m->activation_id);
    put_enum(enc, "activate.profile", m->profile, PROFILE_MAX);
    put_text(enc, "activate.script", m->script, PROTO_MAX_SCRIPT_BYTES);
    put_text(enc, "activate.script_name", m->script_name, PROTO_MAX_SCRIPT_NAME_BYTES);
    put_u8(enc, "activate.compile_only", m->compile_only ? 1 : 0);
    put_text(enc, "activate.trigger", m->trigger, PROTO_MAX_JSON_BYTES);
    put_u32(enc, "activate.budgets.cpu_ms", m->budgets.cpu_ms);
    put_u64(enc, "activate.budgets.heap_bytes", m->budgets.heap_bytes);
    put_u32(enc, "activate.budgets.stack_bytes", m->budgets.stack_bytes);
    put_u32(enc, "activate.budgets.max_value_bytes", m->budgets.max_value_bytes);
    if (!check_count(enc, "activate.prefix", m->prefix, m->prefix_count))
        return;
    put_u32(enc, "activate.prefix", (uint32_t)m->prefix_count);
    for (size_t i = 0; i < m->prefix_count && enc->err == PROTO_OK; i++) {
        const struct proto_recorded_entry *entry = &m->prefix[i];
        put_u32(enc, "activate.prefix.position", entry->position);
        put_text(enc, "activate.prefix.kind", entry->kind, PROTO_MAX_KIND_BYTES);
        put_digest(enc, "activate.prefix.args_digest", entry->args_digest);
        put_enum(enc, "activate.prefix.settlement", entry->settlement, SETTLEMENT_MAX);
        put_text(enc, "activate.prefix.value", entry->value, PROTO_MAX_JSON_BYTES);
        put_u32(enc, "activate.prefix.delivery_order", entry->delivery_order);
    }
}

static void encode_welcome(struct encoder *enc, const struct proto_welcome *m)
{
    put_u32(enc, "welcome.protocol_version", m->protocol_version);
    put_text(enc, "welcome.engine", m->engine, PROTO_MAX_IDENTITY_BYTES);
    put_digest(enc, "welcome.prelude_hash", m->prelude_hash);
    put_text(enc, "welcome.worker_version", m->worker_version, PROTO_MAX_IDENTITY_BYTES);
    put_text(enc, "welcome.os", m->os, PROTO_MAX_IDENTITY_BYTES);
    put_u8(enc, "welcome.seccomp", m->seccomp ? 1 : 0);
    put_enum(enc, "welcome.landlock_policy", m->landlock_policy, LANDLOCK_POLICY_MAX);
    put_u32(enc, "welcome.landlock_runtime_abi", m->landlock_runtime_abi);
    put_u32(enc, "welcome.landlock_applied_abi", m->landlock_applied_abi);
    put_u8(enc, "welcome.seatbelt", m->seatbelt ? 1 : 0);
    put_u8(enc, "welcome.windows_lpac_token", m->windows_lpac_token ? 1 : 0);
    put_u8(enc, "welcome.windows_untrusted_integrity", m->windows_untrusted_integrity ? 1 : 0);
    put_u8(enc, "welcome.windows_no_thread_token", m->windows_no_thread_token ? 1 : 0);
    put_u8(enc, "welcome.windows_mitigations", m->windows_mitigations ? 1 : 0);
    put_u8(enc, "welcome.windows_handle_inventory", m->windows_handle_inventory ? 1 : 0);
}

static void encode_finished(struct encoder *enc, const struct proto_finished *m)
{
    put_enum(enc, "finished.outcome", m->outcome, OUTCOME_MAX);
    switch (m->outcome) {
    case PROTO_OUTCOME_COMPLETED:
        put_text(enc, "finished.value", m->value, PROTO_MAX_JSON_BYTES);
        break;
    case PROTO_OUTCOME_FAILED:
        put_text(enc, "finished.failure_kind", m->failure_kind, PROTO_MAX_KIND_BYTES);
        put_text(enc, "finished.failure_detail", m->failure_detail, PROTO_MAX_DETAIL_BYTES);
        break;
    case PROTO_OUTCOME_SUSPENDED:
    case PROTO_OUTCOME_STALLED:
        break;
    case PROTO_OUTCOME_BUDGET_EXHAUSTED:
        put_enum(enc, "finished.exhausted", m->exhausted, BUDGET_MAX);
        break;
    }
}

enum proto_error proto_encode_where(const struct proto_msg *msg, struct wire_buf *buf,
                                    struct proto_where *where)
{
    struct encoder enc = {.buf = buf, .err = PROTO_OK, .field = NULL};
    wire_buf_reset(buf);
    put_u8(&enc, "tag", (uint8_t)msg->tag);

    switch (msg->tag) {
    case PROTO_HELLO:
        put_u32(&enc, "hello.version", msg->hello.version);
        break;
    case PROTO_ACTIVATE:
        encode_activate(&enc, &msg->activate);
        break;
    case PROTO_DELIVER:
        put_u32(&enc, "deliver.position", msg->deliver.position);
        put_enum(&enc, "deliver.settlement", msg->deliver.settlement, SETTLEMENT_MAX);
        put_text(&enc, "deliver.value", msg->deliver.value, PROTO_MAX_JSON_BYTES);
        put_u32(&enc, "deliver.delivery_order", msg->deliver.delivery_order);
        break;
    case PROTO_LONG_RUNNING:
        put_positions(&enc, "long_running.positions", msg->long_running);
        break;
    case PROTO_SHUTDOWN:
        break;
    case PROTO_WELCOME:
        encode_welcome(&enc, &msg->welcome);
        break;
    case PROTO_HOST_CALL:
        put_u32(&enc, "host_call.position", msg->host_call.position);
        put_text(&enc, "host_call.kind", msg->host_call.kind, PROTO_MAX_KIND_BYTES);
        put_text(&enc, "host_call.args", msg->host_call.args, PROTO_MAX_JSON_BYTES);
        break;
    case PROTO_BLOCKED:
        put_positions(&enc, "blocked.positions", msg->blocked);
        break;
    case PROTO_FINISHED:
        encode_finished(&enc, &msg->finished);
        break;
    case PROTO_REFUSED:
        put_enum(&enc, "refused.reason", msg->refused.reason, REFUSAL_MAX);
        put_text(&enc, "refused.detail", msg->refused.detail, PROTO_MAX_DETAIL_BYTES);
        break;
    case PROTO_CONSOLE:
        put_text(&enc, "console.stream", msg->console.stream, PROTO_MAX_IDENTITY_BYTES);
        put_text(&enc, "console.text", msg->console.text, PROTO_MAX_CONSOLE_BYTES);
        break;
    default:
        encode_fail(&enc, "tag", PROTO_ERR_UNKNOWN_TAG);
        break;
    }

    if (enc.err == PROTO_OK && buf->len > PROTO_MAX_FRAME)
        encode_fail(&enc, "message", PROTO_ERR_TOO_LARGE_FOR_FRAME);
    if (where) {
        where->field = enc.field;
        where->offset = 0;
    }
    return enc.err;
}

enum proto_error proto_encode(const struct proto_msg *msg, struct wire_buf *buf)
{
    return proto_encode_where(msg, buf, NULL);
}

/* ------------------------------------------------------------------ decode */

/* The first error sticks, with the field and offset it happened at; later gets
 * return zeroes and read nothing. */
struct decoder {
    struct wire_reader reader;
    size_t len;
    enum proto_error err;
    const char *field;
    size_t offset;
};

static bool decoding(const struct decoder *dec)
{
    return dec->err == PROTO_OK;
}

static size_t decode_offset(const struct decoder *dec)
{
    return dec->len - dec->reader.remaining;
}

static void decode_fail(struct decoder *dec, const char *field, size_t offset,
                        enum proto_error err)
{
    if (dec->err == PROTO_OK) {
        dec->err = err;
        dec->field = field;
        dec->offset = offset;
    }
}

static enum proto_error from_wire(enum wire_status status)
{
    return status == WIRE_TOO_LONG ? PROTO_ERR_FIELD_TOO_LONG : PROTO_ERR_TRUNCATED;
}

static uint8_t get_u8(struct decoder *dec, const char *field)
{
    uint8_t value = 0;
    if (!decoding(dec))
        return 0;
    size_t at = decode_offset(dec);
    enum wire_status status = wire_get_u8(&dec->reader, &value);
    if (status != WIRE_OK) {
        decode_fail(dec, field, at, from_wire(status));
        return 0;
    }
    return value;
}

static uint32_t get_u32(struct decoder *dec, const char *field)
{
    uint32_t value = 0;
    if (!decoding(dec))
        return 0;
    size_t at = decode_offset(dec);
    enum wire_status status = wire_get_u32(&dec->reader, &value);
    if (status != WIRE_OK) {
        decode_fail(dec, field, at, from_wire(status));
        return 0;
    }
    return value;
}

static uint64_t get_u64(struct decoder *dec, const char *field)
{
    uint64_t value = 0;
    if (!decoding(dec))
        return 0;
    size_t at = decode_offset(dec);
    enum wire_status status = wire_get_u64(&dec->reader, &value);
    if (status != WIRE_OK) {
        decode_fail(dec, field, at, from_wire(status));
        return 0;
    }
    return value;
}

/* A wire enum byte in 1..max_value; 0 (never valid) on error. */
static unsigned get_enum(struct decoder *dec, const char *field, unsigned max_value)
{
    size_t at = decode_offset(dec);
    uint8_t value = get_u8(dec, field);
    if (!decoding(dec))
        return 0;
    if (value < 1 || value > max_value) {
        decode_fail(dec, field, at, PROTO_ERR_BAD_ENUM);
        return 0;
    }
    return value;
}

static bool get_bool(struct decoder *dec, const char *field)
{
    size_t at = decode_offset(dec);
    uint8_t value = get_u8(dec, field);
    if (decoding(dec) && value > 1)
        decode_fail(dec, field, at, PROTO_ERR_BAD_ENUM);
    return decoding(dec) && value == 1;
}

static void get_digest(struct decoder *dec, const char *field, uint8_t digest[PROTO_DIGEST_BYTES])
{
    if (!decoding(dec))
        return;
    size_t at = decode_offset(dec);
    enum wire_status status = wire_get_raw(&dec->reader, digest, PROTO_DIGEST_BYTES);
    if (status != WIRE_OK)
        decode_fail(dec, field, at, from_wire(status));
}

/* An owned, NUL-terminated copy of a checked text; *out stays empty on error. */
static void get_text(struct decoder *dec, const char *field, size_t max_len,
                     struct proto_text *out)
{
    if (!decoding(dec))
        return;
    size_t at = decode_offset(dec);
    const uint8_t *bytes = NULL;
    size_t len = 0;
    enum wire_status status = wire_get_blob(&dec->reader, max_len, &bytes, &len);
    if (status != WIRE_OK) {
        decode_fail(dec, field, at, from_wire(status));
        return;
    }
    enum proto_error err = check_text(bytes, len, max_len);
    if (err != PROTO_OK) {
        decode_fail(dec, field, at, err);
        return;
    }
    char *copy = malloc(len + 1); /* len <= PROTO_MAX_FRAME: cannot overflow */
    if (!copy) {
        decode_fail(dec, field, at, PROTO_ERR_NO_MEMORY);
        return;
    }
    if (len > 0)
        memcpy(copy, bytes, len);
    copy[len] = '\0';
    out->str = copy;
    out->len = len;
}

/* A list count, checked against the maximum and against the bytes remaining (each
 * entry needs at least min_entry_bytes) before anything is allocated for it. */
static size_t get_count(struct decoder *dec, const char *field, size_t min_entry_bytes)
{
    size_t at = decode_offset(dec);
    uint32_t count = get_u32(dec, field);
    if (!decoding(dec))
        return 0;
    if (count > PROTO_MAX_LIST_ENTRIES) {
        decode_fail(dec, field, at, PROTO_ERR_TOO_MANY_ENTRIES);
        return 0;
    }
    if (count > dec->reader.remaining / min_entry_bytes) {
        decode_fail(dec, field, at, PROTO_ERR_TRUNCATED);
        return 0;
    }
    return count;
}

static void get_positions(struct decoder *dec, const char *field, struct proto_positions *out)
{
    size_t at = decode_offset(dec);
    size_t count = get_count(dec, field, POSITION_BYTES);
    if (!decoding(dec) || count == 0)
        return;
    uint32_t *items = malloc(count * sizeof *items);
    if (!items) {
        decode_fail(dec, field, at, PROTO_ERR_NO_MEMORY);
        return;
    }
    for (size_t i = 0; i < count; i++)
        items[i] = get_u32(dec, field); /* cannot fail: get_count checked the bytes */
    out->items = items;
    out->count = count;
}

static void decode_activate(struct decoder *dec, struct proto_activate *m)
{
    m->activation_id = get_u64(dec, "activate.activation_id");
    m->profile = (enum proto_profile)get_enum(dec, "activate.profile", PROFILE_MAX);
    get_text(dec, "activate.script", PROTO_MAX_SCRIPT_BYTES, &m->script);
    get_text(dec, "activate.script_name", PROTO_MAX_SCRIPT_NAME_BYTES, &m->script_name);
    m->compile_only = get_bool(dec, "activate.compile_only");
    get_text(dec, "activate.trigger", PROTO_MAX_JSON_BYTES, &m->trigger);
    m->budgets.cpu_ms = get_u32(dec, "activate.budgets.cpu_ms");
    m->budgets.heap_bytes = get_u64(dec, "activate.budgets.heap_bytes");
    m->budgets.stack_bytes = get_u32(dec, "activate.budgets.stack_bytes");
    m->budgets.max_value_bytes = get_u32(dec, "activate.budgets.max_value_bytes");

    size_t at = decode_offset(dec);
    size_t count = get_count(dec, "activate.prefix", RECORDED_ENTRY_MIN_BYTES);
    if (!decoding(dec) || count == 0)
        return;
    struct proto_recorded_entry *entries = malloc(count * sizeof *entries);
    if (!entries) {
        decode_fail(dec, "activate.prefix", at, PROTO_ERR_NO_MEMORY);
        return;
    }
    memset(entries, 0, count * sizeof *entries);
    m->prefix = entries;
    for (size_t i = 0; i < count && decoding(dec); i++) {
        struct proto_recorded_entry *entry = &entries[i];
        m->prefix_count = i + 1; /* so proto_msg_free releases a partly decoded entry */
        entry->position = get_u32(dec, "activate.prefix.position");
        get_text(dec, "activate.prefix.kind", PROTO_MAX_KIND_BYTES, &entry->kind);
        get_digest(dec, "activate.prefix.args_digest", entry->args_digest);
        entry->settlement =
            (enum proto_settlement)get_enum(dec, "activate.prefix.settlement", SETTLEMENT_MAX);
        get_text(dec, "activate.prefix.value", PROTO_MAX_JSON_BYTES, &entry->value);
        entry->delivery_order = get_u32(dec, "activate.prefix.delivery_order");
    }
}

static void decode_welcome(struct decoder *dec, struct proto_welcome *m)
{
    m->protocol_version = get_u32(dec, "welcome.protocol_version");
    get_text(dec, "welcome.engine", PROTO_MAX_IDENTITY_BYTES, &m->engine);
    get_digest(dec, "welcome.prelude_hash", m->prelude_hash);
    get_text(dec, "welcome.worker_version", PROTO_MAX_IDENTITY_BYTES, &m->worker_version);
    get_text(dec, "welcome.os", PROTO_MAX_IDENTITY_BYTES, &m->os);
    m->seccomp = get_bool(dec, "welcome.seccomp");
    m->landlock_policy =
        (enum landlock_policy)get_enum(dec, "welcome.landlock_policy", LANDLOCK_POLICY_MAX);
    m->landlock_runtime_abi = get_u32(dec, "welcome.landlock_runtime_abi");
    m->landlock_applied_abi = get_u32(dec, "welcome.landlock_applied_abi");
    m->seatbelt = get_bool(dec, "welcome.seatbelt");
    m->windows_lpac_token = get_bool(dec, "welcome.windows_lpac_token");
    m->windows_untrusted_integrity = get_bool(dec, "welcome.windows_untrusted_integrity");
    m->windows_no_thread_token = get_bool(dec, "welcome.windows_no_thread_token");
    m->windows_mitigations = get_bool(dec, "welcome.windows_mitigations");
    m->windows_handle_inventory = get_bool(dec, "welcome.windows_handle_inventory");
}

static void decode_finished(struct decoder *dec, struct proto_finished *m)
{
    m->outcome = (enum proto_outcome)get_enum(dec, "finished.outcome", OUTCOME_MAX);
    switch (m->outcome) {
    case PROTO_OUTCOME_COMPLETED:
        get_text(dec, "finished.value", PROTO_MAX_JSON_BYTES, &m->value);
        break;
    case PROTO_OUTCOME_FAILED:
        get_text(dec, "finished.failure_kind", PROTO_MAX_KIND_BYTES, &m->failure_kind);
        get_text(dec, "finished.failure_detail", PROTO_MAX_DETAIL_BYTES, &m->failure_detail);
        break;
    case PROTO_OUTCOME_SUSPENDED:
    case PROTO_OUTCOME_STALLED:
        break;
    case PROTO_OUTCOME_BUDGET_EXHAUSTED:
        m->exhausted = (enum proto_budget)get_enum(dec, "finished.exhausted", BUDGET_MAX);
        break;
    }
}

enum proto_error proto_decode_where(const uint8_t *payload, size_t len, struct proto_msg *out,
                                    struct proto_where *where)
{
    memset(out, 0, sizeof *out);
    struct decoder dec = {.len = payload ? len : 0, .err = PROTO_OK};
    wire_reader_init(&dec.reader, payload, dec.len);

    uint8_t tag = get_u8(&dec, "tag");
    if (decoding(&dec)) {
        out->tag = (enum proto_tag)tag; /* set first: proto_msg_free needs it on error */
        switch (tag) {
        case PROTO_HELLO:
            out->hello.version = get_u32(&dec, "hello.version");
            break;
        case PROTO_ACTIVATE:
            decode_activate(&dec, &out->activate);
            break;
        case PROTO_DELIVER:
            out->deliver.position = get_u32(&dec, "deliver.position");
            out->deliver.settlement =
                (enum proto_settlement)get_enum(&dec, "deliver.settlement", SETTLEMENT_MAX);
            get_text(&dec, "deliver.value", PROTO_MAX_JSON_BYTES, &out->deliver.value);
            out->deliver.delivery_order = get_u32(&dec, "deliver.delivery_order");
            break;
        case PROTO_LONG_RUNNING:
            get_positions(&dec, "long_running.positions", &out->long_running);
            break;
        case PROTO_SHUTDOWN:
            break;
        case PROTO_WELCOME:
            decode_welcome(&dec, &out->welcome);
            break;
        case PROTO_HOST_CALL:
            out->host_call.position = get_u32(&dec, "host_call.position");
            get_text(&dec, "host_call.kind", PROTO_MAX_KIND_BYTES, &out->host_call.kind);
            get_text(&dec, "host_call.args", PROTO_MAX_JSON_BYTES, &out->host_call.args);
            break;
        case PROTO_BLOCKED:
            get_positions(&dec, "blocked.positions", &out->blocked);
            break;
        case PROTO_FINISHED:
            decode_finished(&dec, &out->finished);
            break;
        case PROTO_REFUSED:
            out->refused.reason =
                (enum proto_refusal)get_enum(&dec, "refused.reason", REFUSAL_MAX);
            get_text(&dec, "refused.detail", PROTO_MAX_DETAIL_BYTES, &out->refused.detail);
            break;
        case PROTO_CONSOLE:
            get_text(&dec, "console.stream", PROTO_MAX_IDENTITY_BYTES, &out->console.stream);
            get_text(&dec, "console.text", PROTO_MAX_CONSOLE_BYTES, &out->console.text);
            break;
        default:
            decode_fail(&dec, "tag", 0, PROTO_ERR_UNKNOWN_TAG);
            break;
        }
    }
    if (decoding(&dec) && dec.reader.remaining > 0)
        decode_fail(&dec, "end", decode_offset(&dec), PROTO_ERR_TRAILING_BYTES);

    if (!decoding(&dec))
        proto_msg_free(out);
    if (where) {
        where->field = dec.field;
        where->offset = dec.offset;
    }
    return dec.err;
}

enum proto_error proto_decode(const uint8_t *payload, size_t len, struct proto_msg *out)
{
    return proto_decode_where(payload, len, out, NULL);
}

/* ------------------------------------------------------------------ free */

/* Decoded texts and lists are the decoder's own allocations, reached through the
 * const pointers the message type uses for both directions. Copying the pointer's
 * bytes drops the qualifier without a cast (which -Wcast-qual would reject). */
static void release(const void *owned)
{
    void *mutable_pointer = NULL;
    memcpy(&mutable_pointer, &owned, sizeof mutable_pointer);
    free(mutable_pointer);
}

char *proto_text_take(struct proto_text *text)
{
    char *owned = NULL;
    memcpy(&owned, &text->str, sizeof owned); /* as in release: drops the qualifier */
    text->str = NULL;
    text->len = 0;
    return owned;
}

static void release_text(struct proto_text *text)
{
    free(proto_text_take(text));
}

void proto_msg_free(struct proto_msg *msg)
{
    switch (msg->tag) {
    case PROTO_ACTIVATE: {
        struct proto_activate *m = &msg->activate;
        release_text(&m->script);
        release_text(&m->script_name);
        release_text(&m->trigger);
        for (size_t i = 0; i < m->prefix_count; i++) {
            release(m->prefix[i].kind.str);
            release(m->prefix[i].value.str);
        }
        release(m->prefix);
        break;
    }
    case PROTO_DELIVER:
        release_text(&msg->deliver.value);
        break;
    case PROTO_LONG_RUNNING:
        release(msg->long_running.items);
        break;
    case PROTO_WELCOME:
        release_text(&msg->welcome.engine);
        release_text(&msg->welcome.worker_version);
        release_text(&msg->welcome.os);
        break;
    case PROTO_HOST_CALL:
        release_text(&msg->host_call.kind);
        release_text(&msg->host_call.args);
        break;
    case PROTO_BLOCKED:
        release(msg->blocked.items);
        break;
    case PROTO_FINISHED:
        release_text(&msg->finished.value);
        release_text(&msg->finished.failure_kind);
        release_text(&msg->finished.failure_detail);
        break;
    case PROTO_REFUSED:
        release_text(&msg->refused.detail);
        break;
    case PROTO_CONSOLE:
        release_text(&msg->console.stream);
        release_text(&msg->console.text);
        break;
    case PROTO_HELLO:
    case PROTO_SHUTDOWN:
    default:
        break;
    }
    memset(msg, 0, sizeof *msg);
}
