package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/host/tasks"
)

// waitTask polls r until owner's task id has status, or fails the test.
func waitTask(t *testing.T, r *tasks.Runner, owner, id, status string) tasks.Task {
	t.Helper()
	deadline := time.Now().Add(3 * tasks.Lease)
	for {
		got, err := r.Get(owner, id)
		if err == nil && got.Status == status {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: want %s, have %+v (%v)", id, status, got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTasksAcrossReplicas: two Runners on two handles of one store (as two
// replicas are) see each other's tasks, and only their owners' ones; a
// cancel on one ends the call on the other; a runner that stops fails its
// calls in flight; a result outlives the runner that made it, sealed.
func TestTasksAcrossReplicas(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, testKey) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := tasks.NewRunner(tasks.Limits{Store: open(t, o)})
			b := tasks.NewRunner(tasks.Limits{Store: open(t, o)})
			t.Cleanup(a.Close)
			t.Cleanup(b.Close)
			const alice, bob = "id:alice", "id:bob"

			// A runs it; B reads it, waits on it, lists it.
			release := make(chan struct{})
			started, err := a.Start(alice, nil, func(context.Context) tasks.Outcome {
				<-release
				return tasks.Outcome{Result: json.RawMessage(`{"content":[{"type":"text","text":"the answer is 42"}]}`)}
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := b.Get(alice, started.TaskID); err != nil || got.Status != tasks.Working || got.CreatedAt != started.CreatedAt {
				t.Fatalf("B's tasks/get while A runs it: %+v %v", got, err)
			}
			if _, err := b.Get(bob, started.TaskID); !errors.Is(err, tasks.ErrUnknownTask) {
				t.Fatalf("another owner reached the task: %v", err)
			}
			if l := b.List(bob); len(l) != 0 {
				t.Fatalf("another owner lists %+v", l)
			}
			results := make(chan tasks.Outcome, 1)
			go func() {
				_, out, err := b.Result(context.Background(), alice, started.TaskID)
				if err != nil {
					out.Err = err
				}
				results <- out
			}()
			close(release)
			select {
			case out := <-results:
				if out.Err != nil || !strings.Contains(string(out.Result), "the answer is 42") {
					t.Fatalf("B's tasks/result: %+v", out)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("B's tasks/result never came")
			}
			if l := b.List(alice); len(l) != 1 || l[0].TaskID != started.TaskID || l[0].Status != tasks.Completed {
				t.Fatalf("B's tasks/list: %+v", l)
			}

			// At rest the outcome is sealed.
			var sealed string
			if err := rawDB(t, o).QueryRow(`SELECT outcome FROM mcphost_tasks WHERE id = '` + started.TaskID + `'`).Scan(&sealed); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(sealed, "the answer is") || !strings.HasPrefix(sealed, "v1:") {
				t.Fatalf("a task's outcome at rest: %q", sealed)
			}

			// Moved to bob's row, it does not open there.
			bobs, err := a.Start(bob, nil, func(context.Context) tasks.Outcome {
				return tasks.Outcome{Result: json.RawMessage(`{"content":[]}`)}
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			waitTask(t, b, bob, bobs.TaskID, tasks.Completed)
			if _, err := rawDB(t, o).Exec(`UPDATE mcphost_tasks SET outcome = '` + sealed + `' WHERE id = '` + bobs.TaskID + `'`); err != nil {
				t.Fatal(err)
			}
			if _, out, err := b.Result(context.Background(), bob, bobs.TaskID); err == nil || strings.Contains(string(out.Result), "42") {
				t.Fatalf("alice's sealed outcome opened in bob's task: %s %v", out.Result, err)
			}

			// A third runner (a restart) still has the result.
			c := tasks.NewRunner(tasks.Limits{Store: open(t, o)})
			t.Cleanup(c.Close)
			if _, out, err := c.Result(context.Background(), alice, started.TaskID); err != nil || !strings.Contains(string(out.Result), "the answer is 42") {
				t.Fatalf("a new runner's tasks/result: %s %v", out.Result, err)
			}

			// B cancels what A runs: A's call ends.
			ended := make(chan struct{})
			long, err := a.Start(alice, nil, func(ctx context.Context) tasks.Outcome {
				<-ctx.Done()
				close(ended)
				return tasks.Outcome{Err: ctx.Err()}
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Cancel(bob, long.TaskID); !errors.Is(err, tasks.ErrUnknownTask) {
				t.Fatalf("another owner cancelled: %v", err)
			}
			if got, err := b.Cancel(alice, long.TaskID); err != nil || got.Status != tasks.Cancelled {
				t.Fatalf("B's tasks/cancel: %+v %v", got, err)
			}
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
				t.Fatal("the cancel on B never reached A's call")
			}
			waitTask(t, a, alice, long.TaskID, tasks.Cancelled)
			if _, err := b.Cancel(alice, long.TaskID); !errors.Is(err, tasks.ErrTerminal) {
				t.Fatalf("cancelling a cancelled task: %v", err)
			}

			// A stops with a call in flight: the task fails, saying why.
			inflight, err := a.Start(alice, nil, func(ctx context.Context) tasks.Outcome {
				<-ctx.Done()
				return tasks.Outcome{Err: ctx.Err()}
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			a.Close()
			got := waitTask(t, b, alice, inflight.TaskID, tasks.Failed)
			if got.StatusMessage != tasks.StoppedMessage {
				t.Fatalf("a stopped replica's task: %+v", got)
			}
		})
	}
}

// TestTaskLeaseRunsOut: a replica that dies (here: its store goes away,
// so it can renew nothing) leaves its calls in flight to the first
// replica that reads them after the lease, which fails them.
func TestTaskLeaseRunsOut(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dying, err := store.Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			a := tasks.NewRunner(tasks.Limits{Store: dying})
			t.Cleanup(a.Close)
			b := tasks.NewRunner(tasks.Limits{Store: open(t, o)})
			t.Cleanup(b.Close)
			inflight, err := a.Start("id:alice", nil, func(ctx context.Context) tasks.Outcome {
				<-ctx.Done()
				return tasks.Outcome{Err: ctx.Err()}
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(tasks.Lease / 2) // renewed meanwhile
			if got, err := b.Get("id:alice", inflight.TaskID); err != nil || got.Status != tasks.Working {
				t.Fatalf("a task whose replica lives: %+v %v", got, err)
			}
			dying.Close()
			got := waitTask(t, b, "id:alice", inflight.TaskID, tasks.Failed)
			if got.StatusMessage != tasks.StoppedMessage {
				t.Fatalf("a dead replica's task: %+v", got)
			}
			_, out, err := b.Result(context.Background(), "id:alice", inflight.TaskID)
			if err != nil || out.Err == nil || !strings.Contains(out.Err.Error(), tasks.StoppedMessage) {
				t.Fatalf("a dead replica's task's result: %+v %v", out, err)
			}
		})
	}
}
