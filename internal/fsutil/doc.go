// Package fsutil opens the files an operator names (key files, the config
// file, drill and sandbox configuration files) without letting a special
// file hang the command, and writes every file koshactl writes (drill
// journals and JUnit reports, the sandbox's EMF and address files, config
// saves, local key files, lock files) without replacing, following or
// blocking on what it finds at the path.
//
// # Reading
//
// A named pipe (FIFO) or a terminal device blocks a plain open or read until
// some other process writes, and no signal interrupts a read koshactl is
// waiting in: the command would hang until killed. [OpenRegular] opens
// without blocking and refuses anything but a regular file, checking the open
// descriptor so the file checked is the file read; [ReadRegular] does that
// and reads with a size cap.
//
// # Writing: the policy for each kind of path
//
// A path given for output is looked at (without following a link) before
// anything is written, and the open descriptor is checked again after the
// open, so a file swapped in between is caught:
//
//   - absent: a temporary file is created exclusively (O_EXCL, and O_NOFOLLOW
//     where the system has it) in the target's directory, written in full,
//     synced, and renamed to the path ([WriteFile], [ReplaceFile]) or
//     hard-linked to it, failing if anything took the name meanwhile
//     ([CreateNew]). [OpenAppend] creates it exclusively.
//   - regular file: replaced atomically by the same rename (a reader sees the
//     old file or the new one, never half of one); [OpenAppend] appends to it;
//     [CreateNew] refuses it (fs.ErrExist).
//   - symbolic link: refused. koshactl never writes through a link it did not
//     create: one planted in a shared directory would redirect the write to
//     its target. Links in the directories above the path are followed as
//     usual (only the last component is checked). The config file's
//     documented dotfiles rule resolves its link itself and hands the
//     final target here.
//   - named pipe or character device: written in place, never replaced
//     ([WriteFile], [OpenAppend]); refused by [ReplaceFile], [CreateNew] and
//     [OpenOrCreateRegular], whose files must be read back. The open does not
//     block (O_NONBLOCK, O_NOCTTY); a pipe with no process reading it is
//     refused at once with [ErrNoReader] ("start the reader first") rather
//     than waited for, since nothing would end the wait but the reader. A
//     write to a pipe whose reader has stopped reading ends when the
//     command's context ends ([WriteFile]) or when the file is closed
//     ([OpenAppend]). On systems whose poller cannot watch a pipe (darwin)
//     or a device (the null device on Linux) the write is a plain blocking
//     one; the null device never blocks.
//   - block device, socket, directory or any other kind: refused with a
//     one-line error naming the kind and the fix.
//
// Every refusal is an [*OutputError] matching [ErrOutputRefused]. Each
// function checks its context before it opens and before it renames: a
// command interrupted while writing leaves the old file, never part of a
// new one. What no check can prevent: a process that can write the target's
// directory can replace the entry between the check and the rename; it
// could do so at any time anyway.
//
// Systems without O_NOFOLLOW (windows) rely on the check before the open.
package fsutil
