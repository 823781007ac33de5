// Package budget bounds what one render of untrusted input may read, unpack
// and print. A render gets one Budget, and every read of that render is
// charged to it as it happens: each file and folder opened (a file reached
// through two links is opened, and charged, twice), each byte read, each
// byte an archive unpacks (nested archives included, counted before Helm's
// loader unpacks them), the parameters' own bytes and the list slots
// their keys' indexes make. The first charge that passes a bound fails
// with an *ExceededError, and so does every charge after it, so that a
// loader which swallows an error (an optional file that "could not be
// read") cannot turn a refused render into a different one.
//
// The defaults refuse no real chart and keep a render far below a 512 MiB
// memory ceiling (a sidecar's limit):
//
//   - DefaultFiles, 10,000 files and folders: ten times the biggest real
//     charts (kube-prometheus-stack has about 1,000 files, its vendored
//     dependencies' included), where 3N symbolic links that each lead to
//     the folder above twice make 2^N paths;
//   - DefaultBytes, 128 MiB read and unpacked in all: Helm's own limit for
//     one chart archive is 100 MiB unpacked, which still fits, with room
//     for values files; what is read is held in memory (Helm's loader keeps
//     every file), and Helm's loader gives each archive a fresh 100 MiB of
//     its own, so 124 KB of nested archives took 274 MiB before;
//   - DefaultListSlots, 262,144 list slots (16 bytes each: 4 MiB): three
//     lists at Helm's largest index (strvals' MaxIndex, 65,536) fit, where
//     real parameters index lists below 100; Helm's strvals makes a list
//     of n+1 slots for a key's [n], so "a[65536][65536]..." made 1 MiB for
//     each 7 bytes of a parameter;
//   - DefaultOutputBytes, 32 MiB of rendered manifests: many times what
//     the biggest real charts render, and what Argo CD then stores and
//     sends on in each of its caches.
//
// A nil *Budget counts nothing: every charge succeeds.
package budget

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// The defaults, used for a Limits field that is zero.
const (
	DefaultFiles       = 10_000
	DefaultBytes       = 128 << 20
	DefaultListSlots   = 1 << 18
	DefaultOutputBytes = 32 << 20
)

// archiveCost is what an archive costs beside its unpacked bytes: its
// decompressor's state (flate's 32 KiB window and tables, gzip's and
// tar's buffers), held while it is read and again when Helm's loader
// unpacks it. Charging it bounds how deep archives may nest: without it a
// chain of tiny archives, each inside the one before, costs only its
// headers here and a decompressor per level in the loader.
const archiveCost = 64 << 10

// Limits are the bounds of one render. A field that is zero (or negative)
// is the default.
type Limits struct {
	// Files is how many files and folders a render may open or list,
	// archive entries included, each time it reaches one.
	Files int64
	// Bytes is how many bytes a render may read and unpack in all: files,
	// folder listings, archives by their unpacked size, values files,
	// set-file files and the parameters' own text.
	Bytes int64
	// ListSlots is how many list slots the parameters' keys may make: the
	// sum of n+1 over every [n] of every set, set-string, set-file and
	// with-set key.
	ListSlots int64
	// OutputBytes is how many bytes of manifests a render may print.
	OutputBytes int64
}

// WithDefaults is l with each zero (or negative) field set to its default.
func (l Limits) WithDefaults() Limits {
	or := func(v, def int64) int64 {
		if v <= 0 {
			return def
		}
		return v
	}
	return Limits{
		Files:       or(l.Files, DefaultFiles),
		Bytes:       or(l.Bytes, DefaultBytes),
		ListSlots:   or(l.ListSlots, DefaultListSlots),
		OutputBytes: or(l.OutputBytes, DefaultOutputBytes),
	}
}

// CheckOutput refuses n bytes of rendered manifests when they pass the
// OutputBytes bound (its default when zero).
func (l Limits) CheckOutput(n int) error {
	if limit := l.WithDefaults().OutputBytes; int64(n) > limit {
		return &ExceededError{Bound: OutputBytes, Limit: limit, What: "the output"}
	}
	return nil
}

// Bound names one of Limits' bounds.
type Bound int

// The bounds, one per field of Limits.
const (
	Files Bound = iota + 1
	Bytes
	ListSlots
	OutputBytes
)

// Flag is the name of the operator's flag that sets the bound (on
// helm-inject argocd generate).
func (b Bound) Flag() string {
	switch b {
	case Files:
		return "max-files"
	case Bytes:
		return "max-read-bytes"
	case ListSlots:
		return "max-list-slots"
	case OutputBytes:
		return "max-output-bytes"
	}
	return fmt.Sprintf("bound %d", int(b))
}

// ExceededError is a render that passed one of its bounds.
type ExceededError struct {
	Bound Bound
	Limit int64
	// What was being read: a repository path (with the archive entries it
	// was found in), or a parameter.
	What string
}

func (e *ExceededError) Error() string {
	var s string
	switch e.Bound {
	case Files:
		s = fmt.Sprintf("the render opened more than %d files and folders (each time it reaches one: through two links a file counts twice; archive entries count too", e.Limit)
	case Bytes:
		s = fmt.Sprintf("the render read more than %s (files, unpacked archives, values and parameters", sizeText(e.Limit))
	case ListSlots:
		s = fmt.Sprintf("the parameters' list indexes make more than %d list slots (n+1 for every [n] of a set, set-string, set-file or with-set key", e.Limit)
	case OutputBytes:
		s = fmt.Sprintf("the rendered manifests are more than %s (what Argo CD stores and sends on", sizeText(e.Limit))
	default:
		s = fmt.Sprintf("the render passed a bound of %d (", e.Limit)
	}
	s += "; the operator's --" + e.Bound.Flag() + ")"
	if e.What != "" {
		s = e.What + ": " + s
	}
	return s
}

// sizeText is n bytes as the operator would have written them.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Budget is what one render has left. It is safe for concurrent use.
type Budget struct {
	limits Limits
	files  atomic.Int64
	bytes  atomic.Int64
	slots  atomic.Int64
	// failed is the first charge that passed a bound: every charge after
	// it fails with it.
	failed atomic.Pointer[ExceededError]
}

// New is the budget of one render (zero fields of l are the defaults).
func New(l Limits) *Budget {
	return &Budget{limits: l.WithDefaults()}
}

// Limits are the bounds b charges against, defaults filled in.
func (b *Budget) Limits() Limits {
	if b == nil {
		return Limits{}
	}
	return b.limits
}

// Usage is what a render has used of each bound.
type Usage struct {
	Files, Bytes, ListSlots int64
}

// Used is what has been charged to b so far.
func (b *Budget) Used() Usage {
	if b == nil {
		return Usage{}
	}
	return Usage{Files: b.files.Load(), Bytes: b.bytes.Load(), ListSlots: b.slots.Load()}
}

// Err is the first charge that passed a bound, or nil: a step whose
// loader may have swallowed a read's error checks it when done.
func (b *Budget) Err() error {
	if b == nil {
		return nil
	}
	if e := b.failed.Load(); e != nil {
		return e
	}
	return nil
}

// OpenFile charges one file or folder opened or listed (what names it).
func (b *Budget) OpenFile(what string) error {
	if b == nil {
		return nil
	}
	return b.charge(&b.files, 1, Files, b.limits.Files, what)
}

// Read charges n bytes read or unpacked (what names where from).
func (b *Budget) Read(what string, n int64) error {
	if b == nil {
		return nil
	}
	return b.charge(&b.bytes, n, Bytes, b.limits.Bytes, what)
}

// ListSlots charges n list slots a parameter's key makes (what names it).
func (b *Budget) ListSlots(what string, n int64) error {
	if b == nil {
		return nil
	}
	return b.charge(&b.slots, n, ListSlots, b.limits.ListSlots, what)
}

// CheckOutput refuses n bytes of rendered manifests past b's bound.
func (b *Budget) CheckOutput(n int) error {
	if b == nil {
		return nil
	}
	return b.limits.CheckOutput(n)
}

// charge adds n to c unless that passes limit. The counter never passes
// the limit, so it cannot overflow however large n is (a tar header's
// size is the archive's to choose).
func (b *Budget) charge(c *atomic.Int64, n int64, bound Bound, limit int64, what string) error {
	if e := b.failed.Load(); e != nil {
		return e
	}
	if n <= 0 {
		return nil
	}
	for {
		used := c.Load()
		if n > limit-used {
			b.failed.CompareAndSwap(nil, &ExceededError{Bound: bound, Limit: limit, What: what})
			return b.failed.Load()
		}
		if c.CompareAndSwap(used, used+n) {
			return nil
		}
	}
}

// ReadAll reads r to its end, charging what it reads to b (what names
// it): size bytes (what a stat said r holds) before the first read, so
// that a file that would pass the bound is not read at all, and each
// byte past size as it is read, so that a file that grew stops at the
// bound.
func (b *Budget) ReadAll(what string, r io.Reader, size int64) ([]byte, error) {
	size = max(size, 0)
	if err := b.Read(what, size); err != nil {
		return nil, err
	}
	charged := size
	// One byte more than the size: a read that fills it means r holds
	// more than it said.
	buf := make([]byte, 0, size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		if past := int64(len(buf)+n) - charged; past > 0 {
			if err := b.Read(what, past); err != nil {
				return nil, err
			}
			charged += past
		}
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Unpack charges what Helm's loader will unpack of the gzipped tar
// archive r (what names it), as it streams through it, holding none of
// it: one file and its name and size in bytes for each entry the loader
// keeps (all but folders and extended headers), and the same again for
// every entry nested says is an archive the loader unpacks in turn (a
// chart's charts/*.tgz), however deep. An archive also costs its
// decompressor's state. What is not an archive, or is a broken one, is
// charged as far as it reads: the loader reports it.
func (b *Budget) Unpack(what string, r io.Reader, nested func(entry string) bool) error {
	if b == nil {
		return nil
	}
	if err := b.Read(what, archiveCost); err != nil {
		return err
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		hd, err := tr.Next()
		if err != nil {
			// The end, or what the loader stops at too (the same gzip
			// and tar readers): it unpacks nothing past it.
			return nil
		}
		if hd.FileInfo().IsDir() || hd.Typeflag == tar.TypeXGlobalHeader || hd.Typeflag == tar.TypeXHeader {
			continue
		}
		entry := hd.Name + " in " + what
		if err := b.OpenFile(entry); err != nil {
			return err
		}
		// The header's size, before a byte of the entry is unpacked: the
		// tar reader gives exactly that many (a sparse entry's holes
		// included), and the loader keeps them all.
		if err := b.Read(entry, int64(len(hd.Name))+max(hd.Size, 0)); err != nil {
			return err
		}
		if nested != nil && nested(hd.Name) {
			if err := b.Unpack(entry, tr, nested); err != nil {
				return err
			}
		}
		// Next skips what is left of the entry.
	}
}
