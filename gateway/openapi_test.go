package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/chirality/harness/gateway/internal/zodgen"
)

// The OpenAPI document is checked by an independent validator
// (kin-openapi, pinned), and every response the gateway tests receive is
// validated against it: status, headers and body.

var (
	specOnce   sync.Once
	specRouter routers.Router
	specErr    error
)

func loadSpec() (routers.Router, error) {
	specOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(openAPI)
		if err != nil {
			specErr = err
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			specErr = err
			return
		}
		specRouter, specErr = gorillamux.NewRouter(doc)
	})
	return specRouter, specErr
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	if _, err := loadSpec(); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
}

// validateResponse checks resp against the document; the body of a JSON
// response is read and put back for the caller.
func validateResponse(t *testing.T, req *http.Request, resp *http.Response) {
	t.Helper()
	router, err := loadSpec()
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(req.URL.Path, APIPrefix+"/") {
		return // the console
	}
	// Resolve the request against the document on a copy addressed to
	// the server it lists.
	r2 := req.Clone(context.Background())
	r2.URL.Scheme, r2.URL.Host, r2.Host = "http", "127.0.0.1:8787", "127.0.0.1:8787"
	route, params, err := router.FindRoute(r2)
	if err != nil {
		// A path or method the document does not have: the gateway must
		// have refused it with a JSON error.
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed &&
			resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnauthorized &&
			resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusNoContent {
			t.Errorf("%s %s: %d for a route the document does not have", req.Method, req.URL.Path, resp.StatusCode)
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r2, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		in.SetBodyBytes(nil)
		in.Options.ExcludeResponseBody = true
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		in.SetBodyBytes(body)
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s → %d does not match openapi.json: %v", req.Method, req.URL.Path, resp.StatusCode, err)
	}
}

// TestOpenAPIIsGenerated fails when openapi.json is not what the route
// table and the Go types make: run go generate ./gateway.
func TestOpenAPIIsGenerated(t *testing.T) {
	doc, err := GenerateOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, openAPI) {
		t.Fatal("gateway/openapi.json is stale: run `go generate ./gateway` and commit it")
	}
}

// TestRoutesAreDocumented: every route the router has is an operation of
// the document and the other way round (both come from routeTable).
func TestRoutesAreDocumented(t *testing.T) {
	router, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, rt := range routeTable {
		key := rt.Method + " " + rt.Path
		if seen[key] {
			t.Errorf("%s: twice in routeTable", key)
		}
		seen[key] = true
		if rt.Serve == nil || rt.Op.ID == "" || rt.Op.Summary == "" {
			t.Errorf("%s: no handler, operation ID or summary", key)
		}
		req, _ := http.NewRequest(rt.Method, "http://127.0.0.1:8787"+APIPrefix+strings.ReplaceAll(strings.ReplaceAll(rt.Path, "{id}", "0b6c1a38-5d3e-4f4c-9a51-3f1e2b7c8d90"), "{promptId}", "p1"), nil)
		route, _, err := router.FindRoute(req)
		if err != nil {
			t.Errorf("%s: not in openapi.json: %v", key, err)
			continue
		}
		if route.Operation.OperationID != rt.Op.ID {
			t.Errorf("%s: openapi.json names it %q, routeTable %q", key, route.Operation.OperationID, rt.Op.ID)
		}
	}
}

// TestTypeScriptSchemasAreGenerated fails when the TypeScript client's
// generated zod schemas are not what openapi.json makes: run go generate
// ./gateway.
func TestTypeScriptSchemasAreGenerated(t *testing.T) {
	want, err := zodgen.Generate(openAPI)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../clients/typescript/src/generated.ts")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("clients/typescript/src/generated.ts is stale: run `go generate ./gateway` and commit it")
	}
}
