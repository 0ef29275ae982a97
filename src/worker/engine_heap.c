#include "worker/engine_heap.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The word before a block's bytes: its class (1..ENGINE_HEAP_CLASSES), or this. */
#define ENGINE_HEAP_TAG_LARGE SIZE_MAX

/* A chunk's header. Blocks follow from offset CHUNK_FIRST_BLOCK: a block is its 8-byte
 * tag and then its bytes, 16 * class bytes in all, so with the first tag at 8 mod 16
 * every block's bytes start 16-byte aligned. */
struct engine_heap_chunk {
    struct engine_heap_chunk *next;
    size_t bytes;
};
#define CHUNK_FIRST_BLOCK 24u

static size_t *tag_of(const void *ptr)
{
    size_t *tag;
    memcpy(&tag, &ptr, sizeof tag); /* the heap owns the block; its tag precedes it */
    return tag - 1;
}

/* A large block's header, before its bytes (its tag is the header's last word). */
static struct engine_heap_large *large_of(const void *ptr)
{
    void *bytes;
    memcpy(&bytes, &ptr, sizeof bytes); /* as tag_of: the heap owns the block */
    return (struct engine_heap_large *)bytes - 1;
}

/* The class of a small request: 16 * class bytes hold its tag and `size` bytes. */
static size_t class_of(size_t size)
{
    return (size + 8 + 15) >> 4;
}

void engine_heap_init(struct engine_heap *heap)
{
    memset(heap, 0, sizeof *heap);
    heap->large.prev = heap->large.next = &heap->large;
    heap->large.tag = ENGINE_HEAP_TAG_LARGE;
}

static bool fits_cap(const struct engine_heap *heap, size_t more, size_t cap)
{
    return more <= cap && heap->footprint <= cap - more;
}

/* A new chunk with room for at least `need` bytes of blocks. */
static enum engine_heap_result new_chunk(struct engine_heap *heap, size_t need, size_t cap)
{
    size_t bytes = ENGINE_HEAP_CHUNK_BYTES;
    if (need > bytes - CHUNK_FIRST_BLOCK)
        bytes = need + CHUNK_FIRST_BLOCK;
    if (!fits_cap(heap, bytes, cap)) {
        /* Near the cap, a chunk of exactly what is needed: the heap can then fill up
         * to its cap, not stop a chunk short of it. */
        bytes = need + CHUNK_FIRST_BLOCK;
        if (!fits_cap(heap, bytes, cap))
            return ENGINE_HEAP_REFUSED_CAP;
    }
    struct engine_heap_chunk *chunk = malloc(bytes);
    if (chunk == NULL)
        return ENGINE_HEAP_NO_MEMORY;
    chunk->next = heap->chunks;
    chunk->bytes = bytes;
    heap->chunks = chunk;
    heap->footprint += bytes;
    heap->bump = (char *)chunk + CHUNK_FIRST_BLOCK;
    heap->bump_end = (char *)chunk + bytes;
    return ENGINE_HEAP_OK;
}

static enum engine_heap_result alloc_large(struct engine_heap *heap, size_t size, size_t cap,
                                           void **out)
{
    size_t bytes = sizeof(struct engine_heap_large) + size;
    if (bytes < size || !fits_cap(heap, bytes, cap))
        return ENGINE_HEAP_REFUSED_CAP;
    struct engine_heap_large *block = malloc(bytes);
    if (block == NULL)
        return ENGINE_HEAP_NO_MEMORY;
    block->bytes = malloc_usable_size(block);
    block->tag = ENGINE_HEAP_TAG_LARGE;
    block->next = heap->large.next;
    block->prev = &heap->large;
    block->next->prev = block;
    heap->large.next = block;
    heap->footprint += block->bytes;
    *out = block + 1;
    return ENGINE_HEAP_OK;
}

enum engine_heap_result engine_heap_alloc(struct engine_heap *heap, size_t size, size_t cap,
                                          void **out)
{
    if (size > ENGINE_HEAP_SMALL_MAX)
        return alloc_large(heap, size, cap, out);
    size_t cls = class_of(size);
    void *free_block = heap->free_lists[cls];
    if (free_block != NULL) {
        memcpy(&heap->free_lists[cls], free_block, sizeof(void *));
        *out = free_block;
        return ENGINE_HEAP_OK;
    }
    size_t need = cls << 4;
    if ((size_t)(heap->bump_end - heap->bump) < need) {
        enum engine_heap_result made = new_chunk(heap, need, cap);
        if (made != ENGINE_HEAP_OK)
            return made;
    }
    char *block = heap->bump;
    heap->bump += need;
    memcpy(block, &cls, sizeof cls);
    *out = block + sizeof(size_t);
    return ENGINE_HEAP_OK;
}


void engine_heap_free(struct engine_heap *heap, void *ptr)
{
    if (ptr == NULL)
        return;
    size_t cls = *tag_of(ptr);
    if (cls != ENGINE_HEAP_TAG_LARGE) {
        memcpy(ptr, &heap->free_lists[cls], sizeof(void *));
        heap->free_lists[cls] = ptr;
        return;
    }
    struct engine_heap_large *block = large_of(ptr);
    block->prev->next = block->next;
    block->next->prev = block->prev;
    heap->footprint -= block->bytes;
    free(block);
}

size_t engine_heap_usable(const void *ptr)
{
    size_t cls = *tag_of(ptr);
    if (cls != ENGINE_HEAP_TAG_LARGE)
        return (cls << 4) - sizeof(size_t);
    return large_of(ptr)->bytes - sizeof(struct engine_heap_large);
}

enum engine_heap_result engine_heap_realloc(struct engine_heap *heap, void *ptr, size_t size,
                                            size_t cap, void **out)
{
    if (ptr == NULL)
        return engine_heap_alloc(heap, size, cap, out);
    size_t usable = engine_heap_usable(ptr);
    bool large = *tag_of(ptr) == ENGINE_HEAP_TAG_LARGE;
    if (!large && size <= usable) {
        *out = ptr; /* a small block keeps its class: at most 1 KiB above */
        return ENGINE_HEAP_OK;
    }
    if (large) { /* realloc: a shrink gives the rest back, as glibc's did */
        struct engine_heap_large *block = large_of(ptr);
        size_t bytes = sizeof *block + size;
        size_t others = heap->footprint - block->bytes;
        if (bytes < size || bytes > cap || others > cap - bytes)
            return ENGINE_HEAP_REFUSED_CAP;
        struct engine_heap_large *prev = block->prev, *next = block->next;
        size_t old_bytes = block->bytes;
        struct engine_heap_large *grown = realloc(block, bytes);
        if (grown == NULL)
            return ENGINE_HEAP_NO_MEMORY;
        grown->bytes = malloc_usable_size(grown);
        prev->next = grown;
        next->prev = grown;
        heap->footprint = heap->footprint - old_bytes + grown->bytes;
        *out = grown + 1;
        return ENGINE_HEAP_OK;
    }
    void *moved = NULL;
    enum engine_heap_result made = engine_heap_alloc(heap, size, cap, &moved);
    if (made != ENGINE_HEAP_OK)
        return made;
    memcpy(moved, ptr, usable);
    engine_heap_free(heap, ptr);
    *out = moved;
    return ENGINE_HEAP_OK;
}

size_t engine_heap_footprint(const struct engine_heap *heap)
{
    return heap->footprint;
}

void engine_heap_release(struct engine_heap *heap)
{
    struct engine_heap_chunk *chunk = heap->chunks;
    while (chunk != NULL) {
        struct engine_heap_chunk *next = chunk->next;
        free(chunk);
        chunk = next;
    }
    struct engine_heap_large *block = heap->large.next;
    while (block != &heap->large) {
        struct engine_heap_large *next = block->next;
        free(block);
        block = next;
    }
    engine_heap_init(heap);
}
