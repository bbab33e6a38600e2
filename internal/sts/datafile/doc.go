// Package datafile reads and writes the table server's dataset files: the
// file-name rules of INITFILE and SAVE, charsets, Java's line splitting, and
// atomic saving. Errors never show an absolute path: a *FileError names the
// file relative to the dataset directory.
//
// Files are decoded as the original's InputStreamReader decodes them, with
// these exceptions:
//   - a file that is neither regular nor a directory (a FIFO, a device) is
//     refused with "Not a regular file" rather than read until it ends;
//   - malformed UTF-16 (unpaired surrogates, an odd last byte) is replaced by
//     golang.org/x/text's rules, which may give a different number of U+FFFD:
//     Java, for one, replaces an unpaired high surrogate together with the
//     unit after it, where x/text keeps that next character.
package datafile
