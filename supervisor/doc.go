// Package supervisor watches an agent and corrects it when it stalls or
// spirals: it keeps a rolling window of the agent's turns (runner
// Messages), asks a model about it every few turns, and whispers to the
// agent or escalates to people on the model's one-line verdict.
//
//	s := supervisor.New(supervisor.Config{Evaluate: supervisor.CoreEvaluator(h, dir, "anthropic", "", "")})
//	s.OnWhisper(func(msg, action string) { … })  // CORRECTION | THINK_DEEPER → the agent's next skill call
//	s.OnEscalation(func(msg string) { … })       // → the webhook; the runner keeps running
//	err := s.Start(ctx)
//	keeper.OnMessage(s.Observe)                   // never blocks
//	// every EvalInterval (5) turns: Prompt(last WindowSize (20) turns) → Evaluate (one-shot, no
//	// tools) → ParseVerdict: OK | CORRECTION <msg> | THINK_DEEPER <msg> | ESCALATION <msg>
//	// (unparseable → OK, logged) → whisper / escalate / count a clean evaluation
//	s.Resume()                                    // a person's `resume` after an escalation
//	err = s.Stop(ctx)
//
// # Corrections, escalation, pause and resume
//
// A CORRECTION or THINK_DEEPER verdict is whispered to the agent and
// counts as a correction; an OK verdict means the corrections worked and
// resets the count. A correction still "failing" when the next one comes
// keeps the run going: the EscalationThreshold-th (3rd) correction in a
// row — whispered like the others — also escalates. An ESCALATION verdict
// escalates at once.
//
// An escalation pauses the supervisor; the runner keeps running (the
// people decide what to do with the agent). While paused the supervisor
// keeps observing and evaluating but neither whispers nor escalates
// (people are already on it: more whispers would fight them). It resumes
// in whichever comes first:
//
//   - ResumeAfterClean (5) OK evaluations in a row — the agent is back on
//     track by itself or with the people's help, so supervision returns
//     without anyone having to remember it;
//   - a manual Resume — a person who fixed things wants supervision back
//     now.
//
// A correction or escalation verdict while paused restarts the count of
// clean evaluations. An evaluator error is no verdict at all (logged).
package supervisor
