/* ck-basal serve (docs/operations.md, "Running serve"): the engine as a long-running
 * service on one data home.
 *
 *   start     the home's serve lock (one serve per home), the store, the ops socket;
 *             then every unfinished run left by a dead process is picked up like any
 *             other (the store is the queue), and READY=1 goes to systemd.
 *   runs      runner threads (max_runs, default twice the CPUs) each drive one run at a
 *             time on a shared worker pool. The next run is always the first unfinished
 *             run of a flow (admission order), of a flow no other runner is driving,
 *             oldest first across flows: a flow's runs never overlap, different flows'
 *             do. A flow whose first unfinished run is suspended or needs_reconcile
 *             waits for the operator. Admission through the socket ("run") stores the
 *             run as pending, refused beyond `backlog` waiting runs of the flow.
 *   drain     `flow drain ID`: admission for the flow is refused until the next start
 *             or `flow enable ID`; the request returns when no run of it is pending or
 *             running.
 *   stop      SIGTERM or SIGINT: STOPPING=1, admission refused, waiting clients told;
 *             runners finish their runs for up to grace_ms; then exit 0, leaving any run
 *             still going to the next start (its owner, this process, is then dead).
 *   events    "event.emit" is recorded and delivered at once; events recorded while no
 *             serve ran are delivered once at start (serve/event_delivery.h).
 *   rate      every admission counts against its flow's rate limit; a flow saturated 3
 *             windows in a row is disabled (serve/admission_rate.h).
 *   operator  `flow reconcile`, `recover` and `codemode run` are sent here while serve
 *             runs ("flow.reconcile", "recover", "codemode.run"): serve settles, waits
 *             for its runners, or makes the codemode run, on its own store.
 *   log       one line per event on stderr (serve/serve_log.h).
 *
 * Children (workers, module programs) are forked only by threads that live as long as
 * the process (the runners and the main thread), or that reap them before they end: a
 * codemode.run request's thread ends its single-use worker and the tools' programs
 * before it answers. */
#ifndef BASAL_SERVE_DAEMON_H
#define BASAL_SERVE_DAEMON_H

#include "proto/confinement.h"

#include <stdbool.h>

#define SERVE_RUNNERS_MAX 256u
#define SERVE_BACKLOG_DEFAULT 100u
#define SERVE_BACKLOG_MAX 100000u
#define SERVE_GRACE_MS_DEFAULT 30000LL

struct serve_options {
    const char *home;             /* the data home, existing (ck-basal setup) */
    enum landlock_policy landlock;
    unsigned max_runs;            /* runner threads; 0: twice the CPUs */
    unsigned backlog;             /* waiting runs per flow; 0: SERVE_BACKLOG_DEFAULT */
    long long grace_ms;           /* for running activations at SIGTERM */
    unsigned spares;              /* warm spare workers */
    bool log_json;
    const char *metrics_listen;   /* "127.0.0.1:PORT" or NULL */
    const char *web_listen;       /* the status page's "127.0.0.1:PORT" or NULL (web/) */
    bool web_allow_remote;        /* the page on an address that is not loopback */
    unsigned rate_limit;          /* admissions per flow per minute (serve/admission_rate.h);
                                     0: ADMISSION_RATE_LIMIT_DEFAULT */
    unsigned home_narrowed_from;  /* the home's mode before datahome_prepare narrowed it to
                                     0700 (logged: event=home_narrowed); 0: it was 0700 */
};

/* Runs the daemon until SIGTERM or SIGINT. Returns the exit status: 0 after a stop, 1
 * when it could not start (the reason logged and on stderr as one line). */
int serve_main(const struct serve_options *options);

#endif
