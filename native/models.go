package native

import (
	"strings"

	"github.com/chirality/harness/usage"
)

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
type Price = usage.Price

// Prices is the harness's one price table (package usage).
var Prices = usage.Prices

// PriceOf returns model's price.
func PriceOf(model string) Price { return usage.PriceOf(trimModel(model)) }

// Cost is what u costs on model, in US dollars.
func Cost(model string, u Usage) float64 {
	return usage.Cost(trimModel(model), u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
}
