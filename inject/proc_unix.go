//go:build unix

package inject

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the injector in its own process group and makes
// cancellation kill the whole group, so a script's children (a pipeline, a
// sleeping helper) die with it instead of holding its output open. On
// Linux the injector also dies with helm-inject (setParentDeathSignal).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// killGroup kills what is left of cmd's process group once cmd has
// exited: the children that held its output past waitDelay. The kernel
// keeps the group's id from being reused while any of them lives; only
// if all of them ended in the moment since waitDelay expired could a new
// group have taken it.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
