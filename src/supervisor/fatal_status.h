/* The rule of the fatal_status_deaths health counter (sandbox.md "Windows"): which
 * ends of a worker count as a confinement fault. Portable and pure, so Linux unit tests
 * prove the rule the Windows parent counts by.
 *
 * Counted: an exit with 0xc0000008 (STATUS_INVALID_HANDLE: strict handle checks made a
 * misused handle fatal) or 0xc0000005 (STATUS_ACCESS_VIOLATION). Never counted: the
 * worker's own refusal (exit 70), any other exit, or an end the parent caused (a kill
 * at a deadline, a retirement, a refused Welcome), whatever its exit code. */
#ifndef BASAL_SUPERVISOR_FATAL_STATUS_H
#define BASAL_SUPERVISOR_FATAL_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#define FATAL_STATUS_INVALID_HANDLE 0xc0000008U
#define FATAL_STATUS_ACCESS_VIOLATION 0xc0000005U

/* exit_code: the process's exit code as GetExitCodeProcess reports it; killed_by_parent:
 * the parent ended it (TerminateJobObject, closing its job). */
bool fatal_status_death(uint32_t exit_code, bool killed_by_parent);

#endif
