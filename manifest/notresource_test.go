package manifest

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/kubectl/pkg/util/openapi"
	"k8s.io/kubectl/pkg/validation"
	sigsyaml "sigs.k8s.io/yaml"
)

// noOpenAPI has no schemas: kubectl's validation checks apiVersion and
// kind, then fails to look the kind up, with errNoSchemas.
type noOpenAPI struct{}

var errNoSchemas = errors.New("no schemas here")

func (noOpenAPI) OpenAPISchema() (openapi.Resources, error) { return nil, errNoSchemas }

// helmClientReads is what Helm's install reads of a document
// (kube.Client.Build: cli-runtime's StreamVisitor, then kubectl's schema
// validation): how many objects it holds (a null or empty one is
// skipped), and the validation's error when it refuses one ("" when it
// takes them all).
func helmClientReads(t *testing.T, doc string) (objects int, refused string) {
	t.Helper()
	d := yaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096)
	v := validation.NewSchemaValidation(noOpenAPI{})
	for {
		ext := runtime.RawExtension{}
		if err := d.Decode(&ext); err == io.EOF {
			return objects, ""
		} else if err != nil {
			t.Fatalf("Helm's client cannot read %q: %v", doc, err)
		}
		ext.Raw = bytes.TrimSpace(ext.Raw)
		if len(ext.Raw) == 0 || bytes.Equal(ext.Raw, []byte("null")) {
			continue
		}
		objects++
		if err := v.ValidateBytes(ext.Raw); err != nil && !errors.Is(err, errNoSchemas) {
			return objects, "error validating data: " + err.Error()
		}
	}
}

// helmReadsNull reports whether Helm's render reads doc as a YAML null
// (sigs.k8s.io/yaml, the library of its SortManifests): a document that
// holds no object.
func helmReadsNull(doc string) bool {
	j, err := sigsyaml.YAMLToJSON([]byte(doc))
	return err == nil && string(j) == "null"
}

// TestParseRenderedKeepsWhatHelmRenders: a document of a render that is
// valid YAML but no object Helm could create is kept, marked NotResource
// with Helm's words, where Parse refuses it; Helm's render (SortManifests)
// takes exactly the documents ParseRendered takes, sorts them by the same
// kind and hook, and Helm's client refuses them with the same words (or
// skips the same null documents as Empty).
func TestParseRenderedKeepsWhatHelmRenders(t *testing.T) {
	tests := []struct {
		name, in    string
		id          ID
		hook        string
		notResource string
		empty       bool
		err         string
	}{
		{name: "resource", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a", id: ID{"v1", "ConfigMap", "", "a"}},
		{name: "values printed as YAML (helm's issue-9027)", in: "global:\n  hash:\n    key3: 13\nhash:\n  key1: 1",
			notResource: "error validating data: [apiVersion not set, kind not set]"},
		{name: "no apiVersion", in: "kind: ConfigMap\nmetadata:\n  name: c", id: ID{Kind: "ConfigMap", Name: "c"},
			notResource: "error validating data: apiVersion not set"},
		{name: "no kind", in: "apiVersion: v1\nmetadata:\n  name: d\n  namespace: ns", id: ID{APIVersion: "v1", Namespace: "ns", Name: "d"},
			notResource: "error validating data: kind not set"},
		{name: "null apiVersion and kind", in: "apiVersion:\nkind: ~\nmetadata:\n  name: n", id: ID{Name: "n"},
			notResource: "error validating data: [apiVersion not set, kind not set]"},
		{name: "empty mapping", in: "{}", notResource: "error validating data: [apiVersion not set, kind not set]"},
		{name: "JSON", in: `{"kind": "Secret", "metadata": {"name": "j"}}`, id: ID{Kind: "Secret", Name: "j"},
			notResource: "error validating data: apiVersion not set"},
		{name: "no name", in: "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b", id: ID{APIVersion: "v1", Kind: "ConfigMap"},
			notResource: "resource name may not be empty"},
		{name: "no name, flow style", in: "{apiVersion: apps/v1, kind: Deployment}", id: ID{APIVersion: "apps/v1", Kind: "Deployment"},
			notResource: "resource name may not be empty"},
		{name: "hook without kind", in: "metadata:\n  name: e\n  annotations:\n    helm.sh/hook: pre-install\nfoo: bar", id: ID{Name: "e"}, hook: "pre-install",
			notResource: "error validating data: [apiVersion not set, kind not set]"},
		{name: "null", in: "~", empty: true},
		{name: "null spelled out, after a comment", in: "# off\nnull", empty: true},
		{name: "comments only", in: "# switched off", empty: true},
		{name: "a sequence", in: "- a\n- b", err: "invalid YAML"},
		{name: "a scalar", in: "hello", err: "invalid YAML"},
		{name: "not YAML", in: "kind: [", err: "invalid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ParseRendered("c/templates/x.yaml", tt.in)
			_, helmManifests, helmErr := releaseutil.SortManifests(map[string]string{"c/templates/x.yaml": tt.in}, nil, releaseutil.InstallOrder)
			if (err != nil) != (helmErr != nil) {
				t.Errorf("ParseRendered error %v, Helm's render error %v: want both or neither", err, helmErr)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.ID != tt.id || d.Hook != tt.hook || d.NotResource != tt.notResource || d.Empty() != tt.empty || d.Content != tt.in || d.Source != "c/templates/x.yaml" {
				t.Errorf("ParseRendered = %+v (Empty %v), want ID %+v hook %q NotResource %q Empty %v", d, d.Empty(), tt.id, tt.hook, tt.notResource, tt.empty)
			}
			// Helm sorts it by the kind it reads, as a hook when it is one.
			if tt.hook == "" {
				if len(helmManifests) != 1 || helmManifests[0].Head.Kind != d.ID.Kind {
					t.Errorf("Helm's render sorts %+v; ours reads kind %q", helmManifests, d.ID.Kind)
				}
			}
			objects, refused := helmClientReads(t, tt.in)
			switch {
			case tt.empty && objects != 0:
				t.Errorf("Empty, but Helm's client reads %d objects from it", objects)
			case strings.HasPrefix(tt.notResource, "error validating data: ") && refused != tt.notResource:
				t.Errorf("NotResource %q, Helm's client refuses it with %q", tt.notResource, refused)
			case !strings.HasPrefix(tt.notResource, "error validating data: ") && refused != "":
				t.Errorf("NotResource %q, but Helm's client refuses it with %q", tt.notResource, refused)
			}
			// Parse and ParseTree refuse what ParseRendered marks.
			for name, parse := range map[string]func(string, string) (Document, error){"Parse": Parse, "ParseTree": ParseTree} {
				_, err := parse("c/templates/x.yaml", tt.in)
				if tt.notResource != "" && (!errors.Is(err, ErrNotResource) || !strings.Contains(err.Error(), tt.notResource)) {
					t.Errorf("%s error = %v, want ErrNotResource with %q", name, err, tt.notResource)
				}
				if tt.notResource == "" && err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		})
	}
}

// TestKnownRefusesNotResource: a document that is no object among the
// known ones (a render's documents) is not handed out by Known.Parse, whose
// callers (an injector's output, a stored revision) want resources only.
func TestKnownRefusesNotResource(t *testing.T) {
	const values = "global:\n  x: 1"
	d, err := ParseRendered("c/templates/values.yaml", values)
	if err != nil || d.NotResource == "" {
		t.Fatalf("ParseRendered = %+v, %v", d, err)
	}
	known := NewKnown([]Document{d})
	if got, err := known.Parse("out", values); !errors.Is(err, ErrNotResource) {
		t.Errorf("Known.Parse of a known document that is no object = %+v, %v; want ErrNotResource", got, err)
	}
}
