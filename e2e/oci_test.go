package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	"github.com/sirupsen/logrus"
)

// ociRegistry runs a real OCI registry (the CNCF distribution registry, the
// one Helm's own tests use) in memory on a loopback port.
func ociRegistry(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	config := &configuration.Configuration{}
	config.HTTP.Addr = addr
	config.HTTP.DrainTimeout = time.Second
	config.Storage = map[string]configuration.Parameters{"inmemory": {}}
	config.Log.AccessLog.Disabled = true
	logrus.SetOutput(io.Discard)
	reg, err := registry.NewRegistry(context.Background(), config)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = reg.ListenAndServe() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = reg.Shutdown(ctx)
	})
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the OCI registry did not start on %s", addr)
	return ""
}

// TestOCIChart pushes the webapp chart to a real OCI registry with the helm
// CLI and applies it from there by oci:// reference.
func TestOCIChart(t *testing.T) {
	addr := ociRegistry(t)
	dir := t.TempDir()
	mustHelm(t, "package", webappChart, "-d", dir)
	mustHelm(t, "push", filepath.Join(dir, "webapp-1.4.2.tgz"), "oci://"+addr+"/charts", "--plain-http")

	ns := namespace(t)
	ref := fmt.Sprintf("oci://%s/charts/webapp", addr)
	mustHelmInject(t, "apply", "from-oci", ref, "--version", "1.4.2", "--plain-http", "-n", ns, "--injector", "sidecar-injector f=FILE")
	if list := mustHelm(t, "list", "-n", ns).stdout; !strings.Contains(list, "webapp-1.4.2") {
		t.Errorf("helm list:\n%s", list)
	}
	got := workloads(t, mustHelm(t, "get", "manifest", "from-oci", "-n", ns).stdout)
	if !contains(got["Deployment/from-oci-web"].containers, "sidecar") {
		t.Errorf("Deployment/from-oci-web has containers %v", got["Deployment/from-oci-web"].containers)
	}
}
