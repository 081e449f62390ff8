package canon

// number parses the number literal at p.pos and appends its canonical form.
//
// A JSON number is a finite decimal, so its exact value is the integer formed
// by its significant digits times a power of ten. Canonicalising is therefore
// digit-string manipulation: strip the zeros that only place the decimal
// point and re-place the point. This is exact, like math/big, but needs no
// allocation; float64 is never involved, so no two distinct values collapse.
func (p *parser) number() error {
	in, start := p.in, p.pos
	i := start

	neg := in[i] == '-'
	if neg {
		i++
	}
	if i == len(in) || !isDigit(in[i]) {
		return errorf("invalid number at offset %d", start)
	}
	intStart := i
	if in[i] == '0' {
		i++
		if i < len(in) && isDigit(in[i]) {
			return errorf("number with leading zero at offset %d", start)
		}
	} else {
		for i < len(in) && isDigit(in[i]) {
			i++
		}
	}
	intEnd := i

	fracStart, fracEnd := i, i
	if i < len(in) && in[i] == '.' {
		i++
		fracStart = i
		for i < len(in) && isDigit(in[i]) {
			i++
		}
		if i == fracStart {
			return errorf("invalid number at offset %d: no digits after '.'", start)
		}
		fracEnd = i
	}

	exp, expTooBig := 0, false
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		i++
		expNeg := false
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			expNeg = in[i] == '-'
			i++
		}
		expStart := i
		for ; i < len(in) && isDigit(in[i]); i++ {
			// Saturate rather than overflow; the value is rejected anyway.
			if !expTooBig {
				exp = exp*10 + int(in[i]-'0')
				expTooBig = exp > MaxExponent
			}
		}
		if i == expStart {
			return errorf("invalid number at offset %d: no digits in exponent", start)
		}
		if expNeg {
			exp = -exp
		}
	}

	if i-start > maxNumberLiteral {
		return errorf("number literal at offset %d is %d characters, more than the limit of %d", start, i-start, maxNumberLiteral)
	}
	if expTooBig {
		return errorf("number exponent at offset %d is beyond ±%d", start, MaxExponent)
	}
	p.pos = i

	// The value is digits × 10^exp10, where digits are the integer and
	// fraction digits together.
	var buf [maxNumberLiteral]byte
	digits := append(buf[:0], in[intStart:intEnd]...)
	digits = append(digits, in[fracStart:fracEnd]...)
	exp10 := exp - (fracEnd - fracStart)

	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		// Every spelling of zero, including -0 and 0.0e5, is 0.
		p.out = append(p.out, '0')
		return nil
	}
	for digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp10++
	}
	if len(digits) > MaxNumberLen {
		return errorf("number at offset %d has %d significant digits, more than the limit of %d", start, len(digits), MaxNumberLen)
	}
	// lead is the decimal exponent of the leading digit: 1.5 has 0, 150 has 2.
	if lead := exp10 + len(digits) - 1; lead > MaxExponent || lead < -MaxExponent {
		return errorf("number at offset %d has magnitude 1e%d, beyond 1e±%d", start, lead, MaxExponent)
	}

	if neg {
		p.out = append(p.out, '-')
	}
	switch point := len(digits) + exp10; {
	case exp10 >= 0: // integer: 15e2 -> 1500
		p.out = append(p.out, digits...)
		p.out = appendZeros(p.out, exp10)
	case point > 0: // 125e-2 -> 1.25
		p.out = append(p.out, digits[:point]...)
		p.out = append(p.out, '.')
		p.out = append(p.out, digits[point:]...)
	default: // 125e-4 -> 0.0125
		p.out = append(p.out, '0', '.')
		p.out = appendZeros(p.out, -point)
		p.out = append(p.out, digits...)
	}
	return nil
}

func appendZeros(dst []byte, n int) []byte {
	for range n {
		dst = append(dst, '0')
	}
	return dst
}
