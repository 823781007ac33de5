// Package show prints the demo's steps and the command lines it runs, the
// same way in both of its halves.
package show

import (
	"fmt"
	"strings"
)

// Step announces a step of the demo.
func Step(s string) { fmt.Printf("\n==> %s\n", s) }

// Args quotes the arguments a shell would need quoted.
func Args(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " ,=\"'") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
