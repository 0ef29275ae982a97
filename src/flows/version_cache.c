#include "flows/version_cache.h"

#include "flows/flows.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A list from newest (most recently used) to oldest: with 64 entries a walk is cheaper
 * than keeping a hash table right. */
struct version_cache {
    pthread_mutex_t mu;
    size_t capacity, count;
    size_t max_bytes, bytes; /* the listed entries' script and manifest bytes */
    struct version_entry *newest, *oldest;
};

struct version_cache *version_cache_new(size_t capacity, size_t max_bytes)
{
    if (capacity == 0)
        return NULL;
    struct version_cache *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        return NULL;
    }
    c->capacity = capacity;
    c->max_bytes = max_bytes;
    return c;
}

static void entry_free(struct version_entry *e)
{
    flows_blob_free(&e->script);
    flows_blob_free(&e->manifest_bytes);
    manifest_free(&e->manifest);
    free(e);
}

static size_t entry_bytes(const struct version_entry *e)
{
    return e->script.len + e->manifest_bytes.len;
}

static void unlink_entry(struct version_cache *c, struct version_entry *e)
{
    if (e->newer != NULL)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    if (e->older != NULL)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void link_newest(struct version_cache *c, struct version_entry *e)
{
    e->older = c->newest;
    e->newer = NULL;
    if (c->newest != NULL)
        c->newest->newer = e;
    c->newest = e;
    if (c->oldest == NULL)
        c->oldest = e;
}

void version_cache_free(struct version_cache *c)
{
    if (c == NULL)
        return;
    for (struct version_entry *e = c->newest, *next; e != NULL; e = next) {
        next = e->older;
        entry_free(e);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static struct version_entry *find(struct version_cache *c, const char *flow, int64_t version,
                                  const char *code_hash)
{
    for (struct version_entry *e = c->newest; e != NULL; e = e->older)
        if (e->version == version && strcmp(e->code_hash, code_hash) == 0 &&
            strcmp(e->flow_id, flow) == 0)
            return e;
    return NULL;
}

/* Under the lock: e becomes the newest and is held once more. */
static struct version_entry *hold(struct version_cache *c, struct version_entry *e)
{
    unlink_entry(c, e);
    link_newest(c, e);
    e->refs++;
    return e;
}

struct version_entry *version_cache_get(struct version_cache *c, const char *flow,
                                        int64_t version, const char *code_hash)
{
    pthread_mutex_lock(&c->mu);
    struct version_entry *e = find(c, flow, version, code_hash);
    if (e != NULL)
        hold(c, e);
    pthread_mutex_unlock(&c->mu);
    return e;
}

/* Under the lock: the oldest entries leave until the table is within its bounds.
 * kept (the newest, which fits alone) never leaves. */
static void evict(struct version_cache *c, const struct version_entry *kept)
{
    struct version_entry *old = c->oldest;
    while (old != NULL && old != kept &&
           (c->count > c->capacity || c->bytes > c->max_bytes)) {
        struct version_entry *newer = old->newer;
        unlink_entry(c, old);
        old->listed = false;
        c->count--;
        c->bytes -= entry_bytes(old);
        if (old->refs == 0)
            entry_free(old);
        old = newer;
    }
}

static void take(void *dst, void *src, size_t size)
{
    memcpy(dst, src, size);
    memset(src, 0, size);
}

struct version_entry *version_cache_put(struct version_cache *c, const char *flow,
                                        int64_t version, const char *code_hash,
                                        struct flow_blob *script,
                                        struct flow_blob *manifest_bytes,
                                        struct manifest *parsed)
{
    struct version_entry *made = calloc(1, sizeof *made);
    size_t flow_len = strlen(flow), hash_len = strlen(code_hash);
    if (made == NULL || flow_len >= sizeof made->flow_id || hash_len != CODE_HASH_HEX_LEN) {
        free(made);
        flows_blob_free(script);
        flows_blob_free(manifest_bytes);
        manifest_free(parsed);
        return NULL;
    }
    memcpy(made->flow_id, flow, flow_len + 1);
    made->version = version;
    memcpy(made->code_hash, code_hash, hash_len + 1);
    take(&made->script, script, sizeof *script);
    take(&made->manifest_bytes, manifest_bytes, sizeof *manifest_bytes);
    take(&made->manifest, parsed, sizeof *parsed);
    struct version_entry *duplicate = NULL;
    pthread_mutex_lock(&c->mu);
    struct version_entry *e = find(c, flow, version, code_hash);
    if (e != NULL) {
        hold(c, e);
        duplicate = made; /* another thread's put came first: the same bytes */
    } else if (entry_bytes(made) > c->max_bytes) {
        made->refs = 1; /* the caller's alone: not listed, freed on its release */
        e = made;
    } else {
        made->listed = true;
        made->refs = 1; /* the caller's */
        link_newest(c, made);
        c->count++;
        c->bytes += entry_bytes(made);
        e = made;
        evict(c, made);
    }
    pthread_mutex_unlock(&c->mu);
    if (duplicate != NULL)
        entry_free(duplicate);
    return e;
}

void version_cache_release(struct version_cache *c, struct version_entry *e)
{
    if (e == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    bool gone = --e->refs == 0 && !e->listed;
    pthread_mutex_unlock(&c->mu);
    if (gone)
        entry_free(e);
}

size_t version_cache_count(struct version_cache *c)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->count;
    pthread_mutex_unlock(&c->mu);
    return n;
}
