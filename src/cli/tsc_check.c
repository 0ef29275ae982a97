/* tsc_check: a temporary directory with tools.d.ts, script.ts and tsconfig.json, tsc run
 * on it as a child that dies with us, its findings rewritten to the script's lines. */
#include "cli/tsc_check.h"
#include "base/error_line.h"
#include "cli/term_text.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The options make the script what it is at run time: ES2022 without the DOM (whose
 * `console` would clash with ours), no ambient @types from the file system, and a
 * JavaScript body's catch variables and unannotated parameters `any`. */
const char TSC_CONFIG_JSON[] =
    "{\n"
    "  \"compilerOptions\": {\n"
    "    \"strict\": true,\n"
    "    \"noEmit\": true,\n"
    "    \"target\": \"es2022\",\n"
    "    \"lib\": [\"es2022\"],\n"
    "    \"types\": [],\n"
    "    \"noImplicitAny\": false,\n"
    "    \"useUnknownInCatchVariables\": false\n"
    "  },\n"
    "  \"files\": [\"tools.d.ts\", \"script.ts\"]\n"
    "}\n";

/* tsc's output beyond this is cut (an agent's script has a handful of findings). */
#define TSC_OUTPUT_MAX (1u << 20)

static int write_file(const char *dir, const char *name, const char *head, const char *body,
                      size_t len, const char *tail)
{
    char path[4096 + 32];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    if (f == NULL) {
        close(fd);
        return -1;
    }
    bool ok = fputs(head, f) >= 0 && fwrite(body, 1, len, f) == len && fputs(tail, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static void remove_dir(const char *dir)
{
    static const char *const NAMES[] = {"tools.d.ts", "script.ts", "tsconfig.json"};
    char path[4096 + 32];
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, NAMES[i]);
        (void)unlink(path);
    }
    (void)rmdir(dir);
}

/* tsc -p . in dir, its stdout and stderr into *out (malloc'd, NUL-terminated). Returns its
 * exit status, or -1 (err) when it could not start; 127: not found. */
static int run_tsc(const char *tsc, const char *dir, char **out, char *err, size_t cap)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return error_line(err, cap, "cannot make a pipe for tsc: %s", strerror(errno));
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return error_line(err, cap, "cannot start tsc: %s", strerror(errno));
    }
    if (pid == 0) {
        /* No child outlives its parent. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(126);
        if (dup2(pipefd[1], STDOUT_FILENO) < 0 || dup2(pipefd[1], STDERR_FILENO) < 0)
            _exit(126);
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull < 0 || dup2(devnull, STDIN_FILENO) < 0)
            _exit(126);
        /* In the directory, so tsc names the files as script.ts(LINE,COLUMN). */
        if (chdir(dir) != 0)
            _exit(126);
        execlp(tsc, tsc, "-p", ".", "--pretty", "false", (char *)NULL);
        _exit(errno == ENOENT ? 127 : 126);
    }
    close(pipefd[1]);
    /* Read to the end (so tsc is never blocked on a full pipe), keep the first part. */
    size_t used = 0;
    char *buf = malloc(TSC_OUTPUT_MAX + 1);
    char discard[4096];
    for (;;) {
        bool full = buf == NULL || used == TSC_OUTPUT_MAX;
        ssize_t got = full ? read(pipefd[0], discard, sizeof discard)
                           : read(pipefd[0], buf + used, TSC_OUTPUT_MAX - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        if (!full)
            used += (size_t)got;
    }
    close(pipefd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (buf == NULL)
        return error_line(err, cap, "out of memory for tsc's output");
    buf[used] = '\0';
    *out = buf;
    if (!WIFEXITED(status)) {
        free(buf);
        *out = NULL;
        return error_line(err, cap, "tsc died by signal %d", WTERMSIG(status));
    }
    return WEXITSTATUS(status);
}

/* One finding line: "script.ts(L,C): ..." becomes "NAME:L-1:C: ..." (the wrapper's head
 * is line 1); anything else is shown as tsc wrote it. Escaped for a terminal. */
static void print_finding(const char *line, size_t len, const char *script_name)
{
    static const char PREFIX[] = "script.ts(";
    const char *p = line + sizeof PREFIX - 1;
    char *after_line = NULL, *after_col = NULL;
    unsigned long ln = 0, col = 0;
    if (len > sizeof PREFIX && strncmp(line, PREFIX, sizeof PREFIX - 1) == 0) {
        ln = strtoul(p, &after_line, 10);
        if (after_line != p && *after_line == ',')
            col = strtoul(after_line + 1, &after_col, 10);
    }
    if (after_col != NULL && after_col != after_line + 1 && *after_col == ')' && ln >= 2) {
        term_puts(stdout, script_name, 0);
        printf(":%lu:%lu", ln - 1, col);
        size_t skip = (size_t)(after_col + 1 - line);
        term_put(stdout, line + skip, len - skip, 0);
    } else {
        term_put(stdout, line, len, 0);
    }
    putchar('\n');
}

int tsc_check(const char *tsc, const char *declarations, const char *script, size_t len,
              const char *script_name, char *err, size_t err_cap)
{
    /* A path is resolved here: tsc runs in the temporary directory. */
    char resolved[PATH_MAX];
    if (strchr(tsc, '/') != NULL) {
        if (realpath(tsc, resolved) == NULL)
            return error_line(err, err_cap, "%s: %s", tsc, strerror(errno));
        tsc = resolved;
    }
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] != '/')
        tmp = "/tmp";
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/basal-tsc-XXXXXX", tmp);
    if (mkdtemp(dir) == NULL)
        return error_line(err, err_cap, "cannot make a temporary directory in %s: %s", tmp,
                          strerror(errno));
    int rc = -1;
    char *out = NULL;
    if (write_file(dir, "tools.d.ts", "", declarations, strlen(declarations), "") != 0 ||
        write_file(dir, "script.ts", TSC_SCRIPT_HEAD, script, len, TSC_SCRIPT_TAIL) != 0 ||
        write_file(dir, "tsconfig.json", "", TSC_CONFIG_JSON, strlen(TSC_CONFIG_JSON), "") != 0) {
        error_line(err, err_cap, "cannot write the files for tsc in %s: %s", dir, strerror(errno));
    } else {
        int status = run_tsc(tsc, dir, &out, err, err_cap);
        if (status == 127)
            error_line(err, err_cap,
                       "%s: not found: install the TypeScript compiler (apt-get install "
                       "node-typescript, or npm install -g typescript) or pass --tsc PATH",
                       tsc);
        else if (status == 126)
            error_line(err, err_cap, "%s: cannot be run", tsc);
        else if (status >= 0 && out != NULL) {
            for (const char *line = out; *line != '\0';) {
                size_t n = strcspn(line, "\n");
                if (n > 0)
                    print_finding(line, n, script_name);
                line += n + (line[n] == '\n');
            }
            rc = status == 0 ? 0 : 1;
        }
    }
    free(out);
    remove_dir(dir);
    return rc;
}
