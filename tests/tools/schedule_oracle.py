#!/usr/bin/python3
"""The independent answer for tests/t_schedule.c: the next cron fire instant by brute
force, minute by minute, on Python's zoneinfo (the system's tzdata).

stdin: one case per line, "EXPR<TAB>ZONE<TAB>AFTER_UNIX_S".
stdout: one line per case, the next fire instant (unix seconds), or "never" when none
within LIMIT_DAYS.

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

LIMIT_DAYS = 400
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

    def matches(self, local):  # a naive datetime
        if local.minute not in self.minute or local.hour not in self.hour:
            return False
        if local.month not in self.month:
            return False
        m = local.day in self.mday
        w = (local.isoweekday() % 7) in self.wday
        return (m or w) if self.either else (m and w)


EPOCH = datetime.datetime(1970, 1, 1)


def wall_seconds(t, zone):
    """The wall clock at instant t, as seconds since 1970-01-01 local."""
    return t + int(datetime.datetime.fromtimestamp(t, zone).utcoffset().total_seconds())


def next_fire(expr, zone_name, after):
    cron = Cron(expr)
    zone = zoneinfo.ZoneInfo(zone_name)
    # The highest wall clock reached up to and including `after` (two days back covers
    # any fall-back).
    start = (after // 60) * 60
    seen = max(wall_seconds(s, zone) for s in range(start - 2 * 86400, start + 1, 60))
    seen = max(seen, wall_seconds(after, zone))
    t = start + 60
    end = after + LIMIT_DAYS * 86400
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


def main():
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            continue
        expr, zone_name, after = line.split("\t")
        result = next_fire(expr, zone_name, int(after))
        print("never" if result is None else result, flush=True)


if __name__ == "__main__":
    main()
