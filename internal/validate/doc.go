// Package validate is the content-check engine of oriond: what the daemon
// does to a file's new content between the end of the stream and the write.
//
// It has three steps, each a pure function of (target path, new content,
// old content) that does no I/O:
//
//   - [Repair] undoes the damage a model or a stream typically does
//     (end marker left in, a code fence around a whole file, LF where the file
//     has CRLF, a lost final newline or BOM, invalid UTF-8) and reports each
//     change as a [Fix].
//   - [Check] parses the repaired content with a real parser for its type,
//     looks for signs that it was cut off or that code was replaced by a lazy
//     placeholder, and compares every finding with the original file so that
//     only problems the new content introduces can block a write.
//   - [Decide] applies a [Policies] (strict, warn or off per [Category]) to a
//     [Report] and says whether the write is blocked.
//
// [Diff] renders the unified diff a dry run returns.
//
// Every result is JSON-serialisable with snake_case tags: findings travel to
// clients and, through them, back to the model that has to fix the content,
// so messages say what was found, where, and what was expected instead.
package validate
