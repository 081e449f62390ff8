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

// paths are the routes of the embedded openapi.yaml, read once (the
// document itself is not kept).
var paths = sync.OnceValues(func() (contractPaths, error) {
	doc, err := openapi3.NewLoader().LoadFromData(oncecall.OpenAPI())
	if err != nil {
		return contractPaths{}, fmt.Errorf("read openapi.yaml: %w", err)
	}
	var c contractPaths
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
			if method != http.MethodPost && method != http.MethodPut && method != http.MethodPatch {
				return contractPaths{}, fmt.Errorf("openapi.yaml: the write %s is a %s", name, method)
			}
			w := writeRoute{method: method, path: "/" + rest, operation: name}
			for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
				w.params = append(w.params, m[1])
			}
			c.writes = append(c.writes, w)
		}
		if item.Get != nil && !strings.HasPrefix(rest, "ops/") {
			c.reads = append(c.reads, read{path: "/" + rest, operationID: item.Get.OperationID})
		}
	}
	sort.Slice(c.writes, func(i, j int) bool {
		return c.writes[i].path+" "+c.writes[i].method < c.writes[j].path+" "+c.writes[j].method
	})
	sort.Slice(c.reads, func(i, j int) bool { return c.reads[i].path < c.reads[j].path })
	return c, nil
})

// contractPaths are the REST writes and reads openapi.yaml declares.
type contractPaths struct {
	writes []writeRoute
	reads  []read
}

// read is a GET under /v1 (the operator's /v1/ops aside, routed with its
// own guard) and its operationId.
type read struct{ path, operationID string }

// mustWriteRoutes are the REST writes of the embedded contract, which a
// test holds valid.
func mustWriteRoutes() []writeRoute {
	c, err := paths()
	if err != nil {
		panic(err)
	}
	return c.writes
}

// readRoute is a REST read as openapi.yaml declares it, with the handler
// its operationId names.
type readRoute struct {
	path    string
	handler http.HandlerFunc
}

// mustReadRoutes are the REST reads of the embedded contract, each with
// its handler in Server.reads; a read without one is a wiring error.
func (s *Server) mustReadRoutes() []readRoute {
	c, err := paths()
	if err != nil {
		panic(err)
	}
	handlers := s.reads()
	routes := make([]readRoute, 0, len(c.reads))
	for _, rd := range c.reads {
		h, ok := handlers[rd.operationID]
		if !ok {
			panic(fmt.Sprintf("openapi.yaml: GET /v1%s (%s) has no handler", rd.path, rd.operationID))
		}
		routes = append(routes, readRoute{path: rd.path, handler: h})
	}
	return routes
}
