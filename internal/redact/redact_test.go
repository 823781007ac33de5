package redact

import "testing"

func TestString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://user:tok3n@charts.example/c-1.0.0.tgz", "https://xxxxx@charts.example/c-1.0.0.tgz"},
		{"https://tok3n@charts.example/c.tgz", "https://xxxxx@charts.example/c.tgz"},
		{"oci://registry.example/charts/web@sha256:abcd", "oci://registry.example/charts/web@sha256:abcd"},
		{"oci://robot:pw@registry.example/charts/web", "oci://xxxxx@registry.example/charts/web"},
		{"https://s3.example/c.tgz?X-Amz-Signature=abc123&X-Amz-Date=2026", "https://s3.example/c.tgz?X-Amz-Signature=xxxxx&X-Amz-Date=2026"},
		{"https://charts.example/c.tgz?access_token=abc&v=1", "https://charts.example/c.tgz?access_token=xxxxx&v=1"},
		{"my-injector --token s3cr3t FILE", "my-injector --token xxxxx FILE"},
		{"my-injector --api-key=s3cr3t FILE", "my-injector --api-key=xxxxx FILE"},
		{"my-injector --password 'a b c' FILE", "my-injector --password xxxxx FILE"},
		{"sidecar-injector f=FILE,token=s3cr3t,image=proxy:1", "sidecar-injector f=FILE,token=xxxxx,image=proxy:1"},
		{"sidecar-injector f=FILE clientSecret=s3cr3t", "sidecar-injector f=FILE clientSecret=xxxxx"},
		{"proxy --auth-enabled --image x FILE", "proxy --auth-enabled --image x FILE"},
		{"istioctl kube-inject -f FILE --meshConfigFile mesh.yaml", "istioctl kube-inject -f FILE --meshConfigFile mesh.yaml"},
		{"./charts/web", "./charts/web"},
		{`release "web": chart https://u:p@host/c.tgz: 401`, `release "web": chart https://xxxxx@host/c.tgz: 401`},
		// A password holding '@': the userinfo runs to the last '@'.
		{"https://user:p@ssw0rd@host/c.tgz", "https://xxxxx@host/c.tgz"},
		{"https://host/c.tgz?key=SECRETKEY&v=1", "https://host/c.tgz?key=xxxxx&v=1"},
		{"https://host/c.tgz?v=1&apikey=SECRETKEY", "https://host/c.tgz?v=1&apikey=xxxxx"},
		{"user:pw@charts.example/c.tgz", "xxxxx@charts.example/c.tgz"},
		{"--repo robot:s3cr3t@charts.example", "--repo xxxxx@charts.example"},
		{"git@git.example:org/repo.git", "git@git.example:org/repo.git"},
		{"curl -H 'Authorization: Bearer abc.def' FILE", "curl -H 'Authorization: Bearer xxxxx' FILE"},
		{"curl -H \"Authorization: Basic dXNlcjpwdw==\" FILE", "curl -H \"Authorization: Basic xxxxx\" FILE"},
		{"my-injector --header=authorization=s3cr3t FILE", "my-injector --header=authorization=xxxxx FILE"},
		// A value-less flag does not swallow the option after it.
		{"my-injector --password-stdin --token s3cr3t FILE", "my-injector --password-stdin --token xxxxx FILE"},
		{"my-injector --token --token s3cr3t FILE", "my-injector --token --token xxxxx FILE"},
		{"my-injector --key s3cr3t --keyring /etc/keys FILE", "my-injector --key xxxxx --keyring /etc/keys FILE"},
		{"sidecar-injector f=FILE,key=s3cr3t", "sidecar-injector f=FILE,key=xxxxx"},
		// A lone "-" is a value (stdin), not a flag.
		{"my-injector --token - FILE", "my-injector --token xxxxx FILE"},
		{"my-injector --label 'token=s3cr3t' FILE", "my-injector --label 'token=s3cr3t' FILE"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSecretValues(t *testing.T) {
	tests := []struct{ in, want string }{
		{"apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: ns\ntype: Opaque\ndata:\n  token: c2VjcmV0\n  cert: |\n    -----BEGIN\n  - item",
			"apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: ns\ntype: Opaque\ndata:\n  token: xxxxx\n  cert: xxxxx\n    xxxxx\n  - xxxxx"},
		{`{"kind":"Secret","data":{"a":"b"}}`, `xxxxx`},
		// Data is masked by where it is, whatever its key is called.
		{"kind: Secret\nmetadata:\n  name: creds\n  labels:\n    name: l1\ndata:\n  name: bmFtZQ==\n  type: dHlwZQ==\n  namespace: bnM=\n  kind: a2luZA==\nstringData:\n  apiVersion: plain\n",
			"kind: Secret\nmetadata:\n  name: creds\n  labels:\n    name: xxxxx\ndata:\n  name: xxxxx\n  type: xxxxx\n  namespace: xxxxx\n  kind: xxxxx\nstringData:\n  apiVersion: xxxxx\n"},
		// An excerpt that starts inside the document.
		{"  token: c2VjcmV0\nkind: Secret\n", "  token: xxxxx\nkind: Secret\n"},
		// A top-level block scalar, and a key after a nested one.
		{"kind: Secret\nnote: |\n  name: admin\nstringData:\n  config: |\n    pw: x\n  other: v\n",
			"kind: Secret\nnote: xxxxx\n  xxxxx\nstringData:\n  config: xxxxx\n    xxxxx\n  other: xxxxx\n"},
		// A block scalar's lines are data, even when they look like keys.
		{"kind: Secret\nstringData:\n  config: |\n    name: admin\n    password: hunter2\nmetadata:\n  name: s\n",
			"kind: Secret\nstringData:\n  config: xxxxx\n    xxxxx\n    xxxxx\nmetadata:\n  name: s\n"},
		{"kind: ConfigMap\ndata:\n  a: b", "kind: ConfigMap\ndata:\n  a: b"},
	}
	for _, tt := range tests {
		if got := SecretValues(tt.in); got != tt.want {
			t.Errorf("SecretValues(%q) =\n%s\nwant\n%s", tt.in, got, tt.want)
		}
	}
}

// TestURLsLeavesProseAlone: error messages are redacted with URLs, which
// does not take a flag named like a secret for one with a value.
func TestURLsLeavesProseAlone(t *testing.T) {
	for _, s := range []string{
		"--hide-secret needs --dry-run (as in helm)",
		"--show-secrets and --suppress-secrets cannot be combined",
		`release "web": token=abc is not a parameter`,
	} {
		if got := URLs(s); got != s {
			t.Errorf("URLs(%q) = %q", s, got)
		}
	}
	if got := URLs(`Get "https://u:p@host/c.tgz?token=t": 401`); got != `Get "https://xxxxx@host/c.tgz?token=xxxxx": 401` {
		t.Errorf("URLs = %q", got)
	}
}

// TestKnown: every given value is masked wherever it occurs; values under
// four bytes are left, as they would mask ordinary words.
func TestKnown(t *testing.T) {
	got := Known("user abcd said abc to abcd-e", []string{"abcd", "abc", ""})
	if want := "user xxxxx said abc to xxxxx-e"; got != want {
		t.Errorf("Known = %q, want %q", got, want)
	}
}
