/* kv.get, kv.set and kv.delete for flows, served by the parent from the store's kv
 * table inside the caller's (the journal's) transaction, so a value and the journal
 * row of the call that wrote it commit together (basal.md section 6).
 *
 *   kv.get(key)         -> the stored value, or null
 *   kv.set(key, value)  -> null; value is any JSON value, stored as the exact JSON text
 *                          the script's call sent (JSON.stringify's: compact, and every
 *                          number as JavaScript writes it, 1e19 as 10000000000000000000)
 *   kv.delete(key)      -> true if the key existed, else false
 *
 * Limits: a key is a string of 1..256 bytes of UTF-8; a value at most 64 KiB of JSON;
 * a flow's keys and values together at most 1 MiB. Over a limit: HostError too_large;
 * a wrong argument: invalid_arguments. */
#ifndef BASAL_STORE_KV_STORE_H
#define BASAL_STORE_KV_STORE_H

#include "host/host.h"

#include <stdbool.h>
#include <stddef.h>

#define KV_KEY_MAX_BYTES 256u
#define KV_VALUE_MAX_BYTES (64u << 10)
#define KV_FLOW_MAX_BYTES (1u << 20)

struct store;

/* Performs kind ("kv.get", "kv.set" or "kv.delete": its row in flows/host_kinds.h) for flow with args (a jansson json_t * array, parsed from args_text,
 * the call's arguments as the worker sent them) in the caller's transaction. Fills
 * *out (fulfilled or rejected) and returns 0; returns -1 with a reason in err on a
 * store error or no memory (the caller rolls back). */
int kv_store_call(struct store *s, const char *flow, const char *kind, const void *args,
                  const char *args_text, size_t args_len, struct host_settlement *out,
                  char *err, size_t err_cap);

/* The checks kv_store_call makes of kind ("kv.set" or "kv.delete") before it changes
 * anything, changing nothing (a dry run's: flows/dry_run_host.h): the key, and for
 * kv.set the value's size and what the flow would hold with it as the store holds it
 * now (read in the caller's transaction). 0 with *would_change true when the call
 * would be performed; else 0 with *would_change false and the rejection a run gets in
 * *out; -1 with a reason in err on a store error or no memory. */
int kv_store_check(struct store *s, const char *flow, const char *kind, const void *args,
                   const char *args_text, size_t args_len, struct host_settlement *out,
                   bool *would_change, char *err, size_t err_cap);

#endif
