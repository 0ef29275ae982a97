/* ck-basal serve SIGKILLed under load, again and again (issue 25, "Nothing admitted is
 * lost"). Six flows each make one keyed module mutation (test_module's echo, which logs
 * every request with its idempotency key), spin a little and write kv. Six client
 * threads submit runs over the ops socket without pause (`run` with detach and a trigger
 * id of their own), while the test SIGKILLs serve twelve times, each at another point of
 * its own log (the first admission, the 4th run started, the 8th run ended, ...), and
 * starts a new serve after each. A client whose reply was lost sends the same request
 * again (same trigger id) once the next serve is up, so every request ends with a
 * definite answer: acknowledged (a run id), "already admitted" (the lost attempt was
 * stored) or refused (the backlog: nothing may be stored). Then every flow is drained.
 *
 * The guards it proves:
 *   - admission durable before the reply: after each kill, before the next start, every
 *     run a client had acknowledged is in the store with its flow and trigger id; in the
 *     end the store holds exactly the acknowledged runs and those whose lost request
 *     turned out stored, and nothing of a refused request [guard: admission committed
 *     before the reply];
 *   - recovery at start: every stored run ends succeeded exactly once (one end logged at
 *     most, one completed activation, its last; the others cut by a kill, none open);
 *     no journal row is left unsettled [guard: recovery at start];
 *   - idempotency keys: every effect in the module's log carries the key its run's journal
 *     row holds, so an effect resent after a kill is the same effect, never a second one
 *     under another key; every run's effect reached the module [guard: idempotency keys
 *     derived from (flow, run, position)];
 *   - kv holds what each run wrote, and each flow's last value is its last run's.
 * Every wait is on serve's own log lines (a reader thread counts them) or on the
 * clients' progress, never on time. */
#include "lib/harness.h"
#include "lib/serve_home.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define FLOWS 6
#define CLIENTS 6
#define MAX_RUNS 3 /* runners */
#define MAX_RUNS_TEXT "3"
#define BACKLOG "6"
#define SPIN 100000
#define REQUESTS_MAX 4096
#define WAIT_MS 60000      /* safety bound of every wait: a hang fails, never a pass */
#define REPLY_WAIT_MS 30000

/* Where each kill lands: the count-th line of event in the serve being killed. */
static const struct {
    const char *event;
    int count;
} KILLS[] = {
    {"event=run_admitted", 1}, /* the very first admission: nothing has run yet */
    {"event=run_started", 4},  /* recovered runs and new ones starting */
    {"event=run_ended", 8},    /* in the middle of a stream of runs */
    {"event=run_admitted", 15},
    {"event=run_started", 12},
    {"event=run_ended", 20},
    {"event=run_started", 1},  /* the first run the new serve takes: a recovered one */
    {"event=run_admitted", 3},
    {"event=run_ended", 2},
    {"event=run_started", 25},
    {"event=run_admitted", 40},
    {"event=run_ended", 35},
};
#define KILL_COUNT (int)(sizeof KILLS / sizeof KILLS[0])
/* The last serve runs until this many runs ended, then the clients stop. */
#define FINAL_ENDS 30

enum outcome { PENDING, ACKED, DUPLICATE, REFUSED };

struct request {
    int n, flow;
    enum outcome outcome;
    long long run_id; /* ACKED */
    char refusal[160];
};

struct serve_proc {
    struct proc p;
    pthread_t reader;
    bool reading;
};

/* Everything the clients, the log reader and the main thread share, under mu. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct test_home h;
    char keyed_log[PATH_MAX + 16];
    int generation; /* bumped once each new serve is ready */
    bool down;      /* the serve is killed; the next is not up yet */
    bool stop;      /* clients start no new request */
    bool abort;     /* a serve did not start: everyone leaves */
    int parked;     /* clients waiting for the next serve */
    int next_n;
    struct request req[REQUESTS_MAX];
    long long lost_sent;    /* requests sent whose reply never came */
    long long lost_unsent;  /* connections refused while serve was down */
    /* this serve's log so far */
    int admitted, started, ended, ready;
    bool eof;
    /* every serve's run_ended lines: run ids, and any not ending succeeded */
    long long *ended_ids;
    size_t ended_count, ended_cap;
    char bad_end[400];
    char tail[4096]; /* the last log lines, for a failure's detail */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static long long ms_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* Under g.mu: waits on g.cv until deadline (ms_now() based); false when it passed. */
static bool wait_until(long long deadline)
{
    long long left = deadline - ms_now();
    if (left <= 0)
        return false;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += left / 1000;
    t.tv_nsec += (left % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    (void)pthread_cond_timedwait(&g.cv, &g.mu, &t);
    return true;
}

/* ---- serve and its log --------------------------------------------------------- */

/* Under g.mu: one line of serve's log counted. */
static void count_line(const char *line)
{
    size_t len = strlen(line), have = strlen(g.tail);
    if (have + len + 2 >= sizeof g.tail)
        g.tail[0] = '\0', have = 0;
    snprintf(g.tail + have, sizeof g.tail - have, "%s\n", line);
    if (strstr(line, "event=ready") != NULL)
        g.ready++;
    else if (strstr(line, "event=run_admitted ") != NULL)
        g.admitted++;
    else if (strstr(line, "event=run_started ") != NULL)
        g.started++;
    else if (strstr(line, "event=run_ended ") != NULL) {
        g.ended++;
        const char *run = strstr(line, " run=");
        if (g.ended_count == g.ended_cap) {
            size_t cap = g.ended_cap > 0 ? 2 * g.ended_cap : 256;
            long long *grown = realloc(g.ended_ids, cap * sizeof *grown);
            if (grown == NULL)
                return;
            g.ended_ids = grown;
            g.ended_cap = cap;
        }
        g.ended_ids[g.ended_count++] = run != NULL ? strtoll(run + 5, NULL, 10) : -1;
        if (strstr(line, " state=succeeded ") == NULL && g.bad_end[0] == '\0')
            snprintf(g.bad_end, sizeof g.bad_end, "%s", line);
    }
}

/* Reads serve's stderr to its end, line by line, so serve never blocks on a full pipe. */
static void *log_reader(void *arg)
{
    struct serve_proc *s = arg;
    char buf[8192];
    size_t have = 0;
    for (;;) {
        struct pollfd p = {s->p.err_fd, POLLIN, 0};
        if (poll(&p, 1, -1) < 0 && errno == EINTR)
            continue;
        ssize_t n = read(s->p.err_fd, buf + have, sizeof buf - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        pthread_mutex_lock(&g.mu);
        if (n <= 0) {
            g.eof = true;
            pthread_cond_broadcast(&g.cv);
            pthread_mutex_unlock(&g.mu);
            return NULL;
        }
        have += (size_t)n;
        buf[have] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            *nl = '\0';
            count_line(line);
            line = nl + 1;
        }
        have = strlen(line);
        memmove(buf, line, have + 1);
        if (have == sizeof buf - 1) /* a line longer than the buffer: dropped */
            have = 0;
        pthread_cond_broadcast(&g.cv);
        pthread_mutex_unlock(&g.mu);
    }
}

/* Starts serve and waits for its event=ready line. */
static bool serve_up(struct serve_proc *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_lock(&g.mu);
    g.admitted = g.started = g.ended = g.ready = 0;
    g.eof = false;
    pthread_mutex_unlock(&g.mu);
    const char *argv[] = {harness_test_parent(), "--home", g.h.home, "serve", "--max-runs",
                          MAX_RUNS_TEXT, "--backlog", BACKLOG, "--rate-limit", "100000", NULL};
    if (proc_start(&s->p, argv, NULL) != 0)
        return false;
    s->reading = pthread_create(&s->reader, NULL, log_reader, s) == 0;
    if (!s->reading) {
        proc_kill(&s->p);
        s->p.pid = 0; /* reaped: nothing left to end */
        return false;
    }
    long long deadline = ms_now() + WAIT_MS;
    pthread_mutex_lock(&g.mu);
    while (g.ready == 0 && !g.eof && wait_until(deadline))
        ;
    bool up = g.ready > 0;
    pthread_mutex_unlock(&g.mu);
    return up;
}

static int serve_end(struct serve_proc *s, int sig);

/* serve_up, or a serve that did not get ready ended (its log kept for the detail). */
static bool serve_up_or_end(struct serve_proc *s)
{
    if (serve_up(s))
        return true;
    if (s->p.pid > 0)
        (void)serve_end(s, SIGKILL);
    return false;
}

/* Kills (signal) or stops serve, reads its log to the end and reaps it: its exit code,
 * 128 + the signal, or -1. */
static int serve_end(struct serve_proc *s, int sig)
{
    kill(s->p.pid, sig);
    if (s->reading)
        pthread_join(s->reader, NULL);
    s->reading = false;
    close(s->p.err_fd);
    s->p.err_fd = -1;
    struct proc_result r = proc_finish(&s->p, NULL, 0, WAIT_MS);
    int code = -1;
    if (!r.timed_out && r.exited)
        code = r.exit_code;
    else if (!r.timed_out && r.signaled)
        code = 128 + r.signal;
    proc_result_free(&r);
    return code;
}

/* ---- the clients ---------------------------------------------------------------- */

/* Sends request i to the ops socket. 1 with the reply (malloc'd) in *reply; 0 when the
 * connection was refused (nothing sent); -1 when it was sent and no whole reply came. */
static int send_request(int i, char **reply)
{
    char body[512];
    struct request *q = &g.req[i];
    sfmt(body, sizeof body,
         "{\"cmd\":\"run\",\"args\":{\"flow\":\"f%d\",\"trigger\":\"{\\\"n\\\":%d,\\\"spin\\\":%d}\","
         "\"trigger_id\":\"k%d\",\"detach\":true}}\n",
         q->flow, q->n, SPIN, q->n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    sfmt(a.sun_path, sizeof a.sun_path, "%s", g.h.sock);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return 0;
    }
    size_t len = strlen(body), got = 0;
    char buf[4096];
    int rc = -1;
    if (send(fd, body, len, MSG_NOSIGNAL) != (ssize_t)len) {
        close(fd);
        return -1; /* perhaps part of it reached the serve that died */
    }
    while (got + 1 < sizeof buf) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, REPLY_WAIT_MS) <= 0)
            break;
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(buf, '\n', got) != NULL) {
            rc = 1;
            break;
        }
    }
    close(fd);
    buf[got] = '\0';
    if (rc == 1)
        *reply = strdup(buf);
    return rc == 1 && *reply == NULL ? -1 : rc;
}

/* Under g.mu: the answer to request i recorded. */
static void record(int i, const char *reply)
{
    struct request *q = &g.req[i];
    json_t *o = json_loads(reply, 0, NULL);
    json_t *run = json_object_get(json_object_get(o, "data"), "run");
    const char *error = json_string_value(json_object_get(o, "error"));
    if (json_is_true(json_object_get(o, "ok")) && json_is_integer(run)) {
        q->outcome = ACKED;
        q->run_id = json_integer_value(run);
    } else if (error != NULL && strstr(error, "was already admitted") != NULL) {
        q->outcome = DUPLICATE;
    } else {
        q->outcome = REFUSED;
        sfmt(q->refusal, sizeof q->refusal, "%s", error != NULL ? error : reply);
    }
    json_decref(o);
}

static void *client_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g.mu);
    while (!g.stop && !g.abort && g.next_n < REQUESTS_MAX) {
        int i = g.next_n++;
        g.req[i].n = i;
        g.req[i].flow = i % FLOWS;
        /* Until the request has a definite answer: a lost one is sent again, the same
         * trigger id, to the next serve. */
        while (g.req[i].outcome == PENDING && !g.abort) {
            int generation = g.generation;
            bool was_down = g.down;
            pthread_mutex_unlock(&g.mu);
            char *reply = NULL;
            int sent = was_down ? 0 : send_request(i, &reply);
            pthread_mutex_lock(&g.mu);
            if (sent == 1) {
                record(i, reply);
                free(reply);
                break;
            }
            if (sent < 0)
                g.lost_sent++;
            else if (!was_down)
                g.lost_unsent++;
            g.parked++;
            pthread_cond_broadcast(&g.cv);
            /* At the stop the serve is up: a request lost otherwise is sent again. */
            while (g.generation == generation && !g.abort && !(g.stop && !g.down))
                pthread_cond_wait(&g.cv, &g.mu);
            g.parked--;
        }
        if (g.req[i].outcome == REFUSED) {
            /* The backlog is full: wait for a run to end, or for the next serve. */
            int ended = g.ended, generation = g.generation;
            while (g.ended == ended && g.generation == generation && !g.down && !g.stop &&
                   !g.abort)
                pthread_cond_wait(&g.cv, &g.mu);
        }
    }
    pthread_mutex_unlock(&g.mu);
    return NULL;
}

/* ---- the checks after each kill and at the end ------------------------------------- */

/* The store opened read-only (the test's own view, outside the code under test). */
static sqlite3 *store_ro(void)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(g.h.db, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 10000);
    return db;
}

/* Run id's flow and trigger id as "fN kN", or "" when it is not stored. */
static void stored_run(sqlite3 *db, long long id, char *out, size_t cap)
{
    out[0] = '\0';
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT flow_id || ' ' || trigger_id FROM runs WHERE id = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW)
        snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

/* Every acknowledged run so far stored with its flow and trigger id; the first missing
 * one in why. */
static long long acked_missing(sqlite3 *db, long long *acked, char *why, size_t cap)
{
    long long missing = 0;
    *acked = 0;
    for (int i = 0; i < g.next_n; i++) {
        const struct request *q = &g.req[i];
        if (q->outcome != ACKED)
            continue;
        (*acked)++;
        char got[160], want[64];
        stored_run(db, q->run_id, got, sizeof got);
        sfmt(want, sizeof want, "f%d k%d", q->flow, q->n);
        if (strcmp(got, want) != 0) {
            if (missing++ == 0)
                snprintf(why, cap, "run %lld (acknowledged for %s) stored as '%s'", q->run_id,
                         want, got);
        }
    }
    return missing;
}

static long long db_number(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    long long v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The runs stored against the requests: each stored run is a request acknowledged with
 * its id or answered "already admitted"; each of those is stored; no refused one is. */
static void check_runs_against_requests(sqlite3 *db)
{
    char why[400] = "";
    long long acked = 0, duplicates = 0, refused = 0, pending = 0, bad = 0;
    for (int i = 0; i < g.next_n; i++) {
        const struct request *q = &g.req[i];
        char sql[200];
        sfmt(sql, sizeof sql, "SELECT count(*) FROM runs WHERE flow_id = 'f%d' AND trigger_id = 'k%d'",
             q->flow, q->n);
        long long stored = db_number(db, sql);
        bool good = true;
        switch (q->outcome) {
        case ACKED:
            acked++;
            sfmt(sql, sizeof sql, "SELECT count(*) FROM runs WHERE id = %lld AND flow_id = 'f%d'"
                 " AND trigger_id = 'k%d'", q->run_id, q->flow, q->n);
            good = stored == 1 && db_number(db, sql) == 1;
            break;
        case DUPLICATE:
            duplicates++;
            good = stored == 1;
            break;
        case REFUSED:
            refused++;
            good = stored == 0 && strstr(q->refusal, "backlog") != NULL;
            break;
        case PENDING:
            pending++;
            good = false;
            break;
        }
        if (!good && bad++ == 0)
            sfmt(why, sizeof why, "request k%d (outcome %d, run %lld, refusal '%s'): %lld stored",
                 q->n, (int)q->outcome, q->run_id, q->refusal, stored);
    }
    long long total = db_number(db, "SELECT count(*) FROM runs");
    check(bad == 0 && total == acked + duplicates && acked > 0,
          "serve kill load: the store holds exactly the acknowledged runs and those whose lost "
          "request was already stored, once each; no refused request stored anything [guard: "
          "admission committed before the reply]",
          "%lld bad; %lld stored, %lld acknowledged, %lld already admitted, %lld refused, %lld "
          "unanswered; first: %s",
          bad, total, acked, duplicates, refused, pending, why);
    harness_note("%d requests: %lld acknowledged, %lld lost and found stored on resending, "
                 "%lld refused (backlog); %lld replies lost in a kill, %lld connections refused by "
                 "a dead serve", g.next_n, acked, duplicates, refused, g.lost_sent, g.lost_unsent);
}

/* Every run ended succeeded once: in the store, in the logs, in its activations. */
static void check_ends(sqlite3 *db)
{
    long long runs = db_number(db, "SELECT count(*) FROM runs");
    long long succeeded = db_number(db, "SELECT count(*) FROM runs WHERE state = 'succeeded'");
    size_t twice = 0;
    long long twice_id = 0;
    for (size_t i = 0; i < g.ended_count; i++)
        for (size_t j = i + 1; j < g.ended_count; j++)
            if (g.ended_ids[i] == g.ended_ids[j] && twice++ == 0)
                twice_id = g.ended_ids[i];
    check(runs > 0 && succeeded == runs && twice == 0 && g.bad_end[0] == '\0',
          "serve kill load: every stored run ended succeeded, and no run's end was logged twice "
          "over all the serves [guard: recovery at start]",
          "%lld of %lld succeeded; %zu ends logged twice (run %lld); other end: %s", succeeded,
          runs, twice, twice_id, g.bad_end);
    long long not_one_completed = db_number(
        db, "SELECT count(*) FROM runs r WHERE (SELECT count(*) FROM activations a"
            " WHERE a.run_id = r.id AND a.outcome = 'completed') <> 1");
    long long completed_not_last = db_number(
        db, "SELECT count(*) FROM activations a WHERE a.outcome = 'completed' AND a.seq <>"
            " (SELECT max(seq) FROM activations b WHERE b.run_id = a.run_id)");
    long long gaps = db_number(db, "SELECT count(*) FROM (SELECT run_id FROM activations"
                                   " GROUP BY run_id HAVING count(*) <> max(seq))");
    long long odd = db_number(db, "SELECT count(*) FROM activations WHERE outcome IS NOT NULL"
                                  " AND outcome NOT IN ('completed', 'no_worker')");
    long long cut = db_number(db, "SELECT count(*) FROM activations WHERE outcome IS NULL");
    long long cut_with_end = db_number(db, "SELECT count(*) FROM activations WHERE outcome IS NULL"
                                       " AND ended_at IS NOT NULL");
    /* A kill cuts at most one activation per runner. */
    check(not_one_completed == 0 && completed_not_last == 0 && gaps == 0 && odd == 0 &&
              cut_with_end == 0 && cut <= (long long)KILL_COUNT * MAX_RUNS,
          "serve kill load: each run has exactly one completed activation, its last; the others "
          "were cut by a kill (no outcome, at most one per runner per kill)",
          "%lld runs without exactly one completed, %lld completed not last, %lld with gaps, "
          "%lld odd outcomes, %lld cut (%lld with an end time)",
          not_one_completed, completed_not_last, gaps, odd, cut, cut_with_end);
    harness_note("%lld activations cut by the kills", cut);
    long long unsettled = db_number(db, "SELECT count(*) FROM journal WHERE state <> 'settled'"
                                        " OR settlement <> 'fulfilled'");
    long long calls = db_number(db, "SELECT count(*) FROM journal");
    check(unsettled == 0 && calls >= 3 * runs,
          "serve kill load: every journal row of every run is settled and fulfilled (none left "
          "unknown for an operator)",
          "%lld of %lld rows unsettled (%lld runs)", unsettled, calls, runs);
}

/* The module's log against the journal: each line's key is its run's key. */
static void check_effects(sqlite3 *db)
{
    char *text = read_text_file(g.keyed_log);
    if (text == NULL) {
        fail("serve kill load: the keyed module's log", "%s unreadable", g.keyed_log);
        return;
    }
    static int seen[REQUESTS_MAX];
    memset(seen, 0, sizeof seen);
    long long lines = 0, wrong = 0, strangers = 0, resent = 0;
    char why[400] = "";
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, "SELECT j.idempotency_key FROM journal j JOIN runs r ON r.id ="
                           " j.run_id WHERE r.trigger_id = ?1 AND j.kind = 'ops.call'", -1,
                       &st, NULL);
    char op[32], key[96];
    int n;
    for (char *cursor = text; test_effect_log_next(&cursor, op, key, &n);) {
        lines++;
        char trigger_id[32];
        sfmt(trigger_id, sizeof trigger_id, "k%d", n);
        const char *want = NULL;
        if (st != NULL) {
            sqlite3_reset(st);
            sqlite3_bind_text(st, 1, trigger_id, -1, SQLITE_TRANSIENT);
            if (sqlite3_step(st) == SQLITE_ROW)
                want = (const char *)sqlite3_column_text(st, 0);
        }
        if (n < 0 || n >= REQUESTS_MAX || want == NULL) {
            if (strangers++ == 0 && why[0] == '\0')
                sfmt(why, sizeof why, "effect for n=%d with no stored run", n);
            continue;
        }
        if (seen[n]++ > 0)
            resent++;
        if (strcmp(key, want) != 0 && wrong++ == 0 && why[0] == '\0')
            sfmt(why, sizeof why, "n=%d sent with key %s, its journal row holds %s", n, key, want);
    }
    if (st != NULL)
        sqlite3_finalize(st);
    free(text);
    long long missing = 0;
    for (int i = 0; i < g.next_n; i++)
        if ((g.req[i].outcome == ACKED || g.req[i].outcome == DUPLICATE) && seen[i] == 0 &&
            missing++ == 0 && why[0] == '\0')
            sfmt(why, sizeof why, "run of k%d made no effect", i);
    check(lines > 0 && wrong == 0 && strangers == 0 && missing == 0,
          "serve kill load: every effect the module saw carries its run's journaled key, no "
          "effect under a second key, none for a run not stored, none missing [guard: "
          "idempotency keys derived from (flow, run, position)]",
          "%lld lines, %lld with another key, %lld strangers, %lld runs without effect; %s", lines,
          wrong, strangers, missing, why);
    harness_note("%lld effects in the module's log, %lld of them resent after a kill (same key)",
                 lines, resent);
}

static void check_kv(sqlite3 *db)
{
    long long runs = db_number(db, "SELECT count(*) FROM runs");
    long long written = db_number(
        db, "SELECT count(*) FROM runs r JOIN kv k ON k.flow_id = r.flow_id AND k.key = 'n' ||"
            " json_extract(r.trigger, '$.n') AND k.value = CAST(json_extract(r.trigger, '$.n')"
            " AS TEXT)");
    long long keys = db_number(db, "SELECT count(*) FROM kv WHERE key LIKE 'n%'");
    long long last_ok = db_number(
        db, "SELECT count(*) FROM kv k JOIN runs r ON r.id = (SELECT max(id) FROM runs"
            " WHERE flow_id = k.flow_id) WHERE k.key = 'last'"
            " AND k.value = CAST(json_extract(r.trigger, '$.n') AS TEXT)");
    check(runs > 0 && written == runs && keys == runs && last_ok == FLOWS,
          "serve kill load: kv holds each run's value under its own key, nothing more, and each "
          "flow's 'last' is its last run's",
          "%lld runs, %lld values right, %lld n-keys, %lld flows with the right 'last'", runs,
          written, keys, last_ok);
}

/* ---- the scenario ----------------------------------------------------------------- */

static const char *FLOW_SCRIPT =
    "const n = trigger.n;\n"
    "await ops.call('keyed', 'echo', {n});\n"
    "let x = 0; for (let i = 0; i < trigger.spin; i++) x += i;\n"
    "await kv.set('n' + n, n);\n"
    "await kv.set('last', n);\n"
    "return n;\n";

static bool home_setup(const char *root)
{
    test_home_begin(&g.h, root, "kill-load");
    sfmt(g.keyed_log, sizeof g.keyed_log, "%s/keyed.log", g.h.dir);
    char catalog[2048], path[PATH_MAX + 32];
    sfmt(catalog, sizeof catalog,
         "{\"modules\": {\"keyed\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"
         " \"ops\": {\"echo\": {\"kind\": \"mutate\", \"idempotent\": true}}}}}",
         harness_path("test/tools/test_module"), g.keyed_log);
    sfmt(path, sizeof path, "%s/modules.json", g.h.home);
    bool good = write_text_file(path, catalog, 0600);
    for (int f = 0; f < FLOWS && good; f++) {
        char id[16];
        sfmt(id, sizeof id, "f%d", f);
        good = test_home_flow(&g.h, id, 1,
                              "{\"manual\":true},\"ops\":[{\"module\":\"keyed\",\"op\":\"echo\"}]",
                              FLOW_SCRIPT);
    }
    return good;
}

/* Under g.mu: waits for the count-th line of event in this serve. */
static bool wait_event(const char *event, int count)
{
    long long deadline = ms_now() + WAIT_MS;
    for (;;) {
        int seen = strcmp(event, "event=run_admitted") == 0 ? g.admitted
                   : strcmp(event, "event=run_started") == 0 ? g.started
                                                              : g.ended;
        if (seen >= count)
            return true;
        if (g.eof || !wait_until(deadline))
            return false;
    }
}

/* Marks the serve up (the clients go on) after a start. */
static void serve_ready(void)
{
    pthread_mutex_lock(&g.mu);
    g.down = false;
    g.generation++;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
}

/* One kill: at its point of the log, then every client's request in flight settled
 * (answered, or parked waiting for the next serve), then the store looked at. */
static bool kill_round(int k, struct serve_proc *s, int *caught_running, int *caught_pending)
{
    pthread_mutex_lock(&g.mu);
    bool reached = wait_event(KILLS[k].event, KILLS[k].count);
    pthread_mutex_unlock(&g.mu);
    int code = serve_end(s, SIGKILL);
    pthread_mutex_lock(&g.mu);
    g.down = true;
    pthread_cond_broadcast(&g.cv);
    long long deadline = ms_now() + WAIT_MS;
    while (g.parked < CLIENTS && wait_until(deadline))
        ;
    bool parked = g.parked == CLIENTS;
    char name[200], why[300] = "";
    sfmt(name, sizeof name,
         "serve kill load: kill %d (at %s #%d): every run acknowledged so far is stored with "
         "its flow and trigger id [guard: admission committed before the reply]",
         k + 1, KILLS[k].event + 6, KILLS[k].count);
    sqlite3 *db = store_ro();
    long long acked = 0;
    long long missing = db != NULL ? acked_missing(db, &acked, why, sizeof why) : -1;
    check(reached && code == 128 + SIGKILL && parked && missing == 0, name,
          "point reached %d, exit %d, %d of %d clients settled, %lld of %lld acknowledged "
          "missing: %s; log %.1500s",
          reached, code, g.parked, CLIENTS, missing, acked, why, g.tail);
    if (db != NULL) {
        if (db_number(db, "SELECT count(*) FROM runs r JOIN activations a ON a.run_id = r.id"
                          " WHERE r.state = 'running' AND a.ended_at IS NULL") > 0)
            (*caught_running)++;
        if (db_number(db, "SELECT count(*) FROM runs WHERE state = 'pending'") > 0)
            (*caught_pending)++;
        sqlite3_close(db);
    }
    pthread_mutex_unlock(&g.mu);
    return reached && parked;
}

int main(void)
{
    if (!require_parent_and_module("serve kill load: the test build",
                                   "serve kill load: the test module"))
        return harness_finish();
    char root[PATH_MAX];
    sfmt(root, sizeof root, "%s", harness_tmpdir("serve-kill"));
    if (!check(home_setup(root), "serve kill load: 6 flows with a keyed effect installed",
               "see stderr"))
        return harness_finish();

    struct serve_proc s;
    if (!check(serve_up_or_end(&s), "serve kill load: the first serve starts", "%.800s", g.tail))
        return harness_finish();
    serve_ready();
    pthread_t clients[CLIENTS];
    int client_count = 0;
    for (int c = 0; c < CLIENTS; c++)
        if (pthread_create(&clients[client_count], NULL, client_main, NULL) == 0)
            client_count++;
    ok(client_count == CLIENTS, "serve kill load: 6 client threads submit runs");

    int caught_running = 0, caught_pending = 0, rounds = 0;
    bool up = true;
    bool on_course = true; /* every kill point so far was reached */
    for (int k = 0; k < KILL_COUNT && up && on_course; k++) {
        on_course = kill_round(k, &s, &caught_running, &caught_pending);
        rounds += on_course;
        /* Restarted either way, so that the checks below say what is left behind. */
        up = serve_up_or_end(&s);
        if (!up) {
            fail("serve kill load: a new serve starts after the kill", "%.800s", g.tail);
            pthread_mutex_lock(&g.mu);
            g.abort = true;
            pthread_cond_broadcast(&g.cv);
            pthread_mutex_unlock(&g.mu);
            break;
        }
        serve_ready();
    }
    check(rounds == KILL_COUNT && caught_running >= KILL_COUNT / 2 && caught_pending >= KILL_COUNT / 2,
          "serve kill load: serve SIGKILLed 12 times under load, most kills with runs in flight "
          "and runs waiting",
          "%d kills; %d with a run mid-activation, %d with runs pending", rounds, caught_running,
          caught_pending);

    /* The last serve: the load goes on for a while, then stops; then every flow drains. */
    if (up) {
        pthread_mutex_lock(&g.mu);
        bool more = wait_event("event=run_ended", FINAL_ENDS);
        g.stop = true;
        pthread_cond_broadcast(&g.cv);
        pthread_mutex_unlock(&g.mu);
        ok(more, "serve kill load: the last serve ends runs under load");
    }
    for (int c = 0; c < client_count; c++)
        pthread_join(clients[c], NULL);
    if (up) {
        bool drained = true;
        char detail[600] = "";
        for (int f = 0; f < FLOWS; f++) {
            char id[16];
            sfmt(id, sizeof id, "f%d", f);
            struct cli_opts opts = {.timeout_ms = WAIT_MS};
            struct proc_result r = cli_run(g.h.home, &opts, ARGS("flow", "drain", id));
            if (!proc_exited_with(&r, 0)) {
                drained = false;
                sfmt(detail, sizeof detail, "drain %s: %s %s", id, proc_describe(&r), r.err);
            }
            proc_result_free(&r);
            if (!drained)
                break; /* one wait's bound is enough to say it */
        }
        check(drained, "serve kill load: every flow drains on the last serve", "%s; log %.1500s",
              detail, g.tail);
        int code = serve_end(&s, SIGTERM);
        check(code == 0, "serve kill load: the last serve stops with exit 0 on SIGTERM",
              "exit %d; log %.800s", code, g.tail);
    }

    sqlite3 *db = store_ro();
    if (db == NULL) {
        fail("serve kill load: the store opens for the checks", "%s", g.h.db);
        return harness_finish();
    }
    check_runs_against_requests(db);
    check_ends(db);
    check_effects(db);
    check_kv(db);
    sqlite3_close(db);
    free(g.ended_ids);
    harness_remove_tree(root);
    return harness_finish();
}
