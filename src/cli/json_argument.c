#include "cli/json_argument.h"

#include "cli/commands.h"

#include "serve/ops_commands.h"

#include <stdbool.h>
#include <stdio.h>

char *cli_json_argument(const char *what, const char *option, const char *text, int *status)
{
    char why[320];
    bool out_of_memory;
    char *out = ops_json_value(text, why, sizeof why, &out_of_memory);
    if (out != NULL) {
        *status = EXIT_OK;
        return out;
    }
    *status = out_of_memory ? EXIT_REFUSED : EXIT_USAGE;
    if (out_of_memory)
        fprintf(stderr, "ck-basal %s: out of memory\n", what);
    else
        fprintf(stderr, "ck-basal %s: %s %s\n", what, option, why);
    return NULL;
}
