// Package gctune sets the garbage collector for a process that lives for a
// second or less, from its own initialisation: imported by main for its
// side effect alone, it runs before most of the packages whose
// initialisation it speeds up (Go initialises packages in import path
// order once their imports are), as go.uber.org/automaxprocs does for
// GOMAXPROCS.
package gctune

import (
	"os"
	"runtime/debug"
)

// Percent is GOGC for helm-inject unless the environment sets GOGC: the
// heap may grow to three times what is live before a collection, not
// twice. docs/performance.md has the measurements that chose it.
const Percent = 200

func init() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(Percent)
	}
}
