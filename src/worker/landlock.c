#include "worker/landlock.h"

#include "worker/refuse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Debian 12's <linux/landlock.h> stops at ABI 2, so the rights are spelled out here
 * from the kernel's Landlock documentation. Each ABI adds the rights listed. */
#define LL_CREATE_RULESET_VERSION (1U << 0)

#define LL_FS_ABI1 ((1ULL << 13) - 1) /* EXECUTE .. MAKE_SYM: bits 0-12 */
#define LL_FS_REFER (1ULL << 13)      /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)   /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)  /* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)   /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)
/* ABI 7 adds only audit-logging flags for restrict_self: no new right to handle. */

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

int landlock_kernel_abi(void)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    if (abi >= 1)
        return (int)abi;
    if (abi < 0 && (errno == ENOSYS || errno == EOPNOTSUPP))
        return 0;
    return -1;
}

static struct ll_ruleset_attr rights_for_abi(unsigned abi)
{
    struct ll_ruleset_attr attr = {0, 0, 0};
    attr.handled_access_fs = LL_FS_ABI1;
    if (abi >= 2)
        attr.handled_access_fs |= LL_FS_REFER;
    if (abi >= 3)
        attr.handled_access_fs |= LL_FS_TRUNCATE;
    if (abi >= 4)
        attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
    if (abi >= 5)
        attr.handled_access_fs |= LL_FS_IOCTL_DEV;
    if (abi >= 6)
        attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
    return attr;
}

/* The struct grew with the ABI; pass only the part this ABI knows, so an older
 * kernel never sees fields it would reject. */
static size_t attr_size_for_abi(unsigned abi)
{
    if (abi >= 6)
        return sizeof(struct ll_ruleset_attr);
    if (abi >= 4)
        return 2 * sizeof(uint64_t);
    return sizeof(uint64_t);
}

struct landlock_outcome landlock_apply_or_refuse(enum landlock_policy policy)
{
    struct landlock_outcome outcome = {0, 0};
    int kernel_abi = landlock_kernel_abi();
    if (kernel_abi < 0)
        refuse_unconfined("landlock");
    if (kernel_abi == 0) {
        if (policy == LANDLOCK_POLICY_OPTIONAL)
            return outcome; /* the one case that runs without Landlock */
        refuse_unconfined("landlock-unavailable");
    }
    outcome.runtime_abi = (unsigned)kernel_abi;
    outcome.applied_abi = outcome.runtime_abi < LANDLOCK_ABI_KNOWN ? outcome.runtime_abi
                                                                   : LANDLOCK_ABI_KNOWN;

    struct ll_ruleset_attr attr = rights_for_abi(outcome.applied_abi);
    long ruleset = syscall(SYS_landlock_create_ruleset, &attr,
                           attr_size_for_abi(outcome.applied_abi), 0U);
    if (ruleset <= 2) /* an fd in the stdio range would be a faked success */
        refuse_unconfined("landlock");
    long restricted = syscall(SYS_landlock_restrict_self, (int)ruleset, 0U);
    int saved = errno;
    close((int)ruleset);
    errno = saved;
    if (restricted != 0)
        refuse_unconfined("landlock");

    /* Prove the domain is in force: an empty ruleset handling READ_DIR must deny
     * opening the root directory. */
    int probe = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (probe >= 0) {
        close(probe);
        refuse_unconfined("landlock-not-enforced");
    }
    if (errno != EACCES)
        refuse_unconfined("landlock-not-enforced");
    return outcome;
}
