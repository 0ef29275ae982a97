#include "flows/catalog_cache.h"

#include "base/error_line.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct held_catalog {
    struct ops_catalog catalog;
    unsigned refs;
    bool current; /* the cache's one kept catalog (else freed on its last release) */
};

struct catalog_cache {
    pthread_mutex_t mu;
    long long settled_ms;
    char path[PATH_MAX];
    struct stat identity; /* of path when current was loaded */
    struct held_catalog *current;
};

struct catalog_cache *catalog_cache_new(long long settled_ms)
{
    struct catalog_cache *c = calloc(1, sizeof *c);
    if (c != NULL && pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        return NULL;
    }
    if (c != NULL)
        c->settled_ms = settled_ms;
    return c;
}

static void held_free(struct held_catalog *h)
{
    ops_catalog_free(&h->catalog);
    free(h);
}

void catalog_cache_free(struct catalog_cache *c)
{
    if (c == NULL)
        return;
    if (c->current != NULL)
        held_free(c->current);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mode == b->st_mode && a->st_uid == b->st_uid &&
           same_time(&a->st_mtim, &b->st_mtim) && same_time(&a->st_ctim, &b->st_ctim);
}

static long long ms_of(const struct timespec *t)
{
    return (long long)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

/* Changed long enough ago that a later write would show in its timestamps. */
static bool settled(const struct stat *st, long long settled_ms)
{
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0)
        return false;
    long long changed = ms_of(&st->st_mtim) > ms_of(&st->st_ctim) ? ms_of(&st->st_mtim)
                                                                 : ms_of(&st->st_ctim);
    return ms_of(&now) - changed >= settled_ms;
}

int catalog_cache_get(struct catalog_cache *c, const char *home, struct catalog_hold *out,
                      char *err, size_t err_cap)
{
    memset(out, 0, sizeof *out);
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", home, OPS_CATALOG_FILE) >= sizeof path)
        return error_line(err, err_cap, "%s: the data home path is too long", OPS_CATALOG_FILE);
    struct stat before;
    bool seen = stat(path, &before) == 0;
    if (seen) {
        pthread_mutex_lock(&c->mu);
        struct held_catalog *h = c->current;
        if (h != NULL && strcmp(c->path, path) == 0 && same_file(&c->identity, &before)) {
            h->refs++;
            out->catalog = &h->catalog;
            out->held = h;
        }
        pthread_mutex_unlock(&c->mu);
        if (out->held != NULL)
            return 0;
    }
    struct held_catalog *made = calloc(1, sizeof *made);
    if (made == NULL)
        return error_line(err, err_cap, "out of memory");
    if (ops_catalog_load(home, &made->catalog, err, err_cap) != 0) {
        free(made);
        return -1;
    }
    made->refs = 1;
    out->catalog = &made->catalog;
    out->held = made;
    struct stat after;
    if (!seen || stat(path, &after) != 0 || !same_file(&before, &after) ||
        !settled(&after, c->settled_ms))
        return 0; /* used by this run alone */
    pthread_mutex_lock(&c->mu);
    struct held_catalog *old = c->current;
    bool old_gone = old != NULL && old->refs == 0;
    if (old != NULL)
        old->current = false;
    made->current = true;
    c->current = made;
    memcpy(c->path, path, sizeof path);
    c->identity = after;
    pthread_mutex_unlock(&c->mu);
    if (old_gone)
        held_free(old);
    return 0;
}

void catalog_cache_release(struct catalog_cache *c, struct catalog_hold *h)
{
    struct held_catalog *held = h->held;
    memset(h, 0, sizeof *h);
    if (held == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    bool gone = --held->refs == 0 && !held->current;
    pthread_mutex_unlock(&c->mu);
    if (gone)
        held_free(held);
}
