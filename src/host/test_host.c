#include "host/test_host.h"

#include "base/json_js.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

struct kv_entry {
    char *key;
    char *value; /* JSON text */
    struct kv_entry *next;
};

struct test_host {
    unsigned long long calls;
    long long counter;
    struct kv_entry *kv;
    size_t kv_bytes; /* sum of stored value lengths */
};

struct test_host *test_host_new(void)
{
    return calloc(1, sizeof(struct test_host));
}

void test_host_free(struct test_host *th)
{
    if (th == NULL)
        return;
    struct kv_entry *e = th->kv;
    while (e != NULL) {
        struct kv_entry *next = e->next;
        free(e->key);
        free(e->value);
        free(e);
        e = next;
    }
    free(th);
}

unsigned long long test_host_calls(const struct test_host *th)
{
    return th->calls;
}

long long test_host_counter(const struct test_host *th)
{
    return th->counter;
}

static struct kv_entry **kv_find(struct test_host *th, const char *key)
{
    struct kv_entry **at = &th->kv;
    while (*at != NULL && strcmp((*at)->key, key) != 0)
        at = &(*at)->next;
    return at;
}

/* The i-th argument as a string of 1..max bytes, or NULL. */
static const char *string_arg(const json_t *args, size_t i, size_t max)
{
    const json_t *v = json_array_get(args, i);
    if (!json_is_string(v))
        return NULL;
    size_t len = json_string_length(v);
    if (len == 0 || len > max || memchr(json_string_value(v), '\0', len) != NULL)
        return NULL;
    return json_string_value(v);
}

static int do_now(struct host_settlement *out)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    json_t *v = json_integer(ms);
    int rc = v != NULL ? host_fulfil_json(out, v) : -1;
    json_decref(v);
    return rc;
}

static int do_random(struct host_settlement *out)
{
    uint64_t bits = 0;
    if (getrandom(&bits, sizeof bits, 0) != (ssize_t)sizeof bits)
        return host_reject(out, HOST_CODE_IO_ERROR, "random: getrandom failed");
    /* 53 random bits: every double in [0, 1) on the 2^-53 grid, never 1. */
    double r = (double)(bits >> 11) * 0x1.0p-53;
    json_t *v = json_real(r);
    int rc = v != NULL ? host_fulfil_json(out, v) : -1;
    json_decref(v);
    return rc;
}

static int do_sleep(const json_t *args, struct host_settlement *out, long long *delay_ms)
{
    const json_t *ms = json_array_get(args, 0);
    double value = json_is_number(ms) ? json_number_value(ms) : -1;
    if (json_array_size(args) != 1 || !(value >= 0) || value > (double)TEST_HOST_MAX_SLEEP_MS ||
        floor(value) != value)
        return host_reject(out, HOST_CODE_INVALID_ARGUMENTS,
                           "test.sleep takes [ms], an integer from 0 to %lld",
                           TEST_HOST_MAX_SLEEP_MS);
    *delay_ms = (long long)value;
    return host_fulfil_text(out, "null");
}

static int do_fail(const json_t *args, struct host_settlement *out)
{
    const char *code = string_arg(args, 0, 64);
    if (code == NULL || json_array_size(args) != 1)
        return host_reject(out, HOST_CODE_INVALID_ARGUMENTS,
                           "test.fail takes [code], a string of 1 to 64 bytes");
    return host_reject(out, code, "test.fail asked to reject with %s", code);
}

static int do_counter(struct test_host *th, struct host_settlement *out)
{
    th->counter++;
    json_t *v = json_integer(th->counter);
    int rc = v != NULL ? host_fulfil_json(out, v) : -1;
    json_decref(v);
    return rc;
}

static int do_kv(struct test_host *th, const char *op, const json_t *args,
                 struct host_settlement *out)
{
    const char *key = string_arg(args, 0, TEST_HOST_MAX_KEY_BYTES);
    size_t want_args = strcmp(op, "set") == 0 ? 2 : 1;
    if (key == NULL || json_array_size(args) != want_args)
        return host_reject(out, HOST_CODE_INVALID_ARGUMENTS,
                           "kv.%s takes [key%s], a key of 1 to %u bytes", op,
                           want_args == 2 ? ", value" : "", TEST_HOST_MAX_KEY_BYTES);
    struct kv_entry **at = kv_find(th, key);
    if (strcmp(op, "get") == 0)
        return host_fulfil_text(out, *at != NULL ? (*at)->value : "null");
    if (strcmp(op, "delete") == 0) {
        struct kv_entry *gone = *at;
        if (gone != NULL) {
            *at = gone->next;
            th->kv_bytes -= strlen(gone->value);
            free(gone->key);
            free(gone->value);
            free(gone);
        }
        return host_fulfil_text(out, gone != NULL ? "true" : "false");
    }
    char *value = json_dumps(json_array_get(args, 1), JSON_COMPACT | JSON_ENCODE_ANY);
    if (value == NULL)
        return -1;
    size_t len = strlen(value);
    size_t old = *at != NULL ? strlen((*at)->value) : 0;
    if (len > TEST_HOST_MAX_VALUE_BYTES || th->kv_bytes - old + len > TEST_HOST_MAX_TOTAL_BYTES) {
        free(value);
        return host_reject(out, HOST_CODE_TOO_LARGE,
                           "kv.set: a value is at most %u bytes and all values %u bytes",
                           TEST_HOST_MAX_VALUE_BYTES, TEST_HOST_MAX_TOTAL_BYTES);
    }
    if (*at != NULL) {
        free((*at)->value);
        (*at)->value = value;
    } else {
        struct kv_entry *e = calloc(1, sizeof *e);
        char *key_copy = strdup(key);
        if (e == NULL || key_copy == NULL) {
            free(e);
            free(key_copy);
            free(value);
            return -1;
        }
        e->key = key_copy;
        e->value = value;
        e->next = th->kv;
        th->kv = e;
    }
    th->kv_bytes = th->kv_bytes - old + len;
    return host_fulfil_text(out, "null");
}

/* One test call: kind and its argument array. */
static int dispatch(struct test_host *th, const char *kind, const json_t *args,
                    struct host_settlement *out, long long *delay_ms)
{
    if (strcmp(kind, "test.echo") == 0)
        return host_fulfil_json(out, args);
    if (strcmp(kind, "test.sleep") == 0)
        return do_sleep(args, out, delay_ms);
    if (strcmp(kind, "test.fail") == 0)
        return do_fail(args, out);
    if (strcmp(kind, "test.counter") == 0)
        return do_counter(th, out);
    if (strcmp(kind, "kv.get") == 0)
        return do_kv(th, "get", args, out);
    if (strcmp(kind, "kv.set") == 0)
        return do_kv(th, "set", args, out);
    if (strcmp(kind, "kv.delete") == 0)
        return do_kv(th, "delete", args, out);
    return host_reject(out, HOST_CODE_DENIED, "host call '%.200s' is not granted to this script",
                       kind);
}

/* ops.call(module, op, args) with module "test" is the test call "test.<op>" with
 * args as its argument array (a single non-array value becomes a one-element array,
 * none an empty one): the flow API reaches the test calls through ops.call. */
static int dispatch_ops_call(struct test_host *th, const json_t *args,
                             struct host_settlement *out, long long *delay_ms)
{
    const char *module = json_string_value(json_array_get(args, 0));
    const char *op = json_string_value(json_array_get(args, 1));
    if (module == NULL || op == NULL || json_array_size(args) > 3)
        return host_reject(out, HOST_CODE_INVALID_ARGUMENTS,
                           "ops.call takes [module, op, args], module and op strings");
    if (strcmp(module, "test") != 0)
        return host_reject(out, HOST_CODE_DENIED, "module '%.100s' is not granted to this script",
                           module);
    /* The test call each op of module test is (no formatting: the benchmark's host
     * calls pass here). */
    static const struct {
        const char *op, *kind;
    } OPS[] = {{"echo", "test.echo"}, {"sleep", "test.sleep"}, {"fail", "test.fail"},
               {"counter", "test.counter"}};
    const char *kind = NULL;
    for (size_t i = 0; kind == NULL && i < sizeof OPS / sizeof OPS[0]; i++)
        if (strcmp(op, OPS[i].op) == 0)
            kind = OPS[i].kind;
    if (kind == NULL)
        return host_reject(out, HOST_CODE_DENIED, "op '%.100s' of module test is not granted",
                           op);
    json_t *op_args = json_array_get(args, 2);
    json_t *list;
    if (op_args == NULL) {
        list = json_array();
    } else if (json_is_array(op_args)) {
        list = json_incref(op_args);
    } else {
        list = json_array(); /* one value: a one-element array */
        if (list != NULL && json_array_append(list, op_args) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    if (list == NULL)
        return -1;
    int rc = dispatch(th, kind, list, out, delay_ms);
    json_decref(list);
    return rc;
}

static int test_host_call(void *self, const struct host_call *call, struct host_settlement *out,
                          long long *delay_ms)
{
    struct test_host *th = self;
    th->calls++;
    *delay_ms = 0;
    const char *kind = call->kind;
    if (strcmp(kind, "now") == 0)
        return do_now(out);
    if (strcmp(kind, "random") == 0)
        return do_random(out);

    json_error_t error;
    json_t *args = json_js_loadb(call->args, call->args_len, JSON_DECODE_ANY | JSON_ALLOW_NUL,
                                 &error); /* 1e19 too */
    if (!json_is_array(args)) {
        json_decref(args);
        return host_reject(out, HOST_CODE_INVALID_ARGUMENTS,
                           "%s: the arguments are not a JSON array", kind);
    }
    int rc = strcmp(kind, "ops.call") == 0 ? dispatch_ops_call(th, args, out, delay_ms)
                                           : dispatch(th, kind, args, out, delay_ms);
    json_decref(args);
    return rc;
}

/* The test host's own synchronous kinds, the two test_host_call answers first. */
static bool test_host_is_sync(void *self, const char *kind)
{
    (void)self;
    return strcmp(kind, "now") == 0 || strcmp(kind, "random") == 0;
}

static const struct host_ops TEST_HOST_OPS = {.call = test_host_call,
                                              .is_sync = test_host_is_sync};

struct host test_host_interface(struct test_host *th)
{
    struct host h = {&TEST_HOST_OPS, th};
    return h;
}
