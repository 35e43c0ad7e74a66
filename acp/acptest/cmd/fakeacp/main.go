// Command fakeacp is the fake ACP agent of package acptest: it serves
// ACP on stdin and stdout, scripted by each prompt's words (see the
// package doc). Point an ACP engine at it to try a client offline:
//
//	go build -o fakeacp ./acp/acptest/cmd/fakeacp
//	harness serve --engines engines.yaml   # command: [./fakeacp]
package main

import "github.com/chirality/harness/acp/acptest"

func main() { acptest.Main() }
