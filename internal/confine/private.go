package confine

import (
	"fmt"
	"os"
	"path/filepath"
)

// PrivateParent is the folder, in the system's temporary folder, that
// holds this user's confined renders' private folders: created on first
// use, and refused unless it is a folder this user owns that no one else
// may read or write (another user could otherwise read a render's files,
// or place a link where it writes).
func PrivateParent() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("helm-inject-confined-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("creating %s for confined renders: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedBy(fi, os.Getuid()) {
		return "", fmt.Errorf("%s is not a private folder of this user (a folder, mode 0700, owned by uid %d): remove it", dir, os.Getuid())
	}
	return dir, nil
}
