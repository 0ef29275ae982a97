# macOS (issue 30; sandbox.md, "macOS"; docs/platforms.md). No macOS machine or SDK is
# reachable here, so `make macos-check` proves what Linux can:
#   - src/worker/worker.sb, the Seatbelt profile, is exactly sandbox.md's
#     (tests/macos/check_profile.py), and the worker embeds exactly its bytes;
#   - every macOS source compiles, -Werror, for arm64-apple-macos13 against the
#     declarations of tests/macos/macos_decls.h (each naming its Apple or POSIX
#     source) and our portable headers, with no system header of this machine
#     (-nostdlibinc: only clang's own stdint.h, stdbool.h, stddef.h, stdarg.h).
# Building and running them needs macOS: .github/workflows/macos.yml.

# The profile, embedded as bytes (NUL-terminated: sandbox_init takes a C string), as
# the prelude is (Makefile, build/gen/prelude_js.h).
build/gen/worker_sb.h: src/worker/worker.sb
	@mkdir -p build/gen
	@{ echo '/* generated from $< by mk/macos.mk: do not edit */'; \
	   echo 'static const char WORKER_SB_PROFILE[] = {'; \
	   od -An -v -tx1 $< | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	   echo '0x00};'; } > $@.tmp && mv $@.tmp $@

MACOS_TARGET := arm64-apple-macos13
MACOS_SRC    := $(wildcard src/*/*_macos.c) $(wildcard tests/macos/*.c)
MACOS_CFLAGS := -target $(MACOS_TARGET) -std=gnu11 -nostdlibinc -isystem tests/macos/include \
                -Isrc -Ibuild/gen $(WARN) -Wno-unused-command-line-argument

macos-check: build/gen/worker_sb.h build/gen/version.h macos-lint
	@python3 tests/macos/check_profile.py src/worker/worker.sb build/gen/worker_sb.h
	@test -n "$(MACOS_SRC)" || { echo "not ok - macos: sources: none found"; exit 1; }
	@status=0; for f in $(MACOS_SRC); do \
	    if out=$$(clang $(MACOS_CFLAGS) -fsyntax-only $$f 2>&1) && [ -z "$$out" ]; then \
	        echo "ok - macos: $$f compiles for $(MACOS_TARGET) against tests/macos/macos_decls.h"; \
	    else \
	        echo "not ok - macos: $$f compiles for $(MACOS_TARGET): $$(printf '%s' "$$out" | head -5 | tr '\n' ' ')"; \
	        status=1; \
	    fi; \
	 done; exit $$status
.PHONY: macos-check

# The project's static checks, for macOS: scripts/lint.sh leaves the macOS sources out
# (they need macOS's headers), so they are linted here with the same .clang-tidy and
# cppcheck checks, against the same declarations.
macos-lint: build/gen/worker_sb.h build/gen/version.h
	@if out=$$(clang-tidy -quiet $(MACOS_SRC) -- $(MACOS_CFLAGS) 2>&1) && ! printf '%s' "$$out" | grep -qE '(error|warning):'; then \
	    echo "ok - macos: clang-tidy (.clang-tidy checks) finds nothing in the macOS sources"; \
	 else \
	    echo "not ok - macos: clang-tidy finds: $$(printf '%s' "$$out" | grep -m3 -E '(error|warning):' | tr '\n' ' ')"; exit 1; \
	 fi
	@if out=$$(cppcheck --quiet --enable=warning,style,performance,portability --error-exitcode=1 --inline-suppr \
	        --suppress=missingIncludeSystem -D__APPLE__ -D__aarch64__ -Isrc -Ibuild/gen -Itests/macos/include $(MACOS_SRC) 2>&1); then \
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
macos-sdk-check: build/gen/worker_sb.h build/gen/version.h
	@test "$$(uname -s)" = Darwin || { echo "not ok - macos: the SDK check runs on macOS only"; exit 1; }
	@status=0; for f in $(MACOS_SRC); do \
	    if out=$$(clang -std=gnu11 -Isrc -Ibuild/gen $(WARN) -fsyntax-only $$f 2>&1) && [ -z "$$out" ]; then \
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
