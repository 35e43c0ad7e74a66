package gateway

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/chirality/harness/internal/httpguard"
)

type previewJSON struct {
	ToTurn     int64        `json:"toTurn" oa:"format=int64"`
	Turn       *turnJSON    `json:"turn,omitempty"`
	Files      []changeJSON `json:"files" doc:"what rewinding the files would change back"`
	FilesError string       `json:"filesError,omitempty" doc:"why the files cannot be rewound to this turn (no snapshot, project too large); files is then empty"`
}

// previewRewind answers what rewinding the files to before a turn would
// change, with a patch per file (bounded by the checkpoint store: a cut
// patch says truncated). It changes nothing and may run during a turn. A
// turn whose files cannot be rewound (no snapshot was taken before it,
// the project is too large, no git here) is still previewed, with
// filesError saying why: its conversation may still be cut.
func (g *Gateway) previewRewind(w http.ResponseWriter, r *http.Request) {
	toTurn, err := toTurnOf(r)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	p, err := g.ops.PreviewRewind(r.Context(), mux.Vars(r)["id"], toTurn, 0)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	tj := turnOf(p.Turn)
	out := previewJSON{ToTurn: toTurn, Turn: &tj, Files: []changeJSON{}, FilesError: p.FilesError}
	for _, c := range p.Files {
		out.Files = append(out.Files, changeJSON{Path: c.Path, Op: c.Op, Patch: c.Patch, Truncated: c.Truncated})
	}
	writeJSON(w, http.StatusOK, out)
}

// toTurnOf reads ?toTurn=: a positive integer.
func toTurnOf(r *http.Request) (int64, error) {
	v := r.URL.Query().Get("toTurn")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: toTurn must be a positive integer, got %q", errBadSeq, httpguard.Clip(v))
	}
	return n, nil
}
