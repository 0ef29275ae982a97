#include "host/curl_baseline.h"

CURLcode curl_baseline_options(CURL *c, char *errbuf)
{
    CURLcode rc = CURLE_OK;
#define SET(opt, val) CURL_SET_WHILE_OK(rc, c, opt, val)
    SET(CURLOPT_ERRORBUFFER, errbuf);
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_PROXY, "");
    SET(CURLOPT_NOPROXY, "*");
    SET(CURLOPT_NETRC, (long)CURL_NETRC_IGNORED);
    SET(CURLOPT_HTTPAUTH, (long)CURLAUTH_NONE);
    SET(CURLOPT_HTTP_CONTENT_DECODING, 0L);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_USERAGENT, "basal");
#undef SET
    return rc;
}
