// Command helm-inject renders a Helm chart, injects sidecars into every
// manifest with declared, versioned injectors, and installs the result as an
// ordinary Helm release. See README.md and docs/.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/helm-inject/helm-inject/helmfile"
	"github.com/helm-inject/helm-inject/internal/cli"
	"github.com/helm-inject/helm-inject/internal/interrupt"
	"github.com/helm-inject/helm-inject/internal/profiling"
)

func main() {
	// Ctrl-C and SIGTERM cancel the context: injectors are killed,
	// helm and helmfile get the same signal and time to settle, and
	// temporary files are removed before the process exits.
	ctx, stop := interrupt.NotifyContext(context.Background())
	// HELM_INJECT_PPROF_CPU_PROFILE / _MEM_PROFILE, as helm's HELM_PPROF_*.
	stopProfiling, err := profiling.Start(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	var code int
	if os.Getenv(helmfile.EnvAsHelm) != "" {
		// Run by helmfile as its helm binary (see helmfile/shim.go).
		code = helmfile.Shim(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, cli.Run)
	} else {
		code = cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	stop()
	if err := stopProfiling(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
	}
	os.Exit(code)
}
