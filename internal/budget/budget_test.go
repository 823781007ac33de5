package budget

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

// exceeded is the bound err passed, or 0.
func exceeded(err error) Bound {
	var e *ExceededError
	if errors.As(err, &e) {
		return e.Bound
	}
	return 0
}

// TestDefaults: a render with the default limits reads what the biggest
// real charts need (kube-prometheus-stack's 1,000 files, Helm's largest
// archive of 100 MiB unpacked, a list index of Helm's largest) and is
// refused each bomb, well below a 512 MiB sidecar.
func TestDefaults(t *testing.T) {
	tests := []struct {
		name   string
		charge func(b *Budget) error
		want   Bound // 0: accepted
	}{
		{name: "a chart of 1,000 files", charge: func(b *Budget) error { return openN(b, 1_000) }},
		{name: "a chart of Helm's largest archive and its values", charge: func(b *Budget) error { return b.Read("x", 100<<20+8<<20) }},
		{name: "Helm's largest list index, once", charge: func(b *Budget) error { return b.ListSlots("k", 65_537) }},
		{name: "4,096 paths of a link bomb", charge: func(b *Budget) error { return openN(b, 4_096) }},
		{name: "16,384 paths of a link bomb", charge: func(b *Budget) error { return openN(b, 16_384) }, want: Files},
		{name: "274 MiB of nested archives", charge: func(b *Budget) error { return b.Read("x", 274<<20) }, want: Bytes},
		{name: "a 256 MiB read", charge: func(b *Budget) error { return b.Read("x", 256<<20) }, want: Bytes},
		{name: "three of Helm's largest list indexes", charge: func(b *Budget) error { return b.ListSlots("k", 3*65_537) }},
		{name: "four of Helm's largest list indexes", charge: func(b *Budget) error { return b.ListSlots("k", 4*65_537) }, want: ListSlots},
		{name: "a list index per 7 bytes of a 128 KiB parameter", charge: func(b *Budget) error { return b.ListSlots("k", 18_724*65_537) }, want: ListSlots},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := exceeded(tc.charge(New(Limits{}))); got != tc.want {
				t.Errorf("bound passed: %v, want %v", got, tc.want)
			}
		})
	}
	// 128 MiB read, 10,000 files of a few hundred bytes' overhead, 4 MiB
	// of list slots: far below 512 MiB.
	l := Limits{}.WithDefaults()
	if held := l.Bytes + l.Files*1024 + l.ListSlots*16; held > 200<<20 {
		t.Errorf("the defaults hold up to %d MiB", held>>20)
	}
	for _, n := range []int{32 << 20, 1 << 20} {
		if err := (Limits{}).CheckOutput(n); err != nil {
			t.Errorf("CheckOutput(%d) with the defaults: %v", n, err)
		}
	}
	if got := exceeded(Limits{}.CheckOutput(64 << 20)); got != OutputBytes {
		t.Errorf("CheckOutput(64 MiB) with the defaults passed %v, want the output bound", got)
	}
}

func openN(b *Budget, n int) error {
	for range n {
		if err := b.OpenFile("f"); err != nil {
			return err
		}
	}
	return nil
}

// TestWithDefaults: each zero or negative field, alone, is its default;
// a set field is kept.
func TestWithDefaults(t *testing.T) {
	def := Limits{Files: DefaultFiles, Bytes: DefaultBytes, ListSlots: DefaultListSlots, OutputBytes: DefaultOutputBytes}
	if got := (Limits{}).WithDefaults(); got != def {
		t.Errorf("zero Limits: %+v, want %+v", got, def)
	}
	if got := (Limits{Files: -1, Bytes: -1, ListSlots: -1, OutputBytes: -1}).WithDefaults(); got != def {
		t.Errorf("negative Limits: %+v, want %+v", got, def)
	}
	for _, set := range []Limits{{Files: 7}, {Bytes: 7}, {ListSlots: 7}, {OutputBytes: 7}} {
		want := def
		switch {
		case set.Files != 0:
			want.Files = 7
		case set.Bytes != 0:
			want.Bytes = 7
		case set.ListSlots != 0:
			want.ListSlots = 7
		default:
			want.OutputBytes = 7
		}
		if got := set.WithDefaults(); got != want {
			t.Errorf("%+v.WithDefaults() = %+v, want %+v", set, got, want)
		}
	}
}

// TestBounds: each bound refuses the charge that passes it, and only
// that; the error names the bound, its limit, the operator's flag and
// what was read, and every later charge fails with it.
func TestBounds(t *testing.T) {
	tests := []struct {
		name    string
		limits  Limits
		fits    func(b *Budget) error
		passes  func(b *Budget) error
		bound   Bound
		message string
	}{
		{
			name:    "files",
			limits:  Limits{Files: 3},
			fits:    func(b *Budget) error { return openN(b, 3) },
			passes:  func(b *Budget) error { return b.OpenFile("apps/web/files/l3/a/b/f.txt") },
			bound:   Files,
			message: "apps/web/files/l3/a/b/f.txt: the render opened more than 3 files and folders (each time it reaches one: through two links a file counts twice; archive entries count too; the operator's --max-files)",
		},
		{
			name:    "bytes",
			limits:  Limits{Bytes: 128 << 20},
			fits:    func(b *Budget) error { return b.Read("a", 128<<20) },
			passes:  func(b *Budget) error { return b.Read("apps/web/values.yaml", 1) },
			bound:   Bytes,
			message: "apps/web/values.yaml: the render read more than 128 MiB (files, unpacked archives, values and parameters; the operator's --max-read-bytes)",
		},
		{
			name:    "list slots",
			limits:  Limits{ListSlots: 10},
			fits:    func(b *Budget) error { return b.ListSlots("a", 10) },
			passes:  func(b *Budget) error { return b.ListSlots(`set "a[0]"`, 1) },
			bound:   ListSlots,
			message: `set "a[0]": the parameters' list indexes make more than 10 list slots (n+1 for every [n] of a set, set-string, set-file or with-set key; the operator's --max-list-slots)`,
		},
		{
			name:    "bytes not a multiple of a KiB",
			limits:  Limits{Bytes: 1000},
			fits:    func(b *Budget) error { return b.Read("a", 1000) },
			passes:  func(b *Budget) error { return b.Read("b", math.MaxInt64) },
			bound:   Bytes,
			message: "b: the render read more than 1000 bytes (files, unpacked archives, values and parameters; the operator's --max-read-bytes)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.limits)
			if err := tc.fits(b); err != nil {
				t.Fatalf("up to the limit: %v", err)
			}
			err := tc.passes(b)
			var e *ExceededError
			if !errors.As(err, &e) || e.Bound != tc.bound {
				t.Fatalf("past the limit: %v, want the %v bound", err, tc.bound)
			}
			if err.Error() != tc.message {
				t.Errorf("message\n  %s\nwant\n  %s", err, tc.message)
			}
			if b.Err() != err {
				t.Errorf("Err() = %v, want %v", b.Err(), err)
			}
			// Each kind of charge, however small, now fails.
			for _, later := range []error{b.OpenFile("x"), b.Read("x", 1), b.ListSlots("x", 1)} {
				if later != err {
					t.Errorf("a charge after the bound passed: %v, want %v", later, err)
				}
			}
		})
	}
	if err := New(Limits{}).Err(); err != nil {
		t.Errorf("a new budget's Err() = %v", err)
	}
}

// TestOutput: CheckOutput refuses more than the bound, naming the flag.
func TestOutput(t *testing.T) {
	l := Limits{OutputBytes: 100}
	if err := l.CheckOutput(100); err != nil {
		t.Errorf("CheckOutput(100): %v", err)
	}
	err := l.CheckOutput(101)
	if exceeded(err) != OutputBytes || !strings.Contains(err.Error(), "more than 100 bytes") || !strings.Contains(err.Error(), "--max-output-bytes") {
		t.Errorf("CheckOutput(101): %v", err)
	}
	if err := New(l).CheckOutput(101); exceeded(err) != OutputBytes {
		t.Errorf("Budget.CheckOutput(101): %v", err)
	}
}

// TestNil: a nil budget counts nothing.
func TestNil(t *testing.T) {
	var b *Budget
	if err := errors.Join(b.OpenFile("x"), b.Read("x", math.MaxInt64), b.ListSlots("x", math.MaxInt64), b.CheckOutput(math.MaxInt32), b.Err(),
		b.Unpack("x", bytes.NewReader(archive(t, nil, map[string]int64{"c/big": 1 << 20})), nil)); err != nil {
		t.Error(err)
	}
	if got, err := b.ReadAll("x", strings.NewReader("abc"), 1); string(got) != "abc" || err != nil {
		t.Errorf("ReadAll = %q, %v", got, err)
	}
}

// TestConcurrent: charges from many goroutines never pass the limit
// together.
func TestConcurrent(t *testing.T) {
	b := New(Limits{Bytes: 1000, Files: 1000})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 64 {
		wg.Go(func() {
			for range 100 {
				if b.Read("x", 7) == nil && b.OpenFile("x") == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if u := b.Used(); u.Bytes > 1000 || u.Files > 1000 || ok > 1000/7 {
		t.Errorf("used %+v with %d charges accepted; want at most 1000 bytes", u, ok)
	}
}

// TestReadAll: a reader is charged the size it claims before it is read
// (one that would pass the bound is not read at all), then each byte
// past that size as it is read.
func TestReadAll(t *testing.T) {
	tests := []struct {
		name  string
		data  int // bytes the reader holds
		size  int64
		limit int64
		// read is how many bytes may be read at most; want the bytes
		// charged, or the bound passed.
		read int
		want int64
		err  Bound
	}{
		{name: "as claimed", data: 100, size: 100, limit: 1000, read: 101, want: 100},
		{name: "more than claimed, within the bound", data: 300, size: 0, limit: 1000, read: 301, want: 300},
		{name: "claimed past the bound", data: 100, size: 2000, limit: 1000, read: 0, err: Bytes},
		{name: "grown past the bound", data: 10 << 20, size: 10, limit: 1000, read: 64 << 10, err: Bytes},
		{name: "to the byte", data: 1000, size: 1000, limit: 1000, read: 1001, want: 1000},
		{name: "one byte past", data: 1001, size: 1000, limit: 1000, read: 1001, err: Bytes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Limits{Bytes: tc.limit})
			r := &countingReader{r: bytes.NewReader(make([]byte, tc.data))}
			got, err := b.ReadAll("f", iotest.HalfReader(r), tc.size)
			if exceeded(err) != tc.err {
				t.Fatalf("err = %v, want the %v bound", err, tc.err)
			}
			if err == nil && (len(got) != tc.data || b.Used().Bytes != tc.want) {
				t.Errorf("read %d bytes, charged %d; want %d, %d", len(got), b.Used().Bytes, tc.data, tc.want)
			}
			if r.n > tc.read {
				t.Errorf("read %d bytes of the reader; want at most %d", r.n, tc.read)
			}
		})
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// archive is a gzipped tar of the files given with their content, and of
// zeros of the sizes given (streamed, never held), each named as given.
func archive(t testing.TB, files map[string][]byte, zeros map[string]int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(name string, size int64, r io.Reader) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "c/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		add(name, int64(len(data)), bytes.NewReader(data))
	}
	for name, size := range zeros {
		add(name, size, io.LimitReader(zeros0{}, size))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type zeros0 struct{}

func (zeros0) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// isArchive is a nested predicate: entries ending in .tgz.
func isArchive(name string) bool { return strings.HasSuffix(name, ".tgz") }

// TestUnpack: an archive is charged its entries and their unpacked
// sizes, nested archives too (however deep, each its decompressor's
// state), without holding them, and refused as soon as they pass a
// bound.
func TestUnpack(t *testing.T) {
	chartYAML := []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n")
	inner := archive(t, map[string][]byte{"in/Chart.yaml": chartYAML}, map[string]int64{"in/files/zero": 3 << 20})
	deep := inner
	for range 40 {
		deep = archive(t, map[string][]byte{"c/charts/d.tgz": deep}, nil)
	}
	tests := []struct {
		name    string
		archive []byte
		nested  func(string) bool
		limits  Limits
		// want is the bytes charged, or bound the bound passed and what
		// the error names.
		want  int64
		files int64
		bound Bound
		what  string
	}{
		{
			name:    "small",
			archive: archive(t, map[string][]byte{"c/Chart.yaml": chartYAML}, map[string]int64{"c/files/a": 1000}),
			want:    archiveCost + int64(len("c/Chart.yaml")+len(chartYAML)+len("c/files/a")+1000),
			files:   2,
		},
		{
			name:    "a bomb: small on disk, large unpacked",
			archive: archive(t, nil, map[string]int64{"c/files/zero": 8 << 20}),
			limits:  Limits{Bytes: 4 << 20},
			bound:   Bytes,
			what:    "c/files/zero in charts/bomb.tgz",
		},
		{
			name:    "a bomb in an archive",
			archive: archive(t, map[string][]byte{"c/charts/a.tgz": inner, "c/charts/b.tgz": inner}, nil),
			nested:  isArchive,
			limits:  Limits{Bytes: 5 << 20},
			bound:   Bytes,
			what:    "in/files/zero in c/charts/",
		},
		{
			name:    "nested archives not asked for are their compressed size",
			archive: archive(t, map[string][]byte{"c/charts/a.tgz": inner}, nil),
			limits:  Limits{Bytes: 1 << 20},
			want:    archiveCost + int64(len("c/charts/a.tgz")+len(inner)),
			files:   1,
		},
		{
			name:    "archives 40 deep",
			archive: deep,
			nested:  isArchive,
			limits:  Limits{Bytes: 40 * archiveCost},
			bound:   Bytes,
			what:    "c/charts/d.tgz in c/charts/d.tgz in",
		},
		{
			name:    "entries past the files bound",
			archive: archive(t, map[string][]byte{"c/a": nil, "c/b": nil, "c/c": nil}, nil),
			limits:  Limits{Files: 2},
			bound:   Files,
		},
		{
			name:    "a header that claims more than a 64-bit count holds",
			archive: hugeHeader(t),
			limits:  Limits{Bytes: 1 << 20},
			bound:   Bytes,
		},
		{
			name:    "not an archive: the loader says so",
			archive: []byte("apiVersion: v2\n"),
			want:    archiveCost,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.limits)
			err := b.Unpack("charts/bomb.tgz", bytes.NewReader(tc.archive), tc.nested)
			if exceeded(err) != tc.bound {
				t.Fatalf("err = %v, want the %v bound", err, tc.bound)
			}
			if err != nil {
				if !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), "charts/bomb.tgz") {
					t.Errorf("err = %v, want it to name %q in charts/bomb.tgz", err, tc.what)
				}
				return
			}
			if u := b.Used(); u.Bytes != tc.want || u.Files != tc.files {
				t.Errorf("charged %d bytes, %d files; want %d, %d", u.Bytes, u.Files, tc.want, tc.files)
			}
		})
	}
}

// hugeHeader is an archive whose entry's header claims 2^62 bytes (a
// GNU base-256 size), truncated after it.
func hugeHeader(t *testing.T) []byte {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	if err := tw.WriteHeader(&tar.Header{Name: "c/a", Mode: 0o644, Size: 1 << 62, Typeflag: tar.TypeReg, Format: tar.FormatGNU}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw.Bytes()[:512]); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
