//go:build unix

package pgembed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// account is the unprivileged OS user the server runs as when this process
// is root.
type account struct {
	name   string
	uid    int
	gid    int
	groups []int // supplementary groups, as login would grant them
}

func lookupAccount(name string) (*account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	a := &account{name: name}
	if a.uid, err = strconv.Atoi(u.Uid); err != nil {
		return nil, fmt.Errorf("user %s: uid %q: %w", name, u.Uid, err)
	}
	if a.gid, err = strconv.Atoi(u.Gid); err != nil {
		return nil, fmt.Errorf("user %s: gid %q: %w", name, u.Gid, err)
	}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("user %s: groups: %w", name, err)
	}
	for _, g := range gids {
		if n, err := strconv.Atoi(g); err == nil {
			a.groups = append(a.groups, n)
		}
	}
	return a, nil
}

func (a *account) apply(cmd *exec.Cmd) {
	groups := make([]uint32, len(a.groups))
	for i, g := range a.groups {
		groups[i] = uint32(g)
	}
	procAttr(cmd).Credential = &syscall.Credential{Uid: uint32(a.uid), Gid: uint32(a.gid), Groups: groups}
}

// checkSearchable reports the first directory from / down to dir that the
// account may not enter. Permissions are left alone: silently opening up a
// directory this package did not create would be a surprising side effect.
func (a *account) checkSearchable(dir string) error {
	var chain []string
	for d := dir; ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	slices.Reverse(chain)
	for _, d := range chain {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if !a.canSearch(fi) {
			return fmt.Errorf("directory %s (mode %04o) cannot be entered by OS user %s, who runs postgres; "+
				"choose a DataDir it can reach or allow it in (e.g. chmod o+x %s)", d, fi.Mode().Perm(), a.name, d)
		}
	}
	return nil
}

// canSearch applies the classic owner/group/other rule (ACLs are ignored).
func (a *account) canSearch(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case int(st.Uid) == a.uid:
		return perm&0o100 != 0
	case int(st.Gid) == a.gid || slices.Contains(a.groups, int(st.Gid)):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

func (a *account) chown(path string) error {
	return os.Lchown(path, a.uid, a.gid)
}

// chownTree gives the account everything under root, touching only entries
// it does not own yet so that reusing a large cluster stays cheap.
func (a *account) chownTree(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == a.uid && int(st.Gid) == a.gid {
			return nil
		}
		return a.chown(path)
	})
}

// detach keeps terminal signals (Ctrl-C) away from the server, so that its
// owner decides when it stops, and stops it if this process dies first.
func detach(cmd *exec.Cmd) {
	attr := procAttr(cmd)
	attr.Setpgid = true
	setParentDeathSignal(attr)
}

func procAttr(cmd *exec.Cmd) *syscall.SysProcAttr {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	return cmd.SysProcAttr
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func killProcess(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// The postmaster maps SIGINT to fast and SIGQUIT to immediate shutdown.
func signalFastShutdown(pid int) error      { return syscall.Kill(pid, syscall.SIGINT) }
func signalImmediateShutdown(pid int) error { return syscall.Kill(pid, syscall.SIGQUIT) }
