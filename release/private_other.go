//go:build !unix

package release

import (
	"errors"
	"os"
)

// privateFolder refuses dir unless it is a folder; on this system its
// owner and mode are not checked.
func privateFolder(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a folder")
	}
	return nil
}
