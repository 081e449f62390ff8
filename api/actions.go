package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/wire"
)

// write returns the REST handler of an operation. pathFields name URL
// parameters that become input fields of the same name. The request holds
// one of its tenant's places in the gate (enterDB) only while the core runs
// it: its input is read and checked before, its answer written after, and
// the core gives the place up while it waits for another attempt.
func (s *Server) write(operation string, pathFields ...string) http.HandlerFunc {
	o := s.cfg.Ops.MustGet(operation)
	return traceWrite(o, s.writeOp(o, operation, pathFields))
}

// writeOp is write's handler, without its span.
func (s *Server) writeOp(o op.Operation, operation string, pathFields []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		info := infoFrom(r.Context())
		info.operation = operation
		key, present, err := headerKey(r)
		if err == nil && !present {
			err = fault.New(fault.KeyMissing, "the Idempotency-Key header is required on every write")
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		info.keyHash = idem.KeyHash(key)
		body, err := readBody(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		var path map[string]string
		if len(pathFields) > 0 {
			path = make(map[string]string, len(pathFields))
			for _, f := range pathFields {
				path[f] = chi.URLParam(r, f)
			}
		}
		p, err := o.Prepare(body, path)
		if err != nil {
			writeError(w, r, err)
			return
		}
		seat, ok := s.enterDB(w, r)
		if !ok {
			return
		}
		reply, err := func() (idem.Reply, error) {
			defer seat.Free()
			p, err := s.resolve(r.Context(), tenantFrom(r.Context()), p)
			if err != nil {
				return idem.Reply{}, err
			}
			req, err := s.request(r, p, key, preferWait(r, s.cfg.MaxWait))
			if err != nil {
				return idem.Reply{}, err
			}
			if seat.gated() {
				req.Place = seat
			}
			return s.cfg.Core.Do(r.Context(), req)
		}()
		if err != nil {
			writeError(w, r, err)
			return
		}
		info.actionID, info.outcome, info.replayed = reply.Action.ID.String(), wire.OutcomeOf(reply.Action), reply.Replayed
		writeAction(w, reply.Action, reply.Replayed)
	}
}

// resolve settles a prepared request with the tenant's data (see
// op.Prepared.Resolve): the request the key and the claim are for. A bad
// field is an input error; nothing is claimed.
func (s *Server) resolve(ctx context.Context, tenant oncecall.Tenant, p *op.Prepared) (*op.Prepared, error) {
	settled, err := p.Resolve(ctx, s.cfg.Store, tenant.ID)
	if err != nil && fault.CodeOf(err) == fault.Internal {
		return nil, db.Fault(err)
	}
	return settled, err
}

// request builds the core's request for a prepared operation: local writes
// in the claim's transaction, or remote steps when the operation's
// capability is served by a remote provider.
func (s *Server) request(r *http.Request, p *op.Prepared, key string, wait time.Duration) (idem.Request, error) {
	req := idem.Request{
		TenantID: tenantFrom(r.Context()).ID, Key: key, Operation: p.Operation,
		Fingerprint: p.Fingerprint, Input: p.Input, Wait: wait, Work: p.Work(),
	}
	remote := false
	if p.Capability != "" {
		var err error
		if remote, err = s.remoteFor(r.Context(), req.TenantID, p.Capability); err != nil {
			return idem.Request{}, err
		}
	}
	if remote {
		steps, err := p.Steps(s.cfg.Remote)
		if err != nil {
			return idem.Request{}, fmt.Errorf("plan steps of %s: %w", p.Operation, err)
		}
		req.Steps = steps
		if s.cfg.Calendars != nil && p.Capability == provider.Calendar {
			req.Offer = calendarOffer{s.cfg.Calendars, req.TenantID}
		}
	}
	return req, nil
}

// calendarOffer is what a tenant's calendars show free, read through their
// short cache (idem.Request.Offer): the claim checks oncecall's own holds
// in its transaction, only the calendars are read here.
type calendarOffer struct {
	calendars Calendars
	tenant    uuid.UUID
}

func (o calendarOffer) Offered(ctx context.Context, slots []oncecall.OpenSlot) ([]oncecall.OpenSlot, error) {
	return o.calendars.Free(ctx, o.tenant, slots)
}

// headerKey reads the Idempotency-Key header: exactly one, valid key when
// present.
func headerKey(r *http.Request) (key string, present bool, err error) {
	values, present := r.Header["Idempotency-Key"]
	if !present {
		return "", false, nil
	}
	if len(values) != 1 {
		return "", true, fault.New(fault.KeyInvalid, "send exactly one Idempotency-Key header")
	}
	if err := idem.ValidateKey(values[0]); err != nil {
		return "", true, err
	}
	return values[0], true, nil
}

// readBody reads a JSON request body within the size limit.
func readBody(r *http.Request) ([]byte, error) {
	if err := requireJSON(r); err != nil {
		return nil, err
	}
	return readRaw(r)
}

// readRaw reads a request body within the size limit, whatever its type.
func readRaw(r *http.Request) ([]byte, error) {
	if h, ok := r.Body.(*heldBody); ok {
		if body, ok := h.take(); ok {
			return body, nil
		}
	}
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, fault.New(fault.PayloadTooLarge, "the request body exceeds %d bytes", tooLarge.Limit)
	}
	if err != nil {
		return nil, fault.Wrap(fault.InvalidJSON, err, "the request body could not be read")
	}
	return body, nil
}

// preferWait reads RFC 7240 "Prefer: wait=N", capped at max.
func preferWait(r *http.Request, max time.Duration) time.Duration {
	for _, v := range r.Header.Values("Prefer") {
		for _, pref := range strings.Split(v, ",") {
			name, val, ok := strings.Cut(strings.TrimSpace(pref), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(val), `"`))
			if err != nil || n < 0 {
				continue
			}
			return min(time.Duration(n)*time.Second, max)
		}
	}
	return 0
}

func (s *Server) getAction(w http.ResponseWriter, r *http.Request) {
	getRecord(s, "action_id", "action", func(ctx context.Context, tenant, id uuid.UUID) (Envelope, error) {
		a, err := s.cfg.Store.ActionByID(ctx, tenant, id)
		if err == nil {
			infoFrom(ctx).actionID = a.ID.String()
		}
		if err == nil && a.State == oncecall.Completed {
			// Not an answer a failover could take back (see idem's replay).
			err = s.cfg.Store.Replicated(ctx)
		}
		return envelope(a), err
	})(w, r)
}
