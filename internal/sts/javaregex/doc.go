// Package javaregex matches java.util.regex patterns, with Java's meaning,
// on github.com/dlclark/regexp2 and under a time limit. The table server's
// FIND command uses it for REGEX_FIND (Find, Matcher.find) and REGEX_MATCH
// (Match, Matcher.matches).
//
// Compile translates the Java pattern into regexp2 syntax. The translator
// parses the pattern as java.util.regex.Pattern does and spells out every
// construct the two engines read differently: \w \d \s \b are ASCII (Unicode
// under (?U)); . ^ $ \Z know Java's line terminators and the d, m and s
// flags; character classes nest and intersect with && exactly as Java reads
// them ([[:alpha:]] is the set {: a l p h}); \p{...} takes Java's names
// (Alpha is ASCII, IsAlphabetic Unicode, javaLowerCase, IsLatin, ...); named
// groups are numbered in Java's order; \Q...\E quotes everything; possessive
// quantifiers become atomic groups; \h, \v, \R, octal, \x{...} and \cX
// escapes are Java's; comments mode (?x) is applied by the translator.
// Back-references, look-ahead, look-behind, atomic groups and (?i) are
// regexp2's own.
//
// The cost is bounded. The matches of one Regexp share the time limit given
// to Compile and stop once it is spent (ErrTimeout), so a catastrophic
// pattern costs about that much CPU over a whole scan, not per line. Compile
// itself refuses, before any work, a pattern longer than MaxPatternBytes
// (ErrTooLong), and a pattern whose case-insensitive ranges are so wide that
// regexp2 would take seconds to fold them (ErrTooCostly); what it accepts
// compiles in a few hundred milliseconds at worst (16 KiB of \b, or of
// nested look-aheads).
//
// # Differences from Java
//
// Compared with OpenJDK 17 and later, matching differs only here:
//
//   - Case-insensitive matching folds all of Unicode (simple case folding), as
//     Java does only with (?iu): "(?i)é" matches "É" and "(?i)k" matches
//     KELVIN SIGN, where plain Java (?i) folds ASCII letters only.
//   - \b and \B use the word characters of \w, ASCII unless (?U), as Java 19
//     and later do. Java 17 and 18 count every letter and digit and a
//     combining mark after one, so there "x\b" does not find "xé".
//   - Any look-behind is evaluated, right to left. Java refuses some
//     look-behinds without an obvious maximum length (lazy or counted
//     unbounded repeats, back-references), mis-evaluates others whose maximum
//     length overflows (several unbounded repeats), and lets a possessive
//     quantifier or atomic group inside a look-behind run past its end.
//   - Unicode properties and \X use Go's tables (Unicode 15.0) and regexp2's
//     grapheme rules (Unicode 17), not the JDK's (Unicode 13 in Java 17):
//     characters assigned in between classify differently.
//   - (?c) (CANON_EQ) is accepted and has no effect.
//   - In comments mode, whitespace and comments are skipped between tokens.
//     Java also skips them inside a few ("( ?:a)", "(?i )", "\p {L}",
//     "\x 41", "[a& &b]"), which here are errors or literal characters.
//   - Input is a Go string: invalid UTF-8 matches as U+FFFD per byte, and a
//     lone surrogate written in the pattern (\uD800) matches nothing.
//   - Besides the time limit, regexp2 bounds its backtracking stack: a match
//     that needs more (such as "(a|b)*c" on a line of hundreds of thousands of
//     characters, where Java overflows its own stack) returns ErrTooComplex.
//
// Compile refuses these Java constructs instead of matching differently:
// Unicode blocks (\p{InGreek}, \p{blk=Greek}, \p{block=Greek}), four-letter
// script aliases (\p{IsLatn}, \p{sc=Latn}), \p{javaMirrored}, \N{name} and
// \b{g}. Otherwise it refuses exactly what Java refuses (save the
// look-behinds above), with Java's diagnosis in the error text.
package javaregex
