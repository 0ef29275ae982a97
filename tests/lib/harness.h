/* The shared test library: reporting, child processes, /proc views, and where the
 * built binaries are.
 *
 * THE REST OF tests/lib (every test program uses these rather than its own copy)
 *   cli_home.h    ck-basal [--json] --home HOME args... with a chosen environment and
 *                 stdin; a flow written, installed and approved; --json output parsed
 *   store_view.h  one value from a data home's store by SQL
 *   serve_home.h  a scratch data home (struct test_home), `serve` read through its
 *                 log, requests on its ops socket
 *   flow_request.h  the pool tests' activation request
 *   pg_test.h     a fresh PostgreSQL database on tests/run.sh's cluster, SQL there by
 *                 psql, the cluster restarted (pg_ctl)
 *   harness.sh    the same check lines and a scratch directory for tests/t_NAME.sh
 *   pg_cluster.sh the run's throwaway PostgreSQL cluster (tests/run.sh starts it)
 *
 * REPORTING
 *   Every check prints exactly one line on stdout:
 *       ok - <name>
 *       not ok - <name>: <detail>
 *   tests/run.sh counts these lines; a test program ends with `return harness_finish();`
 *   (exit 1 if any check failed or no check ran at all, else 0). Informational lines
 *   start with "# " (harness_note) and are not counted. Names should say what is proven
 *   and, for a safety-guard test, which guard ("startup: stdin a regular file refused
 *   [guard stdin-not-pipe-read-end]").
 *
 *   Newlines and control bytes in a name or detail are escaped, so a check is always
 *   one line. A test must never skip: if something it needs is missing (a binary, a
 *   kernel feature), it reports `not ok` with the reason.
 *
 * CHILD PROCESSES
 *   proc_start() forks and execs argv with stdin/stdout/stderr either as fresh pipes
 *   owned by the test (the default) or as descriptors the caller chooses. Every other
 *   descriptor of the test is closed at exec, SIGPIPE is reset to default and the
 *   signal mask cleared in the child. The test ignores SIGPIPE itself (so writing to a
 *   dead child gives EPIPE, not death). Each child gets a pidfd; every wait is
 *   poll()ing that pidfd with a safety timeout, never a sleep. A child still running
 *   when the timeout expires is killed (SIGKILL) and its result says timed_out.
 *
 *   The usual shapes:
 *       struct proc_result r = proc_run(argv, input, input_len, 10000);
 *       check(proc_exited_with(&r, 70), "name", "%s", proc_describe(&r));
 *       proc_result_free(&r);
 *   or, to look at a child while it runs:
 *       struct proc p;
 *       if (proc_start(&p, argv, NULL) == 0) {
 *           ... wait_blocked_reading_stdin(p.pid, 1, 10000, NULL, 0) ... /proc checks
 *           struct proc_result r = proc_finish(&p, NULL, 0, 10000); // closes its stdin
 *       }
 *
 * BINARIES
 *   Test programs live in build/<variant>/tests/ (variant test or asan) and tools in
 *   build/test/tools/; the build directory is found from /proc/self/exe, never from
 *   the working directory or the environment. harness_test_worker() is the test build
 *   of the worker beside the running test (build/test/bin or build/asan/bin, both the
 *   -DBASAL_TEST_HOOKS worker), harness_release_worker() is build/bin/ck-basal-worker.
 *
 * HOSTILE ENVIRONMENTS
 *   harness_launcher() is tests/tools/launch: run it as the child with options, then
 *   "--" and the worker's argv; it sets up the condition (odd stdio, planted fds, a
 *   personality, an injected system-call failure, another uid...) and execs the
 *   worker in place, so the pid the test holds is the worker's. Its options are
 *   listed at the top of tests/tools/launch.c. Launch's own failures exit 125.
 */
#ifndef BASAL_TESTS_HARNESS_H
#define BASAL_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* ---- reporting ---------------------------------------------------------------- */

/* Prints "ok - name" if cond, else "not ok - name: <detail formatted from fmt>".
 * Returns cond, so a test can stop early when a later check depends on this one. */
__attribute__((format(printf, 3, 4))) bool check(bool cond, const char *name,
                                                  const char *fmt, ...);

/* check() for the common comparisons; the detail names both values. */
bool check_int_eq(long long got, long long want, const char *name);
bool check_str_eq(const char *got, const char *want, const char *name);
/* check() where the condition speaks for itself. */
#define ok(cond, name) check((cond), (name), "%s", "expected it to hold")

/* An unconditional failure (a setup step that broke): "not ok - name: detail". */
__attribute__((format(printf, 2, 3))) void fail(const char *name, const char *fmt, ...);

/* An informational "# ..." line; never counted. */
__attribute__((format(printf, 1, 2))) void harness_note(const char *fmt, ...);

/* Counts so far. */
int harness_failed_count(void);
int harness_check_count(void);

/* The program's exit status: 0 if at least one check ran and none failed, else 1. */
int harness_finish(void);

/* ---- build paths --------------------------------------------------------------- */

/* The repository's build directory (".../build"), found from /proc/self/exe; aborts
 * with a "not ok" line if the running binary is not under build/<variant>/<dir>/. */
const char *harness_build_dir(void);
/* "test" or "asan": the variant of the running test binary. */
const char *harness_variant(void);
/* build/<rel> as an absolute path, in storage that lives until exit (never free it;
 * the same rel gives the same pointer). */
const char *harness_path(const char *rel);
const char *harness_test_worker(void);    /* build/<variant>/bin/ck-basal-worker */
const char *harness_release_worker(void); /* build/bin/ck-basal-worker */
const char *harness_test_parent(void);    /* build/<variant>/bin/ck-basal */
const char *harness_release_parent(void); /* build/bin/ck-basal */
const char *harness_launcher(void);       /* build/test/tools/launch */
/* Reports "not ok - name: <path> missing or not executable" and returns false if the
 * file is not an executable regular file. */
bool require_binary(const char *path, const char *name);
/* require_binary for harness_test_parent() and then build/test/tools/test_module (the
 * operator module of the CLI tests), under the names given; true if both are there. */
bool require_parent_and_module(const char *parent_name, const char *module_name);

/* ---- child processes ----------------------------------------------------------- */

#define PROC_PIPE (-1) /* proc_opts fd: let the harness create a pipe (the default) */

struct proc_opts {
    /* Descriptors for the child's 0, 1, 2. PROC_PIPE (or a zeroed opts with
     * use_fds false) makes a pipe whose other end the test holds in struct proc. A
     * caller-chosen descriptor is dup2()ed into place in the child; the test keeps
     * its own copy (close it after proc_start if the child must be its only holder). */
    bool use_fds;
    int stdin_fd, stdout_fd, stderr_fd;
    /* NULL: inherit the test's environment. Otherwise the child's whole environment
     * (HARNESS_EMPTY_ENV for none, as the parent starts the worker). */
    char *const *envp;
};

extern char *const HARNESS_EMPTY_ENV[];

struct proc {
    pid_t pid;
    int pidfd;  /* pidfd_open(pid); readable once the child has exited */
    int in_fd;  /* write end of the child's stdin pipe, or -1 */
    int out_fd; /* read end of the child's stdout pipe, or -1 */
    int err_fd; /* read end of the child's stderr pipe, or -1 */
    bool reaped;
};

struct proc_result {
    bool started;   /* false if fork/exec setup failed (detail in err) */
    bool timed_out; /* the safety timeout expired; the child was killed */
    int status;     /* raw wait status */
    bool exited;
    int exit_code;  /* when exited */
    bool signaled;
    int signal;     /* when signaled */
    char *out;      /* captured stdout, NUL-terminated (never NULL) */
    size_t out_len;
    char *err;      /* captured stderr, NUL-terminated (never NULL) */
    size_t err_len;
};

/* Starts argv[0] (a path; no PATH search) with argv. opts may be NULL (three pipes,
 * inherited environment). Returns 0, or -1 with errno set (nothing to clean up).
 * An exec failure in the child shows as exit 127 with "exec failed" on its stderr. */
int proc_start(struct proc *p, const char *const argv[], const struct proc_opts *opts);

/* Writes input (if any) to the child's stdin, closes its stdin, reads stdout and
 * stderr to EOF and waits for the child, all within timeout_ms overall. On timeout
 * the child is killed and result.timed_out is set. Closes every descriptor of p. */
struct proc_result proc_finish(struct proc *p, const void *input, size_t input_len,
                               int timeout_ms);

/* proc_start + proc_finish. If starting fails, result.started is false. */
struct proc_result proc_run(const char *const argv[], const void *input, size_t input_len,
                            int timeout_ms);
struct proc_result proc_run_opts(const char *const argv[], const struct proc_opts *opts,
                                 const void *input, size_t input_len, int timeout_ms);

/* Kills (SIGKILL) and reaps a started child, closing its descriptors; for cleanup
 * after a failed check. Safe to call on an already finished proc. */
void proc_kill(struct proc *p);

/* Waits until the child exits or timeout_ms passes; true if it has exited (then it is
 * not reaped yet: proc_finish collects it). Does not read its pipes, so only use it
 * when the child cannot fill a pipe. */
bool proc_wait_exit(struct proc *p, int timeout_ms);

void proc_result_free(struct proc_result *r);

/* A helper server a test starts (a script in tests/tools/) that ends when its stdin closes. */
struct test_server {
    struct proc p;
    bool running; /* started and not stopped yet */
};
/* Closes its stdin and collects it (10 s bound, then killed); nothing if not running. */
void test_server_stop(struct test_server *s);

bool proc_exited_with(const struct proc_result *r, int code);
bool died_by_signal(const struct proc_result *r, int sig);
/* "exit 70", "signal 31 (SIGSYS)", "timed out (killed)", "not started", plus the
 * first part of stderr, for check details. Static buffer, overwritten by each call. */
const char *proc_describe(const struct proc_result *r);

/* True if text contains line as a whole line (between line starts and "\n" or end). */
bool output_has_line(const char *text, const char *line);
/* True if text contains a line starting with prefix. */
bool output_has_line_prefix(const char *text, const char *prefix);

/* Full-buffer I/O on a descriptor with a safety timeout (poll-based; works on
 * blocking and non-blocking descriptors). Return 0, or -1 (errno ETIMEDOUT on
 * timeout, EPIPE/... otherwise; for read, 0 bytes left unread at EOF gives -1 with
 * errno ENODATA). */
int fd_write_all(int fd, const void *buf, size_t len, int timeout_ms);
int fd_read_exact(int fd, void *buf, size_t len, int timeout_ms);
/* One line from fd into buf without its newline (cut at cap - 1 bytes; the rest of
 * the line is read and dropped), within timeout_ms: true when the newline came,
 * false on EOF, error or timeout. Reads a byte at a time, so nothing after the line
 * is consumed (a FIFO a module writes "hold ..." lines to). */
bool fd_read_line(int fd, char *buf, size_t cap, int timeout_ms);
/* test_module's hold ops (tests/tools/test_module.c, do_hold) write "hold PID GRAND" to
 * the FIFO they are given, then hold until its read end closes: true when that line
 * came on fd (the read end) within timeout_ms. */
bool hold_line_read(int fd, int timeout_ms);

/* ---- confinement probes ---------------------------------------------------------- */

/* The line "result NAME rc=<rc> errno=<errno>" a probe prints if its attempt returns. */
struct probe_result {
    bool present; /* the whole line is there and well formed */
    long rc;
    int err;
};
struct probe_result probe_result_parse(const char *err_text, const char *name);

/* ---- temporary files ------------------------------------------------------------ */

/* Where a test's scratch files go: $TMPDIR if it is an absolute path of at most
 * HARNESS_TMP_ROOT_MAX bytes (socket paths below it must fit sun_path), else /tmp. */
#define HARNESS_TMP_ROOT_MAX 64
const char *harness_tmp_root(void);

/* Makes a fresh directory <harness_tmp_root>/basal-<name>-XXXXXX; the path is in static storage.
 * NULL (with a "not ok" line) on failure. One per test program. */
const char *harness_tmpdir(const char *name);
/* harness_tmpdir with its links resolved (TMPDIR may lead through one), copied into
 * out: for tests that compare the paths basal reports. False (with a "not ok" line)
 * on failure. */
bool harness_real_tmpdir(const char *name, char *out, size_t cap);
/* harness_tmpdir as it is (links not resolved), copied into out: for a test that keeps
 * its root in a buffer of its own. False (with a "not ok" line) on failure. */
bool harness_tmpdir_copy(const char *name, char *out, size_t cap);
/* Writes text to <harness_tmpdir>/<file> and returns the path (a ring of 16 static
 * buffers), or "/nonexistent" if it cannot be written (the run then fails visibly). */
const char *harness_tmp_file(const char *file, const char *text);
/* Makes the directory path (0755) unless it is there already; else "not ok - name"
 * naming path and the error. */
void mkdir_or_fail(const char *path, const char *name);
/* Removes the directory made by harness_tmpdir and the files directly in it. */
void harness_remove_tmpdir(void);
/* Removes path and everything below it, never following a link; directories are
 * made writable first (a test may have narrowed them). Errors are ignored. */
void harness_remove_tree(const char *path);

/* ---- /proc views ----------------------------------------------------------------- */

/* Reads a whole file (e.g. /proc/<pid>/status) into a malloc'd NUL-terminated
 * string; NULL on error. */
char *read_text_file(const char *path);
/* How many newlines the file at path holds (0 if it cannot be read): the lines a
 * module or a flow appended to a log. */
long long file_line_count(const char *path);
/* How often needle (not empty) occurs in the file at path, without overlaps (0 if it
 * cannot be read): the requests a test server logged. */
long long file_occurrences(const char *path, const char *needle);

/* CPU time (user + system) a process has used, in ms, from /proc; -1 if unknown. */
long process_cpu_ms(pid_t pid);

/* snprintf into buf (cut at cap), for paths and scripts built by a test. */
__attribute__((format(printf, 3, 4))) void sfmt(char *buf, size_t cap, const char *fmt, ...);

/* Writes text to path (created or truncated, with mode). True on success. */
bool write_text_file(const char *path, const char *text, mode_t mode);

/* Copies the file at from (any bytes) to a new file to with mode, e.g. a binary into
 * a directory another uid can reach (the checkout may sit under a 0700 directory).
 * True on success; on failure nothing is left at to. */
bool copy_file(const char *from, const char *to, mode_t mode);

/* The value of "Field:" in /proc/<pid>/status into out (trimmed); false if absent. */
bool proc_status_field(pid_t pid, const char *field, char *out, size_t cap);
/* The same as a number; -1 if absent or not a number. */
long proc_status_number(pid_t pid, const char *field);

/* The open descriptor numbers of pid, ascending, from /proc/<pid>/fd. Returns the
 * count (at most cap stored), or -1 on error. */
int proc_list_fds(pid_t pid, int *fds, int cap);

/* Waits until pid is blocked in read(0, ...) (from /proc/<pid>/syscall) with at
 * least min_filters seccomp filters in force (Seccomp_filters in its status). It
 * polls /proc with a pidfd of pid as the wait between looks, so an exit ends the
 * wait at once; timeout_ms is only the safety net. This is how a test knows the
 * worker has finished confining itself and waits for Hello, without sleeping: the
 * worker reads stdin only after its last confinement step. pid need not be a child
 * of the test (reading another process's syscall file needs root or ptrace rights).
 * Returns true when ready; false on exit or timeout, with a reason in why (which may
 * be NULL). */
bool wait_blocked_reading_stdin(pid_t pid, int min_filters, int timeout_ms, char *why,
                                size_t why_cap);

#endif
