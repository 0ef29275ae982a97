/* Times a command run as a fresh process, N times back to back.
 * Each sample is fork to waitpid's return, with the child's stdout read through a pipe
 * and checked: one of its lines must be EXPECT. Prints one line per run: microseconds.
 * When BENCH_START_AT (CLOCK_MONOTONIC, microseconds) is set, the first run starts at
 * that time and the last line is "# end T" (CLOCK_MONOTONIC µs after the last run), so
 * that two of these started together measure two streams at once.
 *
 *   spawn_time N EXPECT CMD [ARGS...]
 *   spawn_time --now      prints CLOCK_MONOTONIC in microseconds
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

/* Whether one line of out (NUL-terminated) is exactly expect. */
static int has_line(const char *out, const char *expect)
{
    size_t n = strlen(expect);
    for (const char *l = out; l != NULL && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, expect, n) == 0 && (l[n] == '\n' || l[n] == 0))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--now") == 0) {
        printf("%.0f\n", now_us());
        return 0;
    }
    if (argc < 4) { fprintf(stderr, "usage: spawn_time N EXPECT CMD [ARGS...]\n"); return 2; }
    long n = strtol(argv[1], NULL, 10);
    const char *expect = argv[2];
    const char *start_at = getenv("BENCH_START_AT");
    if (start_at != NULL) {
        double t = strtod(start_at, NULL), left;
        while ((left = t - now_us()) > 0) {
            struct timespec ts = {(time_t)(left / 1e6), (long)(left - (double)(time_t)(left / 1e6) * 1e6) * 1000};
            nanosleep(&ts, NULL);
        }
    }
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
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !has_line(out, expect)) {
            out[strcspn(out, "\n")] = 0;
            fprintf(stderr, "spawn_time: %s: status %d, output '%s' (expected '%s')\n", argv[3], st, out, expect);
            return 1;
        }
        printf("%.3f\n", t1 - t0);
    }
    if (start_at != NULL)
        printf("# end %.3f\n", now_us());
    return 0;
}
