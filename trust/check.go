package trust

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/persona"
)

// Kinds of what a person trusts.
const (
	KindPersona = "persona"
	KindMCP     = "mcp"
)

// More sentinel errors of Accept.
var (
	// ErrNotFound: no such persona file or project MCP server.
	ErrNotFound = engine.NewError(engine.ErrNotFound, "nothing of that name to trust")
	// ErrStale: the hash given is not the file's or definition's now: it
	// changed since the person looked.
	ErrStale = engine.NewError(engine.ErrConflict, "changed since it was shown")
	// ErrInvalid: an unknown kind, or a name that is not one.
	ErrInvalid = engine.NewError(engine.ErrInvalid, "invalid trust request")
)

// Item is one thing in a project that waits for a person's trust: a
// persona file whose grants widened since a person last trusted it, or a
// project .mcp.json server nobody trusted in its present definition.
type Item struct {
	Kind string `json:"kind" oa:"enum=persona|mcp"`
	// Name is the persona ID or the server's name; Path the persona file.
	Name string `json:"name" doc:"the persona ID or the server name"`
	Path string `json:"path,omitempty" doc:"the persona file"`
	// Hash is what accepting it names (POST /api/harness/trust, harness
	// trust accept): the file's or the definition's hash now.
	Hash string `json:"hash" doc:"the file's or definition's hash now: what POST /trust names"`
	// Changes are the persona's widened grants.
	Changes []Change `json:"changes,omitempty"`
	// Definition is the server's command or URL (never env or headers).
	Definition string `json:"definition,omitempty" doc:"the server's command or URL (never its env or headers)"`
	// Reason says, in a sentence, what waits and what runs meanwhile.
	Reason string `json:"reason"`
}

// PersonaPath is where the project's file of persona id is.
func PersonaPath(root, id string) string {
	return filepath.Join(root, persona.AgentsDir, persona.FileName(id))
}

// CheckPersona returns the persona a session of root runs with: p
// itself when it is built in, unchanged since a person trusted it, or
// changed without widening a grant; otherwise p restricted to the grants
// last trusted (Restrict) and the Item that says what waits. A file
// nobody trusted before runs with the grants of the built-in persona it
// overrides, else with none (Grants{}). err reports a corrupt record
// (nothing in it is trusted); the persona returned is still safe to use.
func (s *Store) CheckPersona(root string, p *persona.Persona) (*persona.Persona, *Item, error) {
	if p == nil || strings.HasPrefix(p.SourceFile, persona.EmbeddedPrefix) {
		return p, nil, nil
	}
	data, err := os.ReadFile(p.SourceFile)
	if err != nil {
		return nil, nil, err
	}
	hash := Hash(data)
	rec, lerr := s.Load(root)
	pt := rec.Personas[p.SourceFile]
	var trusted Grants
	why := "a person trusted it"
	switch {
	case pt != nil && pt.Hash == hash:
		return p, nil, lerr
	case pt != nil:
		trusted = pt.Grants
		if pt.Hash == builtinHash {
			why = "a person chose the built-in persona " + p.ID + " it overrides"
		}
	default:
		if b, ok := persona.Builtin(p.ID); ok {
			trusted, why = GrantsOf(b), "the built-in persona "+p.ID+" it overrides"
		} else {
			why = "nobody trusted this file"
		}
	}
	q, changes := Restrict(p, trusted)
	if len(changes) == 0 {
		return p, nil, lerr
	}
	var fields []string
	for _, c := range changes {
		fields = append(fields, c.Field)
	}
	return q, &Item{Kind: KindPersona, Name: p.ID, Path: p.SourceFile, Hash: hash, Changes: changes,
		Reason: fmt.Sprintf("persona file %s widens %s beyond what was trusted (%s); it runs with the trusted grants until a person trusts it",
			p.SourceFile, strings.Join(fields, ", "), why)}, lerr
}

// ChoosePersona records the persona a person chose for a session
// (creating one, or switching a session to it), when nobody trusted its
// path before: a project file as it is then, and a built-in persona's
// grants under the path of the file that would override it, so that a
// file written there later (by an agent) does not widen what the
// persona grants, in this session or any new one.
func (s *Store) ChoosePersona(root string, p *persona.Persona) error {
	if p == nil {
		return nil
	}
	if strings.HasPrefix(p.SourceFile, persona.EmbeddedPrefix) {
		_, err := s.TrustPersonaIfNew(root, PersonaPath(root, p.ID), builtinHash, GrantsOf(p))
		return err
	}
	data, err := os.ReadFile(p.SourceFile)
	if err != nil {
		return err
	}
	_, err = s.TrustPersonaIfNew(root, p.SourceFile, Hash(data), GrantsOf(p))
	return err
}

// builtinHash is the hash recorded for a built-in persona's grants: no
// file has it.
const builtinHash = "builtin"

// MCPServers splits the servers of root's .mcp.json (project) into the
// trusted and an Item for each untrusted one. A name the harness's own
// configuration (configured: --mcp-config, Config.MCP) defines is the
// configured server, trusted.
func (s *Store) MCPServers(root string, project, configured *mcpconfig.Config) (untrusted []Item, err error) {
	if project.Len() == 0 {
		return nil, nil
	}
	rec, err := s.Load(root)
	for _, srv := range project.Servers {
		if _, ok := configured.Get(srv.Name); ok {
			continue
		}
		h := ServerHash(srv)
		if rec.MCP[srv.Name] == h {
			continue
		}
		why := "nobody trusted it"
		if rec.MCP[srv.Name] != "" {
			why = "its definition changed since a person trusted it"
		}
		untrusted = append(untrusted, Item{Kind: KindMCP, Name: srv.Name, Hash: h, Definition: srv.String(),
			Reason: fmt.Sprintf("MCP server %s of the project's %s is not started: %s", srv.Name, mcpconfig.FileName, why)})
	}
	return untrusted, err
}

// Pending lists what waits for a person in root: persona files whose
// grants widened, and project MCP servers not trusted (configured as for
// MCPServers). A malformed .mcp.json or persona file is not listed (it
// is reported where it is used). err reports a corrupt record.
func (s *Store) Pending(root string, configured *mcpconfig.Config) ([]Item, error) {
	out := []Item{}
	var errs []error
	entries, err := persona.List(root)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Persona == nil || strings.HasPrefix(e.SourceFile, persona.EmbeddedPrefix) {
			continue
		}
		rec, _ := s.Load(root)
		if rec.Personas[e.SourceFile] == nil {
			if _, ok := persona.Builtin(e.ID); !ok {
				continue // nobody chose it yet: choosing it trusts it
			}
		}
		_, it, err := s.CheckPersona(root, e.Persona)
		if err != nil {
			errs = append(errs, err)
		}
		if it != nil {
			out = append(out, *it)
		}
	}
	project, perr := mcpconfig.Project(root)
	if perr == nil {
		items, err := s.MCPServers(root, project, configured)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, items...)
	}
	return out, errors.Join(dedupe(errs)...)
}

func dedupe(errs []error) []error {
	seen := map[string]bool{}
	var out []error
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return out
}

// Accept records a person's trust in root: kind persona with name (an ID)
// or path (its file), or kind mcp with name (a server of .mcp.json). hash
// must be the file's or definition's hash now (as Pending and the
// trust:required event show it), else ErrStale: a person trusts what they
// saw. It returns what was trusted.
func (s *Store) Accept(root, kind, name, path, hash string) (*Item, error) {
	switch kind {
	case KindPersona:
		if path == "" {
			if !persona.ValidID(name) {
				return nil, fmt.Errorf("%w: persona %q: give its ID or file path", ErrInvalid, name)
			}
			path = PersonaPath(root, name)
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		path = filepath.Clean(path)
		if filepath.Dir(path) != filepath.Join(root, persona.AgentsDir) {
			return nil, fmt.Errorf("%w: %s is not a persona file of %s", ErrInvalid, path, root)
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: no persona file %s", ErrNotFound, path)
		}
		if err != nil {
			return nil, err
		}
		if h := Hash(data); h != hash {
			return nil, fmt.Errorf("%w: %s is %s now, not %s; look at it again", ErrStale, path, h, hash)
		}
		p, err := persona.Parse(path)
		if err != nil {
			return nil, err
		}
		if err := s.TrustPersona(root, path, hash, GrantsOf(p)); err != nil {
			return nil, err
		}
		return &Item{Kind: kind, Name: p.ID, Path: path, Hash: hash, Reason: "trusted"}, nil
	case KindMCP:
		project, err := mcpconfig.Project(root)
		if err != nil {
			return nil, err
		}
		srv, ok := project.Get(name)
		if !ok {
			return nil, fmt.Errorf("%w: no server %q in %s", ErrNotFound, name, filepath.Join(root, mcpconfig.FileName))
		}
		if h := ServerHash(srv); h != hash {
			return nil, fmt.Errorf("%w: server %s is %s now, not %s; look at it again", ErrStale, name, h, hash)
		}
		if err := s.TrustMCP(root, name, hash); err != nil {
			return nil, err
		}
		return &Item{Kind: kind, Name: name, Hash: hash, Definition: srv.String(), Reason: "trusted"}, nil
	}
	return nil, fmt.Errorf("%w: kind %q (want persona or mcp)", ErrInvalid, kind)
}

// CurrentHash is the hash of root's persona file of ID name (kind
// persona) or of its .mcp.json server name (kind mcp) as it is now.
func CurrentHash(root, kind, name string) (string, error) {
	switch kind {
	case KindPersona:
		if !persona.ValidID(name) {
			return "", fmt.Errorf("%w: persona %q", ErrInvalid, name)
		}
		data, err := os.ReadFile(PersonaPath(root, name))
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrNotFound, err)
		}
		return Hash(data), nil
	case KindMCP:
		project, err := mcpconfig.Project(root)
		if err != nil {
			return "", err
		}
		srv, ok := project.Get(name)
		if !ok {
			return "", fmt.Errorf("%w: no server %q in %s", ErrNotFound, name, filepath.Join(root, mcpconfig.FileName))
		}
		return ServerHash(srv), nil
	}
	return "", fmt.Errorf("%w: kind %q (want persona or mcp)", ErrInvalid, kind)
}
