/* The fixed test host behind `ck-basal exec`, until flows and their manifests exist.
 *
 *   now                 fulfils with the milliseconds since the epoch (synchronous)
 *   random              fulfils with a float in [0, 1) from getrandom (synchronous)
 *   test.echo ...       fulfils with its argument array
 *   test.sleep [ms]     fulfils with null after ms milliseconds (0..3600000)
 *   test.fail [code]    rejects with {code, message}
 *   test.counter        increments the host's counter, fulfils with the new value
 *   kv.get [key]        fulfils with the stored value, or null
 *   kv.set [key, value] stores value (any JSON), fulfils with null
 *   kv.delete [key]     fulfils with true if the key existed, else false
 *   anything else       rejects with code "denied", naming the kind
 *
 * The flow API reaches the test calls through ops.call: ops.call("test", OP, ARGS)
 * (kind "ops.call", arguments ["test", OP, ARGS]) is the call "test.OP" with ARGS as
 * its argument array (a single value is a one-element array, none an empty one).
 * Any other module is denied.
 *
 * The counter and the kv map live in the parent, in this host, for as long as it
 * does: one `exec` invocation shares them across all its runs (a pooled worker keeps
 * nothing; the host does). Keys are 1-256 bytes; a stored value at most 64 KiB of
 * JSON, and all values of the map at most 1 MiB. */
#ifndef BASAL_HOST_TEST_HOST_H
#define BASAL_HOST_TEST_HOST_H

#include "host/host.h"

#define TEST_HOST_MAX_SLEEP_MS 3600000LL
#define TEST_HOST_MAX_KEY_BYTES 256u
#define TEST_HOST_MAX_VALUE_BYTES (64u << 10)
#define TEST_HOST_MAX_TOTAL_BYTES (1u << 20)

struct test_host;

struct test_host *test_host_new(void);
void test_host_free(struct test_host *th);

/* The interface the activation driver calls; valid while th lives. */
struct host test_host_interface(struct test_host *th);

/* How many calls it has answered, and the counter's value (for tests). */
unsigned long long test_host_calls(const struct test_host *th);
long long test_host_counter(const struct test_host *th);

#endif
