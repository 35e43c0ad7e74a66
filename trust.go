package harness

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/persona"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/trust"
)

// The trust record (package trust) is what a person granted, kept in
// the state directory, outside every project: a session's "always"
// rules, the persona, permission mode and engine a person chose for it,
// the persona files and project MCP servers a person trusted. What the
// project's files say beyond it (the agent can write them) grants
// nothing: a turn runs with what the record allows and says, in a
// trust:required event, what it did not honour.

// Trust returns the trust record of this Harness's state directory.
func (h *Harness) Trust() *trust.Store { return h.trust }

// PendingTrust lists what waits for a person's trust in the project at
// projectRoot: persona files whose grants widened and project .mcp.json
// servers nobody trusted (as they are now).
func (h *Harness) PendingTrust(projectRoot string) ([]trust.Item, error) {
	root, err := h.ResolveRoot(projectRoot)
	if err != nil {
		return nil, err
	}
	return h.trust.Pending(root, h.cfg.MCP)
}

// AcceptTrust records a person's trust (see trust.Store.Accept): kind
// persona (name = ID, or path) or mcp (name), at hash, the hash the
// person saw. It fails with trust.ErrStale when the file changed since.
func (h *Harness) AcceptTrust(projectRoot, kind, name, path, hash string) (*trust.Item, error) {
	root, err := h.ResolveRoot(projectRoot)
	if err != nil {
		return nil, err
	}
	it, err := h.trust.Accept(root, kind, name, path, hash)
	if err == nil {
		h.projectLog(root).Info().Str("kind", kind).Str("name", it.Name).Str("path", it.Path).Str("hash", hash).Msg("trusted by a person")
	}
	return it, err
}

// choose records what a person chose for session s (creation, update,
// a turn's persona switch): from now on the session file's own word on
// them counts for nothing. The persona's file, first chosen, is trusted
// as it is.
func (h *Harness) choose(s *session.Session, p *persona.Persona) {
	if err := h.trust.Choose(s.ProjectRoot, s.ID, s.Persona, s.PermissionMode, h.sessionEngine(s)); err != nil {
		h.projectLog(s.ProjectRoot).Error().Str("sessionId", s.ID).Err(err).Msg("trust record: the session's choices could not be kept")
	}
	if err := h.trust.ChoosePersona(s.ProjectRoot, p); err != nil {
		h.projectLog(s.ProjectRoot).Error().Str("sessionId", s.ID).Err(err).Msg("trust record: the persona could not be recorded")
	}
	if s.Sandbox {
		if err := h.trust.ChooseSandbox(s.ProjectRoot, s.ID); err != nil {
			h.projectLog(s.ProjectRoot).Error().Str("sessionId", s.ID).Err(err).Msg("trust record: the sandbox could not be recorded")
		}
	}
}

// loadPersona is persona.Load restricted to the grants a person trusted
// (trust.Store.CheckPersona), with the notice of what was not honoured.
func (h *Harness) loadPersona(root, id string) (*persona.Persona, *event.TrustRequired, error) {
	p, err := persona.Load(root, id)
	if err != nil {
		return nil, nil, err
	}
	q, it, terr := h.trust.CheckPersona(root, p)
	if q == nil {
		return nil, nil, terr
	}
	if terr != nil {
		h.projectLog(root).Warn().Err(terr).Msg("trust record unreadable")
	}
	if it == nil {
		return q, nil, nil
	}
	n := &event.TrustRequired{Kind: trust.KindPersona, Name: it.Name, Path: it.Path, Hash: it.Hash, Message: it.Reason}
	for _, c := range it.Changes {
		n.Changes = append(n.Changes, event.TrustChange(c))
	}
	return q, n, nil
}

// trustSession puts back, in s (the caller's copy), what a person chose
// for the session where the session file says otherwise, and returns the
// rules a person gave it and a notice of what the file said that was not
// honoured. A session with nothing recorded (made before the record
// existed) has its persona, mode and engine recorded as they are now.
func (h *Harness) trustSession(s *session.Session) (rules []string, notice *event.TrustRequired) {
	g, err := h.trust.Session(s.ProjectRoot, s.ID)
	if err != nil {
		h.projectLog(s.ProjectRoot).Warn().Str("sessionId", s.ID).Err(err).Msg("trust record unreadable: no rule of the session is honoured")
	}
	var changes []event.TrustChange
	if g != nil && g.Chosen {
		fix := func(field string, file *string, chosen string) {
			if *file != chosen {
				changes = append(changes, event.TrustChange{Field: field, Trusted: orNone(chosen), Now: orNone(*file)})
				*file = chosen
			}
		}
		fix("persona", &s.Persona, g.Persona)
		fix("permissionMode", &s.PermissionMode, g.PermissionMode)
		if h.sessionEngine(s) != g.Engine && g.Engine != "" {
			fix("engine", &s.Engine, g.Engine)
		}
	} else if err == nil {
		h.choose(s, nil)
	}
	if g != nil {
		rules = g.Rules
	}
	var ignored []string
	for _, r := range s.Rules {
		if !slices.Contains(rules, r) {
			ignored = append(ignored, r)
		}
	}
	if len(ignored) == 0 && len(changes) == 0 {
		return rules, nil
	}
	// The file is put back to what the record says at the turn's save.
	s.Rules = slices.Clone(rules)
	var what []string
	if len(ignored) > 0 {
		what = append(what, "rules "+strings.Join(ignored, ", "))
	}
	for _, c := range changes {
		what = append(what, c.Field+" "+c.Now)
	}
	return rules, &event.TrustRequired{Kind: "session", Name: s.ID, Path: session.FilePath(s.ProjectRoot, s.ID), Rules: ignored, Changes: changes,
		Message: fmt.Sprintf("the session file says %s, which no person gave this session: not honoured (a person grants rules by answering \"always\", and chooses the rest through a door)",
			strings.Join(what, "; "))}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// untrustedMCP removes from cfg (a turn's servers) the project servers no
// person trusted, and returns their notices and session:init statuses. A
// server of the same name from the harness's own configuration or a
// trusted persona is another definition and stays.
func (h *Harness) untrustedMCP(root string, project, cfg *mcpconfig.Config) (*mcpconfig.Config, []event.TrustRequired, []event.MCPServerStatus) {
	items, err := h.trust.MCPServers(root, project, h.cfg.MCP)
	if err != nil {
		h.projectLog(root).Warn().Err(err).Msg("trust record unreadable: no project MCP server is trusted")
	}
	if len(items) == 0 || cfg == nil {
		return cfg, nil, nil
	}
	var notices []event.TrustRequired
	var status []event.MCPServerStatus
	drop := map[string]bool{}
	for _, it := range items {
		ps, _ := project.Get(it.Name)
		if s, ok := cfg.Get(it.Name); !ok || trust.ServerHash(s) != trust.ServerHash(ps) {
			continue // not in this turn's selection, or another definition
		}
		drop[it.Name] = true
		notices = append(notices, event.TrustRequired{Kind: trust.KindMCP, Name: it.Name, Hash: it.Hash, Message: it.Reason})
		status = append(status, event.MCPServerStatus{Name: it.Name, Status: "untrusted",
			Error: "not started: a person has not trusted this server of the project's .mcp.json (harness trust accept mcp " + it.Name + ")"})
	}
	out := &mcpconfig.Config{}
	for _, s := range cfg.Servers {
		if !drop[s.Name] {
			out.Servers = append(out.Servers, s)
		}
	}
	return out, notices, status
}
