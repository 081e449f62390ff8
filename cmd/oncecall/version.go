package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// commit is the commit a release build was made from, stamped by the
// build (-ldflags "-X main.commit=..." in make build and the Dockerfile):
// a build from a copy of the sources without git, as in a container
// build, has no version control information of its own.
var commit string

// versionLine says which oncecall this is, from the build information the
// Go toolchain embeds: the module version ("(devel)" for a build from a
// checkout), the commit it was built from (with "+dirty" when the work tree
// had changes; else the stamped one) and the Go version.
func versionLine() string {
	return versionOf(commit)
}

func versionOf(stamped string) string {
	version, commit, goVersion := buildVersion(stamped)
	return fmt.Sprintf("oncecall %s commit %s %s %s/%s", version, commit, goVersion, runtime.GOOS, runtime.GOARCH)
}

// buildVersion reads versionOf's module version, commit (stamped, when
// the build has no version control information) and Go version.
func buildVersion(stamped string) (version, commit, goVersion string) {
	version, commit, goVersion = "(devel)", "unknown", runtime.Version()
	if stamped != "" {
		commit = stamped
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		goVersion = info.GoVersion
		var modified bool
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && commit != "unknown" {
			commit += "+dirty"
		}
	}
	return version, commit, goVersion
}
