/* Type-checking an agent's script against the tool declarations with the TypeScript
 * compiler (docs/codemode.md, "Type-checking a script"): the one tsconfig basal ships,
 * the script wrapped as the body of an async function, tsc's findings mapped back to
 * the script's own lines. tsc only reads and type-checks; it runs none of the script. */
#ifndef BASAL_CLI_TSC_CHECK_H
#define BASAL_CLI_TSC_CHECK_H

#include <stddef.h>

/* The tsconfig.json for a directory holding the declarations as tools.d.ts and the
 * wrapped script as script.ts (what `codemode tsconfig` prints). */
extern const char TSC_CONFIG_JSON[];

/* The line that comes before the script in script.ts, and the one after it. */
#define TSC_SCRIPT_HEAD "async function main(): Promise<unknown> {\n"
#define TSC_SCRIPT_TAIL "\n}\n"

/* Runs tsc (a path, or a name looked up in PATH) over declarations and the script
 * (shown as script_name) in a private temporary directory, writing its findings to
 * stdout, each "SCRIPT_NAME:LINE:COLUMN: error TSnnnn: ..." (escaped for a terminal).
 * Returns 0 when tsc found nothing, 1 when it found errors, -1 when it could not run
 * (err: one line; e.g. tsc is not installed). */
int tsc_check(const char *tsc, const char *declarations, const char *script, size_t len,
              const char *script_name, char *err, size_t err_cap);

#endif
