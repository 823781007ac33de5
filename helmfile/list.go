package helmfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/gosuri/uitable"
	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/cli/output"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/helm-inject/helm-inject/release"
)

// realHelmV3Marker is the file, in the run's private folder
// (release.EnvPlanCache), that says the real helm answered `helm version`
// with a Helm 3 version: its `helm list` table is the one answerList
// prints.
const realHelmV3Marker = "real-helm-is-v3"

// recordHelmVersion notes, in the run's private folder, that the real
// helm is Helm 3 when out (what `helm version` printed) says so. helmfile
// asks for the version at the start of every run, before any list.
func recordHelmVersion(out []byte) {
	run := os.Getenv(release.EnvPlanCache)
	if run == "" || !bytes.HasPrefix(bytes.TrimSpace(out), []byte("v3.")) {
		return
	}
	_ = os.WriteFile(filepath.Join(run, realHelmV3Marker), nil, 0o600)
}

// answerList answers `helm list` in the form helmfile asks it after each
// upgrade and to tell whether a release is installed (`list --filter
// ^NAME$ [--kube-context C] --namespace NS --uninstalling --deployed
// --failed --pending`), and writes exactly the table Helm 3 prints: the
// same list action of the same SDK, the same table. Through the shim each
// such call would otherwise cost a second process, the real helm's, once
// per release. It answers only inside a `helm-inject helmfile` run whose
// real helm said it is Helm 3; any other flag, any argument and any error
// go to the real helm, which answers (or fails) in its own words.
func answerList(c Call, stdout io.Writer) bool {
	if c.Verb != "list" && c.Verb != "ls" {
		return false
	}
	run := os.Getenv(release.EnvPlanCache)
	if run == "" {
		return false
	}
	if _, err := os.Stat(filepath.Join(run, realHelmV3Marker)); err != nil {
		return false
	}
	settings := cli.New()
	fs := pflag.NewFlagSet("list", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	settings.AddFlags(fs)
	var filter string
	var uninstalling, deployed, failed, pending bool
	fs.StringVarP(&filter, "filter", "f", "", "")
	fs.BoolVar(&uninstalling, "uninstalling", false, "")
	fs.BoolVar(&deployed, "deployed", false, "")
	fs.BoolVar(&failed, "failed", false, "")
	fs.BoolVar(&pending, "pending", false, "")
	if err := fs.Parse(c.Rest); err != nil || fs.NArg() != 1 || settings.Debug {
		return false // fs.Arg(0) is the verb
	}
	cfg, err := release.NewConfiguration(settings, settings.Namespace(), nil)
	if err != nil {
		return false
	}
	l := action.NewList(cfg)
	l.Limit = 256 // helm list's --max default
	l.Filter, l.Uninstalling, l.Deployed, l.Failed, l.Pending = filter, uninstalling, deployed, failed, pending
	l.SetStateMask()
	rels, err := listReleases(cfg, l)
	if err != nil {
		return false
	}
	// As helm's cmd/helm/list.go (newReleaseListWriter, WriteTable).
	table := uitable.New()
	table.AddRow("NAME", "NAMESPACE", "REVISION", "UPDATED", "STATUS", "CHART", "APP VERSION")
	for _, r := range rels {
		updated := "-"
		if !r.Info.LastDeployed.IsZero() {
			updated = r.Info.LastDeployed.String()
		}
		table.AddRow(r.Name, r.Namespace, strconv.Itoa(r.Version), updated, r.Info.Status.String(), chartName(r.Chart), appVersion(r.Chart))
	}
	var out bytes.Buffer
	if err := output.EncodeTable(&out, table); err != nil {
		return false
	}
	_, err = stdout.Write(out.Bytes())
	return err == nil
}

// listReleases runs l. For a filter that names exactly one release
// (helmfile's ^NAME$) it reads that release's revisions alone, where the
// list action would read and decode every revision of every release in the
// namespace to drop all but one name (each list in a run of N releases
// then decodes N histories). The answer is the list action's: the newest
// revision of the name, if its status is in the state mask.
func listReleases(cfg *action.Configuration, l *action.List) ([]*rspb.Release, error) {
	name, ok := strings.CutPrefix(l.Filter, "^")
	if name, ok = strings.CutSuffix(name, "$"); !ok || !plainReleaseName.MatchString(name) {
		found, err := l.Run()
		if err != nil {
			return nil, err
		}
		return release.V1Releases(found)
	}
	if err := cfg.KubeClient.IsReachable(); err != nil {
		return nil, err
	}
	found, err := cfg.Releases.History(name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, err
	}
	revisions, err := release.V1Releases(found)
	if err != nil {
		return nil, err
	}
	var latest *rspb.Release
	for _, r := range revisions {
		if r.Name == name && (latest == nil || r.Version >= latest.Version) {
			latest = r
		}
	}
	if latest == nil || l.StateMask&l.StateMask.FromName(latest.Info.Status.String()) == 0 {
		return nil, nil
	}
	return []*rspb.Release{latest}, nil
}

// plainReleaseName is a release name with no character a regular
// expression reads specially (a dot, allowed in release names, matches
// any character).
var plainReleaseName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// chartName and appVersion are helm's formatChartName and formatAppVersion
// (cmd/helm/history.go).
func chartName(c *chart.Chart) string {
	if c == nil || c.Metadata == nil {
		return "MISSING"
	}
	return c.Name() + "-" + c.Metadata.Version
}

func appVersion(c *chart.Chart) string {
	if c == nil || c.Metadata == nil {
		return "MISSING"
	}
	return c.AppVersion()
}
