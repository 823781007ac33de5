package confine

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// notifyUSR1 sends the test's SIGUSR1 to c instead of ending the test.
func notifyUSR1(t *testing.T, c chan os.Signal) {
	signal.Notify(c, syscall.SIGUSR1)
	t.Cleanup(func() { signal.Stop(c) })
}
