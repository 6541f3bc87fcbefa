// Package textsafe is koshactl's one rule for putting text that came from
// somewhere else (the control table, an HTTP answer, a drill file, the
// environment) in front of a human, and for refusing such text as operator
// input.
//
// # What is unsafe
//
// A terminal reads some characters as instructions: ESC starts sequences that
// clear the screen (ESC[2J), retitle the window (ESC]0;… BEL) or write the
// clipboard (ESC]52;c;… BEL); CR and backspace move back over text already
// printed; a C1 control such as U+009B is CSI on its own for a terminal in
// 8-bit mode; the Unicode bidi controls reorder what is displayed without
// changing a byte of what is stored ("Trojan Source", CVE-2021-42574). The
// unsafe set is therefore:
//
//   - C0 controls U+0000–U+001F, DEL U+007F and C1 controls U+0080–U+009F;
//   - the bidi controls U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069;
//   - the line and paragraph separators U+2028 and U+2029;
//   - bytes that are not valid UTF-8.
//
// Everything else, every other letter, mark, symbol and emoji, is shown as is.
//
// # How it is shown
//
// An unsafe character is replaced by a visible escape, never emitted and never
// silently dropped: \t, \n and \r for tab, newline and carriage return; \xHH
// for the other C0 controls and DEL (\x1b, \x07, \x7f); \uHHHH for the C1,
// bidi and separator characters (\u009b, \u202e); \xHH for each byte that is
// not UTF-8 (\xff). Backslashes in the text are not doubled, so the rendering
// is for reading, not a reversible encoding: the exact value is what -o json
// and -o yaml print.
//
// # One line or many
//
// [Line] is for a table cell, a "Label: value" field, a prompt and an error
// message: one line each, so tab and newline are escaped too (a newline in a
// reason would otherwise forge a table row, a tab a column). [OneLine] is
// for a message that was wrapped over lines (an error's text): it folds each
// run of spaces, tabs and newlines into one space first, then applies
// [Line]; every place that puts an error on one line uses it. [Text] is for
// text that is meant to span lines (a drill's captured output, a JUnit
// failure body): it keeps newline and tab, which cannot move the cursor back
// over what was printed, and escapes everything else. [Writer] applies the
// [Text] rule to a whole stream; koshactl wraps stdout and stderr in one, so
// a field a command forgot to render still cannot reach the terminal raw.
//
// # Input
//
// [Check] applies the [Line] rule to operator input (a --reason, the actor
// name): it reports the first unsafe character and its position in
// characters, so the input is refused before anything is written. [Truncate]
// shortens text by characters without splitting one.
//
// On clean text (the common case) [Line], [Text] and [Check] return without
// allocating.
package textsafe
