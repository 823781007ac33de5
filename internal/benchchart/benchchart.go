// Package benchchart writes the synthetic charts of the benchmarks: a chart
// with n template files, each a Deployment and a headless Service, the shape
// of the reference numbers in issue 9 (and of a large umbrella chart).
package benchchart

import (
	"fmt"
	"os"
	"path/filepath"
)

const workload = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-w%[1]d
  labels:
    app.kubernetes.io/name: w%[1]d
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/name: w%[1]d
  template:
    metadata:
      labels:
        app.kubernetes.io/name: w%[1]d
    spec:
      containers:
        - name: app
          image: {{ .Values.image | quote }}
          ports:
            - containerPort: 8080
          env:
            - name: LEVEL
              value: {{ .Values.level | quote }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-w%[1]d
spec:
  clusterIP: None
  selector:
    app.kubernetes.io/name: w%[1]d
  ports:
    - port: 8080
`

// Write creates the chart "bench" with n workloads in dir.
func Write(dir string, n int) error {
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: bench\nversion: 1.0.0\n",
		"values.yaml": "replicas: 1\nimage: registry.example/app:1.0\nlevel: info\n",
	}
	for i := range n {
		files[fmt.Sprintf("templates/w%04d.yaml", i)] = fmt.Sprintf(workload, i)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Injector is a built-in injector the benchmarks run: a definition in a
// library folder (slash-separated, relative to the repository root), with
// parameter values.
type Injector struct {
	Library, Name, Version string
	Params                 map[string]any
}

// Injectors are the built-in injectors every benchmark measures: sidecar
// 1.0.0 adds the very container the fixture program adds (so built-in and
// external injection compare on objects of the same size), log-shipper
// 1.1.0 is a richer template (what a larger patch costs).
func Injectors() (sidecar, logShipper Injector) {
	return Injector{Library: "fixtures/injectors/library", Name: "sidecar", Version: "1.0.0"},
		Injector{Library: "examples/injectors", Name: "log-shipper", Version: "1.1.0", Params: map[string]any{"destination": "logs.example:24224"}}
}
