package chaos

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/twilioprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// The Twilio part of a run (Config.Twilio): SMS go through the Twilio
// adapter (twilio-go) to the simulator's Twilio mode, whose status
// callbacks, duplicated and sent before the API answers, reach a live
// replica through callbackProxy, oncecall's public URL for the run.

// twilioFrom is the replicas' sending number.
const twilioFrom = "+15005550006"

// twilioEnv configures the replicas' messaging for Twilio.
func twilioEnv(public string) []string {
	return []string{
		"ONCECALL_PROVIDER_MESSAGING=twilio",
		"TWILIO_ACCOUNT_SID=" + providersim.TwilioTestAccountSID,
		"TWILIO_AUTH_TOKEN=" + providersim.TwilioTestAuthToken,
		"TWILIO_FROM=" + twilioFrom,
		"ONCECALL_PUBLIC_URL=" + public,
	}
}

// callbackProxy forwards Twilio's callbacks to a random live replica (none
// up: 502, a callback lost, as happens).
type callbackProxy struct {
	srv *http.Server
	url string
	rs  atomic.Pointer[replicas]
	mu  sync.Mutex
	rng *rand.Rand
}

func startCallbackProxy(seed uint64) (*callbackProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &callbackProxy{url: "http://" + ln.Addr().String(), rng: rand.New(rand.NewPCG(seed, 1<<34))}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	go p.srv.Serve(ln) //nolint:errcheck // ends with Close
	return p, nil
}

func (p *callbackProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := ""
	if rs := p.rs.Load(); rs != nil {
		p.mu.Lock()
		target = rs.pick(p.rng)
		p.mu.Unlock()
	}
	u, err := url.Parse(target)
	if target == "" || err != nil {
		http.Error(w, "no replica is up", http.StatusBadGateway)
		return
	}
	httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
}

func (p *callbackProxy) close() { p.srv.Close() }

// strayCallback makes the simulator post a signed callback about a message
// it never sent, for a step of no action: oncecall must ignore it.
func (p *callbackProxy) strayCallback(ctx context.Context, admin providersim.Admin) error {
	target := twilioprovider.CallbackURL(p.url, uuid.NewString()+"/"+provider.Messaging)
	_, err := admin.TwilioStrayCallback(ctx, target)
	return err
}

// twilioSends reads the Twilio mode's messages as provider writes: the
// action and step from the StatusCallback each message was sent with, and
// the step's payload (what the adapter turned into the message) from
// oncecall's tables, to name the logical action. A message whose callback
// names no step of the run's tenants is unattributed.
func twilioSends(ctx context.Context, pool *pgxpool.Pool, tenant []uuid.UUID, msgs []providersim.TwilioMessage) ([]providersim.LedgerEntry, error) {
	rows, err := pool.Query(ctx, `SELECT s.action_id::text || '/' || s.name, s.payload FROM action_steps s
		JOIN actions a ON a.id = s.action_id WHERE a.tenant_id = ANY($1) AND s.capability = $2`, tenant, provider.Messaging)
	if err != nil {
		return nil, err
	}
	payloads := map[string][]byte{}
	for rows.Next() {
		var ref string
		var payload []byte
		if err := rows.Scan(&ref, &payload); err != nil {
			return nil, err
		}
		payloads[ref] = payload
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]providersim.LedgerEntry, 0, len(msgs))
	for _, m := range msgs {
		ref := ""
		if u, err := url.Parse(m.StatusCallback); err == nil && strings.HasSuffix(u.Path, twilioprovider.StatusPath) {
			ref = u.Query().Get(twilioprovider.StepParam)
		}
		out = append(out, providersim.LedgerEntry{Requests: 1, Write: providersim.Write{
			ID: m.SID, Capability: provider.Messaging, Operation: twilioprovider.Operation, Status: providersim.StatusCommitted,
			ExternalRef: ref, Payload: payloads[ref],
		}})
	}
	return out, nil
}
