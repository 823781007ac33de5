package parallel

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

func TestForVisitsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 17, 100, 1001} {
		seen := make([]int32, n)
		if err := For(n, func(i int) error { atomic.AddInt32(&seen[i], 1); return nil }); err != nil {
			t.Fatal(err)
		}
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("n=%d: index %d visited %d times", n, i, c)
			}
		}
	}
}

// The error reported is the lowest failing index's, whatever the schedule.
func TestForReportsLowestFailingIndex(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, failing := range [][]int{{999}, {3, 700}, {500, 501, 998}, {0, 999}} {
		bad := map[int]bool{}
		for _, i := range failing {
			bad[i] = true
		}
		err := For(1000, func(i int) error {
			if bad[i] {
				return fmt.Errorf("index %d", i)
			}
			return nil
		})
		want := fmt.Sprintf("index %d", failing[0])
		if err == nil || err.Error() != want {
			t.Errorf("failing %v: err = %v, want %s", failing, err, want)
		}
	}
	if err := For(10, func(i int) error { return errors.New("serial") }); err == nil || err.Error() != "serial" {
		t.Errorf("small input: err = %v", err)
	}
}
