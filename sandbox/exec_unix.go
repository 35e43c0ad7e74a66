//go:build unix

package sandbox

import "syscall"

func execve(bin string, argv, env []string) error { return syscall.Exec(bin, argv, env) }
