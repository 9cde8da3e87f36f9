package extismhost

import "testing"

// budget is a Budget of limit bytes.
type budget struct {
	limit   uint64
	refused bool
}

func (b *budget) Limit() uint64 { return b.limit }
func (b *budget) Refuse()       { b.refused = true }

func TestKernelMemory(t *testing.T) {
	t.Parallel()
	lim := &budget{limit: 1 << 16}
	k := NewKernel(&Env{}, lim, nil)
	if k.alloc(0) != 0 {
		t.Fatal("alloc(0) is not 0")
	}
	a, b, c := k.alloc(3), k.alloc(16), k.alloc(5)
	if a == 0 || a%8 != 0 || b != a+8 || c != b+16 {
		t.Fatalf("offsets %d %d %d", a, b, c)
	}
	if k.length(a) != 3 || k.length(b) != 16 || k.length(b+1) != 0 || k.length(0) != 0 {
		t.Fatal("lengths")
	}
	k.freeBlock(b)
	if k.length(b) != 0 {
		t.Fatal("freed block has a length")
	}
	if d := k.alloc(9); d != b || k.length(d) != 9 {
		t.Fatalf("freed block not reused: %d", d)
	}
	k.freeBlock(c) // the top block: the arena shrinks
	if e := k.alloc(1); e != c {
		t.Fatalf("top not reused: %d", e)
	}
	copy(k.span(a, 3), "abc")
	if string(k.bytes(a)) != "abc" {
		t.Fatal("bytes")
	}
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("%s did not trap", name)
			}
		}()
		f()
	}
	mustPanic("read past the end", func() { k.span(uint64(len(k.mem))-4, 8) })
	mustPanic("huge offset", func() { k.span(^uint64(0)-2, 8) })
	mustPanic("alloc past the cap", func() { k.alloc(1 << 16) })
	if !lim.refused {
		t.Fatal("refused alloc not recorded")
	}
	mustPanic("alloc overflow", func() { k.alloc(^uint64(0) - 3) })
	k.reset()
	if len(k.blocks) != 0 || k.alloc(1) != kernelBase {
		t.Fatal("reset")
	}
	if err := k.setInput(make([]byte, 1<<17)); err == nil {
		t.Fatal("input over the cap accepted")
	}
}

// TestKernelFreedStaysReadable: as in Extism's kernel, a freed block's
// bytes stay readable until the block is reused or the call ends. go-pdk
// relies on it: Send frees the request block, which the response may
// reuse, before Body reads the response.
func TestKernelFreedStaysReadable(t *testing.T) {
	t.Parallel()
	k := NewKernel(&Env{}, &budget{limit: 1 << 16}, nil)
	req := k.write([]byte("request"))
	k.freeBlock(req) // the top block
	resp := k.write([]byte("response"))
	if resp != req {
		t.Fatalf("the top was not reused: %d, %d", req, resp)
	}
	k.freeBlock(resp)
	if got := string(k.span(resp, 8)); got != "response" {
		t.Fatalf("freed block reads %q", got)
	}
	if again := k.alloc(8); again != resp || string(k.span(again, 8)) != "\x00\x00\x00\x00\x00\x00\x00\x00" {
		t.Fatal("a reused block does not read as zeros")
	}
}
