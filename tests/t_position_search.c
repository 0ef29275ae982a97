/* base/position_search.h on its own: the search both the dry run's records and an
 * activation's slots use, at the edges their tests do not reach one by one (an empty
 * array, a position before the first, between two, after the last), and with the
 * position not the first field of the item. */
#include "lib/harness.h"

#include "base/position_search.h"

#include <stddef.h>
#include <stdint.h>

struct item {
    char tag; /* the position not at offset 0 */
    uint32_t position;
};

static struct item *find(struct item *items, size_t count, uint32_t position)
{
    return position_search(items, count, sizeof *items, offsetof(struct item, position),
                           position);
}

int main(void)
{
    struct item items[] = {{'a', 2}, {'b', 5}, {'c', 9}, {'d', 10}, {'e', UINT32_MAX}};
    size_t count = sizeof items / sizeof items[0];
    ok(find(items, 0, 2) == NULL, "position_search: an empty array finds nothing");
    for (size_t i = 0; i < count; i++) {
        struct item *got = find(items, count, items[i].position);
        check(got == &items[i], "position_search: every position is found at its item",
              "position %u: got %s", (unsigned)items[i].position,
              got == NULL ? "NULL" : "another item");
    }
    ok(find(items, count, 0) == NULL, "position_search: a position before the first is absent");
    ok(find(items, count, 6) == NULL, "position_search: a position between two is absent");
    ok(find(items, 4, 11) == NULL, "position_search: a position after the last is absent");
    ok(find(items, 1, 2) == &items[0], "position_search: a one-item array finds its item");
    const struct item *five = find(items, count, 5);
    ok(five != NULL && five->tag == 'b', "position_search: the item found is the whole item");
    return harness_finish();
}
