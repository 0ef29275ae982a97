/* Binary search by position (see position_search.h). */
#include "base/position_search.h"

#include <string.h>

static uint32_t position_of(const unsigned char *item, size_t position_offset)
{
    uint32_t position;
    memcpy(&position, item + position_offset, sizeof position);
    return position;
}

void *position_search(void *items, size_t count, size_t item_size, size_t position_offset,
                      uint32_t position)
{
    unsigned char *base = items;
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (position_of(base + mid * item_size, position_offset) < position)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < count && position_of(base + lo * item_size, position_offset) == position)
        return base + lo * item_size;
    return NULL;
}
