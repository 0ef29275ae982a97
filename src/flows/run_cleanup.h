/* What a run's dead driver left outside the store, removed by the process that takes
 * the run over (flows/run_driver.h, before anything of the run is performed again):
 * the temporary files of its fs.write calls that have no outcome. A crash between
 * creating such a file and renaming it over its target leaves it behind; its name
 * carries the call's idempotency key (host/fs_builtin.h), so only this run's are
 * removed, only in directories still under the manifest's write roots, never
 * through a symbolic link. */
#ifndef BASAL_FLOWS_RUN_CLEANUP_H
#define BASAL_FLOWS_RUN_CLEANUP_H

#include "flows/manifest.h"
#include "store/journal.h"

#include <stddef.h>

/* Removes those leftovers of the run whose journal is rows[0..count), home being the
 * data home (its directories are opened as fs calls open them: host/fs_builtin.h).
 * Best effort: a file that cannot be removed stays (it is never read). Returns how
 * many were removed. */
size_t run_cleanup_temporaries(const struct manifest *m, const char *home,
                               const struct journal_entry *rows, size_t count);

#endif
