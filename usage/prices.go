// Package usage is what agents cost: the one price table the harness
// prices tokens with when an engine does not say what a call cost, and
// the totals of the usage:update events of sessions' event logs (by
// session, engine, model or day), kept in an index that grows with the
// logs.
package usage

import "strings"

// PricesDated is when the price table was last checked against the
// providers' published list prices. A cost the table gives is an
// estimate (usage:update says costEstimated).
const PricesDated = "2026-11-26"

// Price is a model's price in US dollars per million tokens; CacheRead
// and CacheWrite are multiples of Input.
type Price struct {
	Input, Output         float64
	CacheRead, CacheWrite float64
}

// Prices by model family, per million tokens, first prefix that matches
// wins. Anthropic: cache reads 0.1× the input price, writes 1.25×.
// OpenAI: cached input 0.1×, no write price. A model the table does not
// know is priced as Default.
var Prices = []struct {
	Prefix string
	Price  Price
}{
	{"claude-haiku-5", Price{1, 5, 0.1, 1.25}},
	{"claude-haiku-4", Price{1, 5, 0.1, 1.25}},
	{"claude-3-5-haiku", Price{0.8, 4, 0.1, 1.25}},
	{"claude-3-haiku", Price{0.25, 1.25, 0.1, 1.25}},
	{"claude-sonnet", Price{3, 15, 0.1, 1.25}},
	{"claude-3-5-sonnet", Price{3, 15, 0.1, 1.25}},
	{"claude-3-7-sonnet", Price{3, 15, 0.1, 1.25}},
	{"claude-opus-4-0", Price{15, 75, 0.1, 1.25}},
	{"claude-opus-4-1", Price{15, 75, 0.1, 1.25}},
	{"claude-opus-4-2", Price{15, 75, 0.1, 1.25}},
	{"claude-opus", Price{5, 25, 0.1, 1.25}},
	{"claude-3-opus", Price{15, 75, 0.1, 1.25}},
	{"gpt-5-nano", Price{0.05, 0.4, 0.1, 0}},
	{"gpt-5-mini", Price{0.25, 2, 0.1, 0}},
	{"gpt-5", Price{1.25, 10, 0.1, 0}},
	{"gpt-4.1-mini", Price{0.4, 1.6, 0.25, 0}},
	{"gpt-4.1", Price{2, 8, 0.25, 0}},
	{"o4-mini", Price{1.1, 4.4, 0.25, 0}},
	{"o3", Price{2, 8, 0.25, 0}},
}

// Default is the price of a model the table does not know (Sonnet's).
var Default = Price{3, 15, 0.1, 1.25}

// PriceOf returns model's price (Default when unknown). A provider
// prefix ("anthropic/", "openai/") and a date or [1m] suffix are fine.
func PriceOf(model string) Price {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, p := range Prices {
		if strings.HasPrefix(m, p.Prefix) {
			return p.Price
		}
	}
	return Default
}

// Cost is what the tokens cost on model, in US dollars.
func Cost(model string, input, output, cacheRead, cacheWrite int64) float64 {
	p := PriceOf(model)
	return (float64(input)*p.Input + float64(output)*p.Output +
		float64(cacheRead)*p.Input*p.CacheRead + float64(cacheWrite)*p.Input*p.CacheWrite) / 1e6
}
