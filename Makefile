# koshactl — run `make help` for the list of targets.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO      ?= go
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

.PHONY: bench
bench: test-deps build ## Run the benchmarks (results in docs/benchmarks/)
	$(GO) test -run '^$$' -bench . -benchmem -count 6 $(PKGS)

.PHONY: fmt
fmt: ## Format the code
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint
lint: ## gofmt, go vet and go mod tidy checks
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) mod tidy -diff
