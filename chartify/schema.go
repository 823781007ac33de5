package chartify

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// validateSchemasLocally is Helm's ValidateAgainstSchema (the chart's and
// each enabled subchart's values.schema.json, against the coalesced
// values, with Helm's messages) with a schema compiler that loads nothing:
// Helm's own loads a "$ref" to a file:// path from the local disk and an
// http(s) URL from the network, which a chart from an Argo CD Application
// must not reach. A "$ref" inside the schema itself works; one to a file
// or URL is an error naming the chart and the reference.
func validateSchemasLocally(ch *chart.Chart, vals map[string]any) error {
	var sb strings.Builder
	if len(ch.Schema) > 0 {
		if err := validateLocally(vals, ch.Schema); err != nil {
			fmt.Fprintf(&sb, "%s:\n", ch.Name())
			sb.WriteString(err.Error())
		}
	}
	for _, sub := range ch.Dependencies() {
		raw, ok := vals[sub.Name()]
		if !ok || raw == nil {
			continue
		}
		subVals, ok := raw.(map[string]any)
		if !ok {
			fmt.Fprintf(&sb, "%s:\ninvalid type for values: expected object (map), got %T\n", sub.Name(), raw)
			continue
		}
		if err := validateSchemasLocally(sub, subVals); err != nil {
			sb.WriteString(err.Error())
		}
	}
	if sb.Len() > 0 {
		return errors.New(sb.String())
	}
	return nil
}

// noLoader refuses every reference the compiler would load.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("values.schema.json refers to %s: the schema is read from the chart only; nothing is loaded from a file or URL here", url)
}

// urnTrue is Helm's answer to an unresolved urn: reference, a schema
// that accepts anything.
type urnTrue struct{}

func (urnTrue) Load(string) (any, error) { return true, nil }

func validateLocally(values map[string]any, schemaJSON []byte) (reterr error) {
	defer func() {
		if r := recover(); r != nil {
			reterr = fmt.Errorf("unable to validate schema: %s", r)
		}
	}()
	schema, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return err
	}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(jsonschema.SchemeURLLoader{"file": noLoader{}, "http": noLoader{}, "https": noLoader{}, "urn": urnTrue{}})
	if err := compiler.AddResource("file:///values.schema.json", schema); err != nil {
		return err
	}
	validator, err := compiler.Compile("file:///values.schema.json")
	if err != nil {
		return err
	}
	if err := validator.Validate(values); err != nil {
		// As Helm's JSONSchemaValidationError prints it.
		return errors.New(strings.TrimPrefix(err.Error(), "jsonschema validation failed with 'file:///values.schema.json#'\n") + "\n")
	}
	return nil
}
