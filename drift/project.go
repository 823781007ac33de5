package drift

// Project returns the live object seen through the manifest: the live
// value of every field the manifest sets, in the manifest's shape, plus
// the containers, init containers and volumes the cluster added. A diff
// of it against the manifest shows the drift and nothing the API server
// defaulted: what helm-diff's --three-way-merge is for. Secret values are
// the live ones; the caller masks them as it masks the manifest's.
func Project(desired, live map[string]any) map[string]any {
	desired = NormalizeSecret(desired)
	out := map[string]any{}
	for k, v := range desired {
		if k == "status" {
			continue
		}
		if p, ok := project(v, live[k], hasKey(live, k), k); ok {
			out[k] = p
		}
	}
	return out
}

// project is the live value at a field the manifest sets; false when the
// live object lacks it (and the manifest's value is not a default the
// API server drops).
func project(want, got any, present bool, key string) (any, bool) {
	if want == nil {
		return nil, false
	}
	if !present {
		return want, isZero(want)
	}
	switch wv := want.(type) {
	case map[string]any:
		gv, ok := got.(map[string]any)
		if !ok {
			return got, true
		}
		out := map[string]any{}
		for k, v := range wv {
			if p, ok := project(v, gv[k], hasKey(gv, k), k); ok {
				out[k] = p
			}
		}
		for _, k := range missingAddedLists(wv, gv) {
			out[k] = projectNamed(nil, gv[k].([]any), k)
		}
		return out, true
	case []any:
		gv, ok := got.([]any)
		if !ok {
			return got, true
		}
		switch {
		case named(wv) && named(gv):
			return projectNamed(wv, gv, key), true
		case len(wv) == len(gv):
			out := make([]any, len(wv))
			for i := range wv {
				out[i], _ = project(wv[i], gv[i], true, "")
			}
			return out, true
		}
		return got, true
	default:
		if sameScalar(want, got) {
			return want, true
		}
		return got, true
	}
}

func projectNamed(want, got []any, key string) []any {
	index := map[string]int{}
	for i, g := range got {
		index[itemName(g)] = i
	}
	out := []any{}
	for _, item := range want {
		j, ok := index[itemName(item)]
		if !ok {
			continue
		}
		delete(index, itemName(item))
		p, _ := project(item, got[j], true, "")
		out = append(out, p)
	}
	for _, j := range added(want, got, key) {
		out = append(out, got[j])
	}
	return out
}
