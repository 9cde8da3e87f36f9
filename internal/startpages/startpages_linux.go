package startpages

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strconv"

	"golang.org/x/sys/unix"
)

const supported = true

// mapping is one mapping of /proc/self/smaps.
type mapping struct {
	start, end uintptr
	perms      string
	file       string // device and inode: "fd:01 1234"
	anonKiB    int    // pages written since mapped (copies of the file's)
}

// parseSmaps reads the mappings of /proc/self/smaps that name a file, with
// their Anonymous field.
func parseSmaps(data []byte) ([]mapping, error) {
	var ms []mapping
	cur := -1 // index in ms of the mapping whose fields follow, or -1
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		if key, ok := bytes.CutSuffix(f[0], []byte(":")); ok {
			if cur >= 0 && string(key) == "Anonymous" && len(f) >= 2 {
				n, err := strconv.Atoi(string(f[1]))
				if err != nil {
					return nil, fmt.Errorf("startpages: /proc/self/smaps: malformed Anonymous %q", f[1])
				}
				ms[cur].anonKiB = n
			}
			continue
		}
		cur = -1
		if len(f) < 6 || string(f[4]) == "0" {
			continue // anonymous, or no path
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok || len(f[1]) != 4 {
			return nil, fmt.Errorf("startpages: /proc/self/smaps: malformed mapping %q", sc.Bytes())
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end < start {
			return nil, fmt.Errorf("startpages: /proc/self/smaps: malformed range %q", f[0])
		}
		ms = append(ms, mapping{start: uintptr(start), end: uintptr(end), perms: string(f[1]), file: string(f[3]) + " " + string(f[4])})
		cur = len(ms) - 1
	}
	return ms, sc.Err()
}

// binaryReadOnly picks, of ms, the read-only mappings of the file that
// holds the code at pc (the binary's text, rodata and pclntab) that were
// never written. A read-only mapping with written pages is one the dynamic
// loader relocated and then protected (RELRO, in a PIE or externally
// linked binary), or code a debugger patched: dropping its pages would
// bring back the file's bytes in place of the written ones.
func binaryReadOnly(ms []mapping, pc uintptr) []mapping {
	file := ""
	for _, m := range ms {
		if m.start <= pc && pc < m.end {
			file = m.file
		}
	}
	var out []mapping
	for _, m := range ms {
		if file != "" && m.file == file && m.perms[1] != 'w' && m.anonKiB == 0 {
			out = append(out, m)
		}
	}
	return out
}

func release() (int64, error) {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("startpages: %w", err)
	}
	ms, err := parseSmaps(data)
	if err != nil {
		return 0, err
	}
	ro := binaryReadOnly(ms, reflect.ValueOf(release).Pointer())
	if len(ro) == 0 {
		return 0, fmt.Errorf("startpages: no unwritten read-only mapping of the binary in /proc/self/smaps")
	}
	var n int64
	for _, m := range ro {
		// MADV_DONTNEED on a private file mapping that was never written
		// drops the page table entries only: the pages stay in the page
		// cache, and a later access maps them again from there.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); e != 0 {
			return n, fmt.Errorf("startpages: madvise %#x-%#x: %w", m.start, m.end, e)
		}
		n += int64(m.end - m.start)
	}
	return n, nil
}
