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
FUZZTIME ?= 20s
BIN     := bin/koshactl
PKGS    := ./...
DYNALITE_DIR := tools/dynalite
DYNALITE := $(DYNALITE_DIR)/node_modules/dynalite/cli.js
ARGS    ?=

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/koshactl
	$(GO) build -o $(BIN) ./cmd/koshactl

.PHONY: run
run: build ## Run koshactl with ARGS on the current context (default: the embedded local store), e.g. make run ARGS="breaker list"
	./$(BIN) $(ARGS)

$(DYNALITE): $(DYNALITE_DIR)/package.json $(DYNALITE_DIR)/package-lock.json
	@command -v node >/dev/null || { echo "node (20+) is needed for the DynamoDB test server: install nodejs and npm"; exit 1; }
	npm ci --prefix $(DYNALITE_DIR) --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: test-deps
test-deps: $(DYNALITE) ## Install what the tests need (dynalite from the pinned package-lock)

.PHONY: test
test: test-deps ## Install test dependencies and run every test with -race
	$(GO) test -race -count=1 $(PKGS)
	python3 internal/chaos/testdata/reference/chaos_ref.py check internal/chaos/testdata/vectors.json

.PHONY: bench
bench: test-deps build ## Run the benchmarks (results in docs/benchmarks/)
	$(GO) test -run '^$$' -bench . -benchmem -count 6 $(PKGS)

.PHONY: fmt
fmt: ## Format the code
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint
lint: $(GOLANGCI) ## gofmt, go vet, go mod tidy and golangci-lint (config: .golangci.yml)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) mod tidy -diff
	$(GOLANGCI) run $(PKGS)

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
docs: ## Regenerate the CLI reference in docs/cli
	rm -rf docs/cli && $(GO) run ./tools/gendocs docs/cli

.PHONY: docs-check
docs-check: ## Fail when docs/cli is not what the commands say
	@tmp=$$(mktemp -d) && $(GO) run ./tools/gendocs $$tmp && \
	  if ! diff -r $$tmp docs/cli >/dev/null; then diff -ru docs/cli $$tmp | head -40; echo "docs/cli is stale: run make docs"; rm -rf $$tmp; exit 1; fi; rm -rf $$tmp

.PHONY: tidy
tidy: ## go mod tidy
	$(GO) mod tidy
