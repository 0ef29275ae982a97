/* The memory of one engine: everything QuickJS allocates for its runtime and context
 * (and the bridge's tables on the runtime's heap), released in one step when the
 * engine is spent.
 *
 * Each engine is used for one activation and then thrown away. Freeing it object by
 * object (JS_FreeContext and JS_FreeRuntime: a full garbage collection, then a free of
 * every block) was about a sixth of the worker's work per activation back to back.
 * Here small blocks (up to ENGINE_HEAP_SMALL_MAX bytes) are carved from 64 KiB chunks
 * and recycled through one free list per 16-byte size class; larger ones come from
 * malloc, linked so they can be found again. engine_heap_release hands the chunks and
 * the large blocks back to malloc, without looking at a single object.
 *
 * Blocks are 16-byte aligned, like malloc's. A block's usable size is its class size
 * minus an 8-byte header, as with glibc. Free blocks of one class are not reused for
 * another, so the memory held (engine_heap_footprint) can exceed the live bytes; the
 * caller bounds it (ENGINE_HEAP_REFUSED_CAP). Single-threaded, like the worker. */
#ifndef BASAL_WORKER_ENGINE_HEAP_H
#define BASAL_WORKER_ENGINE_HEAP_H

#include <stdbool.h>
#include <stddef.h>

#define ENGINE_HEAP_CLASSES 64u                                  /* 16, 32, ... 1024 bytes */
#define ENGINE_HEAP_SMALL_MAX (ENGINE_HEAP_CLASSES * 16u - 8u)   /* largest small request */
#define ENGINE_HEAP_CHUNK_BYTES ((size_t)64 << 10)

struct engine_heap_chunk;

/* A large block's header, also the head of their circular list. */
struct engine_heap_large {
    struct engine_heap_large *prev, *next;
    size_t bytes; /* what malloc holds for it, header included */
    size_t tag;   /* ENGINE_HEAP_TAG_LARGE: the word before every block's bytes */
};

struct engine_heap {
    struct engine_heap_chunk *chunks;
    char *bump, *bump_end; /* unused space of the newest chunk */
    void *free_lists[ENGINE_HEAP_CLASSES + 1]; /* by class; [0] unused */
    struct engine_heap_large large;
    size_t footprint; /* bytes taken from malloc: chunks and large blocks */
};

enum engine_heap_result {
    ENGINE_HEAP_OK,
    ENGINE_HEAP_REFUSED_CAP, /* the footprint would pass the cap */
    ENGINE_HEAP_NO_MEMORY,   /* malloc failed */
};

/* An empty heap; nothing is taken from malloc until the first allocation. */
void engine_heap_init(struct engine_heap *heap);

/* A block of at least `size` bytes in *out. The heap takes more from malloc only while
 * its footprint stays within `cap`. */
enum engine_heap_result engine_heap_alloc(struct engine_heap *heap, size_t size, size_t cap,
                                          void **out);

/* Resizes a block (ptr may be NULL), keeping its bytes; *out is the block (ptr itself
 * when it is large enough). On failure ptr is untouched. */
enum engine_heap_result engine_heap_realloc(struct engine_heap *heap, void *ptr, size_t size,
                                            size_t cap, void **out);

void engine_heap_free(struct engine_heap *heap, void *ptr);

/* The bytes the block can hold. */
size_t engine_heap_usable(const void *ptr);

size_t engine_heap_footprint(const struct engine_heap *heap);

/* Gives everything back to malloc; every block is gone and the heap is empty again. */
void engine_heap_release(struct engine_heap *heap);

#endif
