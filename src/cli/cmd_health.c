/* ck-basal health: the pool's health as JSON.
 *
 * Until the store exists (the next issue stores health counters), there is no
 * long-running pool to ask: this prints the health of this process's own pool, which
 * is empty, so every counter is 0. `ck-basal exec --health` prints the health of the
 * pool that served its runs. The format is the same (docs/operations.md). */
#include "cli/commands.h"
#include "core/health.h"
#include "core/pool.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_health(const struct cli_globals *globals, int argc, char **argv)
{
    struct pool_config cfg;
    pool_config_defaults(&cfg);
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--landlock=required") == 0) {
            cfg.policy = LANDLOCK_POLICY_REQUIRED;
        } else if (strcmp(argv[i], "--landlock=optional") == 0) {
            cfg.policy = LANDLOCK_POLICY_OPTIONAL;
        } else {
            fprintf(stderr, "ck-basal health: unknown argument '%s' "
                            "(expected --landlock=required or --landlock=optional)\n", argv[i]);
            return EXIT_USAGE;
        }
    }
    struct pool *pool = pool_new(&cfg);
    if (pool == NULL) {
        fprintf(stderr, "ck-basal health: out of memory\n");
        return EXIT_REFUSED;
    }
    json_t *h = health_to_json(pool_health(pool));
    char *text = h != NULL ? json_dumps(h, globals->json ? JSON_COMPACT : JSON_INDENT(2)) : NULL;
    bool printed = text != NULL;
    if (printed)
        puts(text);
    free(text);
    json_decref(h);
    pool_free(pool);
    return printed ? EXIT_OK : EXIT_REFUSED;
}
