/* The libcurl options every transfer of basal's starts from (net.fetch and loopback
 * endpoint modules), so that no configuration outside the manifest reaches a
 * transfer: no proxy from the environment (http_proxy, ALL_PROXY, ...), no ~/.netrc,
 * no authentication, no redirect followed by libcurl, the body as sent (no content
 * decoding), no signals (threads), and basal's own user agent. */
#ifndef BASAL_HOST_CURL_BASELINE_H
#define BASAL_HOST_CURL_BASELINE_H

#include <curl/curl.h>

#include "host/curl_library.h"

/* Sets them on c, with errbuf (CURL_ERROR_SIZE bytes) for libcurl's messages.
 * Returns CURLE_OK or the first option refused: the caller then fails closed. */
CURLcode curl_baseline_options(CURL *c, char *errbuf);

/* Sets one more option while rc is CURLE_OK, so a run of them stops at the first
 * option refused and rc names it. */
#define CURL_SET_WHILE_OK(rc, c, opt, val)                                                     \
    do {                                                                                       \
        if ((rc) == CURLE_OK)                                                                  \
            (rc) = curl_lib.easy_setopt((c), (opt), (val));                                        \
    } while (0)

#endif
