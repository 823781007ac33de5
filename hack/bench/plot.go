package main

import (
	"fmt"
	"math"
	"strings"
)

// plot draws the median wall time of every method against N as an SVG
// with two panels: methods that print manifests (left) and methods that
// install a release (right), whose times are two orders of magnitude apart.
// Both axes are logarithmic, so ratios between methods read as constant
// distances and the sizes 10 to 2,000 all stay visible. Each panel has its
// own legend.
func plot(res results, sizes []int) string {
	const panelW, h = 560, 600
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", 2*panelW, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", 2*panelW, h)
	var render, install []method
	for _, m := range (&bench{}).methods() {
		if m.install {
			install = append(install, m)
		} else {
			render = append(render, m)
		}
	}
	panel(&b, res, sizes, render, 0, panelW, h, "print manifests (template)")
	panel(&b, res, sizes, install, panelW, panelW, h, "install or upgrade a release")
	b.WriteString("</svg>\n")
	return b.String()
}

func panel(b *strings.Builder, res results, sizes []int, ms []method, x0, w, h int, title string) {
	const left, right, top, bottom, legend = 60, 20, 40, 50, 140
	colors := []string{"#1f77b4", "#ff7f0e", "#d62728", "#2ca02c", "#9467bd", "#8c564b"}
	plotBottom := h - bottom - legend
	minT, maxT := math.Inf(1), 0.0
	for _, m := range ms {
		if res[m.key] == nil {
			continue
		}
		for _, n := range sizes {
			t := res.wall(m.key, n).median
			minT, maxT = min(minT, t), max(maxT, t)
		}
	}
	if maxT == 0 {
		return
	}
	lo, hi := math.Floor(math.Log10(minT)), math.Ceil(math.Log10(maxT))
	if hi == lo {
		hi++
	}
	nLo, nHi := math.Log10(float64(sizes[0])), math.Log10(float64(sizes[len(sizes)-1]))
	if nHi == nLo {
		nLo--
	}
	x := func(n float64) float64 {
		return float64(x0+left) + float64(w-left-right)*(math.Log10(n)-nLo)/(nHi-nLo)
	}
	y := func(t float64) float64 {
		return float64(plotBottom) - float64(plotBottom-top)*(math.Log10(t)-lo)/(hi-lo)
	}
	fmt.Fprintf(b, `<text x="%d" y="22" font-size="14" text-anchor="middle">%s</text>`+"\n", x0+w/2, title)
	for e := lo; e <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			t := m * math.Pow(10, e)
			if e == hi && m > 1 {
				break
			}
			fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%.3g s</text>`+"\n",
				x0+left, y(t), x0+w-right, y(t), x0+left-6, y(t)+4, t)
		}
	}
	for _, n := range sizes {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n",
			x(float64(n)), top, x(float64(n)), plotBottom, x(float64(n)), plotBottom+16, n)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">N (workloads: a Deployment and a Service each); median wall time; log-log</text>`+"\n", x0+w/2, plotBottom+34)
	for i, m := range ms {
		if res[m.key] == nil {
			continue
		}
		c := colors[i%len(colors)]
		var pts []string
		for _, n := range sizes {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(n)), y(res.wall(m.key, n).median)))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		ly := plotBottom + 56 + 18*i
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s</text>`+"\n",
			x0+left, ly, x0+left+28, ly, c, x0+left+34, ly+4, strings.ReplaceAll(m.label, `\|`, "|"))
	}
}
