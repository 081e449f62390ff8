package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/oncecall/oncecall/internal/fault"
)

// bodyFirst reads a request's whole body before the request goes on to
// take one of its tenant's places in the gate (shareDB): a client that
// trickles its body then holds only its own connection, never a share of
// its tenant's database requests, which every other call of the tenant
// would wait for and be refused with 503. The read is bounded by
// BodyReadTimeout (and by a Dasha call's budget, when earlier): a body
// that has not arrived by then is answered 400 and its connection closed,
// with nothing claimed.
func (s *Server) bodyFirst(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		deadline := time.Now().Add(s.cfg.BodyReadTimeout)
		if d, ok := r.Context().Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		rc := http.NewResponseController(w)
		// Fails only on a writer that cannot set deadlines (a test
		// recorder); the server's ReadTimeout still bounds the read then.
		_ = rc.SetReadDeadline(deadline)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge):
				err = fault.New(fault.PayloadTooLarge, "the request body exceeds %d bytes", tooLarge.Limit)
			case errors.Is(err, os.ErrDeadlineExceeded):
				err = fault.Wrap(fault.InvalidJSON, err, "the request body did not arrive in time; nothing was stored for this request")
			default:
				err = fault.Wrap(fault.InvalidJSON, err, "the request body could not be read")
			}
			w.Header().Set("Connection", "close")
			writeError(w, r, err)
			return
		}
		// The body is read: the next request on this connection gets the
		// server's own read deadlines.
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = &heldBody{Reader: bytes.NewReader(body), whole: body}
		next.ServeHTTP(w, r)
	})
}

// heldBody is a request body bodyFirst has read whole: readRaw takes its
// bytes as they are instead of reading them into a copy.
type heldBody struct {
	*bytes.Reader
	whole []byte
}

func (*heldBody) Close() error { return nil }

// take returns the whole body and leaves the reader at its end, as reading
// it would; ok is false when some of it was read already.
func (h *heldBody) take() (body []byte, ok bool) {
	if h.Len() != len(h.whole) {
		return nil, false
	}
	h.Reset(nil)
	return h.whole, true
}
