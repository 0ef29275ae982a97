/* Regression tests for our QuickJS patch series (the files in patches/quickjs/), end to end:
 * build/<variant>/bin/ck-basal --json exec ... with the test-build worker.
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
 * (and at a few of the new-Error one), at -O2; with the patch, at none. */
#include "lib/harness.h"

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
#define SCRIPTS 3

struct sweep_script {
    const char *file;
    const char *what; /* for check names */
    const char *text;
    /* tallies over the sweep */
    int runs, memory, completed, crashed, other;
    char crashes[400]; /* the first heap sizes that crashed */
    char others[600];  /* the first other outcomes */
};

static struct sweep_script sweep_scripts[SCRIPTS] = {
    {"typeerror.js", "a TypeError thrown by a bytecode op (null.x) 30 frames deep",
     "let head = null;\n"
     "function f(n) { if (n === 0) return null.x; return f(n - 1); }\n"
     "for (;;) {\n"
     "  try { f(30); } catch (e) { head = { next: head, e: e }; }\n"
     "  head = { next: head };\n"
     "}\n",
     0, 0, 0, 0, 0, "", ""},
    {"referror.js", "a ReferenceError thrown by a bytecode op (unbound name) 30 frames deep",
     "let head = null;\n"
     "function g(n) { if (n === 0) return no_such_binding; return g(n - 1); }\n"
     "for (;;) {\n"
     "  try { g(30); } catch (e) { head = { next: head, e: e }; }\n"
     "  head = { next: head };\n"
     "}\n",
     0, 0, 0, 0, 0, "", ""},
    {"newerror.js", "throw new Error(...) 30 frames deep, each error and an object retained",
     "const keep = [];\n"
     "function h(n) { if (n === 0) throw new Error('deep ' + keep.length); return h(n - 1); }\n"
     "for (;;) {\n"
     "  try { h(30); } catch (e) { keep.push(e, { n: keep.length }); }\n"
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
             "quickjs patch 0001 backtrace-oom: ck-basal exec reports every run of the heap "
             "sweep (%d scripts x %d budgets) and exits normally",
             SCRIPTS, sizes);
    check(bad_execs == 0, exec_name, "%d of %d execs bad; first: %s", bad_execs, sizes,
          bad_exec_detail);

    for (int i = 0; i < SCRIPTS; i++) {
        struct sweep_script *s = &sweep_scripts[i];
        harness_note("backtrace-oom sweep, %s: %d runs: %d memory, %d completed, %d crashed, "
                     "%d other",
                     s->file, s->runs, s->memory, s->completed, s->crashed, s->other);
        char name[400];
        snprintf(name, sizeof name,
                 "quickjs patch 0001 backtrace-oom: %s, heap filled, never crashes the worker "
                 "at any heap budget from 256 KiB to 2 MiB in 8 KiB steps (build_backtrace "
                 "keeps the error alive when its allocation fails)",
                 s->what);
        check(s->runs == sizes && s->crashed == 0, name,
              "%d of %d runs crashed the worker at heap bytes:%s", s->crashed, s->runs,
              s->crashes);
        snprintf(name, sizeof name,
                 "quickjs patch 0001 backtrace-oom: %s ends every run of the sweep that does "
                 "not crash as budget exhausted: memory (or completed), so the sweep really "
                 "hits the heap budget",
                 s->what);
        check(s->runs == sizes && s->other == 0 && s->memory > 0, name,
              "%d runs of %d sizes: %d memory, %d completed, %d crashed, %d other:%s",
              s->runs, sizes, s->memory, s->completed, s->crashed, s->other, s->others);
    }
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "quickjs patches: ck-basal test build present") ||
        !require_binary(harness_test_worker(),
                        "quickjs patches: ck-basal-worker test build present"))
        return harness_finish();
    if (harness_tmpdir("qjs-patches") == NULL)
        return harness_finish();
    test_backtrace_oom();
    harness_remove_tmpdir();
    return harness_finish();
}
