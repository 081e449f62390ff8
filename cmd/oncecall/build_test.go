package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The container image must be built like the binary CI builds.
func TestDockerfileBuildsLikeMakeBuild(t *testing.T) {
	t.Parallel()
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^BUILD_FLAGS := (.+)$`).FindSubmatch(makefile)
	if m == nil || !strings.Contains(string(makefile), "CGO_ENABLED=0 go build $(BUILD_FLAGS)") {
		t.Fatalf("Makefile: no BUILD_FLAGS or build rule")
	}
	want := "RUN CGO_ENABLED=0 go build " + strings.TrimSpace(string(m[1])) + " -o "
	if !strings.Contains(string(dockerfile), want) {
		t.Fatalf("Dockerfile does not build with %q", want)
	}
	for _, line := range []string{
		"FROM gcr.io/distroless/static-debian12:nonroot", "USER nonroot:nonroot", "EXPOSE 8080",
		"ONCECALL_REQUIRE_DATABASE_URL=1", `CMD ["/oncecall", "healthcheck"]`, `ENTRYPOINT ["/oncecall", "serve"]`,
	} {
		if !strings.Contains(string(dockerfile), line) {
			t.Errorf("Dockerfile lacks %q", line)
		}
	}
}
