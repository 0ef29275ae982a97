#include "supervisor/kernel_facts.h"

#include "proto/confinement.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

int kernel_landlock_abi(void)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1U /* VERSION */);
    if (abi >= 1)
        return (int)abi;
    if (abi < 0 && (errno == ENOSYS || errno == EOPNOTSUPP))
        return 0;
    return -1;
}

unsigned expected_landlock_abi(unsigned kernel_abi)
{
    return kernel_abi < LANDLOCK_ABI_KNOWN ? kernel_abi : LANDLOCK_ABI_KNOWN;
}

int kernel_has_seccomp_kill_process(void)
{
    uint32_t action = SECCOMP_RET_KILL_PROCESS;
    return syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}
