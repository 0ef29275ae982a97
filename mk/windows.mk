# Windows (issue 27; sandbox.md "Windows"; docs/platforms.md "Windows"): `make windows`
# cross-builds with Debian's mingw-w64 (scripts/install-deps.sh --test) into
# build/windows/bin:
#   ck-basal-worker.exe  QuickJS (build/quickjs, our patches) and the worker's engine
#                        and protocol sources; the Linux confinement (seccomp, Landlock,
#                        descriptors, startup checks, probes) is replaced by the
#                        *_windows.c parts behind the same headers
#   ck-basal.exe         the parent's Windows launcher and worker-check (below)
# PE32+, GUI subsystem for the worker, -Werror, the hardening mingw supports.
# `make windows-check` runs tests/t_windows.sh under Wine.

WIN        := build/windows
WIN_CC     := x86_64-w64-mingw32-gcc
WIN_AR     := x86_64-w64-mingw32-ar
# __USE_MINGW_ANSI_STDIO: C99 printf (%zu) instead of msvcrt's; _WIN32_WINNT 0x0A00:
# Windows 10 (AppContainer, the mitigation policies, PROC_THREAD_ATTRIBUTE_JOB_LIST);
# mk/windows/include: <sys/uio.h> (writev), which mingw lacks; malloc_usable_size is
# msvcrt's _msize. Format checks: mingw's gcc reads format(printf) as msvcrt's printf,
# which has no %zu, while this build links mingw's C99 printf; the same format strings
# are checked by gcc and clang in the Linux build, so here the check is off.
WIN_WARN   := $(filter-out -Wformat=2 -Wformat-security,$(WARN)) -Wno-format
WIN_CFLAGS := -std=gnu11 -O2 -g -D_GNU_SOURCE -D__USE_MINGW_ANSI_STDIO=1 -D_WIN32_WINNT=0x0A00 \
              -DUNICODE -D_UNICODE -Dmalloc_usable_size=_msize $(WIN_WARN) -fstack-protector-strong \
              -D_FORTIFY_SOURCE=2 -Isrc -isystem $(Q) -Ibuild/gen -isystem mk/windows/include -MMD -MP
WIN_QFLAGS := $(filter-out -fPIE,$(QFLAGS))
WIN_LDFLAGS := -static -Wl,--dynamicbase,--nxcompat,--high-entropy-va -fstack-protector-strong
WIN_QLIB   := $(WIN)/lib/libquickjs.a
WIN_WORKER := $(WIN)/bin/ck-basal-worker.exe
WIN_PARENT := $(WIN)/bin/ck-basal.exe
win_objs    = $(patsubst %.c,$(WIN)/obj/%.o,$(1))

# Linux's confinement and its Linux-only helpers: not in the Windows worker (their
# Windows counterparts are the *_windows.c files platform_src picks).
WIN_LINUX_ONLY := src/worker/descriptors.c src/worker/landlock.c src/worker/probes.c \
                  src/worker/seccomp_policy.c src/worker/startup_checks.c \
                  src/worker/engine_sha256.c src/worker/cpu_timer.c
WIN_WORKER_SRC := $(filter-out $(WIN_LINUX_ONLY),$(call platform_src,$(WORKER_ALL_SRC),windows))
WIN_PROTO_SRC := $(call platform_src,$(PROTO_ALL_SRC),windows)
WIN_WORKER_LIBS := -Wl,--subsystem,windows -lbcrypt -lntdll -ladvapi32 -lssp -lwinpthread
# The parent: its Windows main and launcher, and the portable parts the Linux parent
# compiles too (the Welcome rules, the fatal_status rule, the terminal escaping).
WIN_PARENT_SRC := src/cli/main_windows.c src/cli/term_text.c src/base/terminal_chars.c \
                  src/supervisor/welcome_rules.c src/supervisor/fatal_status.c \
                  src/supervisor/worker_launch_windows.c
WIN_PARENT_LIBS := -luserenv -ladvapi32 -lssp -lwinpthread

$(WIN)/obj/%.o: %.c | $(Q)/.fetched build/gen/version.h build/gen/prelude_js.h
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_CFLAGS) -c $< -o $@

-include $(shell find $(WIN)/obj -name '*.d' 2>/dev/null)

$(WIN_QLIB): $(Q)/.fetched
	@mkdir -p $(WIN)/lib/qobj
	for f in $(QSRC); do $(WIN_CC) $(WIN_QFLAGS) -c $(Q)/$$f -o $(WIN)/lib/qobj/$${f%.c}.o || exit 1; done
	$(WIN_AR) rcs $@ $(addprefix $(WIN)/lib/qobj/,$(QSRC:.c=.o))

$(WIN_WORKER): $(call win_objs,$(WIN_WORKER_SRC) $(WIN_PROTO_SRC)) $(WIN_QLIB)
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_LDFLAGS) $^ -o $@ $(WIN_WORKER_LIBS)

$(WIN_PARENT): $(call win_objs,$(WIN_PARENT_SRC) $(WIN_PROTO_SRC))
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_LDFLAGS) $^ -o $@ $(WIN_PARENT_LIBS)

windows: $(WIN_WORKER) $(WIN_PARENT)

# The test-only pair (never in a release, never in build/windows): the same sources
# with BASAL_WINDOWS_UNCONFINED_TEST, which skips the worker's confinement sequence and
# the launcher's token and mitigations, and lets its parent accept the Welcome that
# says so. It exists so that under Wine the engine, protocol and a script run end to
# end on Windows code paths; a release parent refuses its worker (tests/t_windows.sh).
WINT        := build/windows-test
WINT_WORKER := $(WINT)/bin/ck-basal-worker.exe
WINT_PARENT := $(WINT)/bin/ck-basal.exe
wint_objs    = $(patsubst %.c,$(WINT)/obj/%.o,$(1))

$(WINT)/obj/%.o: %.c | $(Q)/.fetched build/gen/version.h build/gen/prelude_js.h
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_CFLAGS) -DBASAL_WINDOWS_UNCONFINED_TEST -c $< -o $@

-include $(shell find $(WINT)/obj -name '*.d' 2>/dev/null)

$(WINT_WORKER): $(call wint_objs,$(WIN_WORKER_SRC) $(WIN_PROTO_SRC)) $(WIN_QLIB)
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_LDFLAGS) $^ -o $@ $(WIN_WORKER_LIBS)

$(WINT_PARENT): $(call wint_objs,$(WIN_PARENT_SRC) $(WIN_PROTO_SRC))
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_LDFLAGS) $^ -o $@ $(WIN_PARENT_LIBS)

windows-test-build: $(WINT_WORKER) $(WINT_PARENT)

# The Windows sources lint as scripts/lint.sh lints the others (which skips them: they
# need mingw-w64's headers): cppcheck for _WIN32, clang-tidy with .clang-tidy for the
# mingw target, both variants of the files with a test-only switch.
WIN_LINT_SRC := $(wildcard src/*/*_windows.c)
WIN_TIDY_FLAGS := --target=x86_64-w64-mingw32 -isystem /usr/x86_64-w64-mingw32/include -std=gnu11 \
                  -D_GNU_SOURCE -D__USE_MINGW_ANSI_STDIO=1 -D_WIN32_WINNT=0x0A00 -DUNICODE -D_UNICODE \
                  -Isrc -Ibuild/gen -isystem mk/windows/include -isystem $(Q)
windows-lint: | $(Q)/.fetched build/gen/version.h build/gen/prelude_js.h
	cppcheck -q --enable=warning,style,performance,portability --error-exitcode=1 --inline-suppr \
	  --suppress=missingIncludeSystem -D_WIN32 -D__x86_64__ -Isrc -Ibuild/gen $(WIN_LINT_SRC)
	printf '%s\n' $(WIN_LINT_SRC) | sed 'p; s/$$/ -DBASAL_WINDOWS_UNCONFINED_TEST/' | \
	  xargs -P 2 -L1 sh -c 'out=$$(clang-tidy -quiet "$$0" -- $(WIN_TIDY_FLAGS) "$$@" 2>&1); \
	    if printf "%s\n" "$$out" | grep -qE "(warning|error):"; then printf "%s\n" "$$out"; exit 255; fi'

# Runs tests/t_windows.sh (Wine, a private WINEPREFIX) on both pairs.
windows-check: windows windows-test-build
	tests/run.sh t_windows.sh

.PHONY: windows windows-test-build windows-check windows-lint
