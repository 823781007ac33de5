// Package hugeheap advises the 32 MiB the Go heap of a helm-inject process
// grows into first for transparent huge pages, on Linux where the kernel
// gives them only to memory that asks ("madvise" mode), before the
// packages of Helm and Kubernetes allocate in their initialisation.
//
// Why: a `helm-inject template` of a 500-workload chart touches about
// 17 MB of new heap, one 4 KiB page at a time, and on the virtual machines
// helm-inject is measured on each first touch is a page fault costing
// 8-16 µs: perf put 26% of the command's CPU in page faults, three
// quarters of them (4,300 of 5,700) on the heap. In "madvise" mode (this
// project's CI machine and several distributions' default) only memory a
// program advises gets huge pages, and the Go runtime no longer advises
// its heap (it stopped in Go 1.21.4: golang/go#61718, #63334). With the
// heap's start advised, one fault maps 2 MiB: a template's faults fall
// from about 5,700 to about 2,000 and its CPU by a fifth
// (docs/performance.md, item 8).
//
// When it does nothing: with GODEBUG=disablethp=1, Go's own switch that
// keeps huge pages off the heap; in "always" mode, where the heap gets
// huge pages anyway wherever one is free, and advising would only let a
// fault compact memory to find one; in "never" mode or on a kernel without
// transparent huge pages; where a huge page is larger than an eighth of
// the range (arm64 kernels of 16 or 64 KiB pages); and on other systems
// than Linux.
//
// What it costs: a fault in advised memory may make the kernel compact
// memory to find a free 2 MiB page (defrag's default, "madvise"), the
// stall that made the Go runtime stop advising the heaps of long-lived
// servers. Here the advised range is fixed and small: at most 16 huge
// pages at a time, whatever the process's size; memory the heap grows
// into later is left as the runtime maps it. (A huge page the runtime's
// scavenger returns to the kernel is faulted in again if the heap reuses
// its memory.) The resident size can grow by what is left unused in the
// huge pages touched, at most the 32 MiB; for a template run it grew by
// about 2 MB.
//
// How: the package's init allocates 32 MiB, which at that point the
// runtime takes from memory it has just mapped and, knowing it is zero,
// does not touch (were the allocation to begin in pages the heap had
// already used and freed, the runtime would zero all of it first, on
// 4 KiB pages, before the advice; no run here showed that); it marks the
// range MADV_HUGEPAGE, lets it go, and collects at once. The collection makes the release certain: the one
// the allocation itself starts may still see the slice referenced, and
// then the next collection's goal doubles from 32 MiB, so the heap grows
// past the advised range and the range sits unused (5 runs in 20 without
// it: 8,900 faults and 10 MB more resident). Collecting costs little this
// early, with almost nothing on the heap; afterwards the runtime's page
// allocator, which hands out the lowest free addresses first, gives the
// advised pages to what the program allocates next.
//
// The package imports only the runtime, syscall and unsafe, so Go's
// initialisation order (the first package, by import path, whose imports
// are initialised) runs its init right after package syscall's, about
// 5 ms into the process, ahead of the packages whose initialisation
// allocates the first megabytes.
package hugeheap
