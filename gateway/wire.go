package gateway

import (
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/trust"
)

// The bodies the gateway writes that are not a type of the core: named
// so the OpenAPI document is made from them (GenerateOpenAPI).

// errorJSON is every error's body.
type errorJSON struct {
	Error string `json:"error"`
}

// envelopeJSON is {session, pendingApprovals, permissionMode}: the
// answer of create, get, patch and fork.
type envelopeJSON struct {
	Session          *session.Session          `json:"session"`
	PendingApprovals []event.ApprovalRequested `json:"pendingApprovals" doc:"approval requests the session waits on now"`
	PermissionMode   string                    `json:"permissionMode" doc:"the permission mode the session's turns run in (server setting over persona over dontAsk)" oa:"optional"`
}

type rootsJSON struct {
	Roots []string `json:"roots"`
	Demo  bool     `json:"demo"`
}

type resolvedJSON struct {
	Resolved bool `json:"resolved" oa:"const=true"`
}

type interruptedJSON struct {
	Interrupted bool `json:"interrupted"`
}

type trustListJSON struct {
	Items       []trust.Item `json:"items"`
	RecordError string       `json:"recordError,omitempty" doc:"the trust record could not be read: nothing in it is trusted"`
}

type trustAcceptedJSON struct {
	Trusted *trust.Item `json:"trusted"`
}

// mergeConflictJSON is a merge's 409.
type mergeConflictJSON struct {
	Error     string   `json:"error"`
	Merged    bool     `json:"merged" oa:"optional"`
	Conflicts []string `json:"conflicts,omitempty" doc:"the conflicting paths; the target branch and the project's tree are untouched"`
}

// documentJSON stands for the OpenAPI document itself (an object).
type documentJSON struct{}
