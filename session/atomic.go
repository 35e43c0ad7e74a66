package session

import (
	"os"
	"path/filepath"
	"strings"
)

// testHookBeforeRename, when set by a test, runs after the temporary file
// is written and synced and before the rename; an error aborts the write
// the way a crash would at that point (the temporary file is left behind).
var testHookBeforeRename func(tmp string) error

// tmpSuffix ends the names of temporary files; List ignores them.
const tmpSuffix = ".tmp"

// writeFileAtomic writes data to a temporary 0600 file in path's directory,
// syncs it, renames it over path and syncs the directory, so after a crash
// path holds either the old or the new content.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*"+tmpSuffix)
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
	if testHookBeforeRename != nil {
		if err = testHookBeforeRename(tmp); err != nil {
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
// systems do not support syncing a directory).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// isTemp reports whether a directory entry name is one of our temporary
// files.
func isTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.HasSuffix(name, tmpSuffix)
}
