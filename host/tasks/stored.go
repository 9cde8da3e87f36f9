package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// With a Store (Limits.Store: the replicas' database, host/store), the
// tasks mcphost runs itself are written where every replica reads them:
// any replica answers tasks/get, tasks/result and tasks/list for them, a
// caller who reconnects (a new session, the same identity) finds them, and
// a finished task's outcome outlives the process that ran it. The call
// itself still runs in the process that started it (its upstream
// connection is there):
//
//   - tasks/cancel on another replica marks the task cancelled in the
//     store; the running replica reads its cancelled tasks every
//     CancelPoll and ends their calls.
//   - The running replica renews a lease on its unfinished tasks every
//     Lease/4. A replica that stops cleanly fails them at once; one that
//     dies leaves its lease to run out, and the first replica that reads
//     such a task (tasks/get, tasks/result, tasks/list) fails it, with
//     StoppedMessage. A call in flight is not resumed: the upstream
//     connection it ran on is gone.
//
// Tasks whose server runs them (held tasks) stay in the process that
// holds the caller's upstream session, and are not written.

// StoppedMessage is the status message of a task whose replica stopped
// while its call ran.
const StoppedMessage = "the replica running it stopped"

// Lease is how long a replica vouches for its unfinished tasks at a time.
const Lease = 5 * time.Second

// CancelPoll is how often a replica running tasks reads the store for
// the ones cancelled elsewhere.
const CancelPoll = 250 * time.Millisecond

// Record is a task as the store keeps it.
type Record struct {
	Owner   string
	Task    Task      // its TaskID is the Runner's id
	Expires time.Time // when the task and its outcome are forgotten
	Runner  string    // the process running it
	Lease   time.Time // until when Runner vouches for it, while it works
	// Outcome is how it ended (EncodeOutcome), once it has; nil before.
	Outcome []byte
}

// Store keeps the records of tasks for every replica (host/store). A
// record of another owner is ErrUnknownTask, as is one expired.
type Store interface {
	// PutTask writes a new task.
	PutTask(ctx context.Context, r Record) error
	// EndTask ends task id with t's status, message and time and the
	// outcome, unless it already ended (false).
	EndTask(ctx context.Context, id string, t Task, outcome []byte) (bool, error)
	// Task returns owner's task id.
	Task(ctx context.Context, owner, id string, now time.Time) (Record, error)
	// Tasks returns owner's tasks.
	Tasks(ctx context.Context, owner string, now time.Time) ([]Record, error)
	// EndedTasks returns those of ids, tasks runner runs, that ended in
	// the store (cancelled on another replica).
	EndedTasks(ctx context.Context, runner string, ids []string) ([]string, error)
	// RenewTasks extends the lease of runner's unfinished tasks.
	RenewTasks(ctx context.Context, runner string, until time.Time) error
	// DeleteTask forgets owner's task id.
	DeleteTask(ctx context.Context, owner, id string) error
	// PruneTasks forgets the tasks expired before now.
	PruneTasks(ctx context.Context, now time.Time) error
}

// outcomeDoc is an Outcome as the store keeps it.
type outcomeDoc struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
	Failed  bool   `json:"failed,omitempty"`
	Message string `json:"message,omitempty"`
}

// EncodeOutcome encodes out for the store: a JSON-RPC error keeps its code,
// any other error is an internal error with its message.
func EncodeOutcome(out Outcome) []byte {
	d := outcomeDoc{Result: out.Result, Failed: out.Failed, Message: out.Message}
	if out.Err != nil {
		e := errorOf(out.Err)
		d.Error = &struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}{e.Code, e.Message}
		d.Result = nil
	}
	b, _ := json.Marshal(d)
	return b
}

// DecodeOutcome reads what EncodeOutcome wrote.
func DecodeOutcome(b []byte) (Outcome, error) {
	var d outcomeDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return Outcome{}, fmt.Errorf("tasks: a stored outcome: %w", err)
	}
	if d.Error != nil {
		return Outcome{Err: &jsonrpc.Error{Code: d.Error.Code, Message: d.Error.Message}}, nil
	}
	if len(d.Result) == 0 || d.Result[0] != '{' {
		return Outcome{}, errors.New("tasks: a stored outcome has neither a result object nor an error")
	}
	return Outcome{Result: d.Result, Failed: d.Failed, Message: d.Message}, nil
}

// storeTimeout bounds one store request the Runner makes.
const storeTimeout = 10 * time.Second

func storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeTimeout)
}

// put writes l, a task just started, to the store.
func (r *Runner) put(owner string, l *local) error {
	if r.store == nil {
		return nil
	}
	ctx, cancel := storeCtx()
	defer cancel()
	if err := r.store.PutTask(ctx, Record{Owner: owner, Task: l.task, Expires: l.expires, Runner: r.name, Lease: r.now().Add(Lease)}); err != nil {
		return fmt.Errorf("tasks: recording the task: %w", err)
	}
	return nil
}

// end writes how t, a task this Runner ran, ended; if it had already
// ended in the store (cancelled on another replica), the task here takes
// the store's end.
func (r *Runner) end(t Task, out Outcome) {
	if r.store == nil {
		return
	}
	ctx, cancel := storeCtx()
	defer cancel()
	ok, err := r.store.EndTask(ctx, t.TaskID, t, EncodeOutcome(out))
	if err != nil || ok {
		return
	}
	r.mu.Lock()
	l := r.tasks[t.TaskID]
	r.mu.Unlock()
	if l == nil {
		return
	}
	rec, err := r.store.Task(ctx, l.owner, t.TaskID, r.now())
	if err != nil || !Terminal(rec.Task.Status) {
		return
	}
	stored, _ := r.outcomeOf(rec)
	r.mu.Lock()
	l.task, l.out = rec.Task, stored
	r.mu.Unlock()
}

// outcomeOf is the outcome of rec, a record of an ended task.
func (r *Runner) outcomeOf(rec Record) (Outcome, error) {
	if rec.Task.Status == Cancelled {
		return Outcome{Err: errCancelled}, nil
	}
	return DecodeOutcome(rec.Outcome)
}

// stored returns owner's task id as the store has it, and its outcome
// once it ended. A task whose runner's lease ran out is failed first.
func (r *Runner) stored(owner, id string) (Task, Outcome, bool, error) {
	ctx, cancel := storeCtx()
	defer cancel()
	now := r.now()
	rec, err := r.store.Task(ctx, owner, id, now)
	if err != nil {
		return Task{}, Outcome{}, false, err
	}
	if !Terminal(rec.Task.Status) && now.After(rec.Lease) {
		t := rec.Task
		t.Status, t.StatusMessage, t.LastUpdatedAt = Failed, StoppedMessage, Stamp(now)
		if _, err := r.store.EndTask(ctx, id, t, EncodeOutcome(Outcome{Err: errors.New("tasks: " + StoppedMessage)})); err != nil {
			return Task{}, Outcome{}, false, err
		}
		if rec, err = r.store.Task(ctx, owner, id, now); err != nil {
			return Task{}, Outcome{}, false, err
		}
	}
	if !Terminal(rec.Task.Status) {
		return rec.Task, Outcome{}, false, nil
	}
	out, err := r.outcomeOf(rec)
	if err != nil {
		return Task{}, Outcome{}, false, err
	}
	return rec.Task, out, true, nil
}

// storedResult waits, reading the store every CancelPoll, until owner's
// task id, which another process runs, ends (or ctx does).
func (r *Runner) storedResult(ctx context.Context, owner, id string) (Task, Outcome, error) {
	tick := time.NewTicker(CancelPoll)
	defer tick.Stop()
	for {
		t, out, ended, err := r.stored(owner, id)
		if err != nil || ended {
			return t, out, err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return Task{}, Outcome{}, ctx.Err()
		}
	}
}

// storedCancel cancels owner's task id, which another process runs (or
// ran): the store says so at once, and that process ends its call when it
// next reads the store.
func (r *Runner) storedCancel(owner, id string) (Task, error) {
	t, _, ended, err := r.stored(owner, id)
	if err != nil {
		return Task{}, err
	}
	if ended {
		return Task{}, fmt.Errorf("%w (%s)", ErrTerminal, t.Status)
	}
	t.Status, t.StatusMessage, t.LastUpdatedAt = Cancelled, cancelledMessage, Stamp(r.now())
	ctx, cancel := storeCtx()
	defer cancel()
	ok, err := r.store.EndTask(ctx, id, t, EncodeOutcome(Outcome{Err: errCancelled}))
	if err != nil {
		return Task{}, err
	}
	if !ok {
		return Task{}, ErrTerminal
	}
	return t, nil
}

// withStored adds to owner's tasks here (list) those the store has of
// other processes; a task here is as this process knows it.
func (r *Runner) withStored(owner string, list []Task) []Task {
	ctx, cancel := storeCtx()
	defer cancel()
	recs, err := r.store.Tasks(ctx, owner, r.now())
	if err != nil {
		return list
	}
	here := map[string]bool{}
	for _, t := range list {
		here[t.TaskID] = true
	}
	for _, rec := range recs {
		if here[rec.Task.TaskID] {
			continue
		}
		if t, _, _, err := r.stored(owner, rec.Task.TaskID); err == nil {
			list = append(list, t)
		}
	}
	return list
}

// storeLoop keeps this Runner's tasks in the store while it runs them:
// it renews their lease, ends the calls of those ended elsewhere, and
// forgets expired tasks, until Close.
func (r *Runner) storeLoop() {
	tick := time.NewTicker(CancelPoll)
	defer tick.Stop()
	var renewed, pruned time.Time
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		running := r.running()
		now := r.now()
		ctx, cancel := storeCtx()
		if len(running) > 0 {
			if now.Sub(renewed) >= Lease/4 {
				if err := r.store.RenewTasks(ctx, r.name, now.Add(Lease)); err == nil {
					renewed = now
				}
			}
			if ended, err := r.store.EndedTasks(ctx, r.name, running); err == nil {
				r.endedElsewhere(ctx, ended)
			}
		}
		if now.Sub(pruned) >= time.Minute {
			if err := r.store.PruneTasks(ctx, now); err == nil {
				pruned = now
			}
		}
		cancel()
	}
}

// running returns the ids of the calls this Runner runs.
func (r *Runner) running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id, l := range r.tasks {
		if l.held == nil && !Terminal(l.task.Status) {
			ids = append(ids, id)
		}
	}
	return ids
}

// endedElsewhere ends the calls of ids, tasks the store says ended (a
// cancel on another replica), as the store has them.
func (r *Runner) endedElsewhere(ctx context.Context, ids []string) {
	for _, id := range ids {
		r.mu.Lock()
		l := r.tasks[id]
		if l == nil || Terminal(l.task.Status) {
			r.mu.Unlock()
			continue
		}
		owner := l.owner
		r.mu.Unlock()
		rec, err := r.store.Task(ctx, owner, id, r.now())
		if err != nil || !Terminal(rec.Task.Status) {
			continue
		}
		out, _ := r.outcomeOf(rec)
		r.mu.Lock()
		if Terminal(l.task.Status) {
			r.mu.Unlock()
			continue
		}
		t := r.cancelLocked(l, rec.Task.Status, rec.Task.StatusMessage, out.Err)
		l.task, l.out = rec.Task, out
		r.mu.Unlock()
		if l.notify != nil {
			l.notify(t)
		}
	}
}
