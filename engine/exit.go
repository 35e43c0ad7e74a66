package engine

import "github.com/chirality/harness/event"

// TurnExit is the process:exit every engine ends a turn with. Its Code is
// 0 exactly when the turn completed (the stream's session:complete) and
// never 0 otherwise, whatever the agent's process said:
//
//	the turn                        Code                       Signal
//	completed                       0                          the process's, if a signal ended it
//	failed (session:error)          the process's status, or 1 when that was 0 or there is no process
//	interrupted / killed            likewise (-1 when a signal ended the process)   the signal
//	failed to start                 likewise
//
// code and signal are the agent process's exit status and signal when a
// process ended with the turn ((0, "") when none did: an ACP agent kept
// for the session, the native loop); a process ended by a signal reports
// code -1.
func TurnExit(completed bool, code int, signal string) *event.ProcessExit {
	switch {
	case completed:
		code = 0
	case code == 0:
		code = 1
	}
	return &event.ProcessExit{Code: code, Signal: signal}
}
