package engine

import "slices"

// PermissionModes are the permission modes a server, a persona or a turn
// may name (Request.PermissionMode). They are Claude Code's
// --permission-mode values; every engine maps them (see each engine's
// package doc for how) and the doors check a user's value against them.
var PermissionModes = []string{"default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto"}

// ValidPermissionMode reports whether mode is one of PermissionModes.
// "" is not: callers decide what an unset mode means.
func ValidPermissionMode(mode string) bool { return slices.Contains(PermissionModes, mode) }
