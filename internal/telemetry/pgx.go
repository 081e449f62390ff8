package telemetry

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// DB is a pgx tracer (pgx.QueryTracer and pgx.BatchTracer) that makes a
// CLIENT span of each statement by the stable PostgreSQL conventions:
// db.system.name, db.namespace, db.operation.name, db.collection.name for
// a write, and on failure
// db.response.status_code and error.type with the SQLSTATE. The server's
// error message is never recorded: it can quote a value. A statement
// outside a sampled span is not traced. A batch is a span with one child
// per statement. The span is named by sqlc's name for the statement, which
// finds its text in queries/; db.query.text (a recommended attribute) is
// left out to keep every request's spans small: the statements that
// claim a request (ClaimAndBook, ...) are 3 to 6 KB of text each.
type DB struct{}

var (
	_ pgx.QueryTracer = DB{}
	_ pgx.BatchTracer = DB{}
)

func (DB) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	name, attrs := statement(conn, data.SQL)
	ctx, _ = Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx
}

func (DB) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	failed(span, data.Err)
	span.End()
}

// batchKey holds the end of a batch's last statement, the start of the
// next one's span.
type batchKey struct{}

type batchState struct{ last time.Time }

func (DB) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	size := 0
	if data.Batch != nil {
		size = data.Batch.Len()
	}
	attrs := []attribute.KeyValue{semconv.DBSystemNamePostgreSQL, semconv.DBOperationName("BATCH"), semconv.DBOperationBatchSize(size)}
	if conn != nil {
		attrs = append(attrs, semconv.DBNamespace(conn.Config().Database))
	}
	ctx, _ = Tracer().Start(ctx, "BATCH", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, batchKey{}, &batchState{last: time.Now()})
}

func (DB) TraceBatchQuery(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	st, ok := ctx.Value(batchKey{}).(*batchState)
	if !ok || !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	// pgx reports a batch's statement when its result is read: its span
	// runs from the previous one's end.
	name, attrs := statement(conn, data.SQL)
	_, span := Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...),
		trace.WithTimestamp(st.last))
	failed(span, data.Err)
	st.last = time.Now()
	span.End(trace.WithTimestamp(st.last))
}

func (DB) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	failed(span, data.Err)
	span.End()
}

// failed records a statement's failure: the SQLSTATE when the server
// answered one, else the error's class.
func failed(span trace.Span, err error) {
	if err == nil || errors.Is(err, pgx.ErrNoRows) {
		return
	}
	errType := "_OTHER"
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		errType = pgErr.Code
		span.SetAttributes(semconv.DBResponseStatusCode(pgErr.Code))
	case errors.Is(err, context.DeadlineExceeded):
		errType = "timeout"
	case errors.Is(err, context.Canceled):
		errType = "canceled"
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(errType))
	span.SetStatus(codes.Error, errType)
}

// statement names a statement's span and gives its attributes: sqlc's
// name for it ("-- name: ClaimAndBook :one") when it has one, else its
// operation and the table it writes ("INSERT actions").
func statement(conn *pgx.Conn, sql string) (string, []attribute.KeyValue) {
	name, text := "", strings.TrimSpace(sql)
	if rest, ok := strings.CutPrefix(text, "-- name: "); ok {
		line, body, _ := strings.Cut(rest, "\n")
		name, _, _ = strings.Cut(line, " ")
		text = strings.TrimSpace(body)
	}
	op, target := summary(text)
	if name == "" {
		name = strings.TrimSpace(op + " " + target)
	}
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, semconv.DBSystemNamePostgreSQL, semconv.DBOperationName(op))
	if target != "" {
		attrs = append(attrs, semconv.DBCollectionName(target))
	}
	if conn != nil {
		attrs = append(attrs, semconv.DBNamespace(conn.Config().Database))
	}
	return name, attrs
}

// summary is a statement's operation (its first word) and, for a write,
// its table.
func summary(sql string) (op, target string) {
	words := strings.Fields(sql[:min(len(sql), 200)])
	if len(words) == 0 {
		return "", ""
	}
	op = strings.ToUpper(words[0])
	after := ""
	switch op {
	case "INSERT", "DELETE":
		after = map[string]string{"INSERT": "INTO", "DELETE": "FROM"}[op]
	case "UPDATE":
		if len(words) > 1 {
			target = words[1]
		}
	}
	for i, w := range words {
		if after != "" && strings.EqualFold(w, after) && i+1 < len(words) {
			target = words[i+1]
			break
		}
	}
	return op, strings.Trim(target, `"(`)
}
