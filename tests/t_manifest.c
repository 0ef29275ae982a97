/* Manifest parsing and validation (src/flows/manifest.c) and the code hash and script
 * validator (src/flows/code_hash.c), in process. Every refusal is checked for the field
 * path it names and for being one line; the code hash against a digest computed here
 * from a hand-built buffer and against a pinned value. */
#include "supervisor/activation.h"
#include "flows/code_hash.h"
#include "flows/manifest.h"
#include "lib/harness.h"
#include "proto/message.h"

#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BASE "\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"p\""
#define MANUAL "\"trigger\":{\"manual\":true}"

static char tmpdir[PATH_MAX];
static char dir_read[PATH_MAX], dir_write[PATH_MAX], dir_repo[PATH_MAX], a_file[PATH_MAX];

/* snprintf for the test's buffers (sized for every case here; a cut shows as a failed
 * check, not as memory damage). */
/* Parses text and expects a refusal whose one-line error contains want. */
static void refuse_len(const char *text, size_t len, const char *want, const char *name)
{
    struct manifest m;
    char err[512];
    int rc = manifest_parse(text, len, &m, err, sizeof err);
    bool zeroed = m.id == NULL && m.purpose == NULL && m.ops == NULL && m.version == 0;
    check(rc == -1 && strstr(err, want) != NULL && strchr(err, '\n') == NULL && zeroed, name,
          "rc %d, error \"%s\", want \"%s\"", rc, err, want);
    if (rc == 0)
        manifest_free(&m);
}

static void refuse(const char *text, const char *want, const char *name)
{
    refuse_len(text, strlen(text), want, name);
}

/* The base fields and a manual trigger, then extra (", ..." or ""). */
static void refuse_extra(const char *extra, const char *want, const char *name)
{
    char buf[8192];
    sfmt(buf, sizeof buf, "{" BASE "," MANUAL "%s}", extra);
    refuse(buf, want, name);
}

static bool accepts(const char *text, struct manifest *m, const char *name)
{
    char err[512];
    int rc = manifest_parse(text, strlen(text), m, err, sizeof err);
    return check(rc == 0, name, "refused: %s", err);
}

static void accept_extra(const char *extra, const char *name)
{
    char buf[8192];
    struct manifest m;
    sfmt(buf, sizeof buf, "{" BASE "," MANUAL "%s}", extra);
    if (accepts(buf, &m, name))
        manifest_free(&m);
}

static void accept_trigger(const char *trigger, const char *name)
{
    char buf[8192];
    struct manifest m;
    sfmt(buf, sizeof buf, "{" BASE ",\"trigger\":%s}", trigger);
    if (accepts(buf, &m, name))
        manifest_free(&m);
}

static void refuse_trigger(const char *trigger, const char *want, const char *name)
{
    char buf[8192];
    sfmt(buf, sizeof buf, "{" BASE ",\"trigger\":%s}", trigger);
    refuse(buf, want, name);
}

static bool setup_dirs(void)
{
    sfmt(tmpdir, sizeof tmpdir, "%s/t_manifest.XXXXXX", harness_tmp_root());
    if (mkdtemp(tmpdir) == NULL)
        return false;
    char *real = realpath(tmpdir, NULL);
    if (real == NULL)
        return false;
    sfmt(tmpdir, sizeof tmpdir, "%s", real);
    free(real);
    sfmt(dir_read, sizeof dir_read, "%s/read", tmpdir);
    sfmt(dir_write, sizeof dir_write, "%s/write", tmpdir);
    sfmt(dir_repo, sizeof dir_repo, "%s/repo", tmpdir);
    sfmt(a_file, sizeof a_file, "%s/afile", tmpdir);
    if (mkdir(dir_read, 0700) != 0 || mkdir(dir_write, 0700) != 0 || mkdir(dir_repo, 0700) != 0)
        return false;
    int fd = open(a_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

static void cleanup_dirs(void)
{
    char p[PATH_MAX + 32];
    unlink(a_file);
    sfmt(p, sizeof p, "%s/manifest.json", tmpdir);
    unlink(p);
    sfmt(p, sizeof p, "%s/big.json", tmpdir);
    unlink(p);
    rmdir(dir_read);
    rmdir(dir_write);
    rmdir(dir_repo);
    rmdir(tmpdir);
}

static char full_text[8192];

static void test_full(void)
{
    /* The read root is given with a "/./" and a trailing slash: its real path is stored. */
    sfmt(full_text, sizeof full_text,
             "{\"format\":1,\"id\":\"daily-report_2\",\"version\":7,"
             "\"purpose\":\"Summarise the day\","
             "\"trigger\":{\"schedule\":{\"cron\":\"*/15 9-17 * 1,6-8 1-5\",\"tz\":\"Europe/Berlin\","
             "\"missed\":\"each\",\"each_cap\":5}},"
             "\"ops\":[{\"module\":\"tracker\",\"op\":\"issue.create\"},{\"module\":\"mail\",\"op\":\"send\"}],"
             "\"fs\":{\"read\":[\"%s/./read/\"],\"write\":[\"%s\"]},"
             "\"git\":{\"read\":[\"%s\"]},"
             "\"net\":{\"fetch\":[{\"host\":\"api.example.com\",\"methods\":[\"GET\",\"POST\"]},"
             "{\"host\":\"status.example.org\"}]},"
             "\"sinks\":[\"report\",\"audit-log\"],"
             "\"limits\":{\"cpu_ms\":2000,\"heap_bytes\":16777216,\"stack_bytes\":262144,"
             "\"max_value_bytes\":65536},"
             "\"deadline\":\"30m\",\"concurrency\":1}",
             tmpdir, dir_write, dir_repo);
    struct manifest m;
    if (!accepts(full_text, &m, "full manifest: accepted"))
        return;
    check(m.format == 1 && m.version == 7, "full manifest: format and version", "%lld %lld",
          (long long)m.format, (long long)m.version);
    check_str_eq(m.id, "daily-report_2", "full manifest: id");
    check_str_eq(m.purpose, "Summarise the day", "full manifest: purpose");
    const struct manifest_schedule *s = &m.trigger.schedule;
    check(m.trigger.kind == MANIFEST_TRIGGER_SCHEDULE && s->cron != NULL &&
              strcmp(s->cron, "*/15 9-17 * 1,6-8 1-5") == 0 && s->interval_s == 0 &&
              s->tz != NULL && strcmp(s->tz, "Europe/Berlin") == 0 &&
              s->missed == MANIFEST_MISSED_EACH && s->each_cap == 5,
          "full manifest: schedule trigger (cron, tz, missed each, each_cap)", "kind %d",
          (int)m.trigger.kind);
    check(m.op_count == 2 && strcmp(m.ops[0].module, "tracker") == 0 &&
              strcmp(m.ops[0].op, "issue.create") == 0 && strcmp(m.ops[1].module, "mail") == 0 &&
              strcmp(m.ops[1].op, "send") == 0,
          "full manifest: ops", "%zu ops", m.op_count);
    check(m.fs_read.count == 1 && strcmp(m.fs_read.items[0], dir_read) == 0,
          "full manifest: fs.read stored as its real path", "%s",
          m.fs_read.count ? m.fs_read.items[0] : "(none)");
    check(m.fs_write.count == 1 && strcmp(m.fs_write.items[0], dir_write) == 0,
          "full manifest: fs.write", "%zu", m.fs_write.count);
    check(m.git_read.count == 1 && strcmp(m.git_read.items[0], dir_repo) == 0,
          "full manifest: git.read", "%zu", m.git_read.count);
    check(m.fetch_count == 2 && strcmp(m.fetch[0].host, "api.example.com") == 0 &&
              m.fetch[0].methods == (MANIFEST_METHOD_GET | MANIFEST_METHOD_POST) &&
              strcmp(m.fetch[1].host, "status.example.org") == 0 &&
              m.fetch[1].methods == MANIFEST_METHODS_DEFAULT,
          "full manifest: net.fetch hosts and methods (default GET, HEAD)", "%zu",
          m.fetch_count);
    check(m.sinks.count == 2 && strcmp(m.sinks.items[0], "report") == 0 &&
              strcmp(m.sinks.items[1], "audit-log") == 0,
          "full manifest: sinks", "%zu", m.sinks.count);
    check(m.limits.cpu_ms == 2000 && m.limits.heap_bytes == 16777216 &&
              m.limits.stack_bytes == 262144 && m.limits.max_value_bytes == 65536,
          "full manifest: limits", "cpu %u", m.limits.cpu_ms);
    check(m.deadline_s == 1800 && m.concurrency == 1, "full manifest: deadline and concurrency",
          "%u %u", m.deadline_s, m.concurrency);
    manifest_free(&m);
    check(m.id == NULL && m.ops == NULL, "manifest_free zeroes the struct", "not zeroed");
    manifest_free(&m); /* twice is harmless */
    manifest_free(NULL);

    /* The same through manifest_load_file. */
    char path[PATH_MAX + 32];
    sfmt(path, sizeof path, "%s/manifest.json", tmpdir);
    FILE *f = fopen(path, "we");
    if (f != NULL) {
        fputs(full_text, f);
        fclose(f);
    }
    char err[512];
    int rc = manifest_load_file(path, &m, err, sizeof err);
    check(rc == 0 && m.version == 7, "manifest_load_file: the full manifest", "%s", err);
    if (rc == 0)
        manifest_free(&m);
    rc = manifest_load_file(tmpdir, &m, err, sizeof err);
    check(rc == -1 && strstr(err, "not a regular file") != NULL,
          "manifest_load_file: a directory refused", "%s", err);
}

static void test_defaults(void)
{
    struct manifest m;
    if (!accepts("{" BASE "," MANUAL "}", &m, "minimal manifest: accepted"))
        return;
    check(m.trigger.kind == MANIFEST_TRIGGER_MANUAL && m.deadline_s == 600 &&
              m.concurrency == 1 && m.op_count == 0 && m.fetch_count == 0 &&
              m.fs_read.count == 0 && m.sinks.count == 0,
          "minimal manifest: manual trigger, deadline 10m, no grants", "deadline %u",
          m.deadline_s);
    check(m.limits.cpu_ms == FLOW_CPU_MS && m.limits.heap_bytes == FLOW_HEAP_BYTES &&
              m.limits.stack_bytes == FLOW_STACK_BYTES &&
              m.limits.max_value_bytes == FLOW_MAX_VALUE_BYTES,
          "minimal manifest: limits default to the flow profile", "cpu %u", m.limits.cpu_ms);
    manifest_free(&m);

    char buf[512];
    sfmt(buf, sizeof buf,
             "{" BASE ",\"trigger\":{\"schedule\":{\"interval\":\"1h\"}},\"deadline\":\"24h\"}");
    if (accepts(buf, &m, "interval schedule: accepted")) {
        check(m.trigger.kind == MANIFEST_TRIGGER_SCHEDULE && m.trigger.schedule.cron == NULL &&
                  m.trigger.schedule.interval_s == 3600 && m.trigger.schedule.tz == NULL &&
                  m.trigger.schedule.missed == MANIFEST_MISSED_ONCE && m.deadline_s == 86400,
              "interval schedule: 1h, missed once by default, deadline 24h", "%u",
              m.trigger.schedule.interval_s);
        manifest_free(&m);
    }
    sfmt(buf, sizeof buf, "{" BASE ",\"trigger\":{\"schedule\":{\"cron\":\"0 3 * * *\"}}}");
    if (accepts(buf, &m, "cron schedule without tz: accepted")) {
        check(m.trigger.schedule.tz != NULL && strcmp(m.trigger.schedule.tz, "UTC") == 0 &&
                  m.trigger.schedule.each_cap == 0,
              "cron schedule: tz defaults to UTC", "%s",
              m.trigger.schedule.tz ? m.trigger.schedule.tz : "(null)");
        manifest_free(&m);
    }
    sfmt(buf, sizeof buf,
             "{" BASE ",\"trigger\":{\"events\":[{\"module\":\"tracker\",\"name\":\"issue.opened\","
             "\"version\":2}]}}");
    if (accepts(buf, &m, "events trigger: accepted")) {
        check(m.trigger.kind == MANIFEST_TRIGGER_EVENTS && m.trigger.event_count == 1 &&
                  strcmp(m.trigger.events[0].module, "tracker") == 0 &&
                  strcmp(m.trigger.events[0].name, "issue.opened") == 0 &&
                  m.trigger.events[0].version == 2,
              "events trigger: module, name, version", "%zu", m.trigger.event_count);
        manifest_free(&m);
    }
    sfmt(buf, sizeof buf,
             "{" BASE ",\"trigger\":{\"schedule\":{\"interval\":\"10m\",\"missed\":\"each\"}}}");
    if (accepts(buf, &m, "missed each without each_cap: accepted")) {
        check_int_eq(m.trigger.schedule.each_cap, MANIFEST_EACH_CAP_DEFAULT,
                     "missed each: each_cap defaults to 10");
        manifest_free(&m);
    }
}

static void test_structure(void)
{
    refuse_extra(",\"extra\":1", "manifest.extra: unknown field", "unknown top-level field refused");
    refuse_extra(",\"limits\":{\"cpu_ms\":5,\"gpu_ms\":1}", "manifest.limits.gpu_ms: unknown field",
                 "unknown field in limits refused");
    refuse_extra(",\"ops\":[{\"module\":\"m\",\"op\":\"o\",\"idempotent\":true}]",
                 "manifest.ops[0].idempotent: unknown field", "unknown field in an ops entry refused");
    refuse_extra(",\"fs\":{\"exec\":[]}", "manifest.fs.exec: unknown field",
                 "unknown field in fs refused");
    refuse_extra(",\"net\":{\"fetch\":[{\"host\":\"a.example\",\"port\":443}]}",
                 "manifest.net.fetch[0].port: unknown field", "unknown field in a fetch entry refused");
    refuse_trigger("{\"schedule\":{\"cron\":\"* * * * *\",\"jitter\":\"5s\"}}",
                   "manifest.trigger.schedule.jitter: unknown field",
                   "unknown field in schedule refused");
    refuse_extra(",\"a\\nb\":1", "manifest.\"a\\nb\": unknown field",
                 "unknown field with a newline in its name: escaped, one line");

    refuse("{\"format\":1,\"id\":\"x\",\"id\":\"y\",\"version\":1,\"purpose\":\"p\"," MANUAL "}",
           "duplicate object key", "duplicate top-level key refused");
    refuse_extra(",\"limits\":{\"cpu_ms\":5,\"cpu_ms\":6}", "duplicate object key",
                 "duplicate nested key refused");

    refuse("[]", "manifest: must be a JSON object", "top level a list refused");
    refuse("\"x\"", "manifest: must be a JSON object", "top level a string refused");
    refuse("null", "manifest: must be a JSON object", "top level null refused");
    refuse("", "manifest: empty", "empty input refused");
    refuse("{" BASE "," MANUAL "} x", "manifest: invalid JSON", "trailing bytes refused");
    refuse("{" BASE "," MANUAL, "manifest: invalid JSON", "truncated JSON refused");

    refuse("{\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"p\xff\"," MANUAL "}",
           "manifest: not valid UTF-8", "invalid UTF-8 (0xff) refused");
    refuse("{\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"\xc0\xaf\"," MANUAL "}",
           "manifest: not valid UTF-8", "invalid UTF-8 (overlong) refused");
    refuse("{\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"\xed\xa0\x80\"," MANUAL "}",
           "manifest: not valid UTF-8", "invalid UTF-8 (surrogate) refused");
    refuse("{\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"a\\u0000b\"," MANUAL "}",
           "manifest: invalid JSON", "escaped NUL in a string refused");

    /* Size: exactly 64 KiB (padded with spaces) accepted, one byte more refused. */
    size_t cap = MANIFEST_MAX_BYTES + 1;
    char *big = malloc(cap + 1);
    if (big == NULL) {
        fail("oversized manifest", "out of memory");
        return;
    }
    const char *body = "{" BASE "," MANUAL "}";
    size_t blen = strlen(body);
    memset(big, ' ', cap);
    memcpy(big, body, blen);
    big[cap] = '\0';
    struct manifest m;
    char err[512];
    int rc = manifest_parse(big, MANIFEST_MAX_BYTES, &m, err, sizeof err);
    check(rc == 0, "manifest of exactly 64 KiB accepted", "%s", err);
    if (rc == 0)
        manifest_free(&m);
    refuse_len(big, cap, "manifest: 65537 bytes, more than the 65536 allowed",
               "manifest of 64 KiB + 1 refused");

    char path[PATH_MAX + 32];
    sfmt(path, sizeof path, "%s/big.json", tmpdir);
    FILE *f = fopen(path, "we");
    if (f != NULL) {
        fwrite(big, 1, cap, f);
        fclose(f);
    }
    rc = manifest_load_file(path, &m, err, sizeof err);
    check(rc == -1 && strstr(err, "more than the 65536 bytes allowed") != NULL,
          "manifest_load_file: a 64 KiB + 1 file refused", "%s", err);
    free(big);
}

static void test_lists(void)
{
    char extra[4096];
    size_t o;
    sfmt(extra, sizeof extra, ",\"sinks\":[");
    o = strlen(extra);
    for (int i = 0; i < 65; i++) {
        sfmt(extra + o, sizeof extra - o, "%s\"s%d\"", i ? "," : "", i);
        o += strlen(extra + o);
    }
    sfmt(extra + o, sizeof extra - o, "]");
    refuse_extra(extra, "manifest.sinks: 65 entries, more than the 64 allowed",
                 "list of 65 sinks refused");
    /* Cut to 64 entries: accepted. */
    char *last = strrchr(extra, ',');
    if (last != NULL) {
        last[0] = ']';
        last[1] = '\0';
    }
    accept_extra(extra, "list of 64 sinks accepted");

    sfmt(extra, sizeof extra, ",\"ops\":[");
    o = strlen(extra);
    for (int i = 0; i < 65; i++) {
        sfmt(extra + o, sizeof extra - o, "%s{\"module\":\"m\",\"op\":\"o%d\"}", i ? "," : "",
             i);
        o += strlen(extra + o);
    }
    sfmt(extra + o, sizeof extra - o, "]");
    refuse_extra(extra, "manifest.ops: 65 entries, more than the 64 allowed",
                 "list of 65 ops refused");

    refuse_extra(",\"ops\":[{\"module\":\"m\",\"op\":\"a\"},{\"module\":\"m\",\"op\":\"b\"},"
                 "{\"module\":\"m\"}]",
                 "manifest.ops[2].op: missing", "ops entry without op: manifest.ops[2].op named");
    refuse_extra(",\"ops\":[{\"module\":\"m\",\"op\":\"a\"},{\"module\":\"m\",\"op\":\"a\"}]",
                 "manifest.ops[1]: the same op as entry 0", "duplicate op refused");
    refuse_extra(",\"ops\":[{\"module\":\"M\",\"op\":\"a\"}]",
                 "manifest.ops[0].module: \"M\" is not a name", "module name with uppercase refused");
    refuse_extra(",\"ops\":{}", "manifest.ops: must be a list", "ops not a list refused");
    refuse_extra(",\"sinks\":[\"a\",\"a\"]", "manifest.sinks[1]: the same name as entry 0",
                 "duplicate sink refused");
    refuse_extra(",\"sinks\":[\"\"]", "manifest.sinks[0]: must not be empty",
                 "empty sink name refused");
}

static void test_fields(void)
{
    refuse("{\"format\":1,\"id\":\"Bad\",\"version\":1,\"purpose\":\"p\"," MANUAL "}",
           "manifest.id: \"Bad\" is not an id", "id with an uppercase letter refused");
    refuse("{\"format\":1,\"id\":\"a.b\",\"version\":1,\"purpose\":\"p\"," MANUAL "}",
           "manifest.id: \"a.b\" is not an id", "id with a dot refused");
    refuse("{\"format\":1,\"id\":\"a b\",\"version\":1,\"purpose\":\"p\"," MANUAL "}",
           "manifest.id: \"a b\" is not an id", "id with a space refused");
    refuse("{\"format\":1,\"id\":\"\",\"version\":1,\"purpose\":\"p\"," MANUAL "}",
           "manifest.id: must not be empty", "empty id refused");
    char id64[65], buf[512];
    memset(id64, 'a', 64);
    id64[64] = '\0';
    sfmt(buf, sizeof buf, "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"p\"," MANUAL "}",
             id64);
    refuse(buf, "manifest.id: 64 bytes, more than the 63 allowed", "id of 64 bytes refused");
    id64[63] = '\0';
    sfmt(buf, sizeof buf, "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"p\"," MANUAL "}",
             id64);
    struct manifest m;
    if (accepts(buf, &m, "id of 63 bytes accepted"))
        manifest_free(&m);
    refuse("{\"format\":1,\"version\":1,\"purpose\":\"p\"," MANUAL "}", "manifest.id: missing",
           "missing id refused");

    refuse("{\"format\":1,\"id\":\"x\",\"version\":0,\"purpose\":\"p\"," MANUAL "}",
           "manifest.version: must be at least 1, not 0", "version 0 refused");
    refuse("{\"format\":1,\"id\":\"x\",\"version\":1.5,\"purpose\":\"p\"," MANUAL "}",
           "manifest.version: must be an integer", "version 1.5 refused");
    refuse("{\"format\":1,\"id\":\"x\",\"version\":\"1\",\"purpose\":\"p\"," MANUAL "}",
           "manifest.version: must be an integer", "version as a string refused");
    refuse("{\"format\":2,\"id\":\"x\",\"version\":1,\"purpose\":\"p\"," MANUAL "}",
           "manifest.format: must be 1, not 2", "format 2 refused");
    refuse("{\"id\":\"x\",\"version\":1,\"purpose\":\"p\"," MANUAL "}", "manifest.format: missing",
           "missing format refused");
    refuse("{\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"a\\nb\"," MANUAL "}",
           "manifest.purpose: holds a control character (U+000A) at byte 1 (one line of text)",
           "purpose with a newline refused");
    refuse("{\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"ok \\u202eevil\"," MANUAL "}",
           "manifest.purpose: holds a direction control (U+202E) at byte 3",
           "purpose with a right-to-left override refused [guard manifest-shown-text]");
    refuse("{\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"a\\u2066b\"," MANUAL "}",
           "manifest.purpose: holds a direction control (U+2066) at byte 1",
           "purpose with an isolate refused [guard manifest-shown-text]");
    refuse("{\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"a\\u2028b\"," MANUAL "}",
           "manifest.purpose: holds a line separator (U+2028)",
           "purpose with a line separator refused [guard manifest-shown-text]");
    refuse("{\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"a\\u0085b\"," MANUAL "}",
           "manifest.purpose: holds a C1 control character (U+0085)",
           "purpose with a C1 NEL refused [guard manifest-shown-text]");
    refuse("{\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"a\\u007fb\"," MANUAL "}",
           "manifest.purpose: holds a control character (U+007F)", "purpose with DEL refused");
    {
        struct manifest kept;
        if (accepts("{\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"caf\\u00e9 \\u00a0\\u20ac "
                    "\\u05d0\"," MANUAL "}", &kept, "purpose with other non-ASCII kept (control)"))
            manifest_free(&kept);
    }
    char purpose[1100];
    memset(purpose, 'p', 1025);
    purpose[1025] = '\0';
    char big[2048];
    sfmt(big, sizeof big, "{\"format\":1,\"id\":\"x\",\"version\":1,\"purpose\":\"%s\"," MANUAL "}",
             purpose);
    refuse(big, "manifest.purpose: 1025 bytes, more than the 1024 allowed",
           "purpose over 1 KiB refused");

    refuse_extra(",\"concurrency\":2", "manifest.concurrency: must be 1, not 2",
                 "concurrency 2 refused");
    refuse_extra(",\"limits\":{\"cpu_ms\":0}", "manifest.limits.cpu_ms: must be between 1 and 60000, not 0",
                 "limits.cpu_ms 0 refused");
    refuse_extra(",\"limits\":{\"cpu_ms\":60001}", "manifest.limits.cpu_ms: must be between",
                 "limits.cpu_ms 60001 refused");
    refuse_extra(",\"limits\":{\"heap_bytes\":1048575}", "manifest.limits.heap_bytes: must be between",
                 "limits.heap_bytes below 1 MiB refused");
    refuse_extra(",\"limits\":{\"heap_bytes\":268435457}", "manifest.limits.heap_bytes: must be between",
                 "limits.heap_bytes above 256 MiB refused");
    refuse_extra(",\"limits\":{\"stack_bytes\":16383}", "manifest.limits.stack_bytes: must be between",
                 "limits.stack_bytes below 16 KiB refused");
    refuse_extra(",\"limits\":{\"max_value_bytes\":1048577}",
                 "manifest.limits.max_value_bytes: must be between",
                 "limits.max_value_bytes above 1 MiB refused");
}

static void test_triggers(void)
{
    refuse_trigger("{\"manual\":true,\"events\":[{\"module\":\"m\",\"name\":\"e\",\"version\":1}]}",
                   "manifest.trigger: has both", "two triggers refused");
    refuse_trigger("{}", "manifest.trigger: needs exactly one of schedule, events or manual",
                   "no trigger refused");
    refuse("{" BASE "}", "manifest.trigger: missing", "missing trigger refused");
    refuse_trigger("{\"manual\":false}", "manifest.trigger.manual: must be true",
                   "manual false refused");
    refuse_trigger("{\"events\":[]}", "manifest.trigger.events: must have at least 1 entry",
                   "empty events refused");
    refuse_trigger("{\"events\":[{\"module\":\"m\",\"name\":\"e\",\"version\":0}]}",
                   "manifest.trigger.events[0].version: must be between 1",
                   "event version 0 refused");
    refuse_trigger("{\"events\":[{\"module\":\"m\",\"version\":1}]}",
                   "manifest.trigger.events[0].name: missing", "event without name refused");

    refuse_trigger("{\"schedule\":{\"cron\":\"* * * * *\",\"interval\":\"1h\"}}",
                   "manifest.trigger.schedule: has both cron and interval",
                   "cron and interval together refused");
    refuse_trigger("{\"schedule\":{\"tz\":\"UTC\"}}",
                   "manifest.trigger.schedule: needs one of cron or interval",
                   "schedule without cron or interval refused");
    static const struct {
        const char *cron, *want, *name;
    } bad_cron[] = {
        {"* * * *", "'* * * *': needs five fields", "cron with 4 fields refused"},
        {"* * * * * *", "'* * * * * *': needs five fields", "cron with 6 fields refused"},
        {"*  * * * *", "'*  * * * *': needs five fields", "cron with a double space refused"},
        {" * * * * *", "' * * * * *': needs five fields", "cron with a leading space refused"},
        {"60 * * * *", "minute field '60': out of range 0-59", "cron minute 60 refused"},
        {"* 24 * * *", "hour field '24': out of range 0-23", "cron hour 24 refused"},
        {"* * 0 * *", "day-of-month field '0': out of range 1-31", "cron day 0 refused"},
        {"* * * 13 *", "month field '13': out of range 1-12", "cron month 13 refused"},
        {"* * * * 8", "day-of-week field '8': out of range 0-7", "cron day of week 8 refused"},
        {"*/0 * * * *", "minute field '*/0': step must be 1-59", "cron step 0 refused"},
        {"5/15 * * * *", "minute field '5/15': a step needs '*' or a range", "cron N/STEP refused"},
        {"10-5 * * * *", "minute field '10-5': range start 10 is after its end 5", "cron backwards range refused"},
        {"1,,2 * * * *", "minute field '1,,2': empty list entry", "cron empty list entry refused"},
        {"@daily", "'@daily': needs five fields", "cron macro refused"},
        {"* * * JANUARY *", "month field 'JANUARY'", "cron month name misspelt refused"},
        {"001 * * * *", "minute field '001': expected a number", "cron three-digit number refused"},
    };
    char buf[512];
    for (size_t i = 0; i < sizeof bad_cron / sizeof bad_cron[0]; i++) {
        char want[256];
        sfmt(buf, sizeof buf, "{\"schedule\":{\"cron\":\"%s\"}}", bad_cron[i].cron);
        sfmt(want, sizeof want, "manifest.trigger.schedule.cron: %s", bad_cron[i].want);
        refuse_trigger(buf, want, bad_cron[i].name);
    }
    accept_trigger("{\"schedule\":{\"cron\":\"0,30 0-23/2 1-31 1-12 0-7\"}}",
                   "cron with lists, ranges and steps accepted");
    accept_trigger("{\"schedule\":{\"cron\":\"0 9 * jan-mar,Dec MON-fri\"}}",
                   "cron with month and weekday names accepted (the scheduler's parser)");
    refuse_trigger("{\"schedule\":{\"interval\":\"5x\"}}",
                   "manifest.trigger.schedule.interval: \"5x\" is not a duration",
                   "interval with a bad unit refused");
    refuse_trigger("{\"schedule\":{\"interval\":\"* * * * *\"}}",
                   "manifest.trigger.schedule.interval: \"* * * * *\" is not a duration",
                   "interval given a cron expression refused");
    refuse_trigger("{\"schedule\":{\"cron\":\"1h\"}}",
                   "manifest.trigger.schedule.cron: '1h': needs five fields",
                   "cron given an interval refused");
    refuse_trigger("{\"schedule\":{\"interval\":\"5s\"}}",
                   "manifest.trigger.schedule.interval: \"5s\" is outside 10s..7d",
                   "interval below 10s refused");
    refuse_trigger("{\"schedule\":{\"interval\":\"8d\"}}",
                   "manifest.trigger.schedule.interval: \"8d\" is outside 10s..7d",
                   "interval above 7d refused");
    refuse_trigger("{\"schedule\":{\"interval\":\"1h\",\"tz\":\"UTC\"}}",
                   "manifest.trigger.schedule.tz: only with cron", "tz with an interval refused");
    refuse_trigger("{\"schedule\":{\"cron\":\"* * * * *\",\"tz\":\"../etc/passwd\"}}",
                   "manifest.trigger.schedule.tz: \"../etc/passwd\" is not a time zone name",
                   "tz with dots refused");
    refuse_trigger("{\"schedule\":{\"cron\":\"* * * * *\",\"tz\":\"Mars/Olympus\"}}",
                   "manifest.trigger.schedule.tz: tz 'Mars/Olympus': unknown time zone",
                   "a well-formed tz the system's zoneinfo does not have refused [guard: zones "
                   "checked at install]");
    refuse_trigger("{\"schedule\":{\"cron\":\"* * * * *\",\"missed\":\"sometimes\"}}",
                   "manifest.trigger.schedule.missed: \"sometimes\" is not one of once, skip, each",
                   "unknown missed policy refused");
    refuse_trigger("{\"schedule\":{\"cron\":\"* * * * *\",\"each_cap\":3}}",
                   "manifest.trigger.schedule.each_cap: only with missed \"each\"",
                   "each_cap without missed each refused");
    refuse_trigger("{\"schedule\":{\"cron\":\"* * * * *\",\"missed\":\"each\",\"each_cap\":0}}",
                   "manifest.trigger.schedule.each_cap: must be between 1 and 1000",
                   "each_cap 0 refused");
}

static void test_durations(void)
{
    static const char *const bad[] = {"10", "10 m", "010m", "1.5h", "-1s", "1m30s", "10M",
                                      " 10m", "10m ", "1000000000s", "0s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char extra[128], want[128], name[128];
        sfmt(extra, sizeof extra, ",\"deadline\":\"%s\"", bad[i]);
        sfmt(want, sizeof want, "manifest.deadline: \"%s\" is not a duration", bad[i]);
        sfmt(name, sizeof name, "deadline \"%s\" refused (not a duration)", bad[i]);
        refuse_extra(extra, want, name);
    }
    refuse_extra(",\"deadline\":30", "manifest.deadline: must be a string",
                 "deadline as a number refused");
    refuse_extra(",\"deadline\":\"\"", "manifest.deadline: must not be empty",
                 "empty deadline refused");
    refuse_extra(",\"deadline\":\"25h\"", "manifest.deadline: \"25h\" is outside 1s..24h",
                 "deadline 25h refused (out of range)");
    refuse_extra(",\"deadline\":\"2d\"", "manifest.deadline: \"2d\" is outside 1s..24h",
                 "deadline 2d refused (out of range)");
    refuse_extra(",\"deadline\":\"86401s\"", "manifest.deadline: \"86401s\" is outside 1s..24h",
                 "deadline 86401s refused (out of range)");
    accept_extra(",\"deadline\":\"1s\"", "deadline 1s accepted");
    accept_extra(",\"deadline\":\"1d\"", "deadline 1d accepted");
    uint32_t s = 0;
    check(manifest_parse_duration("90m", &s) == 0 && s == 5400, "duration \"90m\" is 5400 s",
          "%u", s);
}

static void test_roots(void)
{
    char extra[PATH_MAX * 2], want[PATH_MAX * 2];
    sfmt(extra, sizeof extra, ",\"fs\":{\"read\":[\"%s/nope\"]}", tmpdir);
    sfmt(want, sizeof want, "manifest.fs.read[0]: \"%s/nope\" does not exist", tmpdir);
    if (strlen(tmpdir) + 5 > 48) /* shown values are cut after 48 bytes */
        sfmt(want, sizeof want, "manifest.fs.read[0]: ");
    refuse_extra(extra, want, "fs.read root that does not exist refused");
    refuse_extra(extra, "does not exist", "fs.read root that does not exist: reason given");
    sfmt(extra, sizeof extra, ",\"fs\":{\"write\":[\"%s\",\"%s\"]}", dir_write, a_file);
    refuse_extra(extra, "manifest.fs.write[1]: ", "fs.write root that is a file: field named");
    refuse_extra(extra, "is not a directory", "fs.write root that is a file refused");
    refuse_extra(",\"fs\":{\"read\":[\"relative/dir\"]}",
                 "manifest.fs.read[0]: \"relative/dir\" is not an absolute path",
                 "relative root refused");
    sfmt(extra, sizeof extra, ",\"fs\":{\"read\":[\"%s\",\"%s/../read\"]}", dir_read, dir_write);
    refuse_extra(extra, "manifest.fs.read[1]: the same directory as entry 0",
                 "the same root twice (by real path) refused");
    sfmt(extra, sizeof extra, ",\"git\":{\"read\":[\"%s/norepo\"]}", tmpdir);
    refuse_extra(extra, "manifest.git.read[0]: ", "git.read repo that does not exist refused");
    refuse_extra(",\"git\":{\"write\":[]}", "manifest.git.write: unknown field",
                 "git.write refused (unknown field)");
}

static void test_hosts(void)
{
    static const struct {
        const char *host, *why;
    } bad[] = {
        {"10.0.0.1", "is an IP address literal"},
        {"127.1", "is an IP address literal"},
        {"0x7f000001", "is an IP address literal"},
        {"2130706433", "is an IP address literal"},
        {"017700000001", "is an IP address literal"},
        {"0x7f.1", "is an IP address literal"},
        {"a.example.0x1f", "is an IP address literal"},
        {"example.123", "is an IP address literal"},
        {"::1", "is an IP address literal"},
        {"[::1]", "is an IP address literal"},
        {"exa_mple.com", "has a character outside"},
        {"exa mple.com", "has a character outside"},
        {"example.com/path", "has a character outside"},
        {"user@example.com", "has a character outside"},
        {"Example.com", "must be lowercase"},
        {"-a.example.com", "has a label starting with '-'"},
        {"a-.example.com", "has a label ending with '-'"},
        {"a..example.com", "has an empty label"},
        {"example.com.", "has an empty label (a trailing dot)"},
        {".example.com", "has an empty label"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char extra[256], want[256], name[256];
        sfmt(extra, sizeof extra, ",\"net\":{\"fetch\":[{\"host\":\"%s\"}]}", bad[i].host);
        sfmt(want, sizeof want, "manifest.net.fetch[0].host: \"%s\" %s", bad[i].host, bad[i].why);
        sfmt(name, sizeof name, "host \"%s\" refused (%s)", bad[i].host, bad[i].why);
        refuse_extra(extra, want, name);
    }
    char label[80], host[300], extra[512];
    memset(label, 'a', 64);
    label[64] = '\0';
    sfmt(extra, sizeof extra, ",\"net\":{\"fetch\":[{\"host\":\"%s.com\"}]}", label);
    refuse_extra(extra, "has a label longer than 63 bytes", "host with a 64-byte label refused");
    label[63] = '\0';
    sfmt(host, sizeof host, "%s.%s.%s.%s", label, label, label, label); /* 255 bytes */
    sfmt(extra, sizeof extra, ",\"net\":{\"fetch\":[{\"host\":\"%s\"}]}", host);
    refuse_extra(extra, "manifest.net.fetch[0].host: 255 bytes, more than the 254 allowed",
                 "host of 255 bytes refused");
    sfmt(host, sizeof host, "%s.%s.%s.%.61s", label, label, label, label); /* 253 bytes */
    check(strlen(host) == 253 && manifest_host_valid(host), "host of 253 bytes accepted", "%zu",
          strlen(host));
    sfmt(host, sizeof host, "%s.%s.%s.%.62s", label, label, label, label); /* 254 bytes */
    check(!manifest_host_valid(host), "host of 254 bytes refused", "%zu", strlen(host));
    check(manifest_host_valid("localhost") && manifest_host_valid("a1.b-c.example") &&
              manifest_host_valid("123.example.com"),
          "DNS names (single label, digits, inner hyphens) accepted", "refused");
    refuse_extra(",\"net\":{\"fetch\":[{\"host\":\"a.example\",\"methods\":[\"GET\",\"FETCH\"]}]}",
                 "manifest.net.fetch[0].methods[1]: unknown method \"FETCH\"",
                 "unknown method refused");
    refuse_extra(",\"net\":{\"fetch\":[{\"host\":\"a.example\",\"methods\":[\"get\"]}]}",
                 "manifest.net.fetch[0].methods[0]: unknown method \"get\"",
                 "lowercase method refused");
    refuse_extra(",\"net\":{\"fetch\":[{\"host\":\"a.example\",\"methods\":[]}]}",
                 "manifest.net.fetch[0].methods: must have at least 1 entry",
                 "empty methods refused");
    refuse_extra(",\"net\":{\"fetch\":[{\"host\":\"a.example\",\"methods\":[\"GET\",\"GET\"]}]}",
                 "manifest.net.fetch[0].methods[1]: GET listed twice", "duplicate method refused");
    refuse_extra(",\"net\":{\"fetch\":[{\"host\":\"a.example\"},{\"host\":\"a.example\"}]}",
                 "manifest.net.fetch[1]: the same host as entry 0", "duplicate host refused");
    refuse_extra(",\"net\":{\"fetch\":[{\"methods\":[\"GET\"]}]}",
                 "manifest.net.fetch[0].host: missing", "fetch entry without host refused");
    struct manifest m;
    char buf[512];
    sfmt(buf, sizeof buf,
             "{" BASE "," MANUAL ",\"net\":{\"fetch\":[{\"host\":\"a.example\",\"methods\":"
             "[\"GET\",\"HEAD\",\"POST\",\"PUT\",\"PATCH\",\"DELETE\"]}]}}");
    if (accepts(buf, &m, "all six methods accepted")) {
        check_int_eq(m.fetch[0].methods, 0x3f, "all six methods: every bit set");
        manifest_free(&m);
    }
    check_str_eq(manifest_method_name(MANIFEST_METHOD_PATCH), "PATCH", "method name of PATCH");
    sfmt(buf, sizeof buf,
             "{" BASE "," MANUAL ",\"net\":{\"fetch\":[{\"host\":\"a.example\",\"methods\":"
             "[\"POST\"],\"idempotent\":true},{\"host\":\"b.example\"}]}}");
    if (accepts(buf, &m, "a fetch entry marked idempotent accepted")) {
        check(m.fetch[0].idempotent && !m.fetch[1].idempotent,
              "idempotent: true where marked, false by default", "%d %d", m.fetch[0].idempotent,
              m.fetch[1].idempotent);
        manifest_free(&m);
    }
    refuse_extra(",\"net\":{\"fetch\":[{\"host\":\"a.example\",\"idempotent\":1}]}",
                 "manifest.net.fetch[0].idempotent: must be true or false",
                 "idempotent that is not a boolean refused");
}

/* ---- code hash ---------------------------------------------------------------------- */

static void framed(unsigned char *buf, size_t *o, const void *bytes, size_t len)
{
    for (size_t i = 0; i < 8; i++)
        buf[(*o)++] = (unsigned char)((uint64_t)len >> (8 * i));
    memcpy(buf + *o, bytes, len);
    *o += len;
}

static void test_code_hash(void)
{
    /* Known answer: the tag with its NUL, u64le(3) "abc", u64le(2) "{}". */
    unsigned char buf[128];
    size_t o = 0;
    memcpy(buf, "basal.code-hash.v1", 19); /* 18 characters and the NUL */
    o = 19;
    framed(buf, &o, "abc", 3);
    framed(buf, &o, "{}", 2);
    unsigned char want[32];
    unsigned int wlen = 0;
    char want_hex[65];
    if (EVP_Digest(buf, o, want, &wlen, EVP_sha256(), NULL) != 1 || wlen != 32) {
        fail("code hash: independent SHA-256", "EVP_Digest failed");
        return;
    }
    for (size_t i = 0; i < 32; i++)
        sfmt(want_hex + 2 * i, 3, "%02x", want[i]);
    char got[CODE_HASH_HEX_LEN + 1];
    check(code_hash_hex("abc", 3, "{}", 2, got) == 0, "code hash: computed", "failed");
    check_str_eq(got, want_hex, "code hash: equals SHA-256 of the hand-built framed buffer");
    check_str_eq(got, "4b0888533669845e029c283927c064285a4c01a1a6cb688c3f2d9021b58f64f3",
                 "code hash: pinned known answer for (\"abc\", \"{}\")");
    uint8_t raw[CODE_HASH_BYTES];
    check(code_hash_raw("abc", 3, "{}", 2, raw) == 0 && memcmp(raw, want, 32) == 0,
          "code hash: raw digest matches", "differs");
    check(code_hash_hex(NULL, 0, NULL, 0, got) == 0 &&
              strcmp(got, "59865855783eb291c5f027ab2aa9f3a6206fe3c6e661fd293cb1851fb27e9c76") == 0,
          "code hash: empty script and manifest (NULL pointers) pinned", "%s", got);

    char other[CODE_HASH_HEX_LEN + 1];
    code_hash_hex("abc", 3, "{}", 2, got);
    code_hash_hex("abd", 3, "{}", 2, other);
    check(strcmp(got, other) != 0, "code hash: one byte changed in the script changes it", "same");
    code_hash_hex("abc", 3, "{]", 2, other);
    check(strcmp(got, other) != 0, "code hash: one byte changed in the manifest changes it",
          "same");
    code_hash_hex("ab", 2, "c{}", 3, other);
    check(strcmp(got, other) != 0,
          "code hash: a byte moved from script to manifest changes it (length framing)", "same");
    code_hash_hex("abc{", 4, "}", 1, other);
    check(strcmp(got, other) != 0,
          "code hash: a byte moved from manifest to script changes it (length framing)", "same");
    code_hash_hex("{}", 2, "abc", 3, other);
    check(strcmp(got, other) != 0, "code hash: script and manifest swapped changes it", "same");

    check(code_hash_hex_valid(got), "code_hash_hex_valid: a computed hash", "refused");
    char upper[CODE_HASH_HEX_LEN + 1];
    memcpy(upper, "4B0888533669845e029c283927c064285a4c01a1a6cb688c3f2d9021b58f64f3", 65);
    check(!code_hash_hex_valid(upper) && !code_hash_hex_valid("abc") &&
              !code_hash_hex_valid(
                  "4b0888533669845e029c283927c064285a4c01a1a6cb688c3f2d9021b58f64f30") &&
              !code_hash_hex_valid(""),
          "code_hash_hex_valid: uppercase, short, long and empty refused", "accepted");
}

static void test_script(void)
{
    char err[256];
    check(script_validate("return 1;", 9, err, sizeof err) == 0, "script: plain text accepted",
          "%s", err);
    check(script_validate("a = \"\xc3\xa9\";", 9, err, sizeof err) == 0,
          "script: UTF-8 text accepted", "%s", err);
    check(script_validate("a\0b", 3, err, sizeof err) == -1 &&
              strcmp(err, "script: contains a NUL byte at offset 1") == 0,
          "script: NUL byte refused", "%s", err);
    check(script_validate("a\xff", 2, err, sizeof err) == -1 &&
              strcmp(err, "script: not valid UTF-8") == 0,
          "script: invalid UTF-8 refused", "%s", err);
    check(script_validate("", 0, err, sizeof err) == -1 && strcmp(err, "script: empty") == 0,
          "script: empty refused", "%s", err);
    char *big = malloc(PROTO_MAX_SCRIPT_BYTES + 1);
    if (big == NULL) {
        fail("script: size", "out of memory");
        return;
    }
    memset(big, ' ', PROTO_MAX_SCRIPT_BYTES + 1);
    check(script_validate(big, PROTO_MAX_SCRIPT_BYTES, err, sizeof err) == 0,
          "script: exactly 1 MiB accepted", "%s", err);
    check(script_validate(big, PROTO_MAX_SCRIPT_BYTES + 1, err, sizeof err) == -1 &&
              strcmp(err, "script: 1048577 bytes, more than the 1048576 allowed") == 0,
          "script: 1 MiB + 1 refused", "%s", err);
    free(big);
}

int main(void)
{
    if (!setup_dirs()) {
        fail("setup", "cannot make the temporary directories under $TMPDIR (or /tmp)");
        return harness_finish();
    }
    test_full();
    test_defaults();
    test_structure();
    test_lists();
    test_fields();
    test_triggers();
    test_durations();
    test_roots();
    test_hosts();
    test_code_hash();
    test_script();
    cleanup_dirs();
    return harness_finish();
}
