/* Which store engine a test's ck-basal runs on. tests/run.sh runs a selection of test
 * programs a second time with BASAL_TEST_ENGINE=postgresql (the "pg/" variant): then
 * every command tests/lib starts gets `--store URI` for a PostgreSQL database of its
 * data home's own (made on first use, on the cluster tests/run.sh started:
 * BASAL_TEST_PG_HOST, _PORT, _USER), so the same checks prove the same behaviour on
 * both engines. Without it, the store is SQLite in the data home as always. */
#ifndef BASAL_TESTS_TEST_STORE_H
#define BASAL_TESTS_TEST_STORE_H

/* NULL on SQLite; else the URI of home's database. When the database cannot be made,
 * reports one "not ok" and returns a URI no server answers, so the test fails rather
 * than passing on the other engine. */
const char *test_store_uri(const char *home);

#endif
