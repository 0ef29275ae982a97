/* Unit tests of the protocol codec (src/proto): wire primitives, frames on pipes and in
 * memory, every message's round trip, every decode error, UTF-8 rules.
 * Prints "ok - name" or "not ok - name: why" per check; exits 1 if any failed. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/channel.h"
#include "proto/frame.h"
#include "proto/frame_reader.h"
#include "proto/message.h"
#include "proto/utf8.h"
#include "proto/wire.h"

static int failures;

static void check(const char *name, int passed, const char *why_fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void check(const char *name, int passed, const char *why_fmt, ...)
{
    if (passed) {
        printf("ok - %s\n", name);
        return;
    }
    failures++;
    printf("not ok - %s: ", name);
    va_list args;
    va_start(args, why_fmt);
    vprintf(why_fmt, args);
    va_end(args);
    printf("\n");
}

/* ------------------------------------------------------------------ helpers */

static int text_is(struct proto_text text, const char *expected)
{
    size_t len = strlen(expected);
    return text.len == len && text.str && memcmp(text.str, expected, len) == 0 &&
           text.str[len] == '\0';
}

/* Encodes msg, decodes it, re-encodes the result and checks both encodings are the
 * same bytes; leaves the decoded message in *decoded (caller frees). */
static int round_trip(const char *name, const struct proto_msg *msg, struct proto_msg *decoded)
{
    struct wire_buf first = {0};
    struct wire_buf second = {0};
    int passed = 0;
    enum proto_error err = proto_encode(msg, &first);
    if (err != PROTO_OK) {
        check(name, 0, "encode: %s", proto_error_name(err));
        goto out;
    }
    struct proto_where where = {0};
    err = proto_decode_where(first.data, first.len, decoded, &where);
    if (err != PROTO_OK) {
        check(name, 0, "decode: %s at %s", proto_error_name(err), where.field);
        goto out;
    }
    if (decoded->tag != msg->tag) {
        check(name, 0, "tag %u became %u", (unsigned)msg->tag, (unsigned)decoded->tag);
        goto out;
    }
    err = proto_encode(decoded, &second);
    if (err != PROTO_OK || second.len != first.len ||
        memcmp(first.data, second.data, first.len) != 0) {
        check(name, 0, "re-encoding differs (%s)", proto_error_name(err));
        goto out;
    }
    passed = 1;
out:
    wire_buf_free(&first);
    wire_buf_free(&second);
    return passed;
}

/* Decodes raw bytes and checks the error (and the field, when given). */
static void expect_decode(const char *name, const uint8_t *bytes, size_t len,
                          enum proto_error expected, const char *expected_field)
{
    struct proto_msg msg;
    struct proto_where where = {0};
    enum proto_error err = proto_decode_where(bytes, len, &msg, &where);
    int zeroed = msg.tag == 0;
    proto_msg_free(&msg);
    if (err != expected) {
        check(name, 0, "got %s at %s, expected %s", proto_error_name(err),
              where.field ? where.field : "-", proto_error_name(expected));
        return;
    }
    if (expected != PROTO_OK && !zeroed) {
        check(name, 0, "message not zeroed after error");
        return;
    }
    if (expected_field && (!where.field || strcmp(where.field, expected_field) != 0)) {
        check(name, 0, "field %s, expected %s", where.field ? where.field : "-",
              expected_field);
        return;
    }
    check(name, 1, "-");
}

static void expect_encode(const char *name, const struct proto_msg *msg,
                          enum proto_error expected)
{
    struct wire_buf buf = {0};
    enum proto_error err = proto_encode(msg, &buf);
    wire_buf_free(&buf);
    check(name, err == expected, "got %s, expected %s", proto_error_name(err),
          proto_error_name(expected));
}

/* A builder for hand-made payloads. */
struct bytes {
    uint8_t data[256];
    size_t len;
};

static void add_u8(struct bytes *b, uint8_t v)
{
    b->data[b->len++] = v;
}

static void add_u32(struct bytes *b, uint32_t v)
{
    add_u8(b, (uint8_t)(v >> 24));
    add_u8(b, (uint8_t)(v >> 16));
    add_u8(b, (uint8_t)(v >> 8));
    add_u8(b, (uint8_t)v);
}

static void add_blob(struct bytes *b, const void *data, size_t len)
{
    add_u32(b, (uint32_t)len);
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

/* A Console message whose text is the given bytes. */
static struct bytes console_with_text(const void *text, size_t len)
{
    struct bytes b = {.len = 0};
    add_u8(&b, PROTO_CONSOLE);
    add_blob(&b, "log", 3);
    add_blob(&b, text, len);
    return b;
}

static const uint8_t digest_a[PROTO_DIGEST_BYTES] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff,
};

static struct proto_msg sample_welcome(void)
{
    struct proto_msg msg = {.tag = PROTO_WELCOME};
    msg.welcome.protocol_version = PROTO_VERSION;
    msg.welcome.engine = proto_text_of("quickjs 2021-03-27");
    memcpy(msg.welcome.prelude_hash, digest_a, PROTO_DIGEST_BYTES);
    msg.welcome.worker_version = proto_text_of("0.1.0 (abc123)");
    msg.welcome.os = proto_text_of("linux");
    msg.welcome.seccomp = true;
    msg.welcome.landlock_policy = LANDLOCK_POLICY_REQUIRED;
    msg.welcome.landlock_runtime_abi = 6;
    msg.welcome.landlock_applied_abi = 6;
    return msg;
}

/* ------------------------------------------------------------------ messages */

static void test_round_trips(void)
{
    struct proto_msg out;

    struct proto_msg hello = {.tag = PROTO_HELLO, .hello = {.version = PROTO_VERSION}};
    if (round_trip("round trip hello", &hello, &out))
        check("round trip hello", out.hello.version == PROTO_VERSION, "version %u",
              out.hello.version);
    proto_msg_free(&out);

    struct proto_recorded_entry prefix[2] = {
        {.position = 0, .kind = proto_text_of("kv.get"), .settlement = PROTO_SETTLEMENT_FULFILLED,
         .value = proto_text_of("{\"v\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}"),
         .delivery_order = 0},
        {.position = 1, .kind = proto_text_of("net.fetch"),
         .settlement = PROTO_SETTLEMENT_REJECTED, .value = proto_text_of(""), .delivery_order = 1},
    };
    memcpy(prefix[0].args_digest, digest_a, PROTO_DIGEST_BYTES);
    struct proto_msg activate = {.tag = PROTO_ACTIVATE};
    activate.activate.activation_id = 0x0123456789abcdefULL;
    activate.activate.profile = PROTO_PROFILE_CODEMODE;
    activate.activate.script = proto_text_of("return await kv.get('x');");
    activate.activate.script_name = proto_text_of("/srv/job.js");
    activate.activate.compile_only = true;
    activate.activate.trigger = proto_text_of("{\"kind\":\"manual\"}");
    activate.activate.budgets.cpu_ms = 1000;
    activate.activate.budgets.heap_bytes = 0x100000000ULL;
    activate.activate.budgets.stack_bytes = 1u << 20;
    activate.activate.budgets.max_value_bytes = 256u * 1024u;
    activate.activate.prefix = prefix;
    activate.activate.prefix_count = 2;
    if (round_trip("round trip activate", &activate, &out)) {
        const struct proto_activate *a = &out.activate;
        int same = a->activation_id == 0x0123456789abcdefULL &&
                   a->profile == PROTO_PROFILE_CODEMODE &&
                   text_is(a->script, "return await kv.get('x');") &&
                   text_is(a->script_name, "/srv/job.js") && a->compile_only &&
                   text_is(a->trigger, "{\"kind\":\"manual\"}") && a->budgets.cpu_ms == 1000 &&
                   a->budgets.heap_bytes == 0x100000000ULL && a->budgets.stack_bytes == 1u << 20 &&
                   a->budgets.max_value_bytes == 256u * 1024u && a->prefix_count == 2 &&
                   text_is(a->prefix[0].kind, "kv.get") &&
                   memcmp(a->prefix[0].args_digest, digest_a, PROTO_DIGEST_BYTES) == 0 &&
                   a->prefix[1].settlement == PROTO_SETTLEMENT_REJECTED &&
                   text_is(a->prefix[1].value, "") && a->prefix[1].delivery_order == 1;
        check("round trip activate fields", same, "a field differs");
    }
    proto_msg_free(&out);

    struct proto_msg empty_activate = {.tag = PROTO_ACTIVATE};
    empty_activate.activate.profile = PROTO_PROFILE_FLOW;
    if (round_trip("round trip activate without prefix", &empty_activate, &out))
        check("round trip activate without prefix", out.activate.prefix == NULL &&
                                                         out.activate.prefix_count == 0 &&
                                                         text_is(out.activate.script, ""),
              "empty fields not empty");
    proto_msg_free(&out);

    struct proto_msg deliver = {.tag = PROTO_DELIVER};
    deliver.deliver.position = 7;
    deliver.deliver.settlement = PROTO_SETTLEMENT_FULFILLED;
    deliver.deliver.value = proto_text_of("[1,2,3]");
    deliver.deliver.delivery_order = 3;
    if (round_trip("round trip deliver", &deliver, &out))
        check("round trip deliver", out.deliver.position == 7 &&
                                        out.deliver.settlement == PROTO_SETTLEMENT_FULFILLED &&
                                        text_is(out.deliver.value, "[1,2,3]") &&
                                        out.deliver.delivery_order == 3,
              "a field differs");
    proto_msg_free(&out);

    const uint32_t positions[3] = {4, 9, 0xffffffffu};
    struct proto_msg long_running = {.tag = PROTO_LONG_RUNNING,
                                     .long_running = {.items = positions, .count = 3}};
    if (round_trip("round trip long_running", &long_running, &out))
        check("round trip long_running", out.long_running.count == 3 &&
                                             out.long_running.items[2] == 0xffffffffu,
              "positions differ");
    proto_msg_free(&out);

    struct proto_msg shutdown = {.tag = PROTO_SHUTDOWN};
    if (round_trip("round trip shutdown", &shutdown, &out))
        check("round trip shutdown", 1, "-");
    proto_msg_free(&out);

    struct proto_msg welcome = sample_welcome();
    if (round_trip("round trip welcome", &welcome, &out)) {
        const struct proto_welcome *w = &out.welcome;
        check("round trip welcome fields",
              w->protocol_version == PROTO_VERSION && text_is(w->engine, "quickjs 2021-03-27") &&
                  memcmp(w->prelude_hash, digest_a, PROTO_DIGEST_BYTES) == 0 &&
                  text_is(w->worker_version, "0.1.0 (abc123)") && text_is(w->os, "linux") &&
                  w->seccomp && w->landlock_policy == LANDLOCK_POLICY_REQUIRED &&
                  w->landlock_runtime_abi == 6 && w->landlock_applied_abi == 6 &&
                  !w->seatbelt,
              "a field differs");
    }
    proto_msg_free(&out);

    /* The macOS worker's Welcome: os macos, Seatbelt in force, nothing of Linux's. */
    struct proto_msg macos = sample_welcome();
    macos.welcome.os = proto_text_of("macos");
    macos.welcome.seccomp = false;
    macos.welcome.landlock_runtime_abi = 0;
    macos.welcome.landlock_applied_abi = 0;
    macos.welcome.seatbelt = true;
    if (round_trip("round trip welcome macos", &macos, &out))
        check("round trip welcome macos: os macos and seatbelt true come back",
              text_is(out.welcome.os, "macos") && out.welcome.seatbelt && !out.welcome.seccomp,
              "a field differs");
    proto_msg_free(&out);

    /* The Windows worker's Welcome: os windows and its five fields, each its own byte. */
    struct proto_msg windows = macos;
    windows.welcome.os = proto_text_of("windows");
    windows.welcome.seatbelt = false;
    windows.welcome.windows_lpac_token = true;
    windows.welcome.windows_untrusted_integrity = false;
    windows.welcome.windows_no_thread_token = true;
    windows.welcome.windows_mitigations = false;
    windows.welcome.windows_handle_inventory = true;
    if (round_trip("round trip welcome windows", &windows, &out))
        check("round trip welcome windows: the five fields come back, each its own",
              text_is(out.welcome.os, "windows") && !out.welcome.seatbelt &&
                  out.welcome.windows_lpac_token && !out.welcome.windows_untrusted_integrity &&
                  out.welcome.windows_no_thread_token && !out.welcome.windows_mitigations &&
                  out.welcome.windows_handle_inventory,
              "a field differs");
    proto_msg_free(&out);

    welcome.welcome.seccomp = false;
    welcome.welcome.landlock_policy = LANDLOCK_POLICY_OPTIONAL;
    welcome.welcome.landlock_runtime_abi = 0;
    welcome.welcome.landlock_applied_abi = 0;
    if (round_trip("round trip welcome unconfined", &welcome, &out))
        check("round trip welcome unconfined",
              !out.welcome.seccomp && out.welcome.landlock_policy == LANDLOCK_POLICY_OPTIONAL,
              "a field differs");
    proto_msg_free(&out);

    struct proto_msg host_call = {.tag = PROTO_HOST_CALL};
    host_call.host_call.position = 12;
    host_call.host_call.kind = proto_text_of("fs.read");
    host_call.host_call.args = proto_text_of("{\"path\":\"/etc/hosts\"}");
    if (round_trip("round trip host_call", &host_call, &out))
        check("round trip host_call", out.host_call.position == 12 &&
                                          text_is(out.host_call.kind, "fs.read") &&
                                          text_is(out.host_call.args, "{\"path\":\"/etc/hosts\"}"),
              "a field differs");
    proto_msg_free(&out);

    struct proto_msg blocked = {.tag = PROTO_BLOCKED, .blocked = {.items = positions, .count = 2}};
    if (round_trip("round trip blocked", &blocked, &out))
        check("round trip blocked", out.blocked.count == 2 && out.blocked.items[1] == 9,
              "positions differ");
    proto_msg_free(&out);

    struct proto_msg blocked_none = {.tag = PROTO_BLOCKED};
    if (round_trip("round trip blocked empty", &blocked_none, &out))
        check("round trip blocked empty", out.blocked.count == 0 && out.blocked.items == NULL,
              "not empty");
    proto_msg_free(&out);

    struct proto_msg finished = {.tag = PROTO_FINISHED};
    finished.finished.outcome = PROTO_OUTCOME_COMPLETED;
    finished.finished.value = proto_text_of("{\"ok\":true}");
    if (round_trip("round trip finished completed", &finished, &out))
        check("round trip finished completed", text_is(out.finished.value, "{\"ok\":true}"),
              "value differs");
    proto_msg_free(&out);

    finished.finished.outcome = PROTO_OUTCOME_FAILED;
    finished.finished.failure_kind = proto_text_of("TypeError");
    finished.finished.failure_detail = proto_text_of("x is not a function");
    if (round_trip("round trip finished failed", &finished, &out))
        check("round trip finished failed",
              text_is(out.finished.failure_kind, "TypeError") &&
                  text_is(out.finished.failure_detail, "x is not a function") &&
                  out.finished.value.str == NULL,
              "a field differs (or an unencoded field was decoded)");
    proto_msg_free(&out);

    const enum proto_outcome bare[2] = {PROTO_OUTCOME_SUSPENDED, PROTO_OUTCOME_STALLED};
    for (int i = 0; i < 2; i++) {
        struct proto_msg m = {.tag = PROTO_FINISHED, .finished = {.outcome = bare[i]}};
        char name[64];
        snprintf(name, sizeof name, "round trip finished %s", proto_outcome_name(bare[i]));
        if (round_trip(name, &m, &out))
            check(name, out.finished.outcome == bare[i], "outcome differs");
        proto_msg_free(&out);
    }
    for (unsigned b = PROTO_BUDGET_CPU; b <= PROTO_BUDGET_STACK; b++) {
        struct proto_msg m = {.tag = PROTO_FINISHED};
        m.finished.outcome = PROTO_OUTCOME_BUDGET_EXHAUSTED;
        m.finished.exhausted = (enum proto_budget)b;
        char name[64];
        snprintf(name, sizeof name, "round trip finished budget %s",
                 proto_budget_name((enum proto_budget)b));
        if (round_trip(name, &m, &out))
            check(name, out.finished.exhausted == (enum proto_budget)b, "budget differs");
        proto_msg_free(&out);
    }

    for (unsigned r = PROTO_REFUSAL_MALFORMED; r <= PROTO_REFUSAL_DELIVERY_ORDER_REGRESSION; r++) {
        struct proto_msg m = {.tag = PROTO_REFUSED};
        m.refused.reason = (enum proto_refusal)r;
        m.refused.detail = proto_text_of("idle");
        char name[64];
        snprintf(name, sizeof name, "round trip refused %s",
                 proto_refusal_name((enum proto_refusal)r));
        if (round_trip(name, &m, &out))
            check(name, out.refused.reason == (enum proto_refusal)r &&
                            text_is(out.refused.detail, "idle"),
                  "a field differs");
        proto_msg_free(&out);
    }

    struct proto_msg console = {.tag = PROTO_CONSOLE};
    console.console.stream = proto_text_of("error");
    console.console.text = proto_text_of("line one\nline two");
    if (round_trip("round trip console", &console, &out))
        check("round trip console", text_is(out.console.stream, "error") &&
                                        text_is(out.console.text, "line one\nline two"),
              "a field differs");
    proto_msg_free(&out);
}

/* The exact bytes of Hello and Shutdown, so the layout in docs/protocol.md holds. */
static void test_exact_layout(void)
{
    struct wire_buf buf = {0};
    struct proto_msg hello = {.tag = PROTO_HELLO, .hello = {.version = 0x01020304}};
    static const uint8_t hello_bytes[] = {0x01, 0x01, 0x02, 0x03, 0x04};
    int ok = proto_encode(&hello, &buf) == PROTO_OK && buf.len == sizeof hello_bytes &&
             memcmp(buf.data, hello_bytes, sizeof hello_bytes) == 0;
    check("layout hello", ok, "unexpected bytes");

    struct proto_msg deliver = {.tag = PROTO_DELIVER};
    deliver.deliver.position = 5;
    deliver.deliver.settlement = PROTO_SETTLEMENT_REJECTED;
    deliver.deliver.value = proto_text_of("1");
    deliver.deliver.delivery_order = 2;
    static const uint8_t deliver_bytes[] = {0x03, 0, 0, 0, 5, 0x02, 0, 0, 0, 1, '1', 0, 0, 0, 2};
    ok = proto_encode(&deliver, &buf) == PROTO_OK && buf.len == sizeof deliver_bytes &&
         memcmp(buf.data, deliver_bytes, sizeof deliver_bytes) == 0;
    check("layout deliver", ok, "unexpected bytes");
    wire_buf_free(&buf);
}

static void test_decode_errors(void)
{
    static const uint8_t nothing[1] = {0};
    expect_decode("decode empty payload is truncated", nothing, 0, PROTO_ERR_TRUNCATED, "tag");
    expect_decode("decode NULL payload is truncated", NULL, 0, PROTO_ERR_TRUNCATED, "tag");

    static const uint8_t tags[] = {0x00, 0x06, 0x7f, 0x80, 0x87, 0xff};
    for (size_t i = 0; i < sizeof tags; i++) {
        char name[64];
        snprintf(name, sizeof name, "decode unknown tag 0x%02x", tags[i]);
        expect_decode(name, &tags[i], 1, PROTO_ERR_UNKNOWN_TAG, "tag");
    }

    static const uint8_t short_hello[] = {PROTO_HELLO, 0, 0, 1};
    expect_decode("decode truncated u32", short_hello, sizeof short_hello, PROTO_ERR_TRUNCATED,
                  "hello.version");
    static const uint8_t long_hello[] = {PROTO_HELLO, 0, 0, 0, 1, 0};
    expect_decode("decode trailing byte after hello", long_hello, sizeof long_hello,
                  PROTO_ERR_TRAILING_BYTES, "end");
    static const uint8_t long_shutdown[] = {PROTO_SHUTDOWN, 0};
    expect_decode("decode trailing byte after shutdown", long_shutdown, sizeof long_shutdown,
                  PROTO_ERR_TRAILING_BYTES, "end");
    expect_decode("decode shutdown", long_shutdown, 1, PROTO_OK, NULL);

    /* A text whose length is within the maximum but beyond the bytes present. */
    struct bytes b = {.len = 0};
    add_u8(&b, PROTO_HOST_CALL);
    add_u32(&b, 1);
    add_u32(&b, 10);
    add_u8(&b, 'k');
    expect_decode("decode text longer than remaining", b.data, b.len, PROTO_ERR_TRUNCATED,
                  "host_call.kind");

    /* Too long is judged from the length alone, before the bytes are looked at. */
    b.len = 0;
    add_u8(&b, PROTO_HOST_CALL);
    add_u32(&b, 1);
    add_u32(&b, PROTO_MAX_KIND_BYTES + 1);
    expect_decode("decode kind over its maximum", b.data, b.len, PROTO_ERR_FIELD_TOO_LONG,
                  "host_call.kind");
    b.len = 0;
    add_u8(&b, PROTO_HOST_CALL);
    add_u32(&b, 1);
    add_blob(&b, "k", 1);
    add_u32(&b, 0xffffffffu);
    expect_decode("decode args length 0xffffffff", b.data, b.len, PROTO_ERR_FIELD_TOO_LONG,
                  "host_call.args");
    b.len = 0;
    add_u8(&b, PROTO_ACTIVATE);
    for (int i = 0; i < 8; i++)
        add_u8(&b, 0);
    add_u8(&b, PROTO_PROFILE_FLOW);
    add_u32(&b, PROTO_MAX_SCRIPT_BYTES + 1);
    expect_decode("decode script over 1 MiB", b.data, b.len, PROTO_ERR_FIELD_TOO_LONG,
                  "activate.script");

    /* Counts. */
    b.len = 0;
    add_u8(&b, PROTO_BLOCKED);
    add_u32(&b, PROTO_MAX_LIST_ENTRIES + 1);
    expect_decode("decode positions over the maximum count", b.data, b.len,
                  PROTO_ERR_TOO_MANY_ENTRIES, "blocked.positions");
    b.len = 0;
    add_u8(&b, PROTO_LONG_RUNNING);
    add_u32(&b, 3);
    add_u32(&b, 1);
    add_u32(&b, 2);
    expect_decode("decode position count beyond remaining", b.data, b.len, PROTO_ERR_TRUNCATED,
                  "long_running.positions");
    b.len = 0;
    add_u8(&b, PROTO_BLOCKED);
    add_u32(&b, 1000000);
    expect_decode("decode million positions in four bytes", b.data, b.len, PROTO_ERR_TRUNCATED,
                  "blocked.positions");
    b.len = 0;
    add_u8(&b, PROTO_BLOCKED);
    add_u32(&b, 1);
    add_u32(&b, 1);
    add_u8(&b, 0);
    expect_decode("decode trailing byte after positions", b.data, b.len,
                  PROTO_ERR_TRAILING_BYTES, "end");

    /* Activate's prefix: 2 entries claimed, room for at most one minimal entry. */
    b.len = 0;
    add_u8(&b, PROTO_ACTIVATE);
    for (int i = 0; i < 8; i++)
        add_u8(&b, 0);
    add_u8(&b, PROTO_PROFILE_FLOW);
    add_blob(&b, "1", 1);
    add_blob(&b, "a.js", 4);
    add_u8(&b, 0); /* compile_only */
    add_blob(&b, "{}", 2);
    add_u32(&b, 1000);
    for (int i = 0; i < 8; i++)
        add_u8(&b, 0);
    add_u32(&b, 0);
    add_u32(&b, 0);
    size_t prefix_at = b.len;
    add_u32(&b, 2);
    size_t entry_at = b.len;
    add_u32(&b, 0);
    add_blob(&b, "kv.get", 6);
    memcpy(b.data + b.len, digest_a, PROTO_DIGEST_BYTES);
    b.len += PROTO_DIGEST_BYTES;
    add_u8(&b, PROTO_SETTLEMENT_FULFILLED);
    add_blob(&b, "null", 4);
    add_u32(&b, 0);
    expect_decode("decode prefix count beyond remaining", b.data, b.len, PROTO_ERR_TRUNCATED,
                  "activate.prefix");
    b.data[prefix_at + 3] = 1;
    expect_decode("decode activate with one prefix entry", b.data, b.len, PROTO_OK, NULL);
    b.data[entry_at + 4 + 4 + 6 + PROTO_DIGEST_BYTES] = 3;
    expect_decode("decode bad settlement in prefix", b.data, b.len, PROTO_ERR_BAD_ENUM,
                  "activate.prefix.settlement");
    b.data[entry_at + 4 + 4 + 6 + PROTO_DIGEST_BYTES] = PROTO_SETTLEMENT_FULFILLED;
    b.data[entry_at + 4 + 4 + 6 + PROTO_DIGEST_BYTES + 1 + 4] = 0xc0; /* "null" -> C0 "ull" */
    expect_decode("decode invalid UTF-8 in prefix value (frees partial entry)", b.data, b.len,
                  PROTO_ERR_INVALID_UTF8, "activate.prefix.value");
    b.data[1 + 8] = 3;
    expect_decode("decode bad profile", b.data, b.len, PROTO_ERR_BAD_ENUM, "activate.profile");

    /* Enums and booleans. */
    struct proto_msg welcome = sample_welcome();
    struct wire_buf buf = {0};
    if (proto_encode(&welcome, &buf) == PROTO_OK) {
        /* The Welcome ends with seatbelt and the five Windows bytes. */
        size_t windows_at = buf.len - 5;
        size_t seatbelt_at = windows_at - 1;
        size_t seccomp_at = seatbelt_at - 4 - 4 - 1 - 1;
        size_t policy_at = seccomp_at + 1;
        buf.data[seatbelt_at] = 2;
        expect_decode("decode seatbelt byte 2", buf.data, buf.len, PROTO_ERR_BAD_ENUM,
                      "welcome.seatbelt");
        buf.data[seatbelt_at] = 1;
        expect_decode("decode seatbelt byte 1", buf.data, buf.len, PROTO_OK, NULL);
        buf.data[seatbelt_at] = 0;
        static const char *const windows_fields[] = {
            "welcome.windows_lpac_token", "welcome.windows_untrusted_integrity",
            "welcome.windows_no_thread_token", "welcome.windows_mitigations",
            "welcome.windows_handle_inventory"};
        for (size_t i = 0; i < 5; i++) {
            char name[96];
            snprintf(name, sizeof name, "decode %s byte 2", windows_fields[i]);
            buf.data[windows_at + i] = 2;
            expect_decode(name, buf.data, buf.len, PROTO_ERR_BAD_ENUM, windows_fields[i]);
            buf.data[windows_at + i] = 1;
            snprintf(name, sizeof name, "decode %s byte 1", windows_fields[i]);
            expect_decode(name, buf.data, buf.len, PROTO_OK, NULL);
            buf.data[windows_at + i] = 0;
        }
        buf.data[seccomp_at] = 2;
        expect_decode("decode seccomp byte 2", buf.data, buf.len, PROTO_ERR_BAD_ENUM,
                      "welcome.seccomp");
        buf.data[seccomp_at] = 0xff;
        expect_decode("decode seccomp byte 0xff", buf.data, buf.len, PROTO_ERR_BAD_ENUM,
                      "welcome.seccomp");
        buf.data[seccomp_at] = 0;
        expect_decode("decode seccomp byte 0", buf.data, buf.len, PROTO_OK, NULL);
        buf.data[policy_at] = 0;
        expect_decode("decode landlock policy 0", buf.data, buf.len, PROTO_ERR_BAD_ENUM,
                      "welcome.landlock_policy");
        buf.data[policy_at] = 3;
        expect_decode("decode landlock policy 3", buf.data, buf.len, PROTO_ERR_BAD_ENUM,
                      "welcome.landlock_policy");
        buf.data[policy_at] = LANDLOCK_POLICY_OPTIONAL;
        expect_decode("decode welcome truncated by one", buf.data, buf.len - 1,
                      PROTO_ERR_TRUNCATED, "welcome.windows_handle_inventory");
        expect_decode("decode welcome truncated by six", buf.data, buf.len - 6,
                      PROTO_ERR_TRUNCATED, "welcome.seatbelt");
        expect_decode("decode welcome truncated by seven", buf.data, buf.len - 7,
                      PROTO_ERR_TRUNCATED, "welcome.landlock_applied_abi");
        /* Every proper prefix of a valid message is truncated, never anything else. */
        int all_truncated = 1;
        for (size_t cut = 1; cut < buf.len; cut++) {
            struct proto_msg m;
            if (proto_decode(buf.data, cut, &m) != PROTO_ERR_TRUNCATED)
                all_truncated = 0;
            proto_msg_free(&m);
        }
        check("decode every prefix of welcome is truncated", all_truncated, "some cut was not");
    } else {
        check("encode sample welcome", 0, "failed");
    }
    wire_buf_free(&buf);

    static const uint8_t settlement0[] = {PROTO_DELIVER, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    expect_decode("decode settlement 0", settlement0, sizeof settlement0, PROTO_ERR_BAD_ENUM,
                  "deliver.settlement");
    static const uint8_t outcome6[] = {PROTO_FINISHED, 6};
    expect_decode("decode outcome 6", outcome6, sizeof outcome6, PROTO_ERR_BAD_ENUM,
                  "finished.outcome");
    static const uint8_t budget4[] = {PROTO_FINISHED, PROTO_OUTCOME_BUDGET_EXHAUSTED, 4};
    expect_decode("decode budget 4", budget4, sizeof budget4, PROTO_ERR_BAD_ENUM,
                  "finished.exhausted");
    static const uint8_t stalled_extra[] = {PROTO_FINISHED, PROTO_OUTCOME_STALLED, 0};
    expect_decode("decode stalled with a trailing byte", stalled_extra, sizeof stalled_extra,
                  PROTO_ERR_TRAILING_BYTES, "end");
    static const uint8_t refusal7[] = {PROTO_REFUSED, 7, 0, 0, 0, 0};
    expect_decode("decode refusal 7", refusal7, sizeof refusal7, PROTO_ERR_BAD_ENUM,
                  "refused.reason");
}

static void test_utf8(void)
{
    static const struct {
        const char *name;
        const char *bytes;
        size_t len;
        enum proto_error expected;
    } cases[] = {
        {"ascii", "hello", 5, PROTO_OK},
        {"two-byte U+00E9", "\xc3\xa9", 2, PROTO_OK},
        {"three-byte U+20AC", "\xe2\x82\xac", 3, PROTO_OK},
        {"three-byte U+FFFF", "\xef\xbf\xbf", 3, PROTO_OK},
        {"four-byte U+1F600", "\xf0\x9f\x98\x80", 4, PROTO_OK},
        {"four-byte U+10FFFF", "\xf4\x8f\xbf\xbf", 4, PROTO_OK},
        {"U+D7FF before surrogates", "\xed\x9f\xbf", 3, PROTO_OK},
        {"U+E000 after surrogates", "\xee\x80\x80", 3, PROTO_OK},
        {"overlong NUL C0 80", "\xc0\x80", 2, PROTO_ERR_INVALID_UTF8},
        {"overlong C1 BF", "\xc1\xbf", 2, PROTO_ERR_INVALID_UTF8},
        {"overlong three-byte E0 80 80", "\xe0\x80\x80", 3, PROTO_ERR_INVALID_UTF8},
        {"overlong three-byte E0 9F BF", "\xe0\x9f\xbf", 3, PROTO_ERR_INVALID_UTF8},
        {"overlong four-byte F0 8F BF BF", "\xf0\x8f\xbf\xbf", 4, PROTO_ERR_INVALID_UTF8},
        {"surrogate U+D800", "\xed\xa0\x80", 3, PROTO_ERR_INVALID_UTF8},
        {"surrogate U+DFFF", "\xed\xbf\xbf", 3, PROTO_ERR_INVALID_UTF8},
        {"above U+10FFFF (F4 90)", "\xf4\x90\x80\x80", 4, PROTO_ERR_INVALID_UTF8},
        {"lead F5", "\xf5\x80\x80\x80", 4, PROTO_ERR_INVALID_UTF8},
        {"lead FF", "\xff", 1, PROTO_ERR_INVALID_UTF8},
        {"stray continuation", "a\x80", 2, PROTO_ERR_INVALID_UTF8},
        {"sequence cut at end", "\xe2\x82", 2, PROTO_ERR_INVALID_UTF8},
        {"sequence cut by ascii", "\xe2\x82z", 3, PROTO_ERR_INVALID_UTF8},
        {"four-byte cut by ascii in last", "\xf0\x9f\x98z", 4, PROTO_ERR_INVALID_UTF8},
        {"embedded NUL", "a\0b", 3, PROTO_ERR_EMBEDDED_NUL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct bytes b = console_with_text(cases[i].bytes, cases[i].len);
        char name[96];
        snprintf(name, sizeof name, "decode text %s", cases[i].name);
        expect_decode(name, b.data, b.len, cases[i].expected,
                      cases[i].expected == PROTO_OK ? NULL : "console.text");

        struct proto_msg msg = {.tag = PROTO_CONSOLE};
        msg.console.stream = proto_text_of("log");
        msg.console.text.str = cases[i].bytes;
        msg.console.text.len = cases[i].len;
        snprintf(name, sizeof name, "encode text %s", cases[i].name);
        expect_encode(name, &msg, cases[i].expected);
    }

    static const uint8_t euro3[] = {'a', 0xe2, 0x82, 0xac, 'b', 0xe2, 0x82, 0xac};
    check("utf8_truncate inside a sequence", utf8_truncate(euro3, sizeof euro3, 3) == 1,
          "got %zu", utf8_truncate(euro3, sizeof euro3, 3));
    check("utf8_truncate at a boundary", utf8_truncate(euro3, sizeof euro3, 4) == 4, "got %zu",
          utf8_truncate(euro3, sizeof euro3, 4));
    check("utf8_truncate short enough", utf8_truncate(euro3, sizeof euro3, 99) == sizeof euro3,
          "got %zu", utf8_truncate(euro3, sizeof euro3, 99));
    check("utf8_truncate last sequence", utf8_truncate(euro3, sizeof euro3, 7) == 5, "got %zu",
          utf8_truncate(euro3, sizeof euro3, 7));
}

static void test_encode_errors(void)
{
    struct proto_msg msg = {.tag = (enum proto_tag)0x42};
    expect_encode("encode unknown tag", &msg, PROTO_ERR_UNKNOWN_TAG);

    msg = (struct proto_msg){.tag = PROTO_DELIVER};
    msg.deliver.settlement = (enum proto_settlement)0;
    expect_encode("encode settlement 0", &msg, PROTO_ERR_BAD_ENUM);

    msg = (struct proto_msg){.tag = PROTO_HOST_CALL};
    msg.host_call.kind.str = NULL;
    msg.host_call.kind.len = 3;
    expect_encode("encode NULL text with a length", &msg, PROTO_ERR_INVALID_ARGUMENT);

    msg = (struct proto_msg){.tag = PROTO_BLOCKED, .blocked = {.items = NULL, .count = 2}};
    expect_encode("encode NULL positions with a count", &msg, PROTO_ERR_INVALID_ARGUMENT);
    msg.blocked.count = PROTO_MAX_LIST_ENTRIES + 1;
    expect_encode("encode too many positions", &msg, PROTO_ERR_TOO_MANY_ENTRIES);

    static char long_kind[PROTO_MAX_KIND_BYTES + 1];
    memset(long_kind, 'k', sizeof long_kind);
    msg = (struct proto_msg){.tag = PROTO_HOST_CALL};
    msg.host_call.kind.str = long_kind;
    msg.host_call.kind.len = sizeof long_kind;
    expect_encode("encode kind over its maximum", &msg, PROTO_ERR_FIELD_TOO_LONG);
    msg.host_call.kind.len = PROTO_MAX_KIND_BYTES;
    expect_encode("encode kind at its maximum", &msg, PROTO_OK);

    /* Two maximal values make a message larger than a frame. */
    char *big = malloc(PROTO_MAX_JSON_BYTES);
    if (!big) {
        check("encode larger than a frame", 0, "no memory for the test");
        return;
    }
    memset(big, ' ', PROTO_MAX_JSON_BYTES);
    struct proto_recorded_entry entries[2] = {
        {.kind = proto_text_of("kv.get"), .settlement = PROTO_SETTLEMENT_FULFILLED,
         .value = {.str = big, .len = PROTO_MAX_JSON_BYTES}},
        {.kind = proto_text_of("kv.get"), .settlement = PROTO_SETTLEMENT_FULFILLED,
         .value = {.str = big, .len = PROTO_MAX_JSON_BYTES}},
    };
    msg = (struct proto_msg){.tag = PROTO_ACTIVATE};
    msg.activate.profile = PROTO_PROFILE_FLOW;
    msg.activate.prefix = entries;
    msg.activate.prefix_count = 2;
    struct wire_buf buf = {0};
    struct proto_where where = {0};
    enum proto_error err = proto_encode_where(&msg, &buf, &where);
    check("encode larger than a frame", err == PROTO_ERR_TOO_LARGE_FOR_FRAME, "got %s",
          proto_error_name(err));
    check("encode error names its field",
          where.field && strcmp(where.field, "activate.prefix.value") == 0, "field %s",
          where.field ? where.field : "-");
    msg.activate.prefix_count = 1;
    err = proto_encode(&msg, &buf);
    check("encode one maximal value fits a frame", err == PROTO_OK, "got %s",
          proto_error_name(err));
    wire_buf_free(&buf);
    free(big);
}

static void test_names(void)
{
    check("name of welcome", strcmp(proto_msg_name(PROTO_WELCOME), "welcome") == 0, "%s",
          proto_msg_name(PROTO_WELCOME));
    check("name of an unknown tag", strcmp(proto_msg_name(0x7f), "unknown") == 0, "%s",
          proto_msg_name(0x7f));
    check("name of trailing bytes",
          strcmp(proto_error_name(PROTO_ERR_TRAILING_BYTES), "trailing_bytes") == 0, "%s",
          proto_error_name(PROTO_ERR_TRAILING_BYTES));
    int all_named = 1;
    for (int e = PROTO_OK; e <= PROTO_ERR_INVALID_ARGUMENT; e++)
        if (strcmp(proto_error_name((enum proto_error)e), "unknown") == 0)
            all_named = 0;
    for (int r = FRAME_OK; r <= FRAME_NO_MEMORY; r++)
        if (strcmp(frame_result_name((enum frame_result)r), "unknown") == 0)
            all_named = 0;
    check("every error has a name", all_named, "one is unknown");
    check("direction of tags", proto_tag_from_worker(PROTO_WELCOME) &&
                                   !proto_tag_from_worker(PROTO_HELLO),
          "wrong");
}

/* ------------------------------------------------------------------ wire */

static void test_wire(void)
{
    struct wire_buf buf = {0};
    wire_put_u8(&buf, 0xab);
    wire_put_u32(&buf, 0x01020304);
    wire_put_u64(&buf, 0x1122334455667788ULL);
    wire_put_blob(&buf, "xyz", 3);
    wire_put_blob(&buf, NULL, 0);
    check("wire puts succeed", !buf.failed && buf.len == 1 + 4 + 8 + 7 + 4, "len %zu", buf.len);

    struct wire_reader reader;
    wire_reader_init(&reader, buf.data, buf.len);
    uint8_t u8 = 0;
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    const uint8_t *bytes = NULL;
    size_t len = 0;
    int ok = wire_get_u8(&reader, &u8) == WIRE_OK && u8 == 0xab &&
             wire_get_u32(&reader, &u32) == WIRE_OK && u32 == 0x01020304 &&
             wire_get_u64(&reader, &u64) == WIRE_OK && u64 == 0x1122334455667788ULL &&
             wire_get_blob(&reader, 2, &bytes, &len) == WIRE_TOO_LONG &&
             reader.remaining == 11 && /* a refused blob consumes nothing */
             wire_get_blob(&reader, 3, &bytes, &len) == WIRE_OK && len == 3 &&
             memcmp(bytes, "xyz", 3) == 0 && wire_get_blob(&reader, 0, &bytes, &len) == WIRE_OK &&
             len == 0 && reader.remaining == 0 && wire_get_u8(&reader, &u8) == WIRE_TRUNCATED &&
             wire_get_u64(&reader, &u64) == WIRE_TRUNCATED;
    check("wire reads back and stops at the end", ok, "mismatch");

    wire_reader_init(&reader, buf.data, 3);
    check("wire u32 past the end is truncated",
          wire_get_u32(&reader, &u32) == WIRE_TRUNCATED && reader.remaining == 3, "not refused");
    wire_buf_reset(&buf);
    check("wire reset keeps storage", buf.len == 0 && buf.cap > 0 && buf.data, "storage lost");
    wire_buf_free(&buf);
    check("wire free empties", buf.data == NULL && buf.cap == 0, "not empty");
}

/* ------------------------------------------------------------------ frames */

static int make_pipe(int fds[2], const char *name)
{
    if (pipe(fds) != 0) {
        check(name, 0, "pipe: %s", strerror(errno));
        return 0;
    }
    return 1;
}

static void write_bytes(int fd, const void *data, size_t len)
{
    if (write(fd, data, len) != (ssize_t)len)
        perror("test write");
}

static void test_frames_on_pipe(void)
{
    int fds[2];
    struct wire_buf payload = {0};

    if (make_pipe(fds, "frame round trip")) {
        static const uint8_t one[] = "first";
        int ok = frame_write(fds[1], one, 5) == FRAME_OK &&
                 frame_write(fds[1], NULL, 0) == FRAME_OK &&
                 frame_write(fds[1], one, 3) == FRAME_OK;
        close(fds[1]);
        ok = ok && frame_read(fds[0], &payload) == FRAME_OK && payload.len == 5 &&
             memcmp(payload.data, "first", 5) == 0;
        ok = ok && frame_read(fds[0], &payload) == FRAME_OK && payload.len == 0;
        ok = ok && frame_read(fds[0], &payload) == FRAME_OK && payload.len == 3 &&
             memcmp(payload.data, "fir", 3) == 0;
        check("frame round trip (including an empty payload)", ok, "mismatch");
        enum frame_result r = frame_read(fds[0], &payload);
        check("frame clean EOF at a boundary", r == FRAME_EOF, "got %s", frame_result_name(r));
        close(fds[0]);
    }

    if (make_pipe(fds, "frame oversized header")) {
        static const uint8_t header[] = {0x02, 0x00, 0x00, 0x01}; /* 32 MiB + 1 */
        write_bytes(fds[1], header, sizeof header);
        close(fds[1]);
        struct wire_buf fresh = {0};
        enum frame_result r = frame_read(fds[0], &fresh);
        check("frame oversized header refused before allocation",
              r == FRAME_OVERSIZED && fresh.data == NULL && fresh.cap == 0, "got %s, cap %zu",
              frame_result_name(r), fresh.cap);
        wire_buf_free(&fresh);
        close(fds[0]);
    }

    if (make_pipe(fds, "frame header 0xffffffff")) {
        static const uint8_t header[] = {0xff, 0xff, 0xff, 0xff};
        write_bytes(fds[1], header, sizeof header);
        close(fds[1]);
        enum frame_result r = frame_read(fds[0], &payload);
        check("frame header 0xffffffff oversized", r == FRAME_OVERSIZED, "got %s",
              frame_result_name(r));
        close(fds[0]);
    }

    if (make_pipe(fds, "frame truncated header")) {
        static const uint8_t half[] = {0x00, 0x00};
        write_bytes(fds[1], half, sizeof half);
        close(fds[1]);
        enum frame_result r = frame_read(fds[0], &payload);
        check("frame truncated header", r == FRAME_TRUNCATED, "got %s", frame_result_name(r));
        close(fds[0]);
    }

    if (make_pipe(fds, "frame truncated payload")) {
        static const uint8_t partial[] = {0x00, 0x00, 0x00, 0x0a, 'a', 'b', 'c'};
        write_bytes(fds[1], partial, sizeof partial);
        close(fds[1]);
        enum frame_result r = frame_read(fds[0], &payload);
        check("frame truncated payload", r == FRAME_TRUNCATED, "got %s", frame_result_name(r));
        close(fds[0]);
    }

    uint8_t dummy = 0;
    check("frame write over the maximum refused",
          frame_write(1, &dummy, (size_t)PROTO_MAX_FRAME + 1) == FRAME_OVERSIZED, "not refused");

    errno = 0;
    enum frame_result r = frame_read(-1, &payload);
    check("frame read on a bad fd is an I/O error", r == FRAME_IO_ERROR && errno == EBADF,
          "got %s errno %d", frame_result_name(r), errno);

    if (make_pipe(fds, "frame write to a closed pipe")) {
        struct sigaction ignore = {.sa_handler = SIG_IGN};
        struct sigaction previous;
        sigaction(SIGPIPE, &ignore, &previous);
        close(fds[0]);
        errno = 0;
        r = frame_write(fds[1], (const uint8_t *)"x", 1);
        check("frame write to a closed pipe is EPIPE", r == FRAME_IO_ERROR && errno == EPIPE,
              "got %s errno %d", frame_result_name(r), errno);
        sigaction(SIGPIPE, &previous, NULL);
        close(fds[1]);
    }
    wire_buf_free(&payload);
}

static void on_alarm(int signo)
{
    (void)signo;
}

/* A maximal frame through a 64 KiB pipe needs many short reads and writes; a timer
 * interrupts the blocked reader (no SA_RESTART) so EINTR is retried too. */
/* The worker's reader (proto/frame_reader.h): several frames per read, none lost or
 * merged, and the same refusals as frame_read. */
static void test_frame_reader(void)
{
    int fds[2];
    if (make_pipe(fds, "frame reader")) {
        static const uint8_t one[] = "first";
        int ok = frame_write(fds[1], one, 5) == FRAME_OK &&
                 frame_write(fds[1], NULL, 0) == FRAME_OK &&
                 frame_write(fds[1], one, 3) == FRAME_OK;
        close(fds[1]);
        struct frame_reader r;
        frame_reader_init(&r);
        const uint8_t *p = NULL;
        size_t len = 0;
        ok = ok && !frame_reader_has_frame(&r);
        ok = ok && frame_reader_next(fds[0], &r, &p, &len) == FRAME_OK && len == 5 &&
             memcmp(p, "first", 5) == 0;
        /* The one read took all three frames: the next two need no read. */
        check("frame reader: one read takes the frames already written (no read for the "
              "next)", ok && frame_reader_has_frame(&r), "mismatch");
        ok = ok && frame_reader_next(fds[0], &r, &p, &len) == FRAME_OK && len == 0;
        ok = ok && frame_reader_next(fds[0], &r, &p, &len) == FRAME_OK && len == 3 &&
             memcmp(p, "fir", 3) == 0 && !frame_reader_has_frame(&r);
        check("frame reader: frames come out whole and in order, an empty one included", ok,
              "mismatch");
        enum frame_result got = frame_reader_next(fds[0], &r, &p, &len);
        check("frame reader: clean EOF at a boundary", got == FRAME_EOF, "got %s",
              frame_result_name(got));
        frame_reader_free(&r);
        close(fds[0]);
    }

    static const struct {
        const char *name;
        uint8_t bytes[8];
        size_t len;
        enum frame_result want;
    } ends[] = {
        {"frame reader: oversized header refused before allocation", {0x02, 0, 0, 0x01}, 4,
         FRAME_OVERSIZED},
        {"frame reader: truncated header", {0, 0}, 2, FRAME_TRUNCATED},
        {"frame reader: truncated payload", {0, 0, 0, 0x0a, 'a', 'b', 'c'}, 7, FRAME_TRUNCATED},
    };
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        if (!make_pipe(fds, ends[i].name))
            continue;
        write_bytes(fds[1], ends[i].bytes, ends[i].len);
        close(fds[1]);
        struct frame_reader r;
        frame_reader_init(&r);
        const uint8_t *p = NULL;
        size_t len = 0;
        enum frame_result got = frame_reader_next(fds[0], &r, &p, &len);
        bool small = r.buf.cap <= 2 * FRAME_READER_CHUNK; /* never what a header claims */
        check(ends[i].name, got == ends[i].want && small, "got %s, buffer %zu bytes",
              frame_result_name(got), r.buf.cap);
        frame_reader_free(&r);
        close(fds[0]);
    }

    /* A frame larger than a chunk, written in pieces by another process, behind a small
     * one: both whole. */
    if (make_pipe(fds, "frame reader: a large frame")) {
        enum { BIG = 200000 };
        pid_t child = fork();
        if (child == 0) {
            close(fds[0]);
            uint8_t *data = malloc(BIG);
            if (data == NULL)
                _exit(2);
            for (size_t i = 0; i < BIG; i++)
                data[i] = (uint8_t)(i * 13);
            int rc = frame_write(fds[1], data, 1) == FRAME_OK &&
                     frame_write(fds[1], data, BIG) == FRAME_OK;
            free(data);
            _exit(rc ? 0 : 1);
        }
        close(fds[1]);
        struct frame_reader r;
        frame_reader_init(&r);
        const uint8_t *p = NULL;
        size_t len = 0;
        bool ok = child > 0 && frame_reader_next(fds[0], &r, &p, &len) == FRAME_OK && len == 1;
        ok = ok && frame_reader_next(fds[0], &r, &p, &len) == FRAME_OK && len == BIG;
        for (size_t i = 0; ok && i < BIG; i++)
            ok = p[i] == (uint8_t)(i * 13);
        int status = 0;
        if (child > 0)
            waitpid(child, &status, 0);
        check("frame reader: a frame larger than a chunk, behind a small one, comes whole",
              ok && WIFEXITED(status) && WEXITSTATUS(status) == 0, "mismatch");
        frame_reader_free(&r);
        close(fds[0]);
    }
}

static void test_large_frame_with_interruptions(void)
{
    int fds[2];
    if (!make_pipe(fds, "frame of exactly the maximum"))
        return;
    pid_t child = fork();
    if (child < 0) {
        check("frame of exactly the maximum", 0, "fork: %s", strerror(errno));
        return;
    }
    if (child == 0) {
        close(fds[0]);
        uint8_t *data = malloc(PROTO_MAX_FRAME);
        if (!data)
            _exit(2);
        for (size_t i = 0; i < PROTO_MAX_FRAME; i++)
            data[i] = (uint8_t)(i * 7);
        struct timespec pause = {.tv_sec = 0, .tv_nsec = 200000000L};
        nanosleep(&pause, NULL); /* let the parent block and be interrupted first */
        enum frame_result written = frame_write(fds[1], data, PROTO_MAX_FRAME);
        free(data);
        _exit(written == FRAME_OK ? 0 : 1);
    }
    close(fds[1]);

    struct sigaction alarm_action = {.sa_handler = on_alarm}; /* no SA_RESTART */
    struct sigaction previous;
    sigaction(SIGALRM, &alarm_action, &previous);
    struct itimerval every_20ms = {.it_interval = {0, 20000}, .it_value = {0, 20000}};
    setitimer(ITIMER_REAL, &every_20ms, NULL);

    struct wire_buf payload = {0};
    enum frame_result r = frame_read(fds[0], &payload);

    struct itimerval stop = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &stop, NULL);
    sigaction(SIGALRM, &previous, NULL);

    int same = r == FRAME_OK && payload.len == PROTO_MAX_FRAME;
    for (size_t i = 0; same && i < PROTO_MAX_FRAME; i++)
        same = payload.data[i] == (uint8_t)(i * 7);
    check("frame of exactly the maximum, interrupted reads", same, "got %s, len %zu",
          frame_result_name(r), payload.len);
    r = frame_read(fds[0], &payload);
    check("frame EOF after the maximal frame", r == FRAME_EOF, "got %s", frame_result_name(r));
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    check("frame writer child wrote everything", WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "status %d", status);
    wire_buf_free(&payload);
    close(fds[0]);
}

static void test_frame_parse(void)
{
    const uint8_t *payload = NULL;
    size_t payload_len = 0;
    size_t consumed = 0;
    static const uint8_t two[] = {0, 0, 0, 2, 'h', 'i', 0, 0, 0, 0};

    check("frame_parse empty is EOF",
          frame_parse(two, 0, &payload, &payload_len, &consumed) == FRAME_EOF, "not EOF");
    check("frame_parse partial header is truncated",
          frame_parse(two, 3, &payload, &payload_len, &consumed) == FRAME_TRUNCATED,
          "not truncated");
    check("frame_parse partial payload is truncated",
          frame_parse(two, 5, &payload, &payload_len, &consumed) == FRAME_TRUNCATED,
          "not truncated");
    int ok = frame_parse(two, sizeof two, &payload, &payload_len, &consumed) == FRAME_OK &&
             payload == two + 4 && payload_len == 2 && consumed == 6;
    ok = ok && frame_parse(two + 6, sizeof two - 6, &payload, &payload_len, &consumed) ==
                   FRAME_OK &&
         payload_len == 0 && consumed == 4;
    check("frame_parse two frames in a row", ok, "mismatch");
    static const uint8_t huge[] = {0x02, 0x00, 0x00, 0x01};
    check("frame_parse oversized from the header alone",
          frame_parse(huge, sizeof huge, &payload, &payload_len, &consumed) == FRAME_OVERSIZED,
          "not oversized");
    static const uint8_t max_header[] = {0x02, 0x00, 0x00, 0x00};
    check("frame_parse maximum length is merely incomplete",
          frame_parse(max_header, sizeof max_header, &payload, &payload_len, &consumed) ==
              FRAME_TRUNCATED,
          "not truncated");
}

static void test_channel(void)
{
    int fds[2];
    if (!make_pipe(fds, "channel send and receive"))
        return;
    struct wire_buf scratch = {0};
    struct proto_msg welcome = sample_welcome();
    enum frame_result written = FRAME_IO_ERROR;
    enum proto_error err = proto_send(fds[1], &welcome, &scratch, &written);
    struct proto_msg bad = {.tag = PROTO_REFUSED}; /* reason 0: cannot be encoded */
    enum frame_result untouched = FRAME_EOF;
    enum proto_error bad_err = proto_send(fds[1], &bad, &scratch, &untouched);
    static const uint8_t malformed[] = {0, 0, 0, 1, 0x66};
    write_bytes(fds[1], malformed, sizeof malformed);
    close(fds[1]);

    check("channel send welcome", err == PROTO_OK && written == FRAME_OK, "%s / %s",
          proto_error_name(err), frame_result_name(written));
    check("channel refuses to send an unencodable message",
          bad_err == PROTO_ERR_BAD_ENUM && untouched == FRAME_EOF, "%s",
          proto_error_name(bad_err));

    struct proto_msg got;
    enum proto_error decode_error = PROTO_ERR_NO_MEMORY;
    enum frame_result r = proto_recv(fds[0], &scratch, &got, &decode_error, NULL);
    check("channel receive welcome",
          r == FRAME_OK && decode_error == PROTO_OK && got.tag == PROTO_WELCOME &&
              text_is(got.welcome.os, "linux"),
          "%s / %s", frame_result_name(r), proto_error_name(decode_error));
    proto_msg_free(&got);
    struct proto_where where = {0};
    r = proto_recv(fds[0], &scratch, &got, &decode_error, &where);
    check("channel receive malformed frame keeps the stream usable",
          r == FRAME_OK && decode_error == PROTO_ERR_UNKNOWN_TAG && got.tag == 0, "%s / %s",
          frame_result_name(r), proto_error_name(decode_error));
    r = proto_recv(fds[0], &scratch, &got, &decode_error, NULL);
    check("channel EOF", r == FRAME_EOF, "%s", frame_result_name(r));
    wire_buf_free(&scratch);
    close(fds[0]);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_wire();
    test_round_trips();
    test_exact_layout();
    test_decode_errors();
    test_utf8();
    test_encode_errors();
    test_names();
    test_frames_on_pipe();
    test_frame_reader();
    test_large_frame_with_interruptions();
    test_frame_parse();
    test_channel();
    printf("%s: %d failed\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
