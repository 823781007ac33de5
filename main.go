// Command helm-inject renders a Helm chart, injects sidecars into every
// manifest with declared, versioned injectors, and installs the result as an
// ordinary Helm release. See README.md and docs/.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/helm-inject/helm-inject/helmfile"
	"github.com/helm-inject/helm-inject/internal/cli"
)

func main() {
	// Ctrl-C and SIGTERM cancel the context: injectors are killed and
	// temporary files are removed before the process exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var code int
	if os.Getenv(helmfile.EnvAsHelm) != "" {
		// Run by helmfile as its helm binary (see helmfile/shim.go).
		code = helmfile.Shim(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, cli.Run)
	} else {
		code = cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(code)
}
