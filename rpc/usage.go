package rpc

import (
	"encoding/json"
	"path/filepath"

	"github.com/chirality/harness"
	"github.com/chirality/harness/usage"
)

// usageGet answers usage.get (extension): what the sessions of the
// server's directory (or params.directory) used, as GET
// /api/harness/usage answers: {total, groups, rateLimits}.
func (s *Server) usageGet(raw json.RawMessage) (any, *Error) {
	var p struct {
		By        string `json:"by"`
		Since     string `json:"since"`
		Directory string `json:"directory"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if err := firstTooLong(tooLong("directory", p.Directory, MaxPathBytes), tooLong("since", p.Since, MaxNameBytes)); err != nil {
		return nil, err
	}
	q := harness.UsageQuery{By: p.By, ProjectRoot: s.opts.Cwd}
	if p.Directory != "" {
		q.ProjectRoot = p.Directory
		if !filepath.IsAbs(p.Directory) {
			q.ProjectRoot = filepath.Join(s.opts.Cwd, p.Directory)
		}
	}
	if p.Since != "" {
		t, err := usage.ParseSince(p.Since)
		if err != nil {
			return nil, errorf(CodeInvalidParams, "invalid params: "+err.Error())
		}
		q.Since = t
	}
	rep, err := s.h.Usage(q)
	if err != nil {
		return nil, errorf(CodeInvalidParams, "invalid params: "+err.Error())
	}
	return rep, nil
}
