/* Writes the fuzz seed corpus: one valid encoding of every message (and of each
 * Finished outcome), a few broken payloads, and frame streams built from them; and
 * for the activation target, worker streams (a flags byte, then frames: see
 * fuzz/fuzz_activation.c) for a normal activation and for each attack the parent
 * refuses.
 *   cc -std=gnu11 -D_GNU_SOURCE -Isrc fuzz/gen_corpus.c src/proto/(all .c) -o gen_corpus
 *   ./gen_corpus fuzz/corpus   (writes fuzz/corpus/decode, frame and activation) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/frame.h"
#include "proto/message.h"
#include "proto/wire.h"

static const char *out_dir;
static int failed;

static void write_file(const char *kind, const char *name, const uint8_t *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, kind, name);
    FILE *file = fopen(path, "wb");
    if (!file || (len > 0 && fwrite(data, 1, len, file) != len) || fclose(file) != 0) {
        fprintf(stderr, "gen_corpus: cannot write %s\n", path);
        failed = 1;
    }
}

/* A growing frame stream: frames appended one after another. */
static struct wire_buf stream;

static void stream_add_frame(const uint8_t *payload, size_t len)
{
    uint8_t header[PROTO_FRAME_HEADER_BYTES];
    frame_header_encode((uint32_t)len, header);
    wire_put_raw(&stream, header, sizeof header);
    wire_put_raw(&stream, payload, len);
}

/* Encodes msg, writes it as a decode seed and as a one-frame stream seed. */
static void seed(const char *name, const struct proto_msg *msg)
{
    struct wire_buf payload = {0};
    enum proto_error err = proto_encode(msg, &payload);
    if (err != PROTO_OK) {
        fprintf(stderr, "gen_corpus: %s: %s\n", name, proto_error_name(err));
        failed = 1;
        return;
    }
    write_file("decode", name, payload.data, payload.len);
    wire_buf_reset(&stream);
    stream_add_frame(payload.data, payload.len);
    write_file("frame", name, stream.data, stream.len);
    wire_buf_free(&payload);
}

static void seed_bytes(const char *name, const uint8_t *bytes, size_t len)
{
    write_file("decode", name, bytes, len);
}

/* ---- activation streams: a flags byte, then the worker's frames ---- */

static void act_begin(uint8_t flags)
{
    wire_buf_reset(&stream);
    wire_put_raw(&stream, &flags, 1);
}

static void act_msg(const struct proto_msg *msg)
{
    struct wire_buf payload = {0};
    if (proto_encode(msg, &payload) != PROTO_OK) {
        fprintf(stderr, "gen_corpus: an activation frame does not encode\n");
        failed = 1;
    }
    stream_add_frame(payload.data, payload.len);
    wire_buf_free(&payload);
}

static void act_call(uint32_t position, const char *kind, const char *args)
{
    struct proto_msg msg = {.tag = PROTO_HOST_CALL};
    msg.host_call = (struct proto_host_call){position, proto_text_of(kind), proto_text_of(args)};
    act_msg(&msg);
}

static void act_blocked(const uint32_t *positions, size_t count)
{
    struct proto_msg msg = {.tag = PROTO_BLOCKED, .blocked = {.items = positions, .count = count}};
    act_msg(&msg);
}

static void act_finished(enum proto_outcome outcome, const char *value)
{
    struct proto_msg msg = {.tag = PROTO_FINISHED};
    msg.finished.outcome = outcome;
    msg.finished.value = proto_text_of(value);
    msg.finished.failure_kind = proto_text_of("script_error");
    msg.finished.failure_detail = proto_text_of("x");
    msg.finished.exhausted = PROTO_BUDGET_CPU;
    act_msg(&msg);
}

static void act_write(const char *name)
{
    write_file("activation", name, stream.data, stream.len);
}

static void seed_activations(void)
{
    static const uint32_t p1[] = {1}, p01[] = {0, 1}, p11[] = {1, 1}, p3[] = {3};
    act_begin(0);
    act_call(0, "test.echo", "[1]");
    act_call(1, "now", "[]");
    act_call(2, "kv.get", "[\"k\"]");
    act_blocked((const uint32_t[]){0, 2}, 2);
    act_blocked((const uint32_t[]){2}, 1); /* after the Deliver of position 0 */
    act_finished(PROTO_OUTCOME_COMPLETED, "{\"ok\":[1,2]}");
    act_write("completed");

    act_begin(0);
    struct proto_msg console = {.tag = PROTO_CONSOLE};
    console.console.stream = proto_text_of("log");
    console.console.text = proto_text_of("hello");
    act_msg(&console);
    act_finished(PROTO_OUTCOME_FAILED, "");
    act_write("console_failed");

    act_begin(2 << 1); /* prefix at 0 and 2: calls at 1 and 3 */
    act_call(1, "test.echo", "[2]");
    act_call(3, "test.echo", "[3]");
    act_blocked(p1, 1);
    act_blocked(p3, 1);
    act_finished(PROTO_OUTCOME_STALLED, "");
    act_write("prefix_stalled");

    act_begin(0);
    act_finished(PROTO_OUTCOME_SUSPENDED, "");
    act_write("forged_suspended");

    act_begin(0);
    act_finished(PROTO_OUTCOME_COMPLETED, "{\"a\": oops");
    act_write("completed_not_json");

    act_begin(0);
    act_finished(PROTO_OUTCOME_COMPLETED, "1");
    act_call(0, "test.echo", "[1]");
    act_write("after_finished");

    act_begin(0);
    act_call(0, "test.echo", "[1]");
    act_call(1, "test.echo", "[1]");
    act_blocked(p11, 2);
    act_write("blocked_duplicate");

    act_begin(32); /* the worker does not wait for the Deliver */
    act_call(0, "test.echo", "[1]");
    act_call(1, "test.echo", "[1]");
    act_blocked(p01, 2);
    act_blocked(p01, 2);
    act_write("blocked_twice");

    act_begin(0);
    act_call(0, "", "[]");
    act_write("empty_kind");

    act_begin(1); /* the worker exits after writing */
    act_call(0, "test.echo", "[1]");
    act_write("exits");

    act_begin(8 | 16); /* codemode, 2 calls, max_value_bytes 8 */
    act_call(0, "test.echo", "[\"longer than eight\"]");
    act_call(1, "test.echo", "[1]");
    act_call(2, "test.echo", "[1]");
    act_blocked((const uint32_t[]){0, 1, 2}, 3);
    act_finished(PROTO_OUTCOME_BUDGET_EXHAUSTED, "");
    act_write("codemode_limits");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT_DIR (containing decode/ and frame/)\n", argv[0]);
        return 2;
    }
    out_dir = argv[1];

    static const uint8_t digest[PROTO_DIGEST_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                                       12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                                       23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
    static const uint32_t positions[] = {0, 3, 7};

    struct proto_msg msg = {.tag = PROTO_HELLO, .hello = {.version = PROTO_VERSION}};
    seed("hello", &msg);

    struct proto_recorded_entry prefix[2] = {
        {.position = 0, .kind = proto_text_of("kv.get"),
         .settlement = PROTO_SETTLEMENT_FULFILLED, .value = proto_text_of("\"caf\xc3\xa9\""),
         .delivery_order = 0},
        {.position = 1, .kind = proto_text_of("net.fetch"),
         .settlement = PROTO_SETTLEMENT_REJECTED,
         .value = proto_text_of("{\"code\":\"denied\"}"), .delivery_order = 1},
    };
    memcpy(prefix[0].args_digest, digest, sizeof digest);
    memcpy(prefix[1].args_digest, digest, sizeof digest);
    msg = (struct proto_msg){.tag = PROTO_ACTIVATE};
    msg.activate.activation_id = 42;
    msg.activate.profile = PROTO_PROFILE_FLOW;
    msg.activate.script = proto_text_of("return await kv.get('k');");
    msg.activate.trigger = proto_text_of("{\"kind\":\"manual\"}");
    msg.activate.budgets = (struct proto_budgets){
        .cpu_ms = 1000, .heap_bytes = 8u << 20, .stack_bytes = 1u << 20,
        .max_value_bytes = 256u << 10};
    msg.activate.prefix = prefix;
    msg.activate.prefix_count = 2;
    seed("activate", &msg);

    msg = (struct proto_msg){.tag = PROTO_DELIVER};
    msg.deliver = (struct proto_deliver){.position = 2,
                                         .settlement = PROTO_SETTLEMENT_FULFILLED,
                                         .value = proto_text_of("[1,2]"),
                                         .delivery_order = 2};
    seed("deliver", &msg);

    msg = (struct proto_msg){.tag = PROTO_LONG_RUNNING,
                             .long_running = {.items = positions, .count = 3}};
    seed("long_running", &msg);

    msg = (struct proto_msg){.tag = PROTO_SHUTDOWN};
    seed("shutdown", &msg);

    msg = (struct proto_msg){.tag = PROTO_WELCOME};
    msg.welcome.protocol_version = PROTO_VERSION;
    msg.welcome.engine = proto_text_of("quickjs 2021-03-27");
    memcpy(msg.welcome.prelude_hash, digest, sizeof digest);
    msg.welcome.worker_version = proto_text_of("0.1.0");
    msg.welcome.os = proto_text_of("linux");
    msg.welcome.seccomp = true;
    msg.welcome.landlock_policy = LANDLOCK_POLICY_REQUIRED;
    msg.welcome.landlock_runtime_abi = 6;
    msg.welcome.landlock_applied_abi = 6;
    seed("welcome", &msg);

    msg = (struct proto_msg){.tag = PROTO_HOST_CALL};
    msg.host_call = (struct proto_host_call){
        .position = 3, .kind = proto_text_of("fs.read"), .args = proto_text_of("{\"path\":\"a\"}")};
    seed("host_call", &msg);

    msg = (struct proto_msg){.tag = PROTO_BLOCKED, .blocked = {.items = positions, .count = 2}};
    seed("blocked", &msg);

    msg = (struct proto_msg){.tag = PROTO_FINISHED};
    msg.finished.outcome = PROTO_OUTCOME_COMPLETED;
    msg.finished.value = proto_text_of("{\"ok\":true}");
    seed("finished_completed", &msg);
    msg.finished.outcome = PROTO_OUTCOME_FAILED;
    msg.finished.failure_kind = proto_text_of("TypeError");
    msg.finished.failure_detail = proto_text_of("x is not a function");
    seed("finished_failed", &msg);
    msg.finished.outcome = PROTO_OUTCOME_SUSPENDED;
    seed("finished_suspended", &msg);
    msg.finished.outcome = PROTO_OUTCOME_STALLED;
    seed("finished_stalled", &msg);
    msg.finished.outcome = PROTO_OUTCOME_BUDGET_EXHAUSTED;
    msg.finished.exhausted = PROTO_BUDGET_MEMORY;
    seed("finished_budget", &msg);

    msg = (struct proto_msg){.tag = PROTO_REFUSED};
    msg.refused.reason = PROTO_REFUSAL_UNEXPECTED_FRAME;
    msg.refused.detail = proto_text_of("running");
    seed("refused", &msg);

    msg = (struct proto_msg){.tag = PROTO_CONSOLE};
    msg.console.stream = proto_text_of("log");
    msg.console.text = proto_text_of("hello \xe2\x82\xac");
    seed("console", &msg);

    /* Broken payloads. */
    static const uint8_t unknown_tag[] = {0x42};
    seed_bytes("bad_unknown_tag", unknown_tag, sizeof unknown_tag);
    static const uint8_t truncated[] = {PROTO_HELLO, 0, 0};
    seed_bytes("bad_truncated", truncated, sizeof truncated);
    static const uint8_t trailing[] = {PROTO_SHUTDOWN, 0};
    seed_bytes("bad_trailing", trailing, sizeof trailing);
    static const uint8_t overlong[] = {PROTO_CONSOLE, 0, 0, 0, 1, 'a', 0, 0, 0, 2, 0xc0, 0x80};
    seed_bytes("bad_overlong", overlong, sizeof overlong);
    static const uint8_t surrogate[] = {PROTO_CONSOLE, 0, 0, 0, 0, 0, 0, 0, 3, 0xed, 0xa0, 0x80};
    seed_bytes("bad_surrogate", surrogate, sizeof surrogate);
    static const uint8_t bad_enum[] = {PROTO_REFUSED, 9, 0, 0, 0, 0};
    seed_bytes("bad_enum", bad_enum, sizeof bad_enum);
    static const uint8_t many[] = {PROTO_BLOCKED, 0, 0x0f, 0x42, 0x40, 0, 0, 0, 1};
    seed_bytes("bad_count", many, sizeof many);

    /* Frame streams. */
    static const uint8_t hello_payload[] = {PROTO_HELLO, 0, 0, 0, 1};
    static const uint8_t shutdown_payload[] = {PROTO_SHUTDOWN};
    wire_buf_reset(&stream);
    stream_add_frame(hello_payload, sizeof hello_payload);
    stream_add_frame(NULL, 0);
    stream_add_frame(shutdown_payload, sizeof shutdown_payload);
    write_file("frame", "session", stream.data, stream.len);
    write_file("frame", "truncated_payload", stream.data, stream.len - 1);
    write_file("frame", "truncated_header", stream.data, 2);
    static const uint8_t oversized[] = {0x02, 0x00, 0x00, 0x01, PROTO_SHUTDOWN};
    write_file("frame", "oversized", oversized, sizeof oversized);
    write_file("frame", "empty", NULL, 0);

    seed_activations();
    wire_buf_free(&stream);

    return failed;
}
