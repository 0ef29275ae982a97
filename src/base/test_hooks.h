/* Test-only crash points (the crash-recovery tests of t_flow_runs). In a build with
 * BASAL_TEST_HOOKS, the environment variable BASAL_TEST_KILL_AT=BOUNDARY:POSITION makes
 * the parent SIGKILL itself when the host call at POSITION reaches BOUNDARY:
 *
 *   before_journal_commit   the call's journal transaction is written, not committed
 *   after_journal_commit    committed; the call has not left
 *   after_dispatch          the call was performed; its outcome is not committed
 *   after_outcome_commit    the outcome is in the mailbox; not yet delivered
 *   after_delivery          the worker was sent the outcome (its delivery order is
 *                           committed with the next transaction)
 *   after_schedule_admit    serve's scheduler admitted its POSITION-th run (counted
 *                           from 1 in the process) and has not moved the schedule on
 *   event_admitted          (POSITION: an event's seq) serve offered the event to every
 *                           listening flow; the event is not yet marked delivered
 *
 * BASAL_TEST_STOP_AT=BOUNDARY:POSITION stops the parent there (SIGSTOP) instead, so a
 * test can act while it holds its claim (take the run over, run recover) and then let
 * it go on with SIGCONT.
 *
 * Release builds contain neither the code nor these names (t_flow_runs checks the
 * binary). */
#ifndef BASAL_BASE_TEST_HOOKS_H
#define BASAL_BASE_TEST_HOOKS_H

#include <stdint.h>

enum test_boundary {
    TEST_BOUNDARY_BEFORE_JOURNAL_COMMIT = 0,
    TEST_BOUNDARY_AFTER_JOURNAL_COMMIT,
    TEST_BOUNDARY_AFTER_DISPATCH,
    TEST_BOUNDARY_AFTER_OUTCOME_COMMIT,
    TEST_BOUNDARY_AFTER_DELIVERY,
    TEST_BOUNDARY_AFTER_SCHEDULE_ADMIT,
    TEST_BOUNDARY_EVENT_ADMITTED,
};

#ifdef BASAL_TEST_HOOKS
void test_hook_boundary(enum test_boundary boundary, uint32_t position);
#else
static inline void test_hook_boundary(enum test_boundary boundary, uint32_t position)
{
    (void)boundary;
    (void)position;
}
#endif

#endif
