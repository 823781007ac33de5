// Package profiling writes CPU and heap profiles of one helm-inject run
// when asked to by the environment, as the helm CLI does with
// HELM_PPROF_CPU_PROFILE and HELM_PPROF_MEM_PROFILE: the same run of both
// tools can be profiled the same way and read with `go tool pprof`.
package profiling

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// The variables that name the profiles' files; unset, nothing is written.
const (
	EnvCPUProfile = "HELM_INJECT_PPROF_CPU_PROFILE"
	EnvMemProfile = "HELM_INJECT_PPROF_MEM_PROFILE"
)

// Start starts a CPU profile into the file getenv(EnvCPUProfile) names,
// if any. The returned stop ends it and writes the heap profile into the
// file getenv(EnvMemProfile) names, if any; it is never nil.
func Start(getenv func(string) string) (stop func() error, err error) {
	cpuPath, memPath := getenv(EnvCPUProfile), getenv(EnvMemProfile)
	var cpu *os.File
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			return func() error { return nil }, fmt.Errorf("%s: %w", EnvCPUProfile, err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return func() error { return nil }, fmt.Errorf("%s: starting the CPU profile: %w", EnvCPUProfile, err)
		}
	}
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", EnvCPUProfile, err))
			}
		}
		if memPath != "" {
			if err := writeHeap(memPath); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", EnvMemProfile, err))
			}
		}
		return errors.Join(errs...)
	}, nil
}

func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // up-to-date statistics, as helm's
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
