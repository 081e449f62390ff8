package api

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/oncecall/oncecall"
)

// The REST routes are read from the contract, so that a route and its
// documentation are one declaration: a path added to openapi.yaml is
// served, and none is served that it does not describe. A write is the
// operation its x-oncecall-operation names (Server.write); a read is the
// handler its operationId names (Server.reads).

// writeRoute is a REST write as openapi.yaml declares it: the path under
// /v1 whose operation names an oncecall operation (x-oncecall-operation),
// and the fields its URL gives (the path's parameters, by name).
type writeRoute struct {
	method, path, operation string
	params                  []string
}

// pathParam matches a path parameter, {name}.
var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// contract is the embedded openapi.yaml, read once.
var contract = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(oncecall.OpenAPI())
	if err != nil {
		return nil, fmt.Errorf("read openapi.yaml: %w", err)
	}
	return doc, nil
})

// writeRoutes reads the REST writes from the contract.
func writeRoutes() ([]writeRoute, error) {
	doc, err := contract()
	if err != nil {
		return nil, err
	}
	var routes []writeRoute
	for path, item := range doc.Paths.Map() {
		rest, ok := strings.CutPrefix(path, "/v1/")
		if !ok {
			continue
		}
		for method, o := range item.Operations() {
			name, _ := o.Extensions["x-oncecall-operation"].(string)
			if name == "" {
				continue
			}
			w := writeRoute{method: method, path: "/" + rest, operation: name}
			for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
				w.params = append(w.params, m[1])
			}
			routes = append(routes, w)
		}
	}
	sort.Slice(routes, func(i, j int) bool {
		return routes[i].path+" "+routes[i].method < routes[j].path+" "+routes[j].method
	})
	return routes, nil
}

// mustWriteRoutes is writeRoutes of the embedded contract, which a test
// holds valid.
func mustWriteRoutes() []writeRoute {
	routes, err := writeRoutes()
	if err != nil {
		panic(err)
	}
	for _, w := range routes {
		switch w.method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
		default:
			panic("openapi.yaml: the write " + w.operation + " is a " + w.method)
		}
	}
	return routes
}

// readRoute is a REST read as openapi.yaml declares it: a GET under /v1
// (the operator's /v1/ops aside, routed with its own guard) and the
// handler its operationId names.
type readRoute struct {
	path    string
	handler http.HandlerFunc
}

// readRoutes reads the REST reads from the contract; a read without a
// handler in handlers is an error.
func readRoutes(handlers map[string]http.HandlerFunc) ([]readRoute, error) {
	doc, err := contract()
	if err != nil {
		return nil, err
	}
	var routes []readRoute
	for path, item := range doc.Paths.Map() {
		rest, ok := strings.CutPrefix(path, "/v1/")
		if !ok || strings.HasPrefix(rest, "ops/") || item.Get == nil {
			continue
		}
		h, ok := handlers[item.Get.OperationID]
		if !ok {
			return nil, fmt.Errorf("openapi.yaml: GET %s (%s) has no handler", path, item.Get.OperationID)
		}
		routes = append(routes, readRoute{path: "/" + rest, handler: h})
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].path < routes[j].path })
	return routes, nil
}

// mustReadRoutes is readRoutes of the embedded contract.
func (s *Server) mustReadRoutes() []readRoute {
	routes, err := readRoutes(s.reads())
	if err != nil {
		panic(err)
	}
	return routes
}
