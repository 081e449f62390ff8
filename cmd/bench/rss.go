package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// peakRSS reads the peak resident set size (VmHWM) of a process ("self" or
// a pid) in MiB. Linux only; elsewhere ok is false.
func peakRSS(pid string) (float64, bool) {
	f, err := os.Open(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
		if err != nil {
			return 0, false
		}
		return kb / 1024, true
	}
	return 0, false
}

// remoteRSS finds the process listening on a local --url's port, so its
// peak RSS can be reported; for a remote server it reports nothing.
func remoteRSS(rawURL string) (func() (float64, bool), string) {
	none := func() (float64, bool) { return 0, false }
	port, local := isLoopback(rawURL)
	if !local {
		return none, "the server is not on this machine"
	}
	pid, err := listenerPID(port)
	if err != nil {
		return none, fmt.Sprintf("cannot find the process listening on port %s: %v", port, err)
	}
	return func() (float64, bool) { return peakRSS(pid) }, "pid " + pid + " (the process listening on port " + port + ")"
}

// listenerPID returns the pid of the process with a listening TCP socket on
// port, from /proc/net/tcp{,6} and the processes' file descriptors.
func listenerPID(port string) (string, error) {
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", err
	}
	want := fmt.Sprintf(":%04X", p)
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(f) > 9 && strings.HasSuffix(f[1], want) && f[3] == "0A" {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return "", fmt.Errorf("no listening socket")
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		if link, err := os.Readlink(fd); err == nil && inodes[link] {
			return strings.Split(fd, "/")[2], nil
		}
	}
	return "", fmt.Errorf("no process owns the listening socket (another user's?)")
}
