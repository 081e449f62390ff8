package main

import (
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/twilioprovider"
)

// ONCECALL_PROVIDER_MESSAGING=twilio sends SMS with the Twilio adapter,
// keyless; missing credentials or sender stop the start with a message
// naming the setting; the status callbacks are verified with the auth
// token only when messaging is Twilio.
func TestTwilioMessagingProviderFromEnv(t *testing.T) {
	t.Parallel()
	envOf := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	full := []string{"ONCECALL_PROVIDER_MESSAGING", "twilio", "TWILIO_ACCOUNT_SID", "ACtest", "TWILIO_AUTH_TOKEN", "token1",
		"TWILIO_FROM", "+15005550006", "ONCECALL_PROVIDER_MESSAGING_URL", "http://127.0.0.1:12112",
		"ONCECALL_PROVIDER_MESSAGING_TIMEOUT", "3s", "ONCECALL_PROVIDER_MESSAGING_VISIBILITY_DELAY", "30s"}
	set, err := providersFromEnv(envOf(full...))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := set[provider.Messaging].(*twilioprovider.Provider)
	if !ok {
		t.Fatalf("messaging provider is %T, want the Twilio adapter", set[provider.Messaging])
	}
	if tr := p.Traits(); tr.HonoursKeys || !tr.AuthoritativeLookup || tr.VisibilityDelay != 30*time.Second || tr.Timeout != 3*time.Second {
		t.Fatalf("traits %+v, want keyless with a 30s visibility delay", tr)
	}
	if got := twilioStatusToken(envOf(full...)); got != "token1" {
		t.Fatalf("status callback token %q, want the auth token", got)
	}
	if got := twilioStatusToken(envOf("TWILIO_AUTH_TOKEN", "token1")); got != "" {
		t.Fatalf("status callbacks served without Twilio messaging (token %q)", got)
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"ONCECALL_PROVIDER_MESSAGING", "twilio", "TWILIO_FROM", "+15005550006"}, "TWILIO_AUTH_TOKEN"},
		{[]string{"ONCECALL_PROVIDER_MESSAGING", "twilio", "TWILIO_ACCOUNT_SID", "ACtest", "TWILIO_AUTH_TOKEN", "t"}, "TWILIO_FROM"},
		{[]string{"ONCECALL_PROVIDER_PAYMENTS", "twilio"}, "ONCECALL_PROVIDER_PAYMENTS"},
	} {
		if _, err := providersFromEnv(envOf(c.env...)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.env, err, c.want)
		}
	}
}
