package startpages

import (
	"encoding/binary"
	"os"
	"reflect"
	"strconv"
	"testing"
)

// presentPages counts the pages of ms that are mapped (the "present" bit
// of /proc/self/pagemap), reading through pagemap opened beforehand into
// buf, so that the count itself maps few pages back.
func presentPages(t *testing.T, pagemap *os.File, ms []mapping, buf []byte) int {
	t.Helper()
	n := 0
	for _, m := range ms {
		for p := m.start / 4096; p < m.end/4096; p += uintptr(len(buf) / 8) {
			want := min(uintptr(len(buf)/8), m.end/4096-p)
			if _, err := pagemap.ReadAt(buf[:want*8], int64(p*8)); err != nil {
				t.Fatal(err)
			}
			for i := uintptr(0); i < want; i++ {
				if binary.LittleEndian.Uint64(buf[i*8:])>>63 == 1 {
					n++
				}
			}
		}
	}
	return n
}

func TestReleaseUnmapsTheBinarysPages(t *testing.T) {
	t.Setenv(Env, "")
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := parseSmaps(data)
	if err != nil {
		t.Fatal(err)
	}
	ro := binaryReadOnly(ms, reflect.ValueOf(presentPages).Pointer())
	if len(ro) == 0 {
		t.Fatal("no read-only mapping of the test binary")
	}
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("pagemap: %v", err)
	}
	defer pagemap.Close()
	buf := make([]byte, 8*512)
	before := presentPages(t, pagemap, ro, buf)
	n, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	after := presentPages(t, pagemap, ro, buf)
	t.Logf("released %d bytes of mappings; %d pages mapped before, %d after", n, before, after)
	if n == 0 {
		t.Fatal("Release released nothing")
	}
	// Counting maps some pages back: the code that runs, the 64 KiB the
	// kernel maps around each fault, or the whole of a large folio of the
	// page cache (a freshly linked binary's). Of a 4 MB test binary some
	// 200 to 550 pages are gone; without the madvise, none.
	if before-after < 128 {
		t.Errorf("%d pages mapped after Release, %d before: want at least 128 fewer", after, before)
	}
	// The code still runs: the pages come back from the file.
	if got := strconv.Itoa(12345); got != "12345" {
		t.Fatalf("strconv.Itoa after Release = %q", got)
	}
}

func TestReleaseKeep(t *testing.T) {
	t.Setenv(Env, "keep")
	if Enabled() {
		t.Fatal("Enabled with MCPHOST_START_PAGES=keep")
	}
	n, err := Release()
	if n != 0 || err != nil {
		t.Fatalf("Release with keep = %d, %v; want 0, nil", n, err)
	}
}

func TestBinaryReadOnly(t *testing.T) {
	smaps := `00400000-0147d000 r-xp 00000000 fd:01 1234                               /usr/bin/mcphost
Size:              17908 kB
Rss:               12800 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
0147d000-02600000 r--p 0107d000 fd:01 1234                               /usr/bin/mcphost
Rss:                4400 kB
Anonymous:             0 kB
02600000-02622000 r--p 02200000 fd:01 1234                               /usr/bin/mcphost
Rss:                 136 kB
Anonymous:           136 kB
02622000-02e18000 rw-p 02222000 fd:01 1234                               /usr/bin/mcphost
Anonymous:           600 kB
02e18000-04e72000 rw-p 00000000 00:00 0 
Anonymous:          2000 kB
c000000000-c004000000 rw-p 00000000 00:00 0 
7f0000000000-7f0000020000 r--p 00000000 fd:01 99                         /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             0 kB
7f0000020000-7f0000180000 r-xp 00020000 fd:01 99                         /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             0 kB
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
`
	ms, err := parseSmaps([]byte(smaps))
	if err != nil {
		t.Fatal(err)
	}
	got := binaryReadOnly(ms, 0x500000)
	// Not the writable data, not the relocated and protected (RELRO)
	// mapping with written pages, not another file's.
	want := []mapping{
		{start: 0x400000, end: 0x147d000, perms: "r-xp", file: "fd:01 1234"},
		{start: 0x147d000, end: 0x2600000, perms: "r--p", file: "fd:01 1234"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("binaryReadOnly = %+v, want %+v", got, want)
	}
	if got := binaryReadOnly(ms, 0xc000001000); len(got) != 0 {
		t.Errorf("binaryReadOnly of an anonymous address = %+v, want none", got)
	}
}

func FuzzParseSmaps(f *testing.F) {
	if data, err := os.ReadFile("/proc/self/smaps"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("00400000-0147d000 r-xp 00000000 fd:01 1234 /bin/x\nAnonymous: 4 kB\n"))
	f.Add([]byte("zz-00 r-xp 0 fd:01 1 /x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := parseSmaps(data)
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.end < m.start || len(m.perms) != 4 {
				t.Fatalf("malformed mapping %+v accepted", m)
			}
			for _, r := range binaryReadOnly(ms, m.start) {
				if r.perms[1] == 'w' || r.anonKiB != 0 {
					t.Fatalf("binaryReadOnly picked a written or writable mapping %+v", r)
				}
			}
		}
	})
}
