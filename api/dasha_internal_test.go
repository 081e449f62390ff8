package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/oncecall/oncecall/internal/fault"
)

// A failure whose transaction rolled back claimed nothing: Dasha must retry
// it (503), never hear 500-as-final or a 4xx.
func TestDashaErrorRetriesWhatClaimedNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		status int
	}{
		{fmt.Errorf("complete action: %w", errors.New("boom")), http.StatusServiceUnavailable},
		{fault.New(fault.Unavailable, "down"), http.StatusServiceUnavailable},
		{fault.New(fault.Forbidden, "org"), http.StatusForbidden},
		{fault.Field("type", "must be ToolWebHookPayload"), http.StatusBadRequest},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		writeError(w, httptest.NewRequest(http.MethodPost, "/v1/dasha/tools", nil), dashaError(c.err))
		if w.Code != c.status {
			t.Errorf("%v: %d, want %d", c.err, w.Code, c.status)
		}
		if c.status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
			t.Errorf("%v: 503 without Retry-After", c.err)
		}
	}
	if err := dashaError(context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled request became %v", err)
	}
}
