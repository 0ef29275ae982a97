/* ck upgrade: replaces the installed build with the one in --from, in this order:
 * every refusal first (nothing installed, a downgrade, a store newer than the new
 * build, a running serve without --stop), then the serve stopped and locked out, the
 * new files staged, the store snapshotted if the new build will migrate it, the worker
 * renamed into place, then the parent (then ck), then the new ck-basal's setup (the
 * migration), then the serve started again if systemd ran it. */
#include "ck/ck_commands.h"

#include "ck/build_version.h"
#include "ck/install_binary.h"
#include "ck/serve_control.h"
#include "ck/store_snapshot.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct upgrade {
    const struct ck_options *o;
    struct ck_paths p;
    struct build_version installed, next;
    int store_schema; /* the store's user_version; 0: no store */
    int lock_fd;
    long stopped_pid;  /* the serve ck stopped, 0 if none */
    bool systemd_unit; /* systemd's ck-basal.service ran it */
    struct staged_binary staged[CK_PROGRAM_COUNT];
    bool present[CK_PROGRAM_COUNT];
};

static void release(struct upgrade *u)
{
    if (u->lock_fd >= 0)
        close(u->lock_fd);
    u->lock_fd = -1;
}

/* A refusal or failure once the serve may have been stopped (what: the line to print,
 * NULL if said): the lock is let go and a serve systemd ran is started again. */
static int give_up(struct upgrade *u, const char *what)
{
    if (what != NULL)
        fprintf(stderr, "ck upgrade: %s\n", what);
    for (int i = 0; i < CK_PROGRAM_COUNT; i++)
        if (u->present[i])
            binary_discard(&u->staged[i]);
    release(u);
    if (u->stopped_pid != 0) {
        char err[512];
        if (!u->systemd_unit)
            fprintf(stderr, "ck upgrade: the serve ck stopped (pid %ld) was not started by "
                            "systemd: start it again yourself\n", u->stopped_pid);
        else if (serve_systemd_start(err, sizeof err) != 0)
            fprintf(stderr, "ck upgrade: %s\n", err);
    }
    return CK_EXIT_REFUSED;
}

/* The checks that need no lock: versions and the store's schema. 1: go on; 0: nothing
 * to do (said); -1: refused (said). */
static int check_builds(struct upgrade *u)
{
    char err[1024], parent[PATH_MAX + 16], a[128], b[128];
    snprintf(parent, sizeof parent, "%s/ck-basal", u->p.bin);
    if (!ck_has_program(u->p.bin, "ck-basal") || !ck_has_program(u->p.bin, "ck-basal-worker")) {
        fprintf(stderr, "ck upgrade: no ck-basal and ck-basal-worker installed in %s: "
                        "refused (ck setup installs them)\n", u->p.bin);
        return -1;
    }
    if (build_version_query(parent, &u->installed, err, sizeof err) != 0) {
        fprintf(stderr, "ck upgrade: the installed build: %s\n", err);
        return -1;
    }
    snprintf(parent, sizeof parent, "%s/ck-basal", u->p.from);
    if (build_version_query(parent, &u->next, err, sizeof err) != 0) {
        fprintf(stderr, "ck upgrade: the new build: %s\n", err);
        return -1;
    }
    enum build_order order;
    if (build_version_order(&u->installed, &u->next, &order, err, sizeof err) != 0) {
        fprintf(stderr, "ck upgrade: %s\n", err);
        return -1;
    }
    build_version_text(&u->installed, a, sizeof a);
    build_version_text(&u->next, b, sizeof b);
    if (order == BUILD_DOWNGRADE) {
        const char *why = strcmp(u->installed.version, u->next.version) != 0
                              ? "a lower version"
                          : u->next.store_schema < 0 ? "a build that states no store schema"
                                                     : "a lower store schema";
        fprintf(stderr, "ck upgrade: %s is older than the installed %s (%s): a downgrade, "
                        "refused (nothing changed)\n", b, a, why);
        return -1;
    }
    if (store_snapshot_schema(u->p.home, &u->store_schema, err, sizeof err) != 0) {
        fprintf(stderr, "ck upgrade: %s\n", err);
        return -1;
    }
    if (u->store_schema > 0 && u->next.store_schema < 0) {
        fprintf(stderr, "ck upgrade: the new build %s does not say which store schema it "
                        "knows: refused (nothing changed)\n", b);
        return -1;
    }
    if (u->store_schema > u->next.store_schema && u->store_schema > 0) {
        fprintf(stderr, "ck upgrade: the store %s/%s is at schema %d, newer than the new "
                        "build knows (%d): refused (nothing changed)\n",
                u->p.home, STORE_FILE, u->store_schema, u->next.store_schema);
        return -1;
    }
    bool same_bytes = true;
    for (int i = 0; i < 2; i++) {
        char x[PATH_MAX + 32], y[PATH_MAX + 32];
        snprintf(x, sizeof x, "%s/%s", u->p.from, CK_PROGRAMS[i]);
        snprintf(y, sizeof y, "%s/%s", u->p.bin, CK_PROGRAMS[i]);
        same_bytes = same_bytes && binary_same_bytes(x, y);
    }
    if ((order == BUILD_SAME || same_bytes) && !u->o->reinstall) {
        printf("ck upgrade: nothing to do: %s already has %s%s (--reinstall installs it "
               "again)\n", u->p.bin, a, same_bytes ? ", the same bytes" : "");
        return 0;
    }
    printf("ck upgrade: %s -> %s\n  from %s into %s\n", a, b, u->p.from, u->p.bin);
    return 1;
}

/* Takes the serve lock, stopping the serve first with --stop. 0, or -1 (said). */
static int lock_out_serve(struct upgrade *u)
{
    char err[1024], how[128];
    long holder;
    int free_lock = serve_lock_try(u->p.home, &u->lock_fd, &holder, err, sizeof err);
    if (free_lock < 0) {
        fprintf(stderr, "ck upgrade: cannot tell whether a serve runs on %s: %s (nothing "
                        "changed)\n", u->p.home, err);
        return -1;
    }
    if (free_lock == 1)
        return 0;
    if (!u->o->stop) {
        fprintf(stderr, "ck upgrade: a serve runs on %s (pid %ld): refused (nothing changed; "
                        "--stop stops it first)\n", u->p.home, holder);
        return -1;
    }
    u->systemd_unit = serve_systemd_manages(holder);
    if (serve_stop(u->p.home, holder, how, sizeof how, err, sizeof err) != 0) {
        fprintf(stderr, "ck upgrade: cannot stop the serve on %s (pid %ld): %s (nothing "
                        "changed)\n", u->p.home, holder, err);
        return -1;
    }
    u->stopped_pid = holder > 0 ? holder : -1;
    printf("  stopping the serve on %s (pid %ld) %s; waiting for it to end (its runs get "
           "its grace period)\n", u->p.home, holder, how);
    fflush(stdout);
    if (serve_wait_gone(u->p.home, CK_STOP_WAIT_SECONDS, &u->lock_fd, err, sizeof err) != 0) {
        fprintf(stderr, "ck upgrade: %s (nothing installed)\n", err);
        u->systemd_unit = false; /* still running: nothing to start */
        u->stopped_pid = 0;
        return -1;
    }
    printf("  the serve stopped%s\n",
           u->systemd_unit ? " (systemd's " SERVE_SYSTEMD_UNIT " ran it: ck starts it again)"
                           : " (no systemd unit ran it: ck does not start it again)");
    return 0;
}

int ck_upgrade(const struct ck_options *o)
{
    struct upgrade u;
    memset(&u, 0, sizeof u);
    u.o = o;
    u.lock_fd = -1;
    int rc = ck_resolve("upgrade", o, &u.p);
    if (rc != 0)
        return rc == -2 ? CK_EXIT_USAGE : CK_EXIT_REFUSED;
    rc = check_builds(&u);
    if (rc <= 0)
        return rc == 0 ? CK_EXIT_OK : CK_EXIT_REFUSED;
    if (lock_out_serve(&u) != 0)
        return give_up(&u, NULL);

    char err[1024], why[PATH_MAX + 1200];
    /* Again under the lock: a command may have migrated the store meanwhile. */
    if (store_snapshot_schema(u.p.home, &u.store_schema, err, sizeof err) != 0)
        return give_up(&u, err);
    if (u.store_schema > u.next.store_schema) {
        snprintf(why, sizeof why, "the store is at schema %d, newer than the new build knows "
                                  "(%d): refused", u.store_schema, u.next.store_schema);
        return give_up(&u, why);
    }
    for (int i = 0; i < CK_PROGRAM_COUNT; i++) {
        char source[PATH_MAX + 32];
        snprintf(source, sizeof source, "%s/%s", u.p.from, CK_PROGRAMS[i]);
        u.present[i] = ck_has_program(u.p.from, CK_PROGRAMS[i]);
        if (u.present[i] && binary_stage(source, u.p.bin, CK_PROGRAMS[i], &u.staged[i], err,
                                         sizeof err) != 0) {
            u.present[i] = false;
            snprintf(why, sizeof why, "%s (nothing installed)", err);
            return give_up(&u, why);
        }
    }
    if (u.store_schema > 0 && u.next.store_schema > u.store_schema) {
        char snapshot[PATH_MAX];
        if (store_snapshot_take(u.p.home, u.store_schema, snapshot, sizeof snapshot, err,
                                sizeof err) != 0) {
            snprintf(why, sizeof why, "no snapshot of the store: %s (nothing installed)", err);
            return give_up(&u, why);
        }
        printf("  the new build migrates the store from schema %d to %d; snapshot first:\n"
               "    %s (0600, SQLite online backup)\n"
               "  to restore it: stop any serve, then\n"
               "    rm -f '%s/%s-wal' '%s/%s-shm' && cp '%s' '%s/%s'\n"
               "  and put the previous binaries back (ck setup --from THEIR_DIR)\n",
               u.store_schema, u.next.store_schema, snapshot, u.p.home, STORE_FILE, u.p.home,
               STORE_FILE, snapshot, u.p.home, STORE_FILE);
    }
    for (int i = 0; i < CK_PROGRAM_COUNT; i++) {
        if (!u.present[i])
            continue;
        if (binary_commit(&u.staged[i], err, sizeof err) != 0) {
            u.present[i] = false;
            snprintf(why, sizeof why, "%s (the programs before it in the order worker, "
                                      "parent, ck are the new ones)", err);
            return give_up(&u, why);
        }
        printf("  replaced %s/%s (atomic rename)\n", u.p.bin, CK_PROGRAMS[i]);
    }
    fflush(stdout);

    printf("\n$ %s/ck-basal --home %s setup\n", u.p.bin, u.p.home);
    int status = ck_run_installed("upgrade", &u.p, "setup", NULL);
    if (status != 0) {
        snprintf(why, sizeof why, "the new binaries are installed, but ck-basal setup failed "
                                  "(exit %d)", status);
        return give_up(&u, why);
    }
    release(&u);
    if (u.stopped_pid != 0 && u.systemd_unit) {
        if (serve_systemd_start(err, sizeof err) != 0) {
            fprintf(stderr, "ck upgrade: upgraded, but %s\n", err);
            return CK_EXIT_REFUSED;
        }
        printf("ck upgrade: started %s again\n", SERVE_SYSTEMD_UNIT);
    } else if (u.stopped_pid != 0) {
        printf("ck upgrade: the serve stays stopped (systemd did not run it): start it again "
               "with %s/ck-basal serve\n", u.p.bin);
    }
    printf("ck upgrade: done\n");
    return CK_EXIT_OK;
}
