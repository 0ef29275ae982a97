/* ck-basal-worker: the confined QuickJS worker.
 *
 * Modes (anything else is a usage error, exit 64):
 *   --landlock=required | --landlock=optional   engine mode: confine, then serve
 *   --version                                   version and git revision
 *   --confinement-probe=NAME [--no-sandbox] [--probe-port=N]
 *                                               confine, then make one forbidden attempt
 * Test builds (BASAL_TEST_HOOKS) also accept --test-skip-seccomp in engine and probe
 * mode, and --test-profile=plain in engine mode (activations in QuickJS's full context,
 * without the lockdown prelude); release builds reject them like any unknown argument. */
#include "version.h"
#include "proto/confinement.h"
#include "worker/confine.h"
#include "worker/probes.h"
#include "worker/refuse.h"
#include "worker/serve.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage_exit(void)
{
    stderr_write("usage: ck-basal-worker --landlock=required|--landlock=optional\n"
                 "       ck-basal-worker --version\n"
                 "       ck-basal-worker --confinement-probe=NAME [--no-sandbox] [--probe-port=N]\n"
                 "The worker is started by ck-basal with three anonymous pipes; it refuses\n"
                 "(exit 70) to run in any environment it cannot confine itself in.\n");
    exit(WORKER_EXIT_USAGE);
}

struct worker_args {
    enum { MODE_NONE, MODE_ENGINE, MODE_VERSION, MODE_PROBE } mode;
    struct confine_options confine;
    struct serve_options serve;
    const char *probe;
    bool no_sandbox;
    int probe_port;
};

static int parse_port(const char *text)
{
    char *end;
    long port = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || port < 1 || port > 65535)
        usage_exit();
    return (int)port;
}

static void set_mode(struct worker_args *args, int mode)
{
    if (args->mode != MODE_NONE)
        usage_exit();
    args->mode = mode;
}

static struct worker_args parse_args(int argc, char **argv)
{
    struct worker_args args;
    memset(&args, 0, sizeof args);
    args.probe_port = 9;
    bool probe_options = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--landlock=required") == 0) {
            set_mode(&args, MODE_ENGINE);
            args.confine.landlock_policy = LANDLOCK_POLICY_REQUIRED;
        } else if (strcmp(arg, "--landlock=optional") == 0) {
            set_mode(&args, MODE_ENGINE);
            args.confine.landlock_policy = LANDLOCK_POLICY_OPTIONAL;
        } else if (strcmp(arg, "--version") == 0) {
            set_mode(&args, MODE_VERSION);
        } else if (strncmp(arg, "--confinement-probe=", 20) == 0) {
            set_mode(&args, MODE_PROBE);
            args.probe = arg + 20;
            args.confine.landlock_policy = LANDLOCK_POLICY_REQUIRED;
        } else if (strcmp(arg, "--no-sandbox") == 0 && !args.no_sandbox) {
            args.no_sandbox = true;
            probe_options = true;
        } else if (strncmp(arg, "--probe-port=", 13) == 0) {
            args.probe_port = parse_port(arg + 13);
            probe_options = true;
#ifdef BASAL_TEST_HOOKS
        } else if (strcmp(arg, "--test-skip-seccomp") == 0) {
            args.confine.test_skip_seccomp = true;
        } else if (strcmp(arg, "--test-profile=plain") == 0) {
            args.serve.test_plain_profile = true;
#endif
        } else {
            usage_exit();
        }
    }
    if (args.mode == MODE_NONE || (probe_options && args.mode != MODE_PROBE))
        usage_exit();
#ifdef BASAL_TEST_HOOKS
    if (args.confine.test_skip_seccomp && args.mode == MODE_VERSION)
        usage_exit();
    if (args.serve.test_plain_profile && args.mode != MODE_ENGINE)
        usage_exit();
#endif
    return args;
}

static int run_probe(const struct worker_args *args)
{
    const struct probe *probe = probe_find(args->probe);
    if (probe == NULL) {
        stderr_printf("ck-basal-worker: unknown probe '%s'\n", args->probe);
        usage_exit();
    }
    struct probe_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.port = args->probe_port;
    if (probe_prepare(probe, &ctx) != 0)
        return WORKER_EXIT_REFUSED;
    if (!args->no_sandbox)
        (void)confine(&args->confine);
    return probe_run(probe, &ctx);
}

int main(int argc, char **argv)
{
    struct worker_args args = parse_args(argc, argv);
    switch (args.mode) {
    case MODE_VERSION:
        printf("ck-basal-worker %s (git %s)\n", BASAL_VERSION, BASAL_GIT_REV);
        return 0;
    case MODE_PROBE:
        return run_probe(&args);
    case MODE_ENGINE: {
        args.confine.cpu_timer = true;
        struct confinement state = confine(&args.confine);
        return serve(&state, &args.serve);
    }
    case MODE_NONE:
        break;
    }
    usage_exit();
}
