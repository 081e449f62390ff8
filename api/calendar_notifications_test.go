package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider/calendars"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// A Cal.com webhook signed with the connection's notification secret is
// taken (202); a forged one is 401, an unknown connection 404.
func TestCalendarNotificationIsVerified(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t, func(c *app.Config) {
		c.Calendars = calendars.Config{Secrets: calendars.Secrets{Getenv: func(k string) string {
			return map[string]string{"NOTIFY": "n-secret", "KEY": "k"}[k]
		}}}
	})
	tenant, _ := e.Tenant("clinic")
	conn, err := e.Store.ConnectCalendar(t.Context(), oncecall.CalendarConnection{
		TenantID: tenant.ID, Provider: oncecall.CalendarCalcom, Credentials: "env:KEY",
		Settings: map[string]string{calendars.SettingNotificationSecret: "env:NOTIFY"},
	}, []oncecall.CalendarMapping{{CalendarID: "4242"}})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"triggerEvent":"BOOKING_CREATED","createdAt":"2030-01-01T00:00:00.000Z","payload":{"eventTypeId":4242}}`
	path := calendars.NotificationPath(conn)
	if r := e.Request(http.MethodPost, path, "", body, calendars.CalcomSignature, calendars.CalcomSign("n-secret", []byte(body))); r.Status != http.StatusAccepted || r.JSON(t)["calendars"] != float64(1) {
		t.Fatalf("a signed webhook: %d %s; want 202 for one calendar", r.Status, r.Body)
	}
	if r := e.Request(http.MethodPost, path, "", body, calendars.CalcomSignature, calendars.CalcomSign("forged", []byte(body))); r.Status != http.StatusUnauthorized {
		t.Fatalf("a forged webhook: %d %s; want 401", r.Status, r.Body)
	}
	if r := e.Request(http.MethodPost, "/v1/calendar-notifications/google/"+conn.ID.String(), "", body); r.Status != http.StatusNotFound {
		t.Fatalf("another provider's path: %d %s; want 404", r.Status, r.Body)
	}
}

// Graph's validation request is answered with its token alone, as plain
// text a browser is told not to read as anything else.
func TestGraphValidationEchoIsPlainText(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t, func(c *app.Config) {
		c.Calendars = calendars.Config{Secrets: calendars.Secrets{Getenv: func(k string) string {
			return map[string]string{"NOTIFY": "n-secret", "KEY": "k"}[k]
		}}}
	})
	tenant, _ := e.Tenant("clinic")
	conn, err := e.Store.ConnectCalendar(t.Context(), oncecall.CalendarConnection{
		TenantID: tenant.ID, Provider: oncecall.CalendarMicrosoft, Credentials: "env:KEY",
		Settings: map[string]string{calendars.SettingNotificationSecret: "env:NOTIFY"},
	}, []oncecall.CalendarMapping{{CalendarID: "dr-ortiz@clinic.example"}})
	if err != nil {
		t.Fatal(err)
	}
	token := "<script>alert(1)</script>"
	r := e.Request(http.MethodPost, calendars.NotificationPath(conn)+"?validationToken="+url.QueryEscape(token), "", nil)
	if r.Status != http.StatusOK || string(r.Body) != token {
		t.Fatalf("validation: %d %q; want 200 and the token", r.Status, r.Body)
	}
	if ct, sniff := r.Header.Get("Content-Type"), r.Header.Get("X-Content-Type-Options"); !strings.HasPrefix(ct, "text/plain") || sniff != "nosniff" {
		t.Fatalf("validation answered as %q with X-Content-Type-Options %q; want text/plain and nosniff", ct, sniff)
	}
}
