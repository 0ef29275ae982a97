#include "supervisor/proc_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int field(const char *text, const char *name, int *out)
{
    size_t len = strlen(name);
    for (const char *line = text; line != NULL && *line != '\0';) {
        if (strncmp(line, name, len) == 0 && line[len] == ':') {
            char *end;
            long value = strtol(line + len + 1, &end, 10);
            if (end == line + len + 1)
                return -1;
            *out = (int)value;
            return 0;
        }
        line = strchr(line, '\n');
        if (line != NULL)
            line++;
    }
    return -1;
}

int proc_status_read(pid_t pid, struct proc_status *out)
{
    char path[64];
    if (pid == 0)
        snprintf(path, sizeof path, "/proc/self/status");
    else
        snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    if (field(text, "Seccomp", &out->seccomp) != 0 ||
        field(text, "NoNewPrivs", &out->no_new_privs) != 0 ||
        field(text, "Threads", &out->threads) != 0 ||
        field(text, "Seccomp_filters", &out->seccomp_filters) != 0)
        return -1;
    return 0;
}
