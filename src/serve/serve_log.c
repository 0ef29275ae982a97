#include "serve/serve_log.h"

#include "base/json_out.h"
#include "base/terminal_chars.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_BYTES 4096

static bool log_json;

void serve_log_json(bool json)
{
    log_json = json;
}

struct line {
    char buf[LINE_MAX_BYTES];
    size_t len;
};

static void put(struct line *l, const char *text, size_t n)
{
    if (l->len + n >= sizeof l->buf - 2)
        n = sizeof l->buf - 2 - l->len;
    memcpy(l->buf + l->len, text, n);
    l->len += n;
}

static bool plain(const char *v)
{
    if (*v == '\0')
        return false;
    for (; *v != '\0'; v++)
        if (!((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') || (*v >= '0' && *v <= '9') ||
              strchr("_.:/@+-", *v) != NULL))
            return false;
    return true;
}

static void put_value(struct line *l, const char *v)
{
    if (plain(v)) {
        put(l, v, strlen(v));
        return;
    }
    put(l, "\"", 1);
    const unsigned char *p = (const unsigned char *)v;
    size_t left = strlen(v);
    while (left > 0) {
        char esc[8];
        uint32_t cp = 0;
        size_t n = terminal_utf8_char(p, left, &cp);
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            put(l, esc, 2);
        } else if (n == 0) { /* not UTF-8: the byte, as hex */
            int k = snprintf(esc, sizeof esc, "\\x%02x", *p);
            put(l, esc, (size_t)k);
            n = 1;
        } else if (terminal_char_active(cp)) { /* as the JSON log and --json spell it */
            int k = snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
            put(l, esc, (size_t)k);
        } else {
            put(l, (const char *)p, n);
        }
        p += n;
        left -= n;
    }
    put(l, "\"", 1);
}

static void timestamp(char *out, size_t cap)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, cap - n, ".%03ldZ", now.tv_nsec / 1000000);
}

static void write_line(const char *text, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(2, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* nowhere to log: the daemon goes on */
        done += (size_t)n;
    }
}

void serve_log(const char *event, ...)
{
    char ts[40];
    timestamp(ts, sizeof ts);
    va_list ap;
    va_start(ap, event);
    if (log_json) {
        json_t *o = json_object();
        json_object_set_new(o, "ts", json_string(ts));
        json_object_set_new(o, "event", json_string(event));
        const char *key;
        while ((key = va_arg(ap, const char *)) != NULL) {
            const char *value = va_arg(ap, const char *);
            json_t *v = json_string(value != NULL ? value : "");
            json_object_set_new(o, key, v != NULL ? v : json_string("(not UTF-8)"));
        }
        va_end(ap);
        char *text = json_out_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(o);
        if (text != NULL) {
            size_t n = strlen(text);
            text[n] = '\n';
            write_line(text, n + 1);
            free(text);
        }
        return;
    }
    struct line l;
    l.len = 0;
    put(&l, "ts=", 3);
    put(&l, ts, strlen(ts));
    put(&l, " event=", 7);
    put_value(&l, event);
    const char *key;
    while ((key = va_arg(ap, const char *)) != NULL) {
        const char *value = va_arg(ap, const char *);
        put(&l, " ", 1);
        put(&l, key, strlen(key));
        put(&l, "=", 1);
        put_value(&l, value != NULL ? value : "");
    }
    va_end(ap);
    l.buf[l.len++] = '\n';
    write_line(l.buf, l.len);
}
