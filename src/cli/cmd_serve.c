/* ck-basal serve: the daemon on one data home (serve/daemon.h). */
#include "cli/commands.h"
#include "serve/admission_rate.h"
#include "serve/daemon.h"
#include "store/datahome.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SERVE_USAGE "usage: ck-basal serve [--max-runs N] [--backlog N] [--grace-seconds N] " \
                    "[--spares N] [--rate-limit N] [--log-json] [--metrics 127.0.0.1:PORT] " \
                    "[--web 127.0.0.1:PORT [--web-allow-remote]] [--landlock=required|optional]"

static bool number_option(const char *flag, const char *text, long long min, long long max,
                          long long *out)
{
    if (cli_parse_int(text, min, max, out))
        return true;
    fprintf(stderr, "ck-basal serve: %s needs a whole number from %lld to %lld, not '%s'\n", flag,
            min, max, text);
    return false;
}

int cmd_serve(const struct cli_globals *g, int argc, char **argv)
{
    struct serve_options o;
    memset(&o, 0, sizeof o);
    o.landlock = LANDLOCK_POLICY_REQUIRED;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long long max_runs = 2 * (cpus > 0 ? cpus : 1), backlog = SERVE_BACKLOG_DEFAULT,
              grace_s = SERVE_GRACE_MS_DEFAULT / 1000, spares = 2,
              rate_limit = ADMISSION_RATE_LIMIT_DEFAULT;
    if (max_runs > SERVE_RUNNERS_MAX)
        max_runs = SERVE_RUNNERS_MAX;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(a, "--max-runs") == 0 && has_value) {
            if (!number_option(a, argv[++i], 1, SERVE_RUNNERS_MAX, &max_runs))
                return EXIT_USAGE;
        } else if (strcmp(a, "--backlog") == 0 && has_value) {
            if (!number_option(a, argv[++i], 1, SERVE_BACKLOG_MAX, &backlog))
                return EXIT_USAGE;
        } else if (strcmp(a, "--grace-seconds") == 0 && has_value) {
            if (!number_option(a, argv[++i], 0, 3600, &grace_s))
                return EXIT_USAGE;
        } else if (strcmp(a, "--spares") == 0 && has_value) {
            if (!number_option(a, argv[++i], 0, 16, &spares))
                return EXIT_USAGE;
        } else if (strcmp(a, "--rate-limit") == 0 && has_value) {
            if (!number_option(a, argv[++i], 1, ADMISSION_RATE_LIMIT_MAX, &rate_limit))
                return EXIT_USAGE;
        } else if (strcmp(a, "--metrics") == 0 && has_value) {
            o.metrics_listen = argv[++i];
        } else if (strcmp(a, "--web") == 0 && has_value) {
            o.web_listen = argv[++i];
        } else if (strcmp(a, "--web-allow-remote") == 0) {
            o.web_allow_remote = true;
        } else if (strcmp(a, "--log-json") == 0) {
            o.log_json = true;
        } else if (strcmp(a, "--landlock=required") == 0) {
            o.landlock = LANDLOCK_POLICY_REQUIRED;
        } else if (strcmp(a, "--landlock=optional") == 0) {
            o.landlock = LANDLOCK_POLICY_OPTIONAL;
        } else {
            fprintf(stderr, "ck-basal serve: unexpected argument '%s' (%s)\n", a, SERVE_USAGE);
            return EXIT_USAGE;
        }
    }
    if (o.web_allow_remote && o.web_listen == NULL) {
        fprintf(stderr, "ck-basal serve: --web-allow-remote needs --web ADDR:PORT (%s)\n",
                SERVE_USAGE);
        return EXIT_USAGE;
    }
    char home[PATH_MAX], err[512];
    struct datahome_report report;
    /* A home wider than 0700 is narrowed (as every command does) and serve logs it
     * (event=home_narrowed); one it cannot narrow, or not its user's, is refused. */
    if (cli_data_home(g, home, sizeof home, err, sizeof err) != 0 ||
        datahome_prepare(home, false, &report, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal serve: %s\n", err);
        return EXIT_REFUSED;
    }
    o.home = home;
    o.home_narrowed_from = report.narrowed ? (unsigned)report.prior_mode : 0;
    o.max_runs = (unsigned)max_runs;
    o.backlog = (unsigned)backlog;
    o.grace_ms = grace_s * 1000;
    o.spares = (unsigned)spares;
    o.rate_limit = (unsigned)rate_limit;
    return serve_main(&o) == 0 ? EXIT_OK : EXIT_REFUSED;
}
