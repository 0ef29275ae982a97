#!/usr/bin/python3
"""The independent answer for tests/t_schedule.c: the next cron fire instant by brute
force, minute by minute, on Python's zoneinfo (the system's tzdata).

stdin: one case per line, "EXPR<TAB>ZONE<TAB>AFTER_UNIX_S[<TAB>COUNT]", or the line
"gaps".
stdout: one line per case: the next COUNT (default 1) fire instants (unix seconds),
each after the one before, separated by spaces; "never" in place of one not found.
For "gaps": the longest wait, in days, between two days of one (month, day of month,
weekday) over a whole 400-year Gregorian cycle, then the longest between two Sundays
that are 29 February.

Far fires (years away) are found by first walking local days to the first whose date
matches the expression's day fields (at most two Gregorian cycles), then walking
minutes from two days before it.

The rule, stated without gaps or overlaps: walk the instants t (whole UTC minutes)
after AFTER; a local minute L fires at the first t whose wall clock reaches L, i.e.
L lies in (highest wall clock seen before t, wall clock at t]. A spring-forward jump
makes that interval span the whole gap (all of it fires once, at the jump); a
fall-back repeats wall times that were already seen (they do not fire again).
Shares no code or method with src/flows/schedule.c (which resolves each local time
to an instant instead).
"""
import datetime
import sys
import zoneinfo

MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]


def parse_value(text, names, first):
    if names and text.upper() in names:
        return names.index(text.upper()) + first
    return int(text)


def parse_field(text, lo, hi, names=None, first=0):
    allowed = set()
    for item in text.split(","):
        base, _, step = item.partition("/")
        step = int(step) if step else 1
        if base == "*":
            a, b = lo, hi
        elif "-" in base:
            x, y = base.split("-")
            a, b = parse_value(x, names, first), parse_value(y, names, first)
        else:
            a = b = parse_value(base, names, first)
        allowed.update(range(a, b + 1, step))
    return allowed


class Cron:
    def __init__(self, expr):
        f = expr.split(" ")
        assert len(f) == 5, expr
        self.minute = parse_field(f[0], 0, 59)
        self.hour = parse_field(f[1], 0, 23)
        self.mday = parse_field(f[2], 1, 31)
        self.month = parse_field(f[3], 1, 12, MONTHS, 1)
        self.wday = {d % 7 for d in parse_field(f[4], 0, 7, DAYS, 0)}
        self.either = not f[2].startswith("*") and not f[4].startswith("*")

    def day_matches(self, day):  # a date
        if day.month not in self.month:
            return False
        m = day.day in self.mday
        w = (day.isoweekday() % 7) in self.wday
        return (m or w) if self.either else (m and w)

    def matches(self, local):  # a naive datetime
        if local.minute not in self.minute or local.hour not in self.hour:
            return False
        return self.day_matches(local.date())


EPOCH = datetime.datetime(1970, 1, 1)


def wall_seconds(t, zone):
    """The wall clock at instant t, as seconds since 1970-01-01 local."""
    return t + int(datetime.datetime.fromtimestamp(t, zone).utcoffset().total_seconds())


CYCLE_DAYS = 146097  # 400 Gregorian years


def skip_days(cron, zone, after):
    """An instant at or after `after` with no fire between them: two days before the
    first local day whose date matches, when that is further away; None if no day
    within two cycles matches."""
    today = datetime.datetime.fromtimestamp(after, zone).date()
    day = today
    for _ in range(2 * CYCLE_DAYS):
        if cron.day_matches(day):
            break
        day += datetime.timedelta(days=1)
    else:
        return None
    if (day - today).days <= 3:
        return after
    start = datetime.datetime.combine(day - datetime.timedelta(days=2), datetime.time(), zone)
    return max(after, int(start.timestamp()))


def walk_minutes(cron, zone, after, days):
    """The first fire in (after, after + days], minute by minute, or None."""
    # The highest wall clock reached up to and including `after` (two days back covers
    # any fall-back).
    start = (after // 60) * 60
    seen = max(wall_seconds(s, zone) for s in range(start - 2 * 86400, start + 1, 60))
    seen = max(seen, wall_seconds(after, zone))
    t = start + 60
    end = after + days * 86400
    while t <= end:
        w = wall_seconds(t, zone)
        local_minute = (seen // 60) * 60 + 60
        while local_minute <= w:
            if cron.matches(EPOCH + datetime.timedelta(seconds=local_minute)):
                return t
            local_minute += 60
        seen = max(seen, w)
        t += 60
    return None


WALK_DAYS = 4


def next_fire(expr, zone_name, after):
    cron = Cron(expr)
    zone = zoneinfo.ZoneInfo(zone_name)
    limit = after + 2 * CYCLE_DAYS * 86400
    while after < limit:
        start = skip_days(cron, zone, after)
        if start is None:
            return None
        found = walk_minutes(cron, zone, start, WALK_DAYS)
        if found is not None:
            return found
        after = start + WALK_DAYS * 86400  # nothing fires up to here
    return None


def gaps():
    """The longest waits over one cycle (and one day more, to close it)."""
    start = datetime.date(2000, 1, 1)
    last = {}
    longest = sundays = 0
    for i in range(CYCLE_DAYS + 366 * 8):
        day = start + datetime.timedelta(days=i)
        key = (day.month, day.day, day.isoweekday() % 7)
        if key in last:
            longest = max(longest, i - last[key])
            if key == (2, 29, 0):
                sundays = max(sundays, i - last[key])
        last[key] = i
    return longest, sundays


def main():
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            continue
        if line == "gaps":
            print("%d %d" % gaps(), flush=True)
            continue
        fields = line.split("\t")
        expr, zone_name, after = fields[0], fields[1], int(fields[2])
        count = int(fields[3]) if len(fields) > 3 else 1
        out = []
        for _ in range(count):
            result = next_fire(expr, zone_name, after) if after is not None else None
            out.append("never" if result is None else str(result))
            after = result
        print(" ".join(out), flush=True)


if __name__ == "__main__":
    main()
