package staff

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// OIDCConfig is the clinic's identity provider, for signing in to the
// console with it (OpenID Connect, authorization code flow with PKCE).
type OIDCConfig struct {
	// Issuer is the provider's issuer URL; its discovery document is at
	// Issuer + "/.well-known/openid-configuration".
	Issuer string
	// ClientID and ClientSecret are oncecall's registration at the provider.
	ClientID, ClientSecret string
	// RedirectURL is where the provider sends the browser back: the public
	// URL of /console/oidc/callback.
	RedirectURL string
	// Name is the provider's name on the sign-in page. Default "your
	// identity provider".
	Name string
	// HTTPClient talks to the provider; default http.DefaultClient with a
	// 10s timeout.
	HTTPClient *http.Client
}

// OIDC signs people in through the identity provider. The provider's
// discovery document is read on first use (and again after a failure), so
// the service starts while the provider is down.
type OIDC struct {
	cfg OIDCConfig

	mu       sync.Mutex
	provider *oidc.Provider
}

// NewOIDC returns the identity provider's sign-in; nil when cfg names none.
func NewOIDC(cfg OIDCConfig) (*OIDC, error) {
	if cfg.Issuer == "" {
		return nil, nil
	}
	if cfg.ClientID == "" || cfg.RedirectURL == "" {
		return nil, errors.New("signing in through an identity provider needs its client id and the redirect URL (ONCECALL_OIDC_CLIENT_ID, ONCECALL_PUBLIC_URL)")
	}
	if cfg.Name == "" {
		cfg.Name = "your identity provider"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &OIDC{cfg: cfg}, nil
}

// Name is the provider's name to show.
func (o *OIDC) Name() string { return o.cfg.Name }

func (o *OIDC) discover(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, o.cfg.HTTPClient), o.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("the identity provider's discovery document: %w", err)
	}
	o.provider = p
	return p, nil
}

func (o *OIDC) oauth(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, RedirectURL: o.cfg.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", "profile"},
	}
}

// Start is a sign-in under way: what the browser keeps (in a short-lived
// cookie) until the provider sends it back.
type Start struct {
	State, Nonce, Verifier string
}

// NewStart makes the random state, nonce and PKCE verifier of a sign-in.
func NewStart() Start {
	return Start{State: newSecret(), Nonce: newSecret(), Verifier: oauth2.GenerateVerifier()}
}

// AuthURL is where the browser goes to sign in at the provider.
func (o *OIDC) AuthURL(ctx context.Context, st Start) (string, error) {
	p, err := o.discover(ctx)
	if err != nil {
		return "", err
	}
	return o.oauth(p).AuthCodeURL(st.State, oidc.Nonce(st.Nonce), oauth2.S256ChallengeOption(st.Verifier)), nil
}

// Finish exchanges the code the provider sent back for an ID token,
// verifies it (signature, issuer, audience, expiry, nonce) and returns the
// verified e-mail address it vouches for.
func (o *OIDC) Finish(ctx context.Context, st Start, code string) (string, error) {
	p, err := o.discover(ctx)
	if err != nil {
		return "", err
	}
	ctx = oidc.ClientContext(ctx, o.cfg.HTTPClient)
	tok, err := o.oauth(p).Exchange(ctx, code, oauth2.VerifierOption(st.Verifier))
	if err != nil {
		return "", fmt.Errorf("exchange the code: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok {
		return "", errors.New("the identity provider gave no ID token")
	}
	id, err := p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID}).Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("verify the ID token: %w", err)
	}
	if id.Nonce != st.Nonce {
		return "", errors.New("the ID token is not this sign-in's (nonce)")
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified *bool  `json:"email_verified"`
	}
	if err := id.Claims(&claims); err != nil {
		return "", fmt.Errorf("the ID token's claims: %w", err)
	}
	// An address the provider has not verified could be anyone's.
	if claims.Email == "" || claims.EmailVerified == nil || !*claims.EmailVerified {
		return "", errors.New("the identity provider did not vouch for an e-mail address (email_verified)")
	}
	return strings.ToLower(claims.Email), nil
}
