/* ck-basal worker-check: start one confined worker, check it exactly as the pool
 * does before any flow code, and show what was checked. */
#include "cli/commands.h"
#include "cli/term_text.h"
#include "base/json_out.h"
#include "supervisor/worker_check.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char *policy_name(enum landlock_policy policy)
{
    return policy == LANDLOCK_POLICY_OPTIONAL ? "optional" : "required";
}

static void print_json(const struct worker_report *r, enum landlock_policy policy)
{
    json_t *root = json_object();
    json_object_set_new(root, "accepted", json_boolean(r->accepted));
    json_object_set_new(root, "policy", json_string(policy_name(policy)));
    if (!r->accepted)
        json_object_set_new(root, "reason", json_string(r->reason));
    json_object_set_new(root, "kernel_landlock_abi", json_integer(r->kernel_landlock_abi));
    if (r->have_welcome) {
        json_t *w = json_object();
        json_object_set_new(w, "protocol_version", json_integer(r->protocol_version));
        json_object_set_new(w, "engine", json_string(r->engine));
        json_object_set_new(w, "worker_version", json_string(r->worker_version));
        json_object_set_new(w, "os", json_string(r->os));
        json_object_set_new(w, "seccomp", json_boolean(r->seccomp));
        json_object_set_new(w, "landlock_policy", json_string(policy_name(r->landlock_policy)));
        json_object_set_new(w, "landlock_runtime_abi", json_integer(r->landlock_runtime_abi));
        json_object_set_new(w, "landlock_applied_abi", json_integer(r->landlock_applied_abi));
        json_object_set_new(root, "welcome", w);
    }
    if (r->have_status) {
        json_t *s = json_object();
        json_object_set_new(s, "seccomp", json_integer(r->status.seccomp));
        json_object_set_new(s, "no_new_privs", json_integer(r->status.no_new_privs));
        json_object_set_new(s, "threads", json_integer(r->status.threads));
        json_object_set_new(s, "seccomp_filters", json_integer(r->status.seccomp_filters));
        json_object_set_new(s, "parent_seccomp_filters", json_integer(r->parent_seccomp_filters));
        json_object_set_new(root, "kernel_view", s);
    }
    if (r->worker_log[0] != '\0')
        json_object_set_new(root, "worker_log", json_string(r->worker_log));
    (void)json_out_line(stdout, root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
}

/* The Welcome's texts, the reason quoting them and the worker's log are the worker's
 * choice: escaped (cli/term_text.h); the log keeps its line breaks, each line after
 * the first marked "            | " so none can pass for one of ours. */
static void print_human(const struct worker_report *r, enum landlock_policy policy, int pid)
{
    if (r->have_welcome) {
        printf("worker        pid %d, ", pid);
        term_puts(stdout, r->engine, 0);
        fputs(", version ", stdout);
        term_puts(stdout, r->worker_version, 0);
        putchar('\n');
        printf("protocol      version %u\n", (unsigned)r->protocol_version);
        printf("seccomp       %s\n", r->seccomp ? "allowlist installed (kills on any other call)"
                                                : "NOT installed");
        if (r->landlock_applied_abi > 0)
            printf("landlock      empty ruleset at ABI %u (kernel ABI %u), policy %s\n",
                   r->landlock_applied_abi, r->landlock_runtime_abi, policy_name(policy));
        else
            printf("landlock      none (kernel ABI %d), policy %s\n", r->kernel_landlock_abi,
                   policy_name(policy));
    }
    if (r->have_status)
        printf("kernel view   Seccomp %d, NoNewPrivs %d, Threads %d, %d seccomp filter(s) "
               "(parent has %d) (/proc/%d/status)\n",
               r->status.seccomp, r->status.no_new_privs, r->status.threads,
               r->status.seccomp_filters, r->parent_seccomp_filters, pid);
    if (r->accepted) {
        printf("verdict       accepted: the worker is confined and may run flow code\n");
    } else {
        fputs("verdict       refused: ", stdout);
        term_puts(stdout, r->reason, 0);
        putchar('\n');
        if (r->worker_log[0] != '\0') {
            fputs("worker said   ", stdout);
            term_put_lines(stdout, r->worker_log, "            | ");
        }
    }
}

int cmd_worker_check(const struct cli_globals *globals, int argc, char **argv)
{
    enum landlock_policy policy = LANDLOCK_POLICY_REQUIRED;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--landlock=required") == 0) {
            policy = LANDLOCK_POLICY_REQUIRED;
        } else if (strcmp(argv[i], "--landlock=optional") == 0) {
            policy = LANDLOCK_POLICY_OPTIONAL;
        } else {
            fprintf(stderr, "ck-basal worker-check: unknown argument '%s' "
                            "(expected --landlock=required or --landlock=optional)\n", argv[i]);
            return EXIT_USAGE;
        }
    }
    struct worker_proc proc;
    struct worker_report report;
    bool accepted = worker_start_checked(policy, &proc, &report);
    int pid = accepted ? (int)proc.pid : 0;
    if (accepted) {
        /* The check is the whole job: end the worker cleanly, as the pool would. */
        worker_finish(&proc, 1000);
    }
    if (globals->json)
        print_json(&report, policy);
    else
        print_human(&report, policy, pid);
    return accepted ? EXIT_OK : EXIT_REFUSED;
}
