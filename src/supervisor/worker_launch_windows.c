/* The Windows launcher (sandbox.md "Windows", "Layers and guarantees"), line by line:
 *   - the worker is created suspended (GUI subsystem: mk/windows.mk links it so)
 *   - with an LPAC primary token for the profile cortexkit.basal.worker: a restricted
 *     copy of the parent's token (every group deny-only, no privileges, the NULL SID
 *     as its only restricting SID, Low integrity at birth so the loader can start)
 *     made an AppContainer token by SECURITY_CAPABILITIES with zero capabilities and
 *     the ALL APPLICATION PACKAGES opt-out (LPAC)
 *   - the process mitigations of the page, fixed at creation, and no child processes
 *   - a matching Low impersonation token on the initial thread (startup only: the
 *     worker reverts it before its first read, worker/confine_windows.c)
 *   - the environment cleared but SystemRoot; an explicit handle list of the three
 *     stdio pipes, nothing else inherited
 *   - an owned job, joined at creation: kill-on-close, no breakaway, one active
 *     process, all UI restrictions, the profile's commit limit
 *   - before resume, the actual suspended primary and thread tokens, the job's limits
 *     and the child's membership in it are read back and checked
 * Any failure terminates the suspended process (it never ran an instruction of ours)
 * and fails the launch with a named reason (worker_launch_windows.h). */
#include "supervisor/worker_launch.h"

#include "supervisor/worker_launch_windows.h"
#include "proto/lpac_token.h"

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <userenv.h>
#include <windows.h>

/* The test-only build (make windows-test-build, its own output directory, never a
 * release) starts the worker with the same pipes, environment, handle list and job but
 * no AppContainer token, mitigations or thread token, so that Wine, which implements
 * none of them, can run the engine and protocol on Windows code paths. Its worker says
 * so in its Welcome, and a release parent refuses it. */
#ifdef BASAL_WINDOWS_UNCONFINED_TEST
static const bool confined = false;
#else
static const bool confined = true;
#endif

enum worker_os worker_launch_host_os(void)
{
    return WORKER_OS_WINDOWS;
}

/* ---- the named reason of a failed launch ---- */

static _Thread_local char failure[320];

const char *worker_launch_failure(void)
{
    return failure;
}

__attribute__((format(printf, 2, 3))) static bool fail_because(const char *token,
                                                              const char *fmt, ...)
{
    char detail[256];
    va_list args;
    va_start(args, fmt);
    (void)vsnprintf(detail, sizeof detail, fmt, args);
    va_end(args);
    snprintf(failure, sizeof failure, "%s: %s", token, detail);
    return false;
}

/* ---- the workers this launcher owns ---- */

#define OWNED_MAX 64

struct owned {
    pid_t pid; /* 0: free slot */
    HANDLE process;
    HANDLE job;
};

static struct owned owned[OWNED_MAX];
static SRWLOCK owned_lock = SRWLOCK_INIT;

static bool owned_add(pid_t pid, HANDLE process, HANDLE job)
{
    bool stored = false;
    AcquireSRWLockExclusive(&owned_lock);
    for (size_t i = 0; i < OWNED_MAX && !stored; i++) {
        if (owned[i].pid == 0) {
            owned[i] = (struct owned){pid, process, job};
            stored = true;
        }
    }
    ReleaseSRWLockExclusive(&owned_lock);
    return stored;
}

/* Copies pid's handles out (take: and frees its slot). */
static bool owned_find(pid_t pid, bool take, struct owned *out)
{
    bool found = false;
    AcquireSRWLockExclusive(&owned_lock);
    for (size_t i = 0; i < OWNED_MAX && !found; i++) {
        if (owned[i].pid == pid && pid != 0) {
            *out = owned[i];
            if (take)
                owned[i] = (struct owned){0, NULL, NULL};
            found = true;
        }
    }
    ReleaseSRWLockExclusive(&owned_lock);
    return found;
}

int worker_launch_terminate(pid_t pid)
{
    struct owned o;
    if (!owned_find(pid, false, &o))
        return -1;
    (void)TerminateJobObject(o.job, 1);
    return 0;
}

long worker_launch_end(pid_t pid, int timeout_ms, bool *killed)
{
    *killed = false;
    struct owned o;
    if (!owned_find(pid, true, &o))
        return -1;
    if (WaitForSingleObject(o.process, timeout_ms < 0 ? 0 : (DWORD)timeout_ms) != WAIT_OBJECT_0) {
        (void)TerminateJobObject(o.job, 1);
        *killed = true;
        (void)WaitForSingleObject(o.process, INFINITE);
    }
    DWORD code = 0;
    long status = GetExitCodeProcess(o.process, &code) ? (long)code : -1;
    CloseHandle(o.job); /* kill-on-close: nothing of the job outlives this */
    CloseHandle(o.process);
    return status;
}

/* ---- the pieces of one launch ---- */

struct launch {
    HANDLE child_in, child_out, child_err;    /* the worker's ends, inheritable */
    HANDLE parent_in, parent_out, parent_err; /* ours: never inherited */
    PSID container;                           /* the profile's AppContainer SID */
    HANDLE token;                             /* the restricted Low primary */
    HANDLE job;
    LPPROC_THREAD_ATTRIBUTE_LIST attributes; /* points into the three below */
    DWORD64 mitigations[2];
    DWORD child_policy;
    DWORD lpac_policy;
    wchar_t *command_line;
    wchar_t environment[MAX_PATH + 16];
    PROCESS_INFORMATION child;
};

static void close_handle(HANDLE *h)
{
    if (*h != NULL && *h != INVALID_HANDLE_VALUE)
        CloseHandle(*h);
    *h = NULL;
}

static void launch_free(struct launch *l)
{
    close_handle(&l->child_in);
    close_handle(&l->child_out);
    close_handle(&l->child_err);
    close_handle(&l->parent_in);
    close_handle(&l->parent_out);
    close_handle(&l->parent_err);
    close_handle(&l->token);
    close_handle(&l->job);
    close_handle(&l->child.hThread);
    close_handle(&l->child.hProcess);
    if (l->container != NULL)
        FreeSid(l->container);
    if (l->attributes != NULL) {
        DeleteProcThreadAttributeList(l->attributes);
        free(l->attributes);
    }
    free(l->command_line);
}

/* One pipe: the worker's end inheritable (the handle list requires it), ours not. */
static bool make_pipe(HANDLE *read_end, HANDLE *write_end, bool child_reads)
{
    SECURITY_ATTRIBUTES inherit = {sizeof inherit, NULL, TRUE};
    if (!CreatePipe(read_end, write_end, &inherit, 0))
        return false;
    return SetHandleInformation(child_reads ? *write_end : *read_end, HANDLE_FLAG_INHERIT, 0) != 0;
}

static bool make_pipes(struct launch *l)
{
    if (!make_pipe(&l->child_in, &l->parent_in, true) ||
        !make_pipe(&l->parent_out, &l->child_out, false) ||
        !make_pipe(&l->parent_err, &l->child_err, false))
        return fail_because("pipes", "CreatePipe failed (error %lu)", GetLastError());
    return true;
}

/* The command line CommandLineToArgvW splits back into argv: each argument quoted,
 * backslashes doubled before a quote. An argument with a quote is refused (ours
 * never have one). */
static bool make_command_line(struct launch *l, char *const argv[])
{
    size_t cap = 2;
    for (size_t i = 0; argv[i] != NULL; i++) {
        if (strchr(argv[i], '"') != NULL)
            return fail_because("command-line", "argument %zu contains a quote", i);
        cap += 2 * strlen(argv[i]) + 4;
    }
    char *line = malloc(cap);
    if (line == NULL)
        return fail_because("command-line", "out of memory");
    size_t used = 0;
    for (size_t i = 0; argv[i] != NULL; i++) {
        line[used++] = '"';
        const char *a = argv[i];
        size_t n = strlen(a);
        memcpy(line + used, a, n);
        used += n;
        for (size_t k = n; k > 0 && a[k - 1] == '\\'; k--)
            line[used++] = '\\'; /* a trailing backslash must not escape the quote */
        line[used++] = '"';
        line[used++] = ' ';
    }
    line[used > 0 ? used - 1 : 0] = '\0';
    int wide = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, line, -1, NULL, 0);
    l->command_line = wide > 0 ? malloc((size_t)wide * sizeof(wchar_t)) : NULL;
    bool ok = l->command_line != NULL &&
              MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, line, -1, l->command_line, wide) == wide;
    free(line);
    return ok ? true : fail_because("command-line", "not UTF-8, or out of memory");
}

/* "SystemRoot=<value>\0\0": the whole environment (sandbox.md: cleared except it). */
static bool make_environment(struct launch *l)
{
    static const wchar_t name[] = L"SystemRoot=";
    size_t prefix = sizeof name / sizeof name[0] - 1;
    memcpy(l->environment, name, prefix * sizeof(wchar_t));
    size_t room = sizeof l->environment / sizeof l->environment[0] - prefix - 1;
    DWORD n = GetEnvironmentVariableW(L"SystemRoot", l->environment + prefix, (DWORD)room);
    if (n == 0 || n >= room)
        return fail_because("environment", "SystemRoot is unset or too long");
    l->environment[prefix + n] = L'\0';
    l->environment[prefix + n + 1] = L'\0';
    return true;
}

/* HRESULT_FROM_WIN32(ERROR_ALREADY_EXISTS), spelled out: mingw's inline function of
 * that name trips clang-tidy's cert-dcl16-c inside the system header. */
#define HRESULT_ALREADY_EXISTS ((HRESULT)(0x80070000UL | ERROR_ALREADY_EXISTS))

/* The profile's SID: created once per machine and user, reused by every worker. */
static bool appcontainer_sid(struct launch *l)
{
    PSID sid = NULL;
    HRESULT hr = CreateAppContainerProfile(LPAC_PROFILE_NAME, LPAC_PROFILE_NAME,
                                           L"basal worker (sandbox.md, Windows)", NULL, 0, &sid);
    if (hr == HRESULT_ALREADY_EXISTS)
        hr = DeriveAppContainerSidFromAppContainerName(LPAC_PROFILE_NAME, &sid);
    if (FAILED(hr) || sid == NULL)
        return fail_because("appcontainer-profile", "cannot create or derive the SID of %ls (0x%lx)",
                            LPAC_PROFILE_NAME, (unsigned long)hr);
    l->container = sid; /* the profile API's SID is freed with FreeSid */
    return true;
}

static bool set_low_integrity(HANDLE token)
{
    SID_IDENTIFIER_AUTHORITY mandatory = SECURITY_MANDATORY_LABEL_AUTHORITY;
    PSID low = NULL;
    if (!AllocateAndInitializeSid(&mandatory, 1, SECURITY_MANDATORY_LOW_RID, 0, 0, 0, 0, 0, 0, 0,
                                  &low))
        return false;
    TOKEN_MANDATORY_LABEL label = {.Label = {.Sid = low, .Attributes = SE_GROUP_INTEGRITY}};
    BOOL set = SetTokenInformation(token, TokenIntegrityLevel, &label,
                                   (DWORD)(sizeof label + GetLengthSid(low)));
    FreeSid(low);
    return set != 0;
}

/* The restricted primary: the parent's user and every group deny-only, every
 * privilege deleted, the NULL SID the only restricting SID, Low integrity. */
static bool restricted_token(struct launch *l)
{
    HANDLE parent = NULL;
    if (!OpenProcessToken(GetCurrentProcess(),
                          TOKEN_DUPLICATE | TOKEN_QUERY | TOKEN_ASSIGN_PRIMARY | TOKEN_ADJUST_DEFAULT,
                          &parent))
        return fail_because("restricted-token", "OpenProcessToken failed (error %lu)", GetLastError());
    _Alignas(8) unsigned char groups_buf[16384];
    _Alignas(8) unsigned char user_buf[512];
    _Alignas(8) unsigned char privileges_buf[4096];
    DWORD got = 0;
    bool read = GetTokenInformation(parent, TokenGroups, groups_buf, sizeof groups_buf, &got) &&
                GetTokenInformation(parent, TokenUser, user_buf, sizeof user_buf, &got) &&
                GetTokenInformation(parent, TokenPrivileges, privileges_buf, sizeof privileges_buf, &got);
    if (!read) {
        CloseHandle(parent);
        return fail_because("restricted-token", "cannot read the parent's token (error %lu)",
                            GetLastError());
    }
    const TOKEN_GROUPS *groups = (const void *)groups_buf;
    const TOKEN_USER *user = (const void *)user_buf;
    const TOKEN_PRIVILEGES *privileges = (const void *)privileges_buf;
    SID_AND_ATTRIBUTES deny[256];
    DWORD deny_count = 0;
    deny[deny_count++] = (SID_AND_ATTRIBUTES){user->User.Sid, 0};
    for (DWORD i = 0; i < groups->GroupCount && deny_count < 256; i++)
        if ((groups->Groups[i].Attributes & SE_GROUP_INTEGRITY) == 0)
            deny[deny_count++] = (SID_AND_ATTRIBUTES){groups->Groups[i].Sid, 0};
    if (deny_count == 256) {
        CloseHandle(parent);
        return fail_because("restricted-token", "the parent's token has too many groups");
    }
    LUID_AND_ATTRIBUTES drop[64];
    DWORD drop_count = privileges->PrivilegeCount < 64 ? privileges->PrivilegeCount : 64;
    for (DWORD i = 0; i < drop_count; i++)
        drop[i] = (LUID_AND_ATTRIBUTES){privileges->Privileges[i].Luid, 0};
    SID_IDENTIFIER_AUTHORITY null_authority = SECURITY_NULL_SID_AUTHORITY;
    PSID null_sid = NULL;
    if (!AllocateAndInitializeSid(&null_authority, 1, SECURITY_NULL_RID, 0, 0, 0, 0, 0, 0, 0,
                                  &null_sid)) {
        CloseHandle(parent);
        return fail_because("restricted-token", "cannot build the NULL SID");
    }
    SID_AND_ATTRIBUTES restricting = {null_sid, 0};
    BOOL made = CreateRestrictedToken(parent, 0, deny_count, deny, drop_count, drop, 1, &restricting,
                                      &l->token);
    DWORD error = GetLastError();
    FreeSid(null_sid);
    CloseHandle(parent);
    if (!made || privileges->PrivilegeCount > 64)
        return fail_because("restricted-token", "CreateRestrictedToken failed (error %lu)", error);
    if (!set_low_integrity(l->token))
        return fail_because("restricted-token", "cannot set the token's integrity to Low (error %lu)",
                            GetLastError());
    return true;
}

#define JOB_FLAGS                                                                            \
    (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_ACTIVE_PROCESS |                  \
     JOB_OBJECT_LIMIT_PROCESS_MEMORY | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION)

static bool make_job(struct launch *l, unsigned long long commit_limit)
{
    l->job = CreateJobObjectW(NULL, NULL);
    if (l->job == NULL)
        return fail_because("job", "CreateJobObject failed (error %lu)", GetLastError());
    /* No JOB_OBJECT_LIMIT_BREAKAWAY_OK or SILENT_BREAKAWAY_OK: nothing leaves the job. */
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits;
    memset(&limits, 0, sizeof limits);
    limits.BasicLimitInformation.LimitFlags = JOB_FLAGS;
    limits.BasicLimitInformation.ActiveProcessLimit = 1;
    limits.ProcessMemoryLimit = (SIZE_T)commit_limit;
    JOBOBJECT_BASIC_UI_RESTRICTIONS ui = {JOB_OBJECT_UILIMIT_ALL};
    if (!SetInformationJobObject(l->job, JobObjectExtendedLimitInformation, &limits, sizeof limits) ||
        !SetInformationJobObject(l->job, JobObjectBasicUIRestrictions, &ui, sizeof ui))
        return fail_because("job", "SetInformationJobObject failed (error %lu)", GetLastError());
    return true;
}

/* The mitigations sandbox.md names, all fixed at creation and never opted out of:
 * dynamic code prohibited (not ALLOW_OPT_OUT: no thread opt-out, no remote downgrade),
 * Win32k system calls, extension points, Microsoft-signed images only, no remote or
 * low-label images, System32 preferred, strict handle checks. */
#define MITIGATIONS                                                                          \
    (PROCESS_CREATION_MITIGATION_POLICY_PROHIBIT_DYNAMIC_CODE_ALWAYS_ON |                    \
     PROCESS_CREATION_MITIGATION_POLICY_WIN32K_SYSTEM_CALL_DISABLE_ALWAYS_ON |               \
     PROCESS_CREATION_MITIGATION_POLICY_EXTENSION_POINT_DISABLE_ALWAYS_ON |                  \
     PROCESS_CREATION_MITIGATION_POLICY_BLOCK_NON_MICROSOFT_BINARIES_ALWAYS_ON |             \
     PROCESS_CREATION_MITIGATION_POLICY_IMAGE_LOAD_NO_REMOTE_ALWAYS_ON |                     \
     PROCESS_CREATION_MITIGATION_POLICY_IMAGE_LOAD_NO_LOW_LABEL_ALWAYS_ON |                  \
     PROCESS_CREATION_MITIGATION_POLICY_IMAGE_LOAD_PREFER_SYSTEM32_ALWAYS_ON |               \
     PROCESS_CREATION_MITIGATION_POLICY_STRICT_HANDLE_CHECKS_ALWAYS_ON)

static bool make_attributes(struct launch *l, SECURITY_CAPABILITIES *capabilities,
                            HANDLE *inherit, HANDLE *jobs)
{
    DWORD count = confined ? 6 : 2;
    SIZE_T size = 0;
    (void)InitializeProcThreadAttributeList(NULL, count, 0, &size);
    l->attributes = malloc(size);
    if (l->attributes == NULL || !InitializeProcThreadAttributeList(l->attributes, count, 0, &size)) {
        free(l->attributes);
        l->attributes = NULL;
        return fail_because("attributes", "InitializeProcThreadAttributeList failed");
    }
    /* The list keeps pointers: the values live in *l until CreateProcess. */
    l->mitigations[0] = MITIGATIONS;
    l->mitigations[1] = 0;
    l->child_policy = PROCESS_CREATION_CHILD_PROCESS_RESTRICTED;
    l->lpac_policy = PROCESS_CREATION_ALL_APPLICATION_PACKAGES_OPT_OUT;
    bool ok =
        UpdateProcThreadAttribute(l->attributes, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherit,
                                  3 * sizeof(HANDLE), NULL, NULL) &&
        UpdateProcThreadAttribute(l->attributes, 0, PROC_THREAD_ATTRIBUTE_JOB_LIST, jobs,
                                  sizeof(HANDLE), NULL, NULL);
    ok = ok && (!confined ||
                (UpdateProcThreadAttribute(l->attributes, 0, PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES,
                                           capabilities, sizeof *capabilities, NULL, NULL) &&
                 UpdateProcThreadAttribute(l->attributes, 0,
                                           PROC_THREAD_ATTRIBUTE_ALL_APPLICATION_PACKAGES_POLICY,
                                           &l->lpac_policy, sizeof l->lpac_policy, NULL, NULL) &&
                 UpdateProcThreadAttribute(l->attributes, 0, PROC_THREAD_ATTRIBUTE_MITIGATION_POLICY,
                                           l->mitigations, sizeof l->mitigations, NULL, NULL) &&
                 UpdateProcThreadAttribute(l->attributes, 0, PROC_THREAD_ATTRIBUTE_CHILD_PROCESS_POLICY,
                                           &l->child_policy, sizeof l->child_policy, NULL, NULL)));
    return ok ? true
              : fail_because("attributes", "UpdateProcThreadAttribute failed (error %lu)",
                             GetLastError());
}

/* The matching Low impersonation token on the initial thread: a copy of the child's
 * own primary, used only until the worker's RevertToSelf. */
static bool set_thread_token(struct launch *l)
{
    HANDLE primary = NULL, impersonation = NULL;
    if (!OpenProcessToken(l->child.hProcess, TOKEN_DUPLICATE | TOKEN_QUERY, &primary))
        return fail_because("thread-token", "cannot open the child's primary (error %lu)",
                            GetLastError());
    BOOL made = DuplicateTokenEx(primary, TOKEN_IMPERSONATE | TOKEN_QUERY, NULL,
                                 SecurityImpersonation, TokenImpersonation, &impersonation);
    CloseHandle(primary);
    if (!made)
        return fail_because("thread-token", "DuplicateTokenEx failed (error %lu)", GetLastError());
    BOOL set = SetThreadToken(&l->child.hThread, impersonation);
    CloseHandle(impersonation);
    return set ? true
               : fail_because("thread-token", "SetThreadToken failed (error %lu)", GetLastError());
}

/* One actual token of the suspended child against the page. */
static bool check_token(HANDLE token, PSID container, const char *token_name)
{
    char why[256];
    if (!lpac_token_shape_ok(token, why, sizeof why))
        return fail_because(token_name, "%s", why);
    DWORD rid = lpac_token_integrity(token);
    if (rid != SECURITY_MANDATORY_LOW_RID)
        return fail_because(token_name, "integrity 0x%lx, expected Low", (unsigned long)rid);
    _Alignas(8) unsigned char buf[512];
    DWORD got = 0;
    if (!GetTokenInformation(token, TokenAppContainerSid, buf, sizeof buf, &got) ||
        ((const TOKEN_APPCONTAINER_INFORMATION *)(const void *)buf)->TokenAppContainer == NULL ||
        !EqualSid(((const TOKEN_APPCONTAINER_INFORMATION *)(const void *)buf)->TokenAppContainer,
                  container))
        return fail_because(token_name, "not the AppContainer of %ls", LPAC_PROFILE_NAME);
    return true;
}

/* The job's limits as Windows reports them back. Checked once as soon as the job is
 * made (before the AppContainer profile and the token: under Wine, which stores none
 * of these limits, the launch fails here with its name, docs/platforms.md) and again
 * before resume. */
static bool check_job_limits(const struct launch *l, unsigned long long commit_limit)
{
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits;
    JOBOBJECT_BASIC_UI_RESTRICTIONS ui;
    if (!QueryInformationJobObject(l->job, JobObjectExtendedLimitInformation, &limits, sizeof limits,
                                   NULL) ||
        !QueryInformationJobObject(l->job, JobObjectBasicUIRestrictions, &ui, sizeof ui, NULL))
        return fail_because("check-job", "cannot read the job's limits (error %lu)", GetLastError());
    if (limits.BasicLimitInformation.LimitFlags != JOB_FLAGS ||
        limits.BasicLimitInformation.ActiveProcessLimit != 1 ||
        limits.ProcessMemoryLimit != (SIZE_T)commit_limit || ui.UIRestrictionsClass != JOB_OBJECT_UILIMIT_ALL)
        return fail_because("check-job", "limits 0x%lx, %lu processes, commit %llu, UI 0x%lx",
                            (unsigned long)limits.BasicLimitInformation.LimitFlags,
                            (unsigned long)limits.BasicLimitInformation.ActiveProcessLimit,
                            (unsigned long long)limits.ProcessMemoryLimit,
                            (unsigned long)ui.UIRestrictionsClass);
    return true;
}

static bool check_job_membership(const struct launch *l)
{
    BOOL member = FALSE;
    if (!IsProcessInJob(l->child.hProcess, l->job, &member) || !member)
        return fail_because("check-job-membership", "the suspended worker is not in its job");
    return true;
}

/* The two actual tokens, the job's limits and the child's membership in it. The
 * test-only unconfined build has no tokens to check and, run under Wine, no limits
 * Wine reports: it checks the membership alone. */
static bool check_before_resume(struct launch *l, unsigned long long commit_limit)
{
    HANDLE token = NULL;
    if (!confined)
        return check_job_membership(l);
    if (!OpenProcessToken(l->child.hProcess, TOKEN_QUERY, &token))
        return fail_because("check-primary-token", "cannot open it (error %lu)", GetLastError());
    bool ok = check_token(token, l->container, "check-primary-token");
    CloseHandle(token);
    if (!ok)
        return false;
    if (!OpenThreadToken(l->child.hThread, TOKEN_QUERY, TRUE, &token))
        return fail_because("check-thread-token", "the initial thread has no token (error %lu)",
                            GetLastError());
    TOKEN_TYPE type = TokenPrimary;
    DWORD got = 0;
    ok = GetTokenInformation(token, TokenType, &type, sizeof type, &got) && type == TokenImpersonation;
    ok = ok ? check_token(token, l->container, "check-thread-token")
            : fail_because("check-thread-token", "not an impersonation token");
    CloseHandle(token);
    if (!ok)
        return false;
    return check_job_limits(l, commit_limit) && check_job_membership(l);
}

static bool to_fd(HANDLE *h, int flags, int *fd)
{
    *fd = _open_osfhandle((intptr_t)*h, flags | _O_BINARY);
    if (*fd < 0)
        return false;
    *h = NULL; /* the fd owns it now */
    return true;
}

static bool launch(struct launch *l, const char *path, char *const argv[],
                   const struct worker_limits *limits)
{
    unsigned long long commit = limits->address_space_bytes;
    if (!make_command_line(l, argv) || !make_environment(l) || !make_pipes(l) ||
        !make_job(l, commit) ||
        (confined && (!check_job_limits(l, commit) || !appcontainer_sid(l) || !restricted_token(l))))
        return false;
    SECURITY_CAPABILITIES capabilities = {.AppContainerSid = l->container, .Capabilities = NULL,
                                          .CapabilityCount = 0};
    HANDLE inherit[3] = {l->child_in, l->child_out, l->child_err};
    HANDLE jobs[1] = {l->job};
    if (!make_attributes(l, &capabilities, inherit, jobs))
        return false;
    int wide = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, NULL, 0);
    if (wide <= 0 || wide > 32768)
        return fail_because("create-process", "the worker's path is not UTF-8");
    wchar_t *wpath = malloc((size_t)wide * sizeof(wchar_t));
    if (wpath == NULL || MultiByteToWideChar(CP_UTF8, 0, path, -1, wpath, wide) != wide) {
        free(wpath);
        return fail_because("create-process", "out of memory");
    }
    STARTUPINFOEXW start;
    memset(&start, 0, sizeof start);
    start.StartupInfo.cb = sizeof start;
    start.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    start.StartupInfo.hStdInput = l->child_in;
    start.StartupInfo.hStdOutput = l->child_out;
    start.StartupInfo.hStdError = l->child_err;
    start.lpAttributeList = l->attributes;
    DWORD flags = CREATE_SUSPENDED | EXTENDED_STARTUPINFO_PRESENT | CREATE_UNICODE_ENVIRONMENT |
                  CREATE_NO_WINDOW;
    BOOL made = confined ? CreateProcessAsUserW(l->token, wpath, l->command_line, NULL, NULL, TRUE,
                                                flags, l->environment, NULL, &start.StartupInfo,
                                                &l->child)
                         : CreateProcessW(wpath, l->command_line, NULL, NULL, TRUE, flags,
                                          l->environment, NULL, &start.StartupInfo, &l->child);
    DWORD error = GetLastError();
    free(wpath);
    if (!made) {
        memset(&l->child, 0, sizeof l->child);
        return fail_because("create-process", "CreateProcess failed (error %lu)", error);
    }
    if ((confined && !set_thread_token(l)) || !check_before_resume(l, commit))
        return false;
    if (ResumeThread(l->child.hThread) == (DWORD)-1)
        return fail_because("resume", "ResumeThread failed (error %lu)", GetLastError());
    return true;
}

int worker_launch(const char *path, char *const argv[], const struct worker_limits *limits,
                  struct worker_proc *out)
{
    failure[0] = '\0';
    struct launch l;
    memset(&l, 0, sizeof l);
    int in_fd = -1, out_fd = -1, err_fd = -1;
    bool ok = launch(&l, path, argv, limits);
    if (ok) {
        /* The worker's ends are its own now; ours become fds for the codec. */
        close_handle(&l.child_in);
        close_handle(&l.child_out);
        close_handle(&l.child_err);
        ok = (to_fd(&l.parent_in, 0, &in_fd) && to_fd(&l.parent_out, _O_RDONLY, &out_fd) &&
              to_fd(&l.parent_err, _O_RDONLY, &err_fd))
                 ? true
                 : fail_because("fds", "_open_osfhandle failed");
    }
    pid_t pid = ok ? (pid_t)l.child.dwProcessId : 0;
    if (ok && !owned_add(pid, l.child.hProcess, l.job))
        ok = fail_because("owned", "more than %d workers at once", OWNED_MAX);
    if (!ok) {
        /* Never resumed, or already running: either way it ends here, with its job. */
        if (l.child.hProcess != NULL)
            (void)TerminateProcess(l.child.hProcess, 1);
        if (in_fd >= 0)
            _close(in_fd);
        if (out_fd >= 0)
            _close(out_fd);
        if (err_fd >= 0)
            _close(err_fd);
        launch_free(&l);
        errno = EPERM;
        return -1;
    }
    l.child.hProcess = NULL; /* owned[] keeps the process and the job */
    l.job = NULL;
    launch_free(&l);
    out->pid = pid;
    out->to_worker = in_fd;
    out->from_worker = out_fd;
    out->worker_log = err_fd;
    return 0;
}
