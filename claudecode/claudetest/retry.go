package claudetest

import (
	"sync"
	"time"
)

// Overloaded is a retryable 529 answer, the one the real API sends when it
// is overloaded: Claude Code and the Anthropic SDKs retry it with back-off.
func Overloaded() Reply {
	return Reply{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded", Retryable: true}
}

// FailThenAnswer makes the fake answer the conversation's first n requests
// with Overloaded and the later ones with text (side requests get "OK").
// It returns when the first failure was answered (zero before that), so a
// test can bound how long the client's retry report took to show.
func (f *FakeAPI) FailThenAnswer(n int, text string) (firstFailure func() time.Time) {
	var mu sync.Mutex
	var seen int
	var first time.Time
	f.SetResponder(func(req *Request) Reply {
		if isSideRequest(req) {
			return TextReply("OK")
		}
		mu.Lock()
		defer mu.Unlock()
		seen++
		if seen <= n {
			if seen == 1 {
				first = time.Now()
			}
			return Overloaded()
		}
		return TextReply(text)
	})
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return first
	}
}
