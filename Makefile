# hermes-supervisor — `make run` and `make test` are the two set-up commands;
# `make quick` is the fast loop while you work (docs/developing.md).
GO      ?= go
BIN     := bin/hermes-supervisor
DEMO    := $(CURDIR)/.demo
OSES    := linux darwin windows
# A count, not a time, for `make test`: a short time limit can expire while
# the fuzzer minimizes an input and fail with "context deadline exceeded".
FUZZTIME ?= 30000x
FUZZLONG ?= 2m
# Every parser of what we read (pid, lock, state, marker and config files,
# /proc stat, control requests); `make test` fuzzes each briefly, `make fuzz`
# longer and keeps what it found under each package's testdata/fuzz.
FUZZ_TARGETS := lockstore:FuzzParseRecord lockstore:FuzzParseState lockstore:FuzzParseMarker lockstore:FuzzIsTokenLock lockstore:FuzzRecordJSON \
  procstate:FuzzParseStat supervisor:FuzzParseStatusFile cmd/hermes-supervisor:FuzzParseFileConfig \
  supervisor:FuzzControlRequest supervisor:FuzzParseNotify
# The full fault-injection counts of `make chaos` (`make test` runs small ones).
CHAOSFLAGS ?= -chaos.kills=1000 -chaos.supkills=200 -chaos.rounds=10
# A race-built program sleeps a second as it exits (ThreadSanitizer's
# atexit_sleep_ms, 1000 by default, for late reports from other threads).
# The suites start hundreds of race-built CLI runs and helpers, and that
# second each was most of `make test`'s time; a race is still reported
# when it happens and still fails its process with exit code 66.
export GORACE ?= atexit_sleep_ms=0

.PHONY: all build run run-hang quick test test-deps check fmt-check vet lint cross unit wine-test fuzz-smoke fuzz chaos bench bench-peers deploy clean

all: build

# Both programs are built static (no cgo), as releases are: the dynamic
# loader cost each demo gateway start, and so each demo restart, about 1 ms
# here, and libc was 1.7 MB of the supervisor's idle memory. Accounts are
# still looked up through NSS (platform/passwd asks getent).
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/hermes-supervisor
	CGO_ENABLED=0 $(GO) build -o $(dir $(BIN))hermes-demo-gateway ./cmd/hermes-demo-gateway

# The supervisor in the foreground on the built-in demo gateway, in a private
# home under .demo/ so that a real ~/.hermes is never touched. Ctrl-C stops it.
run: build
	./$(BIN) run --demo --home $(DEMO)/home --lock-dir $(DEMO)/locks

# The same, with a demo gateway that hangs 10 s after it is up: the
# supervisor's watchdog (a 4 s keep-alive deadline) catches it.
run-hang: build
	HERMES_DEMO_HANG_AFTER=10s ./$(BIN) run --demo --watchdog 4s --home $(DEMO)/home --lock-dir $(DEMO)/locks

# The whole suite: formatting, vet and build for every OS, the race-enabled
# tests (real processes, signals and files), and a short fuzz of every parser.
test: test-deps fmt-check vet lint cross unit wine-test fuzz-smoke

check: test

# The fast loop: gofmt, vet for this OS, and every package's tests with
# -short, without the race detector, Wine, systemd-nspawn or root. The
# suites that inject faults or boot containers (internal/testsuite/chaos,
# e2e, systemdtest) are left to `make test`; tests that need root skip when
# not root, saying why. go test's cache reruns only what changed
# (QUICKFLAGS=-count=1 for a cold run).
QUICK_SKIP := /internal/testsuite/(chaos|e2e|systemdtest)$$
quick: fmt-check
	$(GO) vet ./...
	$(GO) test -short $(QUICKFLAGS) $$($(GO) list ./... | grep -Ev '$(QUICK_SKIP)')

# The Debian packages the tests need: systemd-analyze checks the units we
# render; systemd-nspawn boots a real systemd for internal/testsuite/systemdtest, and
# sudo runs inside it as a user would; Wine and mingw run the Windows tests;
# cc builds the bench's C floor, whose test checks it detects a hang.
# Installed with apt when missing and we may; otherwise a one-line error.
TEST_DEBS := python3:python3 systemd-analyze:systemd systemd-nspawn:systemd-container sudo:sudo wine:wine64 wine:wine x86_64-w64-mingw32-gcc:gcc-mingw-w64-x86-64-win32 cc:gcc
test-deps:
	@need=; for d in $(TEST_DEBS); do command -v $${d%%:*} >/dev/null || need="$$need $${d##*:}"; done; \
	[ -z "$$need" ] && exit 0; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
	  echo "make test: missing packages:$$need; install them (apt-get install$$need) and run again"; exit 1; fi; \
	echo "make test: installing$$need"; export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y --no-install-recommends $$need >/dev/null || \
	  { apt-get update >/dev/null && apt-get install -y --no-install-recommends $$need >/dev/null; }

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@for os in $(OSES); do echo "go vet GOOS=$$os"; GOOS=$$os $(GO) vet ./... || exit 1; done

# staticcheck, pinned in go.mod as a tool, for every OS.
lint:
	@$(GO) build -o bin/staticcheck honnef.co/go/tools/cmd/staticcheck
	@for os in $(OSES); do echo "staticcheck GOOS=$$os"; GOOS=$$os bin/staticcheck ./... || exit 1; done

cross:
	@for os in $(OSES); do echo "go build GOOS=$$os"; GOOS=$$os CGO_ENABLED=0 $(GO) build -o /dev/null ./... || exit 1; \
	  GOOS=$$os CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/hermes-supervisor || exit 1; done

unit:
	$(GO) test -race -count=1 -timeout 20m ./...

# The Windows build of every package that runs on Windows, tested under
# Wine: the platform code, file judging, the supervisor with real child
# processes and job objects, the CLI scripts, and the service control
# manager life cycle (install, start, status over the named pipe, stop,
# uninstall) of the real binary. internal/testkit/wine says what the prefix needs;
# internal/testkit/wine/gotest reruns a package once only for a proven Wine
# failure (a wineserver error, or a test binary Wine never ran), never around
# an assertion.
WINEPREFIX ?= $(CURDIR)/.wine
WINE_PKGS  := ./platform/... ./lockstore ./procstate ./supervisor ./internal/demogateway ./cmd/...
wine-test:
	@command -v wine >/dev/null && command -v x86_64-w64-mingw32-gcc >/dev/null || \
	  { echo "wine-test: needs wine and mingw: apt-get install wine64 wine gcc-mingw-w64-x86-64-win32 (.ci/run does)"; exit 1; }
	internal/testkit/wine/setup $(WINEPREFIX)
	GOOS=windows CGO_ENABLED=0 $(GO) build -o $(WINEPREFIX)/drive_c/hermes-supervisor.exe ./cmd/hermes-supervisor
	@export WINEPREFIX=$(WINEPREFIX) WINEDEBUG=-all HERMES_SUPERVISOR_EXE='C:\hermes-supervisor.exe' PATH="$(CURDIR)/internal/testkit/wine:$$PATH"; \
	  GOOS=windows CGO_ENABLED=0 GO=$(GO) internal/testkit/wine/gotest -count=1 -timeout 10m -- $(WINE_PKGS); rc=$$?; wineserver -k; exit $$rc

fuzz-smoke:
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
	  echo "fuzz $$pkg $$fn for $(FUZZTIME)"; \
	  $(GO) test -run='^$$' -fuzz="^$$fn$$" -fuzztime=$(FUZZTIME) ./$$pkg || exit 1; done

fuzz:
	$(MAKE) fuzz-smoke FUZZTIME=$(FUZZLONG)
	@cache=$$($(GO) env GOCACHE)/fuzz/$$($(GO) list -m); \
	for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
	  if [ -d "$$cache/$$pkg/$$fn" ]; then mkdir -p $$pkg/testdata/fuzz/$$fn; cp -n $$cache/$$pkg/$$fn/* $$pkg/testdata/fuzz/$$fn/; \
	  echo "kept $$(ls $$pkg/testdata/fuzz/$$fn | wc -l) inputs in $$pkg/testdata/fuzz/$$fn"; fi; done

# The fault-injection suite at full counts, with its report in
# docs/reliability.md (about ten minutes; Linux, best as root).
chaos:
	$(GO) test -race -count=1 -timeout 60m ./internal/testsuite/chaos -args $(CHAOSFLAGS) -chaos.report=$(CURDIR)/docs/reliability.md

# Restart latency against runit, s6 and supervisord, sweep cost, power-loss
# recovery, idle cost and the Go micro-benchmarks, into docs/benchmarks.md.
# Takes about six minutes; nothing in `make test` depends on timing.
bench: build bench-peers
	$(GO) run ./internal/tools/bench -supervisor $(BIN) -out docs $(BENCHFLAGS)

# The peers, from Debian, when we may install them. Their packaged services
# are never started: policy-rc.d refuses, and the bench runs each by hand.
bench-peers:
	@if command -v runsv >/dev/null && command -v s6-supervise >/dev/null && command -v supervisord >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  made=; if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; made=1; fi; \
	  apt-get install -y --no-install-recommends runit s6 supervisor >/dev/null || \
	    { apt-get update >/dev/null && apt-get install -y --no-install-recommends runit s6 supervisor >/dev/null; }; \
	  rc=$$?; [ -n "$$made" ] && rm -f /usr/sbin/policy-rc.d; exit $$rc; \
	else echo "bench: runit, s6 or supervisor missing and apt-get unavailable; those rows will say so"; fi

# The service definitions under deploy/ (systemd units, the launchd agent,
# the Windows PowerShell installer), rendered from the templates `install`
# uses; `make test` fails when they are out of date.
deploy:
	$(GO) test -count=1 -run '^TestDeployFiles$$' ./platform/service -args -update

clean:
	rm -rf bin $(DEMO) .wine
