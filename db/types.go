package db

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/internal/telemetry"
)

// Configure prepares a pool for the store: ids are sent to PostgreSQL as
// 16 binary bytes instead of through uuid.UUID's text Valuer, which would
// format every id as a string for the server to parse back, and read back
// the same way instead of through its text Scanner; jsonb read into a
// json.RawMessage (an action's request, a stored answer) is kept as
// PostgreSQL sent it instead of being parsed again by json.Unmarshal
// (jsonb is valid JSON by construction). It also installs
// WatchReplication, and, unless cfg has a tracer of its own, the tracer
// that makes a span of each statement of a traced request (telemetry.DB).
func Configure(cfg *pgxpool.Config) {
	WatchReplication(cfg)
	if cfg.ConnConfig.Tracer == nil {
		cfg.ConnConfig.Tracer = telemetry.DB{}
	}
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		RegisterTypes(conn.TypeMap())
		if after != nil {
			return after(ctx, conn)
		}
		return nil
	}
}

// RegisterTypes installs Configure's encoding of uuid.UUID and its
// scanning of uuid, jsonb and an action's other columns into m.
func RegisterTypes(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapUUID}, m.TryWrapEncodePlanFuncs...)
	m.RegisterType(&pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}})
	m.RegisterType(&pgtype.Type{Name: "jsonb", OID: pgtype.JSONBOID, Codec: jsonbCodec{&pgtype.JSONBCodec{Marshal: json.Marshal, Unmarshal: unmarshalJSON}}})
	m.RegisterType(&pgtype.Type{Name: "text", OID: pgtype.TextOID, Codec: textCodec{}})
	m.RegisterType(&pgtype.Type{Name: "varchar", OID: pgtype.VarcharOID, Codec: textCodec{}})
	m.RegisterType(&pgtype.Type{Name: "int4", OID: pgtype.Int4OID, Codec: int4Codec{}})
	m.RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID, Codec: timestamptzCodec{&pgtype.TimestamptzCodec{}}})
}

func tryWrapUUID(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if u, ok := value.(uuid.UUID); ok {
		return &uuidEncodePlan{}, pgtype.UUID{Bytes: u, Valid: true}, true
	}
	return nil, nil, false
}

type uuidEncodePlan struct{ next pgtype.EncodePlan }

func (p *uuidEncodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(pgtype.UUID{Bytes: value.(uuid.UUID), Valid: true}, buf)
}

// uuidCodec is pgx's uuid codec but for a binary uuid read into a
// uuid.UUID, which it copies; pgx would format it as text for
// uuid.UUID.Scan to parse.
type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if format == pgtype.BinaryFormatCode {
		switch target.(type) {
		case *uuid.UUID:
			return uuidScanPlan{}
		case **uuid.UUID:
			return nullScan[uuid.UUID]{readUUID}
		}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return uuidBinaryEncodePlan{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

// uuidBinaryEncodePlan sends a uuid.UUID as its 16 bytes.
type uuidBinaryEncodePlan struct{}

func (uuidBinaryEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	u := value.(uuid.UUID)
	return append(buf, u[:]...), nil
}

type uuidScanPlan struct{}

// Scan reads NULL as the zero id, as uuid.UUID.Scan does.
func (uuidScanPlan) Scan(src []byte, dst any) error {
	u := dst.(*uuid.UUID)
	if src == nil {
		*u = uuid.UUID{}
		return nil
	}
	var err error
	*u, err = readUUID(src)
	return err
}

func readUUID(src []byte) (uuid.UUID, error) {
	var u uuid.UUID
	if len(src) != len(u) {
		return u, fmt.Errorf("a uuid of %d bytes", len(src))
	}
	copy(u[:], src)
	return u, nil
}

// unmarshalJSON is json.Unmarshal but for a json.RawMessage, which gets a
// copy of data (pgx reuses the buffer data is in).
func unmarshalJSON(data []byte, v any) error {
	if raw, ok := v.(*json.RawMessage); ok {
		*raw = append(json.RawMessage(nil), data...)
		return nil
	}
	return json.Unmarshal(data, v)
}
