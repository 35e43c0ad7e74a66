package gateway

import (
	"strings"

	"github.com/chirality/harness/internal/eventsel"
)

// eventsParam documents ?events= (eventsel.Param) on the two event
// streams: one mechanism for POST /turn and GET /session/{id}/events.
var eventsParam = param{Name: eventsel.Param, In: "query",
	Description: "The stream carries 004's UIEvent types only (chat:delta, chat:complete, tool:start, tool:result, session:init, session:complete, session:error, process:exit) unless this opts in to extension types: `all` (every type, later ones too), or a comma-separated list of groups (" +
		strings.Join(eventsel.GroupNames(), ", ") + ") and event types, e.g. `approval,usage`. An unknown name is 400. Left-out records keep their seq (the SSE id), so ids have gaps and Last-Event-ID resumes across them. A client of a server that asks for approvals (serve --approvals) must ask for approval, or a turn waiting for a person looks hung.",
	Schema: &schema{Type: "string", MaxLength: ptr(int64(eventsel.MaxParam))}}
