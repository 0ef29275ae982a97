/* Settling a mutation in doubt (basal.md section 6, "flow reconcile").
 *
 * A run in needs_reconcile has one journal position marked unknown: an unkeyed
 * mutation that may or may not have taken effect before a crash. The operator looks
 * at the target and says which:
 *   observed JSON  it took effect and answered JSON: the outcome goes to the mailbox,
 *                  the run becomes pending and, resumed, the script receives JSON.
 *   not applied    it did not take effect: the row is removed and the run becomes
 *                  pending; resumed, the script makes the call afresh.
 *   cancel         the run ends cancelled (the row stays unknown, for the record).
 * A suspended run's long-running call that waits for its completion (store/waits.h,
 * flows/long_running.h) is settled the same way: observed JSON is its completion, not
 * applied removes it (the call is made afresh, its module asked again, on resume),
 * cancel ends the run; the run becomes pending unless cancelled.
 * One transaction, with an audit row naming the decision. Refused, changing nothing,
 * unless the run is needs_reconcile and the position is unknown, or the run is
 * suspended and the position waits, and while a module
 * program of one of the run's calls may still run (store/call_processes.h): its
 * effect may still come after the operator looked. */
#ifndef BASAL_FLOWS_RECONCILE_H
#define BASAL_FLOWS_RECONCILE_H

#include <stddef.h>
#include <stdint.h>

struct store;

enum reconcile_decision {
    RECONCILE_OBSERVED = 0,
    RECONCILE_NOT_APPLIED,
    RECONCILE_CANCEL,
};

/* observed: JSON text (RECONCILE_OBSERVED only). Returns 0 or -1 with the reason. */
int reconcile_settle(struct store *s, int64_t run_id, uint32_t position,
                     enum reconcile_decision decision, const char *observed, char *err,
                     size_t err_cap);

#endif
