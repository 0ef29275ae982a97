/* The fixtures of a dry run (`ck-basal flow dry-run --fixtures FILE`;
 * docs/operations.md): answers for the calls a dry run does not perform (mutations,
 * and queries of modules without --allow-queries).
 *
 *   {"fixtures": [
 *      {"kind": "ops.call", "args": ["tickets", "create", {"title": "x"}],
 *       "result": {"id": 7}},
 *      {"kind": "sink.emit", "result": {"bytes": 42}},
 *      {"kind": "fs.write", "position": 3,
 *       "error": {"code": "io_error", "message": "disk full"}}
 *   ]}
 *
 * An entry answers a call when its kind is the call's kind and, if given, its position
 * is the call's position and its args (a list) equal the call's argument array as JSON
 * values. The first entry that answers is used, as often as it answers. Each entry has
 * exactly one of result (any JSON: the call is fulfilled with it) and error ({code:
 * 1-32 of [a-z0-9_], message: a string}: the call is rejected with it, as a HostError).
 *
 * The file is at most 1 MiB of UTF-8 JSON with at most 1000 entries; unknown fields
 * and duplicate keys are refused with one line naming the field path
 * ("fixtures: fixtures[2].error.code: must be 1-32 of [a-z0-9_]"). */
#ifndef BASAL_FLOWS_DRY_RUN_FIXTURES_H
#define BASAL_FLOWS_DRY_RUN_FIXTURES_H

#include "host/host.h"

#include <jansson.h>
#include <stdint.h>

#define DRY_RUN_FIXTURES_MAX_BYTES (1u << 20)
#define DRY_RUN_FIXTURES_MAX 1000u

struct dry_run_fixtures {
    json_t *entries; /* the checked list (a reference), or NULL: none */
};

/* Loads and checks path into *out. 0, or -1 with a one-line reason and *out empty. */
int dry_run_fixtures_load(const char *path, struct dry_run_fixtures *out, char *err,
                          size_t err_cap);
void dry_run_fixtures_free(struct dry_run_fixtures *f);

/* The answer of the first entry that answers the call (args: its argument array, a
 * jansson json_t *): 1 with *out filled, 0 if none does, -1 on no memory. */
int dry_run_fixture_answer(const struct dry_run_fixtures *f, uint32_t position,
                           const char *kind, const void *args, struct host_settlement *out);

#endif
