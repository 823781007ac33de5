package argocd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/helm-inject/helm-inject/inject"
)

const operatorFile = `injectors:
  - name: istio
    command: [istioctl, kube-inject, -f, FILE, --meshConfigFile, /etc/istio/mesh.yaml, "--revision={{revision}}", --label, "{{ team }}"]
    parameters:
      - name: revision
        pattern: '[a-z0-9-]{1,63}'
        default: default
      - name: team
        pattern: '[a-z]+'
  - name: fixed
    command: [log-shipper, FILE]
`

func writeOperatorFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "injectors.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOperatorInjectors: an Application picks the operator's injectors by
// name and sets only the parameters the operator exposes, within their
// patterns; the command line is otherwise the operator's, word for word,
// so no file or cluster flag of the program is the Application's to set.
func TestOperatorInjectors(t *testing.T) {
	pol, err := Operator{InjectorsFile: writeOperatorFile(t, operatorFile)}.Policy(noEnv)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		names   []string
		set     map[string]string
		want    []string
		wantErr string
	}{
		{name: "defaults", names: []string{"istio", "fixed"}, set: map[string]string{"istio.team": "shop"},
			want: []string{"istioctl kube-inject -f FILE --meshConfigFile /etc/istio/mesh.yaml --revision=default --label shop", "log-shipper FILE"}},
		{name: "a parameter", names: []string{"istio"}, set: map[string]string{"istio.revision": "canary-1", "istio.team": "shop"},
			want: []string{"istioctl kube-inject -f FILE --meshConfigFile /etc/istio/mesh.yaml --revision=canary-1 --label shop"}},
		{name: "a value outside the pattern", names: []string{"istio"}, set: map[string]string{"istio.revision": "x --meshConfigFile=/etc/passwd", "istio.team": "shop"},
			wantErr: `injector "istio": parameter "revision": "x --meshConfigFile=/etc/passwd" does not match the operator's pattern [a-z0-9-]{1,63}`},
		{name: "a required parameter missing", names: []string{"istio"},
			wantErr: `injector "istio": parameter "team" is required (istio.team in "operator-injector-set")`},
		{name: "a parameter the operator did not expose", names: []string{"fixed"}, set: map[string]string{"fixed.kubeconfig": "/var/run/secrets"},
			wantErr: `injector "fixed" has no parameter "kubeconfig" (it has: none)`},
		{name: "a parameter of an injector not picked", names: []string{"fixed"}, set: map[string]string{"istio.team": "shop"},
			wantErr: `operator-injector-set "istio.team": give NAME.PARAM of an injector named in "operator-injector"`},
		{name: "an injector the operator did not define", names: []string{"sed"},
			wantErr: `the operator defines no injector "sed" (defined: fixed, istio;`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pol.operatorInjectors(tt.names, tt.set)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, c := range got {
				lines = append(lines, c.Spec)
				if want := strings.Fields(c.Spec); !cmp.Equal(c.Argv, want) {
					t.Errorf("%q runs %q, want %q", c.Spec, c.Argv, want)
				}
			}
			if d := cmp.Diff(tt.want, lines); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

// TestOperatorInjectorValueIsOneArgument: a parameter's value is one
// argument of the program, whatever it holds: quotes, spaces and a second
// flag in it are never split into words again.
func TestOperatorInjectorValueIsOneArgument(t *testing.T) {
	pol, err := Operator{InjectorsFile: writeOperatorFile(t, "injectors:\n- {name: a, command: [prog, FILE, '--note={{n}}'], parameters: [{name: n, pattern: '.+'}]}\n")}.Policy(noEnv)
	if err != nil {
		t.Fatal(err)
	}
	const v = `x' --kubeconfig /etc/k "y`
	got, err := pol.operatorInjectors([]string{"a"}, map[string]string{"a.n": v})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"prog", "FILE", "--note=" + v}; len(got) != 1 || !cmp.Equal(got[0].Argv, want) {
		t.Fatalf("argv %q, want %q", got[0].Argv, want)
	}
	if back, err := inject.ParseCommand(got[0].Spec); err != nil || !cmp.Equal(back.Argv, got[0].Argv) {
		t.Errorf("the recorded spec %q reads back as %v (%v)", got[0].Spec, back, err)
	}
}

// TestLoadOperatorInjectorsRefusesAmbiguity: the operator's file is
// refused when it cannot be applied as written.
func TestLoadOperatorInjectorsRefusesAmbiguity(t *testing.T) {
	for want, content := range map[string]string{
		`injector "a" is defined twice`:                                  "injectors:\n- {name: a, command: [x]}\n- {name: a, command: [y]}\n",
		`injector "a": no command`:                                       "injectors:\n- {name: a}\n",
		`parameter "p" has no pattern`:                                   "injectors:\n- {name: a, command: [x, '{{p}}'], parameters: [{name: p}]}\n",
		`the command uses {{q}}, which is no parameter`:                  "injectors:\n- {name: a, command: [x, '{{q}}']}\n",
		`the command uses {{r}}, which is no parameter`:                  "injectors:\n- {name: a, command: [x, '--{{p}}={{r}}'], parameters: [{name: p, pattern: x}]}\n",
		`the program cannot come from a parameter`:                       "injectors:\n- {name: a, command: ['{{p}}'], parameters: [{name: p, pattern: x}]}\n",
		`parameter "p": the default "Y" does not match its pattern`:      "injectors:\n- {name: a, command: [x], parameters: [{name: p, pattern: '[a-z]', default: 'Y'}]}\n",
		`field args not found`:                                           "injectors:\n- {name: a, command: [x], args: [y]}\n",
		`injector "a.b": a name is required, without dots or spaces`:     "injectors:\n- {name: a.b, command: [x]}\n",
		`parameter "p": error parsing regexp: missing closing ]: ` + "`": "injectors:\n- {name: a, command: [x], parameters: [{name: p, pattern: '[a'}]}\n",
	} {
		path := writeOperatorFile(t, content)
		_, err := LoadOperatorInjectors(path)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--operator-injectors ("+path+")") {
			t.Errorf("%s: %v, want an error naming the file and saying %q", content, err, want)
		}
	}
}

// TestUndefinedOperatorInjector: an Application that names an injector the
// operator did not define is refused with the names that are defined, or
// "none".
func TestUndefinedOperatorInjector(t *testing.T) {
	for _, tt := range []struct {
		pol  Policy
		want string
	}{
		{Policy{}, `the operator defines no injector "mesh" (defined: none;`},
		{Policy{Injectors: map[string]*OperatorInjector{"b": {}, "a": {}}}, `the operator defines no injector "mesh" (defined: a, b;`},
	} {
		if _, err := tt.pol.operatorInjectors([]string{"mesh"}, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}
