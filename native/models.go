package native

import "strings"

// DefaultModel is the current Haiku. The specification named
// claude-3-haiku-20240307, which the API has retired.
const DefaultModel = "claude-haiku-5-5"

// Models maps the aliases ResolveModel accepts to the model IDs requests
// use:
//
//	haiku  → claude-haiku-5-5
//	sonnet → claude-sonnet-5-5
//	opus   → claude-opus-5-5
//
// Any other name, a full ID included, is sent as given: a retired ID the
// specification names (claude-3-5-sonnet-20241022) goes to the endpoint
// as it is, which may still serve it (a proxy, a compatible endpoint).
// Mapping it to the current model of its family is asked for with
// Config.UpgradeRetired (see Retired).
var Models = map[string]string{
	"haiku":  "claude-haiku-5-5",
	"sonnet": "claude-sonnet-5-5",
	"opus":   "claude-opus-5-5",
}

// Retired maps the retired IDs the specification and older
// configurations name to the current model of each one's family: what
// Config.UpgradeRetired sends instead of them, and only then.
//
//	claude-3-haiku-20240307, claude-3-5-haiku-*   → claude-haiku-5-5
//	claude-3-sonnet-*, claude-3-5-sonnet-*, 3-7-* → claude-sonnet-5-5
//	claude-3-opus-*                               → claude-opus-5-5
var Retired = map[string]string{
	"claude-3-haiku-20240307":    "claude-haiku-5-5",
	"claude-3-5-haiku-20241022":  "claude-haiku-5-5",
	"claude-3-5-haiku-latest":    "claude-haiku-5-5",
	"claude-3-sonnet-20240229":   "claude-sonnet-5-5",
	"claude-3-5-sonnet-20240620": "claude-sonnet-5-5",
	"claude-3-5-sonnet-20241022": "claude-sonnet-5-5",
	"claude-3-5-sonnet-latest":   "claude-sonnet-5-5",
	"claude-3-7-sonnet-20250219": "claude-sonnet-5-5",
	"claude-3-7-sonnet-latest":   "claude-sonnet-5-5",
	"claude-3-opus-20240229":     "claude-opus-5-5",
	"claude-3-opus-latest":       "claude-opus-5-5",
}

// ResolveModel returns the model ID for name ("" = DefaultModel): an
// alias of Models mapped, anything else as given.
func ResolveModel(name string) string {
	n := trimModel(name)
	if n == "" {
		return DefaultModel
	}
	if id, ok := Models[n]; ok {
		return id
	}
	return strings.TrimSpace(name)
}

// UpgradeRetired returns the current model of a retired ID's family
// (Retired), any other ID as given.
func UpgradeRetired(id string) string {
	if cur, ok := Retired[trimModel(id)]; ok {
		return cur
	}
	return id
}

// Price is a model's price in US dollars per million tokens.
type Price struct {
	Input, Output float64
}

// Prices by model family, per million tokens (Anthropic's list prices):
// cache reads cost 0.1× the input price, cache writes 1.25×. A model
// this table does not know is priced as Sonnet, and the cost is an
// estimate either way.
var Prices = []struct {
	Prefix string
	Price  Price
}{
	{"claude-haiku-5", Price{1, 5}},
	{"claude-haiku-4", Price{1, 5}},
	{"claude-3-5-haiku", Price{0.8, 4}},
	{"claude-3-haiku", Price{0.25, 1.25}},
	{"claude-sonnet", Price{3, 15}},
	{"claude-3-5-sonnet", Price{3, 15}},
	{"claude-3-7-sonnet", Price{3, 15}},
	{"claude-opus-4-0", Price{15, 75}},
	{"claude-opus-4-1", Price{15, 75}},
	{"claude-opus-4-2", Price{15, 75}},
	{"claude-opus", Price{5, 25}},
	{"claude-3-opus", Price{15, 75}},
}

// PriceOf returns model's price.
func PriceOf(model string) Price {
	m := trimModel(model)
	for _, p := range Prices {
		if strings.HasPrefix(m, p.Prefix) {
			return p.Price
		}
	}
	return Price{3, 15}
}

// Cost is what u costs on model, in US dollars.
func Cost(model string, u Usage) float64 {
	p := PriceOf(model)
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.Input*0.1 + float64(u.CacheWriteTokens)*p.Input*1.25) / 1e6
}
