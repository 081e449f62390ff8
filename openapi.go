package oncecall

import _ "embed"

// openAPI is openapi.yaml, the HTTP contract that the api tests and the
// generated clients check the server against.
//
//go:embed openapi.yaml
var openAPI []byte

// OpenAPI returns openapi.yaml, the OpenAPI 3.0 document of the HTTP API.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }
