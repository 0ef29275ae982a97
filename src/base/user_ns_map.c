/* user_ns_map_self: three writes to /proc/self, async-signal-safe calls only. */
#include "base/user_ns_map.h"

#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static bool write_self_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t len = strlen(text);
    bool ok = write(fd, text, len) == (ssize_t)len;
    close(fd);
    return ok;
}

bool user_ns_map_self(const char *uid_map, const char *gid_map)
{
    return prctl(PR_SET_DUMPABLE, 1) == 0 && write_self_file("/proc/self/setgroups", "deny") &&
           write_self_file("/proc/self/gid_map", gid_map) &&
           write_self_file("/proc/self/uid_map", uid_map);
}
