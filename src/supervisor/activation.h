/* One activation on an accepted worker: Activate, host calls, Finished.
 *
 * The driver sends Activate, then reads the worker's frames without ever blocking
 * past the wall deadline:
 *   HostCall{position, kind, args}  positions must come in order (0, 1, 2, ... after
 *                                   the prefix); the host settles the call at once or
 *                                   after a delay, or starts it as long-running
 *                                   (HOST_CALL_LONG_RUNNING: settled outside this
 *                                   activation). "now" and "random" are answered at
 *                                   once (the engine waits for them).
 *   Blocked{awaited}                the worker has nothing to run: the driver releases
 *                                   one settlement (the earliest due; ties by position),
 *                                   waiting for its due time if need be, as Deliver
 *                                   with the next delivery order (strictly increasing
 *                                   from 1, continuing above the prefix's). Before
 *                                   that, the long-running calls not yet announced
 *                                   are named in one LongRunning.
 *   Console                         kept (up to 64 KiB) for the caller; more is cut
 *                                   with a last line saying so (console_truncated).
 *   Finished                        the end: completed (a JSON text), failed, stalled,
 *                                   budget exhausted, or suspended (only once a
 *                                   LongRunning was sent and no settlement is owed).
 * The worker is hostile (docs/protocol.md, "What the parent refuses"). Anything else
 * is a protocol error and the worker is killed: Refused, Welcome, a HostCall out of
 * order or whose kind is not a host-call name (host_kind_valid), an async HostCall
 * beyond ACTIVATION_MAX_OUTSTANDING_CALLS or _BYTES, a Blocked with nothing
 * outstanding, naming a position not outstanding or one twice, or sent while already
 * blocked, Finished(suspended) before any LongRunning (nothing could wake the run) or
 * while a settlement is still owed to the worker, a completed value that is not JSON, a malformed or oversized
 * frame. Bytes the worker wrote after its Finished (read with it, or waiting in the
 * pipe) set wrote_after_finished: the worker must not serve again. The clock is read
 * after every frame, so at the wall deadline the worker is killed however fast frames
 * keep coming. If the worker's stdout ends, the worker is reaped and its death
 * reported (a signal such as SIGSEGV or SIGSYS, or an exit status). The parent never
 * dies because the worker did: SIGPIPE is ignored and EPIPE on a write is handled
 * like the end of stdout.
 *
 * A Deliver is written only while the worker waits for one (after Blocked, or right
 * after a synchronous HostCall), so the worker never has an unread Deliver behind it
 * while it runs, and neither side can fill a pipe the other is not reading. */
#ifndef BASAL_SUPERVISOR_ACTIVATION_H
#define BASAL_SUPERVISOR_ACTIVATION_H

#include "supervisor/worker_channel.h"
#include "supervisor/worker_proc.h"
#include "host/host.h"
#include "proto/message.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Profile defaults (basal.md section 4). */
#define FLOW_CPU_MS 1000u
#define FLOW_HEAP_BYTES (8ULL << 20)
#define FLOW_STACK_BYTES (1u << 20)
#define FLOW_MAX_VALUE_BYTES (256u << 10)
#define FLOW_DEADLINE_MS 60000LL
#define CODEMODE_CPU_MS 10000u
#define CODEMODE_HEAP_BYTES (64ULL << 20)
#define CODEMODE_STACK_BYTES (1u << 20)
#define CODEMODE_MAX_VALUE_BYTES (256u << 10)
#define CODEMODE_DEADLINE_MS (30LL * 60 * 1000)
#define CODEMODE_MAX_HOST_CALLS 200u

#define ACTIVATION_CONSOLE_MAX (64u << 10)
/* What one activation may hold of async calls settled and not yet released: their
 * count, and the bytes of their kinds, arguments and settlements. A flow run stops
 * at FLOW_RUN_MAX_HOST_CALLS (10 000) and 64 MiB of journal long before; codemode at
 * 200 calls. The call that would pass either is a protocol error, refused before any
 * host sees it, so the parent's memory per activation stays bounded. */
#define ACTIVATION_MAX_OUTSTANDING_CALLS 65536u
#define ACTIVATION_MAX_OUTSTANDING_BYTES (64u << 20)
#define WORKER_LOG_TAIL 2048u

/* The parent's connection to one accepted worker: its process, a frame reader on its
 * stdout that lives as long as the worker (bytes are never lost between
 * activations), and the last bytes it wrote on stderr. */
struct worker_conn {
    struct worker_proc proc;
    struct worker_channel channel;
    struct wire_buf out; /* encoding scratch */
    char log[WORKER_LOG_TAIL];
    size_t log_len;
};

/* Takes over an accepted worker (its pipes become non-blocking). */
void worker_conn_init(struct worker_conn *w, const struct worker_proc *proc);
/* True while the worker process has not been reaped. */
bool worker_conn_alive(const struct worker_conn *w);
/* Reads whatever the worker wrote on stderr, keeping the last WORKER_LOG_TAIL bytes. */
void worker_conn_drain_log(struct worker_conn *w);

/* How a worker that was asked to end, ended. */
struct worker_end {
    int wait_status;
    bool killed; /* the parent had to SIGKILL it */
};
/* Ends the worker gracefully: Shutdown, close its stdin, wait up to timeout_ms for it
 * to exit, then SIGKILL. Releases everything. */
struct worker_end worker_conn_shutdown(struct worker_conn *w, int timeout_ms);
/* SIGKILLs and reaps the worker; releases everything. */
struct worker_end worker_conn_kill(struct worker_conn *w);
/* Releases the buffers of an already reaped worker. */
void worker_conn_free(struct worker_conn *w);

struct activation_request {
    uint64_t activation_id;
    enum proto_profile profile;
    const char *script;
    size_t script_len;
    /* What errors call the script (a path, "FLOW/flow.js"); NULL, or a name that is not
     * 1 to PROTO_MAX_SCRIPT_NAME_BYTES of UTF-8 without controls: "script.js". */
    const char *script_name;
    bool compile_only;   /* only compile the script: completed null, or syntax_error */
    const char *trigger; /* JSON text; NULL means {} */
    struct proto_budgets budgets;
    long long deadline_ms; /* wall deadline from Activate; <= 0: the profile default */
    unsigned max_host_calls; /* 0: unlimited; more are rejected with "denied" */
    const struct proto_recorded_entry *prefix;
    size_t prefix_count;
    /* false (the default): during a burst of host calls the worker and the driving
     * thread share one CPU (supervisor/colocate.h); true leaves the placement to the
     * kernel, for the benchmark's comparison. */
    bool keep_placement;
};

/* The profile's default budgets, deadline and host-call limit into *req, and
 * keep_placement false. */
void activation_request_defaults(struct activation_request *req, enum proto_profile profile);

enum activation_status {
    ACTIVATION_COMPLETED = 1,   /* value */
    ACTIVATION_FAILED,          /* failure_kind, detail (reported by the worker) */
    ACTIVATION_SUSPENDED,        /* only long-running calls were left (announced) */
    ACTIVATION_STALLED,
    ACTIVATION_BUDGET_EXHAUSTED, /* budget */
    ACTIVATION_DEADLINE,         /* the parent killed the worker at the wall deadline */
    ACTIVATION_WORKER_CRASHED,   /* term_signal or exit_status */
    ACTIVATION_PROTOCOL_ERROR,   /* detail; the parent killed the worker */
    ACTIVATION_NO_WORKER,        /* detail; the pool could not provide a worker */
};
#define ACTIVATION_STATUS_COUNT 9

struct activation_outcome {
    enum activation_status status;
    char *value;        /* COMPLETED: JSON text (malloc'd) */
    char *failure_kind; /* FAILED (malloc'd) */
    char *detail;       /* FAILED, PROTOCOL_ERROR, NO_WORKER, WORKER_CRASHED (malloc'd) */
    enum proto_budget budget;
    int term_signal;    /* WORKER_CRASHED by a signal, else 0 */
    int exit_status;    /* WORKER_CRASHED by exiting, else -1 */
    pid_t pid;          /* the worker that served it (0 if none) */
    bool worker_ended;  /* the worker process is gone (reaped) */
    bool killed_by_parent;
    bool wrote_after_finished; /* bytes followed its Finished: never reuse the worker */
    uint32_t host_calls;
    uint32_t deliveries;
    long long wall_ms;
    char *console;      /* Console texts, "stream: text\n" each, at most 64 KiB; a line
                         * break in a text is followed by "stream| " (a continuation) */
    bool console_truncated; /* more came: console ends in a line saying so */
    char *worker_log;   /* the tail of the worker's stderr if it ended abnormally */
};

/* Runs one activation on w. Always fills *out (free it with activation_outcome_free).
 * On DEADLINE, WORKER_CRASHED and PROTOCOL_ERROR the worker has been reaped. */
void activation_run(struct worker_conn *w, const struct activation_request *req,
                    const struct host *host, struct activation_outcome *out);

void activation_outcome_free(struct activation_outcome *out);

/* "completed", "failed", "suspended", "stalled", "budget_exhausted", "deadline",
 * "worker_crashed", "protocol_error", "no_worker". */
const char *activation_status_name(enum activation_status status);

/* True if the activation ended cleanly and its worker may serve the same flow again:
 * completed, stalled, suspended, or failed with a kind the script itself caused
 * (script_error, syntax_error, unserializable_result, result_too_large, nondeterminism,
 * invalid_trigger), and the worker wrote nothing after its Finished. Budget
 * exhaustion, deadline, crash, protocol error and any other failure kind (the
 * worker's engine_error, protocol_error) retire it. */
bool activation_keeps_worker(const struct activation_outcome *out);

/* The outcome in words, one line: the JSON value, "budget exhausted: cpu",
 * "worker crashed: SIGSEGV", "deadline", "script error: <detail's first line>", ... */
void activation_describe(const struct activation_outcome *out, char *buf, size_t cap);

/* "SIGSEGV" for 11; "signal N" if unknown. Static storage. */
const char *activation_signal_name(int sig);

#endif
