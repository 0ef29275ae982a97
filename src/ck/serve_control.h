/* The serve of a data home, from ck upgrade's side: whether one runs (its serve.lock,
 * serve/serve_lock.h), stopping it, waiting until it has gone, and whether systemd's
 * user unit ck-basal.service runs it (then ck starts the unit again afterwards).
 *
 * ck holds the serve lock itself for the whole upgrade, so no serve can start on the
 * home between the check and the new ck-basal's migration. */
#ifndef BASAL_CK_SERVE_CONTROL_H
#define BASAL_CK_SERVE_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#define SERVE_SYSTEMD_UNIT "ck-basal.service"

/* Tries to take home's serve lock. 1: taken (*lock_fd, close-on-exec; keep it open),
 * or no data home exists (no serve can run there; *lock_fd -1). 0: a serve holds it
 * (*holder: its pid as the lock file says, 0 if unknown). -1 with a one-line reason on
 * any other failure (the check could not run: the caller refuses). */
int serve_lock_try(const char *home, int *lock_fd, long *holder, char *err, size_t err_cap);

/* Asks the serve holding home's lock (pid holder) to stop: the ops command
 * "serve.stop", or SIGTERM to holder when its build has no such command or its socket
 * is not up yet; a serve that answers "serve is stopping" is already stopping (0). how
 * names the way taken. 0, or -1 with a one-line reason. */
int serve_stop(const char *home, long holder, char *how, size_t how_cap, char *err,
               size_t err_cap);

/* Blocks until home's serve lock is free, then holds it (*lock_fd), for at most
 * timeout_s seconds. 0, or -1 with a one-line reason (timed out, or failed). */
int serve_wait_gone(const char *home, unsigned timeout_s, int *lock_fd, char *err,
                    size_t err_cap);

/* True when systemd's user manager runs ck-basal.service with holder as its main
 * process (`systemctl --user show`); false when it does not, or there is no user
 * manager or no systemctl to ask. */
bool serve_systemd_manages(long holder);

/* `systemctl --user start ck-basal.service`. 0, or -1 with a one-line reason. */
int serve_systemd_start(char *err, size_t err_cap);

#endif
