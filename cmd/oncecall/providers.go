package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendars"
	"github.com/oncecall/oncecall/internal/provider/stripeprovider"
	"github.com/oncecall/oncecall/internal/provider/twilioprovider"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/reconcile"
)

// providersFromEnv builds the remote providers from ONCECALL_PROVIDER_<CAP>_*
// variables; a capability without a URL stays local.
func providersFromEnv(getenv func(string) string) (provider.Set, error) {
	set := provider.Set{}
	for _, capability := range provider.Capabilities {
		prefix := "ONCECALL_PROVIDER_" + strings.ToUpper(capability) + "_"
		url := getenv(prefix + "URL")
		if kind := getenv(strings.TrimSuffix(prefix, "_")); kind != "" && kind != "http" {
			p, err := namedProvider(getenv, capability, kind, prefix)
			if err != nil {
				return nil, err
			}
			set[capability] = p
			if capability == provider.Payments {
				// The Stripe adapter also holds at approval time and
				// makes payment links.
				set[provider.Holds], set[provider.Links] = p, p
			}
			continue
		}
		if url == "" {
			continue
		}
		cfg := provider.HTTPConfig{BaseURL: url, Token: getenv(prefix + "TOKEN"), Timeout: 5 * time.Second,
			Traits: provider.Traits{HonoursKeys: true, KeyRetention: 24 * time.Hour, AuthoritativeLookup: true}}
		var err error
		if cfg.Timeout, err = durationVar(getenv, prefix+"TIMEOUT", cfg.Timeout); err != nil {
			return nil, err
		}
		if cfg.Traits.KeyRetention, err = durationVar(getenv, prefix+"KEY_RETENTION", cfg.Traits.KeyRetention); err != nil {
			return nil, err
		}
		if cfg.Traits.VisibilityDelay, err = durationVar(getenv, prefix+"VISIBILITY_DELAY", 0); err != nil {
			return nil, err
		}
		if cfg.Traits.HonoursKeys, err = boolVar(getenv, prefix+"HONOURS_KEYS", true); err != nil {
			return nil, err
		}
		if cfg.Traits.AuthoritativeLookup, err = boolVar(getenv, prefix+"AUTHORITATIVE_LOOKUP", true); err != nil {
			return nil, err
		}
		set[capability] = provider.NewHTTP(cfg)
	}
	return set, nil
}

// namedProvider builds the adapter named by ONCECALL_PROVIDER_<CAP> (stripe
// for payments); its ONCECALL_PROVIDER_<CAP>_URL overrides the provider's
// API base.
func namedProvider(getenv func(string) string, capability, kind, prefix string) (provider.Provider, error) {
	if capability == provider.Messaging && kind == "twilio" {
		return twilioFromEnv(getenv, prefix)
	}
	if capability != provider.Payments || kind != "stripe" {
		return nil, fmt.Errorf("%s=%q is not a provider: use http (the JSON protocol), for payments stripe, for messaging twilio", strings.TrimSuffix(prefix, "_"), kind)
	}
	timeout, err := durationVar(getenv, prefix+"TIMEOUT", stripeprovider.DefaultTimeout)
	if err != nil {
		return nil, err
	}
	delay, err := durationVar(getenv, prefix+"VISIBILITY_DELAY", stripeprovider.SearchDelay)
	if err != nil {
		return nil, err
	}
	return stripeprovider.New(stripeprovider.Config{
		SecretKey: getenv("STRIPE_SECRET_KEY"), BaseURL: getenv(prefix + "URL"), Account: getenv("STRIPE_ACCOUNT"),
		LinkReturnURL: getenv("STRIPE_PAYMENT_LINK_RETURN_URL"),
		Timeout:       timeout, SearchDelay: delay,
	})
}

// twilioFromEnv builds the Twilio messaging adapter: TWILIO_ACCOUNT_SID,
// TWILIO_AUTH_TOKEN, a sender (TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID,
// one for the whole process), ONCECALL_PUBLIC_URL for status callbacks,
// and ONCECALL_PROVIDER_MESSAGING_URL overriding Twilio's API base.
func twilioFromEnv(getenv func(string) string, prefix string) (provider.Provider, error) {
	timeout, err := durationVar(getenv, prefix+"TIMEOUT", twilioprovider.DefaultTimeout)
	if err != nil {
		return nil, err
	}
	delay, err := durationVar(getenv, prefix+"VISIBILITY_DELAY", twilioprovider.DefaultVisibilityDelay)
	if err != nil {
		return nil, err
	}
	return twilioprovider.New(twilioprovider.Config{
		AccountSID: getenv("TWILIO_ACCOUNT_SID"), AuthToken: getenv("TWILIO_AUTH_TOKEN"),
		From: getenv("TWILIO_FROM"), MessagingServiceSID: getenv("TWILIO_MESSAGING_SERVICE_SID"),
		BaseURL: getenv(prefix + "URL"), PublicURL: getenv("ONCECALL_PUBLIC_URL"), Timeout: timeout, VisibilityDelay: delay,
	})
}

// twilioStatusToken is the auth token that verifies Twilio's status
// callbacks, when messaging goes through Twilio.
func twilioStatusToken(getenv func(string) string) string {
	if getenv("ONCECALL_PROVIDER_MESSAGING") != "twilio" {
		return ""
	}
	return getenv("TWILIO_AUTH_TOKEN")
}

// calendarsConfig reads how this server reaches the tenants' own calendars
// (their connections are in the database; their secrets in this server's
// files and environment).
func calendarsConfig(getenv func(string) string) (calendars.Config, error) {
	var c calendars.Config
	var err error
	if c.Tuning.Timeout, err = durationVar(getenv, "ONCECALL_CALENDAR_TIMEOUT", 0); err != nil {
		return c, err
	}
	if c.Tuning.VisibilityDelay, err = durationVar(getenv, "ONCECALL_CALENDAR_VISIBILITY_DELAY", 0); err != nil {
		return c, err
	}
	if c.ReadTTL, err = durationVar(getenv, "ONCECALL_CALENDAR_READ_TTL", calendars.DefaultReadTTL); err != nil {
		return c, err
	}
	return c, nil
}

// stepConfig reads how unresolved remote steps are re-checked.
func stepConfig() (step.Config, error) {
	var c step.Config
	var err error
	if c.Backoff, err = durationVar(envLookup, "ONCECALL_STEP_BACKOFF", time.Second); err != nil {
		return c, err
	}
	if c.MaxBackoff, err = durationVar(envLookup, "ONCECALL_STEP_MAX_BACKOFF", time.Minute); err != nil {
		return c, err
	}
	return c, nil
}

func reconcileConfig() (reconcile.Config, error) {
	var c reconcile.Config
	var err error
	if c.Interval, err = durationVar(envLookup, "ONCECALL_RECONCILE_INTERVAL", 2*time.Second); err != nil {
		return c, err
	}
	if c.Lease, err = durationVar(envLookup, "ONCECALL_RECONCILE_LEASE", time.Minute); err != nil {
		return c, err
	}
	if c.HoldWarning, err = durationVar(envLookup, "ONCECALL_HOLD_WARNING", 24*time.Hour); err != nil {
		return c, err
	}
	return c, nil
}

func envLookup(name string) string { return env(name, "") }

func durationVar(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q is not a duration such as 5s or 24h", name, v)
	}
	return d, nil
}

func boolVar(getenv func(string) string, name string, def bool) (bool, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q must be true or false", name, v)
	}
	return b, nil
}
