//go:build !unix

package procbench

import "os"

// maxRSS is not reported here.
func maxRSS(*os.ProcessState) (int64, bool) { return 0, false }
