// Package hugeheap backs the first 32 MiB of a helm-inject process's heap
// with transparent huge pages on Linux, before the packages of Helm and
// Kubernetes allocate in their initialisation.
//
// Why: a `helm-inject template` of a 500-workload chart touches about
// 17 MB of new heap, one 4 KiB page at a time, and on the virtual machines
// helm-inject is measured on each first touch is a page fault costing
// 8-16 µs: perf put 26% of the command's CPU in page faults, three
// quarters of them (4,300 of 5,700) on the heap. Where transparent huge
// pages are "madvise" (this project's CI machine and many distributions),
// only memory a program advises gets them, and the Go runtime no longer
// advises its heap (it stopped in Go 1.21.4: golang/go#61718, #63334).
// With the start of the heap advised, one fault maps 2 MiB: the run's
// faults fall from about 5,700 to about 2,000 and its CPU by a quarter
// (docs/performance.md). Where huge pages are "always", the advice
// changes nothing; where they are "never", the kernel ignores it.
//
// What it costs: a fault in advised memory may make the kernel compact
// memory to find a free 2 MiB page (defrag "madvise", the kernel's
// default), the stall that made the Go runtime stop advising the heaps of
// long-lived servers. Here the advised range is fixed and small: at most
// 16 such faults in a process's life, whatever its size or duration;
// memory the heap grows into later is left as the runtime maps it. The
// resident size of a template run grows by about 2 MB.
//
// How: the package's init allocates 32 MiB, which the runtime takes from
// fresh memory it maps for it and does not touch (fresh memory is known
// to be zero), marks the range MADV_HUGEPAGE and lets it go, and collects
// at once. The collection makes the release certain: the one the
// allocation itself starts may still see the slice referenced, and then
// the next collection's goal doubles from 32 MiB, so the heap grows past
// the advised range and the range sits unused (5 runs in 20 without it:
// 8,900 faults and 10 MB more resident). Collecting costs little this
// early, with almost nothing on the heap; afterwards the runtime's page
// allocator, which hands out the lowest free addresses first, gives the
// advised pages to what the program allocates next.
//
// The package imports only the runtime, syscall and unsafe, so Go's
// initialisation order (by import path, once a package's imports are
// initialised) runs its init right after package syscall's, 5 ms into the
// process, ahead of the packages whose initialisation allocates the first
// megabytes.
//
// GODEBUG=disablethp=1, Go's own switch that keeps huge pages off the
// heap, turns it off too. Elsewhere than on Linux the package does nothing.
package hugeheap
