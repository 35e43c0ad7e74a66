package persona

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chirality/harness/agents"
)

// AgentsDir is the directory, relative to a project root, that holds
// persona files.
const AgentsDir = "agents"

// EmbeddedPrefix starts the SourceFile of a built-in persona.
const EmbeddedPrefix = "embedded:"

// FileName returns the file name of persona id: AGENT_<id>.md.
func FileName(id string) string { return "AGENT_" + id + ".md" }

// Load returns persona id of the project: <projectRoot>/agents/AGENT_<id>.md
// if that file exists, else the built-in persona of that ID. An invalid id
// is rejected with ErrInvalidID before any file is opened; a missing persona
// is a *NotFoundError; a broken file is a *ParseError (the built-in persona
// does not hide a broken project file).
//
// The file is stat'ed on every call and re-read only when its modification
// time or size changed.
func Load(projectRoot, id string) (*Persona, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	path := filepath.Join(projectRoot, AgentsDir, FileName(id))
	p, err := personaCache.load(path, id)
	if err == nil {
		return p.clone(), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if p, ok := builtin(id); ok {
		return p.clone(), nil
	}
	return nil, &NotFoundError{ID: id}
}

// ListEntry is one persona found by List: either Persona is set, or Err
// says why the file at SourceFile could not be used.
type ListEntry struct {
	ID         string
	SourceFile string
	Persona    *Persona
	Err        error
}

// List returns every persona available to the project, sorted by ID: the
// project's agents/AGENT_*.md files and the built-in personas the project
// does not override. A broken file yields an entry with Err set and never
// hides the others. The error result is only for a failure to read the
// agents directory itself; a missing directory is not an error.
func List(projectRoot string) ([]ListEntry, error) {
	dir := filepath.Join(projectRoot, AgentsDir)
	byID := map[string]ListEntry{}
	des, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var extra []ListEntry // files whose name does not give a valid ID
	for _, de := range des {
		name := de.Name()
		if !strings.HasPrefix(name, "AGENT_") || !strings.HasSuffix(name, ".md") || de.IsDir() {
			continue
		}
		path := filepath.Join(dir, name)
		id, ok := idFromFileName(name)
		if !ok {
			raw := strings.TrimSuffix(strings.TrimPrefix(name, "AGENT_"), ".md")
			extra = append(extra, ListEntry{ID: raw, SourceFile: path,
				Err: fmt.Errorf("%s: %w %q: want letters, digits, '_' or '-'", path, ErrInvalidID, raw)})
			continue
		}
		p, err := personaCache.load(path, id)
		if err != nil {
			byID[id] = ListEntry{ID: id, SourceFile: path, Err: err}
			continue
		}
		byID[id] = ListEntry{ID: id, SourceFile: path, Persona: p.clone()}
	}
	for _, p := range builtins() {
		if _, ok := byID[p.ID]; !ok {
			byID[p.ID] = ListEntry{ID: p.ID, SourceFile: p.SourceFile, Persona: p.clone()}
		}
	}
	out := make([]ListEntry, 0, len(byID)+len(extra))
	for _, e := range byID {
		out = append(out, e)
	}
	out = append(out, extra...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].ID != out[j].ID {
			return out[i].ID < out[j].ID
		}
		return out[i].SourceFile < out[j].SourceFile
	})
	return out, nil
}

// Built-in personas are parsed once.
var (
	builtinOnce sync.Once
	builtinByID map[string]*Persona
)

func loadBuiltins() {
	builtinByID = map[string]*Persona{}
	files, _ := fs.Glob(agents.FS, "AGENT_*.md")
	for _, name := range files {
		id, ok := idFromFileName(name)
		if !ok {
			continue
		}
		data, err := agents.FS.ReadFile(name)
		if err != nil {
			continue
		}
		p, err := ParseContent(id, EmbeddedPrefix+AgentsDir+"/"+name, data)
		if err != nil {
			// The shipped files are tested; a broken one is a build bug.
			panic("persona: built-in " + name + ": " + err.Error())
		}
		builtinByID[id] = p
	}
}

func builtin(id string) (*Persona, bool) {
	builtinOnce.Do(loadBuiltins)
	p, ok := builtinByID[id]
	return p, ok
}

// Builtin returns the built-in persona id (a copy), whether or not a
// project overrides it.
func Builtin(id string) (*Persona, bool) {
	p, ok := builtin(id)
	if !ok {
		return nil, false
	}
	return p.clone(), true
}

// builtins returns the built-in personas sorted by ID.
func builtins() []*Persona {
	builtinOnce.Do(loadBuiltins)
	out := make([]*Persona, 0, len(builtinByID))
	for _, p := range builtinByID {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// fileKey identifies a version of a file for the caches.
type fileKey struct {
	modTime time.Time
	size    int64
}

func keyOf(fi os.FileInfo) fileKey { return fileKey{fi.ModTime(), fi.Size()} }

// fileCache caches a value derived from a file, keyed by path and
// invalidated when the file's modification time or size changes. Safe for
// concurrent use.
type fileCache[V any] struct {
	mu      sync.Mutex
	entries map[string]cacheEntry[V]
	reads   int // files read (not served from the cache); for tests
}

type cacheEntry[V any] struct {
	key fileKey
	val V
	err error
}

// get stats path and returns the cached value if the file is unchanged,
// else calls read and caches its result (errors included: a broken file is
// not re-parsed until it changes). A stat error is returned as is and
// drops the entry.
func (c *fileCache[V]) get(path string, read func(path string, fi os.FileInfo) (V, error)) (V, error) {
	var zero V
	fi, err := os.Stat(path)
	if err != nil {
		c.mu.Lock()
		delete(c.entries, path)
		c.mu.Unlock()
		return zero, err
	}
	if !fi.Mode().IsRegular() {
		return zero, fmt.Errorf("%s: not a regular file", path)
	}
	k := keyOf(fi)
	c.mu.Lock()
	e, ok := c.entries[path]
	c.mu.Unlock()
	if ok && e.key == k {
		return e.val, e.err
	}
	v, err := read(path, fi)
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]cacheEntry[V]{}
	}
	c.entries[path] = cacheEntry[V]{key: k, val: v, err: err}
	c.reads++
	c.mu.Unlock()
	return v, err
}

type personaFileCache struct{ fileCache[*Persona] }

func (c *personaFileCache) load(path, id string) (*Persona, error) {
	return c.get(path, func(path string, _ os.FileInfo) (*Persona, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return ParseContent(id, path, data)
	})
}

var personaCache personaFileCache
