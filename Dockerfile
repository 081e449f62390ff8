# oncecall's container image: a static binary on a distroless base, run as a
# non-root user. The image needs DATABASE_URL: it never starts an embedded
# PostgreSQL.
#
#   docker build -t oncecall .
#   docker run -p 8080:8080 -e DATABASE_URL=postgres://user:pass@db:5432/oncecall oncecall

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The release build: the same command and flags as `make build`, which CI
# runs (a test keeps the two in step).
# COMMIT is what `oncecall --version` names: docker build --build-arg COMMIT=$(git rev-parse HEAD) .
ARG COMMIT
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.commit=${COMMIT}" -o /out/oncecall ./cmd/oncecall

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/oncecall /oncecall
ENV ONCECALL_ADDR=:8080 \
    ONCECALL_REQUIRE_DATABASE_URL=1
USER nonroot:nonroot
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 CMD ["/oncecall", "healthcheck"]
ENTRYPOINT ["/oncecall", "serve"]
