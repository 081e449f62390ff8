package calendar

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	"golang.org/x/oauth2"

	"github.com/oncecall/oncecall/internal/provider"
)

// tokenError marks a failure to obtain an access token: the request that
// needed it was never sent.
type tokenError struct{ err error }

func (e *tokenError) Error() string { return "get an access token: " + e.err.Error() }
func (e *tokenError) Unwrap() error { return e.err }

type markedTokens struct{ ts oauth2.TokenSource }

func (m markedTokens) Token() (*oauth2.Token, error) {
	t, err := m.ts.Token()
	if err != nil {
		return nil, &tokenError{err: err}
	}
	return t, nil
}

// Tokens wraps a token source so that Transport can tell a request that
// failed for want of a token (never sent) from one lost on the way.
func Tokens(ts oauth2.TokenSource) oauth2.TokenSource { return markedTokens{ts: ts} }

// Transport classifies an error that came back instead of an HTTP answer:
// no token, a refused dial or an unknown host were never sent; anything
// else (a timeout, a connection lost after sending) may have reached the
// provider. Request URLs are dropped from the text: they can name a
// customer's mailbox.
func Transport(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	if _, ok := errors.AsType[*tokenError](err); ok {
		return fmt.Errorf("%w: %w", provider.ErrNotSent, err)
	}
	if opErr, ok := errors.AsType[*net.OpError](err); ok && opErr.Op == "dial" {
		return fmt.Errorf("%w: %w", provider.ErrNotSent, err)
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return fmt.Errorf("%w: %w", provider.ErrNotSent, err)
	}
	return fmt.Errorf("%w: %w", provider.ErrAmbiguous, err)
}

// Refused reports whether an HTTP status says the provider refused the
// request without acting on it: authentication, permission, throttling.
func Refused(status int) bool { return status == 401 || status == 403 || status == 429 }

// Status classifies an HTTP error status of a write the provider answered:
// refused before acting (not sent), a failure that may have acted (5xx,
// 408: ambiguous), or for anything else the given rejection.
func Status(status int, what string, rejection *provider.Rejected) error {
	switch {
	case Refused(status):
		return fmt.Errorf("%w: %s answered %d", provider.ErrNotSent, what, status)
	case status >= 500 || status == 408 || status < 400:
		return fmt.Errorf("%w: %s answered %d", provider.ErrAmbiguous, what, status)
	}
	return rejection
}
