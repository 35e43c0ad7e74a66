// Command genapi writes the gateway's OpenAPI document (gateway/openapi.json,
// made from its route table and Go types by gateway.GenerateOpenAPI). Run
// by go generate in package gateway; run from there.
package main

import (
	"fmt"
	"os"

	"github.com/chirality/harness/gateway"
)

func main() {
	doc, err := gateway.GenerateOpenAPI()
	if err != nil {
		fmt.Fprintln(os.Stderr, "genapi:", err)
		os.Exit(1)
	}
	if err := os.WriteFile("openapi.json", doc, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genapi:", err)
		os.Exit(1)
	}
}
