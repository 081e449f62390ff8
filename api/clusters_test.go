package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/api"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// The cluster router finds a request's key where each route family carries
// it, sends the request to the cluster its tenant lives on, answers a
// paused tenant 503 with Retry-After without reaching any cluster, and
// sends everything else to the home cluster.
func TestClusterRouterRoutesByTheKeysTenant(t *testing.T) {
	ctx := t.Context()
	stores := make([]*db.Store, 2)
	for i := range stores {
		pool, err := pgxpool.New(ctx, pgtest.NewDB(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		stores[i] = db.New(pool)
	}
	home, other := stores[0], stores[1]
	_, homeKey, err := home.CreateTenant(ctx, "at home", "")
	if err != nil {
		t.Fatal(err)
	}
	away, awayKey, err := other.CreateTenant(ctx, "away", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := home.Pool().Exec(ctx, `INSERT INTO tenant_directory (tenant_id, cluster) VALUES ($1, 'b')`, away.ID); err != nil {
		t.Fatal(err)
	}
	served := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Cluster", name) })
	}
	// A directory read once per request, so that a pause is seen at once.
	h := api.NewClusterRouter(api.ClustersConfig{
		Clusters:     []api.Cluster{{Store: home, Handler: served("home")}, {Name: "b", Store: other, Handler: served("b")}},
		Directory:    home.Directory,
		DirectoryTTL: time.Nanosecond,
	})
	send := func(path string, headers ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, path, strings.NewReader("{}"))
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, c := range []struct {
		path    string
		headers []string
		want    string
	}{
		{"/v1/appointments", []string{"Authorization", "Bearer " + awayKey}, "b"},
		{"/v1/appointments", []string{"Authorization", "Bearer " + homeKey}, "home"},
		{"/v1/dasha/tools/book_appointment", []string{"Authorization", "Bearer " + awayKey}, "b"},
		{"/v1/vapi/webhook", []string{"X-Vapi-Secret", awayKey}, "b"},
		{"/v1/elevenlabs/tools/book_appointment", []string{"X-Oncecall-Key", awayKey}, "b"},
		{"/v1/appointments", []string{"X-Vapi-Secret", awayKey}, "home"}, // not a header REST reads
		{"/v1/appointments", []string{"Authorization", "Bearer unknown-key"}, "home"},
		{"/v1/appointments", nil, "home"},
		{"/v1/ops/actions", []string{"Authorization", "Bearer " + awayKey}, "home"},
		{"/console/", nil, "home"},
	} {
		if got := send(c.path, c.headers...).Header().Get("X-Cluster"); got != c.want {
			t.Errorf("%s with %v: served by %q, want %q", c.path, c.headers, got, c.want)
		}
	}

	until, _, err := home.PauseTenant(ctx, away.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	w := send("/v1/appointments", "Authorization", "Bearer "+awayKey)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || w.Header().Get("X-Cluster") != "" ||
		!strings.Contains(w.Body.String(), `"code":"SERVICE_UNAVAILABLE"`) {
		t.Errorf("a paused tenant's request: %d, Retry-After %q, cluster %q, %s", w.Code, w.Header().Get("Retry-After"), w.Header().Get("X-Cluster"), w.Body)
	}
	if got := send("/v1/appointments", "Authorization", "Bearer "+homeKey).Header().Get("X-Cluster"); got != "home" {
		t.Errorf("another tenant while one is paused: served by %q", got)
	}
	if err := home.SwitchTenant(ctx, away.ID, until, ""); err != nil {
		t.Fatal(err)
	}
	if got := send("/v1/appointments", "Authorization", "Bearer "+awayKey).Header().Get("X-Cluster"); got != "home" {
		t.Errorf("after the switch home: served by %q", got)
	}
	if _, err := home.Pool().Exec(ctx, `UPDATE tenant_directory SET cluster = 'gone' WHERE tenant_id = $1`, away.ID); err != nil {
		t.Fatal(err)
	}
	if w := send("/v1/appointments", "Authorization", "Bearer "+awayKey); w.Code != http.StatusServiceUnavailable {
		t.Errorf("a tenant on a cluster this server does not know: %d", w.Code)
	}
}
