/* Steps 2 and 5 of the Linux confinement: no descriptor above stdio survives.
 *   close-descriptors    closing failed (close_range returned an error other than
 *                        ENOSYS, or the fallback could not close an fd)
 *   descriptor-survived  the sweep of fds 3..1023 (and up to the fd limit) found an
 *                        open descriptor after closing */
#ifndef BASAL_WORKER_DESCRIPTORS_H
#define BASAL_WORKER_DESCRIPTORS_H

/* Closes every descriptor above 2, then sweeps to prove none is left; refuses
 * (never returns) on failure. Safe to call again after Landlock: the fallback then
 * closes by number because /proc is no longer readable. */
void close_descriptors_or_refuse(void);

/* The sweep: the lowest open descriptor in [from, end), or end if none is open. It
 * asks poll (zero timeout: a closed number comes back POLLNVAL), a chunk of numbers
 * per call instead of one fcntl per number, and falls back to fcntl for a chunk poll
 * cannot look at. */
int descriptors_first_open(int from, int end);

#endif
