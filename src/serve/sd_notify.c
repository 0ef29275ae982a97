/* systemd notifications by libsystemd. sd_notify is a no-op (0) without NOTIFY_SOCKET;
 * a failed send is not an error the daemon could act on, so results are dropped: the
 * unit's own timeouts (TimeoutStartSec, WatchdogSec) catch a serve that never reports. */
#include "serve/sd_notify.h"

#include <stdio.h>
#include <systemd/sd-daemon.h>

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
    (void)sd_notifyf(0, "READY=1\nSTATUS=%s", line);
}

void serve_notify_stopping(void)
{
    (void)sd_notify(0, "STOPPING=1");
}

long long serve_watchdog_interval_ms(void)
{
    uint64_t usec = 0;
    /* > 0 only when WATCHDOG_USEC is set and valid and WATCHDOG_PID (if set) is us. */
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
        return 0;
    long long ms = (long long)(usec / 1000);
    return ms > 0 ? ms : 1;
}

void serve_notify_watchdog(void)
{
    (void)sd_notify(0, "WATCHDOG=1");
}
