package testenv

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	"github.com/sirupsen/logrus"
)

// OCIRegistry runs a real OCI registry (the CNCF distribution registry,
// the one Helm's own tests use) in memory on a loopback port, over plain
// HTTP, for the test's lifetime, and returns its HOST:PORT.
func OCIRegistry(t testing.TB) string {
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
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the OCI registry did not start on %s", addr)
	return ""
}
