package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// walkNeeded is why a snapshot cannot be taken from the watcher's list
// alone; the store walks the tree instead.
type walkNeeded struct{ why string }

func (e *walkNeeded) Error() string { return "checkpoint: a walk is needed: " + e.why }

// maxPacks is the number of packs past which a snapshot merges them.
var maxPacks = 64

// found is a file a snapshot may hold, as lstat saw it.
type found struct {
	rel string
	fi  fs.FileInfo
}

// incremental takes a snapshot from the last one and the paths the
// watcher listed: each listed path is looked at again (a directory is
// walked), the files there are read and hashed, and the directories
// above them re-hashed; nothing else is read. New paths are checked
// against .gitignore by one git call (tracked ones are kept, as git
// add -A keeps them). It fails with *walkNeeded when the list is not
// enough (a .gitignore changed, a nested repository), and leaves s.tr
// as it was on every error before it starts to change it.
func (s *Store) incremental(ctx context.Context, touched []string) (Info, error) {
	info := Info{Changed: len(touched)}
	if len(touched) == 0 {
		info.ID = s.last.String()
		return info, nil
	}
	// A listed directory is walked: the paths below it need no look of
	// their own.
	sort.Strings(touched)
	var tops []string
	for _, p := range touched {
		if n := len(tops); n > 0 && strings.HasPrefix(p, tops[n-1]+"/") {
			continue
		}
		_, base := splitPath(p)
		switch {
		case base == ".gitignore":
			return info, &walkNeeded{".gitignore changed"}
		case base == ".git":
			return info, &walkNeeded{"nested repository"}
		case excluded(p):
			continue
		}
		tops = append(tops, p)
	}
	var files []found
	for _, p := range tops {
		fi, err := os.Lstat(s.abs(p))
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			continue
		case err != nil:
			return info, fmt.Errorf("checkpoint: %w", err)
		case fi.IsDir():
			if skipDir(p) {
				continue
			}
			if err := s.walkDir(p, &files); err != nil {
				return info, err
			}
		case fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0:
			files = append(files, found{p, fi})
		}
	}
	// New paths: those .gitignore ignores are left out.
	var fresh []byte
	for _, f := range files {
		if s.tr.get(f.rel) == nil {
			fresh = append(append(fresh, f.rel...), 0)
		}
	}
	ignored := map[string]bool{}
	if len(fresh) > 0 {
		out, _, err := s.run(ctx, call{args: []string{"check-ignore", "-z", "--stdin", "--no-index"}, stdin: fresh,
			max: len(fresh) + 1, okCodes: []int{1}})
		if err != nil {
			return info, err
		}
		for _, p := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
			ignored[string(p)] = true
		}
	}
	kept := files[:0]
	for _, f := range files {
		if !ignored[f.rel] {
			kept = append(kept, f)
		}
	}
	// The limits, counted before anything is read.
	nFiles, nBytes := int64(s.tr.files), s.tr.bytes
	for _, p := range tops {
		s.tr.under(p, func(e *indexEntry) { nFiles--; nBytes -= e.size })
	}
	for _, f := range kept {
		nFiles++
		nBytes += f.fi.Size()
	}
	if nFiles > int64(s.o.MaxFiles) {
		return info, &LimitError{Limit: "files", Have: nFiles, Max: int64(s.o.MaxFiles)}
	}
	if nBytes > s.o.MaxBytes {
		return info, &LimitError{Limit: "bytes", Have: nBytes, Max: s.o.MaxBytes}
	}
	// Read and store the files: a listed file is always read again (its
	// stat may not show a change within the clock's granularity).
	w := &objectWriter{dir: filepath.Join(s.gitDir, "objects")}
	w.pack = newPackWriter(w.dir)
	defer w.pack.abort()
	entries := make([]*indexEntry, len(kept))
	for i, f := range kept {
		if err := ctx.Err(); err != nil {
			return info, err
		}
		mode := modeOf(f.fi)
		id, err := w.blobFile(s.abs(f.rel), mode, f.fi.Size())
		if errors.Is(err, errChanged) || errors.Is(err, fs.ErrNotExist) {
			return info, &walkNeeded{"a file changed while it was read"}
		}
		if err != nil {
			return info, fmt.Errorf("checkpoint: %w", err)
		}
		entries[i] = &indexEntry{path: f.rel, mode: mode, id: id, st: statOf(f.fi), size: f.fi.Size()}
	}
	// From here s.tr changes: a failure drops it (the next snapshot walks).
	for _, p := range tops {
		s.tr.remove(p)
	}
	for _, e := range entries {
		s.tr.remove(e.path) // a directory of that name listed only below
		s.tr.put(e)
	}
	id, err := s.tr.treeID(w)
	if err == nil {
		err = w.pack.finish()
	}
	if err != nil {
		s.tr = nil
		return info, err
	}
	s.trStale = true
	if err := s.keep(id.String()); err != nil {
		s.tr = nil
		return info, err
	}
	s.last = id
	info.ID = id.String()
	// A pack per snapshot: many small ones are merged now and then
	// (each next pack at least twice the one before).
	if s.looseObjects() > packThreshold || packs(w.dir) > maxPacks {
		_, _, _ = s.run(ctx, call{args: []string{"repack", "-d", "-q", "--geometric=2"}})
	}
	return info, nil
}

// walkDir adds the files under directory rel to files; a nested
// repository needs a walk by git.
func (s *Store) walkDir(rel string, files *[]found) error {
	return filepath.WalkDir(s.abs(rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone meanwhile: listed again
			}
			return fmt.Errorf("checkpoint: %w", err)
		}
		r := filepath.ToSlash(strings.TrimPrefix(p, s.root+string(filepath.Separator)))
		switch {
		case d.IsDir():
			if skipDir(r) {
				return filepath.SkipDir
			}
			if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
				return &walkNeeded{"nested repository"}
			}
		case d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0:
			fi, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("checkpoint: %w", err)
			}
			*files = append(*files, found{r, fi})
		}
		return nil
	})
}

func (s *Store) abs(rel string) string { return filepath.Join(s.root, filepath.FromSlash(rel)) }
