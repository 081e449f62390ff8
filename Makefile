# oncecall: `make run` starts it, `make test` proves it.

SQLC_VERSION := v1.31.1
SQLC := go run github.com/sqlc-dev/sqlc/cmd/sqlc@$(SQLC_VERSION)
# The flags the Dockerfile builds with; CI builds the same way.
BUILD_FLAGS := -trimpath -ldflags="-s -w"

.PHONY: run sim test build generate check-generated vet tools chaos

run:
	go run ./cmd/oncecall serve

sim:
	go run ./cmd/providersim

test:
	go vet ./...
	go test -count=1 ./...

build:
	CGO_ENABLED=0 go build $(BUILD_FLAGS) -o bin/oncecall ./cmd/oncecall
	CGO_ENABLED=0 go build $(BUILD_FLAGS) -o bin/providersim ./cmd/providersim

generate:
	$(SQLC) generate

# Fails when generated code is stale.
check-generated: generate
	git diff --exit-code -- db/dbsqlc
	@test -z "$$(git status --porcelain -- db/dbsqlc)" || (echo "generated code is not committed" && exit 1)

vet:
	go vet ./...

# Regenerates tools/ (the Dasha tool definitions); a test fails when they are stale.
tools:
	rm -f tools/*.json
	go run ./cmd/oncecall tools export --base-url https://oncecall.example.com --out tools

# Three replicas, a faulty provider, kills and a database restart, then the
# audit; exits non-zero on a duplicate, lost or falsely confirmed action.
DURATION ?= 60s
chaos:
	go run ./cmd/chaos --duration $(DURATION)
