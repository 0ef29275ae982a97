/* Batched admission (serve/admission_batch.h). */
#include "serve/admission_batch.h"

#include <stddef.h>

struct admission_waiter {
    struct run_admission *admission;
    bool done; /* its outcome is written and durable */
    struct admission_waiter *next;
};

int admission_batch_init(struct admission_batch *b)
{
    b->head = NULL;
    b->tail = &b->head;
    b->writing = false;
    if (pthread_mutex_init(&b->mu, NULL) != 0)
        return -1;
    if (pthread_cond_init(&b->written, NULL) != 0) {
        pthread_mutex_destroy(&b->mu);
        return -1;
    }
    return 0;
}

/* Adds w at the end of the waiting list. Under b->mu. */
static void append_waiter(struct admission_batch *b, struct admission_waiter *w)
{
    *b->tail = w;
    b->tail = &w->next;
}

/* Takes up to ADMISSION_BATCH_MAX waiters off the list, oldest first. Under b->mu. */
static size_t take_waiting(struct admission_batch *b, struct admission_waiter **taken)
{
    size_t n = 0;
    while (b->head != NULL && n < ADMISSION_BATCH_MAX) {
        taken[n++] = b->head;
        b->head = b->head->next;
    }
    if (b->head == NULL)
        b->tail = &b->head;
    return n;
}

void admission_batch_admit(struct admission_batch *b, struct store *st, struct run_admission *a)
{
    /* On the list only while this call waits: a writer takes it off before it sets
     * done, and this returns only once done is set. */
    struct admission_waiter me = {a, false, NULL};
    pthread_mutex_lock(&b->mu);
    append_waiter(b, &me);
    while (!me.done) {
        if (b->writing) {
            pthread_cond_wait(&b->written, &b->mu);
            continue;
        }
        b->writing = true;
        struct admission_waiter *taken[ADMISSION_BATCH_MAX];
        size_t n = take_waiting(b, taken);
        pthread_mutex_unlock(&b->mu);

        /* The waiters taken block until done is set: their admissions stay valid. */
        struct run_admission *items[ADMISSION_BATCH_MAX];
        for (size_t i = 0; i < n; i++)
            items[i] = taken[i]->admission;
        char err[512];
        (void)runs_admit_batch(st, items, n, err, sizeof err); /* outcomes in the items */

        pthread_mutex_lock(&b->mu);
        for (size_t i = 0; i < n; i++)
            taken[i]->done = true;
        b->writing = false;
        pthread_cond_broadcast(&b->written);
    }
    pthread_mutex_unlock(&b->mu);
}
