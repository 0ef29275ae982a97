/* The store's files beside SQLite's locks (issue 23 section 1; store/store.h):
 *
 *   1. the kernel fact the store relies on: closing an O_PATH descriptor of a file leaves
 *      the process's POSIX locks on it alone, closing an ordinary one drops them (the
 *      control, which also shows the probe sees a lock) [guard: prepare_file and
 *      narrow_companions look through O_PATH only];
 *   2. a running serve still holds its SQLite lock on basal.db (in /proc/locks) after it
 *      answered ops requests (each opens the store) and other processes opened and closed
 *      the store (the sqlite3 shell, ck-basal commands) [guard: prepare_file opens no
 *      ordinary descriptor of basal.db];
 *   3. under load: serve drives runs with durable effects (kv.set, runs admitted with
 *      `ck-basal run`, scheduled instants fired on the test clock) while another process
 *      keeps opening the store (every CLI command that does, sqlite3 reads, the sqlite3
 *      shell's .backup, ck-basal backup); then SIGKILL and a new serve: every
 *      acknowledged write is there, no run is driven again, no instant fires again, and
 *      PRAGMA integrity_check is ok [guard: the same];
 *   4. ck-basal backup while serve runs: a new 0600 file that opens with integrity_check
 *      ok and holds the acknowledged writes; an existing DEST is refused and left as it
 *      was [guard: store_backup_copy's RENAME_NOREPLACE].
 * Every wait is on an event (serve's log, a reply, the disturber's stdout), never a sleep. */
#include "lib/harness.h"
#include "lib/serve_home.h"
#include "lib/store_view.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 120000
#define MANUAL_RUNS 40
#define TICKS 6
#define DISTURB_ROUNDS 6

static char g_root[PATH_MAX];

/* ---- 1. the kernel fact ------------------------------------------------------------ */

/* Whether another process can take a write lock on path's first byte (F_GETLK from a
 * child: a process never conflicts with its own locks). 1 free, 0 locked, -1 error. */
static int lock_free_from_outside(const char *path)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
        if (fd < 0 || fcntl(fd, F_GETLK, &fl) != 0)
            _exit(2);
        _exit(fl.l_type == F_UNLCK ? 1 : 0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) > 1)
        return -1;
    return WEXITSTATUS(status);
}

static void test_kernel_fact(void)
{
    char path[PATH_MAX + 16];
    sfmt(path, sizeof path, "%s/lockfile", g_root);
    if (!write_text_file(path, "x", 0600)) {
        fail("store locks: a scratch file", "%s", path);
        return;
    }
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    if (fd < 0 || fcntl(fd, F_SETLK, &fl) != 0) {
        fail("store locks: a POSIX lock on the scratch file", "%s", strerror(errno));
        return;
    }
    check(lock_free_from_outside(path) == 0,
          "store locks: the probe sees this process's POSIX lock from another process (control)",
          "%s", "not seen");
    int path_fd = open(path, O_PATH | O_CLOEXEC);
    struct stat st;
    bool looked = path_fd >= 0 && fstat(path_fd, &st) == 0 && S_ISREG(st.st_mode);
    if (path_fd >= 0)
        close(path_fd);
    check(looked && lock_free_from_outside(path) == 0,
          "store locks: fstat through an O_PATH descriptor and its close leave the lock held "
          "[guard: the store looks at basal.db through O_PATH only]",
          "looked %d, lock %s", looked, lock_free_from_outside(path) == 0 ? "held" : "gone");
    int plain = open(path, O_RDONLY | O_CLOEXEC);
    if (plain >= 0)
        close(plain);
    check(plain >= 0 && lock_free_from_outside(path) == 1,
          "store locks: closing an ordinary descriptor of the file drops the lock (control: "
          "why the store must not)",
          "%s", "the lock survived");
    close(fd);
}

/* ---- /proc/locks ---------------------------------------------------------------- */

/* How many POSIX locks pid holds on path (from /proc/locks, by device and inode). */
static int posix_locks_of(pid_t pid, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    FILE *f = fopen("/proc/locks", "re");
    if (f == NULL)
        return -1;
    char line[256];
    int n = 0;
    /* "1: POSIX  ADVISORY  READ 1234 08:01:5678 1073741826 1073742335"; a waiter's line
     * has "->" after the number: not a holder. */
    while (fgets(line, sizeof line, f) != NULL) {
        char *save = NULL, *tok[6];
        int count = 0;
        for (char *t = strtok_r(line, " \t\n", &save); t != NULL && count < 6;
             t = strtok_r(NULL, " \t\n", &save))
            tok[count++] = t;
        if (count < 6 || strcmp(tok[1], "POSIX") != 0)
            continue;
        char *end = NULL;
        long lpid = strtol(tok[4], &end, 10);
        if (*end != '\0' || lpid != (long)pid)
            continue;
        unsigned long maj = strtoul(tok[5], &end, 16), min = 0, ino = 0;
        if (*end == ':')
            min = strtoul(end + 1, &end, 16);
        if (*end == ':')
            ino = strtoul(end + 1, &end, 10);
        if (*end == '\0' && maj == major(st.st_dev) && min == minor(st.st_dev) &&
            ino == (unsigned long)st.st_ino)
            n++;
    }
    fclose(f);
    return n;
}

static struct proc_result sqlite_shell(const struct test_home *h, const char *sql)
{
    const char *argv[] = {"/usr/bin/sqlite3", h->db, sql, NULL};
    return proc_run(argv, NULL, 0, TIMEOUT_MS);
}

static void test_serve_keeps_its_lock(void)
{
    struct test_home h;
    test_home_begin(&h, g_root, "lock");
    if (!require_binary("/usr/bin/sqlite3", "store locks: the sqlite3 shell (scripts/install-deps.sh --test)"))
        return;
    /* The probe on a connection of this process first (control). */
    sqlite3 *db = NULL;
    bool mine = sqlite3_open_v2(h.db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
                sqlite3_exec(db, "SELECT count(*) FROM runs", NULL, NULL, NULL) == SQLITE_OK &&
                posix_locks_of(getpid(), h.db) > 0;
    sqlite3_close(db);
    check(mine, "store locks: /proc/locks shows a WAL connection's lock on basal.db (control)",
          "%s", "no lock of this process found");

    struct test_serve s;
    if (!check(test_serve_start(&s, &h, NULL, NULL), "store locks: serve starts", "%.300s",
               s.log))
        return;
    int at_start = posix_locks_of(s.p.pid, h.db);
    for (int i = 0; i < 3; i++) {
        /* Through the socket: serve opens the store for the request. */
        struct proc_result r = test_home_cli(&h, false, ARGS("runs"));
        proc_result_free(&r);
        r = test_home_cli(&h, false, ARGS("flow", "list"));
        proc_result_free(&r);
        /* Beside serve: other processes open and close the store. */
        r = test_home_cli(&h, false, ARGS("setup"));
        proc_result_free(&r);
        r = sqlite_shell(&h, "SELECT count(*) FROM runs");
        proc_result_free(&r);
    }
    int after = posix_locks_of(s.p.pid, h.db);
    check(at_start > 0 && after > 0,
          "store locks: serve still holds its lock on basal.db after ops requests and other "
          "processes opened and closed the store [guard: prepare_file through O_PATH]",
          "serve's locks on basal.db: %d at start, %d after", at_start, after);
    test_serve_stop(&s);
}

/* ---- 3 and 4. under load ---------------------------------------------------------- */

static long long real_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The disturber: every command that opens the store, in a loop, one line on stdout per
 * round, until the stop file exists. `recover` goes to the running serve (it drove
 * serve's own pending runs beside it before issue 23 section 5), and after the SIGKILL,
 * with no serve, drives what the dead one left itself. */
static const char *disturber_script(const struct test_home *h, const char *stop)
{
    static char text[8192];
    sfmt(text, sizeof text,
         "set -u\n"
         "ck='%s'; home='%s'; db='%s'; scratch='%s'\n"
         "i=0\n"
         "while [ ! -e '%s' ]; do\n"
         "  \"$ck\" --home \"$home\" runs >/dev/null 2>&1\n"
         "  \"$ck\" --home \"$home\" flow list >/dev/null 2>&1\n"
         "  \"$ck\" --home \"$home\" flow dry-run w --version 1 --trigger '{\"n\":0}' >/dev/null 2>&1\n"
         "  \"$ck\" --home \"$home\" setup >/dev/null 2>&1\n"
         "  \"$ck\" --home \"$home\" health >/dev/null 2>&1\n"
         "  \"$ck\" --home \"$home\" recover --landlock=optional >/dev/null 2>&1\n"
         "  sqlite3 \"$db\" 'SELECT count(*) FROM runs; SELECT count(*) FROM kv' >/dev/null 2>&1\n"
         "  rm -f \"$scratch/shell-copy.db\" \"$scratch/ck-copy.db\"\n"
         "  sqlite3 \"$db\" \".backup '$scratch/shell-copy.db'\" >/dev/null 2>&1\n"
         "  \"$ck\" --home \"$home\" backup \"$scratch/ck-copy.db\" >/dev/null 2>&1\n"
         "  i=$((i + 1)); echo \"round $i\"\n"
         "done\n",
         harness_test_parent(), h->home, h->db, h->dir, stop);
    return text;
}

/* Reads the disturber's stdout until it has printed want rounds in all; false on EOF or
 * timeout. */
static bool rounds_reached(struct proc *d, int *seen, int want)
{
    static char buf[4096];
    static size_t len;
    while (*seen < want) {
        struct pollfd p = {d->out_fd, POLLIN, 0};
        if (poll(&p, 1, TIMEOUT_MS) <= 0)
            return false;
        ssize_t n = read(d->out_fd, buf + len, sizeof buf - 1 - len);
        if (n <= 0)
            return false;
        len += (size_t)n;
        buf[len] = '\0';
        char *nl;
        while ((nl = strchr(buf, '\n')) != NULL) {
            (*seen)++;
            size_t rest = len - (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, rest + 1);
            len = rest;
        }
    }
    return true;
}

static bool integrity_ok(const char *db_path, char *got, size_t cap)
{
    char *v = store_text(db_path, "PRAGMA integrity_check");
    sfmt(got, cap, "%s", v != NULL ? v : "cannot open or read");
    bool good = v != NULL && strcmp(v, "ok") == 0;
    free(v);
    return good;
}

/* Every acknowledged manual run is succeeded with its kv key, driven once. */
static bool acknowledged_present(const char *db_path, const long long *runs, int count, char *why,
                                 size_t cap)
{
    for (int i = 0; i < count; i++) {
        char sql[256];
        sfmt(sql, sizeof sql, "SELECT count(*) FROM runs WHERE id = %lld AND state = 'succeeded'",
             runs[i]);
        if (store_number(db_path, sql) != 1) {
            sfmt(why, cap, "run %lld (n=%d) is not succeeded", runs[i], i + 1);
            return false;
        }
        sfmt(sql, sizeof sql, "SELECT count(*) FROM kv WHERE flow_id = 'w' AND key = 'k%d' AND "
                              "value = '%d'", i + 1, i + 1);
        if (store_number(db_path, sql) != 1) {
            sfmt(why, cap, "kv k%d of run %lld is missing", i + 1, runs[i]);
            return false;
        }
        sfmt(sql, sizeof sql, "SELECT count(*) FROM activations WHERE run_id = %lld", runs[i]);
        if (store_number(db_path, sql) != 1) {
            sfmt(why, cap, "run %lld has %lld activations", runs[i], store_number(db_path, sql));
            return false;
        }
    }
    return true;
}

static void test_under_load(void)
{
    struct test_home h;
    test_home_begin(&h, g_root, "load");
    bool made =
        test_home_flow(&h, "w", 1, "{\"manual\":true}",
                       "const n = trigger.n;\n"
                       "await kv.set('k' + n, n);\n"
                       "return n;\n") &&
        test_home_flow(&h, "tick", 1,
                       "{\"schedule\":{\"cron\":\"* * * * *\",\"missed\":\"each\",\"each_cap\":50}}",
                       "await kv.set('t' + trigger.scheduled_at, 1);\nreturn 1;\n");
    if (!check(made, "store locks: a manual and a scheduled flow installed and approved", "%s",
               "no"))
        return;
    long long start_ms = real_now_ms();
    long long first = (start_ms / 1000 / 60 + 1) * 60; /* the first instant, in s */
    char clock[64];
    sfmt(clock, sizeof clock, "BASAL_TEST_CLOCK_MS=%lld", start_ms);
    const char *env[] = {clock, NULL};
    struct test_serve s;
    if (!check(test_serve_start(&s, &h, NULL, env), "store locks: serve starts on a test clock",
               "%.300s", s.log))
        return;

    char stop[PATH_MAX + 16], script[PATH_MAX + 16];
    sfmt(stop, sizeof stop, "%s/stop", h.dir);
    sfmt(script, sizeof script, "%s/disturb.sh", h.dir);
    write_text_file(script, disturber_script(&h, stop), 0700);
    const char *dargv[] = {"/bin/bash", script, NULL};
    struct proc d;
    if (proc_start(&d, dargv, NULL) != 0) {
        fail("store locks: the disturber starts", "%s", strerror(errno));
        return;
    }
    int rounds = 0;

    long long acked[MANUAL_RUNS];
    int acked_count = 0, ticks = 0;
    bool runs_ok = true;
    for (int i = 1; i <= MANUAL_RUNS && runs_ok; i++) {
        char trig[32];
        sfmt(trig, sizeof trig, "{\"n\":%d}", i);
        struct proc_result r = test_home_cli(&h, true, ARGS("run", "w", "--trigger", trig));
        json_t *o = cli_output_json(&r);
        json_t *run = json_object_get(o, "run");
        if (proc_exited_with(&r, 0) && json_is_integer(run))
            acked[acked_count++] = json_integer_value(run);
        else
            runs_ok = false;
        if (!runs_ok)
            harness_note("run %d: %s %s", i, proc_describe(&r), r.out);
        json_decref(o);
        proc_result_free(&r);
        /* Every few runs a scheduled instant, and the disturber at least a round on. */
        if (i % (MANUAL_RUNS / TICKS) == 0 && ticks < TICKS) {
            /* Acknowledged once its run ended (the look only admits it). */
            char ended[128];
            long long tick_run = -1;
            if (test_serve_clock(&h, (first + 60LL * ticks) * 1000 + 500)) {
                tick_run = test_home_sql(&h, "SELECT max(id) FROM runs WHERE flow_id = 'tick'");
                sfmt(ended, sizeof ended, "event=run_ended run=%lld flow=tick state=succeeded ",
                     tick_run);
            }
            if (tick_run > 0 && test_serve_wait_log(&s, ended, TIMEOUT_MS))
                ticks++;
            else
                runs_ok = false;
            if (!rounds_reached(&d, &rounds, rounds + 1))
                runs_ok = false;
        }
    }
    bool disturbed = rounds_reached(&d, &rounds, DISTURB_ROUNDS);
    check(runs_ok && acked_count == MANUAL_RUNS && ticks == TICKS && disturbed,
          "store locks: serve ran every run and fired every instant while another process "
          "opened the store again and again",
          "%d runs acknowledged, %d ticks, %d disturber rounds", acked_count, ticks, rounds);

    /* 4. The backup while serve runs. */
    char copy[PATH_MAX + 16];
    sfmt(copy, sizeof copy, "%s/backup.db", h.dir);
    struct proc_result b = test_home_cli(&h, false, ARGS("backup", copy));
    struct stat st;
    char integrity[256], why[256] = "";
    bool copied = proc_exited_with(&b, 0) && stat(copy, &st) == 0 && (st.st_mode & 07777) == 0600;
    check(copied && integrity_ok(copy, integrity, sizeof integrity) &&
              acknowledged_present(copy, acked, acked_count, why, sizeof why),
          "store locks: ck-basal backup while serve runs: a 0600 file, integrity_check ok, every "
          "acknowledged write in it",
          "%s %s; mode %o; integrity %s; %s", proc_describe(&b), b.err, st.st_mode & 07777,
          integrity, why);
    proc_result_free(&b);
    b = test_home_cli(&h, false, ARGS("backup", copy));
    struct stat again;
    check(proc_exited_with(&b, 1) && strstr(b.err, "already exists") != NULL &&
              stat(copy, &again) == 0 && again.st_ino == st.st_ino &&
              again.st_size == st.st_size,
          "store locks: ck-basal backup refuses an existing DEST and leaves it as it was "
          "[guard: RENAME_NOREPLACE]",
          "%s %s", proc_describe(&b), b.err);
    proc_result_free(&b);

    /* SIGKILL while the disturber still runs, then stop it. */
    kill(s.p.pid, SIGKILL);
    (void)test_serve_end(&s, TIMEOUT_MS);
    write_text_file(stop, "", 0600);
    struct proc_result dr = proc_finish(&d, NULL, 0, TIMEOUT_MS);
    proc_result_free(&dr);

    struct test_serve s2;
    const char *env2_entries[2];
    char clock2[64];
    sfmt(clock2, sizeof clock2, "BASAL_TEST_CLOCK_MS=%lld", (first + 60LL * (TICKS - 1)) * 1000 + 500);
    env2_entries[0] = clock2;
    env2_entries[1] = NULL;
    if (!check(test_serve_start(&s2, &h, NULL, env2_entries),
               "store locks: a new serve starts after the SIGKILL", "%.300s", s2.log))
        return;
    bool looked = test_serve_clock(&h, (first + 60LL * (TICKS - 1)) * 1000 + 500);
    why[0] = '\0';
    check(looked && acknowledged_present(h.db, acked, acked_count, why, sizeof why),
          "store locks: after the SIGKILL every acknowledged run is succeeded with its kv write, "
          "driven once [guard: serve keeps its lock on basal.db]",
          "%s", why);
    long long tick_runs = store_number(h.db, "SELECT count(*) FROM runs WHERE flow_id = 'tick'");
    long long tick_kv = store_number(h.db, "SELECT count(*) FROM kv WHERE flow_id = 'tick'");
    int refired = test_serve_log_count(&s2, "event=schedule_fired") -
                  test_serve_log_count(&s2, "fire=admitted_before");
    check(tick_runs == TICKS && tick_kv == TICKS && refired == 0 &&
              test_serve_log_count(&s2, "event=run_started") == 0,
          "store locks: no instant fired again and no run was driven again by the new serve",
          "%lld tick runs, %lld tick kv rows (want %d), %d instants fired again; log %.400s",
          tick_runs, tick_kv, TICKS, refired, s2.log);
    check(integrity_ok(h.db, integrity, sizeof integrity),
          "store locks: PRAGMA integrity_check is ok after the SIGKILL and restart", "%s",
          integrity);
    check_int_eq(test_serve_stop(&s2), 0, "store locks: the new serve stops with exit 0");
    check(integrity_ok(h.db, integrity, sizeof integrity),
          "store locks: PRAGMA integrity_check is ok after the new serve stopped", "%s",
          integrity);
}

int main(void)
{
    const char *root = harness_tmpdir("store-locks");
    if (root == NULL)
        return harness_finish();
    sfmt(g_root, sizeof g_root, "%s", root);
    if (!require_binary(harness_test_parent(), "store locks: the test ck-basal"))
        return harness_finish();
    test_kernel_fact();
    test_serve_keeps_its_lock();
    test_under_load();
    harness_remove_tree(g_root);
    return harness_finish();
}
