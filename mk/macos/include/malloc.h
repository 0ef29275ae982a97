/* For the macOS build (mk/macos.mk): glibc's <malloc.h> is <malloc/malloc.h> on macOS,
 * and mk/macos.mk makes malloc_usable_size its malloc_size (the bytes a block holds). */
#include <malloc/malloc.h>
