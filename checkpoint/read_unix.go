//go:build unix

package checkpoint

import (
	"golang.org/x/sys/unix"
)

// dirReader reads many small files under one directory (the project
// root) with bare openat/read/close: the path is resolved from the
// root's descriptor, not from /, and no os.File is made (on Linux each
// os.Open of a regular file also tries, and fails, to register it with
// the network poller). The first snapshot reads every file of the
// project this way.
type dirReader struct{ fd int }

func openDirReader(root string) (*dirReader, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &dirReader{fd: fd}, nil
}

func (d *dirReader) close() { unix.Close(d.fd) }

// read reads file rel (a slash path below the root) into *buf: a
// symlink's target, or exactly size bytes of a regular file (errChanged
// when it is now shorter or longer). A regular file that became a
// symlink since it was listed is not followed (ELOOP: git looks again).
func (d *dirReader) read(rel string, mode uint32, size int64, buf *[]byte) ([]byte, error) {
	if int64(cap(*buf)) < size+1 {
		*buf = make([]byte, size+1)
	}
	b := (*buf)[:size+1]
	if mode == modeSymlink {
		n, err := unix.Readlinkat(d.fd, rel, b)
		if err != nil {
			return nil, err
		}
		if int64(n) != size {
			return nil, errChanged
		}
		return b[:n], nil
	}
	var fd int
	var err error
	for {
		fd, err = unix.Openat(d.fd, rel, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n := 0
	for n < len(b) {
		m, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	if int64(n) != size {
		return nil, errChanged
	}
	return b[:n], nil
}
