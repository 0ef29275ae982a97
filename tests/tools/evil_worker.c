/* evil_worker: a subverted worker for the tests of the parent's defences (test builds
 * only; never installed). It stands for "code execution inside the confined worker".
 *
 * Why the parent accepts it: it links the real worker's confinement sequence
 * (src/worker/confine_linux.c and the modules it uses, nothing of the engine) and runs it
 * exactly as ck-basal-worker does before it reads a frame: startup checks, descriptors
 * closed, no_new_privs, non-dumpable, Landlock at the kernel's ABI, the seccomp
 * allowlist. Its Welcome then tells the truth about that confinement, so the parent's
 * Welcome check and its look at /proc/<pid>/status pass as for the real worker. What
 * it does after the Welcome is whatever its script says: frames the real engine never
 * writes. The test-build parent runs it through BASAL_TEST_WORKER, as a wrapper script
 * ("exec evil_worker --script=FILE \"$@\""): the parent adds --landlock=POLICY.
 *
 *   evil_worker --script=FILE --landlock=required|optional
 *
 * The script is read before confinement (Landlock forbids it afterwards). One step a
 * line; '#' starts a comment line. A TEXT or JSON argument is the rest of the line,
 * verbatim (it may be empty); a KIND is one word, or "(empty)" for the empty text.
 *   activate                    wait for the next Activate (the prefix positions it
 *                               names are skipped by "call", as the parent skips them)
 *   call KIND ARGS              HostCall at the next position
 *   call-at POSITION KIND ARGS  HostCall at POSITION (the next position moves past it)
 *   big-call BYTES KIND [not-json]
 *                               HostCall whose args are ["xxx..."] of BYTES bytes in all
 *                               (with not-json: BYTES bytes of "xxx...", not JSON)
 *   flood COUNT KIND ARGS       COUNT HostCalls at the next positions
 *   console-flood COUNT BYTES   COUNT Console frames of BYTES bytes of text each
 *   blocked POSITION ...        Blocked naming these positions
 *   blocked-all                 Blocked naming every async call not delivered yet
 *   blocked-dup COUNT POSITION  Blocked naming POSITION COUNT times
 *   deliver                     wait for one Deliver (LongRunning frames are skipped)
 *   finish completed JSON       Finished(completed) with that value, verbatim
 *   finish failed KIND TEXT     Finished(failed)
 *   finish suspended | stalled  Finished without fields
 *   finish budget cpu|memory|stack
 *   console STREAM TEXT         one Console frame
 *   raw HEX                     these bytes, as they are
 *   repeat COUNT ... end        the steps between, COUNT times (nested blocks allowed)
 *   flush                       write what waits
 *   hang                        read stdin until the parent closes it, then exit 0
 * Frames wait in a buffer until a step reads (activate, deliver), flush, hang, or the
 * buffer passes 1 MiB: "finish completed 1" followed by "call now []" reaches the
 * parent in one write, as a real worker batches its frames. The end of the script is
 * "hang". "now" and "random" are synchronous kinds: "call" does not count them as
 * awaitable for blocked-all (their Deliver comes at once; "deliver" reads it).
 * A frame that cannot be encoded (a text over its protocol maximum) ends the tool
 * with exit 65; a broken pipe with exit 66. */
#include "proto/frame.h"
#include "proto/message.h"
#include "proto/wire.h"
#include "worker/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCRIPT_MAX_BYTES (1u << 20)
#define SCRIPT_MAX_LINES 4096
#define FLUSH_AT_BYTES ((size_t)1 << 20)
#define EXIT_BAD_SCRIPT 64
#define EXIT_UNENCODABLE 65
#define EXIT_PIPE 66

static char *lines[SCRIPT_MAX_LINES];
static size_t line_count;

static struct wire_buf out;     /* frames waiting to be written */
static struct wire_buf scratch; /* one payload */
static struct wire_buf in;      /* one frame read */

/* Positions: the next one to use, the Activate's prefix to skip, the async calls made
 * and not delivered yet (for blocked-all). */
static uint32_t next_position;
static uint32_t *prefix;
static size_t prefix_count;
static uint32_t *awaitable;
static size_t awaitable_count, awaitable_cap;

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof text - 2)
        n = (int)sizeof text - 2;
    text[n++] = '\n';
    (void)!write(2, "evil_worker: ", 13);
    (void)!write(2, text, (size_t)n);
    _exit(EXIT_BAD_SCRIPT);
}

static void flush_out(void)
{
    size_t done = 0;
    while (done < out.len) {
        ssize_t n = write(1, out.data + done, out.len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(EXIT_PIPE);
        done += (size_t)n;
    }
    wire_buf_reset(&out);
}

static void put_frame(const uint8_t *payload, size_t len)
{
    uint8_t header[PROTO_FRAME_HEADER_BYTES];
    frame_header_encode((uint32_t)len, header);
    if (!wire_put_raw(&out, header, sizeof header) || !wire_put_raw(&out, payload, len))
        _exit(EXIT_UNENCODABLE);
    if (out.len >= FLUSH_AT_BYTES)
        flush_out();
}

static void send_msg(const struct proto_msg *msg)
{
    if (proto_encode(msg, &scratch) != PROTO_OK)
        _exit(EXIT_UNENCODABLE);
    put_frame(scratch.data, scratch.len);
}

/* The next frame from the parent, decoded. The end of stdin ends the tool. */
static void recv_msg(struct proto_msg *msg)
{
    flush_out();
    enum frame_result got = frame_read(0, &in);
    if (got == FRAME_EOF)
        _exit(0);
    if (got != FRAME_OK || proto_decode(in.data, in.len, msg) != PROTO_OK)
        _exit(EXIT_PIPE);
}

/* ---- positions ------------------------------------------------------------------ */

static bool in_prefix(uint32_t position)
{
    for (size_t i = 0; i < prefix_count; i++)
        if (prefix[i] == position)
            return true;
    return false;
}

static uint32_t take_position(void)
{
    while (in_prefix(next_position))
        next_position++;
    return next_position++;
}

static void awaitable_add(uint32_t position)
{
    if (awaitable_count == awaitable_cap) {
        size_t cap = awaitable_cap == 0 ? 1024 : awaitable_cap * 2;
        uint32_t *grown = realloc(awaitable, cap * sizeof *grown);
        if (grown == NULL)
            die("out of memory");
        awaitable = grown;
        awaitable_cap = cap;
    }
    awaitable[awaitable_count++] = position;
}

static void awaitable_remove(uint32_t position)
{
    for (size_t i = 0; i < awaitable_count; i++) {
        if (awaitable[i] == position) {
            memmove(awaitable + i, awaitable + i + 1, (awaitable_count - i - 1) * sizeof *awaitable);
            awaitable_count--;
            return;
        }
    }
}

/* ---- frames ----------------------------------------------------------------------- */

static struct proto_text text_arg(const char *s)
{
    if (strcmp(s, "(empty)") == 0)
        s = "";
    return proto_text_of(s);
}

static void host_call(uint32_t position, const char *kind, const char *args, size_t args_len)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_HOST_CALL;
    msg.host_call.position = position;
    msg.host_call.kind = text_arg(kind);
    msg.host_call.args.str = args;
    msg.host_call.args.len = args_len;
    send_msg(&msg);
    if (strcmp(kind, "now") != 0 && strcmp(kind, "random") != 0)
        awaitable_add(position);
    if (position >= next_position)
        next_position = position + 1;
}

static void blocked(const uint32_t *positions, size_t count)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_BLOCKED;
    msg.blocked.items = positions;
    msg.blocked.count = count;
    send_msg(&msg);
}

static void await_activate(void)
{
    for (;;) {
        struct proto_msg msg;
        recv_msg(&msg);
        if (msg.tag == PROTO_ACTIVATE) {
            free(prefix);
            prefix_count = msg.activate.prefix_count;
            prefix = calloc(prefix_count + 1, sizeof *prefix);
            if (prefix == NULL)
                die("out of memory");
            for (size_t i = 0; i < prefix_count; i++)
                prefix[i] = msg.activate.prefix[i].position;
            next_position = 0;
            awaitable_count = 0;
            proto_msg_free(&msg);
            return;
        }
        proto_msg_free(&msg);
    }
}

static void await_deliver(void)
{
    for (;;) {
        struct proto_msg msg;
        recv_msg(&msg);
        bool deliver = msg.tag == PROTO_DELIVER;
        if (deliver)
            awaitable_remove(msg.deliver.position);
        proto_msg_free(&msg);
        if (deliver)
            return;
    }
}

static enum proto_outcome outcome_named(const char *name)
{
    static const char *const names[] = {"", "completed", "failed", "suspended", "stalled",
                                        "budget"};
    for (int i = 1; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(name, names[i]) == 0)
            return (enum proto_outcome)i;
    die("unknown outcome '%s'", name);
}

/* ---- the script ------------------------------------------------------------------ */

/* The next word of *p (NUL-terminated in place), or "" at the end of the line. */
static char *word(char **p)
{
    char *s = *p;
    while (*s == ' ')
        s++;
    char *start = s;
    while (*s != '\0' && *s != ' ')
        s++;
    if (*s == ' ')
        *s++ = '\0';
    *p = s;
    return start;
}

/* The rest of the line after one separating space. */
static char *rest(char **p)
{
    char *s = *p;
    if (*s == ' ')
        s++;
    *p = s + strlen(s);
    return s;
}

static unsigned long long number(const char *text)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (*text == '\0' || *end != '\0' || errno != 0)
        die("'%s' is not a number", text);
    return v;
}

static void finish(char *p)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_FINISHED;
    msg.finished.outcome = outcome_named(word(&p));
    if (msg.finished.outcome == PROTO_OUTCOME_COMPLETED) {
        msg.finished.value = proto_text_of(rest(&p));
    } else if (msg.finished.outcome == PROTO_OUTCOME_FAILED) {
        msg.finished.failure_kind = text_arg(word(&p));
        msg.finished.failure_detail = proto_text_of(rest(&p));
    } else if (msg.finished.outcome == PROTO_OUTCOME_BUDGET_EXHAUSTED) {
        const char *which = word(&p);
        msg.finished.exhausted = strcmp(which, "memory") == 0  ? PROTO_BUDGET_MEMORY
                                 : strcmp(which, "stack") == 0 ? PROTO_BUDGET_STACK
                                                               : PROTO_BUDGET_CPU;
    }
    send_msg(&msg);
}

static void big_call(char *p)
{
    size_t bytes = (size_t)number(word(&p));
    const char *kind = word(&p);
    bool json = strcmp(word(&p), "not-json") != 0;
    if (bytes < 4)
        die("big-call needs at least 4 bytes");
    char *args = malloc(bytes + 1);
    if (args == NULL)
        die("out of memory");
    memset(args, 'x', bytes);
    if (json) {
        memcpy(args, "[\"", 2);
        memcpy(args + bytes - 2, "\"]", 2);
    }
    args[bytes] = '\0';
    host_call(take_position(), kind, args, bytes);
    free(args);
}

/* COUNT HostCalls, encoded once and patched at the position (the payload's bytes 1-4,
 * after the tag): the parent, not this tool, is the slower side of the pipe. */
static void flood(char *p)
{
    unsigned long long count = number(word(&p));
    const char *kind = word(&p);
    const char *args = rest(&p);
    if (count == 0)
        return;
    host_call(take_position(), kind, args, strlen(args));
    struct wire_buf frame;
    wire_buf_init(&frame);
    if (!wire_put_raw(&frame, scratch.data, scratch.len))
        die("out of memory");
    bool async = strcmp(kind, "now") != 0 && strcmp(kind, "random") != 0;
    for (unsigned long long i = 1; i < count; i++) {
        uint32_t position = take_position();
        frame.data[1] = (uint8_t)(position >> 24);
        frame.data[2] = (uint8_t)(position >> 16);
        frame.data[3] = (uint8_t)(position >> 8);
        frame.data[4] = (uint8_t)position;
        put_frame(frame.data, frame.len);
        if (async)
            awaitable_add(position);
    }
    wire_buf_free(&frame);
}

/* One Console frame, encoded once and written COUNT times: the parent decodes each. */
static void console_flood(char *p)
{
    unsigned long long count = number(word(&p));
    size_t bytes = (size_t)number(word(&p));
    char *text = malloc(bytes + 1);
    if (text == NULL)
        die("out of memory");
    memset(text, 'c', bytes);
    text[bytes] = '\0';
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_CONSOLE;
    msg.console.stream = proto_text_of("log");
    msg.console.text = proto_text_of(text);
    if (proto_encode(&msg, &scratch) != PROTO_OK)
        _exit(EXIT_UNENCODABLE);
    free(text);
    for (unsigned long long i = 0; i < count; i++)
        put_frame(scratch.data, scratch.len);
}

static void blocked_step(char *p)
{
    uint32_t positions[256];
    size_t count = 0;
    for (const char *w = word(&p); *w != '\0' && count < 256; w = word(&p))
        positions[count++] = (uint32_t)number(w);
    blocked(positions, count);
}

static void blocked_dup(char *p)
{
    size_t count = (size_t)number(word(&p));
    uint32_t position = (uint32_t)number(word(&p));
    uint32_t *positions = malloc((count + 1) * sizeof *positions);
    if (positions == NULL)
        die("out of memory");
    for (size_t i = 0; i < count; i++)
        positions[i] = position;
    blocked(positions, count);
    free(positions);
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static void raw(char *p)
{
    const char *hex = rest(&p);
    size_t len = strlen(hex);
    if (len % 2 != 0)
        die("bad hex '%s'", hex);
    for (size_t i = 0; i < len; i += 2) {
        int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
        if (hi < 0 || lo < 0)
            die("bad hex '%s'", hex);
        uint8_t b = (uint8_t)(hi << 4 | lo);
        if (!wire_put_raw(&out, &b, 1))
            die("out of memory");
    }
}

/* Reads (and ignores) stdin until the parent closes it, then exits: a parent that
 * died leaves no attacker behind. */
__attribute__((noreturn)) static void hang(void)
{
    flush_out();
    char byte;
    while (read(0, &byte, 1) > 0) {
    }
    _exit(0);
}

/* The index of the "end" closing the block that starts after line `from`. */
static size_t block_end(size_t from)
{
    int depth = 1;
    for (size_t i = from + 1; i < line_count; i++) {
        const char *l = lines[i];
        while (*l == ' ')
            l++;
        if (strncmp(l, "repeat ", 7) == 0)
            depth++;
        else if (strcmp(l, "end") == 0 && --depth == 0)
            return i;
    }
    die("repeat without end at line %zu", from + 1);
}

static void run_lines(size_t from, size_t to);

static void step(size_t *at)
{
    /* Steps tokenize in place: work on a copy so a repeated line stays intact. */
    char *copy = strdup(lines[*at]);
    if (copy == NULL)
        die("out of memory");
    char *p = copy;
    const char *op = word(&p);
    if (op[0] == '\0' || op[0] == '#') {
    } else if (strcmp(op, "repeat") == 0) {
        unsigned long long count = number(word(&p));
        size_t end = block_end(*at);
        for (unsigned long long i = 0; i < count; i++)
            run_lines(*at + 1, end);
        *at = end;
    } else if (strcmp(op, "activate") == 0) {
        await_activate();
    } else if (strcmp(op, "call") == 0) {
        const char *kind = word(&p);
        const char *args = rest(&p);
        host_call(take_position(), kind, args, strlen(args));
    } else if (strcmp(op, "call-at") == 0) {
        uint32_t position = (uint32_t)number(word(&p));
        const char *kind = word(&p);
        const char *args = rest(&p);
        host_call(position, kind, args, strlen(args));
    } else if (strcmp(op, "big-call") == 0) {
        big_call(p);
    } else if (strcmp(op, "flood") == 0) {
        flood(p);
    } else if (strcmp(op, "console-flood") == 0) {
        console_flood(p);
    } else if (strcmp(op, "blocked") == 0) {
        blocked_step(p);
    } else if (strcmp(op, "blocked-all") == 0) {
        blocked(awaitable, awaitable_count);
    } else if (strcmp(op, "blocked-dup") == 0) {
        blocked_dup(p);
    } else if (strcmp(op, "deliver") == 0) {
        await_deliver();
    } else if (strcmp(op, "finish") == 0) {
        finish(p);
    } else if (strcmp(op, "console") == 0) {
        struct proto_msg msg;
        memset(&msg, 0, sizeof msg);
        msg.tag = PROTO_CONSOLE;
        msg.console.stream = text_arg(word(&p));
        msg.console.text = proto_text_of(rest(&p));
        send_msg(&msg);
    } else if (strcmp(op, "raw") == 0) {
        raw(p);
    } else if (strcmp(op, "flush") == 0) {
        flush_out();
    } else if (strcmp(op, "hang") == 0) {
        hang();
    } else {
        die("unknown step '%s' at line %zu", op, *at + 1);
    }
    free(copy);
}

static void run_lines(size_t from, size_t to)
{
    for (size_t at = from; at < to; at++)
        step(&at);
}

/* Reads FILE into lines[] (before confinement: Landlock forbids it afterwards). */
static void load_script(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("cannot open %s: %s", path, strerror(errno));
    static char text[SCRIPT_MAX_BYTES + 1];
    size_t len = 0;
    ssize_t n;
    while ((n = read(fd, text + len, SCRIPT_MAX_BYTES - len)) > 0)
        len += (size_t)n;
    close(fd);
    if (n < 0)
        die("cannot read %s", path);
    text[len] = '\0';
    for (char *line = text; *line != '\0' && line_count < SCRIPT_MAX_LINES;) {
        char *nl = strchr(line, '\n');
        if (nl != NULL)
            *nl = '\0';
        lines[line_count++] = line;
        if (nl == NULL)
            break;
        line = nl + 1;
    }
}

static void send_welcome(const struct confinement *state)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_WELCOME;
    msg.welcome.protocol_version = PROTO_VERSION;
    msg.welcome.engine = proto_text_of("evil_worker");
    msg.welcome.worker_version = proto_text_of("evil_worker");
    msg.welcome.os = proto_text_of("linux");
    msg.welcome.seccomp = state->seccomp;
    msg.welcome.landlock_policy = state->landlock_policy;
    msg.welcome.landlock_runtime_abi = state->landlock_runtime_abi;
    msg.welcome.landlock_applied_abi = state->landlock_applied_abi;
    send_msg(&msg);
    flush_out();
}

int main(int argc, char **argv)
{
    struct confine_options options;
    memset(&options, 0, sizeof options);
    options.landlock_policy = LANDLOCK_POLICY_REQUIRED;
    const char *script = NULL;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--script=", 9) == 0)
            script = argv[i] + 9;
        else if (strcmp(argv[i], "--landlock=optional") == 0)
            options.landlock_policy = LANDLOCK_POLICY_OPTIONAL;
        else if (strcmp(argv[i], "--landlock=required") != 0)
            die("usage: evil_worker --script=FILE --landlock=required|optional");
    }
    if (script == NULL)
        die("usage: evil_worker --script=FILE --landlock=required|optional");
    load_script(script);
    wire_buf_init(&out);
    wire_buf_init(&scratch);
    wire_buf_init(&in);
    /* The parent ignores a dead worker's pipes; so do we: a closed pipe is EPIPE. */
    signal(SIGPIPE, SIG_IGN);
    struct confinement state = confine(&options);

    struct proto_msg hello;
    recv_msg(&hello);
    if (hello.tag != PROTO_HELLO)
        _exit(EXIT_PIPE);
    proto_msg_free(&hello);
    send_welcome(&state);
    run_lines(0, line_count);
    hang();
}
