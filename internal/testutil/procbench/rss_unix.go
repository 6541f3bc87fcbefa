//go:build unix

package procbench

import (
	"os"
	"runtime"
	"syscall"
)

// maxRSS is the process's ru_maxrss in bytes: kilobytes on Linux and the
// BSDs, bytes on macOS.
func maxRSS(ps *os.ProcessState) (int64, bool) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return ru.Maxrss, true
	}
	return ru.Maxrss * 1024, true
}
