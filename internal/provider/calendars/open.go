package calendars

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calcomprovider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/provider/googleprovider"
	"github.com/oncecall/oncecall/internal/provider/microsoftprovider"
)

// Settings of a connection, by provider (oncecall.CalendarConnection.Settings).
const (
	// SettingSubject (Google): the Workspace user the service account acts
	// as (domain-wide delegation).
	SettingSubject = "subject"
	// SettingDirectory and SettingClient (Microsoft): the Entra ID
	// directory (tenant) id and the app's client id.
	SettingDirectory = "directory_id"
	SettingClient    = "client_id"
	// SettingAuthority (Microsoft): the token issuer, when not
	// https://login.microsoftonline.com.
	SettingAuthority = "authority_url"
)

// Secrets reads a connection's secret where this server keeps it.
type Secrets struct {
	// Getenv and ReadFile default to os.Getenv and os.ReadFile.
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
}

// ErrNoSecret: the connection's secret is not readable on this server.
var ErrNoSecret = errors.New("the calendar's credentials are not readable on this server")

// Read returns the secret a credentials reference names: the file's
// content or the variable's value. Its error names the reference, never
// the secret.
func (s Secrets) Read(ref string) ([]byte, error) {
	switch {
	case strings.HasPrefix(ref, "env:"):
		getenv := s.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		v := getenv(strings.TrimPrefix(ref, "env:"))
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("%w: the environment variable %s is not set", ErrNoSecret, strings.TrimPrefix(ref, "env:"))
		}
		return []byte(v), nil
	case strings.HasPrefix(ref, "file:"):
		read := s.ReadFile
		if read == nil {
			read = os.ReadFile
		}
		b, err := read(strings.TrimPrefix(ref, "file:"))
		if err != nil {
			return nil, fmt.Errorf("%w: the file %s cannot be read", ErrNoSecret, strings.TrimPrefix(ref, "file:"))
		}
		if len(strings.TrimSpace(string(b))) == 0 {
			return nil, fmt.Errorf("%w: the file %s is empty", ErrNoSecret, strings.TrimPrefix(ref, "file:"))
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: %q is not file:<path> or env:<NAME>", ErrNoSecret, ref)
}

// Tuning is what a server sets for every calendar it reaches (zero: the
// adapter's default): the bound of one call and how long after a write a
// read may still miss it.
type Tuning struct {
	Timeout, VisibilityDelay time.Duration
}

// Open builds the adapter of a connection, with its secret read here.
func Open(ctx context.Context, c oncecall.CalendarConnection, secrets Secrets, tune Tuning) (calendar.Calendar, error) {
	secret, err := secrets.Read(c.Credentials)
	if err != nil {
		return nil, err
	}
	switch c.Provider {
	case oncecall.CalendarGoogle:
		return googleprovider.New(ctx, googleprovider.Config{
			CredentialsJSON: secret, Subject: c.Settings[SettingSubject], BaseURL: c.BaseURL,
			Timeout: tune.Timeout, VisibilityDelay: tune.VisibilityDelay,
		})
	case oncecall.CalendarMicrosoft:
		return microsoftprovider.New(microsoftprovider.Config{
			TenantID: c.Settings[SettingDirectory], ClientID: c.Settings[SettingClient],
			ClientSecret: strings.TrimSpace(string(secret)), BaseURL: c.BaseURL, AuthorityURL: c.Settings[SettingAuthority],
			Timeout: tune.Timeout, VisibilityDelay: tune.VisibilityDelay,
		})
	case oncecall.CalendarCalcom:
		return calcomprovider.New(calcomprovider.Config{
			APIKey: strings.TrimSpace(string(secret)), BaseURL: c.BaseURL,
			Timeout: tune.Timeout, VisibilityDelay: tune.VisibilityDelay,
		})
	}
	return nil, fmt.Errorf("%q is not a calendar provider: google, microsoft or calcom", c.Provider)
}

// Identity names a connection in the steps planned for it: the provider,
// and the connection's id (never a secret).
func Identity(c oncecall.CalendarConnection) provider.Identity {
	return provider.Identity{Kind: c.Provider, Account: c.ID.String()}
}
