#include "ck/child_process.h"

#include "base/error_line.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int child_run(char *const argv[], char *out, size_t cap, int quiet_stderr, char *err,
              size_t err_cap)
{
    int pipe_fds[2] = {-1, -1};
    if (out != NULL && pipe2(pipe_fds, O_CLOEXEC) != 0)
        return error_line(err, err_cap, "cannot run %s: pipe: %s", argv[0], strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        if (out != NULL) {
            close(pipe_fds[0]);
            close(pipe_fds[1]);
        }
        return error_line(err, err_cap, "cannot run %s: fork: %s", argv[0], strerror(errno));
    }
    if (pid == 0) {
        if (out != NULL && dup2(pipe_fds[1], STDOUT_FILENO) < 0)
            _exit(127);
        if (quiet_stderr) {
            int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
            if (null_fd < 0 || dup2(null_fd, STDERR_FILENO) < 0)
                _exit(127);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    if (out != NULL) {
        close(pipe_fds[1]);
        size_t used = 0;
        for (;;) {
            char buf[4096];
            ssize_t n = read(pipe_fds[0], buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            size_t keep = cap > used + 1 ? cap - used - 1 : 0;
            if (keep > (size_t)n)
                keep = (size_t)n;
            memcpy(out + used, buf, keep);
            used += keep;
        }
        out[used] = '\0';
        close(pipe_fds[0]);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return error_line(err, err_cap, "cannot wait for %s: %s", argv[0], strerror(errno));
    }
    if (WIFEXITED(status)) {
        if (WEXITSTATUS(status) == 127)
            error_line(err, err_cap, "%s could not be started (exit 127)", argv[0]);
        return WEXITSTATUS(status);
    }
    return error_line(err, err_cap, "%s died by signal %d", argv[0], WTERMSIG(status));
}
