/* systemd notifications by libsystemd. sd_notify is a no-op (0) without NOTIFY_SOCKET;
 * a failed send is not an error the daemon could act on, so results are dropped: the
 * unit's own timeouts (TimeoutStartSec, WatchdogSec) catch a serve that never reports.
 * libsystemd is loaded on the first notification (base/shared_library.h says why); a
 * libsystemd that cannot be loaded counts as a failed send, and serve's start says so
 * once in its log when systemd is waiting for one (serve_notify_unavailable). */
#include "serve/sd_notify.h"

#include "base/shared_library.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>

/* libsystemd's ABI has kept this name since 209 (2014). */
#define LIBSYSTEMD_SONAME "libsystemd.so.0"

static struct {
    __typeof__(sd_notify) *notify;
    __typeof__(sd_notifyf) *notifyf;
    __typeof__(sd_watchdog_enabled) *watchdog_enabled;
} systemd;

static const struct shared_symbol symbols[] = {
    SHARED_SYMBOL(systemd, notify, sd_notify),
    SHARED_SYMBOL(systemd, notifyf, sd_notifyf),
    SHARED_SYMBOL(systemd, watchdog_enabled, sd_watchdog_enabled),
};

static struct lazy_library library = LAZY_LIBRARY(LIBSYSTEMD_SONAME, symbols);

static bool loaded(void)
{
    return lazy_library_load(&library, NULL, 0) == 0;
}

const char *serve_notify_unavailable(void)
{
    if (getenv("NOTIFY_SOCKET") == NULL && getenv("WATCHDOG_USEC") == NULL)
        return NULL; /* systemd waits for nothing: no need to load it */
    return loaded() ? NULL : lazy_library_error(&library);
}

/* The STATUS= text must stay one assignment: a line break in it would start another
 * (e.g. MAINPID= or WATCHDOG=trigger), so every control byte becomes a space. */
static void sanitize_status(const char *status, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *c = status != NULL ? status : ""; *c != '\0' && n + 1 < cap; c++) {
        unsigned char byte = (unsigned char)*c;
        if (byte < 0x20 || byte == 0x7f)
            out[n++] = ' ';
        else
            out[n++] = *c;
    }
    out[n] = '\0';
}

void serve_notify_ready(const char *status)
{
    char line[256];
    sanitize_status(status, line, sizeof line);
    if (loaded())
        (void)systemd.notifyf(0, "READY=1\nSTATUS=%s", line);
}

void serve_notify_stopping(void)
{
    if (loaded())
        (void)systemd.notify(0, "STOPPING=1");
}

long long serve_watchdog_interval_ms(void)
{
    uint64_t usec = 0;
    /* > 0 only when WATCHDOG_USEC is set and valid and WATCHDOG_PID (if set) is us. */
    if (!loaded() || systemd.watchdog_enabled(0, &usec) <= 0 || usec == 0)
        return 0;
    long long ms = (long long)(usec / 1000);
    return ms > 0 ? ms : 1;
}

void serve_notify_watchdog(void)
{
    if (loaded())
        (void)systemd.notify(0, "WATCHDOG=1");
}
