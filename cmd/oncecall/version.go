package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// versionLine says which oncecall this is, from the build information the
// Go toolchain embeds: the module version ("(devel)" for a build from a
// checkout), the commit it was built from (with "+dirty" when the work tree
// had changes) and the Go version.
func versionLine() string {
	version, commit, goVersion := buildVersion()
	return fmt.Sprintf("oncecall %s commit %s %s %s/%s", version, commit, goVersion, runtime.GOOS, runtime.GOARCH)
}

// buildVersion reads versionLine's module version, commit and Go version.
func buildVersion() (version, commit, goVersion string) {
	version, commit, goVersion = "(devel)", "unknown", runtime.Version()
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
