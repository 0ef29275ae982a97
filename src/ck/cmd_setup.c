/* ck setup: installs the binaries into PREFIX/bin, then has the installed ck-basal set
 * up the data home and show what the kernel offers its worker. */
#include "ck/ck_commands.h"

#include "ck/install_binary.h"
#include "ck/serve_control.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether dir is one of $PATH's directories (a hint when it is not). */
static bool on_path(const char *dir)
{
    const char *path = getenv("PATH");
    size_t n = strlen(dir);
    while (path != NULL && *path != '\0') {
        const char *end = strchr(path, ':');
        size_t len = end != NULL ? (size_t)(end - path) : strlen(path);
        if (len == n && strncmp(path, dir, n) == 0)
            return true;
        path = end != NULL ? end + 1 : NULL;
    }
    return false;
}

/* Whether text can stand inside the printed shell line as it is (no quoting needed). */
static bool plain_path(const char *text)
{
    return strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._+-") ==
           strlen(text);
}

/* The exact line that puts dir on PATH for the user's login shell ($SHELL): fish has its
 * own command; zsh and bash read their rc file; any other shell ~/.profile. */
static void print_path_hint(const char *dir)
{
    if (!plain_path(dir)) {
        printf("  note: %s is not on your PATH: add it to PATH in your shell's startup file\n", dir);
        return;
    }
    const char *shell = getenv("SHELL");
    if (shell == NULL)
        shell = "";
    const char *slash = strrchr(shell, '/');
    const char *name = slash != NULL ? slash + 1 : shell;
    printf("  note: %s is not on your PATH; to add it, run:\n", dir);
    if (strcmp(name, "fish") == 0) {
        printf("    fish_add_path %s\n", dir);
        return;
    }
    const char *rc = "~/.profile";
    if (strcmp(name, "zsh") == 0)
        rc = "~/.zshrc";
    else if (strcmp(name, "bash") == 0)
        rc = "~/.bashrc";
    printf("    echo 'export PATH=\"%s:$PATH\"' >> %s\n", dir, rc);
}

int ck_setup(const struct ck_options *o)
{
    struct ck_paths p;
    int rc = ck_resolve("setup", o, &p);
    if (rc != 0)
        return rc == -2 ? CK_EXIT_USAGE : CK_EXIT_REFUSED;
    char err[1024];
    /* Binaries are not swapped under a running serve: its next worker would be the new
     * build's. ck upgrade --stop is the way then. */
    int lock_fd;
    long holder;
    int free_lock = serve_lock_try(p.home, &lock_fd, &holder, err, sizeof err);
    if (free_lock < 0) {
        fprintf(stderr, "ck setup: cannot tell whether a serve runs on %s: %s\n", p.home, err);
        return CK_EXIT_REFUSED;
    }
    if (free_lock == 0) {
        fprintf(stderr, "ck setup: a serve runs on %s (pid %ld): refused (ck upgrade --stop "
                        "replaces the binaries of a running serve)\n", p.home, holder);
        return CK_EXIT_REFUSED;
    }
    if (binary_dir_make(p.bin, err, sizeof err) != 0) {
        fprintf(stderr, "ck setup: %s\n", err);
        if (lock_fd >= 0)
            close(lock_fd);
        return CK_EXIT_REFUSED;
    }
    struct staged_binary staged[CK_PROGRAM_COUNT];
    bool present[CK_PROGRAM_COUNT];
    int failed = 0;
    for (int i = 0; i < CK_PROGRAM_COUNT && !failed; i++) {
        char source[PATH_MAX + 32];
        snprintf(source, sizeof source, "%s/%s", p.from, CK_PROGRAMS[i]);
        present[i] = ck_has_program(p.from, CK_PROGRAMS[i]);
        if (present[i] && binary_stage(source, p.bin, CK_PROGRAMS[i], &staged[i], err,
                                       sizeof err) != 0) {
            fprintf(stderr, "ck setup: %s (nothing installed)\n", err);
            for (int j = 0; j < i; j++)
                if (present[j])
                    binary_discard(&staged[j]);
            failed = 1;
        }
    }
    if (failed) {
        if (lock_fd >= 0)
            close(lock_fd);
        return CK_EXIT_REFUSED;
    }
    printf("ck setup: from %s into %s\n", p.from, p.bin);
    for (int i = 0; i < CK_PROGRAM_COUNT; i++) {
        if (!present[i])
            continue;
        bool in_place = staged[i].in_place;
        if (binary_commit(&staged[i], err, sizeof err) != 0) {
            fprintf(stderr, "ck setup: %s\n", err);
            for (int j = i + 1; j < CK_PROGRAM_COUNT; j++)
                if (present[j])
                    binary_discard(&staged[j]);
            if (lock_fd >= 0)
                close(lock_fd);
            return CK_EXIT_REFUSED;
        }
        printf("  %s %s/%s (0755)\n", in_place ? "already in place:" : "installed", p.bin,
               CK_PROGRAMS[i]);
    }
    if (!on_path(p.bin))
        print_path_hint(p.bin);
    if (lock_fd >= 0)
        close(lock_fd);
    fflush(stdout);

    printf("\n$ %s/ck-basal --home %s setup\n", p.bin, p.home);
    int status = ck_run_installed("setup", &p, "setup", NULL);
    if (status != 0) {
        fprintf(stderr, "ck setup: the binaries are installed, but ck-basal setup failed "
                        "(exit %d)\n", status);
        return CK_EXIT_REFUSED;
    }
    printf("\n$ %s/ck-basal --home %s worker-check\n", p.bin, p.home);
    status = ck_run_installed("setup", &p, "worker-check", NULL);
    if (status != 0) {
        fprintf(stderr, "ck setup: installed and set up, but the worker cannot confine itself "
                        "as required here (worker-check exit %d; see above)\n", status);
        return CK_EXIT_REFUSED;
    }
    printf("\nck setup: done\n");
    return CK_EXIT_OK;
}
