# hermes-supervisor — `make run` and `make test` are the two set-up commands.
GO      ?= go
BIN     := bin/hermes-supervisor
DEMO    := $(CURDIR)/.demo
OSES    := linux darwin windows
FUZZTIME ?= 10s
# Parsers of files we read; `make test` fuzzes each briefly, `make fuzz` longer.
FUZZ_TARGETS := lockstore:FuzzParseRecord

.PHONY: all build run test check fmt-check vet cross unit fuzz-smoke fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/hermes-supervisor

# The supervisor in the foreground on the built-in demo gateway, in a private
# home under .demo/ so that a real ~/.hermes is never touched. Ctrl-C stops it.
run: build
	./$(BIN) run --demo --home $(DEMO)/home --lock-dir $(DEMO)/locks

# The whole suite: formatting, vet and build for every OS, the race-enabled
# tests (real processes, signals and files), and a short fuzz of every parser.
test: fmt-check vet cross unit fuzz-smoke

check: test

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@for os in $(OSES); do echo "go vet GOOS=$$os"; GOOS=$$os $(GO) vet ./... || exit 1; done

cross:
	@for os in $(OSES); do echo "go build GOOS=$$os"; GOOS=$$os CGO_ENABLED=0 $(GO) build -o /dev/null ./... || exit 1; \
	  GOOS=$$os CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/hermes-supervisor || exit 1; done

unit:
	$(GO) test -race -count=1 -timeout 20m ./...

fuzz-smoke:
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
	  echo "fuzz $$pkg $$fn for $(FUZZTIME)"; \
	  $(GO) test -run='^$$' -fuzz="^$$fn$$" -fuzztime=$(FUZZTIME) ./$$pkg || exit 1; done

fuzz:
	$(MAKE) fuzz-smoke FUZZTIME=2m

clean:
	rm -rf bin $(DEMO)
