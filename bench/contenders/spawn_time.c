/* Times a command run as a fresh process, N times back to back (issue 5 contenders).
 * Each sample is fork to waitpid's return, with the child's stdout read through a pipe
 * and checked against EXPECT (its first line). Prints one line per run: microseconds.
 *
 *   spawn_time N EXPECT CMD [ARGS...]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    if (argc < 4) { fprintf(stderr, "usage: spawn_time N EXPECT CMD [ARGS...]\n"); return 2; }
    long n = strtol(argv[1], NULL, 10);
    const char *expect = argv[2];
    for (long i = 0; i < n; i++) {
        int p[2];
        if (pipe(p) < 0) { perror("pipe"); return 1; }
        double t0 = now_us();
        pid_t pid = fork();
        if (pid < 0) { perror("fork"); return 1; }
        if (pid == 0) {
            dup2(p[1], 1);
            close(p[0]); close(p[1]);
            execvp(argv[3], argv + 3);
            _exit(127);
        }
        close(p[1]);
        char out[4096];
        size_t len = 0;
        ssize_t r;
        while ((r = read(p[0], out + len, sizeof out - 1 - len)) > 0 || (r < 0 && errno == EINTR))
            if (r > 0) len += (size_t)r;
        close(p[0]);
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        double t1 = now_us();
        out[len] = 0;
        out[strcspn(out, "\n")] = 0;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || strcmp(out, expect) != 0) {
            fprintf(stderr, "spawn_time: %s: status %d, output '%s' (expected '%s')\n", argv[3], st, out, expect);
            return 1;
        }
        printf("%.3f\n", t1 - t0);
    }
    return 0;
}
