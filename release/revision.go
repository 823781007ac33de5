package release

import (
	"fmt"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	"maps"
	"reflect"
	"slices"
	"strings"

	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/manifest"
)

// revisionInputs are what, besides the plan, decides whether an apply
// stores a new revision.
type revisionInputs struct {
	// labels are --labels: merged into the newest revision's labels, as
	// Helm's upgrade does.
	labels       map[string]string
	forceUpgrade bool
	// serverSide is --server-side: "true" or "false" asks for an apply
	// method; "auto" or "" keeps the release's.
	serverSide string
	// description is --description, which helm stores on the revision an
	// upgrade makes.
	description string
	// hooks is true when the apply runs hooks (no --no-hooks): helm runs
	// pre- and post-upgrade hooks on every upgrade.
	hooks bool
}

// revisionDecision is what applying a plan would change.
type revisionDecision struct {
	// Changes are the resources (manifests and hooks) that differ from the
	// deployed revision; every resource when the release is installed.
	Changes []Change
	// Reasons are the other differences that make a new revision: an
	// install, a failed newest revision, injectors, chart metadata, values,
	// labels.
	Reasons []string
}

// newRevision reports whether anything would change.
func (d revisionDecision) newRevision() bool { return len(d.Changes) > 0 || len(d.Reasons) > 0 }

// decideRevision is the one place that decides whether applying p stores a
// new revision: Apply skips the upgrade when it finds nothing, and Diff's
// --detailed-exitcode reports exactly what it finds, so the two always
// agree.
//
// Rendered notes are not compared: they are shown to the user, not applied
// to the cluster, and a NOTES.txt that prints .Release.Revision would
// otherwise make every apply a new revision (see docs/diff.md).
func decideRevision(p *plan, in revisionInputs) (revisionDecision, error) {
	var d revisionDecision
	current := p.current
	if current == nil {
		d.Changes = compare(nil, p.rendered.Documents, p.namespace)
		d.Reasons = append(d.Reasons, "the release does not exist yet: apply installs it")
		return d, nil
	}
	// With nothing changed, every deployed document is one just rendered.
	before, err := releaseDocuments(current, manifest.NewKnown(p.rendered.Documents))
	if err != nil {
		return d, fmt.Errorf("reading revision %d: %w", current.Version, err)
	}
	d.Changes = compare(before, p.rendered.Documents, current.Namespace)
	if in.forceUpgrade {
		d.Reasons = append(d.Reasons, "--force-upgrade: apply upgrades even without changes")
	}
	// After a failed or interrupted upgrade the cluster may hold a part of
	// it, so even the same inputs are applied again.
	if p.last != nil && (p.last.Version != current.Version || current.Info.Status != rcommon.StatusDeployed) {
		d.Reasons = append(d.Reasons, fmt.Sprintf("the newest revision %d is %s: apply applies again", p.last.Version, p.last.Info.Status))
	}
	if r := applyMethodReason(current, in.serverSide); r != "" {
		d.Reasons = append(d.Reasons, r)
	}
	d.Reasons = append(d.Reasons, helmUpgradeReasons(p, in)...)
	d.Reasons = append(d.Reasons, metadataReasons(current, p, len(d.Changes) > 0)...)
	same, err := sameJSON(p.values, current.Config)
	if err != nil {
		return d, err
	}
	if !same {
		d.Reasons = append(d.Reasons, "the release values change (see helm get values)")
	}
	if len(in.labels) > 0 {
		last := current
		if p.last != nil {
			last = p.last
		}
		if merged := mergeLabels(last.Labels, in.labels); !maps.Equal(merged, last.Labels) && !(len(merged) == 0 && len(last.Labels) == 0) {
			d.Reasons = append(d.Reasons, "the release labels change (--labels)")
		}
	}
	return d, nil
}

// helmUpgradeReasons are what helm's upgrade does on every upgrade, even
// of a release it does not change, that only a revision can hold: it runs
// the upgrade hooks (their runs are recorded on the revision) and stores
// --description.
func helmUpgradeReasons(p *plan, in revisionInputs) []string {
	var reasons []string
	if in.description != "" && in.description != p.current.Info.Description {
		reasons = append(reasons, fmt.Sprintf("--description %q: helm stores it on a new revision (revision %d's is %q)", in.description, p.current.Version, p.current.Info.Description))
	}
	if in.hooks {
		if events := upgradeHooks(p.rendered.Documents); len(events) > 0 {
			reasons = append(reasons, fmt.Sprintf("the chart has %s hooks, which helm runs on every upgrade (--no-hooks skips them)", strings.Join(events, " and ")))
		}
	}
	return reasons
}

// upgradeHooks are the upgrade events (pre-upgrade, post-upgrade) that
// hooks among docs run on, in that order.
func upgradeHooks(docs []manifest.Document) []string {
	var events []string
	for _, event := range []string{"pre-upgrade", "post-upgrade"} {
		if slices.ContainsFunc(docs, func(d manifest.Document) bool { return hookRunsOn(d.Hook, event) }) {
			events = append(events, event)
		}
	}
	return events
}

// hookRunsOn reads a helm.sh/hook annotation as Helm does: events
// separated by commas, spaces around them ignored.
func hookRunsOn(annotation, event string) bool {
	for e := range strings.SplitSeq(annotation, ",") {
		if strings.TrimSpace(e) == event {
			return true
		}
	}
	return false
}

// applyMethodReason says why an apply with --server-side=true or =false
// applies again although nothing else changed: the deployed revision was
// applied the other way (a revision without an apply method is helm 3's
// client-side apply). helm 4 makes a new revision on every upgrade, so the
// flag always takes effect there; here it must count as a change, or it
// would be ignored for an unchanged release.
func applyMethodReason(current *release.Release, serverSide string) string {
	if serverSide != "true" && serverSide != "false" {
		return ""
	}
	was := current.ApplyMethod
	if was == "" {
		was = string(release.ApplyMethodClientSideApply)
	}
	want := string(release.ApplyMethodClientSideApply)
	if serverSide == "true" {
		want = string(release.ApplyMethodServerSideApply)
	}
	if was == want {
		return ""
	}
	return fmt.Sprintf("--server-side=%s: revision %d was applied %s, apply applies %s", serverSide, current.Version, applyMethodName(was), applyMethodName(want))
}

func applyMethodName(method string) string {
	if method == string(release.ApplyMethodServerSideApply) {
		return "server-side (ssa)"
	}
	return "client-side (csa)"
}

// metadataReasons describes how the temporary chart's metadata differs
// from the deployed revision's: injector versions and parameters, the
// chart's name and version, or (when no resource changes explain it) any
// other Chart.yaml field or annotation.
func metadataReasons(current *release.Release, p *plan, resourcesChanged bool) []string {
	was, now := current.Chart.Metadata, p.chart.Metadata
	if reflect.DeepEqual(was, now) {
		return nil
	}
	if was.Annotations[chartify.AnnotationRendered] == "" {
		// A revision plain helm made (helmfile upgrades releases without
		// injectors with the real helm): only the chart itself counts.
		if was.Name == now.Name && was.Version == now.Version && was.AppVersion == now.AppVersion {
			return nil
		}
	}
	reasons := injectorChanges(p.recordsBefore, p.records)
	if was.Name != now.Name || was.Version != now.Version || was.AppVersion != now.AppVersion {
		reasons = append(reasons, fmt.Sprintf("chart %s-%s (app %s) → %s-%s (app %s)", was.Name, was.Version, was.AppVersion, now.Name, now.Version, now.AppVersion))
	}
	if len(reasons) == 0 && !resourcesChanged {
		reasons = append(reasons, "the chart's metadata changes (Chart.yaml fields or helm-inject annotations)")
	}
	return reasons
}

// mergeLabels is Helm's mergeCustomLabels: desired over current, and a
// label set to "null" removed.
func mergeLabels(current, desired map[string]string) map[string]string {
	out := maps.Clone(current)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range desired {
		if v == "null" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}
