package jsonline

// The fast path decodes most lines itself, without reflection: a
// history has a dozen fields of a fixed schema, and encoding/json spends
// most of its time finding out what to do with them. The fast path only
// accepts a line it understands completely:
//
//   - the thirteen field names spelled exactly, and other names in plain
//     ASCII that no field matches case-insensitively (encoding/json matches
//     names case-insensitively and we do not want to redo that);
//   - strings without escapes, control or non-ASCII bytes;
//   - integers of at most 18 digits for the integer fields, and null;
//   - scalars (a plain string, a number, true, false, null) for value and
//     for unknown fields;
//   - a present index, process and time (the caller checks type and f).
//
// Anything else (escapes, unicode, nested values, wrong types, syntax
// errors, missing fields) goes back to the caller, whose encoding/json
// decoder defines the format, so errors and odd lines decode exactly as
// they always did. Duplicate names behave as in encoding/json: the last one
// wins, and null leaves a string or an integer as it was but clears index,
// process and time.

// A Line holds the fields of one history line as [Decoder.Decode] found
// them. Type and F are the line's own bytes, for the caller to check
// against its vocabulary; the other strings and Value are the Decoder's.
type Line struct {
	Index, Process    int
	Grant             int // 0 if absent or null
	Time              int64
	Fence, ValidUntil int64 // 0 if absent or null
	Type, F           []byte
	Key, Token        string
	Node, Error       string
	Value             []byte // nil if absent or null
}

// A Decoder decodes the lines of one history. It shares the text of
// repeated strings (keys, tokens, nodes, errors) between lines, and keeps
// the values of many lines in one allocation. Its zero value is ready.
type Decoder struct {
	strs  [256]string // recent strings, by a hash of their text
	arena []byte
}

// Decode decodes b, one line that may end in its newline, into l, which
// must be zero, if it has the common shape described above, and reports
// whether it did. When it does, l holds what encoding/json would decode;
// when it does not, l holds garbage.
func (d *Decoder) Decode(b []byte, l *Line) (ok bool) {
	var (
		index, process, tm, grnt int64
		hasIndex, hasProc, hasTm bool
		typ, f, value            []byte
		key, token, node, errTxt []byte
	)
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	for {
		name, j, ok := plainString(b, i)
		if !ok {
			return false // also "{}": encoding/json reports the missing index
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		switch string(name) {
		case "index":
			index, hasIndex, i, ok = nullableInt(b, i, index, hasIndex, true)
		case "process":
			process, hasProc, i, ok = nullableInt(b, i, process, hasProc, true)
		case "time":
			tm, hasTm, i, ok = nullableInt(b, i, tm, hasTm, true)
		case "grant":
			grnt, _, i, ok = nullableInt(b, i, grnt, false, false)
		case "fence":
			l.Fence, _, i, ok = nullableInt(b, i, l.Fence, false, false)
		case "valid_until":
			l.ValidUntil, _, i, ok = nullableInt(b, i, l.ValidUntil, false, false)
		case "type":
			typ, i, ok = nullableString(b, i, typ)
		case "f":
			f, i, ok = nullableString(b, i, f)
		case "key":
			key, i, ok = nullableString(b, i, key)
		case "token":
			token, i, ok = nullableString(b, i, token)
		case "node":
			node, i, ok = nullableString(b, i, node)
		case "error":
			errTxt, i, ok = nullableString(b, i, errTxt)
		case "value":
			var end int
			end, ok = scalar(b, i)
			value, i = b[i:end], end
		default:
			if matchesField(name) {
				return false
			}
			i, ok = scalar(b, i)
		}
		if !ok {
			return false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			break
		}
		if b[i] != ',' {
			return false
		}
		i = skipSpace(b, i+1)
	}
	if skipSpace(b, i+1) != len(b) || !hasIndex || !hasProc || !hasTm {
		return false
	}
	if int64(int(index)) != index || int64(int(process)) != process || int64(int(grnt)) != grnt {
		return false
	}
	l.Type, l.F = typ, f
	l.Index, l.Process, l.Grant, l.Time = int(index), int(process), int(grnt), tm
	l.Key, l.Token, l.Node, l.Error = d.intern(key), d.intern(token), d.intern(node), d.intern(errTxt)
	if value != nil && string(value) != "null" {
		l.Value = d.keep(value)
	}
	return true
}

// intern returns b as a string, sharing the text with an earlier equal one
// if it is still in the cache. Keys, nodes and errors take few values, and a
// lease's events, which share its token, are close together.
func (d *Decoder) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	h := uint32(len(b))
	for _, c := range b {
		h = h*31 + uint32(c)
	}
	s := &d.strs[h%uint32(len(d.strs))]
	if *s != string(b) {
		*s = string(b)
	}
	return *s
}

// keep returns a copy of v, carved from a shared block. Its capacity ends
// at its length, so appending to it cannot overwrite its neighbour.
func (d *Decoder) keep(v []byte) []byte {
	if cap(d.arena)-len(d.arena) < len(v) {
		d.arena = make([]byte, 0, max(16<<10, len(v)))
	}
	n := len(d.arena)
	d.arena = append(d.arena, v...)
	return d.arena[n:len(d.arena):len(d.arena)]
}

// fieldNames are the JSON names of a history line's fields.
var fieldNames = [...]string{"index", "process", "type", "f", "key", "token", "grant", "fence", "valid_until", "value", "node", "error", "time"}

// matchesField reports whether encoding/json would decode the ASCII name
// into one of the fields, which it matches case-insensitively.
func matchesField(name []byte) bool {
	for _, f := range fieldNames {
		if len(f) != len(name) {
			continue
		}
		same := true
		for k, c := range name {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != f[k] {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// plainString returns the contents of the string at b[i] and the index
// after it, or false if there is none or it holds an escape, a control
// character or a non-ASCII byte.
func plainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c < 0x20, c == '\\', c >= 0x80:
			return nil, i, false
		}
	}
	return nil, i, false
}

// nullableString decodes a plain string or null at b[i]; null keeps old.
func nullableString(b []byte, i int, old []byte) (s []byte, next int, ok bool) {
	if isNull(b, i) {
		return old, i + 4, true
	}
	return plainString(b, i)
}

// nullableInt decodes an integer or null at b[i]. Null keeps old, or, for a
// pointer field (ptr), clears it.
func nullableInt(b []byte, i int, old int64, has, ptr bool) (n int64, present bool, next int, ok bool) {
	if isNull(b, i) {
		if ptr {
			return 0, false, i + 4, true
		}
		return old, has, i + 4, true
	}
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' && i-start < 19 {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	// A fraction or an exponent leaves a byte the caller rejects, which
	// sends the line to encoding/json; so do leading zeros, which JSON
	// forbids.
	if digits := i - start; digits == 0 || digits > 18 || b[start] == '0' && digits > 1 {
		return 0, false, i, false
	}
	if neg {
		n = -n
	}
	return n, true, i, true
}

func isNull(b []byte, i int) bool {
	return len(b)-i >= 4 && b[i] == 'n' && b[i+1] == 'u' && b[i+2] == 'l' && b[i+3] == 'l'
}

// scalar returns the index after the plain string, number, true, false or
// null at b[i], or false if there is none there.
func scalar(b []byte, i int) (next int, ok bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		_, next, ok = plainString(b, i)
		return next, ok
	case 't':
		return literal(b, i, "true")
	case 'f':
		return literal(b, i, "false")
	case 'n':
		return literal(b, i, "null")
	}
	return number(b, i)
}

func literal(b []byte, i int, lit string) (next int, ok bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

// number returns the index after the JSON number at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) (next int, ok bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
