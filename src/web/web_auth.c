/* The web token, the one-time login code, the CSRF token and the page's address file
 * (web/web_auth.h). */
#include "web/web_auth.h"
#include "base/error_line.h"
#include "base/hex_text.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CSRF_LABEL "basal web csrf v1"
#define SMALL_FILE_MAX 512u

static int path_of(const char *home, const char *name, char *out, size_t cap, char *err,
                   size_t err_cap)
{
    int n = snprintf(out, cap, "%s/%s", home, name);
    if (n <= 0 || (size_t)n >= cap)
        return error_line(err, err_cap, "the data home's path is too long");
    return 0;
}

static int random_hex(char out[WEB_SECRET_HEX + 1], char *err, size_t err_cap)
{
    unsigned char bytes[WEB_SECRET_HEX / 2];
    size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return error_line(err, err_cap, "getrandom failed: %s", strerror(errno));
        got += (size_t)n;
    }
    hex_text(bytes, sizeof bytes, out);
    OPENSSL_cleanse(bytes, sizeof bytes);
    return 0;
}

static bool is_secret_hex(const char *text)
{
    return strlen(text) == WEB_SECRET_HEX && strspn(text, "0123456789abcdef") == WEB_SECRET_HEX;
}

/* Reads a small owner-only regular file (no link) into out, one trailing newline
 * dropped. 1, 0 when it does not exist, -1 with err. *mtime set when not NULL. */
static int read_private_file(const char *path, char *out, size_t cap, time_t *mtime, char *err,
                             size_t err_cap)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return error_line(err, err_cap, "cannot open %s: %s", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
        (sb.st_mode & 077) != 0 || sb.st_size < 0 || (size_t)sb.st_size >= cap ||
        (size_t)sb.st_size >= SMALL_FILE_MAX) {
        close(fd);
        return error_line(err, err_cap, "%s is not an owner-only regular file of this user "
                          "(mode 0600, under %u bytes): refused", path, SMALL_FILE_MAX);
    }
    size_t len = 0;
    while (len < (size_t)sb.st_size) {
        ssize_t n = read(fd, out + len, (size_t)sb.st_size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (len != (size_t)sb.st_size)
        return error_line(err, err_cap, "cannot read %s", path);
    out[len] = '\0';
    if (len > 0 && out[len - 1] == '\n')
        out[len - 1] = '\0';
    if (mtime != NULL)
        *mtime = sb.st_mtime;
    return 1;
}

/* Writes text and a newline to name in home by a temporary file and a rename, 0600;
 * exclusive: by a link that never replaces a file there (1: one was there). */
static int write_private_file(const char *home, const char *name, const char *text,
                              bool exclusive, char *err, size_t err_cap)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (path_of(home, name, path, sizeof path, err, err_cap) != 0)
        return -1;
    int n = snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    if (n <= 0 || (size_t)n >= sizeof tmp)
        return error_line(err, err_cap, "the data home's path is too long");
    (void)unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return error_line(err, err_cap, "cannot create %s: %s", tmp, strerror(errno));
    size_t len = strlen(text);
    bool ok = fchmod(fd, 0600) == 0 && write(fd, text, len) == (ssize_t)len &&
              write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (ok) {
        /* The token is never replaced: a second maker links nothing over the first. */
        if (exclusive)
            ok = link(tmp, path) == 0;
        else
            ok = rename(tmp, path) == 0;
    }
    int saved = errno;
    (void)unlink(tmp);
    if (!ok && exclusive && saved == EEXIST)
        return 1;
    if (!ok)
        return error_line(err, err_cap, "cannot write %s: %s", path, strerror(saved));
    return 0;
}

int web_token_ensure(const char *home, char out[WEB_SECRET_HEX + 1], bool *created, char *err,
                     size_t err_cap)
{
    char path[PATH_MAX], text[SMALL_FILE_MAX];
    if (created != NULL)
        *created = false;
    if (path_of(home, WEB_TOKEN_FILE, path, sizeof path, err, err_cap) != 0)
        return -1;
    for (int attempt = 0; attempt < 2; attempt++) {
        int found = read_private_file(path, text, sizeof text, NULL, err, err_cap);
        if (found < 0)
            return -1;
        if (found == 1) {
            if (!is_secret_hex(text)) {
                OPENSSL_cleanse(text, sizeof text);
                return error_line(err, err_cap, "%s does not hold 64 hex digits: refused "
                                  "(remove it and run ck-basal setup for a new token)", path);
            }
            memcpy(out, text, WEB_SECRET_HEX + 1);
            OPENSSL_cleanse(text, sizeof text);
            return 0;
        }
        char fresh[WEB_SECRET_HEX + 1];
        if (random_hex(fresh, err, err_cap) != 0)
            return -1;
        int rc = write_private_file(home, WEB_TOKEN_FILE, fresh, true, err, err_cap);
        OPENSSL_cleanse(fresh, sizeof fresh);
        if (rc < 0)
            return -1;
        if (rc == 0 && created != NULL)
            *created = true;
        /* Made here or by a racing maker: read back what is there. */
    }
    return error_line(err, err_cap, "%s could not be made", path);
}

int web_login_code_new(const char *home, char out[WEB_SECRET_HEX + 1], char *err,
                       size_t err_cap)
{
    if (random_hex(out, err, err_cap) != 0)
        return -1;
    return write_private_file(home, WEB_LOGIN_FILE, out, false, err, err_cap);
}

int web_login_code_take(const char *home, const char *offered, char *err, size_t err_cap)
{
    char path[PATH_MAX], text[SMALL_FILE_MAX];
    time_t made = 0;
    if (path_of(home, WEB_LOGIN_FILE, path, sizeof path, err, err_cap) != 0)
        return -1;
    int found = read_private_file(path, text, sizeof text, &made, err, err_cap);
    if (found <= 0)
        return found;
    bool fresh = time(NULL) - made <= WEB_LOGIN_MAX_AGE_S;
    bool match = is_secret_hex(text) && web_secret_equal(offered, text);
    OPENSSL_cleanse(text, sizeof text);
    if (!match)
        return 0;
    /* Spent whether or not it was still fresh: a stale code is no use to anyone. */
    if (unlink(path) != 0)
        return error_line(err, err_cap, "cannot remove %s: %s", path, strerror(errno));
    return fresh ? 1 : 0;
}

int web_csrf_token(const char *token, char out[WEB_SECRET_HEX + 1])
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    if (HMAC(EVP_sha256(), token, (int)strlen(token), (const unsigned char *)CSRF_LABEL,
             sizeof CSRF_LABEL - 1, mac, &mac_len) == NULL ||
        mac_len != WEB_SECRET_HEX / 2)
        return -1;
    hex_text(mac, mac_len, out);
    return 0;
}

bool web_secret_equal(const char *offered, const char *known)
{
    if (offered == NULL || strlen(offered) != WEB_SECRET_HEX || strlen(known) != WEB_SECRET_HEX)
        return false;
    return CRYPTO_memcmp(offered, known, WEB_SECRET_HEX) == 0;
}

int web_address_write(const char *home, const char *base_url, char *err, size_t err_cap)
{
    return write_private_file(home, WEB_ADDRESS_FILE, base_url, false, err, err_cap);
}

int web_address_read(const char *home, char *out, size_t cap, char *err, size_t err_cap)
{
    char path[PATH_MAX];
    if (path_of(home, WEB_ADDRESS_FILE, path, sizeof path, err, err_cap) != 0)
        return -1;
    return read_private_file(path, out, cap, NULL, err, err_cap);
}

void web_address_remove(const char *home)
{
    char path[PATH_MAX], err[64];
    if (path_of(home, WEB_ADDRESS_FILE, path, sizeof path, err, sizeof err) == 0)
        (void)unlink(path);
}
