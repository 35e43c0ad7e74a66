package ipc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrBadNick is returned for a nick that cannot name a socket file.
var ErrBadNick = errors.New("ipc: invalid nick")

// ErrPathTooLong is returned by SocketPath when the path is longer than
// a Unix socket's address can be (MaxSocketPath).
var ErrPathTooLong = errors.New("ipc: socket path too long")

// MaxSocketPath is the longest socket path Linux takes (sun_path is 108
// bytes with its NUL).
const MaxSocketPath = 107

// RunDir is the directory of the daemons' sockets and PID files:
// $XDG_RUNTIME_DIR when set, else ~/.harness/run.
func RunDir() (string, error) {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("ipc: no XDG_RUNTIME_DIR and no home directory: %w", err)
	}
	return filepath.Join(home, ".harness", "run"), nil
}

// SocketPath is the one place the path of nick's daemon socket is
// resolved, for the daemon and every client alike:
// $XDG_RUNTIME_DIR/harness-<nick>.sock, else
// ~/.harness/run/harness-<nick>.sock. It does not create anything; see
// EnsureRunDir.
func SocketPath(nick string) (string, error) {
	p, err := runFile(nick, ".sock")
	if err == nil && len(p) > MaxSocketPath {
		return "", fmt.Errorf("%w: %s is %d bytes, %d at most (a shorter XDG_RUNTIME_DIR, or nick)", ErrPathTooLong, p, len(p), MaxSocketPath)
	}
	return p, err
}

// PIDPath is the daemon's PID file, beside its socket.
func PIDPath(nick string) (string, error) {
	return runFile(nick, ".pid")
}

func runFile(nick, ext string) (string, error) {
	if err := checkNick(nick); err != nil {
		return "", err
	}
	dir, err := RunDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "harness-"+nick+ext), nil
}

// checkNick refuses what could escape the directory or is not a nick.
func checkNick(nick string) error {
	if nick == "" || len(nick) > 64 {
		return fmt.Errorf("%w: %q", ErrBadNick, nick)
	}
	for _, r := range nick {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' ||
			r == '[' || r == ']' || r == '{' || r == '}' || r == '^' || r == '`' || r == '|') {
			return fmt.Errorf("%w: %q", ErrBadNick, nick)
		}
	}
	return nil
}

// EnsureRunDir creates RunDir with mode 0700 when it is missing. An
// existing ~/.harness/run is tightened to 0700; $XDG_RUNTIME_DIR is the
// system's and left as it is.
func EnsureRunDir() (string, error) {
	dir, err := RunDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("ipc: %w", err)
	}
	if os.Getenv("XDG_RUNTIME_DIR") == "" {
		if err := os.Chmod(dir, 0o700); err != nil {
			return "", fmt.Errorf("ipc: %w", err)
		}
	}
	return dir, nil
}
