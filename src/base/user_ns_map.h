/* Mapping a process's own new user namespace, between clone (or unshare) and exec. */
#ifndef BASAL_BASE_USER_NS_MAP_H
#define BASAL_BASE_USER_NS_MAP_H

#include <stdbool.h>

/* Makes the process dumpable (one that changed its uid without exec is not, and its
 * /proc/self files then belong to root), denies setgroups and writes its gid_map and
 * uid_map ("INSIDE OUTSIDE COUNT", formatted before the clone). Async-signal-safe.
 * False if any step failed. */
bool user_ns_map_self(const char *uid_map, const char *gid_map);

#endif
