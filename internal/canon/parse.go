package canon

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// parser is a single-use recursive-descent parser that writes the canonical
// form to out as it goes. It is hand-written rather than built on
// encoding/json because encoding/json tolerates invalid UTF-8, lone
// surrogates and duplicate keys, all of which must be rejected here.
//
// Objects are written member by member in input order and reordered in place
// when they close, so no intermediate tree is built. The keys and members
// slices are stacks shared by all open objects: a nested value always
// finishes before its parent continues, so each object only ever touches the
// top of each stack.
//
// The path to the current value is not tracked while parsing; an error's
// Path is built as the error unwinds through the enclosing containers, so
// valid input pays nothing for it.
type parser struct {
	in  []byte
	pos int
	out []byte

	keys    []byte   // decoded, normalised keys of members of open objects
	members []member // members of open objects, in input order

	str     []byte // decoded string being parsed
	normStr []byte // NFC form of str, when it differs
	reorder []byte // copy of an object's members while they are sorted
}

// member locates one object member: its key in parser.keys and its
// `"key":value` text in parser.out.
type member struct {
	keyStart, keyEnd int
	start, end       int
}

func (p *parser) parse() error {
	p.skipSpace()
	if p.pos == len(p.in) {
		if len(p.in) == 0 {
			return errorf("empty input")
		}
		return errorf("no value, only whitespace")
	}
	if err := p.value(0); err != nil {
		return err
	}
	p.skipSpace()
	if p.pos != len(p.in) {
		return errorf("unexpected data after the top-level value at offset %d", p.pos)
	}
	return nil
}

// value parses one value. depth is the number of containers enclosing it.
func (p *parser) value(depth int) error {
	p.skipSpace()
	if p.pos == len(p.in) {
		return errorf("unexpected end of input")
	}
	var err error
	switch c := p.in[p.pos]; {
	case c == '{':
		err = p.object(depth + 1)
	case c == '[':
		err = p.array(depth + 1)
	case c == '"':
		var s []byte
		if s, err = p.string(); err == nil {
			p.out = appendString(p.out, s)
		}
	case c == '-' || isDigit(c):
		err = p.number()
	case c == 't':
		err = p.literal("true")
	case c == 'f':
		err = p.literal("false")
	case c == 'n':
		err = p.literal("null")
	default:
		return p.unexpected()
	}
	if err == nil && len(p.out) > MaxInputLen {
		// Checked after each value so that memory stays bounded even when
		// short number literals expand, and so that canonical output is
		// always acceptable input again.
		return errorf("canonical form is longer than the limit of %d bytes", MaxInputLen)
	}
	return err
}

func (p *parser) object(depth int) error {
	if depth > MaxDepth {
		return errorf("nesting deeper than %d", MaxDepth)
	}
	p.pos++ // '{'
	p.out = append(p.out, '{')
	bodyStart := len(p.out)
	if p.members == nil {
		// Sized for a typical tool-call body so that it parses without
		// regrowing the stacks.
		p.members = make([]member, 0, 16)
		p.keys = make([]byte, 0, 256)
	}
	// On error the parser is abandoned, so the stacks only need popping on
	// success.
	keysBase, membersBase := len(p.keys), len(p.members)

	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.out = append(p.out, '}')
		return nil
	}
	for {
		p.skipSpace()
		if p.pos == len(p.in) {
			return errorf("unexpected end of input in object")
		}
		if p.in[p.pos] != '"' {
			return errorf("expected string key at offset %d", p.pos)
		}
		key, err := p.string()
		if err != nil {
			return err
		}
		m := member{keyStart: len(p.keys), start: len(p.out)}
		p.keys = append(p.keys, key...)
		m.keyEnd = len(p.keys)
		p.out = appendString(p.out, key)
		p.out = append(p.out, ':')

		p.skipSpace()
		if p.pos == len(p.in) || p.in[p.pos] != ':' {
			return errorf("expected ':' after object key at offset %d", p.pos)
		}
		p.pos++

		if err := p.value(depth); err != nil {
			return within(err, pointerKey(p.keys[m.keyStart:m.keyEnd]))
		}
		m.end = len(p.out)
		p.members = append(p.members, m)

		p.skipSpace()
		if p.pos == len(p.in) {
			return errorf("unexpected end of input in object")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			p.out = append(p.out, ',')
		case '}':
			p.pos++
			if err := p.sortMembers(bodyStart, p.members[membersBase:]); err != nil {
				return err
			}
			p.out = append(p.out, '}')
			p.keys = p.keys[:keysBase]
			p.members = p.members[:membersBase]
			return nil
		default:
			return errorf("expected ',' or '}' in object at offset %d", p.pos)
		}
	}
}

// sortMembers puts the members of the object whose body starts at out[start:]
// into key order and rejects duplicate keys. Duplicates are only visible
// after normalisation, which is why they are detected on the sorted keys
// rather than on the raw input.
func (p *parser) sortMembers(start int, ms []member) error {
	key := func(m member) []byte { return p.keys[m.keyStart:m.keyEnd] }
	cmp := func(a, b member) int { return bytes.Compare(key(a), key(b)) }

	sorted := slices.IsSortedFunc(ms, cmp)
	if !sorted {
		slices.SortFunc(ms, cmp)
	}
	for i := 1; i < len(ms); i++ {
		if bytes.Equal(key(ms[i-1]), key(ms[i])) {
			return errorf("duplicate key %s", quoteKey(key(ms[i])))
		}
	}
	if sorted {
		return nil
	}
	// Members are separated by single commas in the canonical form, so the
	// body is rebuilt by copying each member's region in the new order.
	if p.reorder == nil {
		p.reorder = make([]byte, 0, len(p.in))
	}
	p.reorder = append(p.reorder[:0], p.out[start:]...)
	p.out = p.out[:start]
	for i, m := range ms {
		if i > 0 {
			p.out = append(p.out, ',')
		}
		p.out = append(p.out, p.reorder[m.start-start:m.end-start]...)
	}
	return nil
}

func (p *parser) array(depth int) error {
	if depth > MaxDepth {
		return errorf("nesting deeper than %d", MaxDepth)
	}
	p.pos++ // '['
	p.out = append(p.out, '[')

	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.out = append(p.out, ']')
		return nil
	}
	for i := 0; ; i++ {
		if err := p.value(depth); err != nil {
			return within(err, strconv.Itoa(i))
		}

		p.skipSpace()
		if p.pos == len(p.in) {
			return errorf("unexpected end of input in array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			p.out = append(p.out, ',')
		case ']':
			p.pos++
			p.out = append(p.out, ']')
			return nil
		default:
			return errorf("expected ',' or ']' in array at offset %d", p.pos)
		}
	}
}

func (p *parser) literal(word string) error {
	if !bytes.HasPrefix(p.in[p.pos:], []byte(word)) {
		return p.unexpected()
	}
	p.pos += len(word)
	p.out = append(p.out, word...)
	return nil
}

// string parses the string starting at the opening quote at p.pos and returns
// its decoded, NFC-normalised bytes. The result aliases the input or the
// parser's buffers and is only valid until the next call.
func (p *parser) string() ([]byte, error) {
	p.pos++ // '"'
	start := p.pos

	// Fast path: printable ASCII without escapes is already decoded and
	// normalised, which covers almost every key and most values.
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		if c == '"' {
			s := p.in[start:p.pos]
			p.pos++
			return s, p.checkStringLen(s)
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		p.pos++
	}

	if p.str == nil {
		p.str = make([]byte, 0, 64)
	}
	s := append(p.str[:0], p.in[start:p.pos]...)
	nonASCII := false
	for {
		if p.pos == len(p.in) {
			return nil, errorf("unterminated string")
		}
		switch c := p.in[p.pos]; {
		case c == '"':
			p.pos++
			p.str = s // keep the grown buffer for the next string
			if nonASCII && !norm.NFC.IsNormal(s) {
				p.normStr = norm.NFC.Append(p.normStr[:0], s...)
				return p.normStr, p.checkStringLen(p.normStr)
			}
			return s, p.checkStringLen(s)
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return nil, err
			}
			if r >= utf8.RuneSelf {
				nonASCII = true
			}
			s = utf8.AppendRune(s, r)
		case c < 0x20:
			return nil, errorf("unescaped control character U+%04X in string at offset %d", c, p.pos)
		case c < utf8.RuneSelf:
			s = append(s, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.in[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return nil, errorf("invalid UTF-8 in string at offset %d", p.pos)
			}
			s = append(s, p.in[p.pos:p.pos+size]...)
			p.pos += size
			nonASCII = true
		}
	}
}

func (p *parser) checkStringLen(s []byte) error {
	if len(s) > MaxStringLen {
		return errorf("string is %d bytes, more than the limit of %d", len(s), MaxStringLen)
	}
	return nil
}

// escape decodes the escape sequence at p.pos, including a following low
// surrogate escape when the first one is a high surrogate.
func (p *parser) escape() (rune, error) {
	at := p.pos
	if p.pos+1 == len(p.in) {
		return 0, errorf("unterminated string")
	}
	c := p.in[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
	default:
		return 0, errorf("invalid escape in string at offset %d", at)
	}

	r, ok := p.hex4()
	if !ok {
		return 0, errorf("invalid \\u escape in string at offset %d", at)
	}
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	// UTF-16 surrogates only mean something as a high+low pair; a lone one
	// has no Unicode scalar value and so no canonical spelling.
	if r < 0xDC00 && p.pos+1 < len(p.in) && p.in[p.pos] == '\\' && p.in[p.pos+1] == 'u' {
		p.pos += 2
		if lo, ok := p.hex4(); ok && 0xDC00 <= lo && lo <= 0xDFFF {
			return utf16.DecodeRune(r, lo), nil
		}
	}
	return 0, errorf("lone surrogate escape in string at offset %d", at)
}

func (p *parser) hex4() (rune, bool) {
	if len(p.in)-p.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.in[p.pos : p.pos+4] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	p.pos += 4
	return r, true
}

func (p *parser) skipSpace() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) unexpected() error {
	c := p.in[p.pos]
	switch {
	case c >= utf8.RuneSelf:
		if r, size := utf8.DecodeRune(p.in[p.pos:]); r == utf8.RuneError && size == 1 {
			return errorf("invalid UTF-8 at offset %d", p.pos)
		}
		return errorf("unexpected non-ASCII character at offset %d", p.pos)
	case c >= 0x20 && c < 0x7f:
		return errorf("unexpected character %q at offset %d", c, p.pos)
	default:
		return errorf("unexpected byte 0x%02x at offset %d", c, p.pos)
	}
}

// errorf reports a problem with the value being parsed. Enclosing containers
// add their steps to Path as the error unwinds.
func errorf(format string, args ...any) error {
	return &Error{Reason: fmt.Sprintf(format, args...)}
}

// within prefixes the path of err, which the parser created, with one
// already-escaped JSON pointer step.
func within(err error, step string) error {
	if e, ok := err.(*Error); ok {
		e.Path = "/" + step + e.Path
	}
	return err
}

// pointerKey renders key as a JSON pointer step (RFC 6901 escaping),
// truncated so that errors stay small.
func pointerKey(key []byte) string {
	k := string(truncate(key))
	k = strings.ReplaceAll(k, "~", "~0")
	return strings.ReplaceAll(k, "/", "~1")
}

// quoteKey renders a key for an error message: truncated, and quoted so that
// control characters cannot forge log lines.
func quoteKey(k []byte) string {
	t := truncate(k)
	q := strconv.Quote(string(t))
	if len(t) < len(k) {
		q += "..."
	}
	return q
}

// truncate shortens b to at most maxQuotedLen bytes without splitting a
// UTF-8 sequence.
func truncate(b []byte) []byte {
	if len(b) <= maxQuotedLen {
		return b
	}
	n := maxQuotedLen
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// appendString appends s (valid UTF-8) as a JSON string with minimal
// escaping. Runs of bytes needing no escape are copied in one append.
func appendString[S string | []byte](dst []byte, s S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[run:i]...)
		run = i + 1
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	dst = append(dst, s[run:]...)
	return append(dst, '"')
}
