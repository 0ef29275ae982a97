/* ck: installs basal's binaries (ck setup) and replaces them with a newer build
 * (ck upgrade). One file per job: cmd_setup.c, cmd_upgrade.c. */
#include "version.h"
#include "ck/ck_commands.h"

#include <stdio.h>
#include <string.h>

static void print_help(FILE *out)
{
    fprintf(out,
            "usage: ck setup [--prefix DIR | --system] [--from DIR] [--home DIR]\n"
            "       ck upgrade [--from DIR] [--prefix DIR | --system] [--home DIR] [--stop]\n"
            "                  [--reinstall]\n"
            "       ck --version | --help\n"
            "\ncommands:\n"
            "  setup    install ck-basal-worker, ck-basal (and ck) into PREFIX/bin, each by an\n"
            "           atomic rename, then run the installed ck-basal setup for the data home\n"
            "           and its worker-check: what the kernel offers the worker\n"
            "  upgrade  replace the installed build with a newer one: refuses a downgrade, a\n"
            "           store newer than the new build, and a running serve (unless --stop);\n"
            "           snapshots the store before a migration; the worker first, then the\n"
            "           parent; then the new ck-basal setup migrates the store\n"
            "\noptions:\n"
            "  --prefix DIR  install into DIR/bin (default ~/.local)\n"
            "  --system      install into /usr/local/bin\n"
            "  --from DIR    the directory of the new binaries (default: where ck is)\n"
            "  --home DIR    the data home (default $XDG_DATA_HOME/cortexkit/basal,\n"
            "                else ~/.local/share/cortexkit/basal)\n"
            "  --stop        upgrade: stop a serve running on the data home first (it is\n"
            "                started again if systemd's ck-basal.service ran it)\n"
            "  --reinstall   upgrade: install the same build again\n"
            "\nexit status: 0 ok or nothing to do, 1 refused or failed, 2 usage\n");
}

/* `ck COMMAND --help`: the command's own usage, options and an example. */
static void print_command_help(bool upgrade)
{
    if (upgrade)
        printf("usage: ck upgrade [--from DIR] [--prefix DIR | --system] [--home DIR] [--stop]\n"
               "                  [--reinstall]\n\n"
               "Replace the installed build with a newer one: refuses a downgrade, a store newer\n"
               "than the new build, and a running serve (unless --stop); snapshots the store\n"
               "before a migration; installs the worker first, then the parent; then the new\n"
               "ck-basal setup migrates the store.\n"
               "  --from DIR    the directory of the new binaries (default: where ck is)\n"
               "  --prefix DIR  the installation to replace, DIR/bin (default ~/.local)\n"
               "  --system      the installation in /usr/local/bin\n"
               "  --home DIR    the data home (default $XDG_DATA_HOME/cortexkit/basal)\n"
               "  --stop        stop a serve running on the data home first (started again if\n"
               "                systemd's ck-basal.service ran it)\n"
               "  --reinstall   install the same build again\n\n"
               "example:\n  ck upgrade --from ./build/bin --stop\n");
    else
        printf("usage: ck setup [--prefix DIR | --system] [--from DIR] [--home DIR]\n\n"
               "Install ck-basal-worker, ck-basal and ck into PREFIX/bin, each by an atomic\n"
               "rename, then run the installed ck-basal setup for the data home and its\n"
               "worker-check; prints the line that puts PREFIX/bin on PATH when it is not.\n"
               "  --prefix DIR  install into DIR/bin (default ~/.local)\n"
               "  --system      install into /usr/local/bin\n"
               "  --from DIR    the directory of the binaries (default: where ck is)\n"
               "  --home DIR    the data home (default $XDG_DATA_HOME/cortexkit/basal)\n\n"
               "example:\n  ck setup --prefix ~/.local\n");
    printf("\nexit status: 0 ok or nothing to do, 1 refused or failed, 2 usage\n");
}

/* "ck: WHAT ARG" or "ck: WHAT" as one line; exit status 2. */
static int usage(const char *what, const char *arg)
{
    fprintf(stderr, "ck: %s%s%s (see ck --help)\n", what, arg != NULL ? " " : "",
            arg != NULL ? arg : "");
    return CK_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_help(stderr);
        return CK_EXIT_USAGE;
    }
    const char *command = argv[1];
    if (strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0) {
        print_help(stdout);
        return CK_EXIT_OK;
    }
    if (strcmp(command, "--version") == 0) {
        printf("ck %s (git %s)\n", BASAL_VERSION, BASAL_GIT_REV);
        return CK_EXIT_OK;
    }
    bool upgrade = strcmp(command, "upgrade") == 0;
    if (!upgrade && strcmp(command, "setup") != 0)
        return usage("unknown command", command);
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_command_help(upgrade);
            return CK_EXIT_OK;
        }
    }
    struct ck_options o;
    memset(&o, 0, sizeof o);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char **value = strcmp(a, "--prefix") == 0 ? &o.prefix
                             : strcmp(a, "--from") == 0 ? &o.from
                             : strcmp(a, "--home") == 0 ? &o.home
                                                        : NULL;
        if (value != NULL) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0')
                return usage(a, "needs a directory");
            if (*value != NULL)
                return usage(a, "given twice");
            *value = argv[++i];
        } else if (strcmp(a, "--system") == 0) {
            o.system = true;
        } else if (upgrade && strcmp(a, "--stop") == 0) {
            o.stop = true;
        } else if (upgrade && strcmp(a, "--reinstall") == 0) {
            o.reinstall = true;
        } else {
            fprintf(stderr, "ck %s: unknown option '%s' (see ck --help)\n", command, a);
            return CK_EXIT_USAGE;
        }
    }
    if (o.system && o.prefix != NULL)
        return usage("--prefix and --system exclude each other", NULL);
    return upgrade ? ck_upgrade(&o) : ck_setup(&o);
}
