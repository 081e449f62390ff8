package main

import (
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/stripeprovider"
)

// ONCECALL_PROVIDER_PAYMENTS=stripe serves payments with the Stripe
// adapter; a missing key or an unknown provider stops the start with a
// message naming the setting.
func TestStripePaymentsProviderFromEnv(t *testing.T) {
	t.Parallel()
	envOf := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	set, err := providersFromEnv(envOf("ONCECALL_PROVIDER_PAYMENTS", "stripe", "STRIPE_SECRET_KEY", "sk_test_1",
		"ONCECALL_PROVIDER_PAYMENTS_URL", "http://127.0.0.1:12111", "ONCECALL_PROVIDER_PAYMENTS_TIMEOUT", "3s"))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := set[provider.Payments].(*stripeprovider.Provider)
	if !ok {
		t.Fatalf("payments provider is %T, want the Stripe adapter", set[provider.Payments])
	}
	if tr := p.Traits(); !tr.HonoursKeys || tr.KeyRetention != 24*time.Hour || tr.Timeout != 3*time.Second {
		t.Fatalf("traits %+v", tr)
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"ONCECALL_PROVIDER_PAYMENTS", "stripe"}, "STRIPE_SECRET_KEY"},
		{[]string{"ONCECALL_PROVIDER_CALENDAR", "stripe", "STRIPE_SECRET_KEY", "sk_test_1"}, "ONCECALL_PROVIDER_CALENDAR"},
		{[]string{"ONCECALL_PROVIDER_PAYMENTS", "paypal"}, "ONCECALL_PROVIDER_PAYMENTS"},
		{[]string{"ONCECALL_PROVIDER_PAYMENTS", "stripe", "STRIPE_SECRET_KEY", "sk", "ONCECALL_PROVIDER_PAYMENTS_TIMEOUT", "soon"}, "TIMEOUT"},
	} {
		if _, err := providersFromEnv(envOf(c.env...)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.env, err, c.want)
		}
	}
}
