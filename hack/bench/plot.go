package main

import (
	"fmt"
	"math"
	"strings"
)

// plot draws the median wall time of every method against N as an SVG
// line chart (linear axes), with a legend.
func plot(res results, sizes []int) string {
	const w, h, left, right, top, bottom = 900, 520, 70, 330, 20, 50
	colors := []string{"#1f77b4", "#ff7f0e", "#d62728", "#2ca02c", "#17becf", "#7f7f7f", "#bcbd22", "#9467bd", "#e377c2"}
	maxN := float64(sizes[len(sizes)-1])
	maxT := 0.0
	for key := range res {
		for _, n := range sizes {
			maxT = max(maxT, res.wall(key, n).median)
		}
	}
	maxT = niceCeil(maxT)
	x := func(n float64) float64 { return left + (w-left-right)*n/maxN }
	y := func(t float64) float64 { return h - bottom - (h-top-bottom)*t/maxT }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	// Axes and grid.
	for i := 0; i <= 5; i++ {
		t := maxT * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%.2g s</text>`+"\n",
			left, y(t), w-right, y(t), left-6, y(t)+4, t)
	}
	for _, n := range sizes {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n",
			x(float64(n)), top, x(float64(n)), h-bottom, x(float64(n)), h-bottom+16, n)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">N (workloads: Deployment + Service each)</text>`+"\n", (left+w-right)/2, h-12)
	fmt.Fprintf(&b, `<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">median wall time</text>`+"\n", (top+h-bottom)/2, (top+h-bottom)/2)
	// One line per method, in the report's order.
	for i, m := range (&bench{}).methods() {
		if res[m.key] == nil {
			continue
		}
		c := colors[i%len(colors)]
		var pts []string
		for _, n := range sizes {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(n)), y(res.wall(m.key, n).median)))
		}
		dash := ""
		if m.install {
			dash = ` stroke-dasharray="6 3"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", c, dash, strings.Join(pts, " "))
		ly := top + 10 + 20*i
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text>`+"\n",
			w-right+12, ly, w-right+40, ly, c, dash, w-right+46, ly+4, strings.ReplaceAll(m.label, `\|`, "|"))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds t up to 1, 2 or 5 times a power of ten.
func niceCeil(t float64) float64 {
	if t <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(t)))
	for _, m := range []float64{1, 2, 5, 10} {
		if t <= m*p {
			return m * p
		}
	}
	return 10 * p
}
