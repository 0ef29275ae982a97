/* A stand-in for ck-basal-worker that lies in its Welcome, for the tests of the
 * parent's acceptance check. It is never confined: a parent that trusted a truthful
 * looking Welcome without asking the kernel would accept it.
 *
 *   fake_worker [--seccomp=0|1] [--seatbelt=0|1] [--applied=N] [--runtime=N] [--os=NAME]
 *               [--version=N] [--say=TEXT] --landlock=required|optional
 * It first writes "fake-worker pid <pid>" on stderr (the parent shows a refused
 * worker's stderr; RLIMIT_FSIZE 0 forbids a pid file), then TEXT if given.
 * Defaults tell the truth about the kernel's Landlock ABI (min(kernel, 7)), except that
 * nothing is actually confined. After the Welcome it never exits by itself, even at
 * EOF, so a test can tell whether the parent killed it. */
#include "proto/channel.h"
#include "proto/message.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long option(int argc, char **argv, const char *name, long fallback)
{
    size_t len = strlen(name);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], name, len) == 0 && argv[i][len] == '=')
            return strtol(argv[i] + len + 1, NULL, 10);
    return fallback;
}

static const char *text_option(int argc, char **argv, const char *name, const char *fallback)
{
    size_t len = strlen(name);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], name, len) == 0 && argv[i][len] == '=')
            return argv[i] + len + 1;
    return fallback;
}

int main(int argc, char **argv)
{
    long kernel = syscall(SYS_landlock_create_ruleset, NULL, 0, 1U);
    if (kernel < 0)
        kernel = 0;
    long expected = kernel < (long)LANDLOCK_ABI_KNOWN ? kernel : (long)LANDLOCK_ABI_KNOWN;

    char line[64];
    int n = snprintf(line, sizeof line, "fake-worker pid %d\n", (int)getpid());
    if (write(2, line, (size_t)n) != n)
        return 1;
    const char *say = text_option(argc, argv, "--say", NULL);
    if (say != NULL && write(2, say, strlen(say)) != (ssize_t)strlen(say))
        return 1;

    struct wire_buf scratch;
    wire_buf_init(&scratch);
    struct proto_msg in;
    enum proto_error decode_error = PROTO_OK;
    if (proto_recv(0, &scratch, &in, &decode_error, NULL) != FRAME_OK || decode_error != PROTO_OK)
        return 1;
    proto_msg_free(&in);

    struct proto_msg out;
    memset(&out, 0, sizeof out);
    out.tag = PROTO_WELCOME;
    out.welcome.protocol_version = (uint32_t)option(argc, argv, "--version", PROTO_VERSION);
    out.welcome.engine = proto_text_of("fake");
    out.welcome.worker_version = proto_text_of("fake");
    out.welcome.os = proto_text_of(text_option(argc, argv, "--os", "linux"));
    out.welcome.seccomp = option(argc, argv, "--seccomp", 1) != 0;
    out.welcome.landlock_policy = strcmp(text_option(argc, argv, "--landlock", "required"),
                                         "optional") == 0
                                      ? LANDLOCK_POLICY_OPTIONAL
                                      : LANDLOCK_POLICY_REQUIRED;
    out.welcome.landlock_runtime_abi = (uint32_t)option(argc, argv, "--runtime", kernel);
    out.welcome.landlock_applied_abi = (uint32_t)option(argc, argv, "--applied", expected);
    out.welcome.seatbelt = option(argc, argv, "--seatbelt", 0) != 0;
    enum frame_result sent = FRAME_OK;
    if (proto_send(1, &out, &scratch, &sent) != PROTO_OK || sent != FRAME_OK)
        return 1;
    wire_buf_free(&scratch);

    /* Outlive the parent unless it kills us. */
    signal(SIGPIPE, SIG_IGN);
    char byte;
    while (read(0, &byte, 1) > 0) {
    }
    for (;;)
        pause();
}
