package inject

import (
	"strings"
	"testing"
)

// TestPipelineKeepsEachDocumentsTrailer: an injector gives documents back
// without the white space Helm kept after them; each injected document
// keeps its own, even when the injector gives them back in another order,
// so the release stores them as Helm would (no blank line lost or added).
func TestPipelineKeepsEachDocumentsTrailer(t *testing.T) {
	// The injector changes every document (so none is taken back as it
	// went in) and prints them in reverse order.
	inj := mustCommand(t, script(t, `awk 'BEGIN{RS="\n---\n"} {d[NR]=$0} END{for(i=NR;i>=1;i--){print "---"; print d[i]; print "# injected"}}'`))
	in := docs(t, deployA, cmC)
	in[0].Trailer = "\n\n"
	in[1].Trailer = ""
	out, _, err := (&Pipeline{Injectors: []Injector{inj}}).Run(t.Context(), in, Env{Release: "r"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "\n\n", "c": ""}
	for _, d := range out {
		if !strings.HasSuffix(d.Content, "# injected") {
			t.Errorf("%s was not injected: %q", d.ID, d.Content)
		}
		if got := d.Trailer; got != want[d.ID.Name] {
			t.Errorf("%s: trailer %q after injection, want %q", d.ID, got, want[d.ID.Name])
		}
	}
}
