package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/atomicfile"
)

// Dir is the record's directory inside the state directory.
const Dir = "trust"

// Limits of one project's record. A file over MaxFileSize is not read
// (it trusts nothing); a grant that would take the record past a limit
// is refused with ErrTooLarge.
const (
	MaxFileSize      = 4 << 20
	MaxRulesPer      = 500 // rules of one session
	MaxSessions      = 10000
	MaxPersonas      = 500
	MaxMCPServers    = 500
	maxRuleLen       = 4096
	recordVersion    = 1
	corruptSuffix    = ".corrupt"
	lockSuffix       = ".lock"
	recordFileSuffix = ".json"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrCorrupt: the project's record cannot be read as one. Nothing in
	// it is trusted.
	ErrCorrupt = errors.New("trust record is corrupt")
	// ErrTooLarge: a grant would take the record past its limits.
	ErrTooLarge = engine.NewError(engine.ErrCannot, "trust record is full")
	// ErrLocked: another process held the record's lock too long.
	ErrLocked = engine.NewError(engine.ErrUnavailable, "trust record is locked")
)

// Record is what a person granted in one project.
type Record struct {
	Version     int    `json:"version"`
	ProjectRoot string `json:"projectRoot"`
	// Sessions are the "always" rules a person gave, by session id.
	Sessions map[string]*SessionGrants `json:"sessions,omitempty"`
	// Personas are the persona files a person trusted, by absolute path.
	Personas map[string]*PersonaTrust `json:"personas,omitempty"`
	// MCP are the project .mcp.json servers a person trusted: name → the
	// hash of the definition trusted (ServerHash).
	MCP map[string]string `json:"mcp,omitempty"`
}

// SessionGrants are what a person gave one session: its "always" rules
// and, once Chosen, the persona, permission mode and engine a person
// chose for it (the session file's own say on them is not a person's).
type SessionGrants struct {
	Rules          []string `json:"rules"`
	Chosen         bool     `json:"chosen,omitempty"`
	Persona        string   `json:"persona,omitempty"`
	PermissionMode string   `json:"permissionMode,omitempty"`
	Engine         string   `json:"engine,omitempty"`
	// Sandbox: a person ran this session in the kernel sandbox. Kept
	// once set: the session file's word cannot take it back.
	Sandbox bool `json:"sandbox,omitempty"`
}

// PersonaTrust is a persona file as a person last trusted it: the hash
// of its content and the grants it had.
type PersonaTrust struct {
	Hash      string    `json:"hash"`
	Grants    Grants    `json:"grants"`
	TrustedAt time.Time `json:"trustedAt"`
}

// Store reads and writes the records of a state directory. Safe for
// concurrent use, also by several processes.
type Store struct {
	dir   string
	mu    sync.Mutex // writers of this process
	cache recordCache
}

// Open returns the Store of stateDir, creating stateDir/trust (0700).
func Open(stateDir string) (*Store, error) {
	if stateDir == "" {
		return nil, errors.New("trust: no state directory")
	}
	dir := filepath.Join(stateDir, Dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	return &Store{dir: dir}, nil
}

// Path returns the file of root's record.
func (s *Store) Path(root string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:12])+recordFileSuffix)
}

// Load returns root's record: an empty one when there is none, and an
// empty one with an error wrapping ErrCorrupt when the file cannot be
// read as root's record (then nothing is trusted).
func (s *Store) Load(root string) (*Record, error) {
	root = filepath.Clean(root)
	return read(s.Path(root), root)
}

func read(path, root string) (*Record, error) {
	empty := &Record{Version: recordVersion, ProjectRoot: root}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return empty, fmt.Errorf("trust: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxFileSize+1)); err != nil {
		return empty, fmt.Errorf("trust: %s: %w", path, err)
	}
	return decode(buf.Bytes(), path, root)
}

// decode reads the bytes of root's record file (path).
func decode(data []byte, path, root string) (*Record, error) {
	empty := &Record{Version: recordVersion, ProjectRoot: root}
	bad := func(why string) (*Record, error) {
		return empty, fmt.Errorf("%w: %s: %s; nothing in it is trusted until a person grants again (the next grant replaces it and keeps it as %s)",
			ErrCorrupt, path, why, filepath.Base(path)+corruptSuffix)
	}
	if len(data) > MaxFileSize {
		return bad(fmt.Sprintf("larger than %d bytes", MaxFileSize))
	}
	var r Record
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return bad("not a trust record: " + err.Error())
	}
	switch {
	case r.Version != recordVersion:
		return bad(fmt.Sprintf("version %d (want %d)", r.Version, recordVersion))
	case r.ProjectRoot != root:
		return bad(fmt.Sprintf("it is the record of %q", r.ProjectRoot))
	}
	return &r, nil
}

// Update applies change to root's record and writes it, holding the
// record's lock across processes. A corrupt record is set aside (kept as
// <file>.corrupt) and change starts from an empty one. When change
// returns an error, nothing is written.
func (s *Store) Update(root string, change func(*Record) error) error {
	root = filepath.Clean(root)
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.Path(root)
	unlock, err := lockFile(path + lockSuffix)
	if err != nil {
		return err
	}
	defer unlock()
	r, err := read(path, root)
	if errors.Is(err, ErrCorrupt) {
		if rerr := os.Rename(path, path+corruptSuffix); rerr != nil {
			return fmt.Errorf("trust: setting the corrupt record aside: %w", rerr)
		}
	} else if err != nil {
		return err
	}
	if err := change(r); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	if len(data) > MaxFileSize {
		return fmt.Errorf("%w: %s would be larger than %d bytes", ErrTooLarge, path, MaxFileSize)
	}
	if err := atomicfile.Write(path, append(data, '\n'), nil); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	return nil
}

func (r *Record) check() error {
	switch {
	case len(r.Sessions) > MaxSessions:
		return fmt.Errorf("%w: more than %d sessions with rules", ErrTooLarge, MaxSessions)
	case len(r.Personas) > MaxPersonas:
		return fmt.Errorf("%w: more than %d persona files", ErrTooLarge, MaxPersonas)
	case len(r.MCP) > MaxMCPServers:
		return fmt.Errorf("%w: more than %d MCP servers", ErrTooLarge, MaxMCPServers)
	}
	for id, g := range r.Sessions {
		if len(g.Rules) > MaxRulesPer {
			return fmt.Errorf("%w: session %s has more than %d rules", ErrTooLarge, id, MaxRulesPer)
		}
	}
	return nil
}

// session returns session id's entry, made when there is none.
func (r *Record) session(id string) *SessionGrants {
	if r.Sessions == nil {
		r.Sessions = map[string]*SessionGrants{}
	}
	g := r.Sessions[id]
	if g == nil {
		g = &SessionGrants{}
		r.Sessions[id] = g
	}
	return g
}

// Rules returns the rules a person gave session id of root ("always").
// With a corrupt record it returns none and the error.
func (s *Store) Rules(root, id string) ([]string, error) {
	r, err := s.view(root)
	if g := r.Sessions[id]; g != nil {
		return slices.Clone(g.Rules), err
	}
	return nil, err
}

// AddRule records that a person allowed rule always in session id.
func (s *Store) AddRule(root, id, rule string) error {
	if rule == "" || len(rule) > maxRuleLen {
		return fmt.Errorf("trust: a rule of %d bytes", len(rule))
	}
	return s.Update(root, func(r *Record) error {
		g := r.session(id)
		if !slices.Contains(g.Rules, rule) {
			g.Rules = append(g.Rules, rule)
		}
		return nil
	})
}

// Session returns what a person gave session id of root (nil: nothing
// recorded). With a corrupt record it returns nil and the error.
func (s *Store) Session(root, id string) (*SessionGrants, error) {
	r, err := s.view(root)
	if g := r.Sessions[id]; g != nil {
		c := *g
		c.Rules = slices.Clone(g.Rules)
		return &c, err
	}
	return nil, err
}

// Choose records the persona, permission mode and engine a person chose
// for session id (creating it, or changing it through a door).
func (s *Store) Choose(root, id, personaID, mode, engine string) error {
	return s.Update(root, func(r *Record) error {
		g := r.session(id)
		g.Chosen, g.Persona, g.PermissionMode, g.Engine = true, personaID, mode, engine
		return nil
	})
}

// ChooseSandbox records that a person ran session id of root in the
// kernel sandbox (Harness.NewSession with Sandbox): every later turn is
// sandboxed whatever the session file says.
func (s *Store) ChooseSandbox(root, id string) error {
	return s.Update(root, func(r *Record) error {
		r.session(id).Sandbox = true
		return nil
	})
}

// CopyRules gives session to what a person gave session from (a fork).
func (s *Store) CopyRules(root, from, to string) error {
	g, err := s.Session(root, from)
	if err != nil || g == nil {
		return err
	}
	return s.Update(root, func(r *Record) error {
		*r.session(to) = *g
		return nil
	})
}

// SetSession records g as what a person gave session id of root,
// replacing what was recorded: another harness's record of it (a cluster
// node that moves the session here hands over its own).
func (s *Store) SetSession(root, id string, g SessionGrants) error {
	for _, rule := range g.Rules {
		if rule == "" || len(rule) > maxRuleLen {
			return fmt.Errorf("trust: a rule of %d bytes", len(rule))
		}
	}
	g.Rules = slices.Clone(g.Rules)
	return s.Update(root, func(r *Record) error {
		*r.session(id) = g
		return nil
	})
}

// DropSession forgets session id's rules (the session was deleted).
func (s *Store) DropSession(root, id string) error {
	r, err := s.view(root)
	if err != nil || r.Sessions[id] == nil {
		return err
	}
	return s.Update(root, func(r *Record) error {
		delete(r.Sessions, id)
		return nil
	})
}

// Persona returns how a person last trusted the persona file at path.
func (s *Store) Persona(root, path string) (*PersonaTrust, error) {
	r, err := s.view(root)
	if pt := r.Personas[path]; pt != nil {
		c := *pt
		c.Grants = pt.Grants.clone()
		return &c, err
	}
	return nil, err
}

// TrustPersona records that a person trusts the persona file at path as
// it is: content hash and grants.
func (s *Store) TrustPersona(root, path, hash string, g Grants) error {
	return s.Update(root, func(r *Record) error {
		if r.Personas == nil {
			r.Personas = map[string]*PersonaTrust{}
		}
		r.Personas[path] = &PersonaTrust{Hash: hash, Grants: g.clone(), TrustedAt: time.Now().UTC()}
		return nil
	})
}

// TrustPersonaIfNew is TrustPersona when path has no record yet (a
// person chose the persona for a session: as it is then, it is
// trusted). It reports whether it recorded.
func (s *Store) TrustPersonaIfNew(root, path, hash string, g Grants) (bool, error) {
	recorded := false
	if pt, err := s.Persona(root, path); err == nil && pt != nil {
		return false, nil
	}
	err := s.Update(root, func(r *Record) error {
		if r.Personas[path] != nil {
			return nil
		}
		if r.Personas == nil {
			r.Personas = map[string]*PersonaTrust{}
		}
		r.Personas[path] = &PersonaTrust{Hash: hash, Grants: g.clone(), TrustedAt: time.Now().UTC()}
		recorded = true
		return nil
	})
	return recorded, err
}

// MCPTrusted reports whether a person trusted project server name with
// the definition of hash.
func (s *Store) MCPTrusted(root, name, hash string) (bool, error) {
	r, err := s.view(root)
	return r.MCP[name] == hash && hash != "", err
}

// TrustMCP records that a person trusts project server name with the
// definition of hash.
func (s *Store) TrustMCP(root, name, hash string) error {
	return s.Update(root, func(r *Record) error {
		if r.MCP == nil {
			r.MCP = map[string]string{}
		}
		r.MCP[name] = hash
		return nil
	})
}

// Hash is the hash of a persona file's content, as the record and the
// trust routes name it.
func Hash(content []byte) string {
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}
