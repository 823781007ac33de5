package argocde2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pluginclient "github.com/argoproj/argo-cd/v3/cmpserver/apiclient"
	"github.com/argoproj/argo-cd/v3/util/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestARequestCannotLoosenThePolicy: an injector the operator allows
// (escape-probe) tries to reach Argo CD's cmp-server through its unix
// socket, as a misbehaving injector would to send a request of its own;
// and such a request, sent straight to the cmp-server as its client does,
// carries HELM_INJECT_CONFINE=off and HELM_INJECT_ALLOWED_COMMANDS=sh,
// which the cmp-server puts after its own environment. The connection is
// refused (the socket filter), and the request's render stays confined:
// the injector reads no file outside the repository, sh stays forbidden
// (the request's list only narrows the operator's).
// With the operator's --confine=off on plugin.yaml's command line the
// same injector connects and reads, so the test proves something.
func TestARequestCannotLoosenThePolicy(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "tenant-b-token")
	if err := os.WriteFile(secret, []byte("tenant-b-token-4711"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The application's pins file names a built-in injector, from the
	// repository's library.
	library := map[string]any{"name": "injector-library", "string": "../../injectors"}
	params, err := json.Marshal([]map[string]any{{"name": "inject", "array": []string{"escape-probe FILE"}}, library})
	if err != nil {
		t.Fatal(err)
	}
	appEnv := []string{"ARGOCD_APP_NAME=web", "ARGOCD_APP_NAMESPACE=shop", "ARGOCD_APP_SOURCE_PATH=apps/web",
		"KUBE_VERSION=1.31.4", "ARGOCD_APP_PARAMETERS=" + string(params)}
	hostile := []string{"HELM_INJECT_CONFINE=off", "HELM_INJECT_ALLOWED_COMMANDS=escape-probe,sh"}

	// generate sends one request to the cmp-server serving plugin.yaml
	// with operator on generate's command line, and returns the
	// escape-probe annotations of the Deployment, or the error.
	generate := func(t *testing.T, operator string, env []string) (map[string]string, error) {
		t.Helper()
		cfg := serveShippedPlugin(t, "--allowed-commands=escape-probe", operator)
		// What the injector tries, through the sidecar's environment.
		t.Setenv("PROBE_UNIX", cfg.Address())
		t.Setenv("PROBE_READ", secret)
		repo := fleetRepo(t)
		conn, client, err := pluginclient.NewConfigManagementPluginClientSet(cfg.Address()).NewConfigManagementPluginClient()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		stream, err := client.GenerateManifest(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := cmp.SendRepoStream(stream.Context(), filepath.Join(repo, "apps", "web"), repo, stream, env, nil); err != nil {
			t.Fatal(err)
		}
		res, err := stream.CloseAndRecv()
		if err != nil {
			return nil, err
		}
		for _, m := range res.Manifests {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON([]byte(m)); err != nil {
				t.Fatal(err)
			}
			if u.GetKind() == "Deployment" {
				return u.GetAnnotations(), nil
			}
		}
		t.Fatalf("no Deployment among %d manifests", len(res.Manifests))
		return nil, nil
	}

	t.Run("confined, the request asking for off", func(t *testing.T) {
		got, err := generate(t, "--confine=best-effort", append(appEnv, hostile...))
		if err != nil {
			t.Fatalf("generate: %v", err)
		}
		if !strings.Contains(got["escape-probe/unix"], "socket: permission denied") {
			t.Errorf("the injector's connection to the cmp-server's socket: %q, want socket: permission denied", got["escape-probe/unix"])
		}
		if !strings.Contains(got["escape-probe/read"], "permission denied") || got["escape-probe/read-content"] != "" {
			t.Errorf("the injector read outside the repository: %q, %q", got["escape-probe/read"], got["escape-probe/read-content"])
		}
	})
	t.Run("sh stays forbidden", func(t *testing.T) {
		shParams, err := json.Marshal([]map[string]any{{"name": "inject", "array": []string{"sh -c 'cat /etc/passwd' FILE"}}, library})
		if err != nil {
			t.Fatal(err)
		}
		env := append(appEnv[:len(appEnv)-1:len(appEnv)-1], "ARGOCD_APP_PARAMETERS="+string(shParams))
		_, err = generate(t, "--confine=best-effort", append(env, hostile...))
		if err == nil || !strings.Contains(err.Error(), `runs "sh", which this plugin does not allow (allowed: escape-probe;`) {
			t.Errorf("an injector running sh with the request allowing it: %v, want a refusal naming sh", err)
		}
	})
	t.Run("the operator's off", func(t *testing.T) {
		got, err := generate(t, "--confine=off", appEnv)
		if err != nil {
			t.Fatalf("generate: %v", err)
		}
		if got["escape-probe/unix"] != "ok" || got["escape-probe/read-content"] != "tenant-b-token-4711" {
			t.Errorf("unconfined: unix %q, read %q: the probe did not reach what it should", got["escape-probe/unix"], got["escape-probe/read"])
		}
	})
}
