// Package atomicfile writes files so that a crash leaves either the old or
// the new content, never a mix: a temporary file in the same directory,
// fsync, rename, then an fsync of the directory.
package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
)

// TempSuffix ends the names of temporary files, so directory listings can
// skip (and clean up) those a crash left behind.
const TempSuffix = ".tmp"

// Write writes data to path with mode 0600. beforeRename, when not nil,
// runs after the temporary file is written and synced and before the
// rename; an error from it aborts the write the way a crash would at that
// point (the temporary file is left behind). Tests use it.
func Write(path string, data []byte, beforeRename func(tmp string) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*"+TempSuffix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	crashed := false
	defer func() {
		if err != nil && !crashed {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if beforeRename != nil {
		if err = beforeRename(tmp); err != nil {
			crashed = true
			return err
		}
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename in dir durable; errors are ignored (some file
// systems cannot sync a directory).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// IsTemp reports whether a directory entry name is one of Write's
// temporary files.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.HasSuffix(name, TempSuffix)
}
