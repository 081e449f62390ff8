# oncecall: `make run` starts it, `make test` proves it.

SQLC_VERSION := v1.31.1
SQLC := go run github.com/sqlc-dev/sqlc/cmd/sqlc@$(SQLC_VERSION)
OAPI_CODEGEN_VERSION := v2.8.2
OAPI_CODEGEN := go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@$(OAPI_CODEGEN_VERSION)
# The flags the Dockerfile builds with; CI builds the same way. COMMIT stamps the commit that
# `oncecall --version` prints (a container build has no .git to read it from: docker build
# --build-arg COMMIT=<the commit>).
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_FLAGS := -trimpath -ldflags="-s -w -X main.commit=${COMMIT}"

.PHONY: run sim test test-race build generate check-generated vet tools generate-ts lint-openapi ts-deps bench bench-short bench-large fuzz chaos chaos-providers chaos-failover chaos-calls screenshots jaeger

# Builds bin/oncecall, then the shell becomes it (exec): Ctrl-C reaches
# oncecall, which stops its server and embedded PostgreSQL and exits 0, so
# make reports no error. ONCECALL_ADDR and the other settings pass through.
run:
	go build -o bin/oncecall ./cmd/oncecall
	exec bin/oncecall serve

# The provider simulator on 127.0.0.1:8090; PROVIDERSIM_ADDR (make sim PROVIDERSIM_ADDR=127.0.0.1:9090),
# PROVIDERSIM_LEDGER and PROVIDERSIM_AUTH_TOKEN pass through (docs/providers.md).
sim:
	go run ./cmd/providersim

# Jaeger (v1.75.0, pinned by internal/tools/jaeger/go.mod), the collector the trace test starts, built
# into the user's cache folder once per machine: the first build takes long (docs/observability.md).
jaeger:
	go test -count=1 -run '^TestBinaryBuilds$$' ./internal/testkit/jaegertest

# go test -count=1 ./..., listing the skipped tests and why at the end. Each package's tests may take
# 30 minutes (go test's default is 10), so that a busy 2-core machine finishes them too.
TEST_TIMEOUT ?= 30m
test:
	go vet ./...
	go run ./cmd/testsummary -count=1 -timeout $(TEST_TIMEOUT) ./...

# The same tests under the race detector, every package (docs/testing.md). -race needs cgo;
# RACE_PKGS='./db ./api' runs some.
RACE_PKGS ?= ./...
test-race:
	CGO_ENABLED=1 go run ./cmd/testsummary -race -count=1 -timeout $(TEST_TIMEOUT) $(RACE_PKGS)

build:
	CGO_ENABLED=0 go build $(BUILD_FLAGS) -o bin/oncecall ./cmd/oncecall
	CGO_ENABLED=0 go build $(BUILD_FLAGS) -o bin/providersim ./cmd/providersim

generate:
	$(SQLC) generate
	$(OAPI_CODEGEN) -config oapi-codegen.yaml openapi.yaml

# Fails when generated code is stale.
check-generated: generate
	git diff --exit-code -- db/dbsqlc apiclient
	@test -z "$$(git status --porcelain -- db/dbsqlc apiclient)" || (echo "generated code is not committed" && exit 1)

vet:
	go vet ./...

# The TypeScript client (clients/ts) and Redocly CLI need Node.js 20+ and npm;
# their versions are pinned in clients/ts/package-lock.json.
ts-deps:
	@test -d clients/ts/node_modules || (cd clients/ts && npm ci --no-audit --no-fund)

# Regenerates clients/ts/schema.d.ts from openapi.yaml; a test fails when it is stale.
generate-ts: ts-deps
	cd clients/ts && npm run --silent generate

# Lints openapi.yaml with Redocly's recommended rules (.redocly.lint-ignore.yaml says what is ignored and why).
lint-openapi: ts-deps
	cd clients/ts && REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true npm run --silent lint

# Regenerates tools/ (the Dasha tool definitions); a test fails when they are stale.
tools:
	rm -f tools/*.json
	go run ./cmd/oncecall tools export --base-url https://oncecall.example.com --out tools

# A PNG of each operator console page under testdata/screenshots/ (shown in docs/console.md), taken by
# the console's browser test in chromium (CI=true: it fails instead of skipping without chromium).
screenshots:
	mkdir -p testdata/screenshots
	ONCECALL_SCREENSHOTS=$(CURDIR)/testdata/screenshots CI=true go test -count=1 -run '^(TestConsoleInABrowser|TestTheFrontDesksFirstDay)$$' ./internal/console

# The load benchmark (a few minutes): see docs/performance.md. It builds
# and starts oncecall serve itself. BENCH_FLAGS adds flags, e.g.
# BENCH_FLAGS='--json bench.json' or '--server inprocess --cpuprofile prof'.
BENCH_FLAGS ?=
bench:
	go run ./cmd/bench $(BENCH_FLAGS)

bench-short:
	go run ./cmd/bench --duration 2s --rounds 2 --preload 100000 $(BENCH_FLAGS)

# first, prune and grown on a database of 10 million preloaded actions (the preload
# takes most of the time): docs/performance.md#a-large-database.
bench-large:
	go run ./cmd/bench --scenarios first,prune,grown --rounds 3 --duration 2s --preload 10000000 $(BENCH_FLAGS)

# Each fuzz target for FUZZTIME; `go test` (make test) replays their seeds.
FUZZTIME ?= 30s
fuzz:
	go test -run '^$$' -fuzz '^FuzzCanonical$$' -fuzztime $(FUZZTIME) ./internal/canon
	go test -run '^$$' -fuzz '^FuzzEncoder$$' -fuzztime $(FUZZTIME) ./internal/canon
	go test -run '^$$' -fuzz '^FuzzValidateKey$$' -fuzztime $(FUZZTIME) ./internal/idem
	go test -run '^$$' -fuzz '^FuzzPrepare$$' -fuzztime $(FUZZTIME) ./internal/app
	go test -run '^$$' -fuzz '^FuzzDecodePayload$$' -fuzztime $(FUZZTIME) ./api
	go test -run '^$$' -fuzz '^FuzzAppendRawJSON$$' -fuzztime $(FUZZTIME) ./api
	go test -run '^$$' -fuzz '^FuzzPhonePattern$$' -fuzztime $(FUZZTIME) ./internal/op

# Three replicas, a faulty provider, kills and a database restart, then the
# audit; exits non-zero on a duplicate, lost or falsely confirmed action.
DURATION ?= 60s
chaos:
	go run ./cmd/chaos --duration $(DURATION)

# The chaos run with payments through the Stripe adapter and SMS through the Twilio adapter,
# against the simulator's Stripe and Twilio modes, and bookings of three more tenants in their
# own calendars through the Google Calendar, Microsoft 365 and Cal.com adapters, against the
# calendar fakes (cmd/calendarsim).
chaos-providers:
	go run ./cmd/chaos --stripe --twilio --calendars --duration $(DURATION)

# oncecall on a Patroni cluster (etcd, three PostgreSQL nodes, synchronous
# strict mode): leader crashes, a switchover and an etcd pause, then the
# audit (docs/high-availability.md). Installs patroni and etcd-server with
# apt-get when they are missing and it can.
chaos-failover:
	@command -v patroni >/dev/null && command -v etcd >/dev/null || \
		{ command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && \
		  { apt-get install -y -q patroni etcd-server >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q patroni etcd-server >/dev/null; }; }; } || \
		{ echo "chaos-failover needs patroni and etcd on PATH (Debian: apt-get install patroni etcd-server)" >&2; exit 1; }
	go run ./cmd/chaos --failover --duration $(DURATION)

# Whole calls on Dasha, Vapi, Retell and ElevenLabs, played by simulated models under the same
# kills and faults, then the audit of every answer's claim (docs/chaos.md#whole-calls-make-chaos-calls):
# CALLS calls, SEED for the world and the scripts (0: from the clock; a history replays with --only),
# DURATION to start no call after it.
CALLS ?= 2000
SEED ?= 0
chaos-calls:
	go run ./cmd/chaos --calls $(CALLS) --seed $(SEED) $(if $(filter command line environment,$(origin DURATION)),--duration $(DURATION))

# Lists every target, one line each (a test keeps the list whole).
.PHONY: help
help:
	@echo 'make run             build bin/oncecall and start it with an embedded PostgreSQL and demo data'
	@echo 'make sim             run the provider simulator (PROVIDERSIM_ADDR=HOST:PORT for another address)'
	@echo 'make test            go vet and every test (real PostgreSQL; README says what else they use), then the skipped ones'
	@echo 'make test-race       the tests of every package under the race detector (RACE_PKGS narrows it)'
	@echo 'make build           build the release binaries bin/oncecall and bin/providersim'
	@echo 'make jaeger          build the Jaeger collector the trace test runs (once per machine)'
	@echo 'make generate        regenerate db/dbsqlc (pinned sqlc) and the Go client apiclient/'
	@echo 'make check-generated fail when generated Go code is stale or not committed'
	@echo 'make vet             go vet ./...'
	@echo 'make ts-deps         install the pinned npm packages of clients/ts (Node.js 20+)'
	@echo 'make generate-ts     regenerate the TypeScript client schema clients/ts/schema.d.ts'
	@echo 'make lint-openapi    lint openapi.yaml with Redocly'
	@echo 'make tools           regenerate the Dasha tool definitions in tools/'
	@echo 'make bench           the load benchmark, a few minutes (BENCH_FLAGS adds flags)'
	@echo 'make bench-short     a short load benchmark'
	@echo 'make bench-large     first, prune and grown at 10 million preloaded actions'
	@echo 'make fuzz            each fuzz target for FUZZTIME (default 30s)'
	@echo 'make chaos           replicas, faults, kills and a database restart for DURATION, then the audit'
	@echo 'make chaos-providers the chaos run with payments through Stripe, SMS through Twilio and bookings in Google Calendar, Microsoft 365 and Cal.com (simulated; DURATION)'
	@echo 'make chaos-failover  oncecall on a Patroni cluster through leader crashes, a switchover and an etcd pause (DURATION)'
	@echo 'make chaos-calls     CALLS whole calls on the four voice platforms under kills and faults, then the audit of speech (SEED)'
	@echo 'make screenshots     a PNG of each operator console page under testdata/screenshots/ (chromium)'
	@echo 'make help            this list'
