/* The one system question of the worker's spin before a blocking read (stdin_spin.c),
 * per system: NAME_linux.c asks ppoll(2) with a zero timeout, NAME_macos.c poll(2),
 * NAME_windows.c PeekNamedPipe. */
#ifndef BASAL_WORKER_STDIN_READY_H
#define BASAL_WORKER_STDIN_READY_H

#include <stdbool.h>

/* True if a read of stdin would not block now (bytes, end of stream or an error). */
bool stdin_ready_now(void);

#endif
