//go:build !linux

package checkpoint

import "syscall"

// Only the watcher (Linux) writes the index in process.
func statFromSys(st *syscall.Stat_t) stat {
	return stat{dev: uint32(st.Dev), ino: uint32(st.Ino), uid: st.Uid, gid: st.Gid, size: uint32(st.Size)}
}
