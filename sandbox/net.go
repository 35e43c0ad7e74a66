package sandbox

import (
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Port is the TCP port of the URL u: the one it names, else its scheme's
// (443 for https and wss, 80 for http and ws); false when u is not such
// a URL.
func Port(u string) (uint16, bool) {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Host == "" {
		return 0, false
	}
	if s := p.Port(); s != "" {
		n, err := strconv.ParseUint(s, 10, 16)
		return uint16(n), err == nil && n > 0
	}
	switch strings.ToLower(p.Scheme) {
	case "https", "wss":
		return 443, true
	case "http", "ws":
		return 80, true
	}
	return 0, false
}

// proxyVars are the variables that send a child's HTTP through a proxy,
// whose port it must then reach.
var proxyVars = []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}

// NetFor is the network of a child with environment env that talks to
// urls: it may connect to their ports (an empty URL stands for an API at
// its default address, https: 443), to the port of each proxy env names
// (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, either case), and bind nothing.
// A URL that names no TCP port adds none.
func NetFor(env []string, urls ...string) *Net {
	n := &Net{}
	add := func(p uint16) {
		if !slices.Contains(n.Connect, p) {
			n.Connect = append(n.Connect, p)
		}
	}
	for _, u := range urls {
		if strings.TrimSpace(u) == "" {
			add(443)
		} else if p, ok := Port(u); ok {
			add(p)
		}
	}
	for _, k := range proxyVars {
		if v := getenvOnly(env, k); v != "" {
			if p, ok := Port(v); ok {
				add(p)
			}
		}
	}
	slices.Sort(n.Connect)
	return n
}

// getenvOnly is key's value in env (its last entry), never this
// process's: a child's proxy is what its own environment says.
func getenvOnly(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// URLsIn are the string values of key in the JSON (or JSONC) text b:
// each `"key": "value"`, wherever it is nested. An agent's own
// configuration file may name its model API this way (Claude Code's
// settings.json env, opencode's providers' baseURL).
func URLsIn(b []byte, key string) []string {
	re := regexp.MustCompile(`"` + regexp.QuoteMeta(key) + `"\s*:\s*"([^"\n]*)"`)
	var out []string
	for _, m := range re.FindAllSubmatch(b, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// URLsInFiles is URLsIn of each file of paths that can be read.
func URLsInFiles(key string, paths ...string) []string {
	var out []string
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			out = append(out, URLsIn(b, key)...)
		}
	}
	return out
}
