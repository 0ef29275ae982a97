/* Admissions that arrive together are written together (group commit at the level of
 * the transaction, as databases do it): one transaction and one commit, so one fsync
 * and one turn at the store's write lock for all of them, instead of one each.
 *
 * A requester adds its admission to the waiting list; the first that finds no batch
 * being written becomes the writer: it takes up to ADMISSION_BATCH_MAX waiting
 * admissions (its own among them, or it tries again), writes them on its own store
 * connection (runs_admit_batch) and, once the commit is durable, marks each done and
 * wakes the others. Admissions arriving meanwhile wait for the next batch. Each
 * requester gets its own outcome in its struct run_admission; a refusal of one
 * admission (backlog, duplicate trigger id) does not touch the others. */
#ifndef BASAL_SERVE_ADMISSION_BATCH_H
#define BASAL_SERVE_ADMISSION_BATCH_H

#include "store/runs.h"

#include <pthread.h>
#include <stdbool.h>

#define ADMISSION_BATCH_MAX 64

struct admission_waiter;

struct admission_batch {
    pthread_mutex_t mu;
    pthread_cond_t written;
    struct admission_waiter *head, **tail; /* the waiting list, oldest first */
    bool writing;                          /* a requester is writing a batch */
};

/* 0, or -1 if a mutex or condition could not be made. Lives as long as the process
 * (serve's daemon). */
int admission_batch_init(struct admission_batch *b);

/* Admits a (its outcome in a->rc, a->run_id, a->err: runs_admit_queued's) with the
 * admissions waiting beside it; returns once its outcome is durable. st is the
 * caller's own connection, used if the caller writes the batch. */
void admission_batch_admit(struct admission_batch *b, struct store *st, struct run_admission *a);

#endif
