/* The parent accepts a worker only on a truthful Welcome and the kernel's own view (src/supervisor/worker_check.c).
 *
 * The real parent (ck-basal worker-check) is driven against the real worker, against
 * the worker under a Landlock-less kernel (ENOSYS injected into both by the launcher),
 * and against fake_worker, which sends a lying Welcome and is not confined at all.
 * welcome_acceptable() is also checked directly for every rule. */
#include "supervisor/kernel_facts.h"
#include "supervisor/worker_check.h"
#include "lib/cli_home.h"
#include "lib/harness.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[HARNESS_TMP_ROOT_MAX + 32]; /* $TMPDIR/basal-welcome-XXXXXX */

/* A wrapper script the parent runs as its worker (BASAL_TEST_WORKER, test builds
 * only); the parent starts it with an empty environment, so it names everything by
 * absolute path. */
static const char *write_wrapper(const char *name, const char *command)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "we");
    if (f == NULL)
        return NULL;
    fprintf(f, "#!/bin/sh\nexec %s \"$@\"\n", command);
    fclose(f);
    chmod(path, 0700);
    return path;
}

static char *env_for(const char *worker)
{
    static char entry[512];
    snprintf(entry, sizeof entry, "BASAL_TEST_WORKER=%s", worker);
    return entry;
}

/* Runs the test build of ck-basal with argv, its worker replaced by `worker` if set. */
static struct proc_result run_parent(const char *worker, const char *const extra[])
{
    const char *argv[12];
    size_t n = 0;
    argv[n++] = harness_test_parent();
    for (size_t i = 0; extra[i] != NULL && n < 11; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    char *envp[] = {worker != NULL ? env_for(worker) : NULL, NULL};
    struct proc_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.envp = envp;
    return proc_run_opts(argv, &opts, NULL, 0, 20000);
}

static long json_int(json_t *root, const char *a, const char *b)
{
    json_t *v = json_object_get(root, a);
    if (b != NULL)
        v = json_object_get(v, b);
    return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

static void real_worker_applies_min_abi(void)
{
    /* Guard: Welcome's applied ABI equals min(kernel ABI, worker's highest). */
    const char *args[] = {"--json", "worker-check", NULL};
    struct proc_result r = run_parent(NULL, args);
    json_t *root = cli_output_json(&r);
    int kernel = kernel_landlock_abi();
    long want = kernel > 0 ? (long)expected_landlock_abi((unsigned)kernel) : 0;
    check(proc_exited_with(&r, 0) && root != NULL, "welcome: real worker accepted by worker-check",
          "%s", proc_describe(&r));
    check(kernel > 0, "welcome: this kernel has Landlock (ABI %d)", "kernel ABI %d", kernel);
    check(json_int(root, "welcome", "landlock_applied_abi") == want,
          "welcome: applied Landlock ABI == min(kernel ABI, 7)", "applied %ld, want %ld",
          json_int(root, "welcome", "landlock_applied_abi"), want);
    check(json_int(root, "welcome", "landlock_runtime_abi") == kernel,
          "welcome: runtime Landlock ABI == the kernel's", "runtime %ld, kernel %d",
          json_int(root, "welcome", "landlock_runtime_abi"), kernel);
    check(json_int(root, "kernel_view", "seccomp") == 2 &&
              json_int(root, "kernel_view", "no_new_privs") == 1 &&
              json_int(root, "kernel_view", "threads") == 1,
          "welcome: kernel view of the accepted worker is Seccomp 2, NoNewPrivs 1, Threads 1",
          "%s", r.out);
    json_decref(root);
    proc_result_free(&r);
}

/* The fake names its pid on stderr, which the parent shows for a refused worker. */
static pid_t fake_pid(const char *parent_output)
{
    const char *at = strstr(parent_output, "fake-worker pid ");
    return at != NULL ? (pid_t)strtol(at + strlen("fake-worker pid "), NULL, 10) : -1;
}

/* The fake must be gone when ck-basal returns: it never exits by itself, so only the
 * parent's kill can have ended it (and the parent reaped it before returning). */
static void check_fake_killed(const char *parent_output, const char *name)
{
    pid_t pid = fake_pid(parent_output);
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/%d", (int)pid);
    bool gone = pid > 0 && access(proc, F_OK) != 0;
    check(gone, name, "fake worker pid %d still exists", (int)pid);
    if (!gone && pid > 0)
        kill(pid, SIGKILL);
}

static void refuses_fake(const char *label, const char *fake_args, const char *reason_part,
                         const char *guard)
{
    char command[1024], name[256];
    snprintf(command, sizeof command, "%s %s", harness_path("test/tools/fake_worker"), fake_args);
    const char *wrapper = write_wrapper("fake.sh", command);
    const char *args[] = {"worker-check", NULL};
    struct proc_result r = run_parent(wrapper, args);
    snprintf(name, sizeof name, "welcome: parent refuses %s [guard: %s]", label, guard);
    check(proc_exited_with(&r, 1) && strstr(r.out, reason_part) != NULL, name, "%s / %s",
          proc_describe(&r), r.out);
    snprintf(name, sizeof name, "welcome: parent kills the worker it refused (%s)", label);
    check_fake_killed(r.out, name);
    proc_result_free(&r);
}

static void optional_policy_without_landlock(void)
{
    /* The launcher's ENOSYS filter is inherited by the parent and its worker: both
     * see a kernel without Landlock. */
    const char *launch = harness_launcher();
    const char *parent = harness_test_parent();
    const char *argv_opt[] = {launch, "--inject=landlock_create_ruleset:ENOSYS", "--", parent,
                              "--json", "worker-check", "--landlock=optional", NULL};
    struct proc_result r = proc_run(argv_opt, NULL, 0, 20000);
    json_t *root = cli_output_json(&r);
    check(proc_exited_with(&r, 0) && root != NULL &&
              json_int(root, "welcome", "landlock_applied_abi") == 0,
          "welcome: optional policy accepts a worker without Landlock on a kernel without it",
          "%s / %s", proc_describe(&r), r.out);
    json_decref(root);
    proc_result_free(&r);

    const char *argv_req[] = {launch, "--inject=landlock_create_ruleset:ENOSYS", "--", parent,
                              "worker-check", "--landlock=required", NULL};
    r = proc_run(argv_req, NULL, 0, 20000);
    check(proc_exited_with(&r, 1) &&
              strstr(r.out, "refusing to run unconfined: landlock-unavailable") != NULL,
          "welcome: required policy on a kernel without Landlock: the worker refuses and the "
          "parent reports it [guard: landlock-unavailable]",
          "%s / %s", proc_describe(&r), r.out);
    proc_result_free(&r);
}

static void optional_policy_does_not_accept_missing_landlock_when_kernel_has_it(void)
{
    /* Only the worker is injected: the parent sees the real kernel's Landlock, so a
     * worker that ran without it must be refused even under the optional policy. */
    char command[1024];
    snprintf(command, sizeof command, "%s --inject=landlock_create_ruleset:ENOSYS -- %s",
             harness_launcher(), harness_test_worker());
    const char *wrapper = write_wrapper("nolandlock.sh", command);
    const char *args[] = {"worker-check", "--landlock=optional", NULL};
    struct proc_result r = run_parent(wrapper, args);
    check(proc_exited_with(&r, 1) && strstr(r.out, "refused: Welcome reports kernel Landlock ABI 0") != NULL,
          "welcome: optional policy refuses a worker without Landlock when the kernel has it "
          "[guard: landlock only optional when unavailable]",
          "%s / %s", proc_describe(&r), r.out);
    proc_result_free(&r);
}

static void faked_seccomp_load_refused(void)
{
    /* Guard: the parent counts seccomp filters. Under a filter of the parent's that
     * fakes the worker's own seccomp() load (returns 0, installs nothing), the worker
     * would report seccomp and the kernel would show Seccomp 2 from the inherited
     * filter; only the filter count tells. The launcher's filter is the parent's. */
    const char *launch_argv[] = {harness_launcher(), "--inject=seccomp:0:0=1:2!=0", "--",
                                 harness_test_parent(), "worker-check", NULL};
    struct proc_result r = proc_run(launch_argv, NULL, 0, 20000);
    check(proc_exited_with(&r, 1) && strstr(r.out, "seccomp filters") != NULL,
          "welcome: parent refuses a worker whose seccomp load was faked under an inherited "
          "filter [guard: Seccomp_filters == parent's + 1]",
          "%s / %s", proc_describe(&r), r.out);
    proc_result_free(&r);
    /* Control: under an inherited filter that fakes nothing the worker uses (acct), a
     * real load is accepted. */
    const char *control_argv[] = {harness_launcher(), "--inject=acct:EPERM", "--",
                                  harness_test_parent(), "worker-check", NULL};
    r = proc_run(control_argv, NULL, 0, 20000);
    check(proc_exited_with(&r, 0), "welcome: control: under an inherited filter a really "
          "confined worker is accepted", "%s / %s", proc_describe(&r), r.out);
    proc_result_free(&r);
}

static struct proto_welcome good_welcome(unsigned kernel)
{
    struct proto_welcome w;
    memset(&w, 0, sizeof w);
    w.protocol_version = PROTO_VERSION;
    w.os = proto_text_of("linux");
    w.seccomp = true;
    w.landlock_policy = LANDLOCK_POLICY_REQUIRED;
    w.landlock_runtime_abi = kernel;
    w.landlock_applied_abi = expected_landlock_abi(kernel);
    return w;
}

static void pure_rules(void)
{
    char why[256];
    struct proto_welcome w = good_welcome(7);
    check(welcome_acceptable(&w, LANDLOCK_POLICY_REQUIRED, 7, why, sizeof why),
          "welcome rule: a truthful Welcome is accepted", "%s", why);
    w = good_welcome(9);
    check(w.landlock_applied_abi == LANDLOCK_ABI_KNOWN &&
              welcome_acceptable(&w, LANDLOCK_POLICY_REQUIRED, 9, why, sizeof why),
          "welcome rule: on a newer kernel the applied ABI is the worker's highest", "%s", why);
    w = good_welcome(7);
    w.landlock_applied_abi = 6;
    check(!welcome_acceptable(&w, LANDLOCK_POLICY_REQUIRED, 7, why, sizeof why),
          "welcome rule: an applied ABI below min(kernel, known) is refused", "accepted");
    w = good_welcome(7);
    w.landlock_applied_abi = 0;
    check(!welcome_acceptable(&w, LANDLOCK_POLICY_OPTIONAL, 7, why, sizeof why),
          "welcome rule: optional policy still needs Landlock when the kernel has it", "accepted");
    w = good_welcome(0);
    check(!welcome_acceptable(&w, LANDLOCK_POLICY_REQUIRED, 0, why, sizeof why),
          "welcome rule: required policy refuses a kernel without Landlock", "accepted");
    w.landlock_policy = LANDLOCK_POLICY_OPTIONAL;
    check(welcome_acceptable(&w, LANDLOCK_POLICY_OPTIONAL, 0, why, sizeof why),
          "welcome rule: optional policy accepts no Landlock on a kernel without it", "%s", why);
    w = good_welcome(7);
    w.seccomp = false;
    check(!welcome_acceptable(&w, LANDLOCK_POLICY_REQUIRED, 7, why, sizeof why),
          "welcome rule: no seccomp is refused", "accepted");
    w = good_welcome(7);
    w.protocol_version = PROTO_VERSION + 1;
    check(!welcome_acceptable(&w, LANDLOCK_POLICY_REQUIRED, 7, why, sizeof why),
          "welcome rule: another protocol version is refused", "accepted");
    w = good_welcome(7);
    w.os = proto_text_of("darwin");
    check(!welcome_acceptable(&w, LANDLOCK_POLICY_REQUIRED, 7, why, sizeof why),
          "welcome rule: another os is refused", "accepted");
    w = good_welcome(7);
    w.landlock_policy = LANDLOCK_POLICY_OPTIONAL;
    check(!welcome_acceptable(&w, LANDLOCK_POLICY_REQUIRED, 7, why, sizeof why),
          "welcome rule: a Welcome naming another policy is refused", "accepted");
    /* A macOS Welcome is accepted only by a macOS parent: Seatbelt and even seccomp
     * reported do not make it one of Linux's. */
    w = good_welcome(7);
    w.os = proto_text_of("macos");
    w.seatbelt = true;
    check(!welcome_acceptable(&w, LANDLOCK_POLICY_REQUIRED, 7, why, sizeof why) &&
              strstr(why, "os 'macos', this is linux") != NULL,
          "welcome rule: a Linux parent refuses a macOS Welcome with Seatbelt (and seccomp)",
          "%s", why);
    w = good_welcome(7);
    w.seatbelt = true;
    check(welcome_acceptable(&w, LANDLOCK_POLICY_REQUIRED, 7, why, sizeof why),
          "welcome rule: control: a Linux Welcome that also says seatbelt is judged as Linux's",
          "%s", why);
    struct proc_status s = {2, 1, 1, 1};
    check(status_acceptable(&s, 0, why, sizeof why),
          "status rule: Seccomp 2, NoNewPrivs 1, Threads 1, one own filter accepted", "%s", why);
    s.threads = 2;
    check(!status_acceptable(&s, 0, why, sizeof why), "status rule: two threads refused", "accepted");
    s.threads = 1;
    s.seccomp = 0;
    check(!status_acceptable(&s, 0, why, sizeof why), "status rule: Seccomp 0 refused", "accepted");
    s.seccomp = 2;
    s.no_new_privs = 0;
    check(!status_acceptable(&s, 0, why, sizeof why), "status rule: NoNewPrivs 0 refused", "accepted");
    s.no_new_privs = 1;
    check(!status_acceptable(&s, 1, why, sizeof why),
          "status rule: only the parent's inherited filter (worker's own missing) refused", "accepted");
    s.seccomp_filters = 2;
    check(status_acceptable(&s, 1, why, sizeof why),
          "status rule: the parent's filter plus the worker's own accepted", "%s", why);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/basal-welcome-XXXXXX", harness_tmp_root());
    if (mkdtemp(tmpdir) == NULL) {
        fail("welcome: temp dir", "%s", strerror(errno));
        return harness_finish();
    }
    pure_rules();
    if (require_binary(harness_test_parent(), "welcome: test parent built") &&
        require_binary(harness_path("test/tools/fake_worker"), "welcome: fake worker built") &&
        require_binary(harness_launcher(), "welcome: launcher built")) {
        real_worker_applies_min_abi();
        refuses_fake("a Welcome that claims a lower Landlock ABI", "--applied=1",
                     "applied, expected", "applied ABI == min(kernel, known)");
        refuses_fake("a Welcome without seccomp", "--seccomp=0", "no seccomp",
                     "Welcome must report seccomp");
        refuses_fake("a Welcome with another protocol version", "--version=9",
                     "protocol version", "protocol version");
        refuses_fake("a Welcome claiming os macos with Seatbelt and seccomp", "--os=macos --seatbelt=1",
                     "os 'macos', this is linux", "a Linux parent accepts only os linux");
        refuses_fake("a truthful-looking Welcome from an unconfined process", "",
                     "Seccomp 0", "kernel view /proc/<pid>/status");
        optional_policy_without_landlock();
        faked_seccomp_load_refused();
        optional_policy_does_not_accept_missing_landlock_when_kernel_has_it();
    }
    static const char *const wrappers[] = {"fake.sh", "nolandlock.sh"};
    for (size_t i = 0; i < sizeof wrappers / sizeof wrappers[0]; i++) {
        char path[300];
        snprintf(path, sizeof path, "%s/%s", tmpdir, wrappers[i]);
        unlink(path);
    }
    if (rmdir(tmpdir) != 0)
        harness_note("could not remove %s: %s", tmpdir, strerror(errno));
    return harness_finish();
}
