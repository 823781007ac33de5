package argocd

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// Announcement is one parameter as Argo CD's UI shows it (Argo CD's
// ParameterAnnouncement, as JSON).
type Announcement struct {
	Name           string            `json:"name" yaml:"name"`
	Title          string            `json:"title,omitempty" yaml:"title,omitempty"`
	Tooltip        string            `json:"tooltip,omitempty" yaml:"tooltip,omitempty"`
	ItemType       string            `json:"itemType,omitempty" yaml:"itemType,omitempty"`
	CollectionType string            `json:"collectionType,omitempty" yaml:"collectionType,omitempty"`
	String         string            `json:"string,omitempty" yaml:"string,omitempty"`
	Map            map[string]string `json:"map,omitempty" yaml:"map,omitempty"`
}

// Parameters announces every parameter generate reads, in order.
func Parameters() []Announcement {
	out := make([]Announcement, 0, len(parameters))
	for _, p := range parameters {
		a := Announcement{Name: p.name, Title: p.title, Tooltip: p.tooltip, ItemType: "string", CollectionType: "string"}
		switch p.kind {
		case kindBool:
			a.ItemType = "boolean"
		case kindArray:
			a.CollectionType = "array"
		case kindMap:
			a.CollectionType = "map"
		}
		out = append(out, a)
	}
	return out
}

// EnvName is the plugin env entry that gives a parameter, or "" for a map
// parameter (given only as a parameter).
func EnvName(a Announcement) string {
	if a.CollectionType == "map" {
		return ""
	}
	return EnvPrefix + escaped(a.Name)
}

// StaticAnnouncements are the parameters plugin.yaml announces: all but
// "set", which the dynamic command announces with the chart's values.
func StaticAnnouncements() []Announcement {
	return slices.DeleteFunc(Parameters(), func(a Announcement) bool { return a.Name == ParamSet })
}

// Announce is the dynamic announcement for the application in appDir: the
// "set" parameter, with the chart's values (flattened to helm --set paths)
// as what the UI shows before anything is set.
func (r *Request) Announce(appDir string) ([]Announcement, error) {
	_, chart, err := r.chart(appDir)
	if err != nil {
		return nil, fmt.Errorf("application %s: %w", r.Release, err)
	}
	ch, err := loader.Load(chart)
	if err != nil {
		return nil, fmt.Errorf("application %s: chart %s: %w", r.Release, chart, err)
	}
	vals := map[string]string{}
	flatten("", ch.Values, vals)
	for _, a := range Parameters() {
		if a.Name == ParamSet {
			a.Map = vals
			return []Announcement{a}, nil
		}
	}
	return nil, nil
}

// flatten writes v's leaves as --set paths: a.b for maps, a[0] for lists.
func flatten(prefix string, v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			key := k
			if strings.ContainsAny(k, ".,=[]") {
				key = strings.NewReplacer(".", `\.`, ",", `\,`, "=", `\=`).Replace(k)
			}
			if prefix != "" {
				key = prefix + "." + key
			}
			flatten(key, v[k], out)
		}
	case []any:
		for i, e := range v {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	case nil:
		out[prefix] = ""
	default:
		out[prefix] = fmt.Sprint(v)
	}
}
