/* Regression tests for our QuickJS patch series (the files in patches/quickjs/), against
 * the test-build worker: through build/<variant>/bin/ck-basal --json exec, or spoken to
 * directly over its pipes where a check must see the worker itself.
 *
 * Patch 0001 (backtrace-oom): under memory pressure an allocation in build_backtrace
 * fails and throws out of memory; throwing frees the pending exception, which is
 * usually the very error object build_backtrace is writing "stack" to, so the worker
 * read and wrote a freed JSObject and died by SIGSEGV at many heap budgets. The error
 * at risk is one created without a stack and owned only by the pending exception:
 * an error a bytecode operation throws (TypeError, ReferenceError: QuickJS adds their
 * backtrace in JS_CallInternal's exception path, on rt->current_exception), or an
 * Error whose constructor could not add its stack. Each script below fills its heap
 * (a linked list of small objects, so the failing allocations leave little room)
 * while throwing such errors 30 frames deep and catching them; every run must end as
 * "budget exhausted: memory" (or complete), never as "worker crashed".
 *
 * Proven red without the patch: with patches/quickjs/0001-backtrace-oom.patch removed
 * (a scratch copy of the repository, make test-build there), this sweep crashed the
 * worker (SIGSEGV) at most heap budgets of the TypeError and ReferenceError scripts
 * (and at a few of the new-Error one), at -O2; with the patch, at none.
 *
 * Patch 0005 (backtrace-non-object): when the error object itself cannot be allocated,
 * QuickJS throws JS_NULL, and a throw from a builtin (or from outside any frame, as the
 * CPU timer's "interrupted" can be) still asked build_backtrace to define "stack" on
 * it; that throws "not an object", whose error cannot be allocated either, and the
 * recursion overflowed the native stack (SIGSEGV). The fourth script of the sweep makes
 * a builtin throw while the heap fills. Proven red without the patch: that script
 * crashed the worker at about half the budgets of every sweep (and the bytecode-error
 * scripts, about one sweep in ten, when the CPU timer's tick interrupted a call at the
 * exhausted heap); with it, at none in 24 sweeps of each script.
 *
 * Patch 0003 (interrupt-poll): builtins whose loop length a script controls, JSON, string
 * search and the regexp matcher poll for interrupts, and the CPU timer's tick makes a
 * poll call the interrupt handler. Each script below spins inside one such builtin
 * under a 200 ms CPU budget; the check is that the activation ends as budget_exhausted
 * cpu through a poll: the worker itself stopped the script and runs the next
 * activation. (Without the patch the CPU timer's backstop still ends the activation as
 * cpu, but by ending the process: the next activation finds no worker. Without either,
 * only the parent's wall deadline ended them.) Proven red by building without the
 * patch: every case then ended in the backstop.
 *
 * Patch 0004 (regexp-oom): an out-of-memory error inside regexp execution is the engine's
 * own InternalError("out of memory"), so uncaught it ends as budget_exhausted memory
 * (it was InternalError("out of memory in regexp execution"), reported as
 * script_error).
 *
 * Patch 0007 (syntax-error-location): a syntax error names the script's own file, line
 * and column, on the first line too (the worker's wrapper has a line of its own, line
 * 0), in --json's detail and in the human message; a runtime error's stack names the
 * file and the script's own lines. Red without the patch: the detail said
 * "at /path:2" (no column), and the first line's column would count the wrapper.
 *
 * Patch 0008 (frame-columns): every frame of a runtime error's stack names the file, line
 * and column: a call at its callee's name ("Error" in "new Error(...)"), a property read
 * at its '.', columns counted in characters (an 'é' before the throw is one), a tail call
 * at its own call. Red without the patch: the frames said "(/path:2)", no column. */
#include "lib/harness.h"
#include "proto/frame.h"
#include "proto/message.h"
#include "proto/wire.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *str_field(json_t *obj, const char *name)
{
    const char *v = json_string_value(json_object_get(obj, name));
    return v != NULL ? v : "";
}

/* ---- patch 0001: build_backtrace under memory pressure ------------------------- */

#define SWEEP_FROM (256u << 10)
#define SWEEP_TO (2u << 20)
#define SWEEP_STEP (8u << 10)
#define SCRIPTS 4

struct sweep_script {
    const char *patch; /* the patch the script proves, for check names */
    const char *guard; /* what the patch keeps from crashing */
    const char *file;
    const char *what; /* for check names */
    const char *text;
    /* tallies over the sweep */
    int runs, memory, completed, crashed, other;
    char crashes[400]; /* the first heap sizes that crashed */
    char others[600];  /* the first other outcomes */
};

static struct sweep_script sweep_scripts[SCRIPTS] = {
    {"0001 backtrace-oom", "build_backtrace keeps the error alive when its allocation fails", 
     "typeerror.js", "a TypeError thrown by a bytecode op (null.x) 30 frames deep",
     "let head = null;\n"
     "function f(n) { if (n === 0) return null.x; return f(n - 1); }\n"
     "for (;;) {\n"
     "  try { f(30); } catch (e) { head = { next: head, e: e }; }\n"
     "  head = { next: head };\n"
     "}\n",
     0, 0, 0, 0, 0, "", ""},
    {"0001 backtrace-oom", "build_backtrace keeps the error alive when its allocation fails", 
     "referror.js", "a ReferenceError thrown by a bytecode op (unbound name) 30 frames deep",
     "let head = null;\n"
     "function g(n) { if (n === 0) return no_such_binding; return g(n - 1); }\n"
     "for (;;) {\n"
     "  try { g(30); } catch (e) { head = { next: head, e: e }; }\n"
     "  head = { next: head };\n"
     "}\n",
     0, 0, 0, 0, 0, "", ""},
    {"0001 backtrace-oom", "build_backtrace keeps the error alive when its allocation fails", 
     "newerror.js", "throw new Error(...) 30 frames deep, each error and an object retained",
     "const keep = [];\n"
     "function h(n) { if (n === 0) throw new Error('deep ' + keep.length); return h(n - 1); }\n"
     "for (;;) {\n"
     "  try { h(30); } catch (e) { keep.push(e, { n: keep.length }); }\n"
     "}\n",
     0, 0, 0, 0, 0, "", ""},
    {"0005 backtrace-non-object",
     "build_backtrace leaves alone the JS_NULL thrown when no error object could be allocated",
     "builtin.js", "a TypeError thrown by a builtin (Object.defineProperty on a number) 30 frames deep",
     "let head = null;\n"
     "function d(n) { if (n === 0) return Object.defineProperty(1, 'x', {}); return d(n - 1); }\n"
     "for (;;) {\n"
     "  try { d(30); } catch (e) { head = { next: head, e: e }; }\n"
     "  head = { next: head };\n"
     "}\n",
     0, 0, 0, 0, 0, "", ""},
};

static void append(char *buf, size_t cap, const char *text)
{
    size_t len = strlen(buf);
    if (len + strlen(text) + 1 < cap)
        memcpy(buf + len, text, strlen(text) + 1);
}

static void test_backtrace_oom(void)
{
    const char *paths[SCRIPTS];
    for (int i = 0; i < SCRIPTS; i++)
        paths[i] = harness_tmp_file(sweep_scripts[i].file, sweep_scripts[i].text);

    int sizes = 0, bad_execs = 0;
    char bad_exec_detail[800] = "";
    for (unsigned heap = SWEEP_FROM; heap <= SWEEP_TO; heap += SWEEP_STEP) {
        char heap_text[32];
        snprintf(heap_text, sizeof heap_text, "%u", heap);
        /* One exec per heap size runs every script in turn (a new worker each, since
         * a run that exhausts its budget retires its worker). */
        const char *argv[12];
        size_t n = 0;
        argv[n++] = harness_test_parent();
        argv[n++] = "--json";
        argv[n++] = "exec";
        for (int i = 0; i < SCRIPTS; i++)
            argv[n++] = paths[i];
        argv[n++] = "--heap-bytes";
        argv[n++] = heap_text;
        argv[n] = NULL;
        struct proc_result r = proc_run(argv, NULL, 0, 30000);
        sizes++;

        /* Its runs, one JSON object per line, in script order. */
        int lines = 0;
        const char *at = r.out;
        while (*at != '\0' && lines < SCRIPTS) {
            size_t len = strcspn(at, "\n");
            json_error_t error;
            json_t *run = json_loadb(at, len, 0, &error);
            struct sweep_script *s = &sweep_scripts[lines];
            if (run != NULL) {
                const char *outcome = str_field(run, "outcome");
                char note[200];
                s->runs++;
                if (strcmp(outcome, "budget_exhausted") == 0 &&
                    strcmp(str_field(run, "budget"), "memory") == 0) {
                    s->memory++;
                } else if (strcmp(outcome, "completed") == 0) {
                    s->completed++;
                } else if (strcmp(outcome, "worker_crashed") == 0) {
                    s->crashed++;
                    snprintf(note, sizeof note, " %u (%s)", heap, str_field(run, "message"));
                    append(s->crashes, sizeof s->crashes, note);
                } else {
                    s->other++;
                    snprintf(note, sizeof note, " %u: %s;", heap, str_field(run, "message"));
                    append(s->others, sizeof s->others, note);
                }
                json_decref(run);
            }
            lines++;
            at += len;
            if (*at == '\n')
                at++;
        }
        /* exec exits 1 when a run did not complete (every run here exhausts its heap). */
        if (lines != SCRIPTS || !(proc_exited_with(&r, 1) || proc_exited_with(&r, 0))) {
            bad_execs++;
            if (bad_exec_detail[0] == '\0')
                snprintf(bad_exec_detail, sizeof bad_exec_detail, "heap %u: %d runs, %s; out %.300s",
                         heap, lines, proc_describe(&r), r.out);
        }
        proc_result_free(&r);
    }

    char exec_name[200];
    snprintf(exec_name, sizeof exec_name,
             "quickjs patches 0001 backtrace-oom and 0005 backtrace-non-object: ck-basal exec "
             "reports every run of the heap sweep (%d scripts x %d budgets) and exits normally",
             SCRIPTS, sizes);
    check(bad_execs == 0, exec_name, "%d of %d execs bad; first: %s", bad_execs, sizes,
          bad_exec_detail);

    for (int i = 0; i < SCRIPTS; i++) {
        struct sweep_script *s = &sweep_scripts[i];
        harness_note("heap sweep, %s: %d runs: %d memory, %d completed, %d crashed, "
                     "%d other",
                     s->file, s->runs, s->memory, s->completed, s->crashed, s->other);
        char name[400];
        snprintf(name, sizeof name,
                 "quickjs patch %s: %s, heap filled, never crashes the worker at any heap "
                 "budget from 256 KiB to 2 MiB in 8 KiB steps (%s) [guard %s]",
                 s->patch, s->what, s->guard, s->patch + 5);
        check(s->runs == sizes && s->crashed == 0, name,
              "%d of %d runs crashed the worker at heap bytes:%s", s->crashed, s->runs,
              s->crashes);
        snprintf(name, sizeof name,
                 "quickjs patch %s: %s ends every run of the sweep that does not crash as "
                 "budget exhausted: memory (or completed), so the sweep really hits the heap "
                 "budget",
                 s->patch, s->what);
        check(s->runs == sizes && s->other == 0 && s->memory > 0, name,
              "%d runs of %d sizes: %d memory, %d completed, %d crashed, %d other:%s",
              s->runs, sizes, s->memory, s->completed, s->crashed, s->other, s->others);
    }
}

/* ---- a worker spoken to directly ----------------------------------------------- */

#define DIRECT_TIMEOUT_MS 60000

struct direct {
    struct proc p;
    bool up;
    struct wire_buf buf;
};

/* What an activation ended with. */
struct finished {
    bool got;
    enum proto_outcome outcome;
    enum proto_budget exhausted;
    char text[600]; /* the value, or "kind: detail" */
};

static bool direct_send(struct direct *d, const struct proto_msg *msg)
{
    struct wire_buf payload;
    wire_buf_init(&payload);
    bool ok = proto_encode(msg, &payload) == PROTO_OK;
    uint8_t header[PROTO_FRAME_HEADER_BYTES];
    frame_header_encode((uint32_t)payload.len, header);
    ok = ok && fd_write_all(d->p.in_fd, header, sizeof header, DIRECT_TIMEOUT_MS) == 0 &&
         (payload.len == 0 ||
          fd_write_all(d->p.in_fd, payload.data, payload.len, DIRECT_TIMEOUT_MS) == 0);
    wire_buf_free(&payload);
    return ok;
}

/* The next message; false on EOF, timeout or a frame that does not decode. */
static bool direct_recv(struct direct *d, struct proto_msg *msg)
{
    memset(msg, 0, sizeof *msg);
    uint8_t header[PROTO_FRAME_HEADER_BYTES];
    if (fd_read_exact(d->p.out_fd, header, sizeof header, DIRECT_TIMEOUT_MS) != 0)
        return false;
    uint32_t len = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 |
                   (uint32_t)header[2] << 8 | header[3];
    if (len > PROTO_MAX_FRAME || !wire_buf_reserve(&d->buf, len ? len : 1))
        return false;
    if (len > 0 && fd_read_exact(d->p.out_fd, d->buf.data, len, DIRECT_TIMEOUT_MS) != 0)
        return false;
    return proto_decode(d->buf.data, len, msg) == PROTO_OK;
}

/* Starts the test-build worker and has it welcome us. */
static bool direct_start(struct direct *d)
{
    memset(d, 0, sizeof *d);
    const char *argv[] = {harness_test_worker(), "--landlock=required", NULL};
    struct proc_opts opts = {false, PROC_PIPE, PROC_PIPE, PROC_PIPE, HARNESS_EMPTY_ENV};
    if (proc_start(&d->p, argv, &opts) != 0)
        return false;
    d->up = true;
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_HELLO;
    msg.hello.version = PROTO_VERSION;
    if (!direct_send(d, &msg) || !direct_recv(d, &msg))
        return false;
    bool welcomed = msg.tag == PROTO_WELCOME;
    proto_msg_free(&msg);
    return welcomed;
}

static struct proc_result direct_end(struct direct *d)
{
    wire_buf_free(&d->buf);
    d->up = false;
    return proc_finish(&d->p, NULL, 0, DIRECT_TIMEOUT_MS);
}

/* Runs a script that makes no host calls; false if no Finished came. */
static bool direct_activate(struct direct *d, const char *script, uint32_t cpu_ms,
                            uint64_t heap_bytes, struct finished *out)
{
    memset(out, 0, sizeof *out);
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_ACTIVATE;
    msg.activate.activation_id = 1;
    msg.activate.profile = PROTO_PROFILE_FLOW;
    msg.activate.script = proto_text_of(script);
    msg.activate.budgets.cpu_ms = cpu_ms;
    msg.activate.budgets.heap_bytes = heap_bytes;
    msg.activate.budgets.stack_bytes = 1u << 20;
    msg.activate.budgets.max_value_bytes = 256u << 10;
    if (!direct_send(d, &msg))
        return false;
    for (;;) {
        struct proto_msg in;
        if (!direct_recv(d, &in))
            return false;
        if (in.tag == PROTO_FINISHED) {
            out->got = true;
            out->outcome = in.finished.outcome;
            out->exhausted = in.finished.exhausted;
            if (in.finished.outcome == PROTO_OUTCOME_COMPLETED)
                snprintf(out->text, sizeof out->text, "%.*s", (int)in.finished.value.len,
                         in.finished.value.str);
            else
                snprintf(out->text, sizeof out->text, "%.*s: %.*s",
                         (int)in.finished.failure_kind.len, in.finished.failure_kind.str,
                         (int)in.finished.failure_detail.len, in.finished.failure_detail.str);
            proto_msg_free(&in);
            return true;
        }
        proto_msg_free(&in);
    }
}

static const char *finished_text(const struct finished *f)
{
    static char text[700];
    if (!f->got)
        snprintf(text, sizeof text, "no Finished (the worker ended)");
    else if (f->outcome == PROTO_OUTCOME_BUDGET_EXHAUSTED)
        snprintf(text, sizeof text, "budget_exhausted %s", proto_budget_name(f->exhausted));
    else
        snprintf(text, sizeof text, "%s %s", proto_outcome_name(f->outcome), f->text);
    return text;
}

/* ---- patch 0003: native loops poll for interrupts -------------------------------- */

#define LOOP_CPU_MS 200u
#define LOOP_HEAP (64ull << 20)

static const struct {
    const char *what;
    const char *script;
} NATIVE_LOOPS[] = {
    {"JSON.stringify of a 200 000-element array, in a loop",
     "const a = []; for (let i = 0; i < 200000; i++) a.push(i);\n"
     "for (;;) JSON.stringify(a);\n"},
    {"a catastrophic regexp (/(a+)+$/ on 40 a's and a b)",
     "return /(a+)+$/.test('a'.repeat(40) + 'b');\n"},
    {"a bounded but slow regexp scan (/a{1,3000}b/ over 200 000 a's)",
     "return /a{1,3000}b/.test('a'.repeat(200000));\n"},
    {"join('') of a sparse array of length 2^32-1",
     "const a = []; a.length = 2 ** 32 - 1; return a.join('').length;\n"},
    {"lastIndexOf of a sparse array of length 2^32-1",
     "const a = []; a.length = 2 ** 32 - 1; return a.lastIndexOf(1);\n"},
    {"includes on {length: 2**53-1}",
     "return Array.prototype.includes.call({length: 2 ** 53 - 1}, 1);\n"},
    {"reverse on {length: 2**53-1}",
     "return Array.prototype.reverse.call({length: 2 ** 53 - 1}).length;\n"},
    {"copyWithin on {length: 2**53-1}",
     "return Array.prototype.copyWithin.call({length: 2 ** 53 - 1}, 0, 1).length;\n"},
    {"indexOf on {length: 2**53-1}",
     "return Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1);\n"},
    {"forEach on {length: 2**53-1}",
     "Array.prototype.forEach.call({length: 2 ** 53 - 1}, () => {}); return 1;\n"},
    {"reduce on {length: 2**53-1}",
     "return Array.prototype.reduce.call({length: 2 ** 53 - 1}, (a) => a, 0);\n"},
    {"slice of {length: 2**32-1}",
     "return Array.prototype.slice.call({length: 2 ** 32 - 1}).length;\n"},
    {"splice(0, 1) on {length: 2**53-1}",
     "return Array.prototype.splice.call({length: 2 ** 53 - 1}, 0, 1).length;\n"},
    {"concat of a spreadable {length: 2**53-2}",
     "return [].concat({length: 2 ** 53 - 2, [Symbol.isConcatSpreadable]: true}).length;\n"},
    {"flat on {length: 2**53-1}",
     "return Array.prototype.flat.call({length: 2 ** 53 - 1}).length;\n"},
    {"sort on {length: 2**53-1}",
     "return Array.prototype.sort.call({length: 2 ** 53 - 1}).length;\n"},
    {"String indexOf with a 512 Ki-character needle that almost matches everywhere",
     "const s = 'a'.repeat(1 << 20);\n"
     "return s.indexOf('a'.repeat(1 << 19) + 'b');\n"},
    {"String split by a 512 Ki-character separator that almost matches everywhere",
     "const s = 'a'.repeat(1 << 20);\n"
     "return s.split('a'.repeat(1 << 19) + 'b').length;\n"},
    {"String replaceAll of a 512 Ki-character string that almost matches everywhere",
     "const s = 'a'.repeat(1 << 20);\n"
     "return s.replaceAll('a'.repeat(1 << 19) + 'b', '').length;\n"},
};

static void test_interrupt_poll(void)
{
    for (size_t i = 0; i < sizeof NATIVE_LOOPS / sizeof NATIVE_LOOPS[0]; i++) {
        char name[400];
        snprintf(name, sizeof name,
                 "quickjs patch 0003 interrupt-poll: %s ends as budget exhausted: cpu through "
                 "an interrupt poll, and the same worker runs the next activation "
                 "[guard interrupt-poll]",
                 NATIVE_LOOPS[i].what);
        struct direct d;
        if (!direct_start(&d)) {
            if (d.up) {
                struct proc_result r = direct_end(&d);
                proc_result_free(&r);
            }
            fail(name, "the worker did not welcome us");
            continue;
        }
        struct finished spun, next;
        long before = process_cpu_ms(d.p.pid);
        bool ended = direct_activate(&d, NATIVE_LOOPS[i].script, LOOP_CPU_MS, LOOP_HEAP, &spun);
        long after = process_cpu_ms(d.p.pid);
        bool answered = ended && direct_activate(&d, "return 'next';", 1000, LOOP_HEAP, &next);
        struct proc_result r = direct_end(&d);
        char spun_text[700];
        snprintf(spun_text, sizeof spun_text, "%s", finished_text(&spun));
        check(spun.got && spun.outcome == PROTO_OUTCOME_BUDGET_EXHAUSTED &&
                  spun.exhausted == PROTO_BUDGET_CPU && answered &&
                  next.outcome == PROTO_OUTCOME_COMPLETED && strcmp(next.text, "\"next\"") == 0,
              name, "%s, then %s; worker %s", spun_text, answered ? finished_text(&next) : "nothing",
              proc_describe(&r));
        if (before >= 0 && after >= 0)
            harness_note("interrupt-poll: %s: stopped after %ld ms of CPU (budget %u ms)",
                         NATIVE_LOOPS[i].what, after - before, LOOP_CPU_MS);
        proc_result_free(&r);
    }
}

/* ---- patch 0004: out of memory inside regexp execution --------------------------- */

/* The matcher's backtracking stack for (?:a|b)* over 400 000 characters needs far more
 * than a 4 MiB heap; its growth fails while the heap is well below the budget, so
 * this is an ordinary out-of-memory error: uncaught it is the memory budget's, caught
 * the script may go on. */
static void test_regexp_oom(void)
{
    const char *uncaught = harness_tmp_file(
        "regexp_oom.js", "const s = 'ab'.repeat(200000);\nreturn /(?:a|b)*c/.test(s);\n");
    const char *caught = harness_tmp_file(
        "regexp_oom_caught.js",
        "const s = 'ab'.repeat(200000);\n"
        "try { return /(?:a|b)*c/.test(s); } catch (e) { return e.name + ': ' + e.message; }\n");
    const char *argv[] = {harness_test_parent(), "--json", "exec", uncaught, caught,
                          "--heap-bytes", "4194304", "--cpu-ms", "20000", NULL};
    struct proc_result r = proc_run(argv, NULL, 0, 120000);
    json_t *runs[2] = {NULL, NULL};
    const char *at = r.out;
    for (int i = 0; i < 2 && *at != '\0'; i++) {
        size_t len = strcspn(at, "\n");
        json_error_t error;
        runs[i] = json_loadb(at, len, 0, &error);
        at += len;
        if (*at == '\n')
            at++;
    }
    check(runs[0] != NULL && strcmp(str_field(runs[0], "outcome"), "budget_exhausted") == 0 &&
              strcmp(str_field(runs[0], "budget"), "memory") == 0,
          "quickjs patch 0004 regexp-oom: an uncaught out-of-memory error inside regexp "
          "execution ends as budget exhausted: memory, not script_error [guard regexp-oom]",
          "%s; out: %.600s", proc_describe(&r), r.out);
    check(runs[1] != NULL && strcmp(str_field(runs[1], "outcome"), "completed") == 0 &&
              strcmp(str_field(runs[1], "value"), "InternalError: out of memory") == 0,
          "quickjs patch 0004 regexp-oom: the same error caught is the engine's own "
          "InternalError: out of memory, and the activation completes",
          "%s; out: %.600s", proc_describe(&r), r.out);
    json_decref(runs[0]);
    json_decref(runs[1]);
    proc_result_free(&r);
}

/* ---- patch 0007: where a syntax error is -------------------------------------- */

static json_t *exec_one(const char *path, struct proc_result *r, bool json)
{
    const char *argv[] = {harness_test_parent(), json ? "--json" : "exec", json ? "exec" : path,
                          json ? path : NULL, NULL};
    *r = proc_run(argv, NULL, 0, 60000);
    return json ? json_loads(r->out, 0, NULL) : NULL;
}

static void test_syntax_error_location(void)
{
    const char *second = harness_tmp_file("syntax_second.js", "let a = 1;\nlet b = ;\n");
    const char *first = harness_tmp_file("syntax_first.js", "  return ) ;\n");
    const char *runtime =
        harness_tmp_file("runtime.js", "let a = 1;\nfunction f() {\n  null.x;\n}\nf();\n");
    struct proc_result r;
    char want[1024];
    json_t *o = exec_one(second, &r, true);
    snprintf(want, sizeof want, "SyntaxError: unexpected token in expression: ';'\n    at %s:2:9", second);
    check(o != NULL && strcmp(str_field(o, "kind"), "syntax_error") == 0 &&
              strcmp(str_field(o, "detail"), want) == 0,
          "quickjs patch 0007 syntax-error-location: --json's detail names the script's file, "
          "line 2 and column 9 [guard syntax-error-location]",
          "%s; out: %.600s", proc_describe(&r), r.out);
    json_decref(o);
    proc_result_free(&r);
    o = exec_one(first, &r, true);
    snprintf(want, sizeof want, "    at %s:1:10", first);
    check(o != NULL && strstr(str_field(o, "detail"), want) != NULL,
          "quickjs patch 0007 syntax-error-location: on the script's first line the column is "
          "the script's own (the wrapper is line 0)",
          "%s; out: %.600s", proc_describe(&r), r.out);
    json_decref(o);
    proc_result_free(&r);
    (void)exec_one(second, &r, false);
    snprintf(want, sizeof want,
             "syntax error: SyntaxError: unexpected token in expression: ';' (%s:2:9)", second);
    check(strstr(r.out, want) != NULL,
          "quickjs patch 0007 syntax-error-location: the human message ends with the location",
          "%s; out: %.600s", proc_describe(&r), r.out);
    proc_result_free(&r);
    o = exec_one(runtime, &r, true);
    snprintf(want, sizeof want,
             "TypeError: cannot read property 'x' of null\n    at f (%s:3:7)\n    at <anonymous> (%s:5:1)",
             runtime, runtime);
    check(o != NULL && strcmp(str_field(o, "detail"), want) == 0 &&
              strstr(str_field(o, "message"), ":3:7)") != NULL,
          "quickjs patch 0007 syntax-error-location: a runtime error's stack names the file and "
          "the script's own lines; the message its first frame",
          "%s; out: %.600s", proc_describe(&r), r.out);
    json_decref(o);
    proc_result_free(&r);
}

/* ---- patch 0008: the column of each frame --------------------------------------- */

static void test_frame_columns(void)
{
    const char *path = harness_tmp_file(
        "frame_columns.js", "function thrower() {\n"
                            "  const \xc3\xa9 = '\xc3\xbc'; throw new Error('at column');\n"
                            "}\n"
                            "function middle() { return [1].map(thrower); }\n"
                            "middle();\n");
    struct proc_result r;
    char want[2048];
    json_t *o = exec_one(path, &r, true);
    snprintf(want, sizeof want,
             "Error: at column\n    at thrower (%s:2:28)\n    at map (native)\n"
             "    at middle (%s:4:32)\n    at <anonymous> (%s:5:1)",
             path, path, path);
    check(o != NULL && strcmp(str_field(o, "kind"), "script_error") == 0 &&
              strcmp(str_field(o, "detail"), want) == 0,
          "quickjs patch 0008 frame-columns: --json's stack names file, line and column of "
          "every frame (characters, the callee's name, a tail call's own) [guard frame-columns]",
          "%s; out: %.800s", proc_describe(&r), r.out);
    json_decref(o);
    proc_result_free(&r);
    (void)exec_one(path, &r, false);
    snprintf(want, sizeof want, "script error: Error: at column (%s:2:28)", path);
    check(strstr(r.out, want) != NULL,
          "quickjs patch 0008 frame-columns: the human message ends with the first frame's "
          "file:line:column",
          "%s; out: %.600s", proc_describe(&r), r.out);
    proc_result_free(&r);
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "quickjs patches: ck-basal test build present") ||
        !require_binary(harness_test_worker(),
                        "quickjs patches: ck-basal-worker test build present"))
        return harness_finish();
    if (harness_tmpdir("qjs-patches") == NULL)
        return harness_finish();
    test_interrupt_poll();
    test_regexp_oom();
    test_syntax_error_location();
    test_frame_columns();
    test_backtrace_oom();
    harness_remove_tmpdir();
    return harness_finish();
}
