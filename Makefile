# harness: run `make demo` to try it, `make test` to test it.
SHELL := /bin/bash
CLAUDE := node_modules/.bin/claude
CLI_STAMP := node_modules/.harness-cli-installed
GO_TEST_FLAGS ?= -race -count=1 -timeout 15m

.PHONY: all build console-vendor cli test test-go test-js demo bench fuzz fmt vet clean

all: build

# bin/harness is built without cgo: nothing in it needs libc (no os/user;
# the net package's own resolver; Landlock through the Go runtime's
# all-threads syscall), and a static binary maps neither libc nor ld.so:
# ~1.1-1.6 MB less idle RSS (BENCHMARKS.md, "A lean process"). The tests
# keep cgo (the race detector needs it). TAGS=nocluster leaves out the
# cluster and its NATS server (issue 36): `serve --node` then says so.
GO_BUILD = CGO_ENABLED=0 go build$(if $(TAGS), -tags '$(TAGS)')

build: console-vendor
	$(GO_BUILD) -o bin/harness ./cmd/harness

# The console's charting library (uPlot, pinned in web/vendor), its built
# bundle copied into web/static/vendor/ (generated, ignored by git) before
# the binary embeds web/static. Without it the console's usage view shows
# its numbers as tables only.
CONSOLE_VENDOR := web/static/vendor/uPlot.iife.min.js
console-vendor: $(CONSOLE_VENDOR)
$(CONSOLE_VENDOR): web/vendor/package.json web/vendor/package-lock.json
	cd web/vendor && npm ci --no-audit --no-fund
	mkdir -p web/static/vendor
	cp web/vendor/node_modules/uplot/dist/uPlot.iife.min.js web/vendor/node_modules/uplot/dist/uPlot.min.css web/static/vendor/

# The pinned agents (package.json + package-lock.json: the Claude Code CLI,
# Codex, OpenCode, claude-agent-acp, Copilot), installed into ./node_modules
# only when missing or not the pinned versions. (npm keeps the tarball's old
# file times, hence the stamp file.) `npm install`, not `npm ci`: opencode-ai
# lists optional platform packages the registry does not serve, which `npm
# ci` takes for a stale lock; `npm install` installs exactly the lock's
# versions and leaves the lock unchanged.
cli: $(CLI_STAMP)
$(CLI_STAMP): package.json package-lock.json
	@command -v node >/dev/null || { echo "make: Node.js and npm are needed to install the pinned agents (Debian: apt-get install nodejs npm)"; exit 1; }
	@major=$$(node -p 'process.versions.node.split(".")[0]'); \
	if [ "$$major" -lt 18 ]; then echo "make: Node.js $$(node --version) is too old: 18 or newer is needed to install the agents"; exit 1; fi; \
	if [ "$$major" -lt 22 ]; then echo "make: note: Node.js $$(node --version): the pinned CLI asks for Node 22 and npm will warn (EBADENGINE); the CLI is a native binary and runs fine, so the warning is expected"; fi
	npm install --no-audit --no-fund
	@$(CLAUDE) --version
	@touch $@

vet:
	go vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: cli vet test-go test-js

test-go: cli
	go test $(GO_TEST_FLAGS) ./...

# The TypeScript client, the console's browser test and the Next.js
# example (built, then driven in Chromium) run against a real
# `harness serve --demo` (they start it themselves from bin/harness).
test-js: build cli
	node --test web/jstest/
	@if [ -x clients/typescript/run.sh ]; then HARNESS_BIN=$(CURDIR)/bin/harness clients/typescript/run.sh; fi
	@if [ -x e2e/run.sh ]; then HARNESS_BIN=$(CURDIR)/bin/harness e2e/run.sh; fi
	@if [ -x examples/nextjs/run.sh ]; then HARNESS_BIN=$(CURDIR)/bin/harness examples/nextjs/run.sh; fi

# Says what it does at each step: a cold first build downloads and
# compiles every dependency for minutes (-v names each package as it is
# compiled; a warm build prints nothing), then the server says what to open
# and what to type.
demo:
	@echo "make demo: 1/3 building bin/harness (a first build downloads and compiles every dependency: a few minutes; each package is named as it compiles)"
	@$(GO_BUILD) -v -o bin/harness ./cmd/harness
	@echo "make demo: 2/3 the pinned agents in ./node_modules (installed only when missing)"
	@$(MAKE) --no-print-directory cli
	@echo "make demo: 3/3 starting the console on the built-in demo model (no account needed)"
	./bin/harness serve --demo

bench: build cli
	bench/all.sh

fuzz:
	go test ./claudecode -run '^$$' -fuzz FuzzDecoder -fuzztime 60s
	go test ./internal/eventsel -run '^$$' -fuzz FuzzTypeOf -fuzztime 60s
	go test ./internal/eventsel -run '^$$' -fuzz FuzzParse -fuzztime 60s
	go test ./claudecode -run '^$$' -fuzz FuzzTextValue -fuzztime 60s
	go test ./claudecode -run '^$$' -fuzz FuzzStreamEventLine -fuzztime 60s
	go test ./claudecode -run '^$$' -fuzz FuzzRepeatedStrings -fuzztime 60s
	go test ./permrule -run '^$$' -fuzz FuzzRuleNamesProgram -fuzztime 60s
	go test ./permrule -run '^$$' -fuzz FuzzShellAgainstBash -fuzztime 60s
	go test ./checkpoint -run '^$$' -fuzz FuzzPatches -fuzztime 60s
	go test ./usage -run '^$$' -fuzz FuzzIndexLog -fuzztime 60s

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin bench/out
