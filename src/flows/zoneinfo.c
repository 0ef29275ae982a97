/* TZif reading and UTC offsets by instant (flows/zoneinfo.h; RFC 8536). */
#include "flows/zoneinfo.h"

#include "base/error_line.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Real offsets lie within +-26 h; anything beyond is a corrupt file. */
#define OFFSET_LIMIT (26 * 3600)

/* One rule date of a POSIX TZ string: Jn, n or Mm.w.d, plus the local time of day. */
struct tz_rule_date {
    char form; /* 'J' (1..365, no Feb 29), 'D' (0..365), 'M' */
    unsigned day, month, week, weekday;
    int32_t time_s;
};

struct posix_tz {
    int32_t std_off, dst_off; /* east positive */
    bool has_dst;
    struct tz_rule_date start, end; /* start in standard time, end in DST */
};

struct zoneinfo {
    size_t n_trans;
    int64_t *trans_at;
    uint8_t *trans_type;
    size_t n_types;
    int32_t *type_off;
    bool has_footer;
    struct posix_tz footer;
};

/* ---- calendar ------------------------------------------------------------------ */

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Days since 1970-01-01 by counting 400-year eras of 146097 days from 0000-03-01. */
int64_t zoneinfo_days_from_civil(int64_t year, unsigned month, unsigned day) {
    int64_t y = month <= 2 ? year - 1 : year;
    int64_t era = floor_div(y, 400);
    int64_t year_of_era = y - era * 400;
    int64_t shifted_month = month > 2 ? month - 3 : month + 9; /* March = 0 */
    int64_t day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + day_of_era - 719468;
}

void zoneinfo_civil_from_days(int64_t days, int64_t *year, unsigned *month, unsigned *day) {
    int64_t z = days + 719468;
    int64_t era = floor_div(z, 146097);
    int64_t day_of_era = z - era * 146097;
    int64_t year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
    int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    int64_t shifted_month = (5 * day_of_year + 2) / 153;
    *day = (unsigned)(day_of_year - (153 * shifted_month + 2) / 5 + 1);
    *month = (unsigned)(shifted_month < 10 ? shifted_month + 3 : shifted_month - 9);
    *year = year_of_era + era * 400 + (*month <= 2 ? 1 : 0);
}

unsigned zoneinfo_weekday(int64_t days) {
    return (unsigned)(((days + 4) % 7 + 7) % 7); /* 1970-01-01 was a Thursday */
}

static bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned zoneinfo_month_days(int64_t year, unsigned month) {
    static const unsigned days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month < 1 || month > 12) return 0;
    return month == 2 && is_leap(year) ? 29 : days[month - 1];
}

/* ---- POSIX TZ footer ----------------------------------------------------------- */

static bool parse_digits(const char **p, unsigned max_digits, unsigned *out) {
    unsigned v = 0, n = 0;
    while (**p >= '0' && **p <= '9' && n < max_digits) {
        v = v * 10 + (unsigned)(**p - '0');
        (*p)++;
        n++;
    }
    if (n == 0) return false;
    *out = v;
    return true;
}

/* A zone abbreviation: 3+ letters, or <...> of letters, digits, '+' and '-'. */
static bool parse_abbrev(const char **p) {
    const char *s = *p;
    size_t n = 0;
    if (*s == '<') {
        s++;
        while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
               (*s >= '0' && *s <= '9') || *s == '+' || *s == '-') {
            s++;
            n++;
        }
        if (*s != '>' || n < 3) return false;
        *p = s + 1;
        return true;
    }
    while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')) {
        s++;
        n++;
    }
    if (n < 3) return false;
    *p = s;
    return true;
}

/* [+-]h[h...][:mm[:ss]] up to max_hours; the value in seconds, signed as written. */
static bool parse_hms(const char **p, unsigned max_hours, int32_t *out) {
    int sign = 1;
    if (**p == '+' || **p == '-') {
        sign = **p == '-' ? -1 : 1;
        (*p)++;
    }
    unsigned h = 0, m = 0, s = 0;
    if (!parse_digits(p, 3, &h) || h > max_hours) return false;
    if (**p == ':') {
        (*p)++;
        if (!parse_digits(p, 2, &m) || m > 59) return false;
        if (**p == ':') {
            (*p)++;
            if (!parse_digits(p, 2, &s) || s > 59) return false;
        }
    }
    *out = sign * (int32_t)(h * 3600 + m * 60 + s);
    return true;
}

static bool parse_rule_date(const char **p, struct tz_rule_date *d) {
    memset(d, 0, sizeof *d);
    if (**p == 'J') {
        (*p)++;
        d->form = 'J';
        if (!parse_digits(p, 3, &d->day) || d->day < 1 || d->day > 365) return false;
    } else if (**p == 'M') {
        (*p)++;
        d->form = 'M';
        if (!parse_digits(p, 2, &d->month) || d->month < 1 || d->month > 12) return false;
        if (*(*p)++ != '.') return false;
        if (!parse_digits(p, 1, &d->week) || d->week < 1 || d->week > 5) return false;
        if (*(*p)++ != '.') return false;
        if (!parse_digits(p, 1, &d->weekday) || d->weekday > 6) return false;
    } else {
        d->form = 'D';
        if (!parse_digits(p, 3, &d->day) || d->day > 365) return false;
    }
    d->time_s = 2 * 3600;
    if (**p == '/') {
        (*p)++;
        if (!parse_hms(p, 167, &d->time_s)) return false; /* version 3 extends the hours */
    }
    return true;
}

static bool parse_posix_tz(const char *s, struct posix_tz *tz) {
    memset(tz, 0, sizeof *tz);
    const char *p = s;
    int32_t west = 0;
    if (!parse_abbrev(&p) || !parse_hms(&p, 24, &west)) return false;
    tz->std_off = -west;
    if (*p == '\0') return true;
    if (!parse_abbrev(&p)) return false;
    tz->has_dst = true;
    tz->dst_off = tz->std_off + 3600;
    if (*p != ',' && *p != '\0') {
        if (!parse_hms(&p, 24, &west)) return false;
        tz->dst_off = -west;
    }
    /* DST without rules would mean the C library's built-in default rules; tzdb never
     * writes that, and guessing would be wrong for most of the world. */
    if (*p++ != ',') return false;
    if (!parse_rule_date(&p, &tz->start) || *p++ != ',' || !parse_rule_date(&p, &tz->end))
        return false;
    return *p == '\0';
}

/* The local instant (seconds since the epoch, as if local were UTC) a rule names in a
 * year. */
static int64_t rule_local_seconds(const struct tz_rule_date *d, int64_t year) {
    int64_t days;
    if (d->form == 'J') {
        days = zoneinfo_days_from_civil(year, 1, 1) + d->day - 1;
        if (is_leap(year) && d->day >= 60) days++; /* Jn never counts 29 Feb */
    } else if (d->form == 'D') {
        days = zoneinfo_days_from_civil(year, 1, 1) + d->day;
    } else {
        int64_t first = zoneinfo_days_from_civil(year, d->month, 1);
        unsigned first_wd = zoneinfo_weekday(first);
        unsigned mday = 1 + (d->weekday + 7 - first_wd) % 7 + (d->week - 1) * 7;
        while (mday > zoneinfo_month_days(year, d->month)) mday -= 7; /* week 5 = last */
        days = first + mday - 1;
    }
    return days * 86400 + d->time_s;
}

static int32_t posix_tz_offset(const struct posix_tz *tz, int64_t t) {
    if (!tz->has_dst) return tz->std_off;
    int64_t year;
    unsigned month, day;
    zoneinfo_civil_from_days(floor_div(t + tz->std_off, 86400), &year, &month, &day);
    int64_t start = rule_local_seconds(&tz->start, year) - tz->std_off;
    int64_t end = rule_local_seconds(&tz->end, year) - tz->dst_off;
    bool dst = start < end ? (t >= start && t < end) : !(t >= end && t < start);
    return dst ? tz->dst_off : tz->std_off;
}

/* ---- TZif ---------------------------------------------------------------------- */

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p) {
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct tzif_header {
    char version;
    uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

#define TZIF_HEADER_LEN 44

static bool read_header(const unsigned char *p, size_t len, struct tzif_header *h) {
    if (len < TZIF_HEADER_LEN || memcmp(p, "TZif", 4) != 0) return false;
    h->version = (char)p[4];
    h->isutcnt = be32(p + 20);
    h->isstdcnt = be32(p + 24);
    h->leapcnt = be32(p + 28);
    h->timecnt = be32(p + 32);
    h->typecnt = be32(p + 36);
    h->charcnt = be32(p + 40);
    return true;
}

/* Length of a data block whose times are time_len bytes wide (0 if absurd). */
static size_t block_len(const struct tzif_header *h, size_t time_len) {
    if (h->timecnt > 100000 || h->typecnt > 256 || h->charcnt > 100000 ||
        h->leapcnt > 100000 || h->isutcnt > 256 || h->isstdcnt > 256)
        return 0;
    return (size_t)h->timecnt * (time_len + 1) + (size_t)h->typecnt * 6 + h->charcnt +
           (size_t)h->leapcnt * (time_len + 4) + h->isstdcnt + h->isutcnt;
}

static int parse_tzif(const unsigned char *buf, size_t len, struct zoneinfo *z,
                      const char **why) {
    struct tzif_header h;
    if (!read_header(buf, len, &h)) return *why = "not a TZif file", -1;
    if (h.version != 0 && h.version != '2' && h.version != '3' && h.version != '4')
        return *why = "unsupported TZif version", -1;
    size_t v1_len = block_len(&h, 4);
    if (v1_len == 0 && h.timecnt + h.typecnt > 0) return *why = "malformed TZif counts", -1;
    const unsigned char *data = buf + TZIF_HEADER_LEN;
    size_t time_len = 4;
    const unsigned char *end = buf + len;
    if (h.version != 0) {
        /* Skip the 32-bit block; the 64-bit header and block follow. */
        if ((size_t)(end - data) < v1_len) return *why = "truncated TZif file", -1;
        const unsigned char *h2 = data + v1_len;
        if (!read_header(h2, (size_t)(end - h2), &h) || h.version == 0)
            return *why = "malformed TZif second header", -1;
        data = h2 + TZIF_HEADER_LEN;
        time_len = 8;
    }
    if (h.leapcnt != 0) return *why = "leap-second zones are not supported", -1;
    if (h.typecnt == 0) return *why = "malformed TZif: no local time types", -1;
    if ((h.isutcnt != 0 && h.isutcnt != h.typecnt) ||
        (h.isstdcnt != 0 && h.isstdcnt != h.typecnt))
        return *why = "malformed TZif indicator counts", -1;
    size_t blen = block_len(&h, time_len);
    if (blen == 0 || (size_t)(end - data) < blen) return *why = "truncated TZif file", -1;

    z->n_trans = h.timecnt;
    z->n_types = h.typecnt;
    z->trans_at = calloc(h.timecnt ? h.timecnt : 1, sizeof *z->trans_at);
    z->trans_type = calloc(h.timecnt ? h.timecnt : 1, 1);
    z->type_off = calloc(h.typecnt, sizeof *z->type_off);
    if (!z->trans_at || !z->trans_type || !z->type_off) return *why = "out of memory", -1;
    const unsigned char *p = data;
    for (size_t i = 0; i < h.timecnt; i++, p += time_len) {
        z->trans_at[i] = time_len == 8 ? be64(p) : (int64_t)(int32_t)be32(p);
        if (i > 0 && z->trans_at[i] <= z->trans_at[i - 1])
            return *why = "malformed TZif: transitions out of order", -1;
    }
    for (size_t i = 0; i < h.timecnt; i++, p++) {
        if (*p >= h.typecnt) return *why = "malformed TZif: bad type index", -1;
        z->trans_type[i] = *p;
    }
    for (size_t i = 0; i < h.typecnt; i++, p += 6) {
        int32_t off = (int32_t)be32(p);
        if (off <= -OFFSET_LIMIT || off >= OFFSET_LIMIT || p[4] > 1 || p[5] >= h.charcnt)
            return *why = "malformed TZif: bad local time type", -1;
        z->type_off[i] = off;
    }
    data += blen;
    if (time_len == 8) {
        /* Footer: "\n" TZ-string "\n" (the string may be empty). */
        if (data >= end || *data != '\n') return *why = "malformed TZif footer", -1;
        const unsigned char *nl = memchr(data + 1, '\n', (size_t)(end - data - 1));
        if (!nl || nl - data - 1 > 255) return *why = "malformed TZif footer", -1;
        char footer[256];
        memcpy(footer, data + 1, (size_t)(nl - data - 1));
        footer[nl - data - 1] = '\0';
        if (footer[0] != '\0') {
            if (!parse_posix_tz(footer, &z->footer))
                return *why = "unsupported TZ footer string", -1;
            if (z->footer.std_off <= -OFFSET_LIMIT || z->footer.std_off >= OFFSET_LIMIT ||
                z->footer.dst_off <= -OFFSET_LIMIT || z->footer.dst_off >= OFFSET_LIMIT)
                return *why = "unsupported TZ footer string", -1;
            z->has_footer = true;
        }
    }
    return 0;
}

int32_t zoneinfo_offset(const struct zoneinfo *z, int64_t t) {
    if (z->n_trans == 0) return z->has_footer ? posix_tz_offset(&z->footer, t) : z->type_off[0];
    if (t < z->trans_at[0]) return z->type_off[0];
    if (t >= z->trans_at[z->n_trans - 1] && z->has_footer)
        return posix_tz_offset(&z->footer, t);
    size_t lo = 0, hi = z->n_trans; /* last transition <= t lies in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->trans_at[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return z->type_off[z->trans_type[lo]];
}

/* ---- names and loading --------------------------------------------------------- */

int zoneinfo_name_check(const char *tz, char *err, size_t err_cap) {
    size_t len = strnlen(tz, ZONEINFO_NAME_MAX + 1);
    if (len == 0) return error_line(err, err_cap, "tz: empty time zone name");
    if (len > ZONEINFO_NAME_MAX)
        return error_line(err, err_cap, "tz: time zone name longer than %d bytes",
                          ZONEINFO_NAME_MAX);
    for (size_t i = 0; i < len; i++) {
        char c = tz[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '+' || c == '-' || c == '/';
        if (!ok)
            return error_line(err, err_cap,
                              "tz '%.64s': invalid time zone name (only A-Z a-z 0-9 _ + - /)",
                              tz);
    }
    if (tz[0] == '/' || tz[len - 1] == '/' || strstr(tz, "//") || strstr(tz, ".."))
        return error_line(err, err_cap,
                          "tz '%.64s': invalid time zone name (leading '/' or empty component)",
                          tz);
    return 0;
}

void zoneinfo_free(struct zoneinfo *z) {
    if (!z) return;
    free(z->trans_at);
    free(z->trans_type);
    free(z->type_off);
    free(z);
}

static int read_zone_file(const char *tz, unsigned char **buf, size_t *len, char *err,
                          size_t err_cap) {
    char path[sizeof ZONEINFO_DIR + ZONEINFO_NAME_MAX + 2];
    memcpy(path, ZONEINFO_DIR "/", sizeof ZONEINFO_DIR);
    memcpy(path + sizeof ZONEINFO_DIR, tz, strlen(tz) + 1);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return error_line(err, err_cap,
                              "tz '%s': unknown time zone (no such file in " ZONEINFO_DIR ")",
                              tz);
        return error_line(err, err_cap, "tz '%s': cannot open %s: %s", tz, path,
                          strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        st.st_size > ZONEINFO_FILE_MAX) {
        close(fd);
        return error_line(err, err_cap, "tz '%s': unknown time zone (%s is not a zone file)",
                          tz, path);
    }
    size_t want = (size_t)st.st_size;
    unsigned char *b = malloc(want);
    size_t got = 0;
    while (b && got < want) {
        ssize_t n = read(fd, b + got, want - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (!b || got != want) {
        free(b);
        return error_line(err, err_cap, "tz '%s': cannot read %s", tz, path);
    }
    *buf = b;
    *len = want;
    return 0;
}

int zoneinfo_load(const char *tz, struct zoneinfo **out, char *err, size_t err_cap) {
    *out = NULL;
    if (zoneinfo_name_check(tz, err, err_cap) != 0) return -1;
    struct zoneinfo *z = calloc(1, sizeof *z);
    if (!z) return error_line(err, err_cap, "tz '%s': out of memory", tz);
    if (strcmp(tz, "UTC") == 0) {
        /* Built in: the default zone works even without zoneinfo installed. */
        z->n_types = 1;
        z->type_off = calloc(1, sizeof *z->type_off);
        if (!z->type_off) {
            zoneinfo_free(z);
            return error_line(err, err_cap, "tz '%s': out of memory", tz);
        }
        *out = z;
        return 0;
    }
    unsigned char *buf = NULL;
    size_t len = 0;
    if (read_zone_file(tz, &buf, &len, err, err_cap) != 0) {
        zoneinfo_free(z);
        return -1;
    }
    const char *why = NULL;
    int rc = parse_tzif(buf, len, z, &why);
    free(buf);
    if (rc != 0) {
        zoneinfo_free(z);
        return error_line(err, err_cap, "tz '%s': unknown time zone (%s)", tz, why);
    }
    *out = z;
    return 0;
}
