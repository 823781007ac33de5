package release

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/cli"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// checkKubeconfig refuses, before any request, a connection that cannot
// work: no kubeconfig at all (client-go would then try
// http://localhost:8080 and report a refused connection), a --kubeconfig
// that does not exist, or a --kube-context the kubeconfig lacks.
func checkKubeconfig(settings *cli.EnvSettings) error {
	if settings.KubeAPIServer != "" {
		return nil // the server is given; the kubeconfig is optional
	}
	loader := settings.RESTClientGetter().ToRawKubeConfigLoader()
	access := loader.ConfigAccess()
	if explicit := access.GetExplicitFile(); explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return fmt.Errorf("no kubeconfig: --kubeconfig names %s, which does not exist", explicit)
		}
	} else if os.Getenv("KUBERNETES_SERVICE_HOST") == "" && len(kubeconfigFiles(access)) == 0 {
		const fix = "; set KUBECONFIG or pass --kubeconfig to reach a cluster (helm-inject template renders without one)"
		if env, ok := os.LookupEnv(clientcmd.RecommendedConfigPathEnvVar); ok && env != "" {
			return fmt.Errorf("no kubeconfig: $KUBECONFIG is %q and no file it names exists%s", env, fix)
		}
		return fmt.Errorf("no kubeconfig: $KUBECONFIG is not set and %s does not exist%s", clientcmd.RecommendedHomeFile, fix)
	}
	raw, err := loader.RawConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	want, flag := contextInUse(settings, raw.CurrentContext), "--kube-context"
	if settings.KubeContext == "" {
		flag = "its current-context"
	}
	if want != "" && raw.Contexts[want] == nil {
		names := slices.Sorted(maps.Keys(raw.Contexts))
		has := "no contexts"
		if len(names) > 0 {
			has = "the contexts " + strings.Join(names, ", ")
		}
		return fmt.Errorf("kube context %q (%s) is not in the kubeconfig %s, which has %s; pass one of them with --kube-context",
			want, flag, strings.Join(kubeconfigFiles(access), ":"), has)
	}
	return nil
}

// kubeconfigFiles are the kubeconfig files client-go reads that exist:
// --kubeconfig, else those $KUBECONFIG names, else ~/.kube/config.
func kubeconfigFiles(access clientcmd.ConfigAccess) []string {
	return slices.DeleteFunc(access.GetLoadingPrecedence(), func(p string) bool {
		_, err := os.Stat(p)
		return err != nil
	})
}

// contextInUse is the kube context a connection uses: --kube-context, else
// the kubeconfig's current-context.
func contextInUse(settings *cli.EnvSettings, current string) string {
	if settings.KubeContext != "" {
		return settings.KubeContext
	}
	return current
}

// ExplainClusterError rewrites an error that comes from the cluster
// connection (nothing answers at the server; RBAC refused a request) into
// what happened and what to do, keeping the leading `release "NAME": `.
// Other errors are returned as they are.
func ExplainClusterError(err error, settings *cli.EnvSettings) error {
	if err == nil {
		return nil
	}
	var explained string
	var status apierrors.APIStatus
	var ue *url.Error
	switch {
	case errors.As(err, &status) && status.Status().Reason == metav1.StatusReasonForbidden:
		explained = forbidden(status.Status().Message)
	case errors.As(err, &ue):
		server, where := clusterServer(settings)
		if server == "" || !sameHost(ue.URL, server) {
			return err // a chart download, not the cluster
		}
		explained = fmt.Sprintf("Kubernetes cluster unreachable at %s (%s): %s; check that the cluster is running and that this is the cluster you mean (kubectl cluster-info shows what the kubeconfig reaches)",
			server, where, cause(ue))
	default:
		return err
	}
	prefix := releasePrefix.FindString(err.Error())
	return fmt.Errorf("%s%s", prefix, explained)
}

var releasePrefix = regexp.MustCompile(`^release "[^"]*": `)

// rbacDenial is the API server's RBAC message: User "u" cannot VERB
// resource "R" in API group "G" in the namespace "N" (or at the cluster
// scope).
var rbacDenial = regexp.MustCompile(`User "([^"]*)" cannot (\S+) resource "([^"]*)" in API group "([^"]*)"(?: in the namespace "([^"]*)"| at the cluster scope)`)

func forbidden(message string) string {
	m := rbacDenial.FindStringSubmatch(message)
	if m == nil {
		return "forbidden by the cluster: " + message
	}
	user, verb, resource, group, ns := m[1], m[2], m[3], m[4], m[5]
	if group != "" {
		resource += "." + group
	}
	where := "at cluster scope"
	if ns != "" {
		where = fmt.Sprintf("in namespace %q", ns)
	}
	return fmt.Sprintf("forbidden: user %q may not %s %s %s (the cluster's RBAC refused it); helm-inject acts with your rights, as helm does, and keeps each release in Secrets of its namespace: ask for a Role that grants %s on %s %s",
		user, verb, resource, where, verb, resource, where)
}

// clusterServer is the API server the settings connect to, and where that
// came from.
func clusterServer(settings *cli.EnvSettings) (server, where string) {
	if settings.KubeAPIServer != "" {
		return settings.KubeAPIServer, "--kube-apiserver"
	}
	loader := settings.RESTClientGetter().ToRawKubeConfigLoader()
	cfg, err := loader.ClientConfig()
	if err != nil {
		return "", ""
	}
	raw, _ := loader.RawConfig()
	return cfg.Host, fmt.Sprintf("kubeconfig %s, context %q", strings.Join(kubeconfigFiles(loader.ConfigAccess()), ":"), contextInUse(settings, raw.CurrentContext))
}

// sameHost reports whether a request went to the API server. The server
// may be a bare host:port ("127.0.0.1:6443" does not even parse as a URL).
func sameHost(requested, server string) bool {
	r, err := url.Parse(requested)
	if err != nil {
		return false
	}
	s, err := url.Parse(server)
	if err != nil || s.Host == "" {
		s, err = url.Parse("https://" + server)
	}
	return err == nil && r.Host == s.Host
}

// cause is the innermost reason a request failed: "connection refused",
// "lookup x: no such host", a TLS or timeout error.
func cause(ue *url.Error) string {
	var sys *os.SyscallError
	if errors.As(ue.Err, &sys) {
		return sys.Err.Error()
	}
	return ue.Err.Error()
}
