package redact

import "testing"

// These tests hold the promises of docs/security.md (3. credentials are
// not recorded or printed, 4. Secret data stays out of logs) that
// hack/mutants/internal-redact.yaml mutates; each case says what a user
// would see go wrong.

// TestURLsHideCredentials: credentials in any text (an error, an
// injector's stderr) are masked in the forms a tool prints them.
func TestURLsHideCredentials(t *testing.T) {
	tests := []struct{ name, in, want string }{
		// Otherwise a --repo=user:password@host in a spec or an error
		// shows the password.
		{"user:password@ after an equals sign", "helm pull web --repo=robot:s3cr3t@charts.example", "helm pull web --repo=xxxxx@charts.example"},
		// Otherwise an error quoting the request's JSON headers shows
		// the basic credential.
		{"an Authorization key in JSON", `request {"Authorization": "Basic dXNlcjpwdw=="} refused`, `request {"Authorization": "Basic xxxxx"} refused`},
		{"an Authorization key in single quotes", `{'authorization': 'Basic dXNlcjpwdw=='}`, `{'authorization': 'Basic xxxxx'}`},
		// Otherwise a token a registry or an injector quotes without the
		// header's name is printed.
		{"a Bearer token without its header", "invalid credentials: Bearer eyJhbGciOi.eyJzdWIi.c2ln rejected", "invalid credentials: Bearer xxxxx rejected"},
		{"a bearer token in lower case", "auth failed (bearer abc123)", "auth failed (bearer xxxxx)"},
	}
	for _, tt := range tests {
		if got := URLs(tt.in); got != tt.want {
			t.Errorf("%s: URLs(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

// TestSecretValuesOfBrokenDocuments: an injector's invalid output is
// masked as a Secret when it only has stringData (its kind line lost),
// and a folded block's lines are data as a literal block's are:
// otherwise the error excerpt shows the values, or the text before each
// colon of them (a host, a user).
func TestSecretValuesOfBrokenDocuments(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"stringData without a kind", "metadata:\n  name: db\nstringData:\n  password: hunter2\n",
			"metadata:\n  name: db\nstringData:\n  password: xxxxx\n"},
		{"a folded block", "kind: Secret\nstringData:\n  pgpass: >-\n    db.internal:5432\n    admin:hunter2\nmetadata:\n  name: db\n",
			"kind: Secret\nstringData:\n  pgpass: xxxxx\n    xxxxx\n    xxxxx\nmetadata:\n  name: db\n"},
		{"a folded block kept", "kind: Secret\ndata:\n  note: >+\n    user: admin\n",
			"kind: Secret\ndata:\n  note: xxxxx\n    xxxxx\n"},
	}
	for _, tt := range tests {
		if got := SecretValues(tt.in); got != tt.want {
			t.Errorf("%s: SecretValues(%q) =\n%s\nwant\n%s", tt.name, tt.in, got, tt.want)
		}
	}
}
