package textsafe

import (
	"io"
	"strings"
	"testing"
)

// A table row's worth of text: the common, clean case, and one carrying
// escape sequences.
var (
	benchClean   = "openai  forced_open  in 27m  arn:aws:sts::123456789012:assumed-role/ops/alice  provider incident INC-142 café"
	benchHostile = "openai  forced_open  in 27m  eve\x1b]0;title\x07  wipe\x1b[2J copy\x1b]52;c;cm0gLXJmIH4=\x07 ok\rFORGED \u202eexe"
)

func BenchmarkLine(b *testing.B) {
	for _, c := range []struct{ name, s string }{{"clean", benchClean}, {"hostile", benchHostile}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				_ = Line(c.s)
			}
		})
	}
}

func BenchmarkWriter(b *testing.B) {
	for _, c := range []struct{ name, s string }{{"clean", benchClean}, {"hostile", benchHostile}} {
		p := []byte(strings.Repeat(c.s+"\n", 40)) // one screenful
		b.Run(c.name, func(b *testing.B) {
			w := NewWriter(io.Discard)
			b.ReportAllocs()
			b.SetBytes(int64(len(p)))
			for b.Loop() {
				_, _ = w.Write(p)
			}
		})
	}
}
