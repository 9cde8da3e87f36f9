package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// block is a task body that runs until its context ends or release closes.
func block(release <-chan struct{}, ended chan<- error) func(context.Context) Outcome {
	return func(ctx context.Context) Outcome {
		select {
		case <-release:
			return Outcome{Result: json.RawMessage(`{"content":[]}`)}
		case <-ctx.Done():
			ended <- ctx.Err()
			return Outcome{Err: ctx.Err()}
		}
	}
}

func TestRunnerLimits(t *testing.T) {
	r := NewRunner(Limits{PerOwner: 2, Total: 3})
	defer r.Close()
	release, ended := make(chan struct{}), make(chan error, 8)
	defer close(release)
	for i := 0; i < 2; i++ {
		if _, err := r.Start("a", nil, block(release, ended), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Start("a", nil, block(release, ended), nil); !errors.Is(err, ErrTooMany) {
		t.Errorf("a third task of one owner: %v", err)
	}
	if _, err := r.Start("b", nil, block(release, ended), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Start("c", nil, block(release, ended), nil); !errors.Is(err, ErrTooMany) {
		t.Errorf("a fourth task in all: %v", err)
	}
}

func TestRunnerTTL(t *testing.T) {
	r := NewRunner(Limits{MaxTTL: time.Minute, DefaultTTL: 10 * time.Second})
	ask := int64(3_600_000)
	if got := r.TTL(&ask); got != time.Minute {
		t.Errorf("an hour asked: %v, want the maximum", got)
	}
	if got := r.TTL(nil); got != 10*time.Second {
		t.Errorf("none asked: %v", got)
	}
	// A task past its time is cancelled and forgotten.
	now := time.Now()
	var mu sync.Mutex
	r.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	release, ended := make(chan struct{}), make(chan error, 1)
	defer close(release)
	tk, err := r.Start("a", nil, block(release, ended), nil)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(11 * time.Second)
	mu.Unlock()
	if _, err := r.Get("a", tk.TaskID); !errors.Is(err, ErrUnknownTask) {
		t.Errorf("an expired task: %v", err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the expired task's call: %v", err)
	}
}

func TestRunnerCancelAndResult(t *testing.T) {
	r := NewRunner(Limits{})
	defer r.Close()
	release, ended := make(chan struct{}), make(chan error, 1)
	notes := make(chan Task, 4)
	tk, err := r.Start("a", nil, block(release, ended), func(t Task) { notes <- t })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Cancel("b", tk.TaskID); !errors.Is(err, ErrUnknownTask) {
		t.Errorf("another owner cancelled: %v", err)
	}
	got, err := r.Cancel("a", tk.TaskID)
	if err != nil || got.Status != Cancelled {
		t.Fatalf("Cancel: %+v %v", got, err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the call's context: %v", err)
	}
	if n := <-notes; n.Status != Cancelled {
		t.Errorf("notified %+v", n)
	}
	if _, err := r.Cancel("a", tk.TaskID); !errors.Is(err, ErrTerminal) {
		t.Errorf("cancelling twice: %v", err)
	}
	if got, out, err := r.Result(context.Background(), "a", tk.TaskID); err != nil || got.Status != Cancelled || out.Err == nil {
		t.Errorf("Result of a cancelled task: %+v %+v %v", got, out, err)
	}

	tk2, _ := r.Start("a", nil, block(release, ended), nil)
	close(release)
	got, out, err := r.Result(context.Background(), "a", tk2.TaskID)
	if err != nil || got.Status != Completed || string(out.Result) != `{"content":[]}` {
		t.Errorf("Result: %+v %+v %v", got, out, err)
	}
	if l := r.List("a"); len(l) != 2 || r.List("b") != nil {
		t.Errorf("List: %+v", l)
	}
}

// TestRunnerAsking: a task is input_required while any question of its
// call is unanswered, working after, and a question of a call that is not
// the Runner's task changes nothing.
func TestRunnerAsking(t *testing.T) {
	r := NewRunner(Limits{})
	defer r.Close()
	var mu sync.Mutex
	var seen []string
	ctxs := make(chan context.Context, 1)
	release := make(chan struct{})
	task, err := r.Start("a", nil, func(ctx context.Context) Outcome {
		ctxs <- ctx
		<-release
		return Outcome{Result: json.RawMessage(`{"content":[]}`)}
	}, func(t Task) { mu.Lock(); seen = append(seen, t.Status); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	ctx := <-ctxs
	status := func() string { got, _ := r.Get("a", task.TaskID); return got.Status }
	one, two := r.Asking(ctx), r.Asking(ctx)
	if s := status(); s != InputRequired {
		t.Errorf("asking: %s", s)
	}
	one()
	one() // done twice counts once
	if s := status(); s != InputRequired {
		t.Errorf("one of two answered: %s", s)
	}
	two()
	if s := status(); s != Working {
		t.Errorf("both answered: %s", s)
	}
	NewRunner(Limits{}).Asking(ctx)() // another Runner's: nothing
	r.Asking(context.Background())()
	close(release)
	r.Result(context.Background(), "a", task.TaskID)
	mu.Lock()
	defer mu.Unlock()
	if got := fmt.Sprint(seen); got != "[input_required working completed]" {
		t.Errorf("notified %s", got)
	}
}
