package release

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/manifest"
)

// secretClients reads Secrets from an in-memory cluster.
func secretClients(objs ...*unstructured.Unstructured) liveClients {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	var ro []runtime.Object
	for _, o := range objs {
		ro = append(ro, o)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "secrets"}: "SecretList",
	}, ro...)
	return liveClients{mapper: mapper, dynamic: dyn}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// liveSecret is the Secret as the API server stores it: stringData folded
// into data (base64), stringData gone, its type defaulted.
func liveSecret(data map[string]string) *unstructured.Unstructured {
	d := map[string]any{}
	for k, v := range data {
		d[k] = b64(v)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": "creds", "namespace": "shop"},
		"data":     d,
	}}
}

// TestThreeWaySecretStringData: diff --three-way-merge compares a Secret
// written with stringData as the API server stores it. Unchanged (a data
// key, a stringData key, and a key in both where stringData wins), it
// shows no difference; a changed value shows as a change with every value
// masked.
func TestThreeWaySecretStringData(t *testing.T) {
	doc, err := manifest.Parse("api/templates/secret.yaml", `apiVersion: v1
kind: Secret
metadata:
  name: creds
data:
  user: `+b64("admin-4711")+`
  token: `+b64("overridden-token")+`
stringData:
  password: hunter2-secret
  token: the-real-token
`)
	if err != nil {
		t.Fatal(err)
	}
	p := &plan{namespace: "shop", rendered: &chartify.Rendered{Documents: []manifest.Document{doc}}}
	same := liveSecret(map[string]string{"user": "admin-4711", "password": "hunter2-secret", "token": "the-real-token"})
	changes, _, err := threeWay(t.Context(), secretClients(same), p, []manifest.Document{doc})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		t.Errorf("an unchanged Secret shows a %s:\n%s\n=>\n%s", c.Type, c.Before, c.After)
	}

	edited := liveSecret(map[string]string{"user": "admin-4711", "password": "edited-in-cluster", "token": "the-real-token"})
	changes, _, err = threeWay(t.Context(), secretClients(edited), p, []manifest.Document{doc})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Type != Changed {
		t.Fatalf("an edited Secret: %+v", changes)
	}
	var out bytes.Buffer
	if err := WriteDiff(&out, &DiffResult{Release: "demo", Changes: changes}, DiffPrintOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"hunter2-secret", "edited-in-cluster", "admin-4711", "the-real-token", "overridden-token"} {
		if strings.Contains(out.String(), v) || strings.Contains(out.String(), b64(v)) {
			t.Errorf("the diff shows %q:\n%s", v, out.String())
		}
	}
	if !strings.Contains(out.String(), "-  password: '-------- # (17 bytes)'") || !strings.Contains(out.String(), "+  password: '++++++++ # (14 bytes)'") {
		t.Errorf("the diff does not show the password's change masked:\n%s", out.String())
	}
	if strings.Contains(out.String(), "user: '--------") || strings.Contains(out.String(), "token: '--------") {
		t.Errorf("unchanged keys show as changed:\n%s", out.String())
	}

	// A key written in data, beside stringData, is compared too.
	edited = liveSecret(map[string]string{"user": "root", "password": "hunter2-secret", "token": "the-real-token"})
	changes, _, err = threeWay(t.Context(), secretClients(edited), p, []manifest.Document{doc})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if len(changes) == 1 {
		if err := WriteDiff(&out, &DiffResult{Release: "demo", Changes: changes}, DiffPrintOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(out.String(), "-  user: '-------- # (4 bytes)'") || strings.Contains(out.String(), "root") {
		t.Errorf("an edited data key of a Secret with stringData: %+v\n%s", changes, out.String())
	}
}
