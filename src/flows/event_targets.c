#include "flows/event_targets.h"

#include "base/error_line.h"
#include "flows/manifest.h"
#include "store/sql.h"
#include "store/store.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool lists_event(const struct manifest *m, const char *module, const char *name,
                        int64_t version)
{
    if (m->trigger.kind != MANIFEST_TRIGGER_EVENTS)
        return false;
    for (size_t i = 0; i < m->trigger.event_count; i++) {
        const struct manifest_event *e = &m->trigger.events[i];
        if (strcmp(e->module, module) == 0 && strcmp(e->name, name) == 0 &&
            e->version == version)
            return true;
    }
    return false;
}

int event_targets(struct store *s, const char *module, const char *name, int64_t version,
                  struct event_target **targets, size_t *count, char *err, size_t err_cap)
{
    *targets = NULL;
    *count = 0;
    sqlite3 *db = store_db(s);
    sqlite3_stmt *st;
    if (sql_prepare(db, "SELECT f.id, v.version, v.manifest FROM flows f"
                        " JOIN flow_versions v ON v.flow_id = f.id AND v.version ="
                        "   (SELECT max(version) FROM approvals WHERE flow_id = f.id)"
                        " WHERE f.enabled = 1 ORDER BY f.id",
                    &st, err, err_cap) != 0)
        return -1;
    struct event_target *out = NULL;
    size_t n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *manifest_bytes = sqlite3_column_blob(st, 2);
        int len = sqlite3_column_bytes(st, 2);
        struct manifest m;
        if (manifest_bytes == NULL || len <= 0 ||
            manifest_parse(manifest_bytes, (size_t)len, &m, NULL, 0) != 0)
            continue;
        bool listens = lists_event(&m, module, name, version);
        manifest_free(&m);
        if (!listens)
            continue;
        struct event_target *grown = realloc(out, (n + 1) * sizeof *out);
        if (grown == NULL) {
            free(out);
            sql_release(st);
            return error_line(err, err_cap, "out of memory");
        }
        out = grown;
        sql_column_copy(st, 0, out[n].flow, sizeof out[n].flow);
        out[n].version = sqlite3_column_int64(st, 1);
        n++;
    }
    sql_release(st);
    if (rc != SQLITE_DONE) {
        free(out);
        return sql_fail(db, err, err_cap);
    }
    *targets = out;
    *count = n;
    return 0;
}
