/* The seccomp boundary: every confinement probe, run on the RELEASE worker, is killed by the
 * seccomp filter at its attempt; the same probe unconfined (--no-sandbox) reaches the
 * kernel and prints its result, which is the control that proves the attempt works.
 *
 * For each probe NAME:
 *   control   ck-basal-worker --confinement-probe=NAME --no-sandbox
 *             -> "ready NAME", "result NAME rc=.. errno=..", exit 0
 *   confined  ck-basal-worker --confinement-probe=NAME
 *             -> "ready NAME", no "result NAME" line, death by SIGSYS, nothing on stdout
 * "ready" is written after confinement and arming, just before the attempt, and the
 * result line right after it, so SIGSYS between the two is the filter killing the
 * attempt (see src/worker/probes.h). Each confined check names the guard it proves.
 *
 * Kernel-absent entries are detected from the control, and the check says which case
 * applied:
 *   int80-getpid  with IA-32 emulation the control gets its pid and the confined probe
 *                 must die by SIGSYS (the filter kills the i386 arch); without it the
 *                 control dies by SIGSEGV before any filter, and the confined probe must
 *                 still never print a result.
 *   x32-getpid    the control returns ENOSYS where the kernel has no x32 ABI, its pid
 *                 where it has one; the confined probe must die by SIGSYS either way,
 *                 because the filter sees x32 numbers before the kernel's table.
 *
 * The probe list is the issue's, hard-coded here, and must equal the worker's own
 * probe table plus nothing but the probes named in EXTRA_PROBES (the Makefile links
 * src/worker/probes.c into the test programs to read that table).
 *
 * Positive side of the argument checks: the confined release worker still serves a
 * Hello, refusals and large frames (read on fd 0, writev on fd 1, private anonymous
 * mmap, mremap MAYMOVE), exits 0 at EOF, and ck-basal worker-check accepts it. */
#include "lib/harness.h"

#include "proto/frame.h"
#include "proto/message.h"
#include "proto/wire.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/probes.h"

#define RUN_TIMEOUT_MS 10000

struct required_probe {
    const char *name;
    const char *guard; /* what the confined run proves */
};

/* The list, in its order. */
static const struct required_probe REQUIRED[] = {
    {"open", "guard seccomp: openat not admitted"},
    {"create", "guard seccomp: openat not admitted (O_CREAT)"},
    {"stat", "guard seccomp: newfstatat not admitted (Landlock does not stop it)"},
    {"readlink", "guard seccomp: readlinkat not admitted (Landlock does not stop it)"},
    {"getdents", "guard seccomp: getdents64 not admitted"},
    {"socket-tcp", "guard seccomp: socket not admitted"},
    {"socket-udp", "guard seccomp: socket not admitted (Landlock does not stop UDP)"},
    {"socket-unix", "guard seccomp: socket not admitted"},
    {"socket-netlink", "guard seccomp: socket not admitted (Landlock does not stop netlink)"},
    {"connect-unix", "guard seccomp: connect not admitted (Landlock does not stop it)"},
    {"execve", "guard seccomp: execve not admitted"},
    {"fork", "guard seccomp: clone not admitted"},
    {"clone-thread", "guard seccomp: clone not admitted (no threads)"},
    {"kill-parent", "guard seccomp: kill only to own pid"},
    {"ptrace", "guard seccomp: ptrace not admitted"},
    {"process-vm-readv", "guard seccomp: process_vm_readv not admitted"},
    {"mmap-exec", "guard seccomp: mmap never PROT_EXEC"},
    {"mprotect-exec", "guard seccomp: mprotect never PROT_EXEC"},
    {"mmap-shared", "guard seccomp: mmap only private anonymous"},
    {"io-uring", "guard seccomp: io_uring_setup not admitted"},
    {"userfaultfd", "guard seccomp: userfaultfd not admitted"},
    {"x32-getpid", "guard seccomp: x32 numbers killed"},
    {"int80-getpid", "guard seccomp: i386 entry killed as a bad architecture"},
    {"read-fd1", "guard seccomp: read only on fd 0"},
    {"write-fd0", "guard seccomp: write only on fds 1 and 2"},
    {"clock-boottime", "guard seccomp: clock_gettime only on REALTIME, MONOTONIC, THREAD_CPUTIME"},
    {"futex-shared", "guard seccomp: futex only private ops"},
    {"tgkill-other", "guard seccomp: tgkill only to own tid"},
    {"prctl", "guard seccomp: prctl not admitted"},
    {"seccomp", "guard seccomp: seccomp not admitted"},
    {"mremap-fixed", "guard seccomp: mremap without MREMAP_FIXED"},
    {"madvise-free", "guard seccomp: madvise only MADV_DONTNEED"},
};
#define REQUIRED_COUNT (sizeof REQUIRED / sizeof REQUIRED[0])

/* Probes the worker has beyond the list. connect-tcp exists for
 * t_landlock_layer (Landlock alone refuses the connect); confined, socket kills it. */
static const struct required_probe EXTRA_PROBES[] = {
    {"connect-tcp", "guard seccomp: socket not admitted"},
};
#define EXTRA_COUNT (sizeof EXTRA_PROBES / sizeof EXTRA_PROBES[0])

static const struct required_probe *listed_probe(const char *name)
{
    for (size_t i = 0; i < REQUIRED_COUNT; i++)
        if (strcmp(REQUIRED[i].name, name) == 0)
            return &REQUIRED[i];
    for (size_t i = 0; i < EXTRA_COUNT; i++)
        if (strcmp(EXTRA_PROBES[i].name, name) == 0)
            return &EXTRA_PROBES[i];
    return NULL;
}

/* The worker's probe table equals REQUIRED + EXTRA_PROBES: nothing of the is
 * missing, and no probe of the worker goes untested here. */
static void check_probe_list(void)
{
    char detail[512] = "";
    bool ok = true;
    for (size_t i = 0; i < REQUIRED_COUNT; i++) {
        if (probe_find(REQUIRED[i].name) == NULL) {
            snprintf(detail, sizeof detail, "the worker has no probe '%s'", REQUIRED[i].name);
            ok = false;
        }
    }
    for (size_t i = 0; i < EXTRA_COUNT; i++) {
        if (probe_find(EXTRA_PROBES[i].name) == NULL) {
            snprintf(detail, sizeof detail, "the worker has no probe '%s'", EXTRA_PROBES[i].name);
            ok = false;
        }
    }
    for (size_t i = 0; i < probe_count(); i++) {
        if (listed_probe(probe_name_at(i)) == NULL) {
            snprintf(detail, sizeof detail, "the worker's probe '%s' is not tested here",
                     probe_name_at(i));
            ok = false;
        }
    }
    if (probe_count() != REQUIRED_COUNT + EXTRA_COUNT && ok) {
        snprintf(detail, sizeof detail, "the worker has %zu probes, this test knows %zu",
                 probe_count(), REQUIRED_COUNT + EXTRA_COUNT);
        ok = false;
    }
    check(ok, "the worker's probe table is the issue's 32 probes plus connect-tcp", "%s", detail);
}

/* The release worker refuses an unknown probe name as a usage error: an accepted name
 * is a real probe, not a silently ignored argument. */
static void check_unknown_probe_refused(const char *worker)
{
    const char *argv[] = {worker, "--confinement-probe=no-such-probe", NULL};
    struct proc_result r = proc_run(argv, NULL, 0, RUN_TIMEOUT_MS);
    check(proc_exited_with(&r, 64) && !output_has_line_prefix(r.err, "ready "),
          "an unknown probe name is a usage error (exit 64), no attempt", "%s", proc_describe(&r));
    proc_result_free(&r);
}

static void run_probe(const char *worker, const struct required_probe *probe)
{
    char arg[128], ready[128], result_prefix[128], name[384];
    snprintf(arg, sizeof arg, "--confinement-probe=%s", probe->name);
    snprintf(ready, sizeof ready, "ready %s", probe->name);
    snprintf(result_prefix, sizeof result_prefix, "result %s ", probe->name);

    /* The control: unconfined, the attempt reaches the kernel and returns. */
    const char *control_argv[] = {worker, arg, "--no-sandbox", NULL};
    struct proc_result control = proc_run(control_argv, NULL, 0, RUN_TIMEOUT_MS);
    struct probe_result res = probe_result_parse(control.err, probe->name);
    bool is_int80 = strcmp(probe->name, "int80-getpid") == 0;
    bool is_x32 = strcmp(probe->name, "x32-getpid") == 0;
    bool control_ok = proc_exited_with(&control, 0) && output_has_line(control.err, ready) &&
                      res.present;

    /* The one kernel-absent case that can end the control without a result: no IA-32
     * emulation, so int 0x80 faults (SIGSEGV) before any filter could see it. */
    bool kernel_lacks_int80 = is_int80 && died_by_signal(&control, SIGSEGV) &&
                              output_has_line(control.err, ready) && !res.present;

    char case_text[160] = "";
    if (is_int80)
        snprintf(case_text, sizeof case_text, "%s",
                 kernel_lacks_int80 ? "kernel without IA-32 emulation: unconfined int 0x80 "
                                      "faults with SIGSEGV"
                 : res.present && res.rc > 0 ? "kernel with IA-32 emulation: unconfined int "
                                               "0x80 getpid returns the pid"
                                             : "unexpected control");
    if (is_x32)
        snprintf(case_text, sizeof case_text, "%s",
                 res.present && res.rc == -1 && res.err == ENOSYS
                     ? "kernel without the x32 ABI: unconfined x32 getpid returns ENOSYS"
                 : res.present && res.rc > 0 ? "kernel with the x32 ABI: unconfined x32 getpid "
                                               "returns the pid"
                                             : "unexpected control");

    if (kernel_lacks_int80) {
        /* Detection, stated as a check: ready, then SIGSEGV, no result. */
        snprintf(name, sizeof name, "probe %s: unconfined control shows the kernel has no such "
                 "entry (%s)", probe->name, case_text);
        check(kernel_lacks_int80, name, "%s", proc_describe(&control));
    } else {
        snprintf(name, sizeof name, "probe %s: unconfined control reaches the kernel and prints "
                 "its result%s%s%s", probe->name, case_text[0] ? " (" : "", case_text,
                 case_text[0] ? ")" : "");
        check(control_ok, name, "%s", proc_describe(&control));
        if (res.present)
            harness_note("probe %s unconfined: rc=%ld errno=%d (%s)", probe->name, res.rc,
                         res.err, res.err ? strerror(res.err) : "success");
        if (control_ok && !is_x32 && res.rc == -1 && res.err == ENOSYS)
            harness_note("probe %s: the kernel does not implement this call (ENOSYS unconfined)",
                         probe->name);
    }

    /* Confined: ready, then SIGSYS at the attempt, never a result. */
    const char *confined_argv[] = {worker, arg, NULL};
    struct proc_result confined = proc_run(confined_argv, NULL, 0, RUN_TIMEOUT_MS);
    bool ready_seen = output_has_line(confined.err, ready);
    bool result_seen = output_has_line_prefix(confined.err, result_prefix);
    bool quiet_stdout = confined.out_len == 0;
    if (kernel_lacks_int80) {
        /* The filter never sees the call; what matters is that it never completes. */
        snprintf(name, sizeof name, "probe %s: confined worker never completes int 0x80 and "
                 "prints no result (%s; died by a signal) [%s]", probe->name, case_text,
                 probe->guard);
        check(ready_seen && !result_seen && quiet_stdout && confined.signaled &&
                  (confined.signal == SIGSEGV || confined.signal == SIGSYS),
              name, "%s", proc_describe(&confined));
    } else {
        snprintf(name, sizeof name, "probe %s: confined worker is killed by SIGSYS at the "
                 "attempt, no result line%s%s%s [%s]", probe->name, case_text[0] ? " (" : "",
                 case_text, case_text[0] ? ")" : "", probe->guard);
        check(ready_seen && !result_seen && quiet_stdout && died_by_signal(&confined, SIGSYS),
              name, "%s%s%s%s", proc_describe(&confined), ready_seen ? "" : "; no ready line",
              result_seen ? "; printed a result" : "", quiet_stdout ? "" : "; wrote on stdout");
    }
    proc_result_free(&control);
    proc_result_free(&confined);
}

/* ---- positive side: the admitted calls and arguments carry normal life ---- */

static bool append_frame(struct wire_buf *into, const uint8_t *payload, size_t len)
{
    uint8_t header[PROTO_FRAME_HEADER_BYTES];
    frame_header_encode((uint32_t)len, header);
    return wire_put_raw(into, header, sizeof header) && wire_put_raw(into, payload, len);
}

/* The release worker, confined, serves: Hello, a 300 KB and a 3 MB malformed frame (the
 * frame buffer passes malloc's mmap threshold, then grows by mremap MAYMOVE), a second
 * Hello; then EOF. It must answer Welcome, Refused, Refused, Refused and exit 0. */
static void check_worker_serves_under_filter(const char *worker)
{
    const char *name = "confined release worker serves Hello, refusals and 3 MB frames and "
                       "exits 0 at EOF (read fd 0, writev fd 1, private mmap and mremap "
                       "MAYMOVE are admitted)";
    struct wire_buf hello_payload, input;
    wire_buf_init(&hello_payload);
    wire_buf_init(&input);
    struct proto_msg hello;
    memset(&hello, 0, sizeof hello);
    hello.tag = PROTO_HELLO;
    hello.hello.version = PROTO_VERSION;
    size_t big[2] = {(size_t)300 * 1000, (size_t)3 * 1000 * 1000};
    uint8_t *junk = malloc(big[1]);
    bool built = junk != NULL && proto_encode(&hello, &hello_payload) == PROTO_OK &&
                 append_frame(&input, hello_payload.data, hello_payload.len);
    if (junk != NULL)
        memset(junk, 0xee, big[1]); /* 0xee is no message tag: malformed */
    for (int i = 0; built && i < 2; i++)
        built = append_frame(&input, junk, big[i]);
    built = built && append_frame(&input, hello_payload.data, hello_payload.len);
    free(junk);
    if (!built) {
        fail(name, "could not build the input frames");
        wire_buf_free(&hello_payload);
        wire_buf_free(&input);
        return;
    }

    const char *argv[] = {worker, "--landlock=required", NULL};
    struct proc_result r = proc_run(argv, input.data, input.len, RUN_TIMEOUT_MS);
    static const unsigned want_tags[] = {PROTO_WELCOME, PROTO_REFUSED, PROTO_REFUSED,
                                         PROTO_REFUSED};
    char detail[512] = "";
    bool ok = proc_exited_with(&r, 0);
    if (!ok)
        snprintf(detail, sizeof detail, "%s", proc_describe(&r));
    const uint8_t *at = (const uint8_t *)r.out;
    size_t left = r.out_len;
    size_t frames = 0;
    while (ok && left > 0) {
        const uint8_t *payload;
        size_t payload_len, consumed;
        struct proto_msg msg;
        if (frame_parse(at, left, &payload, &payload_len, &consumed) != FRAME_OK ||
            proto_decode(payload, payload_len, &msg) != PROTO_OK) {
            snprintf(detail, sizeof detail, "reply %zu is not a valid frame", frames + 1);
            ok = false;
            break;
        }
        if (frames < 4 && msg.tag != want_tags[frames]) {
            snprintf(detail, sizeof detail, "reply %zu is %s, want %s", frames + 1,
                     proto_msg_name(msg.tag), proto_msg_name(want_tags[frames]));
            ok = false;
        } else if (frames == 0 && !msg.welcome.seccomp) {
            snprintf(detail, sizeof detail, "Welcome does not report seccomp");
            ok = false;
        }
        proto_msg_free(&msg);
        frames++;
        at += consumed;
        left -= consumed;
    }
    if (ok && frames != 4) {
        snprintf(detail, sizeof detail, "%zu replies, want 4 (Welcome, Refused x3)", frames);
        ok = false;
    }
    check(ok, name, "%s", detail);
    proc_result_free(&r);
    wire_buf_free(&hello_payload);
    wire_buf_free(&input);
}

static void check_worker_check_accepts(void)
{
    const char *parent = harness_release_parent();
    if (!require_binary(parent, "ck-basal worker-check accepts the confined release worker"))
        return;
    const char *argv[] = {parent, "worker-check", NULL};
    struct proc_result r = proc_run(argv, NULL, 0, RUN_TIMEOUT_MS);
    check(proc_exited_with(&r, 0) && output_has_line_prefix(r.out, "verdict       accepted"),
          "ck-basal worker-check accepts the confined release worker (Hello/Welcome under the "
          "argument checks; Seccomp 2, NoNewPrivs 1, Threads 1)",
          "%s; stdout: %s", proc_describe(&r), r.out);
    proc_result_free(&r);
}

int main(void)
{
    const char *worker = harness_release_worker();
    if (!require_binary(worker, "release worker present"))
        return harness_finish();

    check_probe_list();
    check_unknown_probe_refused(worker);
    for (size_t i = 0; i < REQUIRED_COUNT; i++)
        run_probe(worker, &REQUIRED[i]);
    for (size_t i = 0; i < EXTRA_COUNT; i++)
        run_probe(worker, &EXTRA_PROBES[i]);

    check_worker_serves_under_filter(worker);
    check_worker_check_accepts();
    return harness_finish();
}
