/* IANA time zones read from the system's TZif files (RFC 8536), without the C
 * library's TZ machinery (setenv("TZ") + localtime_r is process-global state and not
 * safe in the multi-threaded daemon). A loaded zone is immutable and may be shared by
 * threads.
 *
 * What is read: the header and, for version 2 and later, the 64-bit data section (a
 * version 1 file's 32-bit section otherwise); the POSIX TZ footer string ("EST5EDT,
 * M3.2.0,M11.1.0", "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0") answers instants at or
 * past the last transition. Before the first transition the zone's first local time
 * type applies. Versions 1-3 are accepted (and 4, which differs from 3 only in the
 * leap-second table); a file with leap-second records ("right/...") is refused, as is
 * anything malformed: a zone that cannot be read exactly is never guessed at.
 */
#ifndef BASAL_FLOWS_ZONEINFO_H
#define BASAL_FLOWS_ZONEINFO_H

#include <stddef.h>
#include <stdint.h>

#define ZONEINFO_DIR "/usr/share/zoneinfo"
#define ZONEINFO_NAME_MAX 64
#define ZONEINFO_FILE_MAX (256L * 1024)

struct zoneinfo;

/* Checks a zone name: 1..ZONEINFO_NAME_MAX bytes of [A-Za-z0-9_+-/], no leading '/',
 * no "..", no empty component. Returns 0, or -1 with one line in err naming tz. */
int zoneinfo_name_check(const char *tz, char *err, size_t err_cap);

/* Loads zone tz: "UTC" is built in, any other name is ZONEINFO_DIR/tz. Returns 0 with
 * *out owned by the caller (zoneinfo_free), or -1 with one line in err such as
 * "tz 'Mars/Olympus': unknown time zone (no such file in /usr/share/zoneinfo)". */
int zoneinfo_load(const char *tz, struct zoneinfo **out, char *err, size_t err_cap);
void zoneinfo_free(struct zoneinfo *z);

/* The zone's offset from UTC in seconds (east positive) at instant t. */
int32_t zoneinfo_offset(const struct zoneinfo *z, int64_t t);

/* Calendar helpers on the proleptic Gregorian calendar (days since 1970-01-01). */
int64_t zoneinfo_days_from_civil(int64_t year, unsigned month, unsigned day);
void zoneinfo_civil_from_days(int64_t days, int64_t *year, unsigned *month, unsigned *day);
/* 0 = Sunday. */
unsigned zoneinfo_weekday(int64_t days);
unsigned zoneinfo_month_days(int64_t year, unsigned month);

#endif
