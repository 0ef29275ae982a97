/* Helpers the store-backed commands share. */
#include "cli/commands.h"
#include "base/json_out.h"
#include "store/datahome.h"
#include "store/store.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

int cli_open_store(const struct cli_globals *globals, const char *what, struct store **st,
                   char *home)
{
    char err[512];
    *st = NULL;
    if (cli_data_home(globals, home, PATH_MAX, err, sizeof err) != 0 ||
        datahome_prepare(home, false, NULL, err, sizeof err) != 0 ||
        store_open(home, st, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal %s: %s\n", what, err);
        return -1;
    }
    return 0;
}

void cli_print_json(void *o)
{
    (void)json_out_line(stdout, o, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(o);
}

bool cli_parse_int(const char *text, long long min, long long max, long long *out)
{
    if (text[0] < '0' || text[0] > '9')
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}
