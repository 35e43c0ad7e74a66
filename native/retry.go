package native

import (
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/option"
)

// RetryHandler is an optional interface of an EventHandler: it sees each
// retry of a failed model request before the SDK waits to send it again.
type RetryHandler interface{ OnRetry(r Retry) }

// Retry describes one retry of a model request.
type Retry struct {
	Attempt    int           // from 1
	MaxRetries int           // the limit (Config.MaxRetries as applied)
	Delay      time.Duration // the SDK's back-off before its jitter (which shortens it by up to a quarter)
	Status     int           // the HTTP status, 0 when the request got no answer
	Error      string        // a short description, with the API key scrubbed
}

// defaultMaxRetries is the SDK's own default.
const defaultMaxRetries = 2

// maxRetries is the limit Config.MaxRetries asks for.
func (c Config) maxRetries() int {
	switch {
	case c.MaxRetries < 0:
		return 0
	case c.MaxRetries == 0:
		return defaultMaxRetries
	}
	return c.MaxRetries
}

// observeRetries is a middleware that sees every attempt of a request
// (the SDK's retry loop runs around the middlewares): when an attempt
// failed in a way the SDK retries and retries are left, it tells the
// handler before the SDK's back-off starts. The rules mirror the SDK's
// (anthropic-sdk-go requestconfig: x-should-retry, then 408, 409, 429 and
// 5xx; any error without a response); they are tested against the SDK.
func (h *Harness) observeRetries() option.RequestOption {
	max := h.cfg.maxRetries()
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		rh, ok := h.handler.(RetryHandler)
		if !ok || req.Context().Err() != nil {
			return res, err
		}
		n, _ := strconv.Atoi(req.Header.Get("X-Stainless-Retry-Count"))
		if n >= max || !sdkRetries(res, err) {
			return res, err
		}
		r := Retry{Attempt: n + 1, MaxRetries: max, Delay: sdkDelay(res, n)}
		switch {
		case err != nil:
			r.Error = connError(err)
		case res != nil:
			r.Status = res.StatusCode
			r.Error = statusText(res.StatusCode)
		}
		if k := h.cfg.APIKey; len(k) >= 4 {
			r.Error = strings.ReplaceAll(r.Error, k, "[REDACTED]")
		}
		rh.OnRetry(r)
		return res, err
	})
}

func sdkRetries(res *http.Response, err error) bool {
	if err != nil || res == nil {
		return true
	}
	switch res.Header.Get("x-should-retry") {
	case "true":
		return true
	case "false":
		return false
	}
	c := res.StatusCode
	return c == http.StatusRequestTimeout || c == http.StatusConflict || c == http.StatusTooManyRequests || c >= http.StatusInternalServerError
}

func sdkDelay(res *http.Response, n int) time.Duration {
	if res != nil {
		if v, err := strconv.ParseFloat(res.Header.Get("Retry-After-Ms"), 64); err == nil {
			return max(0, time.Duration(v*float64(time.Millisecond)))
		}
		if v := res.Header.Get("Retry-After"); v != "" {
			if s, err := strconv.ParseFloat(v, 64); err == nil {
				return max(0, time.Duration(s*float64(time.Second)))
			}
			if t, err := http.ParseTime(v); err == nil {
				return max(0, time.Until(t))
			}
		}
	}
	return min(8*time.Second, time.Duration(0.5*float64(time.Second)*math.Pow(2, float64(n))))
}

// connError is the cause of a request without an answer, without the
// URL: "connect: connection refused".
func connError(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}

func statusText(code int) string {
	switch code {
	case 529:
		return "overloaded"
	case http.StatusTooManyRequests:
		return "rate limited"
	}
	if t := http.StatusText(code); t != "" {
		return strings.ToLower(t)
	}
	return "HTTP " + strconv.Itoa(code)
}
