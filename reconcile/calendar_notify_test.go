package reconcile_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider/calendars"
	"github.com/oncecall/oncecall/internal/sim/simkit"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// notifySecretEnv holds the connections' notification secret on the
// servers of these tests.
const notifySecretEnv = "CALENDAR_NOTIFY_SECRET"

// notified is oncecall in this process whose reads of calendars are
// reused for an hour: only a change notification makes it read a calendar
// again sooner.
func notified(t *testing.T, f calendarFake, secret string) (*apptest.Env, calendars.Secrets) {
	t.Helper()
	secrets := calendars.Secrets{Getenv: func(k string) string {
		return map[string]string{f.secretEnv: f.secret, notifySecretEnv: secret}[k]
	}}
	e := apptest.Start(t, func(c *app.Config) {
		c.Calendars = calendars.Config{
			Secrets: secrets, Tuning: calendars.Tuning{Timeout: 3 * time.Second, VisibilityDelay: time.Second},
			ReadTTL: time.Hour, TenantTTL: 100 * time.Millisecond,
		}
		c.ReconcileDisabled = true
		c.Steps = step.Config{Backoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxChecks: 100}
	})
	return e, secrets
}

// deliveries are the notifications the fake sent and answered, and how
// many are on their way.
func (f calendarFake) deliveries(t *testing.T) ([]simkit.Delivery, int) {
	t.Helper()
	var out struct {
		Notifications []simkit.Delivery `json:"notifications"`
		Sending       int               `json:"sending"`
	}
	f.sim.Call("GET", "/sim/notifications", nil, 200, &out)
	return out.Notifications, out.Sending
}

// forged are notifications of the provider's form that the connection's
// secret does not verify: a wrong token or signature, and none at all.
func forged(name, channel, cal string) []*http.Request {
	post := func(body []byte, header map[string]string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "", bytes.NewReader(body))
		for k, v := range header {
			r.Header.Set(k, v)
		}
		return r
	}
	switch name {
	case oncecall.CalendarGoogle:
		h := map[string]string{calendars.GoogleChannelID: channel, calendars.GoogleResourceState: "exists",
			calendars.GoogleResourceURI: "https://www.googleapis.com/calendar/v3/calendars/" + url.PathEscape(cal) + "/events?alt=json"}
		wrong := maps.Clone(h)
		wrong[calendars.GoogleChannelToken] = "not-the-token"
		return []*http.Request{post(nil, wrong), post(nil, h)}
	case oncecall.CalendarMicrosoft:
		body := func(state string) []byte {
			b, _ := json.Marshal(map[string]any{"value": []map[string]any{{"subscriptionId": channel, "changeType": "updated",
				"clientState": state, "resource": "Users/" + cal + "/Events/x"}}})
			return b
		}
		return []*http.Request{post(body("not-the-client-state"), nil), post(body(""), nil)}
	}
	body := []byte(`{"triggerEvent":"BOOKING_RESCHEDULED","createdAt":"2030-01-01T00:00:00.000Z","payload":{"eventTypeId":` + cal + `}}`)
	return []*http.Request{
		post(body, map[string]string{calendars.CalcomSignature: calendars.CalcomSign("not-the-secret", body)}),
		post(body, map[string]string{calendars.CalcomSignature: "no-secret-provided"}),
	}
}

// A change made in the calendar directly (an event moved there) is heard
// as soon as the provider's notification of it arrived, though reads are
// reused for an hour: the notification (Google watch channel, Graph
// subscription after its validation handshake, Cal.com webhook) drops
// what was read of the calendar. A forged or unsigned notification is
// refused 401 and changes nothing: the appointment is still heard where
// it was read.
func TestCalendarsNotificationOfAChangeIsHeardBeforeTheCacheExpires(t *testing.T) {
	t.Parallel()
	for _, name := range calendarProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startCalendarFake(t, name)
			secret := "notify-" + strings.Repeat(name, 3)
			e, secrets := notified(t, f, secret)
			withNotify := f
			withNotify.settings = maps.Clone(f.settings)
			withNotify.settings[calendars.SettingNotificationSecret] = "env:" + notifySecretEnv
			c := newCalendarClinic(t, e.Store, withNotify, "notify-"+name)
			conn, err := e.Store.CalendarConnection(t.Context(), c.tenant)
			if err != nil {
				t.Fatal(err)
			}
			address := e.URL + calendars.NotificationPath(conn)
			// What `oncecall calendar watch` does.
			watched, err := calendars.New(calendars.Config{Store: e.Store, Secrets: secrets}).Watch(t.Context(), c.tenant, address)
			if err != nil || len(watched) != 1 || watched[0].ID == "" {
				t.Fatalf("watch: %+v %v", watched, err)
			}

			booked := c.tool(t, e.URL, "book_appointment", "call-notify", c.book(0))
			if booked.Outcome != "confirmed" {
				t.Fatalf("booking: %+v", booked)
			}
			// The provider's notifications are late from now on; those of
			// the booking have arrived before the calendar is read.
			f.sim.Call("POST", "/sim/notifications/hold", nil, 204, nil)
			waitFor(t, "the notifications of the booking to arrive", 10*time.Second, func() bool {
				_, sending := f.deliveries(t)
				return sending == 0
			})
			if got := c.listed(t, e.URL); len(got) != 1 || !got[0].StartsAt.Equal(c.starts[0]) {
				t.Fatalf("listed before the move: %+v", got)
			}
			ours := f.ours(t)
			if len(ours) != 1 {
				t.Fatalf("the calendar holds %+v, want one event", ours)
			}

			// Forged notifications arrive before the provider's of the move.
			later := c.starts[0].Add(4 * time.Hour)
			f.move(t, ours[0].ID, later, later.Add(30*time.Minute))
			for i, r := range forged(name, watched[0].ID, f.calendar) {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, address, r.Body)
				req.Header = r.Header
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var problem struct{ Code, Detail string }
				_ = json.NewDecoder(res.Body).Decode(&problem)
				res.Body.Close()
				if res.StatusCode != http.StatusUnauthorized || problem.Code != "UNAUTHORIZED" || !strings.Contains(problem.Detail, "not verified") {
					t.Fatalf("forged notification %d: %d %+v; want 401 UNAUTHORIZED saying it is not verified", i, res.StatusCode, problem)
				}
			}
			if got := c.listed(t, e.URL); len(got) != 1 || !got[0].StartsAt.Equal(c.starts[0]) {
				t.Fatalf("listed after the forged notifications: %+v; want the time read before (they change nothing)", got)
			}

			sent, _ := f.deliveries(t)
			before := len(sent)
			var released struct{ Released int }
			f.sim.Call("POST", "/sim/notifications/release", nil, 200, &released)
			if released.Released == 0 {
				t.Fatal("the fake held no notification of the move")
			}
			waitFor(t, "the provider's notifications to be delivered", 10*time.Second, func() bool {
				sent, sending := f.deliveries(t)
				return sending == 0 && len(sent) >= before+released.Released
			})
			sent, _ = f.deliveries(t)
			for _, d := range sent[before:] {
				if d.Status != http.StatusAccepted {
					t.Fatalf("a notification of the move was answered %+v, want 202", d)
				}
			}
			if got := c.listed(t, e.URL); len(got) != 1 || !got[0].StartsAt.Equal(later) || got[0].ID != booked.ActionID {
				t.Fatalf("listed right after the notification: %+v; want the appointment at %s", got, later)
			}
		})
	}
}
