package pgembed

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindBinDirWithoutInstallation(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findBinDir([]string{filepath.Join(t.TempDir(), "*", "bin")})
	if !errors.Is(err, ErrNoBinaries) || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Fatalf("findBinDir() error = %v, want ErrNoBinaries mentioning DATABASE_URL", err)
	}
}

func TestFindBinDirPrefersNewest(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	root := t.TempDir()
	for _, v := range []string{"9.6", "15", "10"} {
		bin := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"initdb", "postgres"} {
			if err := os.WriteFile(filepath.Join(bin, name), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := findBinDir([]string{filepath.Join(root, "*", "bin")})
	if want := filepath.Join(root, "15", "bin"); err != nil || got != want {
		t.Fatalf("findBinDir() = %q, %v; want %q", got, err, want)
	}
}
