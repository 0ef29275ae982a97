#include "cli/json_argument.h"

#include "cli/commands.h"

#include "proto/utf8.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

char *cli_json_argument(const char *what, const char *option, const char *text, int *status)
{
    size_t len = strlen(text);
    *status = EXIT_USAGE;
    if (len > CLI_JSON_ARGUMENT_MAX_BYTES) {
        fprintf(stderr, "ck-basal %s: %s is %zu bytes, over %u\n", what, option, len,
                CLI_JSON_ARGUMENT_MAX_BYTES);
        return NULL;
    }
    if (!utf8_valid((const uint8_t *)text, len)) {
        fprintf(stderr, "ck-basal %s: %s is not valid UTF-8\n", what, option);
        return NULL;
    }
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);
    if (v == NULL) {
        for (char *p = e.text; *p != '\0'; p++) /* it may quote the argument: one line */
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                *p = '?';
        fprintf(stderr, "ck-basal %s: %s is not JSON: %s (column %d)\n", what, option, e.text,
                e.column);
        return NULL;
    }
    char *out = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    *status = out != NULL ? EXIT_OK : EXIT_REFUSED;
    if (out == NULL)
        fprintf(stderr, "ck-basal %s: out of memory\n", what);
    return out;
}
