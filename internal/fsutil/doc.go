// Package fsutil opens the files an operator names (key files, the config
// file, drill and sandbox configuration files) without letting a special
// file hang the command.
//
// A named pipe (FIFO) or a terminal device blocks a plain open or read until
// some other process writes, and no signal interrupts a read koshactl is
// waiting in: the command would hang until killed. [OpenRegular] opens
// without blocking and refuses anything but a regular file, checking the open
// descriptor so the file checked is the file read; [ReadRegular] does that
// and reads with a size cap.
package fsutil
