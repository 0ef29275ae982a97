/* ck-basal.exe: the smallest honest Windows parent (issue 27; docs/platforms.md
 * "Windows"). Two commands:
 *   worker-check   launch ck-basal-worker.exe (beside this program) with the Windows
 *                  launcher, read its Welcome, judge it by welcome_rules for host os
 *                  windows, print the verdict or the worker's named refusal
 *   exec FILE      the same, then run FILE (a flow-profile script) in the accepted
 *                  worker through the protocol and print its result
 * Exit: 0 accepted (worker-check) or completed (exec); 1 refused, failed or no worker;
 * 64 usage. The launcher is supervisor/worker_launch_windows.c, the rules
 * supervisor/welcome_rules.c and fatal_status.c, the codec proto/: the sources the
 * Linux parent uses, nothing copied. It serves no host calls: a script that makes one
 * is ended, and this is said.
 *
 * The test-only build (make windows-test-build, BASAL_WINDOWS_UNCONFINED_TEST, its own
 * output directory) accepts a Windows Welcome that reports all five confinement fields
 * false, the test-only worker's, and says so; a release build never does. Its
 * `worker-check --release-rules` judges that Welcome by the release rule alone, so
 * that under Wine (where the release launcher starts no worker) the rule a release
 * parent applies is seen refusing the test-only worker's actual Welcome. */
#include "cli/term_text.h"
#include "supervisor/activation.h"
#include "supervisor/fatal_status.h"
#include "supervisor/welcome_rules.h"
#include "supervisor/worker_launch.h"
#include "supervisor/worker_launch_windows.h"
#include "supervisor/worker_proc.h"
#include "proto/channel.h"
#include "proto/message.h"
#include "version.h"

#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#define EXIT_REFUSED 1
#define EXIT_USAGE 64
#define WELCOME_TIMEOUT_MS 10000
#define END_TIMEOUT_MS 5000
#define SCRIPT_MAX_BYTES (1u << 20)

#ifdef BASAL_WINDOWS_UNCONFINED_TEST
static bool accept_unconfined = true;
static const bool test_build = true;
#else
static bool accept_unconfined = false;
static const bool test_build = false;
#endif

static int usage(void)
{
    fputs("usage: ck-basal worker-check\n"
          "       ck-basal exec FILE\n"
          "       ck-basal --version\n",
          stderr);
    return EXIT_USAGE;
}

/* ck-basal-worker.exe in this program's directory, as UTF-8. */
static bool locate_worker(char *path, size_t cap)
{
    wchar_t self[MAX_PATH];
    DWORD n = GetModuleFileNameW(NULL, self, MAX_PATH);
    if (n == 0 || n >= MAX_PATH)
        return false;
    wchar_t *slash = wcsrchr(self, L'\\');
    if (slash == NULL || (size_t)(slash - self) + 24 >= MAX_PATH)
        return false;
    wcscpy(slash + 1, L"ck-basal-worker.exe");
    return WideCharToMultiByte(CP_UTF8, 0, self, -1, path, (int)cap, NULL, NULL) > 0;
}

/* ---- a deadline: the parent ends the worker's job when it passes ---- */

struct watchdog {
    HANDLE thread;
    HANDLE done; /* set when the awaited answer came */
    pid_t pid;
    DWORD ms;
    volatile LONG fired;
};

static DWORD WINAPI watchdog_main(LPVOID opaque)
{
    struct watchdog *w = opaque;
    if (WaitForSingleObject(w->done, w->ms) == WAIT_TIMEOUT) {
        InterlockedExchange(&w->fired, 1);
        (void)worker_launch_terminate(w->pid);
    }
    return 0;
}

static bool watchdog_start(struct watchdog *w, pid_t pid, DWORD ms)
{
    memset(w, 0, sizeof *w);
    w->pid = pid;
    w->ms = ms;
    w->done = CreateEventW(NULL, TRUE, FALSE, NULL);
    w->thread = w->done != NULL ? CreateThread(NULL, 0, watchdog_main, w, 0, NULL) : NULL;
    return w->thread != NULL;
}

static bool watchdog_stop(struct watchdog *w)
{
    SetEvent(w->done);
    WaitForSingleObject(w->thread, INFINITE);
    CloseHandle(w->thread);
    CloseHandle(w->done);
    return w->fired != 0;
}

/* ---- one worker ---- */

struct session {
    struct worker_proc proc;
    struct wire_buf scratch;
};

/* Everything the worker wrote on stderr: it has ended, so the pipe ends. */
static void read_log(struct session *s, char *log, size_t cap)
{
    size_t used = 0;
    while (s->proc.worker_log >= 0 && used + 1 < cap) {
        int n = _read(s->proc.worker_log, log + used, (unsigned)(cap - 1 - used));
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    log[used] = '\0';
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        _close(*fd);
    *fd = -1;
}

/* Ends the worker (closing its stdin first: a served worker exits on EOF), prints how
 * it ended and what it said. Returns its exit code. */
static long end_worker(struct session *s, bool print)
{
    close_fd(&s->proc.to_worker);
    bool killed = false;
    long code = worker_launch_end(s->proc.pid, END_TIMEOUT_MS, &killed);
    char log[1024];
    read_log(s, log, sizeof log);
    close_fd(&s->proc.from_worker);
    close_fd(&s->proc.worker_log);
    wire_buf_free(&s->scratch);
    if (print) {
        printf("worker        %s with exit code %ld (0x%lx)%s\n", killed ? "ended by the parent" : "exited",
               code, (unsigned long)code,
               fatal_status_death((uint32_t)code, killed) ? ", counted in fatal_status_deaths" : "");
        if (log[0] != '\0') {
            fputs("worker said   ", stdout);
            term_put_lines(stdout, log, "            | ");
            putchar('\n');
        }
    }
    return code;
}

static void print_welcome(const struct proto_welcome *w)
{
    fputs("welcome       os ", stdout);
    term_puts(stdout, w->os.str != NULL ? w->os.str : "", 0);
    printf(", protocol %u, worker ", (unsigned)w->protocol_version);
    term_puts(stdout, w->worker_version.str != NULL ? w->worker_version.str : "", 0);
    putchar('\n');
    printf("confinement   lpac-token %d, untrusted-integrity %d, no-thread-token %d, "
           "mitigations %d, handle-inventory %d\n",
           w->windows_lpac_token, w->windows_untrusted_integrity, w->windows_no_thread_token,
           w->windows_mitigations, w->windows_handle_inventory);
}

/* The test-only worker's Welcome: os windows, its version, every field false. */
static bool is_test_unconfined(const struct proto_welcome *w)
{
    struct welcome_confinement c = welcome_reported_confinement(w);
    return w->protocol_version == PROTO_VERSION && c.os == WORKER_OS_WINDOWS && !c.lpac_token &&
           !c.untrusted_integrity && !c.no_thread_token && !c.mitigations && !c.handle_inventory;
}

/* Launches the worker and judges its Welcome. True: accepted, s->proc is live. */
static bool start_checked(struct session *s)
{
    memset(s, 0, sizeof *s);
    wire_buf_init(&s->scratch);
    char path[MAX_PATH * 3];
    if (!locate_worker(path, sizeof path)) {
        printf("verdict       refused: cannot find ck-basal-worker.exe beside ck-basal.exe\n");
        return false;
    }
    static char policy_arg[] = "--landlock=required"; /* argv is char *const[] */
    char *argv[] = {path, policy_arg, NULL};
    struct worker_limits limits = {WORKER_FLOW_ADDRESS_SPACE, WORKER_OPEN_FILES};
    if (worker_launch(path, argv, &limits, &s->proc) != 0) {
        printf("launch        refused: ");
        term_puts(stdout, worker_launch_failure(), 0);
        printf("\nverdict       refused: the launcher could not confine the worker; no worker ran\n");
        wire_buf_free(&s->scratch);
        return false;
    }
    struct watchdog dog;
    if (!watchdog_start(&dog, s->proc.pid, WELCOME_TIMEOUT_MS)) {
        printf("verdict       refused: cannot start the Welcome deadline\n");
        (void)end_worker(s, true);
        return false;
    }
    struct proto_msg hello = {.tag = PROTO_HELLO, .hello = {.version = PROTO_VERSION}};
    enum frame_result sent = FRAME_OK;
    (void)proto_send(s->proc.to_worker, &hello, &s->scratch, &sent);
    struct proto_msg welcome;
    enum proto_error decoded = PROTO_OK;
    enum frame_result got = proto_recv(s->proc.from_worker, &s->scratch, &welcome, &decoded, NULL);
    bool late = watchdog_stop(&dog);
    char why[256] = "";
    bool accepted = false;
    if (got != FRAME_OK || decoded != PROTO_OK) {
        snprintf(why, sizeof why, "no Welcome (%s%s)", late ? "deadline passed: " : "",
                 got != FRAME_OK ? frame_result_name(got) : proto_error_name(decoded));
    } else if (welcome.tag != PROTO_WELCOME) {
        snprintf(why, sizeof why, "expected Welcome, got %s", proto_msg_name(welcome.tag));
        proto_msg_free(&welcome);
    } else {
        print_welcome(&welcome.welcome);
        if (accept_unconfined && is_test_unconfined(&welcome.welcome)) {
            accepted = true;
            printf("verdict       accepted UNCONFINED: test-only build, never a release\n");
        } else {
            accepted = welcome_rules_accept_welcome(worker_launch_host_os(), &welcome.welcome, why,
                                                    sizeof why);
            if (accepted)
                printf("verdict       accepted: the worker is confined and may run flow code\n");
        }
        proto_msg_free(&welcome);
    }
    if (!accepted) {
        fputs("verdict       refused: ", stdout);
        term_puts(stdout, why, 0);
        printf("; the worker runs nothing\n");
        (void)end_worker(s, true);
    }
    return accepted;
}

static int worker_check(void)
{
    struct session s;
    if (!start_checked(&s))
        return EXIT_REFUSED;
    (void)end_worker(&s, false);
    return 0;
}

/* ---- exec: one activation ---- */

static char *read_script(const char *file, size_t *len)
{
    FILE *f = fopen(file, "rb");
    if (f == NULL)
        return NULL;
    char *text = malloc(SCRIPT_MAX_BYTES + 1);
    size_t n = text != NULL ? fread(text, 1, SCRIPT_MAX_BYTES + 1, f) : 0;
    fclose(f);
    if (text == NULL || n > SCRIPT_MAX_BYTES) {
        free(text);
        return NULL;
    }
    text[n] = '\0';
    *len = n;
    return text;
}

/* Prints the Finished outcome; returns the exit status. */
static int print_finished(const struct proto_finished *f)
{
    switch (f->outcome) {
    case PROTO_OUTCOME_COMPLETED:
        fputs("result        ", stdout);
        term_puts(stdout, f->value.str != NULL ? f->value.str : "", 0);
        putchar('\n');
        return 0;
    case PROTO_OUTCOME_FAILED:
        fputs("failed        ", stdout);
        term_puts(stdout, f->failure_kind.str != NULL ? f->failure_kind.str : "", 0);
        fputs(": ", stdout);
        term_puts(stdout, f->failure_detail.str != NULL ? f->failure_detail.str : "", 0);
        putchar('\n');
        return EXIT_REFUSED;
    case PROTO_OUTCOME_BUDGET_EXHAUSTED:
        printf("failed        budget exhausted (%d)\n", (int)f->exhausted);
        return EXIT_REFUSED;
    case PROTO_OUTCOME_SUSPENDED:
    case PROTO_OUTCOME_STALLED:
        break;
    }
    printf("failed        the script did not finish (outcome %d)\n", (int)f->outcome);
    return EXIT_REFUSED;
}

/* Reads the worker's messages until Finished (or anything this parent cannot serve). */
static int run_activation(struct session *s)
{
    for (;;) {
        struct proto_msg msg;
        enum proto_error decoded = PROTO_OK;
        enum frame_result got = proto_recv(s->proc.from_worker, &s->scratch, &msg, &decoded, NULL);
        if (got != FRAME_OK || decoded != PROTO_OK) {
            printf("failed        no Finished: %s\n",
                   got != FRAME_OK ? frame_result_name(got) : proto_error_name(decoded));
            return EXIT_REFUSED;
        }
        int status = -1;
        switch (msg.tag) {
        case PROTO_CONSOLE:
            fputs("console       ", stdout);
            term_puts(stdout, msg.console.text.str != NULL ? msg.console.text.str : "", 0);
            putchar('\n');
            break;
        case PROTO_FINISHED:
            status = print_finished(&msg.finished);
            break;
        case PROTO_HOST_CALL:
            fputs("failed        host call ", stdout);
            term_puts(stdout, msg.host_call.kind.str != NULL ? msg.host_call.kind.str : "", 0);
            printf(": this parent serves no host calls\n");
            status = EXIT_REFUSED;
            break;
        default:
            printf("failed        unexpected %s\n", proto_msg_name(msg.tag));
            status = EXIT_REFUSED;
            break;
        }
        proto_msg_free(&msg);
        if (status >= 0)
            return status;
    }
}

static int exec_file(const char *file)
{
    size_t len = 0;
    char *script = read_script(file, &len);
    if (script == NULL) {
        fprintf(stderr, "ck-basal: cannot read %s (or it is over %u bytes)\n", file, SCRIPT_MAX_BYTES);
        return EXIT_REFUSED;
    }
    struct session s;
    if (!start_checked(&s)) {
        free(script);
        return EXIT_REFUSED;
    }
    struct proto_msg activate = {.tag = PROTO_ACTIVATE};
    activate.activate.activation_id = 1;
    activate.activate.profile = PROTO_PROFILE_FLOW;
    activate.activate.script = (struct proto_text){script, len};
    activate.activate.script_name = proto_text_of(file);
    activate.activate.trigger = proto_text_of("null");
    activate.activate.budgets = (struct proto_budgets){FLOW_CPU_MS, FLOW_HEAP_BYTES,
                                                       FLOW_STACK_BYTES, FLOW_MAX_VALUE_BYTES};
    enum frame_result sent = FRAME_OK;
    enum proto_error encoded = proto_send(s.proc.to_worker, &activate, &s.scratch, &sent);
    free(script);
    int status = EXIT_REFUSED;
    struct watchdog dog;
    if (encoded != PROTO_OK || sent != FRAME_OK) {
        printf("failed        cannot send Activate: %s\n",
               encoded != PROTO_OK ? proto_error_name(encoded) : frame_result_name(sent));
    } else if (!watchdog_start(&dog, s.proc.pid, (DWORD)FLOW_DEADLINE_MS)) {
        printf("failed        cannot start the activation deadline\n");
    } else {
        status = run_activation(&s);
        if (watchdog_stop(&dog))
            printf("failed        the wall deadline (%lld ms) passed: the worker was ended\n",
                   (long long)FLOW_DEADLINE_MS);
    }
    (void)end_worker(&s, status != 0);
    return status;
}

int main(int argc, char **argv)
{
    /* Our output is text; stdout in binary mode keeps "\n" one byte under Wine and in
     * pipes, as the tests compare it. */
    (void)_setmode(1, _O_BINARY);
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("ck-basal %s (git %s) windows%s\n", BASAL_VERSION, BASAL_GIT_REV,
               test_build ? " TEST-ONLY UNCONFINED" : "");
        return 0;
    }
    if (test_build && argc == 3 && strcmp(argv[1], "worker-check") == 0 &&
        strcmp(argv[2], "--release-rules") == 0) {
        accept_unconfined = false;
        return worker_check();
    }
    if (argc == 2 && strcmp(argv[1], "worker-check") == 0)
        return worker_check();
    if (argc == 3 && strcmp(argv[1], "exec") == 0)
        return exec_file(argv[2]);
    return usage();
}
