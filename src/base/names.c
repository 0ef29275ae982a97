/* Names of flows and of the operator's objects: see base/names.h. */
#include "base/names.h"

#include <string.h>

static bool lower_alnum(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

bool flow_id_valid(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > FLOW_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!lower_alnum(id[i]) && id[i] != '_' && id[i] != '-')
            return false;
    }
    return true;
}

bool object_name_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > OBJECT_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!lower_alnum(ch) && (i == 0 || (ch != '_' && ch != '-' && ch != '.')))
            return false;
    }
    return true;
}
