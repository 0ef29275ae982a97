/* One serve per data home: an exclusive flock on `serve.lock` in the home, held for the
 * life of the process (the kernel drops it when the process dies, however it dies).
 * The file holds the holder's pid, for the refusal's message. */
#ifndef BASAL_SERVE_SERVE_LOCK_H
#define BASAL_SERVE_SERVE_LOCK_H

#include <stddef.h>

#define SERVE_LOCK_NAME "serve.lock"

/* Takes the lock: its descriptor (close-on-exec; keep it open), or -1 with a one-line
 * reason ("a serve is already running on this data home (pid N)"). */
int serve_lock_take(const char *home, char *err, size_t err_cap);

/* The pid of the serve holding home's lock, or 0 if none does. */
long serve_lock_holder(const char *home);

#endif
