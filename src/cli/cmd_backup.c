/* ck-basal backup DEST: a copy of the store that is safe while a serve runs
 * (store/store_backup.h: SQLite's online backup API, never a file copy). Reads only:
 * nothing in the data home changes. */
#include "cli/commands.h"
#include "cli/term_text.h"
#include "store/datahome.h"
#include "store/store.h"
#include "store/store_backup.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define BACKUP_USAGE "usage: ck-basal backup DEST (a new file; it must not exist)"

int cmd_backup(const struct cli_globals *g, int argc, char **argv)
{
    if (argc != 1 || argv[0][0] == '-' || argv[0][0] == '\0') {
        fprintf(stderr, "ck-basal backup: %s (%s)\n",
                argc == 0 ? "missing DEST" : "unexpected arguments", BACKUP_USAGE);
        return EXIT_USAGE;
    }
    if (store_location() != NULL) {
        fprintf(stderr, "ck-basal backup: copies the SQLite store of a data home; a PostgreSQL "
                        "store is backed up by PostgreSQL's own tools (pg_dump)\n");
        return EXIT_REFUSED;
    }
    const char *dest = argv[0];
    char home[PATH_MAX], db[PATH_MAX + 16], err[PATH_MAX + 512];
    if (cli_data_home(g, home, sizeof home, err, sizeof err) != 0 ||
        datahome_prepare(home, false, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal backup: %s\n", err);
        return EXIT_REFUSED;
    }
    snprintf(db, sizeof db, "%s/%s", home, STORE_FILE);
    struct stat st;
    if (lstat(db, &st) != 0) {
        if (errno == ENOENT)
            fprintf(stderr, "ck-basal backup: %s has no store (run ck-basal setup)\n", home);
        else
            fprintf(stderr, "ck-basal backup: cannot inspect %s: %s\n", db, strerror(errno));
        return EXIT_REFUSED;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "ck-basal backup: %s is not a regular file: refused\n", db);
        return EXIT_REFUSED;
    }
    int version = 0;
    if (store_backup_copy(db, dest, &version, err, sizeof err) != 0) {
        char shown[TERM_SHOWN_CAP(sizeof err)];
        fprintf(stderr, "ck-basal backup: %s\n", term_show(shown, sizeof shown, err, 0));
        return EXIT_REFUSED;
    }
    if (g->json) {
        json_t *o = json_pack("{s:s, s:s, s:i}", "backup", dest, "store", db, "schema", version);
        cli_print_json(o);
    } else {
        char shown[TERM_SHOWN_CAP(PATH_MAX)];
        printf("backed up %s (schema %d) to %s (0600, SQLite online backup, integrity_check "
               "ok)\n",
               db, version, term_show(shown, sizeof shown, dest, 0));
    }
    return EXIT_OK;
}
