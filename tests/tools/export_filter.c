/* export_filter PID PFC_OUT BPF_OUT: writes the worker's seccomp filter, built for
 * this build's own architecture (SCMP_ARCH_NATIVE, as the worker builds it) and the
 * given pid, as libseccomp's pseudo filter code and as the BPF program the kernel
 * would run. It never loads the filter. mk/aarch64.mk runs the arm64 build of it under
 * qemu-aarch64-static, so tests/t_syscall_table.c can check the filter of the arm64
 * build on this x86-64 machine. Exit 0, or 1 with a line on stderr. */
#include "worker/seccomp_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int export_to(scmp_filter_ctx ctx, const char *path, int (*export)(scmp_filter_ctx, int))
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "export_filter: %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = export(ctx, fd);
    if (close(fd) != 0 || rc != 0) {
        fprintf(stderr, "export_filter: %s: export failed (%d)\n", path, rc);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: export_filter PID PFC_OUT BPF_OUT\n");
        return 1;
    }
    char *end = NULL;
    long pid = strtol(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || pid <= 0) {
        fprintf(stderr, "export_filter: not a pid: %s\n", argv[1]);
        return 1;
    }
    /* libseccomp asks the kernel which API level it offers (KILL_PROCESS needs 3,
     * TSYNC 2). Under qemu-user the seccomp system call is not there, so it sees
     * level 0 and the policy's attributes are refused. The level decides what may be
     * built, not the program's instructions; nothing here is loaded, so take the
     * highest level this libseccomp knows. */
    if (seccomp_api_get() < 3) {
        for (unsigned level = 8; level >= 3; level--)
            if (seccomp_api_set(level) == 0)
                break;
    }
    fprintf(stderr, "export_filter: libseccomp API level %u\n", seccomp_api_get());
    scmp_filter_ctx ctx = seccomp_policy_build(SCMP_ARCH_NATIVE, (pid_t)pid);
    if (ctx == NULL) {
        fprintf(stderr, "export_filter: seccomp_policy_build failed\n");
        return 1;
    }
    int rc = export_to(ctx, argv[2], seccomp_export_pfc) == 0 &&
                     export_to(ctx, argv[3], seccomp_export_bpf) == 0
                 ? 0
                 : 1;
    seccomp_release(ctx);
    return rc;
}
