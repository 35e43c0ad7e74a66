package zodgen

import (
	"strings"
	"testing"
)

const doc = `{
  "paths": {"/x": {"post": {"requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Req"}}}}}}},
  "components": {"schemas": {
    "Req": {"type": "object", "additionalProperties": false, "required": ["b"],
      "properties": {"b": {"type": "string", "minLength": 1}, "a": {"type": "integer", "minimum": 0}}},
    "Ans": {"type": "object", "additionalProperties": false, "required": ["kind", "who"],
      "properties": {"kind": {"type": "string", "enum": ["x", "y"], "x-extensible-enum": true},
        "who": {"type": ["string", "null"], "description": "the */ one"},
        "req": {"$ref": "#/components/schemas/Req"}}},
    "AEvent": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string", "enum": ["a"]}}},
    "BEvent": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string", "enum": ["b"]}}},
    "Known": {"oneOf": [{"$ref": "#/components/schemas/AEvent"}, {"$ref": "#/components/schemas/BEvent"}], "discriminator": {"propertyName": "type"}}
  }}
}`

func TestGenerate(t *testing.T) {
	out, err := Generate([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		// A closed request body is strict, its fields in the document's order.
		"export const ReqSchema = z.strictObject({\n  b: z.string().min(1),\n  a: z.number().int().min(0).optional(),\n});",
		// What the gateway sends is loose even when closed; an extensible
		// enum takes other strings; null is allowed where the type says.
		"export const AnsSchema = z.looseObject({",
		`kind: z.union([z.enum(["x", "y"]), z.string()]),`,
		"/** the * / one */\n  who: z.string().nullable(),",
		"req: ReqSchema.optional(),",
		`type: z.literal("a"),`,
		"export const KnownSchema = z.discriminatedUnion(\"type\", [\n  AEventSchema,\n  BEventSchema,\n]);",
		"export type Known = z.infer<typeof KnownSchema>;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks\n%s\n--- output:\n%s", want, got)
		}
	}
	// What a schema refers to comes first.
	if strings.Index(got, "ReqSchema =") > strings.Index(got, "AnsSchema =") {
		t.Error("Ans is written before Req, which it refers to")
	}
}

func TestGenerateRefusesACycle(t *testing.T) {
	_, err := Generate([]byte(`{"components": {"schemas": {"A": {"type": "array", "items": {"$ref": "#/components/schemas/A"}}}}}`))
	if err == nil {
		t.Fatal("a schema that refers to itself was generated")
	}
}
