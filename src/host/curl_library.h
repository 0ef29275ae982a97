/* libcurl, loaded when a transfer first needs it (base/shared_library.h says why):
 * the functions basal calls, with the types of libcurl's own header. Call them as
 * curl_lib.easy_init() and so on, only after curl_library_start succeeded. */
#ifndef BASAL_HOST_CURL_LIBRARY_H
#define BASAL_HOST_CURL_LIBRARY_H

#include <curl/curl.h>
#include <stddef.h>

struct curl_library {
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_perform) *easy_perform;
    __typeof__(curl_easy_reset) *easy_reset;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_strerror) *easy_strerror;
    __typeof__(curl_free) *free;
    __typeof__(curl_global_cleanup) *global_cleanup;
    __typeof__(curl_global_init) *global_init;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
    __typeof__(curl_url) *url;
    __typeof__(curl_url_cleanup) *url_cleanup;
    __typeof__(curl_url_get) *url_get;
    __typeof__(curl_url_set) *url_set;
};

/* Filled once by curl_library_start; read-only after. */
extern struct curl_library curl_lib;

/* Loads libcurl (once per process; any thread), for the functions that need no global
 * state (the URL API, lists). 0, or -1 with a one-line reason in err. */
int curl_library_load(char *err, size_t err_cap);

/* Loads libcurl as curl_library_load does and takes a reference on its global
 * state (curl_global_init). 0, or -1 with a one-line reason in err: then no transfer
 * can be made and the caller refuses. Each success is paired with curl_library_stop
 * (serve keeps the one it takes at start for its whole life). */
int curl_library_start(char *err, size_t err_cap);
void curl_library_stop(void);

#endif
