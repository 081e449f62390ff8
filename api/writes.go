package api

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/oncecall/oncecall"
)

// writeRoute is a REST write as openapi.yaml declares it: the path under
// /v1 whose operation names an oncecall operation (x-oncecall-operation),
// and the fields its URL gives (the path's parameters, by name).
type writeRoute struct {
	method, path, operation string
	params                  []string
}

// pathParam matches a path parameter, {name}.
var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// writeRoutes reads the REST writes from the contract, so that a route and
// its documentation are one declaration: a write added to openapi.yaml is
// served, and none is served that it does not describe.
func writeRoutes() ([]writeRoute, error) {
	doc, err := openapi3.NewLoader().LoadFromData(oncecall.OpenAPI())
	if err != nil {
		return nil, fmt.Errorf("read openapi.yaml: %w", err)
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
