package checkpoint

import "syscall"

func statFromSys(st *syscall.Stat_t) stat {
	return stat{
		ctime: uint32(st.Ctim.Sec), ctimeNs: uint32(st.Ctim.Nsec),
		mtime: uint32(st.Mtim.Sec), mtimeNs: uint32(st.Mtim.Nsec),
		dev: uint32(st.Dev), ino: uint32(st.Ino), uid: st.Uid, gid: st.Gid, size: uint32(st.Size),
	}
}
