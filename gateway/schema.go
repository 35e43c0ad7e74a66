package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The OpenAPI document's schemas come from the Go types the handlers read
// and write, by reflection (GenerateOpenAPI): a field's JSON name and
// whether it may be absent come from its json tag, its description from a
// doc tag, and what Go's types cannot say from an oa tag, a comma list of
//
//	required     the field must be sent (a request's field; a response
//	             field without omitempty is required anyway)
//	optional     the field may be absent although it has no omitempty
//	nullable     the value may be null (a pointer field always may)
//	enum=a|b     the values it takes
//	open         the enum's list may grow: a client takes other values too
//	             (x-extensible-enum)
//	ref=Name     the value is the named component (an enum of namedEnums)
//	format=uuid  (date-time, int64, …)
//	min=N max=N minLength=N maxLength=N maxItems=N  bounds
//	pattern=re   (no comma in it)
//	const=true   the only value (a boolean)
//	object       a json.RawMessage that is a JSON object
//	any          any JSON value (a json.RawMessage's default)
//
// Example: Mode string `json:"mode" oa:"ref=Mode,required" doc:"how the session runs"`.

// schema is one OpenAPI 3.1 schema object (the subset the gateway uses).
type schema struct {
	Ref                  string         `json:"$ref,omitempty"`
	Type                 any            `json:"type,omitempty"` // a string, or [type, "null"]
	Format               string         `json:"format,omitempty"`
	Description          string         `json:"description,omitempty"`
	Enum                 []string       `json:"enum,omitempty"`
	Extensible           bool           `json:"x-extensible-enum,omitempty"`
	Const                any            `json:"const,omitempty"`
	Pattern              string         `json:"pattern,omitempty"`
	Minimum              *int64         `json:"minimum,omitempty"`
	Maximum              *int64         `json:"maximum,omitempty"`
	MinLength            *int64         `json:"minLength,omitempty"`
	MaxLength            *int64         `json:"maxLength,omitempty"`
	MaxItems             *int64         `json:"maxItems,omitempty"`
	MinProperties        *int64         `json:"minProperties,omitempty"`
	Items                *schema        `json:"items,omitempty"`
	AdditionalProperties *bool          `json:"additionalProperties,omitempty"`
	Required             []string       `json:"required,omitempty"`
	Properties           *props         `json:"properties,omitempty"`
	OneOf                []*schema      `json:"oneOf,omitempty"`
	Discriminator        *discriminator `json:"discriminator,omitempty"`
}

// props are an object's properties in the order of the Go fields (the
// order encoding/json writes them, and the generated clients keep).
type props struct {
	keys []string
	m    map[string]*schema
}

func (p *props) set(name string, s *schema) {
	if p.m == nil {
		p.m = map[string]*schema{}
	}
	if _, ok := p.m[name]; !ok {
		p.keys = append(p.keys, name)
	}
	p.m[name] = s
}

func (p *props) remove(name string) {
	delete(p.m, name)
	p.keys = slices.DeleteFunc(p.keys, func(k string) bool { return k == name })
}

// MarshalJSON writes the properties in order.
func (p *props) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, k := range p.keys {
		if i > 0 {
			b = append(b, ',')
		}
		kb, err := marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := marshal(p.m[k])
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, kb...), ':'), vb...)
	}
	return append(b, '}'), nil
}

// marshal is json.Marshal without HTML escapes (descriptions say <seq>).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

type discriminator struct {
	PropertyName string `json:"propertyName"`
}

// reflector turns Go types into schemas; a type named in names becomes a
// $ref to its component.
type reflector struct {
	names map[reflect.Type]string
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage(nil))
)

// schemaOf is the schema of t; request says t is read from a client (its
// fields are optional unless tagged required).
func (rf *reflector) schemaOf(t reflect.Type, request bool) (*schema, error) {
	if name, ok := rf.names[t]; ok {
		return &schema{Ref: "#/components/schemas/" + name}, nil
	}
	return rf.inline(t, request)
}

// inline is t's schema written out, even when t is a named component.
func (rf *reflector) inline(t reflect.Type, request bool) (*schema, error) {
	switch {
	case t == timeType:
		return &schema{Type: "string", Format: "date-time"}, nil
	case t == rawType:
		return &schema{}, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return rf.schemaOf(t.Elem(), request)
	case reflect.String:
		if values, ok := enumTypes[t]; ok {
			return &schema{Type: "string", Enum: values()}, nil
		}
		return &schema{Type: "string"}, nil
	case reflect.Bool:
		return &schema{Type: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &schema{Type: "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return &schema{Type: "number"}, nil
	case reflect.Slice, reflect.Array:
		items, err := rf.schemaOf(t.Elem(), request)
		if err != nil {
			return nil, err
		}
		return &schema{Type: "array", Items: items}, nil
	case reflect.Map:
		return &schema{Type: "object"}, nil
	case reflect.Interface:
		return &schema{}, nil
	case reflect.Struct:
		return rf.object(t, request)
	}
	return nil, fmt.Errorf("openapi: no schema for Go type %s", t)
}

// object is the schema of struct type t: one property per JSON field.
func (rf *reflector) object(t reflect.Type, request bool) (*schema, error) {
	s := &schema{Type: "object", Properties: &props{}}
	for i := range t.NumField() {
		f := t.Field(i)
		name, omitempty, ok := jsonName(f)
		if !ok {
			continue
		}
		p, required, err := rf.field(f, request, omitempty)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t, f.Name, err)
		}
		s.Properties.set(name, p)
		if required {
			s.Required = append(s.Required, name)
		}
	}
	return s, nil
}

// field is the schema of struct field f and whether it is required.
func (rf *reflector) field(f reflect.StructField, request, omitempty bool) (*schema, bool, error) {
	opts := parseOA(f.Tag.Get("oa"))
	var p *schema
	var err error
	switch {
	case opts["ref"] != "":
		p = &schema{Ref: "#/components/schemas/" + opts["ref"]}
	case f.Type == rawType && opts.has("object"):
		p = &schema{Type: "object"}
	default:
		p, err = rf.schemaOf(f.Type, request)
		if err != nil {
			return nil, false, err
		}
	}
	if err := opts.apply(p); err != nil {
		return nil, false, err
	}
	if d := f.Tag.Get("doc"); d != "" {
		p.Description = d
	}
	nullable := opts.has("nullable") || (f.Type.Kind() == reflect.Pointer && !omitempty && !request)
	if nullable && p.Ref == "" {
		if t, ok := p.Type.(string); ok {
			p.Type = []string{t, "null"}
		}
	}
	required := opts.has("required") || (!request && !omitempty && !opts.has("optional"))
	return p, required, nil
}

// jsonName is f's JSON name as encoding/json writes it.
func jsonName(f reflect.StructField) (name string, omitempty, ok bool) {
	if !f.IsExported() {
		return "", false, false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false, false
	}
	name, rest, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, strings.Contains(","+rest+",", ",omitempty,"), true
}

// oaOpts is a parsed oa tag: option → value ("" for a flag).
type oaOpts map[string]string

func parseOA(tag string) oaOpts {
	o := oaOpts{}
	for _, part := range strings.Split(tag, ",") {
		if part = strings.TrimSpace(part); part != "" {
			k, v, _ := strings.Cut(part, "=")
			o[k] = v
		}
	}
	return o
}

func (o oaOpts) has(k string) bool { _, ok := o[k]; return ok }

// apply sets the bounds, formats and values o names on p.
func (o oaOpts) apply(p *schema) error {
	for k, v := range o {
		var n *int64
		switch k {
		case "required", "optional", "nullable", "ref", "object", "any":
			continue
		case "open":
			p.Extensible = true
			continue
		case "enum":
			p.Enum = strings.Split(v, "|")
			continue
		case "format":
			p.Format = v
			continue
		case "pattern":
			p.Pattern = v
			continue
		case "const":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("oa const=%s: only booleans", v)
			}
			p.Const = b
			continue
		}
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("oa %s=%s: %w", k, v, err)
		}
		n = &x
		switch k {
		case "min":
			p.Minimum = n
		case "max":
			p.Maximum = n
		case "minLength":
			p.MinLength = n
		case "maxLength":
			p.MaxLength = n
		case "maxItems":
			p.MaxItems = n
		default:
			return fmt.Errorf("oa: unknown option %q", k)
		}
	}
	return nil
}

// merge adds src's properties to dst (the flat event union): a name
// already there keeps its schema, with the enums of both.
func merge(dst, src *schema) {
	for _, name := range src.Properties.keys {
		p := src.Properties.m[name]
		q := dst.Properties.m[name]
		if q == nil {
			dst.Properties.set(name, p)
			continue
		}
		if len(q.Enum) > 0 && len(p.Enum) > 0 {
			for _, v := range p.Enum {
				if !contains(q.Enum, v) {
					q.Enum = append(q.Enum, v)
				}
			}
		}
		if q.Description == "" {
			q.Description = p.Description
		}
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
