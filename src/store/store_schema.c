/* Schema migrations. Conventions of every table:
 *   - STRICT tables: SQLite checks each column's type;
 *   - times are INTEGER milliseconds since the Unix epoch (UTC);
 *   - enumerations are TEXT with a CHECK listing the allowed values;
 *   - JSON columns are TEXT checked with json_valid(); exact bytes (scripts,
 *     manifests, call arguments, results) are BLOBs;
 *   - hashes and digests are lowercase hex SHA-256 (64 characters). */
#include "store/store_schema.h"

#include <stddef.h>

#define HEX64(col) "length(" col ") = 64 AND " col " NOT GLOB '*[^0-9a-f]*'"

static const char MIGRATION_1[] =
    /* A flow: its id is the manifest's id. */
    "CREATE TABLE flows ("
    "  id TEXT PRIMARY KEY"
    "    CHECK (length(id) BETWEEN 1 AND 63 AND id NOT GLOB '*[^a-z0-9_-]*'),"
    "  created_at INTEGER NOT NULL,"
    "  enabled INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1))"
    ") STRICT;"

    /* Every installed version, with the exact bytes the code hash covers. */
    "CREATE TABLE flow_versions ("
    "  flow_id TEXT NOT NULL REFERENCES flows(id),"
    "  version INTEGER NOT NULL CHECK (version >= 1),"
    "  script BLOB NOT NULL,"
    "  manifest BLOB NOT NULL,"
    "  code_hash TEXT NOT NULL CHECK (" HEX64("code_hash") "),"
    "  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'approved')),"
    "  created_at INTEGER NOT NULL,"
    "  PRIMARY KEY (flow_id, version)"
    ") STRICT;"

    /* An approval binds (flow, version, code hash); each activation rechecks it. */
    "CREATE TABLE approvals ("
    "  flow_id TEXT NOT NULL,"
    "  version INTEGER NOT NULL,"
    "  code_hash TEXT NOT NULL CHECK (" HEX64("code_hash") "),"
    "  approved_at INTEGER NOT NULL,"
    "  PRIMARY KEY (flow_id, version),"
    "  FOREIGN KEY (flow_id, version) REFERENCES flow_versions(flow_id, version)"
    ") STRICT;"

    /* Runs. owner is the process that drives it; generation fences every write of a
     * previous owner. Admission deduplicates on (flow_id, trigger_id). */
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  flow_id TEXT NOT NULL,"
    "  version INTEGER NOT NULL,"
    "  trigger_id TEXT NOT NULL,"
    "  trigger TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(trigger)),"
    "  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running',"
    "    'suspended', 'needs_reconcile', 'succeeded', 'failed', 'cancelled')),"
    "  owner TEXT,"
    "  generation INTEGER NOT NULL DEFAULT 0 CHECK (generation >= 0),"
    "  result BLOB,"
    "  error TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  UNIQUE (flow_id, trigger_id),"
    "  FOREIGN KEY (flow_id, version) REFERENCES flow_versions(flow_id, version)"
    ") STRICT;"
    "CREATE INDEX runs_by_state ON runs(state, flow_id, id);"
    "CREATE INDEX runs_by_flow ON runs(flow_id, id);"

    /* The journal: one row per host call, written before the call leaves (state
     * 'pending'), 'dispatched' once sent, 'settled' with its outcome, or 'unknown'
     * (a mutation in doubt after a crash, until the operator reconciles it). A
     * refusal is a row settled 'rejected' at once. delivery_order is the order in
     * which outcomes were released to the worker (unique within a run). */
    "CREATE TABLE journal ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  position INTEGER NOT NULL CHECK (position >= 0),"
    "  kind TEXT NOT NULL CHECK (length(kind) >= 1),"
    "  args BLOB NOT NULL,"
    "  args_digest TEXT NOT NULL CHECK (" HEX64("args_digest") "),"
    "  idempotency_key TEXT NOT NULL,"
    "  class TEXT NOT NULL CHECK (class IN ('sync', 'local', 'query', 'mutation',"
    "    'keyed_mutation')),"
    "  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'dispatched',"
    "    'settled', 'unknown')),"
    "  settlement TEXT CHECK (settlement IN ('fulfilled', 'rejected')),"
    "  value BLOB,"
    "  delivery_order INTEGER CHECK (delivery_order >= 0),"
    "  created_at INTEGER NOT NULL,"
    "  settled_at INTEGER,"
    "  PRIMARY KEY (run_id, position),"
    "  UNIQUE (run_id, delivery_order),"
    "  CHECK ((state = 'settled') = (settlement IS NOT NULL)),"
    "  CHECK (delivery_order IS NULL OR state = 'settled')"
    ") STRICT;"

    /* Outcomes that came back and wait to be released to the worker. */
    "CREATE TABLE mailbox ("
    "  run_id INTEGER NOT NULL,"
    "  position INTEGER NOT NULL,"
    "  settlement TEXT NOT NULL CHECK (settlement IN ('fulfilled', 'rejected')),"
    "  value BLOB,"
    "  arrived_at INTEGER NOT NULL,"
    "  PRIMARY KEY (run_id, position),"
    "  FOREIGN KEY (run_id, position) REFERENCES journal(run_id, position)"
    ") STRICT;"

    /* Each time a worker ran (part of) a run. */
    "CREATE TABLE activations ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  seq INTEGER NOT NULL CHECK (seq >= 1),"
    "  worker_pid INTEGER,"
    "  outcome TEXT,"
    "  started_at INTEGER NOT NULL,"
    "  ended_at INTEGER,"
    "  PRIMARY KEY (run_id, seq)"
    ") STRICT;"

    /* Per-flow key-value data: key <= 256 bytes, value <= 64 KiB of JSON (the 1 MiB
     * per flow total is enforced by the writer, inside the journal transaction). */
    "CREATE TABLE kv ("
    "  flow_id TEXT NOT NULL REFERENCES flows(id),"
    "  key TEXT NOT NULL CHECK (length(CAST(key AS BLOB)) BETWEEN 1 AND 256),"
    "  value TEXT NOT NULL"
    "    CHECK (length(CAST(value AS BLOB)) <= 65536 AND json_valid(value)),"
    "  PRIMARY KEY (flow_id, key)"
    ") STRICT, WITHOUT ROWID;"

    /* Every authorization decision, allowed or refused. Append-only. No foreign keys:
     * a refusal may name a flow or run that does not exist. */
    "CREATE TABLE audit ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  at INTEGER NOT NULL,"
    "  flow_id TEXT,"
    "  run_id INTEGER,"
    "  position INTEGER,"
    "  kind TEXT NOT NULL,"
    "  decision TEXT NOT NULL CHECK (decision IN ('allowed', 'refused')),"
    "  reason TEXT"
    ") STRICT;"
    "CREATE INDEX audit_by_run ON audit(run_id, position);"
    "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit"
    "  BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END;"
    "CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit"
    "  BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END;"

    /* Persistent health counters (supervisor/health.h names them). */
    "CREATE TABLE health_counters ("
    "  name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 128),"
    "  value INTEGER NOT NULL DEFAULT 0"
    ") STRICT, WITHOUT ROWID;";

static const char MIGRATION_2[] =
    /* The process of a call in flight (an ops.call's module program), pid and start
     * time in clock ticks, recorded before the program runs and removed once it was
     * reaped (store/call_processes.h). Removed with its journal row (flow reconcile
     * --not-applied). */
    "CREATE TABLE call_processes ("
    "  run_id INTEGER NOT NULL,"
    "  position INTEGER NOT NULL CHECK (position >= 0),"
    "  pid INTEGER NOT NULL CHECK (pid > 0),"
    "  start_ticks INTEGER NOT NULL CHECK (start_ticks > 0),"
    "  started_at INTEGER NOT NULL,"
    "  PRIMARY KEY (run_id, position),"
    "  FOREIGN KEY (run_id, position) REFERENCES journal(run_id, position) ON DELETE CASCADE"
    ") STRICT;";

/* Codemode runs (issue 14; docs/codemode.md). A separate step that only adds: codemode
 * runs have no flow, version or trigger id and are never resumed, so they keep their
 * own tables instead of widening runs (whose foreign key to flow_versions would have
 * to go). Operators address them as "c<id>" (runs, journal). Every tools.call of a run
 * is a codemode_calls row, and its authorization decision an audit row that names the
 * codemode run in codemode_run_id (run_id stays for flow runs: the ids overlap). */
static const char MIGRATION_3[] =
    "CREATE TABLE codemode_runs ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  script_name TEXT NOT NULL CHECK (length(script_name) BETWEEN 1 AND 4096),"
    "  script BLOB NOT NULL,"
    "  script_sha256 TEXT NOT NULL CHECK (" HEX64("script_sha256") "),"
    "  input TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(input)),"
    "  state TEXT NOT NULL DEFAULT 'running'"
    "    CHECK (state IN ('running', 'succeeded', 'failed')),"
    "  owner TEXT,"
    "  outcome TEXT,"
    "  result BLOB,"
    "  error TEXT,"
    "  console BLOB,"
    "  console_truncated INTEGER NOT NULL DEFAULT 0 CHECK (console_truncated IN (0, 1)),"
    "  tool_calls INTEGER NOT NULL DEFAULT 0 CHECK (tool_calls >= 0),"
    "  over_limit_calls INTEGER NOT NULL DEFAULT 0 CHECK (over_limit_calls >= 0),"
    "  worker_pid INTEGER,"
    "  wall_ms INTEGER,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL"
    ") STRICT;"

    /* One row per tools.call within the run's limit: written 'pending' before the
     * tool's module runs (with the audit row), 'settled' with its outcome after; a
     * refusal is a row settled 'rejected' at once. */
    "CREATE TABLE codemode_calls ("
    "  run_id INTEGER NOT NULL REFERENCES codemode_runs(id),"
    "  position INTEGER NOT NULL CHECK (position >= 0),"
    "  kind TEXT NOT NULL CHECK (length(kind) >= 1),"
    "  tool TEXT,"
    "  module TEXT,"
    "  op TEXT,"
    "  class TEXT CHECK (class IN ('query', 'mutation')),"
    "  args BLOB NOT NULL,"
    "  args_digest TEXT NOT NULL CHECK (" HEX64("args_digest") "),"
    "  idempotency_key TEXT,"
    "  decision TEXT NOT NULL CHECK (decision IN ('allowed', 'refused')),"
    "  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'settled')),"
    "  settlement TEXT CHECK (settlement IN ('fulfilled', 'rejected')),"
    "  value BLOB,"
    "  created_at INTEGER NOT NULL,"
    "  settled_at INTEGER,"
    "  PRIMARY KEY (run_id, position),"
    "  CHECK ((state = 'settled') = (settlement IS NOT NULL))"
    ") STRICT;"

    "ALTER TABLE audit ADD COLUMN codemode_run_id INTEGER;"
    "CREATE INDEX audit_by_codemode_run ON audit(codemode_run_id, position);";

/* Triggers under serve (issue 12; docs/triggers.md).
 *   flows.enabled_at      when the flow was last enabled (NULL: enabled since created);
 *                         a schedule counts from max(approval, enable), so a flow
 *                         disabled for a week does not catch that week up.
 *   flows.disabled_reason why serve disabled the flow by itself (the rate limit), NULL
 *                         when the operator disabled it or it is enabled.
 *   schedules             one row per approved, enabled, scheduled flow: the version
 *                         and schedule (spec, as text) it was computed for, the anchor
 *                         intervals count from, and the next instant it fires (NULL:
 *                         never again). A fire admits a run whose trigger id names the
 *                         instant, so moving next_fire on after a crash never fires twice.
 *   events                events emitted while no serve ran (and every event emitted),
 *                         delivered to the flows that listen by the next serve. */
static const char MIGRATION_4[] =
    "ALTER TABLE flows ADD COLUMN enabled_at INTEGER;"
    "ALTER TABLE flows ADD COLUMN disabled_reason TEXT"
    "  CHECK (disabled_reason IS NULL OR length(disabled_reason) BETWEEN 1 AND 512);"
    "CREATE TABLE schedules ("
    "  flow_id TEXT PRIMARY KEY REFERENCES flows(id),"
    "  version INTEGER NOT NULL CHECK (version >= 1),"
    "  spec TEXT NOT NULL CHECK (length(spec) BETWEEN 1 AND 512),"
    "  anchor INTEGER NOT NULL,"
    "  next_fire INTEGER,"
    "  updated_at INTEGER NOT NULL"
    ") STRICT;"
    "CREATE INDEX schedules_by_next_fire ON schedules(next_fire);"
    "CREATE TABLE events ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  module TEXT NOT NULL CHECK (length(module) BETWEEN 1 AND 128),"
    "  name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 128),"
    "  version INTEGER NOT NULL CHECK (version >= 1),"
    "  event_id TEXT NOT NULL CHECK (length(event_id) BETWEEN 1 AND 128),"
    "  payload TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(payload)),"
    "  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered')),"
    "  emitted_at INTEGER NOT NULL,"
    "  delivered_at INTEGER,"
    "  UNIQUE (module, name, version, event_id)"
    ") STRICT;"
    "CREATE INDEX events_pending ON events(state, seq);";

/* Version 5 (issue 25): the audit log's two indexes hold only the rows of their kind of
 * run. A flow's row has no codemode_run_id and a codemode run's no run_id, so each
 * audit row wrote a NULL entry into the other kind's index: one more WAL page per
 * journaled call. A lookup by either id (= ?) implies IS NOT NULL, so SQLite still
 * uses them. */
static const char MIGRATION_5[] =
    "DROP INDEX audit_by_run;"
    "CREATE INDEX audit_by_run ON audit(run_id, position) WHERE run_id IS NOT NULL;"
    "DROP INDEX audit_by_codemode_run;"
    "CREATE INDEX audit_by_codemode_run ON audit(codemode_run_id, position)"
    "  WHERE codemode_run_id IS NOT NULL;";

/* Version 6 (issue 25): the runs not yet ended, by flow. A serve's runner looks for
 * the next run to start (runs_heads: each flow's oldest unfinished run) whenever it is
 * free; without this index that read walked every run ever made, ended or not, so a
 * serve slowed down as its history grew. The index holds only the unfinished runs. */
static const char MIGRATION_6[] =
    "CREATE INDEX runs_unfinished ON runs(flow_id, id)"
    "  WHERE state NOT IN ('succeeded', 'failed', 'cancelled');";

/* Version 7 (issue 31): long-running host calls (store/waits.h). A row while a module
 * op the catalog marks long_running has accepted a call and its completion has not
 * come: the run may be suspended meanwhile, holding no process. The key is the call's
 * idempotency key, by which the module completes it (`flow complete`, or the event
 * completion_module/completion_event whose id is the key). runs.suspended_ms is the time the
 * run spent suspended, which its manifest's deadline does not count. journal.destination:
 * see host_kind_destination (flows/host_kinds.h). */
static const char MIGRATION_7[] =
    "CREATE TABLE waits ("
    "  run_id INTEGER NOT NULL,"
    "  position INTEGER NOT NULL CHECK (position >= 0),"
    "  idempotency_key TEXT NOT NULL UNIQUE CHECK (" HEX64("idempotency_key") "),"
    "  started_at INTEGER NOT NULL,"
    "  deadline_at INTEGER NOT NULL,"
    "  completion_module TEXT CHECK (length(completion_module) BETWEEN 1 AND 63),"
    "  completion_event TEXT CHECK (length(completion_event) BETWEEN 1 AND 63),"
    "  CHECK ((completion_module IS NULL) = (completion_event IS NULL)),"
    "  PRIMARY KEY (run_id, position),"
    "  FOREIGN KEY (run_id, position) REFERENCES journal(run_id, position) ON DELETE CASCADE"
    ") STRICT;"
    "CREATE INDEX waits_by_deadline ON waits(deadline_at);"
    "ALTER TABLE runs ADD COLUMN suspended_ms INTEGER NOT NULL DEFAULT 0"
    "  CHECK (suspended_ms >= 0);"
    /* Where the operator's catalog sent a call that its arguments do not name (a sink's
     * module op, or its file): a resend after a crash goes there or nowhere. */
    "ALTER TABLE journal ADD COLUMN destination TEXT"
    "  CHECK (destination IS NULL OR length(destination) BETWEEN 1 AND 200);";

static const char *const MIGRATIONS[STORE_SCHEMA_VERSION] = {MIGRATION_1, MIGRATION_2,
                                                               MIGRATION_3, MIGRATION_4,
                                                               MIGRATION_5, MIGRATION_6,
                                                               MIGRATION_7};

const char *store_schema_migration(int version)
{
    if (version < 1 || version > STORE_SCHEMA_VERSION)
        return NULL;
    return MIGRATIONS[version - 1];
}
