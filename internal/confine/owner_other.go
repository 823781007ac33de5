//go:build !unix

package confine

import "os"

// ownedBy cannot tell on this system; confinement is Linux's anyway.
func ownedBy(os.FileInfo, int) bool { return true }
