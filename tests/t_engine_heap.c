/* The worker's engine heap (src/worker/engine_heap.{h,c}), on its own: every engine's
 * runtime lives on one, and the whole heap is given back when the engine is spent.
 * The asan variant runs it under AddressSanitizer, which sees the heap's chunks and
 * large blocks (not the blocks inside a chunk: the overlap check below covers those):
 * a chunk or large block that release forgot is a leak report at exit. The cap is
 * proven end to end in t_budgets [guard heap-footprint-cap]. */
#include "lib/harness.h"
#include "worker/engine_heap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_CAP SIZE_MAX

static bool aligned(const void *ptr)
{
    return ((uintptr_t)ptr & 15u) == 0;
}

static void test_small_blocks(void)
{
    struct engine_heap heap;
    engine_heap_init(&heap);
    bool ok = true;
    char first_bad[128] = "";
    for (size_t size = 0; size <= ENGINE_HEAP_SMALL_MAX && ok; size++) {
        void *a = NULL;
        ok = engine_heap_alloc(&heap, size, NO_CAP, &a) == ENGINE_HEAP_OK && a != NULL &&
             aligned(a) && engine_heap_usable(a) >= size && engine_heap_usable(a) < size + 24;
        if (ok) {
            memset(a, 0xa5, engine_heap_usable(a));
            engine_heap_free(&heap, a);
            void *b = NULL;
            /* the class's free list hands the same block back */
            ok = engine_heap_alloc(&heap, size, NO_CAP, &b) == ENGINE_HEAP_OK && b == a;
            engine_heap_free(&heap, b);
        }
        if (!ok)
            snprintf(first_bad, sizeof first_bad, "size %zu", size);
    }
    check(ok, "engine heap: every small size gets a 16-byte aligned block that holds it, "
              "and a freed block is reused for its class",
          "%s", first_bad);
    engine_heap_release(&heap);
    check(engine_heap_footprint(&heap) == 0, "engine heap: release leaves nothing held", "%zu",
          engine_heap_footprint(&heap));
}

/* Many live blocks of mixed sizes, each filled with its own byte: none overlaps. */
static void test_no_overlap(void)
{
    struct engine_heap heap;
    engine_heap_init(&heap);
    enum { COUNT = 20000 };
    static void *blocks[COUNT];
    static size_t sizes[COUNT];
    unsigned seed = 12345;
    bool ok = true;
    for (size_t i = 0; i < COUNT && ok; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t size = (seed >> 8) % 5 == 0 ? (seed >> 8) % 9000 : (seed >> 8) % 600;
        sizes[i] = size;
        ok = engine_heap_alloc(&heap, size, NO_CAP, &blocks[i]) == ENGINE_HEAP_OK &&
             aligned(blocks[i]);
        if (ok)
            memset(blocks[i], (int)(i & 0xff), size);
        if (ok && i % 3 == 2) { /* free some, so later ones reuse them */
            engine_heap_free(&heap, blocks[i - 1]);
            blocks[i - 1] = NULL;
        }
    }
    size_t bad = 0;
    for (size_t i = 0; i < COUNT && ok; i++) {
        const unsigned char *b = blocks[i];
        for (size_t k = 0; b != NULL && k < sizes[i]; k++)
            if (b[k] != (unsigned char)(i & 0xff)) {
                bad++;
                break;
            }
    }
    check(ok && bad == 0,
          "engine heap: 20000 blocks of mixed sizes (small and large), a third freed and "
          "reused, keep their own bytes",
          "alloc ok %d, %zu blocks overwritten", ok, bad);
    engine_heap_release(&heap);
}

static void test_realloc(void)
{
    struct engine_heap heap;
    engine_heap_init(&heap);
    void *p = NULL;
    bool ok = engine_heap_realloc(&heap, NULL, 10, NO_CAP, &p) == ENGINE_HEAP_OK;
    for (size_t i = 0; ok && i < 10; i++)
        ((unsigned char *)p)[i] = (unsigned char)i;
    /* grow through small classes into a large block and on, shrink, grow again */
    static const size_t steps[] = {100, 1016, 1017, 5000, 300000, 200, 4096, 40};
    size_t kept = 10;
    for (size_t s = 0; ok && s < sizeof steps / sizeof steps[0]; s++) {
        void *q = NULL;
        ok = engine_heap_realloc(&heap, p, steps[s], NO_CAP, &q) == ENGINE_HEAP_OK &&
             aligned(q) && engine_heap_usable(q) >= steps[s];
        if (!ok)
            break;
        for (size_t i = 0; i < 10 && i < kept; i++)
            ok = ok && ((unsigned char *)q)[i] == (unsigned char)i;
        p = q;
        kept = steps[s] < kept ? steps[s] : kept;
    }
    check(ok, "engine heap: realloc keeps the bytes through small classes, large blocks, "
              "shrinks and regrowth",
          "at a step");
    /* a large block that moves stays on the release list: two of them, grown apart */
    void *a = NULL, *b = NULL;
    ok = engine_heap_alloc(&heap, 2000, NO_CAP, &a) == ENGINE_HEAP_OK &&
         engine_heap_alloc(&heap, 2000, NO_CAP, &b) == ENGINE_HEAP_OK &&
         engine_heap_realloc(&heap, a, 1 << 20, NO_CAP, &a) == ENGINE_HEAP_OK &&
         engine_heap_realloc(&heap, b, 3 << 20, NO_CAP, &b) == ENGINE_HEAP_OK;
    engine_heap_free(&heap, a);
    check(ok, "engine heap: large blocks grow by realloc (release frees the rest: asan's "
              "leak check at exit)",
          "realloc failed");
    /* A large block shrunk by realloc gives the rest back (its usable size and the
     * heap's footprint drop), as malloc's realloc did for the budget's count. */
    size_t held = engine_heap_footprint(&heap);
    ok = engine_heap_realloc(&heap, b, 3000, NO_CAP, &b) == ENGINE_HEAP_OK &&
         engine_heap_usable(b) < 8192 && engine_heap_footprint(&heap) + (1u << 20) < held;
    check(ok, "engine heap: a large block shrunk by realloc gives the rest back",
          "usable %zu, footprint %zu from %zu", engine_heap_usable(b),
          engine_heap_footprint(&heap), held);
    engine_heap_release(&heap);
}

static void test_cap(void)
{
    struct engine_heap heap;
    engine_heap_init(&heap);
    const size_t cap = 200000; /* three 64 KiB chunks and a bit */
    size_t allocated = 0;
    enum engine_heap_result last = ENGINE_HEAP_OK;
    void *p = NULL;
    bool within = true;
    while ((last = engine_heap_alloc(&heap, 1000, cap, &p)) == ENGINE_HEAP_OK) {
        allocated++;
        within = within && engine_heap_footprint(&heap) <= cap;
    }
    /* up to the cap, not a whole chunk short of it */
    check(last == ENGINE_HEAP_REFUSED_CAP && within &&
              engine_heap_footprint(&heap) > cap - 2048 && allocated > 180,
          "engine heap: small blocks fill the heap up to its cap (the last chunk cut to "
          "fit), then refuse with REFUSED_CAP",
          "last %d, footprint %zu, %zu blocks", (int)last, engine_heap_footprint(&heap),
          allocated);
    void *big = NULL;
    check(engine_heap_alloc(&heap, 100000, cap, &big) == ENGINE_HEAP_REFUSED_CAP,
          "engine heap: a large block past the cap is refused", "footprint %zu",
          engine_heap_footprint(&heap));
    engine_heap_release(&heap);
    check(engine_heap_alloc(&heap, 100000, cap, &big) == ENGINE_HEAP_OK &&
              engine_heap_footprint(&heap) >= 100000,
          "engine heap: after release the heap is empty and usable again", "%zu",
          engine_heap_footprint(&heap));
    engine_heap_free(&heap, big);
    check(engine_heap_footprint(&heap) == 0,
          "engine heap: a freed large block goes back to malloc at once", "%zu",
          engine_heap_footprint(&heap));
    engine_heap_release(&heap);
}

int main(void)
{
    test_small_blocks();
    test_no_overlap();
    test_realloc();
    test_cap();
    return harness_finish();
}
