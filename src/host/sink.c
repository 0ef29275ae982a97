/* JSON-lines file sinks (see sink.h for the contract). */
#include "host/sink.h"

#include "base/names.h"
#include "base/json_out.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SINK_FILE_SUFFIX ".jsonl"
/* A line read back may carry a little more than the item (flow, run, key, at); one
 * longer than this cannot be one of ours and is skipped. */
#define SINK_READ_LINE_MAX (SINK_LINE_MAX_BYTES + 8192u)

/* home/sinks as a directory descriptor: created 0700 if absent, never a symbolic
 * link, owned by us and writable by no one else. -1 with errno set (ENOENT if absent
 * and !create). */
static int open_sink_dir(const char *home, bool create)
{
    int home_fd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (home_fd < 0)
        return -1;
    if (create && mkdirat(home_fd, SINK_DIR, 0700) != 0 && errno != EEXIST) {
        int e = errno;
        close(home_fd);
        errno = e;
        return -1;
    }
    int fd = openat(home_fd, SINK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(home_fd);
    if (fd < 0) {
        errno = e;
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

static int file_name(const char *name, char *buf, size_t cap)
{
    if (!object_name_valid(name))
        return -1;
    return (size_t)snprintf(buf, cap, "%s" SINK_FILE_SUFFIX, name) < cap ? 0 : -1;
}

/* The line (without its newline) as malloc'd text, or NULL (out of memory). */
static char *record_line(const struct sink_record *rec, json_t *item)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    json_int_t at = (json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    json_t *obj = json_object();
    if (obj == NULL)
        return NULL;
    char *text = NULL;
    if (json_object_set_new(obj, "flow", rec->flow != NULL ? json_string(rec->flow) : json_null()) ==
            0 &&
        json_object_set_new(obj, "run", json_integer(rec->run_id)) == 0 &&
        json_object_set_new(obj, "position", json_integer(rec->position)) == 0 &&
        json_object_set_new(obj, "key", rec->key != NULL ? json_string(rec->key) : json_null()) ==
            0 &&
        json_object_set_new(obj, "at", json_integer(at)) == 0 &&
        json_object_set(obj, "item", item) == 0)
        text = json_out_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    return text;
}

int sink_append(const char *home, const char *name, const struct sink_record *rec,
                struct host_settlement *out)
{
    char file[128];
    if (file_name(name, file, sizeof file) != 0)
        return host_reject(out, HOST_CODE_INVALID_ARGUMENTS,
                           "sink name is not a name (1-63 of [a-z0-9_.-], starting with a-z or "
                           "0-9)");
    json_error_t je;
    json_t *item = rec->item_json != NULL ? json_loads(rec->item_json, JSON_DECODE_ANY, &je)
                                          : NULL;
    if (item == NULL)
        return host_reject(out, HOST_CODE_INVALID_ARGUMENTS, "sink %s: the item is not JSON",
                           name);
    char *text = record_line(rec, item);
    json_decref(item);
    if (text == NULL)
        return -1;
    size_t len = strlen(text);
    if (len > SINK_LINE_MAX_BYTES) {
        free(text);
        return host_reject(out, HOST_CODE_TOO_LARGE, "sink %s: a line is at most %u bytes, not %zu",
                           name, SINK_LINE_MAX_BYTES, len);
    }
    /* Room for a leading newline (to end a torn last line) and the trailing one. */
    char *line = malloc(len + 3);
    if (line == NULL) {
        free(text);
        return -1;
    }
    line[0] = '\n';
    memcpy(line + 1, text, len);
    line[len + 1] = '\n';
    line[len + 2] = '\0';
    free(text);

    int rc;
    int dir_fd = open_sink_dir(home, true);
    if (dir_fd < 0) {
        rc = host_reject(out, HOST_CODE_IO_ERROR, "sink %s: the %s directory: %s", name, SINK_DIR,
                         errno == EPERM ? "not owned by basal or writable by others"
                                        : strerror(errno));
        free(line);
        return rc;
    }
    int fd = openat(dir_fd, file,
                    O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                    0600);
    if (fd < 0) {
        rc = host_reject(out, HOST_CODE_IO_ERROR, "sink %s: cannot open %s/%s: %s", name, SINK_DIR,
                         file, strerror(errno));
        close(dir_fd);
        free(line);
        return rc;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        rc = host_reject(out, HOST_CODE_IO_ERROR, "sink %s: %s/%s is not a regular file of ours",
                         name, SINK_DIR, file);
        close(fd);
        close(dir_fd);
        free(line);
        return rc;
    }
    /* Appends are serialised (two flows may share a sink), so the file's end is this
     * append's start until it is done, and a failed append can be cut back. */
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    if (fstat(fd, &st) != 0) {
        rc = host_reject(out, HOST_CODE_IO_ERROR, "sink %s: fstat: %s", name, strerror(errno));
        close(fd);
        close(dir_fd);
        free(line);
        return rc;
    }
    /* A last line torn by an earlier failure that could not be cut back (no newline
     * at the end) is ended first, in the same write, so this record is a line of its
     * own (the descriptor is O_RDWR rather than O_WRONLY only for this one-byte
     * read). */
    char last = '\n';
    bool torn = st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n';
    const char *start = torn ? line : line + 1;
    size_t want = torn ? len + 2 : len + 1;
    const char *failed = NULL;
    int err = 0;
    size_t done = 0;
    while (done < want) {
        ssize_t n = write(fd, start + done, want - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* a short write goes on to the error that cut it */
            failed = "write";
            err = n < 0 ? errno : EIO;
            break;
        }
        done += (size_t)n;
    }
    if (failed == NULL && fsync(fd) != 0) {
        failed = "fsync";
        err = errno;
    }
    if (failed != NULL) {
        /* What was written of the line is cut off again: a reader never sees half a
         * record, and the next append starts at a line's start. */
        bool cut = ftruncate(fd, st.st_size) == 0 && fsync(fd) == 0;
        rc = host_reject(out, HOST_CODE_IO_ERROR, "sink %s: %s: %s%s%s%s", name, failed,
                         err == ENOSPC || err == EDQUOT ? "the disk is full (" : "",
                         strerror(err), err == ENOSPC || err == EDQUOT ? ")" : "",
                         cut ? "" : "; the partial line could not be cut back");
    } else {
        if (st.st_size == 0)
            (void)fsync(dir_fd); /* the file may be new: make its name durable too */
        json_t *v = json_pack("{s:I}", "bytes", (json_int_t)len + 1);
        rc = v != NULL ? host_fulfil_json(out, v) : -1;
        json_decref(v);
    }
    close(fd); /* and with it the lock */
    close(dir_fd);
    free(line);
    return rc;
}

/* 1 if line[0..len) is a JSON object whose "key" is the string key. */
static int line_has_key(const char *line, size_t len, const char *key)
{
    if (len == 0)
        return 0;
    json_error_t je;
    json_t *v = json_loadb(line, len, 0, &je);
    const char *k = json_string_value(json_object_get(v, "key"));
    int found = k != NULL && strcmp(k, key) == 0 &&
                strlen(k) == json_string_length(json_object_get(v, "key"));
    json_decref(v);
    return found;
}

int sink_contains_key(const char *home, const char *name, const char *key)
{
    char file[128];
    if (file_name(name, file, sizeof file) != 0) {
        errno = EINVAL;
        return -1;
    }
    int dir_fd = open_sink_dir(home, false);
    if (dir_fd < 0)
        return errno == ENOENT ? 0 : -1;
    int fd = openat(dir_fd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    int e = errno;
    close(dir_fd);
    if (fd < 0) {
        errno = e;
        return e == ENOENT ? 0 : -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    char *buf = malloc(SINK_READ_LINE_MAX + 1);
    if (buf == NULL) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    size_t used = 0;     /* bytes of the current line in buf */
    bool skipping = false; /* inside a line too long to be ours */
    int found = 0;
    for (;;) {
        ssize_t n = read(fd, buf + used, SINK_READ_LINE_MAX + 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            found = -1;
            break;
        }
        if (n == 0) {
            if (!skipping)
                found = line_has_key(buf, used, key); /* a last line without newline */
            break;
        }
        size_t end = used + (size_t)n, from = 0;
        char *nl;
        while ((nl = memchr(buf + from, '\n', end - from)) != NULL) {
            size_t line_end = (size_t)(nl - buf);
            if (!skipping && line_has_key(buf + from, line_end - from, key)) {
                found = 1;
                break;
            }
            skipping = false;
            from = line_end + 1;
        }
        if (found != 0)
            break;
        used = end - from;
        memmove(buf, buf + from, used);
        if (used > SINK_READ_LINE_MAX) { /* no newline within the bound: skip the line */
            skipping = true;
            used = 0;
        }
    }
    int saved = errno;
    free(buf);
    close(fd);
    errno = saved;
    return found;
}
