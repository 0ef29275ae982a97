/* What a ck-basal build says it is (`ck-basal --version --json`, or the plain
 * "ck-basal V (git R)" line of builds older than the JSON form), and the order of two
 * builds ck upgrade decides by (docs/operations.md, "Upgrading"):
 *
 *   - VERSION, compared as dotted decimal numbers (0.10.0 > 0.9.3): lower is a
 *     downgrade, higher an upgrade;
 *   - within one VERSION, the store schema: a build that knows a lower schema than the
 *     installed one is a downgrade; the same VERSION, git revision and schema is the
 *     same build (nothing to do); anything else is another build of the release.
 *
 * A build of unknown schema (the plain line) counts as knowing the schema of the store
 * it serves, which the caller checks separately. */
#ifndef BASAL_CK_BUILD_VERSION_H
#define BASAL_CK_BUILD_VERSION_H

#include <stddef.h>

struct build_version {
    char version[32]; /* "0.1.0" */
    char git[48];     /* "9a841751da47", "unknown" */
    int store_schema; /* -1: the build does not say (older than --version --json) */
};

/* Asks the ck-basal at path. 0, or -1 with a one-line reason (not runnable, or its
 * answer has neither form). */
int build_version_query(const char *path, struct build_version *out, char *err,
                        size_t err_cap);

enum build_order {
    BUILD_DOWNGRADE = -1,
    BUILD_SAME = 0,
    BUILD_UPGRADE = 1,
    BUILD_OTHER = 2, /* same VERSION and schema, another git revision */
};

/* Where next stands against installed. -1 with a reason in err when a VERSION is not
 * dotted decimal (refused: ck cannot order it). */
int build_version_order(const struct build_version *installed, const struct build_version *next,
                        enum build_order *order, char *err, size_t err_cap);

/* "0.1.0 (git 9a841751da47, store schema 4)" for messages. */
void build_version_text(const struct build_version *v, char *out, size_t cap);

#endif
