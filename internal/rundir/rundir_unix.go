//go:build unix

// Package rundir is the harness's private runtime directory: where files
// holding secrets live while a child needs them (the MCP servers' env and
// header values Claude Code reads with --mcp-config), outside every
// project root, readable by this user only. It is $XDG_RUNTIME_DIR/harness
// when XDG_RUNTIME_DIR is set (an absolute path), else harness-<uid> in
// os.TempDir(). Dir creates it 0700 and refuses one that is a symlink, is
// owned by another user or that others may open (a shared /tmp is where
// another user could have made it first).
package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Dir returns the runtime directory, created if needed and checked.
func Dir() (string, error) {
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		return ensure(filepath.Join(x, "harness"))
	}
	return ensure(filepath.Join(os.TempDir(), "harness-"+strconv.Itoa(os.Getuid())))
}

func ensure(d string) (string, error) {
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("rundir: %w", err)
	}
	fi, err := os.Lstat(d)
	if err != nil {
		return "", fmt.Errorf("rundir: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return "", fmt.Errorf("rundir: %s is not a directory (a symlink?): refused", d)
	case !ok || int(st.Uid) != os.Getuid():
		return "", fmt.Errorf("rundir: %s is owned by another user: refused", d)
	case fi.Mode().Perm()&0o077 != 0:
		// ours, made by an older umask or by hand: closed again
		if err := os.Chmod(d, 0o700); err != nil {
			return "", fmt.Errorf("rundir: %w", err)
		}
	}
	return d, nil
}
