/* Leftovers of a crashed run's fs.write calls (see run_cleanup.h). */
#include "flows/run_cleanup.h"

#include "host/fs_builtin.h"

#include <jansson.h>
#include <string.h>

size_t run_cleanup_temporaries(const struct manifest *m, const char *home,
                               const struct journal_entry *rows, size_t count)
{
    size_t removed = 0;
    for (size_t i = 0; i < count; i++) {
        const struct journal_entry *e = &rows[i];
        /* With an outcome, the call's temporary file was renamed or removed before. */
        if (e->has_outcome || strcmp(e->kind, "fs.write") != 0)
            continue;
        json_t *args = json_loadb(e->args, e->args_len, 0, NULL);
        const char *path = json_string_value(json_array_get(args, 0));
        struct fs_grants grants = {(const char *const *)m->fs_read.items, m->fs_read.count,
                                   (const char *const *)m->fs_write.items, m->fs_write.count,
                                   home, NULL};
        int n = path != NULL ? fs_builtin_remove_temporaries(&grants, path, e->key) : 0;
        if (n > 0)
            removed += (size_t)n;
        json_decref(args);
    }
    return removed;
}
