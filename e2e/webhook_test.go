package e2e

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startWebhook runs a mutating admission webhook, as istio's sidecar
// injector works: every pod created in a namespace labelled
// webhook-inject=ns gets an istio-proxy container, unless it already has
// one. The API server calls it over TLS on loopback.
func startWebhook(t *testing.T, ns string) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		var pod corev1.Pod
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		if json.Unmarshal(review.Request.Object.Raw, &pod) == nil && !slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == "istio-proxy" }) {
			patch := `[{"op":"add","path":"/spec/containers/-","value":{"name":"istio-proxy","image":"docker.io/istio/proxyv2:1.27.1"}}]`
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = []byte(patch), &pt
		}
		review.Response = resp
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	url := srv.URL + "/inject"
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "sidecar-injector.helm-inject.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"webhook-inject": ns}},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	hooks := clientset(t).AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := hooks.Create(t.Context(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hooks.Delete(t.Context(), ns, metav1.DeleteOptions{}) })
}

// TestLiveShowsWebhookInjection walks through docs/live.md's migration
// from a webhook: a plain helm release in a namespace the webhook injects
// into runs pods with a container their template lacks; once helm-inject
// injects the same sidecar into the release, its pods run only what their
// template has, the sign that the namespace label can go.
func TestLiveShowsWebhookInjection(t *testing.T) {
	ns := namespace(t)
	kubectl(t, "label", "namespace", ns, "webhook-inject="+ns)
	startWebhook(t, ns)

	mustHelm(t, "install", "legacy", slowstartChart, "-n", ns, "--set", "readyDelay=0s", "--wait")
	st, code := waitLive(t, "legacy", ns, "the webhook-injected pod", func(st liveStatus, _ int) bool {
		return len(st.Live.Workloads) == 1 && len(st.Live.Workloads[0].Templates) == 1
	})
	tpl := st.Live.Workloads[0].Templates[0]
	if code != 0 || st.Live.Drifted || !slices.Equal(tpl.NotInTemplate, []string{"istio-proxy"}) || !slices.Contains(tpl.Containers, "istio-proxy=docker.io/istio/proxyv2:1.27.1") {
		t.Errorf("a webhook-injected pod: exit %d, drift %v, template %+v; want istio-proxy not in the template, no drift (the webhook changes pods, not the Deployment)", code, st.Live.Drifted, tpl)
	}
	text := mustHelmInject(t, "status", "legacy", "-n", ns, "--live").stdout
	if want := "istio-proxy (injected by a webhook?)"; !strings.Contains(text, want) {
		t.Errorf("status --live lacks %q:\n%s", want, text)
	}

	mustHelmInject(t, "apply", "legacy", slowstartChart, "-n", ns, "--set", "readyDelay=0s", "--wait",
		"--injector", "sidecar-injector f=FILE,name=istio-proxy,image=docker.io/istio/proxyv2:1.27.1")
	st, code = waitLive(t, "legacy", ns, "only pods of the injected template", func(st liveStatus, code int) bool { return code == 0 })
	if tpls := st.Live.Workloads[0].Templates; len(tpls) != 1 || len(tpls[0].NotInTemplate) != 0 || !slices.Contains(tpls[0].Containers, "istio-proxy=docker.io/istio/proxyv2:1.27.1") {
		t.Errorf("after helm-inject took the release over: %+v; want istio-proxy from the template only", tpls)
	}
}
