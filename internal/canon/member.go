package canon

import (
	"bytes"
	"iter"
)

// Cut takes the member named key out of the top level of the canonical
// JSON object c, so that a caller can split off one field (a tool call's
// action_id) without parsing c again: value is the member's value, rest is
// c without the member (a new slice; c is not changed), still canonical.
// Without such a member, found is false and rest is c.
//
// c must be the output of Canonical (or a value inside it), an object; Cut
// only scans it and does not validate it.
func Cut(c []byte, key string) (value, rest []byte, found bool) {
	want := appendString(nil, key)
	if len(c) < 2 || c[0] != '{' {
		return nil, c, false
	}
	for i := 1; i < len(c) && c[i] != '}'; {
		start := i
		k := skipValue(c, i) // the key, a string
		end := skipValue(c, k+1)
		if end >= len(c) {
			break // not canonical
		}
		if bytes.Equal(c[start:k], want) {
			value = c[k+1 : end]
			if c[end] == ',' {
				end++ // the separator after it
			} else if start > 1 {
				start-- // the last member: the separator before it
			}
			rest = make([]byte, 0, len(c)-(end-start))
			rest = append(append(rest, c[:start]...), c[end:]...)
			return value, rest, true
		}
		i = end
		if c[i] == ',' {
			i++
		}
	}
	return nil, c, false
}

// skipValue returns the index just past the canonical JSON value that
// starts at c[i]: a string, an object or array (with everything nested in
// it), or a number or literal (which end at the next ',', '}' or ']').
func skipValue(c []byte, i int) int {
	depth := 0
	for ; i < len(c); i++ {
		switch c[i] {
		case '"':
			for i++; i < len(c) && c[i] != '"'; i++ {
				if c[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// Members yields the members of the canonical JSON object c, in their
// (sorted) order: each key as it is written, a JSON string with its quotes,
// and its value. Like Cut it only scans c, which must be canonical; it
// yields nothing when c is not an object.
func Members(c []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(key, value []byte) bool) {
		if len(c) < 2 || c[0] != '{' {
			return
		}
		for i := 1; i < len(c) && c[i] != '}'; {
			k := skipValue(c, i)
			end := skipValue(c, k+1)
			if end >= len(c) || !yield(c[i:k], c[k+1:end]) {
				return
			}
			i = end
			if c[i] == ',' {
				i++
			}
		}
	}
}

// Elements yields the values of the canonical JSON array c; nothing when c
// is not an array.
func Elements(c []byte) iter.Seq[[]byte] {
	return func(yield func(value []byte) bool) {
		if len(c) < 2 || c[0] != '[' {
			return
		}
		for i := 1; i < len(c) && c[i] != ']'; {
			end := skipValue(c, i)
			if end >= len(c) || !yield(c[i:end]) {
				return
			}
			i = end
			if c[i] == ',' {
				i++
			}
		}
	}
}
