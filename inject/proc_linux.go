package inject

import "syscall"

// setParentDeathSignal has the kernel kill the injector when helm-inject
// dies without a chance to do it itself (kill -9, an OOM kill, Argo CD
// ending the plugin at its timeout): an orphaned injector would go on
// reading the release's manifests. The signal follows the thread that
// started the child, which Command.Inject keeps locked until it exits.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
