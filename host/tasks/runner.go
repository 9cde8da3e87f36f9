package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcphost-project/mcphost/host/sessionless"
)

// Limits bound the tasks a Runner keeps.
type Limits struct {
	PerOwner     int           // tasks one caller may hold at once (running or kept); 0: 16
	Total        int           // tasks in all; 0: 1024
	MaxTTL       time.Duration // the longest time to live a client may ask; 0: one hour
	DefaultTTL   time.Duration // for a client that asks none; 0: 5 minutes (at most MaxTTL)
	PollInterval time.Duration // suggested to clients; 0: one second
	// Key signs task ids (IDs); empty: a random key per process, so that
	// ids mean nothing to another process.
	Key []byte
	// After is how long a protocol 2026-07-28 call runs before it becomes
	// a task (the client then polls it); 0: one second.
	After time.Duration
	// Store, when set, keeps the tasks for every replica (stored.go); set
	// by the assembly, not the config file.
	Store Store
}

func (l Limits) withDefaults() Limits {
	if l.PerOwner <= 0 {
		l.PerOwner = 16
	}
	if l.Total <= 0 {
		l.Total = 1024
	}
	if l.MaxTTL <= 0 {
		l.MaxTTL = time.Hour
	}
	if l.DefaultTTL <= 0 {
		l.DefaultTTL = 5 * time.Minute
	}
	l.DefaultTTL = min(l.DefaultTTL, l.MaxTTL)
	if l.PollInterval <= 0 {
		l.PollInterval = time.Second
	}
	if l.After <= 0 {
		l.After = time.Second
	}
	return l
}

// Outcome is how a task's call ended: its result as it goes to the
// client, or the JSON-RPC error it is answered with; Failed marks a result
// that reports the tool's failure (isError), which fails the task.
type Outcome struct {
	Result json.RawMessage
	Err    error
	Failed bool
	// Message, for a failed task, is its status message (StoppedMessage
	// for a call its replica cut short as it stopped).
	Message string
}

// Runner runs the tasks mcphost runs itself: each call on a goroutine of
// its own, with a context that ends when the task is cancelled, expires or
// the Runner closes; the outcome is kept until the task's time to live
// ends. It is safe for concurrent use.
type Runner struct {
	lim Limits
	now func() time.Time

	mu     sync.Mutex
	tasks  map[string]*local
	closed bool

	store Store         // nil: the tasks live here only
	name  string        // this Runner's name in the store
	stop  chan struct{} // closed by Close: ends the store loop
}

type local struct {
	owner   string
	task    Task
	expires time.Time
	cancel  context.CancelFunc
	done    chan struct{} // closed when out is set
	out     Outcome
	notify  func(Task)
	held    any                // for a task its server runs (Hold): what reaches it; nil otherwise
	asking  int                // the questions its call has put to the client, unanswered (Asking)
	round   *sessionless.Round // a task of the extension's: its questions (input.go)
}

// NewRunner returns a Runner bounded by l (zero fields get defaults).
func NewRunner(l Limits) *Runner {
	r := &Runner{lim: l.withDefaults(), now: time.Now, tasks: map[string]*local{}, store: l.Store, stop: make(chan struct{})}
	if r.store != nil {
		r.name = newLocalID()
		go r.storeLoop()
	}
	return r
}

// ErrTooMany says a caller, or the gateway, holds as many tasks as it may.
var ErrTooMany = errors.New("tasks: too many tasks")

// ErrTerminal says a task cannot be cancelled: it already ended.
var ErrTerminal = errors.New("tasks: the task already ended")

// ErrClosed says the Runner is closed.
var ErrClosed = errors.New("tasks: shutting down")

// TTL returns the time to live a task gets when its client asks ttlMS
// (nil: none asked): the default, or what was asked within the maximum.
func (r *Runner) TTL(ttlMS *int64) time.Duration {
	if ttlMS == nil {
		return r.lim.DefaultTTL
	}
	return min(time.Duration(*ttlMS)*time.Millisecond, r.lim.MaxTTL)
}

// Start runs fn as a task of owner and returns the task, working. notify,
// if set, hears of each change of its status (not of the first).
func (r *Runner) Start(owner string, ttlMS *int64, fn func(context.Context) Outcome, notify func(Task)) (Task, error) {
	ttl := r.TTL(ttlMS)
	now := r.now()
	ctx, cancel := context.WithCancel(context.Background())
	l := &local{owner: owner, expires: now.Add(ttl), cancel: cancel, done: make(chan struct{}), notify: notify}
	ctx = context.WithValue(ctx, askingKey{}, asker{r, l})
	ms, poll := ttl.Milliseconds(), r.lim.PollInterval.Milliseconds()
	l.task = Task{TaskID: newLocalID(), Status: Working, CreatedAt: Stamp(now), LastUpdatedAt: Stamp(now), TTL: &ms, PollInterval: &poll}

	r.mu.Lock()
	if err := r.roomLocked(owner); err != nil {
		r.mu.Unlock()
		cancel()
		return Task{}, err
	}
	r.tasks[l.task.TaskID] = l
	t := l.task
	r.mu.Unlock()
	if err := r.put(owner, l); err != nil {
		r.mu.Lock()
		delete(r.tasks, t.TaskID)
		r.mu.Unlock()
		cancel()
		return Task{}, err
	}

	go func() {
		out := fn(ctx)
		r.finish(l, out)
	}()
	return t, nil
}

// Room reports whether owner may start a task now (ErrTooMany, ErrClosed).
func (r *Runner) Room(owner string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.roomLocked(owner)
}

func (r *Runner) roomLocked(owner string) error {
	r.sweepLocked(r.now())
	switch {
	case r.closed:
		return ErrClosed
	case len(r.tasks) >= r.lim.Total:
		return fmt.Errorf("%w: the gateway holds %d, its limit", ErrTooMany, r.lim.Total)
	case r.countLocked(owner) >= r.lim.PerOwner:
		return fmt.Errorf("%w: this caller holds %d, its limit; fetch or cancel one first", ErrTooMany, r.lim.PerOwner)
	}
	return nil
}

// Hold keeps a task that a server runs as a task of owner, for its time
// to live, within the same limits: held(id), given the Runner's id of its
// record, is what reaches it (Held).
func (r *Runner) Hold(owner string, ttlMS *int64, held func(id string) any) (Task, error) {
	now := r.now()
	ms := r.TTL(ttlMS).Milliseconds()
	l := &local{owner: owner, expires: now.Add(r.TTL(ttlMS)), cancel: func() {}, done: make(chan struct{})}
	l.task = Task{TaskID: newLocalID(), Status: Working, CreatedAt: Stamp(now), LastUpdatedAt: Stamp(now), TTL: &ms}
	l.held = held(l.task.TaskID)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.roomLocked(owner); err != nil {
		return Task{}, err
	}
	r.tasks[l.task.TaskID] = l
	return l.task, nil
}

// Held returns what reaches owner's held task id.
func (r *Runner) Held(owner, id string) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, err := r.lookupLocked(owner, id)
	if err != nil || l.held == nil {
		return nil, ErrUnknownTask
	}
	return l.held, nil
}

type askingKey struct{}

type asker struct {
	r *Runner
	l *local
}

// Asking tells the task whose call ctx is (one r runs; for any other ctx
// it does nothing) that its call put a question to the client
// (elicitation, sampling): the task is input_required until every such
// question is answered (done), and working again after. Its session
// hears of each change (notify). The status is this process's: a task
// record in the store stays working.
func (r *Runner) Asking(ctx context.Context) (done func()) {
	a, ok := ctx.Value(askingKey{}).(asker)
	if !ok || a.r != r {
		return func() {}
	}
	a.r.ask(a.l, 1)
	var once sync.Once
	return func() { once.Do(func() { a.r.ask(a.l, -1) }) }
}

// ask counts a question put (+1) or answered (-1) and moves the task
// between working and input_required accordingly.
func (r *Runner) ask(l *local, delta int) {
	r.mu.Lock()
	l.asking += delta
	status := Working
	if l.asking > 0 {
		status = InputRequired
	}
	if Terminal(l.task.Status) || l.task.Status == status {
		r.mu.Unlock()
		return
	}
	l.task.Status, l.task.LastUpdatedAt = status, Stamp(r.now())
	t := l.task
	r.mu.Unlock()
	if l.notify != nil {
		l.notify(t)
	}
}

// heldWhere returns what reaches the held tasks that match accepts.
func (r *Runner) heldWhere(match func(held any) bool) []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(r.now())
	var out []any
	for _, l := range r.tasks {
		if l.held != nil && match(l.held) {
			out = append(out, l.held)
		}
	}
	return out
}

// finish records a call's outcome, unless the task was cancelled first.
func (r *Runner) finish(l *local, out Outcome) {
	r.mu.Lock()
	if Terminal(l.task.Status) {
		r.mu.Unlock()
		return
	}
	l.out = out
	l.task.Status = Completed
	switch {
	case out.Err != nil:
		l.task.Status, l.task.StatusMessage = Failed, out.Err.Error()
	case out.Failed:
		l.task.Status, l.task.StatusMessage = Failed, out.Message
	}
	l.task.LastUpdatedAt = Stamp(r.now())
	t := l.task
	close(l.done)
	l.cancel()
	r.mu.Unlock()
	r.end(t, out)
	if l.notify != nil {
		l.notify(t)
	}
}

func (r *Runner) countLocked(owner string) int {
	n := 0
	for _, l := range r.tasks {
		if l.owner == owner {
			n++
		}
	}
	return n
}

// sweepLocked forgets the tasks whose time to live ended, cancelling any
// still running.
func (r *Runner) sweepLocked(now time.Time) {
	for id, l := range r.tasks {
		if now.After(l.expires) {
			l.cancel()
			delete(r.tasks, id)
		}
	}
}

// lookup returns owner's task id; another owner's is ErrUnknownTask.
func (r *Runner) lookupLocked(owner, id string) (*local, error) {
	r.sweepLocked(r.now())
	l := r.tasks[id]
	if l == nil || l.owner != owner {
		return nil, ErrUnknownTask
	}
	return l, nil
}

// setRound records the Round of owner's task id's call (input.go).
func (r *Runner) setRound(owner, id string, rc *sessionless.Round) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, err := r.lookupLocked(owner, id); err == nil {
		l.round = rc
	}
}

// round returns the Round of owner's task id's call, nil for none, and
// whether this Runner runs the task (false: another replica does).
func (r *Runner) round(owner, id string) (*sessionless.Round, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, err := r.lookupLocked(owner, id)
	if err != nil {
		return nil, false
	}
	return l.round, true
}

// Get returns owner's task id.
func (r *Runner) Get(owner, id string) (Task, error) {
	t, _, _, err := r.Peek(owner, id)
	return t, err
}

// Result waits until owner's task id ends (or ctx does) and returns its
// outcome; a cancelled task's is an error saying so.
func (r *Runner) Result(ctx context.Context, owner, id string) (Task, Outcome, error) {
	r.mu.Lock()
	l, err := r.lookupLocked(owner, id)
	r.mu.Unlock()
	if errors.Is(err, ErrUnknownTask) && r.store != nil {
		return r.storedResult(ctx, owner, id)
	}
	if err != nil || l.held != nil {
		return Task{}, Outcome{}, ErrUnknownTask
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return Task{}, Outcome{}, ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return l.task, l.out, nil
}

// Peek returns owner's task id and, once it ended, its outcome.
func (r *Runner) Peek(owner, id string) (Task, Outcome, bool, error) {
	r.mu.Lock()
	l, err := r.lookupLocked(owner, id)
	if err == nil && l.held == nil {
		defer r.mu.Unlock()
		select {
		case <-l.done:
			return l.task, l.out, true, nil
		default:
			return l.task, Outcome{}, false, nil
		}
	}
	r.mu.Unlock()
	if err != nil && r.store != nil {
		return r.stored(owner, id) // another process's, or one from before a restart
	}
	return Task{}, Outcome{}, false, ErrUnknownTask
}

// Forget drops owner's task id (one whose outcome was delivered as it
// ended, before it became the client's task).
func (r *Runner) Forget(owner, id string) {
	r.mu.Lock()
	l := r.tasks[id]
	if l == nil || l.owner != owner {
		r.mu.Unlock()
		return
	}
	l.cancel()
	delete(r.tasks, id)
	r.mu.Unlock()
	if r.store != nil && l.held == nil {
		ctx, cancel := storeCtx()
		defer cancel()
		_ = r.store.DeleteTask(ctx, owner, id)
	}
}

// List returns owner's tasks, oldest first (held tasks as they were held:
// their server knows their state).
func (r *Runner) List(owner string) []Task {
	r.mu.Lock()
	r.sweepLocked(r.now())
	var out []Task
	for _, l := range r.tasks {
		if l.owner == owner {
			out = append(out, l.task)
		}
	}
	r.mu.Unlock()
	if r.store != nil {
		out = r.withStored(owner, out)
	}
	slices.SortFunc(out, func(a, b Task) int {
		if a.CreatedAt != b.CreatedAt {
			return compareStamps(a.CreatedAt, b.CreatedAt)
		}
		return compareStamps(a.TaskID, b.TaskID)
	})
	return out
}

func compareStamps(a, b string) int {
	ta, ea := time.Parse(time.RFC3339Nano, a)
	tb, eb := time.Parse(time.RFC3339Nano, b)
	if ea == nil && eb == nil {
		return ta.Compare(tb)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Cancel cancels owner's task id: its call's context ends (which cancels
// the upstream call) and it is cancelled at once.
func (r *Runner) Cancel(owner, id string) (Task, error) {
	r.mu.Lock()
	l, err := r.lookupLocked(owner, id)
	if errors.Is(err, ErrUnknownTask) && r.store != nil {
		r.mu.Unlock()
		return r.storedCancel(owner, id)
	}
	if err != nil || l.held != nil {
		r.mu.Unlock()
		return Task{}, ErrUnknownTask
	}
	if Terminal(l.task.Status) {
		r.mu.Unlock()
		return Task{}, fmt.Errorf("%w (%s)", ErrTerminal, l.task.Status)
	}
	t := r.cancelLocked(l, Cancelled, cancelledMessage, errCancelled)
	r.mu.Unlock()
	r.end(t, l.out)
	if l.notify != nil {
		l.notify(t)
	}
	return t, nil
}

// cancelledMessage is a cancelled task's status message.
const cancelledMessage = "cancelled by the client"

// errCancelled is a cancelled task's outcome.
var errCancelled = errors.New("the task was cancelled")

// cancelLocked ends l's call, which has not ended, with status.
func (r *Runner) cancelLocked(l *local, status, msg string, err error) Task {
	l.task.Status, l.task.StatusMessage = status, msg
	l.task.LastUpdatedAt = Stamp(r.now())
	l.out = Outcome{Err: err}
	l.cancel()
	close(l.done)
	return l.task
}

// Close cancels every task and refuses new ones; with a store, the
// tasks whose calls it ends are failed there (StoppedMessage).
func (r *Runner) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	close(r.stop)
	var stopped []Task
	for _, l := range r.tasks {
		if l.held == nil && !Terminal(l.task.Status) {
			stopped = append(stopped, r.cancelLocked(l, Failed, StoppedMessage, errors.New("tasks: "+StoppedMessage)))
		}
		l.cancel()
	}
	r.mu.Unlock()
	for _, t := range stopped {
		r.end(t, Outcome{Err: errors.New("tasks: " + StoppedMessage)})
	}
}

func newLocalID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("tasks: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// OutcomeOf is the outcome of a call answered with result or rerr; a
// result with isError set fails the task.
func OutcomeOf(result json.RawMessage, rerr *jsonrpc.Error) Outcome {
	if rerr != nil {
		return Outcome{Err: rerr}
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(result, &r)
	return Outcome{Result: result, Failed: r.IsError}
}

// FailedWith is the outcome of a call the upstream answered with a JSON-RPC
// error of code, which out is the error result of, as the result policies
// left it: the task fails with that code and the result's text as the
// message (both specifications: an error of the underlying request fails
// the task, where a tool's own failure, isError, completes it).
func FailedWith(code int64, out Outcome) Outcome {
	if out.Err != nil {
		return out
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(out.Result, &r)
	var msg []string
	for _, c := range r.Content {
		if c.Type == "text" {
			msg = append(msg, c.Text)
		}
	}
	if len(msg) == 0 {
		msg = append(msg, "the server answered the call with an error")
	}
	if code == 0 { // as the go-sdk's server answers a handler's plain error: no code of JSON-RPC's
		code = jsonrpc.CodeInternalError
	}
	return Outcome{Err: &jsonrpc.Error{Code: code, Message: strings.Join(msg, "\n")}, Message: out.Message}
}
