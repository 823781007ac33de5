//go:build unix

package release

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// privateFolder refuses dir unless it is a folder (not a link) that the
// user running helm-inject owns and that no one else may read or write.
func privateFolder(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a folder (a link is not followed)")
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("mode %04o, want 0700", perm)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by user %d, not by you (%d)", st.Uid, os.Geteuid())
	}
	return nil
}
