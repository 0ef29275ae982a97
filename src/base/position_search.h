/* Finding an item by its call position in an array kept in position order: the dry
 * run's records and an activation's slots are both looked up once per host call, and
 * both arrays are sorted by a uint32_t position inside each item. */
#ifndef BASAL_BASE_POSITION_SEARCH_H
#define BASAL_BASE_POSITION_SEARCH_H

#include <stddef.h>
#include <stdint.h>

/* The item of items[count] (each item_size bytes, sorted by the uint32_t at
 * position_offset within each, positions unique) whose position is position, or NULL
 * when none is. Pass offsetof(struct ..., position). */
void *position_search(void *items, size_t count, size_t item_size, size_t position_offset,
                      uint32_t position);

#endif
