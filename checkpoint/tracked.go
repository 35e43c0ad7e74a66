package checkpoint

import (
	"errors"
	"strings"
)

// tracked is the in-process picture of what the last snapshot holds: its
// files as a tree of directories, each with its tree id, so a snapshot
// after a few changes re-hashes those files and the directories above
// them only.
type tracked struct {
	root  *dirNode
	files int
	bytes int64
}

type dirNode struct {
	files map[string]*indexEntry // files, symlinks (and gitlinks, which stop the watcher's use)
	dirs  map[string]*dirNode
	id    oid
	empty bool // holds no file at any depth: left out of its parent's tree
	dirty bool // id is stale
}

func newDir() *dirNode {
	return &dirNode{files: map[string]*indexEntry{}, dirs: map[string]*dirNode{}, dirty: true}
}

// errGitlink: the index holds a nested repository (a gitlink), whose
// commit only a walk by git follows.
var errGitlink = errors.New("checkpoint: nested repository")

// newTracked builds the picture of an index's entries.
func newTracked(es []indexEntry) (*tracked, error) {
	t := &tracked{root: newDir()}
	for i := range es {
		if es[i].mode == modeGitlink {
			return nil, errGitlink
		}
		e := es[i]
		t.put(&e)
	}
	return t, nil
}

// dir returns the node of directory rel ("" = the root), creating it
// (and marking the path dirty) when create is set; nil when absent.
func (t *tracked) dir(rel string, create bool) *dirNode {
	d := t.root
	if create {
		d.dirty = true
	}
	if rel == "" {
		return d
	}
	for part := range strings.SplitSeq(rel, "/") {
		sub := d.dirs[part]
		if sub == nil {
			if !create {
				return nil
			}
			if e := d.files[part]; e != nil { // a file became a directory
				delete(d.files, part)
				t.files--
				t.bytes -= e.size
			}
			sub = newDir()
			d.dirs[part] = sub
		}
		d = sub
		if create {
			d.dirty = true
		}
	}
	return d
}

func splitPath(rel string) (dir, name string) {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return "", rel
}

// get returns the file at rel, or nil.
func (t *tracked) get(rel string) *indexEntry {
	dir, name := splitPath(rel)
	if d := t.dir(dir, false); d != nil {
		return d.files[name]
	}
	return nil
}

// put records file e (its path free: no file nor directory there).
func (t *tracked) put(e *indexEntry) {
	dir, name := splitPath(e.path)
	d := t.dir(dir, true)
	d.files[name] = e
	t.files++
	t.bytes += e.size
}

// under calls fn for the file at rel and every file below rel.
func (t *tracked) under(rel string, fn func(*indexEntry)) {
	if e := t.get(rel); e != nil {
		fn(e)
	}
	if d := t.dir(rel, false); d != nil && rel != "" {
		d.each(fn)
	}
}

func (d *dirNode) each(fn func(*indexEntry)) {
	for _, e := range d.files {
		fn(e)
	}
	for _, sub := range d.dirs {
		sub.each(fn)
	}
}

// remove drops the file at rel and the directory rel with all below it.
func (t *tracked) remove(rel string) {
	dir, name := splitPath(rel)
	d := t.dir(dir, false)
	if d == nil {
		return
	}
	if e := d.files[name]; e != nil {
		delete(d.files, name)
		t.files--
		t.bytes -= e.size
		t.dir(dir, true)
	}
	if sub := d.dirs[name]; sub != nil {
		sub.each(func(e *indexEntry) { t.files--; t.bytes -= e.size })
		delete(d.dirs, name)
		t.dir(dir, true)
	}
}

// entries returns every file, for the index.
func (t *tracked) entries() []indexEntry {
	es := make([]indexEntry, 0, t.files)
	t.root.each(func(e *indexEntry) { es = append(es, *e) })
	return es
}

// treeID computes the tree ids of the dirty directories, bottom up, and
// returns the root's; with w set it stores the new trees (else it only
// hashes them).
func (t *tracked) treeID(w *objectWriter) (oid, error) {
	if err := t.root.hash(w); err != nil {
		return oid{}, err
	}
	return t.root.id, nil // the empty tree (stored too) when no file is left
}

func (d *dirNode) hash(w *objectWriter) error {
	if !d.dirty {
		return nil
	}
	es := make([]treeEntry, 0, len(d.files)+len(d.dirs))
	for name, e := range d.files {
		es = append(es, treeEntry{name: name, mode: e.mode, id: e.id})
	}
	for name, sub := range d.dirs {
		if err := sub.hash(w); err != nil {
			return err
		}
		if sub.empty {
			delete(d.dirs, name)
			continue
		}
		es = append(es, treeEntry{name: name, mode: modeTree, id: sub.id})
	}
	d.empty = len(es) == 0
	content := encodeTree(es)
	if w == nil {
		d.id = hashObject("tree", content)
	} else {
		id, err := w.write("tree", content)
		if err != nil {
			return err
		}
		d.id = id
	}
	d.dirty = false
	return nil
}

// skipDir reports whether directory rel is never snapshotted (so never
// watched).
func skipDir(rel string) bool {
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	return base == ".git" || base == ".chirality" || rel == ".harness/threads"
}

// excluded reports whether a file at rel is never snapshotted: it is
// under .git, a .chirality directory or .harness/threads.
func excluded(rel string) bool {
	dir, _ := splitPath(rel)
	if dir == ".harness/threads" || strings.HasPrefix(dir, ".harness/threads/") {
		return true
	}
	for part := range strings.SplitSeq(dir, "/") {
		if part == ".git" || part == ".chirality" {
			return true
		}
	}
	return rel == ".git"
}
