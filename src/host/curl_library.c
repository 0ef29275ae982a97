#include "host/curl_library.h"

#include <stdio.h>

#include "base/shared_library.h"

/* libcurl's ABI has kept this name since 7.16 (2006); Debian's libcurl4 provides it. */
#define LIBCURL_SONAME "libcurl.so.4"

struct curl_library curl_lib;

static const struct shared_symbol symbols[] = {
    SHARED_SYMBOL(curl_lib, easy_cleanup, curl_easy_cleanup),
    SHARED_SYMBOL(curl_lib, easy_getinfo, curl_easy_getinfo),
    SHARED_SYMBOL(curl_lib, easy_init, curl_easy_init),
    SHARED_SYMBOL(curl_lib, easy_perform, curl_easy_perform),
    SHARED_SYMBOL(curl_lib, easy_reset, curl_easy_reset),
    SHARED_SYMBOL(curl_lib, easy_setopt, curl_easy_setopt),
    SHARED_SYMBOL(curl_lib, easy_strerror, curl_easy_strerror),
    SHARED_SYMBOL(curl_lib, free, curl_free),
    SHARED_SYMBOL(curl_lib, global_cleanup, curl_global_cleanup),
    SHARED_SYMBOL(curl_lib, global_init, curl_global_init),
    SHARED_SYMBOL(curl_lib, slist_append, curl_slist_append),
    SHARED_SYMBOL(curl_lib, slist_free_all, curl_slist_free_all),
    SHARED_SYMBOL(curl_lib, url, curl_url),
    SHARED_SYMBOL(curl_lib, url_cleanup, curl_url_cleanup),
    SHARED_SYMBOL(curl_lib, url_get, curl_url_get),
    SHARED_SYMBOL(curl_lib, url_set, curl_url_set),
};

static struct lazy_library library = LAZY_LIBRARY(LIBCURL_SONAME, symbols);

int curl_library_load(char *err, size_t err_cap)
{
    return lazy_library_load(&library, err, err_cap);
}

int curl_library_start(char *err, size_t err_cap)
{
    if (curl_library_load(err, err_cap) != 0)
        return -1;
    if (curl_lib.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, err_cap, "libcurl could not be initialised");
        return -1;
    }
    return 0;
}

void curl_library_stop(void)
{
    curl_lib.global_cleanup();
}
