# koshactl — run `make help` for the list of targets.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# The approved toolchain: govulncheck finds reachable standard-library
# vulnerabilities in go1.26.8 that go1.27.3 fixes. The go command fetches it
# from the module proxy on first use (about 76 MB) like any module.
export GOTOOLCHAIN := go1.27.3
GO      ?= go
TOOLS   := .tools
GOLANGCI_VERSION  := v2.15.0
GOLANGCI          := $(TOOLS)/golangci-lint-$(GOLANGCI_VERSION)/golangci-lint
VULNCHECK_VERSION := v1.9.0
VULNCHECK         := $(TOOLS)/govulncheck-$(VULNCHECK_VERSION)/govulncheck
VULNDB_VERSION    := v0.0.0-20261105234957-e22db6528018
VULNDB            := .cache/vulndb-$(VULNDB_VERSION)
ACTIONLINT_VERSION := v1.7.12
ACTIONLINT         := $(TOOLS)/actionlint-$(ACTIONLINT_VERSION)/actionlint
GORELEASER_VERSION := v2.15.1
GORELEASER         := $(TOOLS)/goreleaser-$(GORELEASER_VERSION)/goreleaser
CYCLONEDX_VERSION  := v1.10.0
CYCLONEDX          := $(TOOLS)/cyclonedx-gomod-$(CYCLONEDX_VERSION)/cyclonedx-gomod
FUZZTIME ?= 20s
# A fuzz target must fuzz: at least FUZZ_MIN_EXECS inputs, never FUZZ_MAX_STALL
# at 0 execs/s (tools/fuzzgate). Each minimization of an input is bounded to
# FUZZMINIMIZE runs: the engine's minimization is quadratic in the input's
# length and counts no exec while it runs, so unbounded it held targets at
# 0/sec for the rest of a run (issue 45).
FUZZ_MIN_EXECS ?= 500
FUZZ_MAX_STALL ?= 8s
FUZZMINIMIZE   ?= 100x
BIN     := bin/koshactl
PKGS    := ./...
# moto's server, the tests' DynamoDB (and SNS, SQS, STS, Secrets Manager)
# endpoint: internal/testutil/moto runs $KOSHACTL_MOTO_SERVER, else
# moto_server on PATH.
MOTO_VERSION := 5.2.1
ARGS    ?=
# Debian's interpreter: it sees Debian's python3-pytest and python3-boto3,
# which a python3 earlier on PATH (pyenv, a venv) may not.
PYTHON  := /usr/bin/python3

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# What `koshactl version` reports, stamped from git into internal/build. Where
# git or the repository is missing each is empty, and koshactl falls back to
# Go's build info (then "dev"/"unknown"). The date is the commit's, in RFC3339
# UTC, so one commit always builds the same binary. goreleaser stamps the same
# three values (.goreleaser.yaml; make release-check compares them).
BUILD_PKG     := github.com/kosha-platform/koshactl/internal/build
BUILD_VERSION  = $(shell git describe --tags --always --dirty 2>/dev/null)
BUILD_COMMIT   = $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE     = $(shell TZ=UTC0 git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null)
# Built as the release archives are (.goreleaser.yaml): pure Go, no local paths.
LDFLAGS        = -X $(BUILD_PKG).Version=$(BUILD_VERSION) -X $(BUILD_PKG).Commit=$(BUILD_COMMIT) -X $(BUILD_PKG).Date=$(BUILD_DATE)

# koshactl is two programs, side by side: bin/koshactl, the front, and
# bin/koshactl-full, which the front hands what it does not link
# (docs/benchmarks/startup.md).
.PHONY: build
build: ## Build bin/koshactl and bin/koshactl-full, stamped with git's version, commit and commit date
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/koshactl
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)-full ./cmd/koshactl-full

.PHONY: install
install: ## go install koshactl and koshactl-full, stamped like build; says where they went and, when that is not on PATH, the line to add
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/koshactl ./cmd/koshactl-full
	@dir=$$($(GO) env GOBIN); [ -n "$$dir" ] || dir=$$($(GO) env GOPATH)/bin; \
	  echo "installed koshactl and koshactl-full in $$dir"; \
	  found=$$(command -v koshactl 2>/dev/null || true); \
	  case ":$$PATH:" in \
	    *":$$dir:"*) if [ "$$found" = "$$dir/koshactl" ]; then echo "$$dir is on your PATH: run koshactl"; \
	      else echo "$$dir is on your PATH, but $$found comes first: run $$dir/koshactl, or put $$dir before $$(dirname "$$found")"; fi ;; \
	    *) rc=~/.profile; case "$${SHELL:-}" in */zsh) rc=~/.zshrc;; */bash) rc=~/.bashrc;; esac; \
	      echo "$$dir is not on your PATH. Add it, then open a new shell:"; \
	      echo "  echo 'export PATH=\"\$$PATH:$$dir\"' >> $$rc"; \
	      echo "(or run $$dir/koshactl, or ./bin/koshactl after make build)" ;; \
	  esac

.PHONY: run
run: build ## Run koshactl with ARGS on the current context (default: the embedded local store), e.g. make run ARGS="breaker list"
	./$(BIN) $(ARGS)

.PHONY: test-deps
test-deps: ## Install what the tests need (moto's server, pinned, with pip when missing; tmux for the dashboard smoke test; Debian's python3 with pytest and boto3 for the contract vectors and the interop tests; the npm MCP client of the mcp test)
	@if [ -n "$${KOSHACTL_MOTO_SERVER:-}" ]; then \
	  command -v "$$KOSHACTL_MOTO_SERVER" >/dev/null || { echo "KOSHACTL_MOTO_SERVER=$$KOSHACTL_MOTO_SERVER is not an executable: point it at moto_server, or unset it to use moto_server on PATH"; exit 1; }; \
	elif ! command -v moto_server >/dev/null; then \
	  echo "installing moto's server $(MOTO_VERSION) (moto_server, the tests' DynamoDB) with pip"; \
	  python3 -m pip install --quiet 'moto[server]==$(MOTO_VERSION)' && command -v moto_server >/dev/null || \
	    { echo "moto_server is needed for the DynamoDB tests: install it with \`pip install 'moto[server]==$(MOTO_VERSION)'\` so moto_server is on PATH, or set KOSHACTL_MOTO_SERVER to it"; exit 1; }; \
	fi
	@missing=; command -v tmux >/dev/null || missing="$$missing tmux"; \
	  $(PYTHON) -c 'import pytest' 2>/dev/null || missing="$$missing python3-pytest"; \
	  $(PYTHON) -c 'import boto3' 2>/dev/null || missing="$$missing python3-boto3"; \
	  if [ -n "$$missing" ]; then \
	    command -v apt-get >/dev/null || { echo "the tests need:$$missing (tmux for the dashboard smoke test; $(PYTHON) 3.11+ with pytest and boto3 for sdk/python): install them"; exit 1; }; \
	    sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; echo "installing$$missing (Debian) for the tests"; \
	    $$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	  fi
	@command -v npm >/dev/null || { echo "npm (Node 20) is needed for the MCP client test: install nodejs and npm"; exit 1; }
	@test -f $(MCP_CLIENT)/node_modules/.package-lock.json && cmp -s $(MCP_CLIENT)/package-lock.json $(MCP_CLIENT)/node_modules/.lock-ci 2>/dev/null || \
	  { echo "installing the MCP test client's packages (npm ci in $(MCP_CLIENT))"; \
	    (cd $(MCP_CLIENT) && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) && cp $(MCP_CLIENT)/package-lock.json $(MCP_CLIENT)/node_modules/.lock-ci; }

# The independent MCP client of koshactl mcp's end-to-end test: the npm
# @modelcontextprotocol/sdk, pinned by its package-lock.json.
MCP_CLIENT := internal/cmd/mcp/testdata/client

# The koshactl binary the end-to-end tests run (internal/testutil/koshabin),
# built once with -race so it reuses the packages the tests compile, and the
# full program beside it (in a directory of their own: a front hands its run
# only to the full program of its own build).
TEST_BIN := bin/race/koshactl

.PHONY: test-bin
test-bin:
	$(GO) build -race -o $(TEST_BIN) ./cmd/koshactl
	$(GO) build -race -o $(dir $(TEST_BIN))koshactl-full ./cmd/koshactl-full

# Six test binaries at once on any machine: most packages spend their time
# waiting on servers (moto, the sandbox fleet, a drill's polls), not
# computing, so with go test's default (one per core) two cores sat half idle;
# docs/benchmarks/test-suite.md.
TEST_P ?= 6

.PHONY: test
test: test-deps test-bin ## Install test dependencies and run every test with -race
	KOSHACTL_TEST_BINARY=$(abspath $(TEST_BIN)) $(GO) test -race -count=1 -timeout 20m -p $(TEST_P) $(PKGS)
	PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -m pytest -q -p no:cacheprovider sdk/python/tests

# The packages whose TestContractVectors write docs/contracts/vectors: each
# holds the rule its file is about. Without -update-vectors the same tests
# fail when a file differs from what the code produces.
VECTOR_PKGS := ./internal/breaker ./internal/chaos ./internal/freeze ./internal/dataplane/limiter ./internal/dataplane/sandbox ./internal/impact ./internal/metrics

.PHONY: vectors
vectors: ## Regenerate the contract test vectors (docs/contracts/vectors) from the Go code
	$(GO) test -count=1 -run '^TestContractVectors$$' $(VECTOR_PKGS) -args -update-vectors
	@git diff --stat -- docs/contracts/vectors 2>/dev/null || true

# The end-to-end packages: real processes, servers, terminals and stores,
# where timing could leak into an outcome (the built binary in tmux, the
# sandbox fleet in process and as a command, moto, the dashboard on an
# emulated terminal, drills running shells, audit --follow).
STRESS_PKGS  ?= ./internal/cmd/drill ./internal/cmd/levers/... ./internal/cmd/dashboard ./internal/dataplane/sandbox ./internal/cmd/sandbox ./internal/cmd/breaker \
	./internal/cmd/iam ./internal/cmd/audit/... ./internal/tui ./internal/drill/... ./internal/store/... ./internal/testutil/...
STRESS_COUNT ?= 3
# CPU burners per core: 4 puts a load of four times the cores on the machine.
STRESS_LOAD  ?= 4

.PHONY: test-stress
test-stress: test-deps test-bin ## Run the end-to-end packages STRESS_COUNT times (default 3) with -race under a load of STRESS_LOAD (default 4) CPU burners per core
	@burners=; trap 'for p in $$burners; do kill $$p 2>/dev/null; done' EXIT; \
	n=$$(( $$(getconf _NPROCESSORS_ONLN) * $(STRESS_LOAD) )); \
	for i in $$(seq $$n); do (while :; do :; done) & burners="$$burners $$!"; done; \
	echo "test-stress: $$n CPU burner(s) on $$(getconf _NPROCESSORS_ONLN) core(s); $(STRESS_COUNT) runs of: $(STRESS_PKGS)"; \
	KOSHACTL_TEST_BINARY=$(abspath $(TEST_BIN)) $(GO) test -race -timeout 60m -count=$(STRESS_COUNT) $(STRESS_PKGS)

.PHONY: bench
bench: test-deps build ## Run the benchmarks (results in docs/benchmarks/)
	$(GO) test -run '^$$' -bench . -benchmem -count 6 $(PKGS)

.PHONY: bench-scale
bench-scale: test-deps ## The production-size benchmarks with the 100k table (docs/benchmarks/scale.md)
	KOSHACTL_BENCH_100K=1 $(GO) test -run '^$$' -bench . -benchtime 5x -count 3 -timeout 30m ./internal/scalebench/

# Every native fuzz target, as package:FuzzName: the parsers of outside input
# (chaos header, deadline header, config file, drill YAML, stored items), the
# game-day report's escaping, and the breaker's state machine.
FUZZ_TARGETS := \
	./internal/chaos:FuzzParse \
	./internal/chaos:FuzzVerify \
	./internal/chaos:FuzzSignRoundTrip \
	./internal/dataplane/resilience:FuzzParseDeadline \
	./internal/dataplane/resilience:FuzzDeadlineRoundTrip \
	./internal/config:FuzzLoad \
	./internal/drill/runner:FuzzParse \
	./internal/drill/runner:FuzzJUnit \
	./internal/drill:FuzzInterpolation \
	./internal/gameday:FuzzHTML \
	./internal/store:FuzzParseNumber \
	./internal/store:FuzzNumberRoundTrip \
	./internal/store/sqlite:FuzzDecode \
	./internal/store/sqlite:FuzzPutGet \
	./internal/ratelimit:FuzzBucketFromItem \
	./internal/dataplane/circuit:FuzzBreaker \
	./internal/textsafe:FuzzRender

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 20s; make fuzz FUZZTIME=10m for a long run); fails on any crash, and on a target that does not fuzz (fewer than FUZZ_MIN_EXECS execs, or FUZZ_MAX_STALL at 0/sec)
	@log=$$(mktemp); gate=$$(mktemp); summary=""; failed=""; stalled=""; \
	$(GO) build -o $$gate ./tools/fuzzgate; \
	for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t#*:}; \
	  echo "== $$pkg $$name ($(FUZZTIME))"; \
	  if $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg 2>&1 | tee $$log; then result=ok; \
	  else result=FAIL; failed="$$failed $$pkg:$$name"; fi; \
	  verdict=$$($$gate -min-execs $(FUZZ_MIN_EXECS) -max-stall $(FUZZ_MAX_STALL) <$$log) || { [ "$$result" = FAIL ] || result=STALL; stalled="$$stalled $$pkg:$$name"; }; \
	  echo "$$verdict"; \
	  summary="$$summary$$(printf '%-36s %-24s %5s  %s' $$pkg $$name $$result "$$verdict")\n"; \
	done; rm -f $$log $$gate; \
	printf "\n$$summary"; \
	if [ -n "$$failed" ]; then echo "fuzz: failed:$$failed (a crashing input is saved under its package's testdata/fuzz)"; fi; \
	if [ -n "$$stalled" ]; then echo "fuzz: did not fuzz:$$stalled (see each one's line above: bound the target's input size or cost per input)"; fi; \
	if [ -n "$$failed$$stalled" ]; then exit 1; fi

# Where make report-check leaves its reports, screenshots and browser logs.
REPORT_CHECK_DIR ?= bin/report-check

.PHONY: report-check
report-check: build ## Render game-day reports (fixtures and a real drill against a sandbox) in headless Chromium: a screenshot each, and no console error or CSP violation
	@command -v chromium >/dev/null || { command -v apt-get >/dev/null || { echo "chromium is needed for the report check: install it"; exit 1; }; \
	  sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; echo "installing chromium (Debian) for the report check"; \
	  $$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }
	tools/report-check.sh ./$(BIN) $(REPORT_CHECK_DIR)

.PHONY: loc
loc: ## Count source lines a command (non-test Go outside the data plane, test support and fakes, over the commands; tools/loc.sh)
	@tools/loc.sh

.PHONY: fmt
fmt: ## Format the code
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint
# golangci-lint runs go vet's analyzers (govet) and gofmt (a formatter) in
# its one pass over the packages: they are not run a second time here.
lint: $(GOLANGCI) $(ACTIONLINT) ## go mod tidy, golangci-lint (go vet, gofmt, staticcheck, gosec...: .golangci.yml) and actionlint on docs/ci
	$(GO) mod tidy -diff
	$(GOLANGCI) run $(PKGS)
	$(ACTIONLINT) -shellcheck= -pyflakes= docs/ci/*.yml

# actionlint checks the example workflow as GitHub would (contexts, expressions,
# action inputs); shellcheck and pyflakes are off so the result does not depend
# on what else the machine has installed.
$(ACTIONLINT):
	GOFLAGS= GOBIN=$(abspath $(dir $@)) $(GO) install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

$(GOLANGCI):
	GOFLAGS= GOBIN=$(abspath $(dir $@)) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)

$(VULNCHECK):
	GOFLAGS= GOBIN=$(abspath $(dir $@)) $(GO) install golang.org/x/vuln/cmd/govulncheck@$(VULNCHECK_VERSION)

# The vulnerability database, built offline from the golang.org/x/vulndb module's OSV files.
$(VULNDB)/.built:
	@dir=$$(GOFLAGS= $(GO) mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	  test -n "$$dir" || { echo "could not download golang.org/x/vulndb@$(VULNDB_VERSION)"; exit 1; }; \
	  rm -rf $(VULNDB) && GOFLAGS= $(GO) run golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION) -vulns "$$dir/data/osv" -out $(VULNDB)
	@touch $@

.PHONY: vuln
vuln: $(VULNCHECK) $(VULNDB)/.built ## govulncheck against an offline database built from golang.org/x/vulndb
	$(VULNCHECK) -db file://$(abspath $(VULNDB)) $(PKGS)

.PHONY: docs
docs: ## Regenerate the CLI reference in docs/cli, the policies in docs/iam.md and the MCP tool list in docs/mcp.md
	rm -rf docs/cli && $(GO) run ./tools/gendocs docs/cli
	$(GO) run ./tools/gendocs -iam docs/iam.md
	$(GO) run ./tools/gendocs -mcp docs/mcp.md

.PHONY: docs-check
docs-check: ## Fail when docs/cli is not what the commands say, docs/iam.md not what internal/iam generates, or docs/mcp.md's tool list not the server's
	@tmp=$$(mktemp -d) && $(GO) run ./tools/gendocs $$tmp && \
	  if ! diff -r $$tmp docs/cli >/dev/null; then diff -ru docs/cli $$tmp | head -40; echo "docs/cli is stale: run make docs"; rm -rf $$tmp; exit 1; fi; rm -rf $$tmp
	@$(GO) run ./tools/gendocs -iam docs/iam.md -check
	@$(GO) run ./tools/gendocs -mcp docs/mcp.md -check

# goreleaser reads the remote's URL even for a snapshot; a checkout without
# a remote (a local clone's worktree) gets the project's, for that read only.
SNAPSHOT_GIT := $(if $(shell git remote 2>/dev/null),,GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/kosha-platform/koshactl.git)

.PHONY: release-snapshot
release-snapshot: $(GORELEASER) $(CYCLONEDX) ## Build every release archive (linux/darwin/windows x amd64/arm64), checksums and SBOMs into dist/; publishes nothing
	$(SNAPSHOT_GIT) PATH="$(abspath $(dir $(CYCLONEDX))):$$PATH" $(GORELEASER) release --snapshot --clean
	@ls dist/*.tar.gz dist/*.zip dist/*.cdx.json dist/checksums.txt

.PHONY: release-check
release-check: $(GORELEASER) build ## Check .goreleaser.yaml and build this machine's target with it; its stamps must equal make build's, and its version the one the archives are named by
	$(GORELEASER) check
	@# goreleaser refuses a dist/ it did not just clean, so the full program is
	@# built first, kept aside, and put beside the front (which runs it for --jq).
	mkdir -p $(TOOLS)/release-check
	$(SNAPSHOT_GIT) $(GORELEASER) build --snapshot --clean --single-target --id koshactl-full --output $(TOOLS)/release-check/koshactl-full
	$(SNAPSHOT_GIT) $(GORELEASER) build --snapshot --clean --single-target --id koshactl --output dist/koshactl
	cp $(TOOLS)/release-check/koshactl-full dist/koshactl-full
	@want=$$(./$(BIN) version -o json); got=$$(dist/koshactl version -o json); \
	  if [ "$$want" != "$$got" ]; then echo "goreleaser stamps differ from make build:"; diff <(echo "$$want") <(echo "$$got"); exit 1; fi; \
	  version=$$(dist/koshactl version -o json --jq .version); \
	  release=$$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' dist/metadata.json); \
	  if [ "$$release" != "$$version" ]; then echo "the snapshot's version (archive names) is \"$$release\", the binary says \"$$version\": one version string everywhere"; exit 1; fi; \
	  echo "release-check: goreleaser build stamped like make build, archives named by its version: $$(./$(BIN) version -o json --jq '.version + " " + .commit + " " + .date')"

$(GORELEASER):
	GOFLAGS= GOBIN=$(abspath $(dir $@)) $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

$(CYCLONEDX):
	GOFLAGS= GOBIN=$(abspath $(dir $@)) $(GO) install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_VERSION)

.PHONY: tidy
tidy: ## go mod tidy
	$(GO) mod tidy

DEMO_LISTEN ?= 127.0.0.1:8787
DEMO_ARGS   ?=

# The note is for a build that will download: the toolchain, or a module the
# binary's packages need (go list of koshactl's packages, offline). Modules
# only the tests use are not asked for: before make test fetched them, the
# note came back on every target (issue 45).
.PHONY: first-build-note
first-build-note:
	@cache=$$(GOTOOLCHAIN=local $(GO) env GOMODCACHE 2>/dev/null || true); \
	  if ! ls -d "$$cache"/golang.org/toolchain@*-$(GOTOOLCHAIN).* >/dev/null 2>&1 || ! GOPROXY=off GOFLAGS=-mod=mod $(GO) list -deps ./cmd/koshactl >/dev/null 2>&1; then \
	    echo "First build on this machine: the go command downloads the $(GOTOOLCHAIN) toolchain and koshactl's modules (about 300 MB, a few minutes), once."; \
	  fi

.PHONY: demo
demo: first-build-note build ## Start a sandbox fleet (flaky downstreams, traffic, chaos) on the local context and watch its breakers; quitting stops it
	@log=bin/sandbox-demo.log; urlf=bin/sandbox-demo.url; cmds=bin/demo-commands.txt; rm -f "$$urlf"; \
	./$(BIN) sandbox --listen $(DEMO_LISTEN) --profile flaky --rps 8 --chaos --addr-file "$$urlf" $(DEMO_ARGS) >"$$log" 2>&1 & pid=$$!; \
	trap 'kill -TERM $$pid 2>/dev/null; wait $$pid 2>/dev/null || true; echo "sandbox stopped (log: '"$$log"'; what to try: '"$$cmds"')"' EXIT; \
	trap 'exit 0' INT TERM; \
	for i in $$(seq 150); do test -s "$$urlf" && break; kill -0 $$pid 2>/dev/null || { cat "$$log"; exit 1; }; sleep 0.1; done; \
	test -s "$$urlf" || { echo "the sandbox did not start within 15s:"; cat "$$log"; exit 1; }; \
	url=$$(cat "$$urlf"); head -n 1 "$$log"; \
	{ echo "In the dashboard: f forces the selected dependency open, c clears it, ? lists every key, q quits (and stops the fleet)."; \
	  echo "In a second terminal (same context, so the fleet sees it; or koshactl after make install, which says how to put it on PATH):"; \
	  echo "  ./$(BIN) breaker force-open openai --reason demo --for 10m   # every instance forced within ~6s"; \
	  echo "  ./$(BIN) breaker clear openai --reason 'demo over'"; \
	  echo "  ./$(BIN) sandbox status --watch --url $$url"; \
	  echo "  curl -s $$url/mcp -H 'Authorization: Bearer operator-token' \\"; \
	  echo "    -H \"\$$(./$(BIN) chaos sign --target screening-sim --fault error)\" \\"; \
	  echo "    -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"screen_entity\",\"arguments\":{\"name\":\"Ada\"}}}'"; \
	  echo "Drills need a steady fleet (this one's breakers open on their own): make drill-demo runs the examples on one."; \
	} >"$$cmds"; \
	sed 's/^/  /' "$$cmds"; \
	echo "  (kept in $$cmds; the sandbox's log is $$log.) Starting the viewer..."; sleep 3; \
	if ./$(BIN) dashboard --help >/dev/null 2>&1 && [ -t 0 ] && [ -t 1 ]; then \
	  ./$(BIN) dashboard --metrics-url "$$url/metrics" --interval 2s; \
	else \
	  ./$(BIN) sandbox status --watch --url "$$url"; \
	fi

# The example drills are written for a steady fleet: make demo's flaky one
# opens breakers on its own, so a drill's hypothesis would not hold there.
DRILL_DEMO ?= openai-outage screening-sim-errors
.PHONY: drill-demo
drill-demo: first-build-note build ## Run the example drills (DRILL_DEMO) against a fresh healthy sandbox at 10x time, on a throwaway state directory; reports in bin/drill-demo/
	@tmp=$$(mktemp -d); pid=; out=bin/drill-demo; mkdir -p "$$out"; \
	trap 'test -z "$$pid" || { kill -TERM $$pid 2>/dev/null; wait $$pid 2>/dev/null; }; rm -rf "$$tmp"' EXIT; \
	export KOSHACTL_STATE_DIR="$$tmp/state" KOSHACTL_CONFIG="$$tmp/config.yaml" KOSHACTL_CONTEXT=; \
	./$(BIN) sandbox --listen 127.0.0.1:0 --addr-file "$$tmp/url" --profile healthy --chaos --time-scale 10 >"$$out/sandbox.log" 2>&1 & pid=$$!; \
	for i in $$(seq 150); do test -s "$$tmp/url" && break; kill -0 $$pid 2>/dev/null || { cat "$$out/sandbox.log"; exit 1; }; sleep 0.1; done; \
	test -s "$$tmp/url" || { echo "drill-demo: the sandbox did not start within 15s:"; cat "$$out/sandbox.log"; exit 1; }; \
	export SANDBOX_URL=$$(cat "$$tmp/url"); echo "drill-demo: a healthy sandbox at $$SANDBOX_URL (10x time)"; rc=0; \
	for d in $(DRILL_DEMO); do \
	  ./$(BIN) drill run docs/drills/$$d.yaml --report "$$out/$$d.html" --junit "$$out/$$d.xml" || rc=$$?; \
	done; \
	echo "drill-demo: reports in $$out/"; exit $$rc

.PHONY: demo-check
demo-check: build ## Check without a terminal that the demo's pieces start, serve, obey an override and stop cleanly
	@tmp=$$(mktemp -d); pid=; \
	trap 'test -z "$$pid" || kill -TERM $$pid 2>/dev/null || true; rm -rf "$$tmp"' EXIT; \
	export KOSHACTL_STATE_DIR="$$tmp/state" KOSHACTL_CONFIG="$$tmp/config.yaml" KOSHACTL_CONTEXT=; \
	./$(BIN) sandbox --listen 127.0.0.1:0 --addr-file "$$tmp/url" --profile flaky --rps 40 --time-scale 20 --chaos >"$$tmp/log" 2>&1 & pid=$$!; \
	for i in $$(seq 150); do test -s "$$tmp/url" && break; sleep 0.1; done; \
	test -s "$$tmp/url" || { echo "demo-check: the sandbox did not start"; cat "$$tmp/log"; exit 1; }; \
	url=$$(cat "$$tmp/url"); \
	./$(BIN) sandbox status --url "$$url" --wait 10s; \
	./$(BIN) breaker force-open openai --reason demo-check --for 5m >/dev/null; \
	n=0; for i in $$(seq 100); do n=$$(./$(BIN) sandbox status --url "$$url" -o json | grep -c '"forced_open"' || true); test "$$n" -ge 4 && break; sleep 0.1; done; \
	test "$$n" -ge 4 || { echo "demo-check: openai forced on $$n of 4 instances after 10s"; exit 1; }; \
	echo "demo-check: force-open reached all 4 instances"; \
	kill -TERM $$pid; rc=0; wait $$pid || rc=$$?; pid=; \
	test $$rc -eq 0 || { echo "demo-check: the sandbox exited $$rc on SIGTERM"; cat "$$tmp/log"; exit 1; }; \
	grep -q "stopped after" "$$tmp/log" && echo "demo-check: ok (served, obeyed the override, stopped cleanly)"
