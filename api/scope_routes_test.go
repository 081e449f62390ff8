package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/api"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/metrics"
)

// Every /v1 route but the Dasha webhooks (and the routes that take no API
// key: the voice platforms', operators', calendar notifications) refuses a dasha-scoped key with
// 403 FORBIDDEN, and openapi.yaml documents that 403 on each of them (the
// Contract fails an answer whose status the operation does not list). The
// routes are walked from the router, so a new route is covered too.
func TestDashaKeyIsRefusedOnEveryOtherRoute(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	dashaKey, err := d.Store.AddScopedAPIKey(t.Context(), d.tenant, oncecall.ScopeDasha)
	if err != nil {
		t.Fatal(err)
	}
	router := api.NewRouter(api.Config{
		Ops: app.Operations(), Metrics: metrics.New(metrics.Config{}), OperatorToken: "walk",
	}).(chi.Routes)
	walked := 0
	err = chi.Walk(router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(route, "/v1/") || strings.HasPrefix(route, "/v1/dasha/") || strings.HasPrefix(route, "/v1/ops/") ||
			strings.HasPrefix(route, "/v1/vapi/") || strings.HasPrefix(route, "/v1/retell/") || strings.HasPrefix(route, "/v1/elevenlabs/") ||
			strings.HasPrefix(route, "/v1/calendar-notifications/") { // no API key: verified by the connection's secret
			return nil
		}
		walked++
		path := route
		for strings.Contains(path, "{") {
			i, j := strings.Index(path, "{"), strings.Index(path, "}")
			path = path[:i] + uuid.NewString() + path[j+1:]
		}
		var body any
		var headers []string
		if method != http.MethodGet {
			body, headers = map[string]any{}, []string{"Idempotency-Key", "scoped-" + uuid.NewString()}
		}
		r := d.Request(method, path, dashaKey, body, headers...)
		if r.Status != http.StatusForbidden || r.JSON(t)["code"] != "FORBIDDEN" {
			t.Errorf("%s %s with a dasha key: %d %s, want 403 FORBIDDEN", method, route, r.Status, r.Body)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if walked < 20 {
		t.Fatalf("walked only %d routes", walked)
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("refused requests claimed %d actions", n)
	}
}
