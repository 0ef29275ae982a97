/* Who may see the status page (docs/web.md): whoever holds the data home's web token.
 *
 *   web-token   32 random bytes (getrandom) as 64 hex digits, 0600 in the data home,
 *               made by `ck-basal setup` and by `serve --web` when missing. It is the
 *               value of the page's HttpOnly, SameSite=Strict session cookie.
 *   web-login   a one-time login code (32 random bytes, hex) that `ck-basal web-url`
 *               writes and prints in the URL; the page's /login takes it once (the file
 *               goes), within WEB_LOGIN_MAX_AGE_S, and answers with the cookie. The
 *               URL in a browser's history therefore opens nothing later.
 *   web-address the page's base URL ("http://127.0.0.1:PORT"), written by serve --web
 *               once it listens and removed when it stops: web-url reads it.
 *
 * Every file is read through O_NOFOLLOW and must be a regular file of this user with
 * no group or other permission bits; anything else is refused (fail closed), never
 * replaced. Secrets are compared in constant time. */
#ifndef BASAL_WEB_WEB_AUTH_H
#define BASAL_WEB_WEB_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define WEB_SECRET_HEX 64u
#define WEB_LOGIN_MAX_AGE_S 600
#define WEB_TOKEN_FILE "web-token"
#define WEB_LOGIN_FILE "web-login"
#define WEB_ADDRESS_FILE "web-address"

/* Reads the home's token into out, creating it first when missing (*created says so;
 * created may be NULL). 0, or -1 with a one-line reason (a token file that is not
 * owner-only, not 64 hex digits, a link...). */
int web_token_ensure(const char *home, char out[WEB_SECRET_HEX + 1], bool *created,
                     char *err, size_t err_cap);

/* A fresh one-time login code, written to web-login (replacing an older one). */
int web_login_code_new(const char *home, char out[WEB_SECRET_HEX + 1], char *err,
                       size_t err_cap);
/* 1: offered is the current login code, not older than WEB_LOGIN_MAX_AGE_S, and the
 * code is now spent (web-login removed); 0: it is not (nothing changes); -1: the file
 * could not be checked (err says why). */
int web_login_code_take(const char *home, const char *offered, char *err, size_t err_cap);

/* The CSRF token of the page's forms: HMAC-SHA256 of a fixed label under the token,
 * hex. 0 or -1 (libcrypto failed). */
int web_csrf_token(const char *token, char out[WEB_SECRET_HEX + 1]);

/* Whether two secrets are equal: offered of any length (NULL: no), known 64 hex
 * digits; the time taken does not depend on where they differ. */
bool web_secret_equal(const char *offered, const char *known);

/* web-address: written (replaced atomically), read into out, removed. */
int web_address_write(const char *home, const char *base_url, char *err, size_t err_cap);
/* 1 and out, 0 when no serve --web has written it, -1 on a bad file. */
int web_address_read(const char *home, char *out, size_t cap, char *err, size_t err_cap);
void web_address_remove(const char *home);

#endif
