//go:build linux

package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/PID/stat's start time (USER_HZ: 100 on
// every architecture Go builds for on Linux but alpha).
const userHZ = 100

// procStat returns pid's start as /proc says it ("BOOT_ID/TICKS") and as a
// wall time, and whether the process has ended: a zombie (state Z: killed or
// exited, not yet reaped by its parent, which a container's init may never
// do) or one being torn down (X) keeps its pid and start time in /proc but
// runs nothing and holds no lock. ok is false when pid does not exist.
func procStat(pid int) (token string, started time.Time, ended, ok bool, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, fs.ErrNotExist) {
		return "", time.Time{}, false, false, nil
	}
	if err != nil {
		return "", time.Time{}, false, false, err
	}
	// The command name (field 2) is in parentheses and may hold anything:
	// the fields after its last ")" start with field 3.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", time.Time{}, false, false, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// Fields are numbered from 1 in proc(5); fields[0] is field 3.
	const stateField, startField = 0, 22 - 3
	if len(fields) <= startField {
		return "", time.Time{}, false, false, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ended = fields[stateField] == "Z" || fields[stateField] == "X" || fields[stateField] == "x"
	ticks, err := strconv.ParseInt(fields[startField], 10, 64)
	if err != nil {
		return "", time.Time{}, false, false, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	token = strings.TrimSpace(string(boot)) + "/" + strconv.FormatInt(ticks, 10)
	if btime, ok := bootTime(); ok {
		started = btime.Add(time.Duration(ticks) * time.Second / userHZ)
	}
	return token, started, ended, true, nil
}

// bootTime reads the btime line of /proc/stat.
func bootTime() (time.Time, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(s, 0), err == nil
		}
	}
	return time.Time{}, false
}

// thisProcess fills in this process's start.
func thisProcess(p *procInfo) {
	if tok, started, _, ok, err := procStat(os.Getpid()); ok && err == nil {
		p.token, p.started = tok, started
	}
}

// processState says whether the process p names is alive: gone when no
// process has its pid or it has ended (a zombie), or (when p records its start) the one that has it
// started at another time (the pid was reused).
func processState(pid int, token string) (Liveness, error) {
	tok, _, ended, ok, err := procStat(pid)
	switch {
	case err != nil:
		return LivenessUnknown, err
	case !ok || ended:
		return LivenessGone, nil
	case token != "" && tok != token:
		return LivenessReused, nil
	}
	return LivenessAlive, nil
}
