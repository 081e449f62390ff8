package db

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// pgx plans how to read each column anew for every row it reads. For a
// nullable column read into a pointer (an action's outcome, reason, HTTP
// status, resource, lease and completion times, lease owner, call) and for
// a time.Time it builds that plan from allocated wrappers around its
// generic ones, each time; a returned action has eight such columns and two
// times. The codecs below answer those targets with plans of their own that
// allocate nothing but the value read, for binary results; text results
// (the simple protocol, as behind PgBouncer) and other targets keep pgx's
// plans.

type textCodec struct{ pgtype.TextCodec }

func (c textCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(**string); ok && format == pgtype.BinaryFormatCode {
		return nullScan[string]{readText}
	}
	return c.TextCodec.PlanScan(m, oid, format, target)
}

// readText reads text's binary form: its UTF-8 bytes.
func readText(src []byte) (string, error) { return string(src), nil }

type int4Codec struct{ pgtype.Int4Codec }

func (c int4Codec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(**int32); ok && format == pgtype.BinaryFormatCode {
		return nullScan[int32]{readInt4}
	}
	return c.Int4Codec.PlanScan(m, oid, format, target)
}

func readInt4(src []byte) (int32, error) {
	if len(src) != 4 {
		return 0, fmt.Errorf("an int4 of %d bytes", len(src))
	}
	return int32(binary.BigEndian.Uint32(src)), nil
}

type timestamptzCodec struct{ *pgtype.TimestamptzCodec }

func (c timestamptzCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if format == pgtype.BinaryFormatCode && c.ScanLocation == nil {
		switch target.(type) {
		case *time.Time:
			return timeScan{}
		case **time.Time:
			return nullScan[time.Time]{readTimestamptz}
		}
	}
	return c.TimestamptzCodec.PlanScan(m, oid, format, target)
}

// postgresEpoch is 2000-01-01 00:00:00 UTC in Unix seconds: a binary
// timestamptz counts microseconds from it.
const postgresEpoch = 946684800

// readTimestamptz reads a binary timestamptz as pgx does: in the local
// time zone, and infinity refused.
func readTimestamptz(src []byte) (time.Time, error) {
	if len(src) != 8 {
		return time.Time{}, fmt.Errorf("a timestamptz of %d bytes", len(src))
	}
	us := int64(binary.BigEndian.Uint64(src))
	if us == math.MaxInt64 || us == math.MinInt64 {
		return time.Time{}, errors.New("cannot scan an infinite timestamptz into a time.Time")
	}
	return time.Unix(postgresEpoch+us/1_000_000, us%1_000_000*1000), nil
}

// timeScan reads a timestamptz into a time.Time; NULL is refused, as pgx
// refuses it.
type timeScan struct{}

func (timeScan) Scan(src []byte, dst any) error {
	if src == nil {
		return errors.New("cannot scan NULL into *time.Time")
	}
	t, err := readTimestamptz(src)
	if err != nil {
		return err
	}
	*dst.(*time.Time) = t
	return nil
}

// nullScan reads a nullable column into a *T: nil for NULL, else a new T
// read by read.
type nullScan[T any] struct{ read func([]byte) (T, error) }

func (p nullScan[T]) Scan(src []byte, dst any) error {
	d := dst.(**T)
	if src == nil {
		*d = nil
		return nil
	}
	v, err := p.read(src)
	if err != nil {
		return err
	}
	*d = &v
	return nil
}

type jsonbCodec struct{ *pgtype.JSONBCodec }

func (c jsonbCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*json.RawMessage); ok && format == pgtype.BinaryFormatCode {
		return rawJSONBScan{}
	}
	return c.JSONBCodec.PlanScan(m, oid, format, target)
}

// rawJSONBScan reads a binary jsonb (a version byte, 1, and the text) into
// a json.RawMessage: a copy of the text (unmarshalJSON), nil for NULL.
type rawJSONBScan struct{}

func (rawJSONBScan) Scan(src []byte, dst any) error {
	raw := dst.(*json.RawMessage)
	switch {
	case src == nil:
		*raw = nil
		return nil
	case len(src) == 0:
		return errors.New("jsonb too short")
	case src[0] != 1:
		return fmt.Errorf("unknown jsonb version number %d", src[0])
	}
	return unmarshalJSON(src[1:], raw)
}
