package impact

import "slices"

// Tools returns the design's tools, in the order the LLD lists them: the
// contract vectors list them.
func Tools() []Tool { return slices.Clone(tools) }
