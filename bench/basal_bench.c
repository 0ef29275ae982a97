/* The worker and activation benchmarks (make bench; bench/run.sh runs this and writes
 * docs/benchmarks.md). Every measurement and its reference are taken in this one
 * process run, interleaved iteration by iteration so that drift on a noisy machine
 * touches both alike:
 *
 *   spawn to Welcome       worker_start_checked (spawn, Hello, Welcome, kernel checks)
 *                          against fork + exec + wait of /bin/true
 *   warm activation        pool_run of a trivial script on the flow's warm worker,
 *                          against the floor: the same script in this process with a
 *                          fresh QuickJS runtime + context per execution
 *   host-call round trip   (time(N awaited ops.call("test", "echo", i)) - time(0)) / N,
 *                          against one small message echoed over pipes by a second
 *                          process
 *   replay                 an Activate whose prefix records all N calls of the
 *                          script (recorded live first, through the host interface),
 *                          to Finished
 *   worker VmRSS           /proc/<pid>/status of an accepted idle worker, and after 1
 *                          and 100 activations
 *
 * Diagnostics beside them (no goals): the pipe round trip with an exec'd peer, and the
 * pipe and host-call round trips with both processes pinned to one CPU and to two,
 * and the host call unpinned with the parent's co-location turned off
 * (keep_placement), because on a VM the placement of the two processes can dominate a
 * round trip. The
 * run also reports how much CPU other processes used meanwhile.
 *
 * Nothing here passes or fails: the goals are printed beside the numbers. The output
 * is a Markdown table on stdout; progress goes to stderr. docs/benchmarks.md explains
 * every row. */
#include "supervisor/activation.h"
#include "supervisor/pool.h"
#include "supervisor/worker_check.h"
#include "supervisor/worker_proc.h"
#include "host/host.h"
#include "host/test_host.h"
#include "proto/message.h"

#include "lib/bench_stats.h"
#include "quickjs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ iterations */

static double g_scale = 1.0; /* --scale: multiplies every iteration count */

static size_t iters(size_t base)
{
    double n = (double)base * g_scale;
    return n < 5 ? 5 : (size_t)n;
}

#define SPAWN_ITERS 300
#define WARM_ITERS 2000
#define WARMUP_ITERS 30
#define BATCH 10 /* back-to-back activations after every BATCH ready ones */
#define CALLS_N 200u
#define CALLS_ITERS 300
#define CALLS_BIG_N 2000u /* also measured, every CALLS_BIG_EVERY iterations */
#define CALLS_BIG_EVERY 8
#define PIPE_PER_ITER 100
#define REPLAY_ITERS 300
#define PINNED_PIPE_ITERS 3000
#define PINNED_CALLS_ITERS 100 /* pairs; under the pool's 256 activations per worker */
#define RSS_WORKERS 20
#define RSS_ACTIVATIONS 100

/* ------------------------------------------------------------------ time and stats */

/* ------------------------------------------------------------------ helpers */

/* CPU time (s) all CPUs spent busy so far, from /proc/stat: everything but idle and
 * iowait. -1 if unreadable. */
static double system_busy_s(void)
{
    FILE *f = fopen("/proc/stat", "re");
    if (f == NULL)
        return -1;
    char line[512];
    bool ok = fgets(line, sizeof line, f) != NULL && strncmp(line, "cpu ", 4) == 0;
    fclose(f);
    if (!ok)
        return -1;
    /* user nice system idle iowait irq softirq steal (guest time is inside user) */
    unsigned long long v[8] = {0};
    char *p = line + 4;
    for (int i = 0; i < 8; i++) {
        char *end = NULL;
        v[i] = strtoull(p, &end, 10);
        if (end == p)
            return -1;
        p = end;
    }
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    return (double)busy / (double)sysconf(_SC_CLK_TCK);
}

/* CPU time (s) of this process and its reaped children (every worker, peer and
 * /bin/true it started, once they are all reaped). */
static double own_cpu_s(void)
{
    struct rusage self, children;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    double s = 0;
    const struct rusage *both[] = {&self, &children};
    for (int i = 0; i < 2; i++)
        s += (double)both[i]->ru_utime.tv_sec + (double)both[i]->ru_utime.tv_usec / 1e6 +
             (double)both[i]->ru_stime.tv_sec + (double)both[i]->ru_stime.tv_usec / 1e6;
    return s;
}


/* CPU time (us) process pid has used so far (0: this process), from its CPU clock
 * (nanoseconds, unlike /proc's ticks); -1 if it cannot be read (the process is gone). */
static double process_cpu_us(pid_t pid)
{
    clockid_t clock = CLOCK_PROCESS_CPUTIME_ID;
    if (pid > 0 && clock_getcpuclockid(pid, &clock) != 0)
        return -1;
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return -1;
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...);
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "basal_bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

/* VmRSS of pid in KiB, or -1. */
static long vm_rss_kib(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kib = strtol(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kib;
}

/* Where a process's resident memory is: anonymous and file-backed totals, and the
 * largest contributors by file (summed over its mappings), one Markdown line into buf.
 * Empty if /proc/<pid>/smaps is unreadable. */
static void rss_breakdown(pid_t pid, char *buf, size_t cap)
{
    buf[0] = '\0';
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return;
    enum { MAX_NAMES = 64 };
    struct {
        char name[96];
        long kib;
    } by_name[MAX_NAMES] = {{"", 0}};
    size_t names = 0;
    long anon = 0, total = 0;
    char line[512], current[96] = "";
    while (fgets(line, sizeof line, f) != NULL) {
        /* Mapping headers start with the address in lower-case hex; fields with
         * a capitalised name ("Rss:"). */
        if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
            /* a mapping header: the 6th field, if any, is its name */
            const char *name = "";
            int field = 0;
            for (const char *c = line; *c != '\0' && *c != '\n'; c++) {
                if (*c == ' ' && c[1] != ' ' && ++field == 5) {
                    name = c + 1;
                    break;
                }
            }
            snprintf(current, sizeof current, "%.*s", (int)strcspn(name, "\n"), name);
            const char *slash = strrchr(current, '/');
            if (slash != NULL)
                memmove(current, slash + 1, strlen(slash + 1) + 1);
            continue;
        }
        if (strncmp(line, "Anonymous:", 10) == 0) {
            anon += strtol(line + 10, NULL, 10);
            continue;
        }
        if (strncmp(line, "Rss:", 4) != 0)
            continue;
        long kib = strtol(line + 4, NULL, 10);
        if (kib <= 0)
            continue;
        total += kib;
        bool is_file = current[0] != '\0' && current[0] != '[';
        const char *key = is_file ? current : "heap, stack and unnamed";
        size_t i = 0;
        while (i < names && strcmp(by_name[i].name, key) != 0)
            i++;
        if (i == names) {
            if (names == MAX_NAMES)
                continue;
            snprintf(by_name[names].name, sizeof by_name[names].name, "%s", key);
            by_name[names++].kib = 0;
        }
        by_name[i].kib += kib;
    }
    fclose(f);
    size_t used = (size_t)snprintf(buf, cap,
                                   "%.2f MiB, of which %.2f MiB file pages (shared with every "
                                   "other process mapping the same files) and %.2f MiB anonymous; "
                                   "largest by mapping: ",
                                   (double)total / 1024, (double)(total - anon) / 1024,
                                   (double)anon / 1024);
    for (int k = 0; k < 5 && used < cap; k++) {
        size_t best = names;
        for (size_t i = 0; i < names; i++)
            if (by_name[i].kib > 0 && (best == names || by_name[i].kib > by_name[best].kib))
                best = i;
        if (best == names)
            break;
        used += (size_t)snprintf(buf + used, cap - used, "%s%s %ld KiB", k ? ", " : "",
                                 by_name[best].name, by_name[best].kib);
        by_name[best].kib = 0;
    }
}

/* The state letter of pid from /proc/<pid>/stat ('R', 'S', ...), or 0. */
static char proc_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    if (paren == NULL || paren[1] != ' ')
        return '\0';
    return paren[2];
}

/* Waits (up to 200 ms) until the worker sleeps, seen twice 50 us apart: after Welcome
 * or Finished the worker frees the spent engine and builds the next one before it
 * reads again, so this is "idle and ready". Returns the wait in us. */
static double wait_ready(pid_t pid)
{
    double t0 = now_us();
    int sleeping = 0;
    while (sleeping < 2 && now_us() - t0 < 200000) {
        sleeping = proc_state(pid) == 'S' ? sleeping + 1 : 0;
        struct timespec pause = {0, 50000};
        nanosleep(&pause, NULL);
    }
    return now_us() - t0;
}

static void sha256(const char *data, size_t len, uint8_t out[PROTO_DIGEST_BYTES])
{
    unsigned int out_len = 0;
    if (EVP_Digest(data, len, out, &out_len, EVP_sha256(), NULL) != 1 ||
        out_len != PROTO_DIGEST_BYTES)
        die("SHA-256 failed");
}

/* ------------------------------------------------------------------ the scripts */

static const char TRIVIAL_BODY[] = "let s = 0; for (let i = 0; i < 1000; i++) s += i; return s;";
static const char TRIVIAL_VALUE[] = "499500";

/* N awaited host calls, each answered by the test host's echo. */
static char *calls_script(unsigned n)
{
    char *s = NULL;
    if (asprintf(&s,
                 "const n = %u; let sum = 0;\n"
                 "for (let i = 0; i < n; i++) sum += (await ops.call(\"test\", \"echo\", i))[0];\n"
                 "return sum;",
                 n) < 0)
        die("out of memory");
    return s;
}

static unsigned long long calls_sum(unsigned n)
{
    return n == 0 ? 0 : (unsigned long long)n * (n - 1) / 2;
}

/* The argument JSON the worker sends (and digests) for call i of calls_script: the
 * array of ops.call's arguments, JSON.stringify'd. */
static void expected_args(unsigned i, char *buf, size_t cap)
{
    snprintf(buf, cap, "[\"test\",\"echo\",%u]", i);
}

/* ------------------------------------------------------------------ runs */

/* true: activations leave the placement to the kernel (no co-location during bursts of
 * host calls), for the diagnostic row that shows what the co-location buys. */
static bool g_keep_placement;

static void request_for(struct activation_request *req, const char *script)
{
    static uint64_t next_id;
    memset(req, 0, sizeof *req);
    activation_request_defaults(req, PROTO_PROFILE_FLOW);
    req->keep_placement = g_keep_placement;
    req->activation_id = ++next_id;
    req->script = script;
    req->script_len = strlen(script);
}

/* One pool_run; dies unless it completed with `value`. Returns its wall time (us). */
static double timed_run(struct pool *pool, const char *flow, const struct activation_request *req,
                        const struct host *host, const char *value)
{
    struct activation_outcome out;
    double t0 = now_us();
    pool_run(pool, flow, POOL_USE_FLOW, req, host, &out);
    double t = now_us() - t0;
    if (out.status != ACTIVATION_COMPLETED || out.value == NULL || strcmp(out.value, value) != 0) {
        char what[1024];
        activation_describe(&out, what, sizeof what);
        die("flow %s: expected %s, got: %s", flow, value, what);
    }
    activation_outcome_free(&out);
    return t;
}

/* pool_run of script on flow's worker once it is ready (see wait_ready). */
static double ready_run(struct pool *pool, const char *flow, const char *script,
                        const char *value, const struct host *host)
{
    pid_t pid = pool_flow_worker(pool, flow);
    if (pid > 0)
        (void)wait_ready(pid);
    struct activation_request req;
    request_for(&req, script);
    return timed_run(pool, flow, &req, host, value);
}

/* ready_run, also measuring the CPU time both processes spent on it: this one's and
 * the worker's (its CPU clock read before and after). Pushes the wall time to *wall
 * and, if the worker's clock could be read both times (a retired worker's cannot),
 * the CPU time to *cpu. */
static void ready_run_cpu(struct pool *pool, const char *flow, const char *script,
                          const char *value, const struct host *host, struct samples *wall,
                          struct samples *cpu)
{
    pid_t pid = pool_flow_worker(pool, flow);
    if (pid > 0)
        (void)wait_ready(pid);
    struct activation_request req;
    request_for(&req, script);
    double self0 = process_cpu_us(0), worker0 = pid > 0 ? process_cpu_us(pid) : -1;
    push(wall, timed_run(pool, flow, &req, host, value));
    double self1 = process_cpu_us(0), worker1 = pid > 0 ? process_cpu_us(pid) : -1;
    if (worker0 >= 0 && worker1 >= 0 && self0 >= 0 && self1 >= 0)
        push(cpu, (self1 - self0) + (worker1 - worker0));
}

/* ------------------------------------------------------------------ CPU placement */

static cpu_set_t g_all_cpus;
static int g_cpu_a = -1, g_cpu_b = -1; /* two CPUs this process may use, or -1 */

static void cpus_init(void)
{
    if (sched_getaffinity(0, sizeof g_all_cpus, &g_all_cpus) != 0)
        return;
    for (int c = 0; c < CPU_SETSIZE && g_cpu_b < 0; c++) {
        if (!CPU_ISSET(c, &g_all_cpus))
            continue;
        if (g_cpu_a < 0)
            g_cpu_a = c;
        else
            g_cpu_b = c;
    }
}

/* Pins this process (and what it starts from now on) to cpu; -1: back to all. */
static void pin_self(int cpu)
{
    cpu_set_t set = g_all_cpus;
    if (cpu >= 0) {
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
    }
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        die("sched_setaffinity: %s", strerror(errno));
}

/* ------------------------------------------------------------------ references */

/* fork + exec + wait of /bin/true. */
static double fork_exec_true(void)
{
    double t0 = now_us();
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        static char path[] = "/bin/true";
        char *const argv[] = {path, NULL};
        char *const envp[] = {NULL};
        execve(path, argv, envp);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    double t = now_us() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("/bin/true failed");
    return t;
}

#define PIPE_MSG 32

struct echo_peer {
    pid_t pid;
    int to, from;
};

static bool read_full(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n <= 0)
            return false;
        got += (size_t)n;
    }
    return true;
}

/* The echo loop of a peer, on fds 3 (in) and 4 (out). */
__attribute__((noreturn)) static void echo_loop(void)
{
    char buf[PIPE_MSG];
    for (;;) {
        ssize_t n = read(3, buf, sizeof buf);
        if (n <= 0)
            _exit(0);
        if (write(4, buf, (size_t)n) != n)
            _exit(1);
    }
}

/* A second process that echoes each message it reads: forked, or forked and then
 * exec'd (this program again, with --echo-peer) as a worker is. The difference
 * matters: the kernel balances a new program at exec onto the idlest CPU, while a
 * forked child starts beside its parent and, in a ping-pong, tends to stay there. */
static void echo_start(struct echo_peer *peer, bool exec_peer)
{
    int down[2], up[2];
    if (pipe2(down, O_CLOEXEC) != 0 || pipe2(up, O_CLOEXEC) != 0)
        die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        /* Keep only our two ends as fds 3 and 4: an inherited end of another peer's
         * pipe would keep that peer from seeing EOF. */
        int in = fcntl(down[0], F_DUPFD, 100), out = fcntl(up[1], F_DUPFD, 100);
        if (in < 0 || out < 0 || dup2(in, 3) != 3 || dup2(out, 4) != 4)
            _exit(1);
        close_range(5, ~0U, 0);
        if (exec_peer) {
            static char self[] = "/proc/self/exe", arg[] = "--echo-peer";
            char *const args[] = {self, arg, NULL};
            char *const envp[] = {NULL};
            execve(self, args, envp);
            _exit(127);
        }
        echo_loop();
    }
    close(down[0]);
    close(up[1]);
    peer->pid = pid;
    peer->to = down[1];
    peer->from = up[0];
}

/* One small message there and back, with blocking reads. */
static double echo_round_trip(const struct echo_peer *peer)
{
    char msg[PIPE_MSG], back[PIPE_MSG];
    memset(msg, 'x', sizeof msg);
    double t0 = now_us();
    if (write(peer->to, msg, sizeof msg) != (ssize_t)sizeof msg)
        die("pipe write: %s", strerror(errno));
    if (!read_full(peer->from, back, sizeof back))
        die("pipe read failed");
    return now_us() - t0;
}

static void echo_stop(struct echo_peer *peer)
{
    close(peer->to);
    close(peer->from);
    int status;
    while (waitpid(peer->pid, &status, 0) < 0 && errno == EINTR) {
    }
}

/* Pipe round trips with this process on parent_cpu and the echo peer on peer_cpu. */
static void pinned_pipe(int parent_cpu, int peer_cpu, size_t n, struct samples *out)
{
    struct echo_peer peer;
    pin_self(peer_cpu);
    echo_start(&peer, false);
    pin_self(parent_cpu);
    for (size_t i = 0; i < 100 + n; i++) {
        double t = echo_round_trip(&peer);
        if (i >= 100)
            push(out, t);
    }
    echo_stop(&peer);
    pin_self(-1);
}

/* Per-call host-call cost, as in the main measurement, with this process on parent_cpu
 * and the worker (started while this process was pinned to worker_cpu: it inherits
 * the affinity) on worker_cpu; -1: any CPU. A pool of its own, one worker, never
 * replenished. */
static void pinned_calls(int parent_cpu, int worker_cpu, const char *worker,
                         const struct host *host, const char *script0, const char *value0,
                         const char *script_n, const char *value_n, unsigned n, size_t pairs,
                         struct samples *out)
{
    struct pool_config cfg;
    pool_config_defaults(&cfg);
    cfg.policy = LANDLOCK_POLICY_REQUIRED;
    cfg.worker_path = worker;
    cfg.spares = 1;
    pin_self(worker_cpu);
    struct pool *pool = pool_new(&cfg);
    if (pool == NULL)
        die("out of memory");
    pool_maintain(pool);
    pin_self(parent_cpu);
    struct samples runs0 = {0}, runs_n = {0};
    for (size_t i = 0; i < 3 + pairs; i++) {
        double t0 = ready_run(pool, "pinned", script0, value0, host);
        double tn = ready_run(pool, "pinned", script_n, value_n, host);
        if (i >= 3) {
            push(&runs0, t0);
            push(&runs_n, tn);
        }
    }
    per_call_of(&runs_n, &runs0, n, out);
    free(runs0.v);
    free(runs_n.v);
    pool_free(pool);
    pin_self(-1);
}

/* The floor: the same script, in this process, fresh runtime and context. */
static double floor_run(const char *wrapped, size_t len)
{
    double t0 = now_us();
    JSRuntime *rt = JS_NewRuntime();
    JSContext *ctx = rt ? JS_NewContext(rt) : NULL;
    if (ctx == NULL)
        die("QuickJS: cannot create a runtime and context");
    JSValue v = JS_Eval(ctx, wrapped, len, "<floor>", JS_EVAL_TYPE_GLOBAL);
    int32_t result = 0;
    bool ok = !JS_IsException(v) && JS_ToInt32(ctx, &result, v) == 0;
    JS_FreeValue(ctx, v);
    JS_FreeContext(ctx);
    JS_FreeRuntime(rt);
    double t = now_us() - t0;
    if (!ok || result != 499500)
        die("floor script did not return 499500");
    return t;
}

/* ------------------------------------------------------------------ recording host */

struct recorded {
    char *kind, *args, *value;
    enum proto_settlement settlement;
};

/* Passes calls to the test host; while `recording`, keeps each call and its answer. */
struct recorder {
    struct host inner;
    bool recording;
    unsigned long long calls;
    struct recorded *log;
    size_t count, cap;
};

static int recorder_call(void *self, const struct host_call *call, struct host_settlement *out,
                         long long *delay_ms)
{
    struct recorder *r = self;
    r->calls++;
    int rc = r->inner.ops->call(r->inner.self, call, out, delay_ms);
    if (rc != 0 || !r->recording)
        return rc;
    if (call->position != r->count)
        die("recording: call at position %u, expected %zu", call->position, r->count);
    if (r->count == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 1024;
        r->log = realloc(r->log, r->cap * sizeof *r->log);
        if (r->log == NULL)
            die("out of memory");
    }
    struct recorded *e = &r->log[r->count++];
    e->kind = strdup(call->kind);
    e->args = strndup(call->args, call->args_len);
    e->value = strdup(out->value);
    e->settlement = out->settlement;
    if (e->kind == NULL || e->args == NULL || e->value == NULL)
        die("out of memory");
    return 0;
}

static const struct host_ops RECORDER_OPS = {.call = recorder_call};

/* ------------------------------------------------------------------ output */

/* ------------------------------------------------------------------ main */

static void worker_path_default(char *buf, size_t cap)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        die("readlink /proc/self/exe: %s", strerror(errno));
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash != NULL)
        *slash = '\0';
    snprintf(buf, cap, "%s/../bin/ck-basal-worker", self);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--echo-peer") == 0)
        echo_loop(); /* started by echo_start */
    char worker_buf[PATH_MAX + 64];
    const char *worker = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--worker") == 0 && i + 1 < argc)
            worker = argv[++i];
        else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc)
            g_scale = strtod(argv[++i], NULL);
        else
            die("usage: basal_bench [--worker PATH] [--scale FACTOR]");
    }
    if (!(g_scale > 0))
        die("--scale must be positive");
    if (worker == NULL) {
        worker_path_default(worker_buf, sizeof worker_buf);
        worker = worker_buf;
    }
    char worker_real[PATH_MAX];
    if (realpath(worker, worker_real) == NULL)
        die("worker %s: %s", worker, strerror(errno));
    worker = worker_real;
    signal(SIGPIPE, SIG_IGN);
    cpus_init();
    const double wall_start = now_us(), busy_start = system_busy_s(), own_start = own_cpu_s();

    /* The echo peer first, while this process is small. */
    struct echo_peer peer, exec_peer;
    echo_start(&peer, false);
    echo_start(&exec_peer, true);

    const struct worker_limits flow_limits = {WORKER_FLOW_ADDRESS_SPACE, WORKER_OPEN_FILES};
    const enum landlock_policy policy = LANDLOCK_POLICY_REQUIRED;

    /* ---- spawn to Welcome, fork + exec of /bin/true; idle RSS of each worker ---- */
    struct samples spawn = {0}, spawn_ref = {0}, worker_end = {0}, rss_idle = {0};
    char idle_breakdown[1024] = "";
    size_t n_spawn = iters(SPAWN_ITERS);
    fprintf(stderr, "spawn to Welcome: %zu iterations\n", n_spawn);
    for (size_t i = 0; i < n_spawn + 5; i++) {
        double ref = fork_exec_true();
        struct worker_proc proc;
        struct worker_report report;
        double t0 = now_us();
        bool ok = worker_start_checked_with(worker, policy, &flow_limits,
                                            WORKER_WELCOME_TIMEOUT_MS, &proc, &report);
        double t = now_us() - t0;
        if (!ok)
            die("worker refused: %s %s", report.reason, report.worker_log);
        (void)wait_ready(proc.pid); /* its first engine is built before it reads again */
        long kib = vm_rss_kib(proc.pid);
        if (i == n_spawn + 4)
            rss_breakdown(proc.pid, idle_breakdown, sizeof idle_breakdown);
        t0 = now_us();
        int status = worker_finish(&proc, 1000);
        double t_end = now_us() - t0;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            die("worker did not exit 0 at EOF (status %#x)", (unsigned)status);
        if (i < 5)
            continue; /* warm-up */
        push(&spawn_ref, ref);
        push(&spawn, t);
        push(&worker_end, t_end);
        if (kib >= 0)
            push(&rss_idle, (double)kib);
    }

    /* ---- warm pooled activation against the in-process floor ---- */
    struct pool_config cfg;
    pool_config_defaults(&cfg);
    cfg.policy = policy;
    cfg.worker_path = worker;
    struct pool *pool = pool_new(&cfg);
    struct test_host *th = test_host_new();
    if (pool == NULL || th == NULL)
        die("out of memory");
    struct recorder rec = {.inner = test_host_interface(th)};
    const struct host host = {&RECORDER_OPS, &rec};
    pool_maintain(pool);

    char trivial[256], floor_src[256];
    snprintf(trivial, sizeof trivial, "%s", TRIVIAL_BODY);
    int floor_len = snprintf(floor_src, sizeof floor_src, "(function () { %s })()", TRIVIAL_BODY);

    /* "ready": the flow's worker had the time to build its next engine (the pool's
     * steady state when activations do not arrive back to back); "back to back":
     * activations one after the other, each paying for the engine the previous one
     * did not have the time to build. */
    struct samples warm = {0}, back = {0}, floor_s = {0};
    size_t n_warm = iters(WARM_ITERS);
    fprintf(stderr, "warm activation and floor: %zu iterations\n", n_warm);
    struct activation_request req;
    for (size_t i = 0; i < WARMUP_ITERS + n_warm; i++) {
        double f = floor_run(floor_src, (size_t)floor_len);
        pool_maintain(pool); /* between activations, as a caller does; not timed */
        pid_t pid = pool_flow_worker(pool, "warm");
        if (pid > 0)
            (void)wait_ready(pid);
        request_for(&req, trivial);
        double t = timed_run(pool, "warm", &req, &host, TRIVIAL_VALUE);
        if (i >= WARMUP_ITERS) {
            push(&floor_s, f);
            push(&warm, t);
        }
        if (i % BATCH == BATCH - 1) {
            for (int k = 0; k < BATCH; k++) {
                request_for(&req, trivial);
                double tb = timed_run(pool, "warm", &req, &host, TRIVIAL_VALUE);
                if (i >= WARMUP_ITERS)
                    push(&back, tb);
            }
        }
    }

    /* ---- host-call round trip against a bare pipe round trip ---- */
    char *script0 = calls_script(0), *script_n = calls_script(CALLS_N),
         *script_big = calls_script(CALLS_BIG_N);
    char value0[32], value_n[32], value_big[32];
    snprintf(value0, sizeof value0, "%llu", calls_sum(0));
    snprintf(value_n, sizeof value_n, "%llu", calls_sum(CALLS_N));
    snprintf(value_big, sizeof value_big, "%llu", calls_sum(CALLS_BIG_N));
    struct samples per_call = {0}, per_call_big = {0}, pipe_rt = {0}, exec_rt = {0},
                   run0 = {0}, run_n = {0}, run_big = {0};
    size_t n_calls = iters(CALLS_ITERS);
    fprintf(stderr, "host calls (N = %u) and pipe: %zu iterations\n", CALLS_N, n_calls);
    /* CPU time of both processes: per pipe round trip (a batch of PIPE_PER_ITER, this
     * process and the echo peer), and per host call as the wall time is (0-call runs
     * against N-call runs, this process and the worker). Warm-up samples are kept out
     * of every series; the CPU series of the runs are pushed only after warm-up. */
    struct samples pipe_cpu = {0}, cpu0 = {0}, cpu_n = {0}, cpu_big = {0}, cpu_per_call = {0},
                   cpu_per_call_big = {0}, scratch_wall = {0}, scratch_cpu = {0};
    for (size_t i = 0; i < 5 + n_calls; i++) {
        double c0 = process_cpu_us(0) + process_cpu_us(peer.pid);
        for (int k = 0; k < PIPE_PER_ITER; k++) {
            double p = echo_round_trip(&peer);
            if (i >= 5)
                push(&pipe_rt, p);
        }
        double c1 = process_cpu_us(0) + process_cpu_us(peer.pid);
        if (i >= 5)
            push(&pipe_cpu, (c1 - c0) / PIPE_PER_ITER);
        for (int k = 0; k < PIPE_PER_ITER; k++) {
            double q = echo_round_trip(&exec_peer);
            if (i >= 5)
                push(&exec_rt, q);
        }
        bool counted = i >= 5;
        pool_maintain(pool);
        ready_run_cpu(pool, "calls", script0, value0, &host, counted ? &run0 : &scratch_wall,
                      counted ? &cpu0 : &scratch_cpu);
        pool_maintain(pool);
        ready_run_cpu(pool, "calls", script_n, value_n, &host, counted ? &run_n : &scratch_wall,
                      counted ? &cpu_n : &scratch_cpu);
        if (counted && i % CALLS_BIG_EVERY == CALLS_BIG_EVERY - 1) {
            pool_maintain(pool);
            ready_run_cpu(pool, "calls", script_big, value_big, &host, &run_big, &cpu_big);
        }
    }
    free(scratch_wall.v);
    free(scratch_cpu.v);
    per_call_of(&run_n, &run0, CALLS_N, &per_call);
    per_call_of(&run_big, &run0, CALLS_BIG_N, &per_call_big);
    per_call_of(&cpu_n, &cpu0, CALLS_N, &cpu_per_call);
    per_call_of(&cpu_big, &cpu0, CALLS_BIG_N, &cpu_per_call_big);
    echo_stop(&peer);
    echo_stop(&exec_peer);

    /* ---- where the two processes run: one CPU, or two ---- */
    struct samples pipe_same = {0}, pipe_cross = {0}, calls_same = {0}, calls_cross = {0},
                   calls_kernel = {0};
    const bool two_cpus = g_cpu_b >= 0;
    fprintf(stderr, "pinned pipe and host calls: CPUs %d and %d\n", g_cpu_a, g_cpu_b);
    pinned_pipe(g_cpu_a, g_cpu_a, iters(PINNED_PIPE_ITERS), &pipe_same);
    pinned_calls(g_cpu_a, g_cpu_a, worker, &host, script0, value0, script_n, value_n, CALLS_N,
                 iters(PINNED_CALLS_ITERS), &calls_same);
    if (two_cpus) {
        pinned_pipe(g_cpu_a, g_cpu_b, iters(PINNED_PIPE_ITERS), &pipe_cross);
        pinned_calls(g_cpu_a, g_cpu_b, worker, &host, script0, value0, script_n, value_n,
                     CALLS_N, iters(PINNED_CALLS_ITERS), &calls_cross);
    }
    g_keep_placement = true; /* unpinned, and no co-location either */
    pinned_calls(-1, -1, worker, &host, script0, value0, script_n, value_n, CALLS_N,
                 iters(PINNED_CALLS_ITERS), &calls_kernel);
    g_keep_placement = false;

    /* ---- replay of 10/100/1000 recorded calls ---- */
    static const unsigned REPLAY_N[] = {10, 100, 1000};
    enum { REPLAYS = sizeof REPLAY_N / sizeof REPLAY_N[0] };
    const unsigned max_n = REPLAY_N[REPLAYS - 1];
    /* Record the calls live, once, through the host interface. */
    char *script_max = calls_script(max_n);
    char value_max[32];
    snprintf(value_max, sizeof value_max, "%llu", calls_sum(max_n));
    pool_maintain(pool);
    /* cppcheck-suppress unreadVariable ; the host reads rec through a pointer */
    rec.recording = true;
    request_for(&req, script_max);
    (void)timed_run(pool, "record", &req, &host, value_max);
    /* cppcheck-suppress [redundantAssignment,unreadVariable] ; the host reads rec through a pointer */
    rec.recording = false;
    if (rec.count != max_n)
        die("recording: %zu calls, expected %u", rec.count, max_n);
    struct proto_recorded_entry *prefix = calloc(max_n, sizeof *prefix);
    if (prefix == NULL)
        die("out of memory");
    bool args_as_expected = true;
    for (unsigned i = 0; i < max_n; i++) {
        const struct recorded *e = &rec.log[i];
        char want[64];
        expected_args(i, want, sizeof want);
        if (strcmp(e->args, want) != 0 || strcmp(e->kind, "ops.call") != 0)
            args_as_expected = false;
        prefix[i].position = i;
        prefix[i].kind = proto_text_of(e->kind);
        sha256(e->args, strlen(e->args), prefix[i].args_digest);
        prefix[i].settlement = e->settlement;
        prefix[i].value = proto_text_of(e->value);
        prefix[i].delivery_order = i + 1;
    }
    if (!args_as_expected)
        fprintf(stderr, "note: recorded args differ from [\"test\",\"echo\",i]; the recorded "
                        "ones are used\n");

    struct samples replay[REPLAYS] = {{0}};
    size_t n_replay = iters(REPLAY_ITERS);
    fprintf(stderr, "replay: %zu iterations each\n", n_replay);
    unsigned long long calls_before = rec.calls;
    for (size_t r = 0; r < REPLAYS; r++) {
        char *script = calls_script(REPLAY_N[r]);
        char value[32];
        snprintf(value, sizeof value, "%llu", calls_sum(REPLAY_N[r]));
        for (size_t i = 0; i < 3 + n_replay; i++) {
            pool_maintain(pool);
            pid_t pid = pool_flow_worker(pool, "replay");
            if (pid > 0)
                (void)wait_ready(pid);
            request_for(&req, script);
            req.prefix = prefix;
            req.prefix_count = REPLAY_N[r];
            double t = timed_run(pool, "replay", &req, &host, value);
            if (i >= 3)
                push(&replay[r], t);
        }
        free(script);
    }
    if (rec.calls != calls_before)
        die("replay reached the host (%llu calls): the prefix did not match",
            rec.calls - calls_before);

    /* ---- worker RSS after 1 and after 100 activations ---- */
    struct samples rss_one = {0}, rss_many = {0};
    fprintf(stderr, "worker RSS: %d workers\n", RSS_WORKERS);
    for (int w = 0; w < RSS_WORKERS; w++) {
        struct worker_proc proc;
        struct worker_report report;
        if (!worker_start_checked_with(worker, policy, &flow_limits, WORKER_WELCOME_TIMEOUT_MS,
                                       &proc, &report))
            die("worker refused: %s", report.reason);
        struct worker_conn conn;
        worker_conn_init(&conn, &proc);
        for (int a = 1; a <= RSS_ACTIVATIONS; a++) {
            struct activation_outcome out;
            request_for(&req, trivial);
            activation_run(&conn, &req, &host, &out);
            if (out.status != ACTIVATION_COMPLETED)
                die("RSS worker: activation %d did not complete", a);
            activation_outcome_free(&out);
            if (a == 1) {
                (void)wait_ready(conn.proc.pid);
                push(&rss_one, (double)vm_rss_kib(conn.proc.pid));
            }
        }
        (void)wait_ready(conn.proc.pid);
        push(&rss_many, (double)vm_rss_kib(conn.proc.pid));
        (void)worker_conn_shutdown(&conn, 1000);
    }

    pool_free(pool);
    test_host_free(th);
    /* Everything we started is reaped now: what else ran on the machine meanwhile? */
    const double wall_s = (now_us() - wall_start) / 1e6;
    const double others = (system_busy_s() - busy_start) - (own_cpu_s() - own_start);
    const double others_pct = busy_start < 0 ? -1 : 100 * (others > 0 ? others : 0) / wall_s;

    /* ---- the table ---- */
    struct stats s_spawn = summarize(&spawn), s_spawn_ref = summarize(&spawn_ref),
                 s_end = summarize(&worker_end), s_floor = summarize(&floor_s),
                 s_warm = summarize(&warm), s_back = summarize(&back), s_pipe = summarize(&pipe_rt), s_exec = summarize(&exec_rt),
                 s_call = summarize(&per_call), s_call_big = summarize(&per_call_big), s_run0 = summarize(&run0),
                 s_run_n = summarize(&run_n), s_rss_idle = summarize(&rss_idle),
                 s_rss_one = summarize(&rss_one), s_rss_many = summarize(&rss_many);
    struct stats s_replay[REPLAYS];
    for (size_t r = 0; r < REPLAYS; r++)
        s_replay[r] = summarize(&replay[r]);

    char ratio[64];
    printf("| benchmark | n | median | p95 | min | ratio (medians) | goal | met |\n");
    printf("|---|---:|---:|---:|---:|---:|---|---|\n");
    row("reference: fork + exec + wait of /bin/true", TIME, &s_spawn_ref, "", "", "");
    snprintf(ratio, sizeof ratio, "%.2fx /bin/true", s_spawn.median / s_spawn_ref.median);
    row("spawn to Welcome (`worker_start_checked`)", TIME, &s_spawn, ratio, "≤ 1.5x /bin/true",
        verdict(s_spawn.median <= 1.5 * s_spawn_ref.median,
                s_spawn.p95 <= 1.5 * s_spawn_ref.p95));
    row("ending an idle worker (close stdin, reap)", TIME, &s_end, "", "", "");
    row("floor: in-process QuickJS, fresh runtime + context + eval", TIME, &s_floor, "", "", "");
    snprintf(ratio, sizeof ratio, "%.2fx floor", s_warm.median / s_floor.median);
    row("warm pooled activation, worker ready (`pool_run`, trivial script)", TIME, &s_warm,
        ratio, "≤ 2x floor",
        verdict(s_warm.median <= 2 * s_floor.median, s_warm.p95 <= 2 * s_floor.p95));
    snprintf(ratio, sizeof ratio, "%.2fx floor", s_back.median / s_floor.median);
    row("warm pooled activation, back to back (same script)", TIME, &s_back, ratio,
        "≤ 1x floor",
        verdict(s_back.median <= s_floor.median, s_back.p95 <= s_floor.p95));
    row("reference: pipe round trip between two processes (32 bytes)", TIME, &s_pipe, "", "",
        "");
    snprintf(ratio, sizeof ratio, "%.2fx pipe", s_call.median / s_pipe.median);
    char name[128];
    snprintf(name, sizeof name, "async host call round trip, per call (N = %u)", CALLS_N);
    row(name, TIME, &s_call, ratio, "≤ 2x pipe round trip",
        verdict(s_call.median <= 2 * s_pipe.median, s_call.p95 <= 2 * s_pipe.p95));
    snprintf(ratio, sizeof ratio, "%.2fx pipe", s_call_big.median / s_pipe.median);
    snprintf(name, sizeof name, "async host call round trip, per call (N = %u)", CALLS_BIG_N);
    row(name, TIME, &s_call_big, ratio, "≤ 2x pipe round trip",
        verdict(s_call_big.median <= 2 * s_pipe.median, s_call_big.p95 <= 2 * s_pipe.p95));
    struct stats s_pipe_cpu = summarize(&pipe_cpu), s_cpu_call = summarize(&cpu_per_call),
                 s_cpu_call_big = summarize(&cpu_per_call_big);
    row("reference: CPU time per pipe round trip (both processes)", TIME, &s_pipe_cpu, "", "",
        "");
    snprintf(ratio, sizeof ratio, "%.2fx pipe's", s_cpu_call.median / s_pipe_cpu.median);
    snprintf(name, sizeof name, "CPU time per async host call (parent + worker, N = %u)",
             CALLS_N);
    row(name, TIME, &s_cpu_call, ratio, "≤ 2x pipe's CPU",
        verdict(s_cpu_call.median <= 2 * s_pipe_cpu.median,
                s_cpu_call.p95 <= 2 * s_pipe_cpu.p95));
    snprintf(ratio, sizeof ratio, "%.2fx pipe's", s_cpu_call_big.median / s_pipe_cpu.median);
    snprintf(name, sizeof name, "CPU time per async host call (parent + worker, N = %u)",
             CALLS_BIG_N);
    row(name, TIME, &s_cpu_call_big, ratio, "≤ 2x pipe's CPU",
        verdict(s_cpu_call_big.median <= 2 * s_pipe_cpu.median,
                s_cpu_call_big.p95 <= 2 * s_pipe_cpu.p95));
    snprintf(ratio, sizeof ratio, "%.2fx pipe", s_exec.median / s_pipe.median);
    row("  diagnostic: pipe round trip, echo peer fork + exec'd like a worker", TIME, &s_exec,
        ratio, "", "");
    struct stats s_pipe_same = summarize(&pipe_same), s_pipe_cross = summarize(&pipe_cross),
                 s_calls_same = summarize(&calls_same), s_calls_cross = summarize(&calls_cross);
    snprintf(ratio, sizeof ratio, "%.2fx pipe", s_pipe_same.median / s_pipe.median);
    row("  diagnostic: pipe round trip, both processes pinned to one CPU", TIME, &s_pipe_same,
        ratio, "", "");
    snprintf(ratio, sizeof ratio, "%.2fx pipe", s_calls_same.median / s_pipe.median);
    snprintf(name, sizeof name,
             "  diagnostic: host call per call (N = %u), parent and worker pinned to one CPU",
             CALLS_N);
    row(name, TIME, &s_calls_same, ratio, "", "");
    if (two_cpus) {
        snprintf(ratio, sizeof ratio, "%.2fx pipe", s_pipe_cross.median / s_pipe.median);
        row("  diagnostic: pipe round trip, processes pinned to two CPUs", TIME, &s_pipe_cross,
            ratio, "", "");
        snprintf(ratio, sizeof ratio, "%.2fx pipe", s_calls_cross.median / s_pipe.median);
        snprintf(name, sizeof name,
                 "  diagnostic: host call per call (N = %u), parent and worker pinned to two CPUs",
                 CALLS_N);
        row(name, TIME, &s_calls_cross, ratio, "", "");
    }
    struct stats s_calls_kernel = summarize(&calls_kernel);
    snprintf(ratio, sizeof ratio, "%.2fx pipe", s_calls_kernel.median / s_pipe.median);
    snprintf(name, sizeof name,
             "  diagnostic: host call per call (N = %u), unpinned, placement left to the kernel"
             " (no co-location)", CALLS_N);
    row(name, TIME, &s_calls_kernel, ratio, "", "");
    snprintf(name, sizeof name, "  activation with 0 host calls");
    row(name, TIME, &s_run0, "", "", "");
    snprintf(name, sizeof name, "  activation with %u host calls", CALLS_N);
    row(name, TIME, &s_run_n, "", "", "");
    for (size_t r = 0; r < REPLAYS; r++) {
        snprintf(name, sizeof name, "replay of %u recorded calls, Activate to Finished",
                 REPLAY_N[r]);
        bool last = r == REPLAYS - 1;
        row(name, TIME, &s_replay[r], "", last ? "< 2 ms" : "",
            last ? verdict(s_replay[r].median < 2000, s_replay[r].p95 < 2000) : "");
    }
    row("worker VmRSS, accepted and idle", KIB, &s_rss_idle, "", "< 4 MiB",
        verdict(s_rss_idle.median < 4096, s_rss_idle.p95 < 4096));
    row("worker VmRSS after 1 activation", KIB, &s_rss_one, "", "< 4 MiB",
        verdict(s_rss_one.median < 4096, s_rss_one.p95 < 4096));
    snprintf(name, sizeof name, "worker VmRSS after %d activations", RSS_ACTIVATIONS);
    row(name, KIB, &s_rss_many, "", "", "");
    if (others_pct < 0)
        printf("\nOther processes' CPU use during the run: unknown (/proc/stat unreadable).\n");
    else
        printf("\nOther processes' CPU use during the run (%.0f s): %.0f%% of one CPU%s\n",
               wall_s, others_pct,
               others_pct >= 10 ? ". **The machine was not quiet: these numbers are disturbed; "
                                  "run again when it is.**"
                                : " (a quiet machine).");
    if (idle_breakdown[0] != '\0')
        printf("Idle worker's resident memory (one of them): %s.\n", idle_breakdown);
    printf("Replay prefix digests: SHA-256 of the args JSON recorded live through the host "
           "interface; %s.\n",
           args_as_expected ? "each equals the text `[\"test\",\"echo\",i]` the script's "
                              "`ops.call(\"test\", \"echo\", i)` produces"
                            : "they differ from the expected `[\"test\",\"echo\",i]`");
    printf("Per-call host time: each sample is (time of one activation with N calls - median "
           "time of the activations with 0 calls) / N, all on a ready worker, the 0-call "
           "activations interleaved with the others.\n");
    printf("CPU time per call: the same difference of the CPU time the bench process and "
           "the worker spent on each activation (their CPU clocks), over N; per pipe round "
           "trip: this process's and the echo peer's CPU time over a batch of %d, / %d.\n",
           PIPE_PER_ITER, PIPE_PER_ITER);
    free(script0);
    free(script_n);
    free(script_big);
    free(script_max);
    return 0;
}
