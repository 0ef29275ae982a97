/* A builtin's refusal of a host call before or instead of its effect: the code the
 * script sees (e.g. "denied", "invalid_argument") and one line of reason. net_fetch
 * and git_builtin build their refusals with it. */
#ifndef BASAL_HOST_REFUSAL_H
#define BASAL_HOST_REFUSAL_H

#define REFUSAL_REASON_MAX 512

struct refusal {
    const char *code; /* static text */
    char reason[REFUSAL_REASON_MAX];
};

/* Sets r's code and its reason (printf-formatted, cut at REFUSAL_REASON_MAX - 1 bytes);
 * returns -1, so a check can `return refuse(r, ...)`. */
__attribute__((format(printf, 3, 4))) int refuse(struct refusal *r, const char *code,
                                                 const char *fmt, ...);

#endif
