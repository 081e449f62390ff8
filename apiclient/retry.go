package apiclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Retry is an HttpRequestDoer that retries a request whose answer gives no
// outcome, with exponential backoff, resending it unchanged: a write keeps
// its Idempotency-Key, so oncecall runs it at most once and a retry after a
// lost answer receives the stored one (Idempotent-Replayed: true). Pass it
// to a client with WithHTTPClient.
//
// It retries after a network error (the request may or may not have
// arrived), 409 (another attempt with the key is still running), 429 (over
// the rate limit, nothing claimed) and 502, 503 and 504 (nothing ran, or the
// gateway lost the answer); it waits at least what Retry-After asks, up to
// Max. It never retries another answer: 4xx business answers such as 422
// (rejected, or the key reused with another request) and 400 are final. A
// write without an Idempotency-Key is never retried, since only the key makes
// a resend safe; GET and HEAD are retried as they are.
//
// Create the Idempotency-Key once per intended action, before the first
// attempt, and reuse it when you retry yourself too: a new key is a new
// action.
type Retry struct {
	// Doer sends each attempt; nil means http.DefaultClient.
	Doer HttpRequestDoer
	// Attempts is how many times a request is sent at most; 0 means 5.
	Attempts int
	// Base is the wait before the second attempt, doubled after each
	// further one up to Max; 0 means 200ms and 5s. Each wait is drawn
	// between half and all of it, so clients retrying together spread out.
	Base, Max time.Duration
}

// Do sends req until an answer is final, the attempts are used up or req's
// context ends. Out of attempts, it returns the last answer or error.
func (r *Retry) Do(req *http.Request) (*http.Response, error) {
	doer := r.Doer
	if doer == nil {
		doer = http.DefaultClient
	}
	attempts, wait, maxWait := r.Attempts, r.Base, r.Max
	if attempts <= 0 {
		attempts = 5
	}
	if wait <= 0 {
		wait = 200 * time.Millisecond
	}
	if maxWait <= 0 {
		maxWait = 5 * time.Second
	}
	if !retriable(req) {
		return doer.Do(req)
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return nil, errors.New("apiclient.Retry: the request body cannot be sent again (no GetBody)")
	}
	for attempt := 1; ; attempt++ {
		try := req
		if attempt > 1 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("apiclient.Retry: %w", err)
			}
			try = req.Clone(req.Context())
			try.Body = body
		}
		resp, err := doer.Do(try)
		if attempt == attempts || !again(resp, err) || req.Context().Err() != nil {
			return resp, err
		}
		d := wait/2 + rand.N(wait/2+1)
		if resp != nil {
			d = max(d, min(retryAfter(resp), maxWait))
			// Read the answer so the connection can be reused, then drop it.
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) //nolint:errcheck
			resp.Body.Close()
		}
		if err := sleep(req.Context(), d); err != nil {
			return nil, err
		}
		wait = min(2*wait, maxWait)
	}
}

// retriable: a read, or a write that carries an Idempotency-Key.
func retriable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		return true
	}
	return req.Header.Get("Idempotency-Key") != ""
}

// again says whether an answer (or its absence) leaves the outcome open.
func again(resp *http.Response, err error) bool {
	if err != nil {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	switch resp.StatusCode {
	case http.StatusConflict, http.StatusTooManyRequests,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryAfter is the answer's Retry-After in seconds, 0 when absent.
func retryAfter(resp *http.Response) time.Duration {
	s, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
