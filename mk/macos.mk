# macOS (issue 30; sandbox.md, "macOS"; docs/platforms.md). No macOS machine or SDK is
# reachable here, so `make macos-check` proves what Linux can:
#   - src/worker/worker.sb, the Seatbelt profile, is exactly sandbox.md's
#     (tests/macos/check_profile.py), and the worker embeds exactly its bytes;
#   - every source the macOS worker compiles (its platform_src picks and the shared
#     worker and protocol sources), the launcher and the macOS probes compile,
#     -Werror, for arm64-apple-macos13 against the declarations of
#     tests/macos/macos_decls.h (each naming its Apple or POSIX source), our headers
#     and QuickJS's, with no system header of this machine (-nostdlibinc: only
#     clang's own stdint.h, stdbool.h, stddef.h, stdarg.h, stdatomic.h);
#   - the worker's objects need no symbol that neither they, QuickJS nor
#     macos_decls.h provide (tests/macos/check_symbols.py): it would link.
# Building and running them needs macOS (`make macos`, `make macos-probe`):
# .github/workflows/macos.yml.

# The profile, embedded as bytes (NUL-terminated: sandbox_init takes a C string), as
# the prelude is (Makefile, build/gen/prelude_js.h).
build/gen/worker_sb.h: src/worker/worker.sb
	@mkdir -p build/gen
	@{ echo '/* generated from $< by mk/macos.mk: do not edit */'; \
	   echo 'static const char WORKER_SB_PROFILE[] = {'; \
	   od -An -v -tx1 $< | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	   echo '0x00};'; } > $@.tmp && mv $@.tmp $@

# The macOS worker (`make macos`, on macOS: the CI job): its sources are the worker's
# and the protocol's, with platform_src's macOS picks (confine, cpu_timer,
# parent_watch, stdin_ready, engine_sha256, probes: *_macos.c) and without Linux's
# confinement and its helpers (as mk/windows.mk leaves them out) or Windows's handle
# table. No -static-pie (macOS has no static executables), no libseccomp, no
# libcrypto (SHA-256 is CommonCrypto's, in libSystem); the hardening clang supports
# for arm64 macOS (stack protector, fortify; PIE is macOS's default; -fcf-protection
# and -fstack-clash-protection are x86 or newer-clang flags). <malloc.h> and
# malloc_usable_size are glibc's: mk/macos/include/malloc.h includes
# <malloc/malloc.h>, and malloc_usable_size is malloc_size, as mk/windows.mk makes it
# _msize.
MAC           := build/macos
MAC_CC        := clang
MAC_CFLAGS    := -std=gnu11 -O2 -g -D_GNU_SOURCE -Dmalloc_usable_size=malloc_size $(WARN) \
                 -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fno-strict-aliasing \
                 -Isrc -isystem $(Q) -Ibuild/gen -isystem mk/macos/include -MMD -MP
MAC_LDFLAGS   := -fstack-protector-strong
MAC_QLIB      := $(MAC)/lib/libquickjs.a
MAC_WORKER    := $(MAC)/bin/ck-basal-worker
MAC_LINUX_ONLY := src/worker/descriptors.c src/worker/landlock.c src/worker/probes.c \
                  src/worker/seccomp_policy.c src/worker/startup_checks.c \
                  src/worker/engine_sha256.c src/worker/cpu_timer.c src/worker/handle_inventory.c
MAC_WORKER_SRC := $(filter-out $(MAC_LINUX_ONLY),$(call platform_src,$(WORKER_ALL_SRC),macos))
mac_objs       = $(patsubst %.c,$(MAC)/obj/%.o,$(1))

$(MAC)/obj/%.o: %.c | $(Q)/.fetched build/gen/version.h build/gen/prelude_js.h build/gen/worker_sb.h
	@mkdir -p $(dir $@)
	$(MAC_CC) $(MAC_CFLAGS) -c $< -o $@

-include $(shell find $(MAC)/obj -name '*.d' 2>/dev/null)

$(MAC_QLIB): $(Q)/.fetched
	@mkdir -p $(MAC)/lib/qobj
	for f in $(QSRC); do $(MAC_CC) $(QFLAGS) -c $(Q)/$$f -o $(MAC)/lib/qobj/$${f%.c}.o || exit 1; done
	ar rcs $@ $(addprefix $(MAC)/lib/qobj/,$(QSRC:.c=.o))

$(MAC_WORKER): $(call mac_objs,$(MAC_WORKER_SRC) $(PROTO_SRC)) $(MAC_QLIB)
	@test "$$(uname -s)" = Darwin || { echo "make macos: builds on macOS only (here: make macos-check)"; exit 1; }
	@mkdir -p $(dir $@)
	$(MAC_CC) $(MAC_LDFLAGS) $^ -o $@ -lm

macos: $(MAC_WORKER)
.PHONY: macos

# The compile check (here, on Linux): every source the macOS worker compiles, the
# launcher (supervisor/worker_launch_macos.c) and the parent's Welcome rule, and the
# macOS probes and session, for
# arm64-apple-macos13 against tests/macos/macos_decls.h. The build's own flags, but
# with -nostdlibinc: a call to anything macos_decls.h does not declare (a Linux-only
# function or header) fails, as it would against the SDK.
MACOS_TARGET := arm64-apple-macos13
MACOS_SESSION_SRC := src/supervisor/worker_launch_macos.c src/supervisor/welcome_rules.c
MACOS_SRC    := $(MAC_WORKER_SRC) $(PROTO_SRC) $(MACOS_SESSION_SRC) $(wildcard tests/macos/*.c)
# The sources only macOS builds, linted here (scripts/lint.sh lints the shared ones).
MACOS_LINT_SRC := $(wildcard src/*/*_macos.c) $(wildcard tests/macos/*.c)
MACOS_CFLAGS := -target $(MACOS_TARGET) -std=gnu11 -nostdlibinc -D_GNU_SOURCE \
                -Dmalloc_usable_size=malloc_size -isystem mk/macos/include \
                -isystem tests/macos/include -isystem $(Q) -Isrc -Ibuild/gen $(WARN) \
                -Wno-unused-command-line-argument

MACOS_CHECK  := $(MAC)/check
mac_check_obj = $(MACOS_CHECK)/$(subst /,_,$(1)).o
MACOS_WORKER_CHECK_OBJS := $(foreach f,$(MAC_WORKER_SRC) $(PROTO_SRC),$(call mac_check_obj,$(f)))
macos-check: build/gen/worker_sb.h build/gen/version.h build/gen/prelude_js.h $(QLIB) macos-lint
	@python3 tests/macos/check_profile.py src/worker/worker.sb build/gen/worker_sb.h
	@test -n "$(MACOS_SRC)" || { echo "not ok - macos: sources: none found"; exit 1; }
	@rm -rf $(MACOS_CHECK) && mkdir -p $(MACOS_CHECK)
	@status=0; for f in $(MACOS_SRC); do \
	    o=$(MACOS_CHECK)/$$(printf '%s' "$$f" | tr / _).o; \
	    if out=$$(clang $(MACOS_CFLAGS) -c $$f -o $$o 2>&1) && [ -z "$$out" ]; then \
	        echo "ok - macos: $$f compiles for $(MACOS_TARGET) against tests/macos/macos_decls.h"; \
	    else \
	        echo "not ok - macos: $$f compiles for $(MACOS_TARGET): $$(printf '%s' "$$out" | head -5 | tr '\n' ' ')"; \
	        status=1; \
	    fi; \
	 done; test $$status = 0 || exit 1; \
	 python3 tests/macos/check_symbols.py tests/macos/macos_decls.h $(QLIB) $(MACOS_WORKER_CHECK_OBJS)
.PHONY: macos-check

# The project's static checks, for macOS: scripts/lint.sh leaves the macOS sources out
# (they need macOS's headers), so they are linted here with the same .clang-tidy and
# cppcheck checks, against the same declarations.
macos-lint: build/gen/worker_sb.h build/gen/version.h
	@if out=$$(clang-tidy -quiet $(MACOS_LINT_SRC) -- $(MACOS_CFLAGS) 2>&1) && ! printf '%s' "$$out" | grep -qE '(error|warning):'; then \
	    echo "ok - macos: clang-tidy (.clang-tidy checks) finds nothing in the macOS sources"; \
	 else \
	    echo "not ok - macos: clang-tidy finds: $$(printf '%s' "$$out" | grep -m3 -E '(error|warning):' | tr '\n' ' ')"; exit 1; \
	 fi
	@if out=$$(cppcheck --quiet --enable=warning,style,performance,portability --error-exitcode=1 --inline-suppr \
	        --suppress=missingIncludeSystem -D__APPLE__ -D__aarch64__ -Isrc -Ibuild/gen -Itests/macos/include $(MACOS_LINT_SRC) 2>&1); then \
	    echo "ok - macos: cppcheck finds nothing in the macOS sources"; \
	 else \
	    echo "not ok - macos: cppcheck finds: $$(printf '%s' "$$out" | head -3 | tr '\n' ' ')"; exit 1; \
	 fi
.PHONY: macos-lint

# On macOS only (the CI job): the same sources, -Werror, against the real SDK instead
# of tests/macos/macos_decls.h: a call that fits our declarations but not Apple's
# headers fails here. (responsibility_spawnattrs_setdisclaim is in no SDK header:
# worker_launch_macos.c declares it itself, and macos_decls.h's copy must agree with
# that one or the Linux check fails with conflicting types.)
macos-sdk-check: build/gen/worker_sb.h build/gen/version.h build/gen/prelude_js.h
	@test "$$(uname -s)" = Darwin || { echo "not ok - macos: the SDK check runs on macOS only"; exit 1; }
	@status=0; for f in $(MACOS_SRC); do \
	    if out=$$(clang $(filter-out -MMD -MP,$(MAC_CFLAGS)) -fsyntax-only $$f 2>&1) && [ -z "$$out" ]; then \
	        echo "ok - macos: $$f compiles against the macOS SDK"; \
	    else \
	        echo "not ok - macos: $$f against the macOS SDK: $$(printf '%s' "$$out" | head -5 | tr '\n' ' ')"; status=1; \
	    fi; \
	 done; exit $$status
.PHONY: macos-sdk-check

# On macOS only (the CI job): the worker's own confine() (confine_macos.c, the embedded
# profile, the CPU timer) applied in children of each tests/macos/*_probe.c, each
# forbidden probe beside its unconfined control.
MACOS_PROBES    := seatbelt_probe cpu_timer_probe parent_watch_probe
MACOS_PROBE_SRC := src/worker/confine_macos.c src/worker/cpu_timer_macos.c src/worker/parent_watch_macos.c src/worker/refuse.c $(PROTO_SRC)
macos-probe: build/gen/worker_sb.h build/gen/version.h
	@test "$$(uname -s)" = Darwin || { echo "not ok - macos: the probe runs on macOS only"; exit 1; }
	@mkdir -p build/macos
	for p in $(MACOS_PROBES); do \
	    clang -std=gnu11 -O2 -Isrc -Ibuild/gen $(WARN) tests/macos/$$p.c $(MACOS_PROBE_SRC) \
	        -o build/macos/$$p || exit 1; \
	 done
	@status=0; for p in $(MACOS_PROBES); do build/macos/$$p || status=1; done; exit $$status
.PHONY: macos-probe

# On macOS only (the CI job, after make macos and the signing): the built worker
# launched by the parent's launcher and driven through Hello, two activations and the
# end of its stdin (tests/macos/worker_session.c).
MACOS_SESSION_WORKER ?= $(MAC_WORKER)
macos-session: build/gen/version.h
	@test "$$(uname -s)" = Darwin || { echo "not ok - macos: the session runs on macOS only"; exit 1; }
	@test -x $(MACOS_SESSION_WORKER) || { echo "not ok - macos: $(MACOS_SESSION_WORKER): not built (make macos)"; exit 1; }
	@mkdir -p build/macos
	clang -std=gnu11 -O2 -Isrc -Ibuild/gen $(WARN) tests/macos/worker_session.c $(MACOS_SESSION_SRC) \
	    $(PROTO_SRC) -o build/macos/worker_session
	build/macos/worker_session $(MACOS_SESSION_WORKER)
.PHONY: macos-session

# Here, on Linux (tests/t_macos.sh): the logic of the CPU timer and the parent watch,
# run. The probe programs the CI job runs (tests/macos/cpu_timer_probe.c,
# parent_watch_probe.c), built with cpu_timer_macos.c and parent_watch_macos.c against
# a Linux stand-in for kqueue, kevent and thread_info (tests/macos/stand_in: epoll,
# timerfd, pidfd, the thread's CPU clock) and a confine() of those two steps alone.
# It proves what our code does with the calls, not what Darwin does: each line says
# so, and the CI job runs the same probes on macOS.
MACOS_STAND_IN := tests/macos/stand_in
MACOS_LOGIC    := build/macos-logic
macos-logic: build/gen/version.h
	@mkdir -p $(MACOS_LOGIC)
	@if out=$$(clang-tidy -quiet $(wildcard $(MACOS_STAND_IN)/*.c) -- -std=gnu11 -D_GNU_SOURCE \
	        -I$(MACOS_STAND_IN)/include -Isrc -Ibuild/gen 2>&1) && ! printf '%s' "$$out" | grep -qE '(error|warning):' && \
	    cppcheck --quiet --enable=warning,style,performance,portability --error-exitcode=1 --inline-suppr \
	        --suppress=missingIncludeSystem -D__linux__ -D__x86_64__ -Isrc -I$(MACOS_STAND_IN)/include \
	        $(wildcard $(MACOS_STAND_IN)/*.c) >/dev/null 2>&1; then \
	    echo "ok - macos logic: clang-tidy and cppcheck find nothing in the stand-in"; \
	 else \
	    echo "not ok - macos logic: the stand-in has lint findings: $$(printf '%s' "$$out" | grep -m3 -E '(error|warning):' | tr '\n' ' ')"; exit 1; \
	 fi
	@for p in cpu_timer_probe parent_watch_probe; do \
	    $(CC) -std=gnu11 -O2 -D_GNU_SOURCE $(WARN) -I$(MACOS_STAND_IN)/include -Isrc -Ibuild/gen \
	        tests/macos/$$p.c src/worker/cpu_timer_macos.c src/worker/parent_watch_macos.c \
	        $(wildcard $(MACOS_STAND_IN)/*.c) src/worker/refuse.c $(PROTO_SRC) -lpthread \
	        -o $(MACOS_LOGIC)/$$p || { echo "not ok - macos logic: $$p builds over the stand-in"; exit 1; }; \
	 done
	@status=0; for p in cpu_timer_probe parent_watch_probe; do \
	    out=$$($(MACOS_LOGIC)/$$p 2>&1) || status=1; \
	    printf '%s\n' "$$out" | sed -E 's/^(not ok|ok) - /\1 - macos logic over the Linux stand-in: /'; \
	 done; exit $$status
.PHONY: macos-logic
