/* The processes of a run's calls in flight (schema version 2): an ops.call's module
 * program is recorded here, pid and start time, after its process exists and before
 * the program runs, and forgotten once it has been reaped.
 *
 * A module program is killed with ck-basal (host/ops_module.h), but a program can
 * escape that (set-user-ID, or clearing its parent-death signal), and a kill takes
 * effect only when the process next runs. So while a recorded process is still
 * there, its call's effect may still come: `recover` does not resume the run and
 * `flow reconcile` decides nothing about it (flows/reconcile.h, flows/run_driver.h).
 * A process that ran as the init of its own PID namespace stands for the whole
 * namespace: the kernel empties the namespace before its init counts as ended. */
#ifndef BASAL_STORE_CALL_PROCESSES_H
#define BASAL_STORE_CALL_PROCESSES_H

#include "base/process_identity.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* Inside the caller's (fenced) transaction: records process as the one of (run_id,
 * position), replacing an earlier record of that call (a resend's previous process).
 * The journal row must exist. Returns 0 or -1 (reason in err). */
int call_process_record(struct store *s, int64_t run_id, uint32_t position,
                        const struct process_identity *process, char *err, size_t err_cap);

/* Removes the record of (run_id, position) if it still names process (a later
 * owner's record is left alone); its own statement, no transaction needed. Returns
 * 0 or -1 (reason in err). */
int call_process_forget(struct store *s, int64_t run_id, uint32_t position,
                        const struct process_identity *process, char *err, size_t err_cap);

struct call_process {
    uint32_t position;
    struct process_identity process;
    enum process_presence presence; /* PRESENT or UNKNOWN: it may still run */
};

/* The first recorded process of run_id's calls that may still run (present, or
 * /proc could not tell), by position. With skip_in_doubt, processes of calls an
 * unkeyed mutation in doubt (no outcome) are not looked at. Returns 1 with *out, 0
 * if there is none, -1 on a store error (reason in err). */
int call_process_running(struct store *s, int64_t run_id, bool skip_in_doubt,
                         struct call_process *out, char *err, size_t err_cap);

/* "the module program of position P (pid N) is still running" or "... (pid N) may
 * still be running: /proc cannot tell (...)" into buf. */
void call_process_describe(const struct call_process *p, char *buf, size_t cap);

#endif
