package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/oncecall/oncecall"
)

// loadSpec parses and validates openapi.yaml once per test process; the
// document is only read after that.
var loadSpec = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(oncecall.OpenAPI())
	if err != nil {
		return nil, fmt.Errorf("load openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	// Requests go to a test server on a random port: match paths only.
	doc.Servers = nil
	return doc, nil
})

// answered records, per operationId, the statuses the test process has
// seen it answer (see Unanswered).
var answered sync.Map // operationId -> *sync.Map of status -> struct{}

// Unanswered lists the operations of openapi.yaml that no request of this
// test process got a 2xx answer from: a package's TestMain calls it after
// its tests ran, so that no documented operation goes untested.
func Unanswered() ([]string, error) {
	doc, err := loadSpec()
	if err != nil {
		return nil, err
	}
	var missing []string
	for path, item := range doc.Paths.Map() {
		for method, o := range item.Operations() {
			ok := false
			if seen, found := answered.Load(o.OperationID); found {
				seen.(*sync.Map).Range(func(status, _ any) bool {
					ok = status.(int) < 300
					return !ok
				})
			}
			if !ok {
				missing = append(missing, o.OperationID+" ("+method+" "+path+")")
			}
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// Spec returns openapi.yaml, parsed and validated.
func Spec(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// Contract is an http.RoundTripper that checks every exchange against
// openapi.yaml and fails the test on any mismatch:
//
//   - the response must be documented for its route: its status, its
//     Content-Type, its required headers and its body (the schemas forbid
//     undocumented members);
//   - a route the document lacks may only answer 404 or 405 problem+json;
//   - a request that the document calls invalid must not succeed: the
//     document may not promise more than the server accepts.
//
// Bodies that are not JSON are not checked against the request schemas:
// the Dasha endpoints parse any Content-Type as JSON on purpose.
type Contract struct {
	t      testing.TB
	router routers.Router
	next   http.RoundTripper
	// lenient skips the request check; see AllowUndocumentedInput.
	lenient atomic.Bool
}

// AllowUndocumentedInput stops failing requests that the document calls
// invalid but the server accepts, for tests that send equivalent spellings
// the server normalises on purpose (" USD", "EMAIL"). Answers are still
// checked.
func (c *Contract) AllowUndocumentedInput() { c.lenient.Store(true) }

// NewContract returns a Contract that sends requests with next
// (http.DefaultTransport when nil).
func NewContract(t testing.TB, next http.RoundTripper) *Contract {
	t.Helper()
	router, err := legacy.NewRouter(Spec(t))
	if err != nil {
		t.Fatalf("route openapi.yaml: %v", err)
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return &Contract{t: t, router: router, next: next}
}

// RoundTrip sends req and checks the exchange.
func (c *Contract) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return resp, err
	}
	if err := c.check(req, reqBody, resp, body); err != nil {
		c.t.Errorf("openapi.yaml does not describe %s %s -> %d: %v\nresponse body: %s", req.Method, req.URL.Path, resp.StatusCode, err, clip(body))
	}
	return resp, nil
}

func (c *Contract) check(req *http.Request, reqBody []byte, resp *http.Response, body []byte) error {
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := c.router.FindRoute(vreq)
	if err != nil {
		return c.checkUnrouted(err, resp, body)
	}
	seen, _ := answered.LoadOrStore(route.Operation.OperationID, &sync.Map{})
	seen.(*sync.Map).Store(resp.StatusCode, struct{}{})
	opts := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
		SchemaValidationOptions: []openapi3.SchemaValidationOption{
			openapi3.WithStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForUUIDOfRFC9562)),
			openapi3.WithStringFormatValidator("email", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForEmail)),
			// RFC 3339 allows a lower-case t and z, and so does the server.
			openapi3.WithStringFormatValidator("date-time", openapi3.NewCallbackValidator(func(v string) error {
				_, err := time.Parse(time.RFC3339Nano, strings.ToUpper(v))
				return err
			})),
		},
	}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route, Options: opts}
	if len(reqBody) > 0 && !isJSON(req.Header.Get("Content-Type")) {
		reqOpts := *opts
		reqOpts.ExcludeRequestBody = true
		in.Options = &reqOpts
	}
	if reqErr := openapi3filter.ValidateRequest(context.Background(), in); reqErr != nil && resp.StatusCode < 400 && !c.lenient.Load() {
		return fmt.Errorf("the document calls the request invalid, yet the server answered %d: %w", resp.StatusCode, reqErr)
	}
	in.Options = opts
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: opts,
	})
}

// checkUnrouted accepts only the router's own 404 and 405 problems for a
// request the document has no operation for.
func (c *Contract) checkUnrouted(routeErr error, resp *http.Response, body []byte) error {
	var re *routers.RouteError
	if !errors.As(routeErr, &re) {
		return routeErr
	}
	if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
		return fmt.Errorf("no operation in the document (%v), yet the server answered %d", routeErr, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		return fmt.Errorf("a %d must be application/problem+json, got %q", resp.StatusCode, ct)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("the problem is not JSON: %w", err)
	}
	problem := Spec(c.t).Components.Schemas["Problem"]
	if problem == nil {
		return errors.New("the document has no Problem schema")
	}
	return problem.Value.VisitJSON(v, openapi3.MultiErrors())
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

func clip(b []byte) string {
	const max = 2000
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
