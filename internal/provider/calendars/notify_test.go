package calendars_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider/calendars"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

const notifySecret = "a-notification-secret"

// notifyFixture is a tenant connected to each provider with a
// notification secret, and one connected without.
type notifyFixture struct {
	svc   *calendars.Service
	conns map[string]oncecall.CalendarConnection
	bare  oncecall.CalendarConnection
}

func notifySetup(t testing.TB) notifyFixture {
	t.Helper()
	store := db.New(pgtest.NewPool(t))
	f := notifyFixture{conns: map[string]oncecall.CalendarConnection{}}
	f.svc = calendars.New(calendars.Config{Store: store, Secrets: calendars.Secrets{Getenv: func(k string) string {
		return map[string]string{"NOTIFY": notifySecret, "KEY": "k"}[k]
	}}})
	connect := func(name, provider string, settings map[string]string, cals ...string) oncecall.CalendarConnection {
		tenant, _, err := store.CreateTenant(context.Background(), name+"-"+uuid.NewString()[:8], "")
		if err != nil {
			t.Fatal(err)
		}
		var maps []oncecall.CalendarMapping
		for _, c := range cals {
			maps = append(maps, oncecall.CalendarMapping{CalendarID: c})
		}
		c, err := store.ConnectCalendar(context.Background(), oncecall.CalendarConnection{
			TenantID: tenant.ID, Provider: provider, Credentials: "env:KEY", Settings: settings,
		}, maps[:1])
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	withSecret := func() map[string]string {
		return map[string]string{calendars.SettingNotificationSecret: "env:NOTIFY", calendars.SettingDirectory: "d", calendars.SettingClient: "c"}
	}
	f.conns[oncecall.CalendarGoogle] = connect("google", oncecall.CalendarGoogle, withSecret(), "ruiz@clinic.example")
	f.conns[oncecall.CalendarMicrosoft] = connect("microsoft", oncecall.CalendarMicrosoft, withSecret(), "ruiz@clinic.example")
	f.conns[oncecall.CalendarCalcom] = connect("calcom", oncecall.CalendarCalcom, withSecret(), "4242")
	f.bare = connect("bare", oncecall.CalendarCalcom, nil, "4242")
	return f
}

func (f notifyFixture) notify(provider string, header map[string]string, query string, body string) (calendars.Noticed, error) {
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	q, _ := url.ParseQuery(query)
	return f.svc.Notify(context.Background(), calendars.Notification{
		Provider: provider, Connection: f.conns[provider].ID.String(), Header: h, Query: q, Body: []byte(body),
	})
}

// Each provider's notification is verified with the connection's secret
// and names the calendar whose reads are dropped; anything else is refused
// with the reason, and a connection that takes none, or another
// provider's path, is ErrNoNotifications.
func TestNotificationsAreVerifiedWithTheConnectionsSecret(t *testing.T) {
	t.Parallel()
	f := notifySetup(t)
	google := map[string]string{calendars.GoogleChannelID: "oncecall-1", calendars.GoogleResourceState: "exists",
		calendars.GoogleResourceURI: "https://www.googleapis.com/calendar/v3/calendars/ruiz%40clinic.example/events?alt=json"}
	with := func(h map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for kk, vv := range h {
			if kk != k {
				out[kk] = vv
			}
		}
		return out
	}
	graph := func(state, resource string) string {
		return `{"value":[{"subscriptionId":"s1","changeType":"updated","clientState":"` + state + `","resource":"` + resource + `"}]}`
	}
	cal := `{"triggerEvent":"BOOKING_RESCHEDULED","createdAt":"2030-01-01T00:00:00.000Z","payload":{"eventTypeId":4242,"uid":"u1"}}`
	signed := map[string]string{calendars.CalcomSignature: calendars.CalcomSign(notifySecret, []byte(cal))}
	for _, tc := range []struct {
		name, provider, query, body string
		header                      map[string]string
		want                        error
		calendars                   []string
	}{
		{name: "google", provider: oncecall.CalendarGoogle, header: with(google, calendars.GoogleChannelToken, notifySecret), calendars: []string{"ruiz@clinic.example"}},
		{name: "google sync", provider: oncecall.CalendarGoogle, header: with(with(google, calendars.GoogleChannelToken, notifySecret), calendars.GoogleResourceState, "sync"), calendars: []string{"ruiz@clinic.example"}},
		{name: "google, wrong token", provider: oncecall.CalendarGoogle, header: with(google, calendars.GoogleChannelToken, "nope"), want: calendars.ErrNotVerified},
		{name: "google, no token", provider: oncecall.CalendarGoogle, header: google, want: calendars.ErrNotVerified},
		{name: "google, no channel", provider: oncecall.CalendarGoogle, header: map[string]string{calendars.GoogleChannelToken: notifySecret}, want: calendars.ErrNotVerified},
		{name: "google, bad state", provider: oncecall.CalendarGoogle, header: with(with(google, calendars.GoogleChannelToken, notifySecret), calendars.GoogleResourceState, "x"), want: calendars.ErrBadNotification},
		{name: "graph validation", provider: oncecall.CalendarMicrosoft, query: "validationToken=Validation%3A+abc"},
		{name: "graph", provider: oncecall.CalendarMicrosoft, body: graph(notifySecret, "Users/ruiz@clinic.example/Events/e1"), calendars: []string{"ruiz@clinic.example"}},
		{name: "graph, mailbox by object id", provider: oncecall.CalendarMicrosoft, body: graph(notifySecret, "Users/0f1e2d3c/Events/e1"), calendars: []string{"ruiz@clinic.example"}},
		{name: "graph, wrong clientState", provider: oncecall.CalendarMicrosoft, body: graph("nope", "Users/ruiz@clinic.example/Events/e1"), want: calendars.ErrNotVerified},
		{name: "graph, not JSON", provider: oncecall.CalendarMicrosoft, body: "nope", want: calendars.ErrNotVerified},
		{name: "calcom", provider: oncecall.CalendarCalcom, header: signed, body: cal, calendars: []string{"4242"}},
		{name: "calcom, wrong signature", provider: oncecall.CalendarCalcom, header: map[string]string{calendars.CalcomSignature: calendars.CalcomSign("nope", []byte(cal))}, body: cal, want: calendars.ErrNotVerified},
		{name: "calcom, unsigned", provider: oncecall.CalendarCalcom, header: map[string]string{calendars.CalcomSignature: "no-secret-provided"}, body: cal, want: calendars.ErrNotVerified},
		{name: "calcom, body changed", provider: oncecall.CalendarCalcom, header: signed, body: cal + " ", want: calendars.ErrNotVerified},
		{name: "calcom, signed but unreadable", provider: oncecall.CalendarCalcom, header: map[string]string{calendars.CalcomSignature: calendars.CalcomSign(notifySecret, []byte("{}"))}, body: "{}", want: calendars.ErrBadNotification},
	} {
		got, err := f.notify(tc.provider, tc.header, tc.query, tc.body)
		switch {
		case tc.want != nil:
			if !errors.Is(err, tc.want) || len(got.Calendars) != 0 {
				t.Errorf("%s: %+v %v; want %v", tc.name, got, err, tc.want)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.query != "":
			if got.Echo != "Validation: abc" {
				t.Errorf("%s: echo %q", tc.name, got.Echo)
			}
		case !slices.Equal(got.Calendars, tc.calendars):
			t.Errorf("%s: dropped %v, want %v", tc.name, got.Calendars, tc.calendars)
		}
	}
	for _, n := range []calendars.Notification{
		{Provider: oncecall.CalendarCalcom, Connection: uuid.NewString()},
		{Provider: oncecall.CalendarCalcom, Connection: "not-an-id"},
		{Provider: oncecall.CalendarGoogle, Connection: f.conns[oncecall.CalendarCalcom].ID.String()},
		{Provider: oncecall.CalendarCalcom, Connection: f.bare.ID.String(), Header: http.Header{calendars.CalcomSignature: {calendars.CalcomSign("", []byte(cal))}}, Body: []byte(cal)},
	} {
		if _, err := f.svc.Notify(context.Background(), n); !errors.Is(err, calendars.ErrNoNotifications) {
			t.Errorf("%+v: %v; want ErrNoNotifications", n, err)
		}
	}
}
