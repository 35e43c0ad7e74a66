// Command genapi writes the gateway's OpenAPI document (gateway/openapi.json,
// made from its route table and Go types by gateway.GenerateOpenAPI) and the
// TypeScript client's zod schemas made from it
// (clients/typescript/src/generated.ts, package zodgen). Run by go
// generate in package gateway; run from there.
package main

import (
	"fmt"
	"os"

	"github.com/chirality/harness/gateway"
	"github.com/chirality/harness/gateway/internal/zodgen"
)

// TSFile is the generated TypeScript module, from package gateway.
const TSFile = "../clients/typescript/src/generated.ts"

func main() {
	doc, err := gateway.GenerateOpenAPI()
	if err != nil {
		fmt.Fprintln(os.Stderr, "genapi:", err)
		os.Exit(1)
	}
	ts, err := zodgen.Generate(doc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genapi:", err)
		os.Exit(1)
	}
	for name, data := range map[string][]byte{"openapi.json": doc, TSFile: ts} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "genapi:", err)
			os.Exit(1)
		}
	}
}
