#include "worker/startup_checks.h"

#include "worker/refuse.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

/* Reads a whole /proc file into buf (NUL-terminated). /proc files report size 0, so
 * read until EOF. Returns 0 on success, -1 on error or if it does not fit. */
static int read_proc_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    size_t used = 0;
    for (;;) {
        if (used + 1 >= cap) {
            close(fd);
            return -1;
        }
        ssize_t n = read(fd, buf + used, cap - 1 - used);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    close(fd);
    buf[used] = '\0';
    return 0;
}

static void check_procfs(void)
{
    struct statfs fs;
    if (statfs("/proc", &fs) != 0 || fs.f_type != PROC_SUPER_MAGIC)
        refuse_unconfined("proc-not-procfs");
    /* /proc/self must be this process, not a planted directory. */
    char self[32];
    ssize_t n = readlink("/proc/self", self, sizeof self - 1);
    if (n <= 0)
        refuse_unconfined("proc-not-procfs");
    self[n] = '\0';
    if (strtol(self, NULL, 10) != (long)getpid())
        refuse_unconfined("proc-not-procfs");
}

static void check_single_thread(void)
{
    char status[8192];
    if (read_proc_file("/proc/self/status", status, sizeof status) != 0)
        refuse_unconfined("proc-unreadable");
    const char *line = strstr(status, "\nThreads:");
    if (line == NULL)
        refuse_unconfined("proc-unreadable");
    if (strtol(line + strlen("\nThreads:"), NULL, 10) != 1)
        refuse_unconfined("not-single-threaded");
}

/* An anonymous pipe lives on pipefs; a named FIFO is S_ISFIFO too but lives on the
 * filesystem that holds it, so the magic is what tells them apart. */
static int is_pipe_end(int fd, int accmode)
{
    struct stat st;
    struct statfs fs;
    if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode))
        return 0;
    if (fstatfs(fd, &fs) != 0 || fs.f_type != PIPEFS_MAGIC)
        return 0;
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && (flags & O_ACCMODE) == accmode;
}

const char *check_stdio_pipes(void)
{
    if (!is_pipe_end(0, O_RDONLY))
        return "stdin-not-pipe-read-end";
    if (!is_pipe_end(1, O_WRONLY))
        return "stdout-not-pipe-write-end";
    if (!is_pipe_end(2, O_WRONLY))
        return "stderr-not-pipe-write-end";
    return NULL;
}

static void check_personality(void)
{
    int persona = personality(0xffffffff);
    if (persona < 0 || (persona & READ_IMPLIES_EXEC) != 0)
        refuse_unconfined("read-implies-exec");
}

/* Each line of /proc/self/maps: "start-end perms offset dev inode path". */
static void check_mappings(void)
{
    static char maps[256 * 1024];
    if (read_proc_file("/proc/self/maps", maps, sizeof maps) != 0)
        refuse_unconfined("proc-unreadable");
    for (char *line = maps; *line != '\0';) {
        char *end = strchr(line, '\n');
        if (end != NULL)
            *end = '\0';
        const char *perms = strchr(line, ' ');
        if (perms == NULL || strlen(perms) < 5)
            refuse_unconfined("proc-unreadable");
        perms++;
        int writable = perms[1] == 'w';
        int executable = perms[2] == 'x';
        /* An executable stack is writable too: name it first, it is the more
         * specific finding. */
        if (executable && strstr(line, "[stack") != NULL)
            refuse_unconfined("executable-stack");
        if (writable && executable)
            refuse_unconfined("writable-executable-mapping");
        if (perms[3] == 's')
            refuse_unconfined("shared-mapping");
        if (end == NULL)
            break;
        line = end + 1;
    }
}

void startup_checks_or_refuse(void)
{
    check_procfs();
    check_single_thread();
    const char *stdio_problem = check_stdio_pipes();
    if (stdio_problem != NULL)
        refuse_unconfined(stdio_problem);
    check_personality();
    check_mappings();
}
