package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestToolsExportWarnsOfUnreachableBaseURL(t *testing.T) {
	t.Parallel()
	for base, warn := range map[string]bool{
		"http://localhost:8080":            true,
		"http://LOCALHOST.:8080/":          true,
		"http://api.localhost":             true,
		"http://127.0.0.1:8080":            true,
		"http://[::1]:8080":                true,
		"http://0.0.0.0:8080":              true,
		"http://10.1.2.3":                  true,
		"http://172.16.0.9":                true,
		"https://192.168.1.20":             true,
		"http://100.64.0.1":                true,
		"http://[fd00::1]":                 true,
		"http://169.254.1.1":               true,
		"http://devbox:8080":               true,
		"http://printer.local":             true,
		"https://oncecall.example.com":     false,
		"https://203.0.113.7":              false,
		"https://abcd.ngrok-free.app/api/": false,
	} {
		var out, errs bytes.Buffer
		if err := run(t.Context(), []string{"tools", "export", "--base-url", base}, &out, &errs); err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if got := strings.Contains(errs.String(), "warning: the voice platform cannot reach"); got != warn {
			t.Errorf("%s: warned %v, want %v: %q", base, got, warn, errs.String())
		}
		if !bytes.HasPrefix(out.Bytes(), []byte("[")) {
			t.Errorf("%s: the definitions were not printed", base)
		}
	}
}
