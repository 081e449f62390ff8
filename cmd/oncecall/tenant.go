package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/schedule"
)

func tenant(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "usage: oncecall tenant create --name NAME [--dasha-org ORG] [--timezone ZONE] [--locale en-US|en-GB] [--scope SCOPE] [--stripe-account ACCT] [--json]\n" +
		"       oncecall tenant update --tenant ID_OR_NAME [--timezone ZONE] [--locale en-US|en-GB] [--caller-confirmation on|off]\n" +
		"       oncecall tenant stripe-account --tenant ID [--account acct_...]   (no --account: clear it)\n" +
		"       oncecall tenant twilio-sender --tenant ID [--from +1... | --messaging-service MG...]   (neither: clear it)\n" +
		"       oncecall tenant move --tenant ID --to CLUSTER [--drain 10s] [--max-pause 1m]   (move it to another PostgreSQL cluster)"
	if helpAsked(args, usage, stdout) {
		return nil
	}
	if len(args) > 0 && args[0] == "stripe-account" {
		return tenantStripeAccount(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "twilio-sender" {
		return tenantTwilioSender(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "move" {
		return tenantMove(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "update" {
		return tenantUpdate(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "create" {
		return errors.New(usage)
	}
	fs := newFlags("tenant create", stderr)
	name := fs.String("name", "", "tenant name (required)")
	org := fs.String("dasha-org", "", "bind the tenant to this Dasha orgId")
	zone := fs.String("timezone", schedule.UTC, "the business's IANA timezone, e.g. Europe/London: weekly hours are read and times spoken to callers in it")
	localeName := fs.String("locale", "", "how times are spoken to callers: en-US (Friday, December 4 at 9:30 AM) or en-GB (Friday 4 December at 09:30); default en-US in a zone of the United States, en-GB elsewhere")
	scopeName := fs.String("scope", string(oncecall.ScopeFull), "the first API key's scope: full (every /v1 route), voice (every voice platform's webhooks), or one platform's webhooks only: dasha, vapi, retell or elevenlabs")
	stripeAccount := fs.String("stripe-account", "", "the tenant's Stripe Connect account (acct_...): its payments are made on it")
	asJSON := fs.Bool("json", false, `print {"tenant_id": ..., "api_key": ..., "timezone": ..., "scope": ...}`)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	scope, err := oncecall.ParseScope(*scopeName)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*name) == "" || len(*name) > 200 {
		return errors.New("--name is required (1 to 200 characters)")
	}
	if _, err := schedule.ParseZone(*zone); err != nil {
		return fmt.Errorf("--timezone: %w", err)
	}
	locale := schedule.DefaultLocale(*zone)
	if *localeName != "" {
		if locale, err = schedule.ParseLocale(*localeName); err != nil {
			return fmt.Errorf("--locale: %w", err)
		}
	}
	if *stripeAccount != "" {
		if err := db.ValidStripeAccount(*stripeAccount); err != nil {
			return fmt.Errorf("--stripe-account: %w", err)
		}
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	t, key, err := store.CreateTenantWith(ctx, db.NewTenant{
		Name: strings.TrimSpace(*name), DashaOrgID: strings.TrimSpace(*org), Timezone: *zone, Locale: locale, Scope: scope,
	})
	if err != nil {
		return fmt.Errorf("create tenant: %w", err)
	}
	if *stripeAccount != "" {
		if err := store.SetTenantStripeAccount(ctx, t.ID, *stripeAccount); err != nil {
			return fmt.Errorf("set the tenant's Stripe account: %w", err)
		}
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]string{
			"tenant_id": t.ID.String(), "api_key": key, "timezone": *zone, "locale": string(locale), "scope": string(scope),
		})
	}
	fmt.Fprintf(stdout, "tenant %s (%s, timezone %s, locale %s) created\nAPI key, scope %s (shown once, store it now): %s\n",
		t.Name, t.ID, *zone, locale, scope, key)
	return nil
}

// tenantUpdate changes how a tenant says its times: its timezone, its
// locale, or both. Both are checked before anything changes; the next
// request reads them.
func tenantUpdate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tenant update", stderr)
	ref := fs.String("tenant", "", "the tenant: its id, or its name (the oldest tenant of that name) (required)")
	zone := fs.String("timezone", "", "the business's IANA timezone, e.g. America/Chicago; leave it out to keep the tenant's")
	localeName := fs.String("locale", "", "en-US or en-GB; leave it out to keep the tenant's (a new timezone does not change it)")
	gate := fs.String("caller-confirmation", "", "on: a voice tool call that books, moves, cancels or charges performs only with the echo "+
		"of the read-back of that effect the caller said yes to (docs/voice-platforms.md); off (the default): it does not; leave it out to keep the tenant's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if strings.TrimSpace(*ref) == "" {
		return errors.New("--tenant is required: the tenant's id or name")
	}
	var change db.ClockChange
	if *zone != "" {
		if _, err := schedule.ParseZone(*zone); err != nil {
			return fmt.Errorf("--timezone: %w", err)
		}
		change.Timezone = zone
	}
	if *localeName != "" {
		locale, err := schedule.ParseLocale(*localeName)
		if err != nil {
			return fmt.Errorf("--locale: %w", err)
		}
		change.Locale = &locale
	}
	var gateOn *bool
	switch *gate {
	case "":
	case "on", "off":
		on := *gate == "on"
		gateOn = &on
	default:
		return fmt.Errorf("--caller-confirmation: %q is neither on nor off", *gate)
	}
	if change.Timezone == nil && change.Locale == nil && gateOn == nil {
		return errors.New("give --timezone, --locale or --caller-confirmation: nothing to change")
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	t, err := findTenant(ctx, store, strings.TrimSpace(*ref))
	if err != nil {
		return err
	}
	if gateOn != nil {
		// Set before the clock: both are idempotent, and a failure of
		// either is reported.
		if err := store.SetCallerConfirmation(ctx, t.ID, *gateOn); errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("no tenant %s", t.ID)
		} else if err != nil {
			return fmt.Errorf("update tenant: %w", err)
		}
	}
	now, locale, err := store.UpdateTenantClock(ctx, t.ID, change)
	if errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("no tenant %s", t.ID)
	}
	if err != nil {
		return fmt.Errorf("update tenant: %w", err)
	}
	on, err := store.CallerConfirmation(ctx, t.ID)
	if err != nil {
		return fmt.Errorf("update tenant: %w", err)
	}
	gateWord := "off"
	if on {
		gateWord = "on"
	}
	fmt.Fprintf(stdout, "tenant %s (%s): timezone %s, locale %s, caller confirmation %s\n", t.Name, t.ID, now, locale, gateWord)
	return nil
}

// tenantStripeAccount sets or clears a tenant's Stripe Connect account:
// the tenant's holds and charges are made on it (Stripe-Account), instead
// of the process default STRIPE_ACCOUNT. A hold made earlier is captured on
// the account it was made on.
func tenantStripeAccount(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tenant stripe-account", stderr)
	id := fs.String("tenant", "", "the tenant's id (required)")
	account := fs.String("account", "", "the Stripe Connect account, acct_...; leave it out to clear the tenant's account")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tenant, err := uuid.Parse(strings.TrimSpace(*id))
	if err != nil {
		return errors.New("--tenant is required: the tenant's id")
	}
	if *account != "" {
		if err := db.ValidStripeAccount(*account); err != nil {
			return fmt.Errorf("--account: %w", err)
		}
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	if err := store.SetTenantStripeAccount(ctx, tenant, *account); errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("no tenant %s", tenant)
	} else if err != nil {
		return err
	}
	if *account == "" {
		fmt.Fprintf(stdout, "tenant %s: Stripe account cleared (STRIPE_ACCOUNT, if set, is used)\n", tenant)
		return nil
	}
	fmt.Fprintf(stdout, "tenant %s: payments are made on Stripe account %s\n", tenant, *account)
	return nil
}

// tenantTwilioSender sets or clears a tenant's own Twilio sender: its SMS
// are sent from that number or through that Messaging Service instead of
// the process default (TWILIO_FROM, TWILIO_MESSAGING_SERVICE_SID). A
// message claimed earlier keeps the sender it was claimed with.
func tenantTwilioSender(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tenant twilio-sender", stderr)
	id := fs.String("tenant", "", "the tenant's id (required)")
	from := fs.String("from", "", "the tenant's sending number, E.164 (+14155550100)")
	service := fs.String("messaging-service", "", "the tenant's Messaging Service SID, MG...")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tenant, err := uuid.Parse(strings.TrimSpace(*id))
	if err != nil {
		return errors.New("--tenant is required: the tenant's id")
	}
	sender := db.TwilioSender{From: strings.TrimSpace(*from), MessagingService: strings.TrimSpace(*service)}
	if err := sender.Valid(); err != nil {
		return fmt.Errorf("--from / --messaging-service: %w", err)
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	if err := store.SetTenantTwilioSender(ctx, tenant, sender); errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("no tenant %s", tenant)
	} else if err != nil {
		return err
	}
	switch {
	case sender.From != "":
		fmt.Fprintf(stdout, "tenant %s: SMS are sent from %s\n", tenant, sender.From)
	case sender.MessagingService != "":
		fmt.Fprintf(stdout, "tenant %s: SMS are sent through Messaging Service %s\n", tenant, sender.MessagingService)
	default:
		fmt.Fprintf(stdout, "tenant %s: Twilio sender cleared (TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID is used)\n", tenant)
	}
	return nil
}
