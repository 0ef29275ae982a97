/* The Windows worker's startup checks (sandbox.md "Windows"), behind confine.h, before
 * the first read of stdin. The launcher (supervisor/worker_launch_windows.c) fixed the
 * token, the job and the mitigations at creation; here the worker finishes and attests:
 *   1 revert the thread token, and check none remains        no-thread-token
 *   2 lower the primary token to Untrusted, and read it back  untrusted-integrity
 *   3 close ALPC ports and non-inheritable non-stdio File handles   close-handles
 *   4 attest the token: AppContainer, LPAC (no ALL APPLICATION PACKAGES), zero
 *     capabilities, no privileges, only the NULL SID restricting, every group
 *     deny-only                                               lpac-token
 *   5 attest the mitigations, each by GetProcessMitigationPolicy   mitigation-<name>
 *   6 the CPU timer (engine mode), then the handle table against the allowlist
 *     (worker/handle_inventory.c: one image profile, never their union)
 *                                                             cpu-timer, handle-*
 * Every failure exits 70 with "refusing to run unconfined: <token>" and a detail line
 * before it; nothing is ever run weaker. The five Welcome fields are set only once the
 * whole sequence has passed. */
#include "worker/confine.h"

#include "worker/cpu_timer.h"
#include "worker/engine_sha256.h"
#include "worker/handle_inventory.h"
#include "worker/nt_declarations_windows.h"
#include "worker/refuse.h"
#include "proto/lpac_token.h"

#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The refusal's detail on stderr, then the named token (exit 70). */
__attribute__((noreturn, format(printf, 2, 3))) static void refuse_because(const char *token,
                                                                          const char *fmt, ...)
{
    char detail[256];
    va_list args;
    va_start(args, fmt);
    (void)vsnprintf(detail, sizeof detail, fmt, args);
    va_end(args);
    stderr_printf("ck-basal-worker: %s: %s\n", token, detail);
    refuse_unconfined(token);
}

void confine_preload(void)
{
    /* Frames are bytes: the CRT's text mode would turn 0x0a into 0x0d 0x0a. */
    if (_setmode(0, _O_BINARY) < 0 || _setmode(1, _O_BINARY) < 0 || _setmode(2, _O_BINARY) < 0)
        refuse_because("stdio", "cannot put stdin, stdout and stderr in binary mode");
    tzset();
    free(malloc(1));
    /* CNG's first hash loads its provider (and may open \Device\KsecDD, closed in step
     * 3); a wrong digest of "abc" means the digests of replay would be wrong too. */
    static const uint8_t abc_digest[SHA256_DIGEST_BYTES] = {
        0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
        0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    uint8_t digest[SHA256_DIGEST_BYTES];
    sha256("abc", 3, digest);
    if (memcmp(digest, abc_digest, sizeof digest) != 0)
        refuse_because("sha256", "BCryptHash gave a wrong SHA-256 of \"abc\"");
}

/* ---- 1 and 2: the thread token and the primary's integrity ---- */

static void revert_thread_token_or_refuse(void)
{
    if (!RevertToSelf())
        refuse_because("no-thread-token", "RevertToSelf failed (error %lu)", GetLastError());
    HANDLE token = NULL;
    if (OpenThreadToken(GetCurrentThread(), TOKEN_QUERY, TRUE, &token)) {
        CloseHandle(token);
        refuse_because("no-thread-token", "an impersonation token remains after RevertToSelf");
    }
    if (GetLastError() != ERROR_NO_TOKEN)
        refuse_because("no-thread-token", "OpenThreadToken failed with error %lu, not ERROR_NO_TOKEN",
                       GetLastError());
}

static void lower_to_untrusted_or_refuse(HANDLE token)
{
    SID_IDENTIFIER_AUTHORITY mandatory = SECURITY_MANDATORY_LABEL_AUTHORITY;
    PSID untrusted = NULL;
    if (!AllocateAndInitializeSid(&mandatory, 1, SECURITY_MANDATORY_UNTRUSTED_RID, 0, 0, 0, 0, 0,
                                  0, 0, &untrusted))
        refuse_because("untrusted-integrity", "cannot build the Untrusted SID");
    TOKEN_MANDATORY_LABEL label = {.Label = {.Sid = untrusted, .Attributes = SE_GROUP_INTEGRITY}};
    BOOL set = SetTokenInformation(token, TokenIntegrityLevel, &label,
                                   (DWORD)(sizeof label + GetLengthSid(untrusted)));
    DWORD error = GetLastError();
    FreeSid(untrusted);
    if (!set)
        refuse_because("untrusted-integrity", "SetTokenInformation(TokenIntegrityLevel) failed (error %lu)",
                       error);
    DWORD rid = lpac_token_integrity(token);
    if (rid != SECURITY_MANDATORY_UNTRUSTED_RID)
        refuse_because("untrusted-integrity", "the primary token reads integrity 0x%lx after lowering",
                       (unsigned long)rid);
}

/* ---- 4: the token itself (proto/lpac_token.h: the launcher checks the same) ---- */

static void attest_token_or_refuse(HANDLE token)
{
    char why[256];
    if (!lpac_token_shape_ok(token, why, sizeof why))
        refuse_because("lpac-token", "%s", why);
}

/* ---- 5: the mitigations ---- */

static void policy_or_refuse(PROCESS_MITIGATION_POLICY which, void *policy, size_t size,
                             const char *token)
{
    memset(policy, 0, size);
    if (!GetProcessMitigationPolicy(GetCurrentProcess(), which, policy, size))
        refuse_because(token, "GetProcessMitigationPolicy failed (error %lu)", GetLastError());
}

static void attest_mitigations_or_refuse(void)
{
    PROCESS_MITIGATION_DYNAMIC_CODE_POLICY dynamic_code;
    policy_or_refuse(ProcessDynamicCodePolicy, &dynamic_code, sizeof dynamic_code,
                     "mitigation-dynamic-code");
    if (!dynamic_code.ProhibitDynamicCode || dynamic_code.AllowThreadOptOut ||
        dynamic_code.AllowRemoteDowngrade)
        refuse_because("mitigation-dynamic-code", "dynamic code is not prohibited without opt-out "
                       "(flags 0x%lx)", (unsigned long)dynamic_code.Flags);
    PROCESS_MITIGATION_CHILD_PROCESS_POLICY child;
    policy_or_refuse(ProcessChildProcessPolicy, &child, sizeof child, "mitigation-child-process");
    if (!child.NoChildProcessCreation)
        refuse_because("mitigation-child-process", "child process creation is allowed");
    PROCESS_MITIGATION_SYSTEM_CALL_DISABLE_POLICY win32k;
    policy_or_refuse(ProcessSystemCallDisablePolicy, &win32k, sizeof win32k, "mitigation-win32k");
    if (!win32k.DisallowWin32kSystemCalls)
        refuse_because("mitigation-win32k", "Win32k system calls are allowed");
    PROCESS_MITIGATION_EXTENSION_POINT_DISABLE_POLICY extension;
    policy_or_refuse(ProcessExtensionPointDisablePolicy, &extension, sizeof extension,
                     "mitigation-extension-points");
    if (!extension.DisableExtensionPoints)
        refuse_because("mitigation-extension-points", "extension points are enabled");
    PROCESS_MITIGATION_BINARY_SIGNATURE_POLICY signature;
    policy_or_refuse(ProcessSignaturePolicy, &signature, sizeof signature,
                     "mitigation-microsoft-signed");
    if (!signature.MicrosoftSignedOnly)
        refuse_because("mitigation-microsoft-signed", "images not signed by Microsoft may load");
    PROCESS_MITIGATION_IMAGE_LOAD_POLICY image;
    policy_or_refuse(ProcessImageLoadPolicy, &image, sizeof image, "mitigation-image-load");
    if (!image.NoRemoteImages || !image.NoLowMandatoryLabelImages || !image.PreferSystem32Images)
        refuse_because("mitigation-image-load", "remote or low-label images may load, or System32 "
                       "is not preferred (flags 0x%lx)", (unsigned long)image.Flags);
    PROCESS_MITIGATION_STRICT_HANDLE_CHECK_POLICY strict;
    policy_or_refuse(ProcessStrictHandleCheckPolicy, &strict, sizeof strict,
                     "mitigation-strict-handles");
    if (!strict.RaiseExceptionOnInvalidHandleReference || !strict.HandleExceptionsPermanentlyEnabled)
        refuse_because("mitigation-strict-handles", "strict handle checks are not permanently on");
}

/* ---- 3 and 6: the handle table ---- */

#define SNAPSHOT_BYTES 65536
#define TYPE_BYTES 512
#define MAX_LISTED 128

static NT_PROCESS_HANDLE_SNAPSHOT_INFORMATION *snapshot_or_refuse(const char *token)
{
    static union {
        NT_PROCESS_HANDLE_SNAPSHOT_INFORMATION info;
        /* cppcheck-suppress unusedStructMember ; the bytes give the union its size */
        unsigned char bytes[SNAPSHOT_BYTES];
    } snapshot;
    ULONG got = 0;
    NTSTATUS status = NtQueryInformationProcess(GetCurrentProcess(), NT_PROCESS_HANDLE_INFORMATION,
                                                &snapshot, sizeof snapshot, &got);
    if (!NT_SUCCESS(status))
        refuse_because(token, "NtQueryInformationProcess(ProcessHandleInformation) failed (0x%lx)",
                       (unsigned long)status);
    if (snapshot.info.NumberOfHandles > MAX_LISTED)
        refuse_because("handle-total", "%lu handles open", (unsigned long)snapshot.info.NumberOfHandles);
    return &snapshot.info;
}

/* The object type's name, in UTF-8 for handle_inventory.c, or false. */
static bool type_name(HANDLE handle, char *out, size_t cap)
{
    union {
        PUBLIC_OBJECT_TYPE_INFORMATION info;
        /* cppcheck-suppress unusedStructMember ; the bytes give the union its size */
        unsigned char bytes[TYPE_BYTES];
    } type;
    ULONG got = 0;
    if (!NT_SUCCESS(NtQueryObject(handle, ObjectTypeInformation, &type, sizeof type, &got)))
        return false;
    int n = WideCharToMultiByte(CP_UTF8, 0, type.info.TypeName.Buffer,
                                (int)(type.info.TypeName.Length / sizeof(WCHAR)), out,
                                (int)cap - 1, NULL, NULL);
    if (n <= 0)
        return false;
    out[n] = '\0';
    return true;
}

/* A Directory's object name ("\KnownDlls"). Never asked of a File: querying a
 * synchronous pipe's name can block. */
static bool object_name(HANDLE handle, char *out, size_t cap)
{
    union {
        NT_OBJECT_NAME_INFORMATION info;
        /* cppcheck-suppress unusedStructMember ; the bytes give the union its size */
        unsigned char bytes[1024];
    } name;
    ULONG got = 0;
    if (!NT_SUCCESS(NtQueryObject(handle, NT_OBJECT_NAME_CLASS, &name, sizeof name, &got)))
        return false;
    int n = WideCharToMultiByte(CP_UTF8, 0, name.info.Name.Buffer,
                                (int)(name.info.Name.Length / sizeof(WCHAR)), out, (int)cap - 1,
                                NULL, NULL);
    if (n < 0)
        return false;
    out[n] = '\0';
    return true;
}

static bool is_stdio(HANDLE handle)
{
    return handle == GetStdHandle(STD_INPUT_HANDLE) || handle == GetStdHandle(STD_OUTPUT_HANDLE) ||
           handle == GetStdHandle(STD_ERROR_HANDLE);
}

static void close_alpc_and_file_handles_or_refuse(void)
{
    const NT_PROCESS_HANDLE_SNAPSHOT_INFORMATION *snapshot = snapshot_or_refuse("close-handles");
    HANDLE doomed[MAX_LISTED];
    size_t count = 0;
    for (ULONG_PTR i = 0; i < snapshot->NumberOfHandles; i++) {
        const NT_PROCESS_HANDLE_TABLE_ENTRY_INFO *e = &snapshot->Handles[i];
        char type[128];
        if (!type_name(e->HandleValue, type, sizeof type))
            refuse_because("close-handles", "the type of handle %p cannot be read", e->HandleValue);
        bool alpc = strcmp(type, "ALPC Port") == 0;
        bool stray_file = strcmp(type, "File") == 0 && !is_stdio(e->HandleValue) &&
                          (e->HandleAttributes & OBJ_INHERIT) == 0;
        if (alpc || stray_file)
            doomed[count++] = e->HandleValue;
    }
    for (size_t i = 0; i < count; i++)
        if (!CloseHandle(doomed[i]))
            refuse_because("close-handles", "CloseHandle(%p) failed (error %lu)", doomed[i],
                           GetLastError());
}

static void attest_handle_table_or_refuse(void)
{
    const NT_PROCESS_HANDLE_SNAPSHOT_INFORMATION *snapshot = snapshot_or_refuse("handle-inventory");
    static char types[MAX_LISTED][64];
    static char names[MAX_LISTED][128];
    struct handle_entry entries[MAX_LISTED];
    size_t count = (size_t)snapshot->NumberOfHandles;
    for (size_t i = 0; i < count; i++) {
        const NT_PROCESS_HANDLE_TABLE_ENTRY_INFO *e = &snapshot->Handles[i];
        if (!type_name(e->HandleValue, types[i], sizeof types[i]))
            refuse_because("handle-inventory", "the type of handle %p cannot be read", e->HandleValue);
        names[i][0] = '\0';
        if (strcmp(types[i], "Directory") == 0 && !object_name(e->HandleValue, names[i], sizeof names[i]))
            refuse_because("handle-inventory", "the name of Directory %p cannot be read", e->HandleValue);
        entries[i] = (struct handle_entry){
            .type = types[i],
            .name = names[i],
            .access = (uint32_t)e->GrantedAccess,
            .inheritable = (e->HandleAttributes & OBJ_INHERIT) != 0,
        };
    }
    enum handle_profile fitted;
    char why[256];
    if (!handle_inventory_fits_a_profile(entries, count, &fitted, why, sizeof why)) {
        /* The reason starts with its token ("handle-mask: ..."): refuse with that. */
        char token[32];
        size_t n = strcspn(why, ":");
        snprintf(token, sizeof token, "%.*s", (int)(n < sizeof token ? n : sizeof token - 1), why);
        refuse_because(token, "%s", why);
    }
}

/* The test-only build (make windows-test-build, never a release) skips the sequence and
 * says so: its Welcome reports all five fields false, which a release parent refuses
 * (welcome_rules.c). It exists so that Wine, which implements no AppContainer, job
 * limits or mitigations, can run the engine and protocol on Windows code paths. */
#ifdef BASAL_WINDOWS_UNCONFINED_TEST
static const bool test_unconfined = true;
#else
static const bool test_unconfined = false;
#endif

struct confinement confine(const struct confine_options *options)
{
    struct confinement state = {.os = "windows", .landlock_policy = options->landlock_policy};
    confine_preload();
    if (test_unconfined) {
        stderr_printf("ck-basal-worker: TEST-ONLY build: running UNCONFINED\n");
        if (options->cpu_timer)
            cpu_timer_arm_or_refuse(); /* the budgets are the engine's, not confinement */
        return state;
    }
    revert_thread_token_or_refuse();
    HANDLE token = NULL;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY | TOKEN_ADJUST_DEFAULT, &token))
        refuse_because("untrusted-integrity", "OpenProcessToken failed (error %lu)", GetLastError());
    lower_to_untrusted_or_refuse(token);
    close_alpc_and_file_handles_or_refuse();
    attest_token_or_refuse(token);
    CloseHandle(token); /* before the table is read: it is no row of the allowlist */
    attest_mitigations_or_refuse();
    if (options->cpu_timer)
        cpu_timer_arm_or_refuse();
    attest_handle_table_or_refuse();
    state.windows_no_thread_token = true;
    state.windows_untrusted_integrity = true;
    state.windows_lpac_token = true;
    state.windows_mitigations = true;
    state.windows_handle_inventory = true;
    return state;
}
