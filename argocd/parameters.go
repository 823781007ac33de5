package argocd

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/internal/budget"
	"github.com/helm-inject/helm-inject/internal/repofs"
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
// "chart-values", which the dynamic command announces with the chart's
// values.
func StaticAnnouncements() []Announcement {
	return slices.DeleteFunc(Parameters(), func(a Announcement) bool { return a.Name == ParamChartValues })
}

// Announce is the dynamic announcement for the application in appDir:
// "chart-values", the chart's values flattened to helm --set paths, for a
// person to read before setting any. They are not announced as the
// defaults of "set": Argo CD's UI saves an announced map as it is shown,
// and every chart default would become a --set that beats the
// application's values files.
func (r *Request) Announce(appDir string, limits budget.Limits) ([]Announcement, error) {
	repo, appRel, err := r.openRepo(appDir, budget.New(limits))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.app(), err)
	}
	defer repo.Close()
	dir, err := resolve(repo, appRel, "chart", cmp.Or(r.Params.Chart, "."))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.app(), err)
	}
	load := chartify.LoadChartFromRepo
	if fi, err := repo.Stat(dir); err == nil && !fi.IsDir() {
		load = func(repo *repofs.Repo, dir string) (*chart.Chart, error) {
			ch, _, err := chartify.LoadFromRepo(repo, dir, nil)
			return ch, err
		}
	}
	ch, err := load(repo, dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.app(), err)
	}
	vals := map[string]string{}
	flatten("", ch.Values, vals)
	for _, a := range Parameters() {
		if a.Name == ParamChartValues {
			a.Map = vals
			return []Announcement{a}, nil
		}
	}
	return nil, nil
}

// flatten writes v's leaves as --set paths, a.b for maps and a[0] for
// lists, each value as helm --set would read it back: numbers in full
// (10000000, not 1e+07), null as null, an empty map or list as {} or []
// (no leaf below it to name), and a key's ".", "[", "]", ",", "=" and "\\"
// escaped with a backslash, as helm's strvals reads keys.
func flatten(prefix string, v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 && prefix != "" {
			out[prefix] = "{}"
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			key := keyEscaper.Replace(k)
			if prefix != "" {
				key = prefix + "." + key
			}
			flatten(key, v[k], out)
		}
	case []any:
		if len(v) == 0 {
			out[prefix] = "[]"
		}
		for i, e := range v {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	case nil:
		out[prefix] = "null"
	case float64:
		out[prefix] = strconv.FormatFloat(v, 'f', -1, 64)
	case float32:
		out[prefix] = strconv.FormatFloat(float64(v), 'f', -1, 32)
	default:
		out[prefix] = fmt.Sprint(v)
	}
}

// keyEscaper escapes what helm's strvals reads as syntax in a key.
var keyEscaper = strings.NewReplacer(`\`, `\\`, ".", `\.`, "[", `\[`, "]", `\]`, ",", `\,`, "=", `\=`)
