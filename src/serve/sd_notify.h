/* systemd readiness and watchdog for `ck-basal serve` (libsystemd's sd_notify; a no-op
 * when NOTIFY_SOCKET is not set, i.e. not started by systemd with Type=notify). */
#ifndef BASAL_SERVE_SD_NOTIFY_H
#define BASAL_SERVE_SD_NOTIFY_H

/* Why systemd cannot be told anything (libsystemd could not be loaded), when it waits
 * to be told (NOTIFY_SOCKET or WATCHDOG_USEC set); NULL otherwise. */
const char *serve_notify_unavailable(void);
/* READY=1 with a STATUS= line: recovery is done, work is admitted. */
void serve_notify_ready(const char *status);
/* STOPPING=1: SIGTERM received, draining. */
void serve_notify_stopping(void);
/* The watchdog interval the unit asked for (WatchdogSec=, for this pid), in ms; 0 when
 * none. The daemon pings at half of it. */
long long serve_watchdog_interval_ms(void);
/* WATCHDOG=1. */
void serve_notify_watchdog(void);

#endif
