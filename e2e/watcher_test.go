package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

var widgets = schema.GroupVersionResource{Group: "e2e.helm-inject.io", Version: "v1", Resource: "widgets"}

// widgetCRD installs the Widget custom resource definition (namespaced, no
// status subresource, so a chart can set its first status) once.
func widgetCRD(t *testing.T, dc dynamic.Interface) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.e2e.helm-inject.io"},
		"spec": map[string]any{
			"group": "e2e.helm-inject.io", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	crds := dc.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(t.Context(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dc.Resource(widgets).Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the Widget CRD is not served: %v", err)
	}
}

// TestWaitWatcherOnACustomResource: apply --wait=watcher waits, as helm
// 4's watcher does, until kstatus calls a custom resource current (its
// Ready condition True), and its progress shows the resource in progress
// and then current.
func TestWaitWatcherOnACustomResource(t *testing.T) {
	dc, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	widgetCRD(t, dc)
	ns := namespace(t)
	chart := t.TempDir()
	testfs.Write(t, chart, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: widget\nversion: 0.1.0\n",
		"templates/widget.yaml": "apiVersion: e2e.helm-inject.io/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\n" +
			"status:\n  conditions:\n    - type: Ready\n      status: \"False\"\n      reason: Building\n      message: building the widget\n",
	})
	cmd := exec.CommandContext(t.Context(), filepath.Join(binDir, "helm-inject"), "apply", "wid", chart, "-n", ns, "--wait=watcher", "--timeout", "2m")
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = repoRoot(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	w := dc.Resource(widgets).Namespace(ns)
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := w.Get(ctx, "w", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the Widget was not created: %v\n%s", err, stderr.String())
	}
	time.Sleep(3 * time.Second) // the apply waits meanwhile
	select {
	case err := <-done:
		t.Fatalf("apply returned before the Widget was ready: %v\n%s", err, stderr.String())
	default:
	}
	obj, err := w.Get(t.Context(), "w", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"type": "Ready", "status": "True", "reason": "Built", "message": "the widget is built"}}, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Update(t.Context(), obj, metav1.UpdateOptions{FieldManager: "widget-controller"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("apply --wait=watcher: %v\n%s", err, stderr.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("apply still waits after the Widget became ready:\n%s", stderr.String())
	}
	lines := progressLines(stderr.String())
	waiting := indexOf(lines, 0, "progress: Widget/w: inprogress")
	ready := indexOf(lines, waiting, "progress: Widget/w: current")
	if waiting < 0 || ready < 0 {
		t.Errorf("progress does not show the Widget in progress, then current:\n%s", strings.Join(lines, "\n"))
	}
}
