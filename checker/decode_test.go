package checker_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/checker/checkertest"
)

// sameAsStd checks that ReadJSONL and the encoding/json reader agree on in:
// the same history, or a *ParseError on the same line with the same text.
func sameAsStd(tb testing.TB, name string, in []byte) {
	tb.Helper()
	want, werr := checker.ReadJSONLStd(bytes.NewReader(in))
	// ReadJSONL reads a seekable reader twice, and another one once.
	same(tb, name, bytes.NewReader(in), want, werr)
	same(tb, name+" (not seekable)", struct{ io.Reader }{bytes.NewReader(in)}, want, werr)
	sameScan(tb, name, in, want, werr)
}

// sameScan checks that ScanJSONL passes on the events of want in order and
// returns werr's *ParseError, after the events before its line.
func sameScan(tb testing.TB, name string, in []byte, want checker.History, werr error) {
	tb.Helper()
	var got checker.History
	gerr := checker.ScanJSONL(bytes.NewReader(in), func(e checker.Event) error {
		got = append(got, e)
		return nil
	})
	var wpe *checker.ParseError
	if errors.As(werr, &wpe) {
		if gerr == nil || gerr.Error() != werr.Error() {
			tb.Errorf("%s: ScanJSONL err = %v, encoding/json: %q", name, gerr, werr)
		}
		return
	}
	if gerr != nil || !reflect.DeepEqual(got, want) {
		tb.Errorf("%s: ScanJSONL gave %d events, err %v; want %d, err %v", name, len(got), gerr, len(want), werr)
	}
}

// same checks that ReadJSONL(r) returns want and werr, as sameAsStd does.
func same(tb testing.TB, name string, r io.Reader, want checker.History, werr error) {
	tb.Helper()
	got, gerr := checker.ReadJSONL(r)
	switch {
	case gerr != nil || werr != nil:
		var gpe, wpe *checker.ParseError
		if !errors.As(gerr, &gpe) || !errors.As(werr, &wpe) {
			tb.Errorf("%s: err = %v, encoding/json: %v; want both a *ParseError", name, gerr, werr)
			return
		}
		if gpe.Line != wpe.Line || gerr.Error() != werr.Error() {
			tb.Errorf("%s: err = %q, encoding/json: %q", name, gerr, werr)
		}
	case !reflect.DeepEqual(got, want):
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				tb.Errorf("%s: event %d = %+v (value %q), encoding/json: %+v (value %q)",
					name, i, got[i], got[i].Value, want[i], want[i].Value)
				return
			}
		}
		tb.Errorf("%s: %d events (nil %v), encoding/json: %d (nil %v)", name, len(got), got == nil, len(want), want == nil)
	}
}

// base has every field of the schema; the tricky lines below vary it.
const base = `{"index":3,"process":2,"type":"ok","f":"write","key":"counter","token":"t1","fence":7,"valid_until":99,"value":5,"node":"n1","error":"","time":1000}`

// with returns base with its field name replaced by "name":raw (the first
// occurrence), or with "name":raw added at the end if raw is not empty and
// base has no such field.
func with(name, raw string) string {
	i := strings.Index(base, `"`+name+`":`)
	if i < 0 {
		return strings.TrimSuffix(base, "}") + `,"` + name + `":` + raw + "}"
	}
	j := i + len(name) + 3
	k := j
	for depth := 0; k < len(base) && (depth > 0 || base[k] != ',' && base[k] != '}'); k++ {
		switch base[k] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			k += strings.IndexByte(base[k+1:], '"') + 1
		}
	}
	if raw == "" { // drop the field
		if base[k] == ',' {
			k++
		} else {
			i--
		}
		return base[:i] + base[k:]
	}
	return base[:j] + raw + base[k:]
}

func TestReadJSONL_SameAsStd_Tricky(t *testing.T) {
	tests := []struct {
		name string
		in   string
		fast bool // the fast path decodes it (else encoding/json does)
	}{
		{"all fields", base, true},
		{"minimal", `{"index":0,"process":1,"type":"invoke","f":"acquire","time":5}`, true},
		{"reordered", `{"time":1000,"f":"write","value":5,"index":3,"node":"n1","type":"ok","process":2}`, true},
		{"spaces", " \t{ \"index\" : 3 ,\t\"process\":2 ,\"type\" :\"ok\", \"f\":\"read\" , \"time\": 9 }  \t", true},
		{"crlf", base + "\r\n", true},
		{"nemesis", `{"index":0,"process":-1,"type":"info","f":"nemesis","value":"observed: n1 down","node":"n1","time":1}`, true},
		{"empty strings", with("key", `""`), true},

		// Strings the fast path leaves to encoding/json.
		{"escaped quote", with("key", `"a\"b"`), false},
		{"escaped unicode", with("key", `"\u006cock"`), false},
		{"escaped surrogates", with("token", `"\ud83d\ude00"`), false},
		{"bad surrogate", with("token", `"\ud83d"`), false},
		{"escaped name", strings.Replace(base, `"index"`, `"\u0069ndex"`, 1), false},
		{"unicode", with("error", `"héllo ✓"`), false},
		{"unicode name", with("ключ", `1`), false},
		{"invalid utf-8", with("error", "\"a\xffb\""), false},
		{"raw tab in string", with("error", "\"a\tb\""), false},
		{"bad escape", with("error", `"a\qb"`), false},
		{"escaped type", with("type", `"\u006fk"`), false},

		// Values, kept raw.
		{"value negative", with("value", `-5`), true},
		{"value zero", with("value", `0`), true},
		{"value exponent", with("value", `1.5e3`), true},
		{"value exponent sign", with("value", `-2.25E-2`), true},
		{"value minus zero", with("value", `-0.0`), true},
		{"value huge", with("value", `123456789012345678901234567890`), true},
		{"value string", with("value", `"kill n1"`), true},
		{"value string null", with("value", `"null"`), true},
		{"value true", with("value", `true`), true},
		{"value false", with("value", `false`), true},
		{"value null", with("value", `null`), true},
		{"value absent", with("value", ``), true},
		{"value object", with("value", `{"a": [1, 2, {"b": null}], "c": "\u00e9"}`), false},
		{"value array", with("value", `[ 1 ,2 ]`), false},
		{"value empty array", with("value", `[]`), false},
		{"value leading zero", with("value", `01`), false},
		{"value dot", with("value", `1.`), false},
		{"value no int", with("value", `.5`), false},
		{"value minus", with("value", `-`), false},
		{"value bare exponent", with("value", `1e`), false},
		{"value plus", with("value", `+1`), false},
		{"value nan", with("value", `NaN`), false},
		{"value tru", with("value", `tru`), false},
		{"value nulls", with("value", `nulls`), false},

		// Integers.
		{"index negative", with("index", `-1`), true},
		{"index minus zero", with("index", `-0`), true},
		{"index 18 digits", with("index", `999999999999999999`), true},
		{"index 19 digits", with("index", `9223372036854775807`), false},
		{"index overflow", with("index", `9223372036854775808`), false},
		{"time overflow", with("time", `-9223372036854775809`), false},
		{"index exponent", with("index", `1e3`), false},
		{"index fraction", with("index", `1.0`), false},
		{"index leading zero", with("index", `01`), false},
		{"index zero", with("index", `0`), true},
		{"index string", with("index", `"3"`), false},
		{"index true", with("index", `true`), false},
		{"index object", with("index", `{}`), false},
		{"fence string", with("fence", `"7"`), false},
		{"fence exponent", with("fence", `7e0`), false},
		{"fence null", with("fence", `null`), true},
		{"grant", with("grant", `2`), true},
		{"grant null", with("grant", `null`), true},
		{"grant string", with("grant", `"2"`), false},
		{"grant fraction", with("grant", `2.5`), false},
		{"upper grant", with("Grant", `2`), false},
		{"valid_until negative", with("valid_until", `-99`), true},
		{"process minus", with("process", `-`), false},
		{"key number", with("key", `5`), false},
		{"key null", with("key", `null`), true},
		{"error null", with("error", `null`), true},

		// Missing and unknown fields.
		{"no index", with("index", ``), false},
		{"no process", with("process", ``), false},
		{"no time", with("time", ``), false},
		{"null index", with("index", `null`), false},
		{"null process", with("process", `null`), false},
		{"null time", with("time", `null`), false},
		{"null type", with("type", `null`), false},
		{"no type", with("type", ``), false},
		{"no f", with("f", ``), false},
		{"bad type", with("type", `"done"`), false},
		{"upper type", with("type", `"OK"`), false},
		{"bad f", with("f", `"lock"`), false},
		{"empty f", with("f", `""`), false},
		{"unknown number", with("extra", `1`), true},
		{"unknown string", with("extra", `"x"`), true},
		{"unknown null", with("extra", `null`), true},
		{"unknown false", with("extra", `false`), true},
		{"unknown empty name", with("", `1`), true},
		{"unknown nested", with("extra", `{"index":99,"a":[{}]}`), false},
		{"unknown array", with("extra", `[1,"2",null]`), false},
		{"unknown bad number", with("extra", `1.2.3`), false},
		{"upper name", strings.Replace(base, `"index"`, `"INDEX"`, 1), false},
		{"mixed case name", strings.Replace(base, `"valid_until"`, `"Valid_Until"`, 1), false},
		{"case duplicate", with("Key", `"other"`), false},
		{"near name", with("valid-until", `5`), true},
		{"kelvin name", strings.Replace(base, `"key"`, "\"\u212aey\"", 1), false},

		// Duplicate names: the last one wins, null clears only index,
		// process and time.
		{"dup index later", strings.TrimSuffix(base, "}") + `,"index":8}`, true},
		{"dup index null", strings.TrimSuffix(base, "}") + `,"index":null}`, false},
		{"dup type null", strings.TrimSuffix(base, "}") + `,"type":null}`, true},
		{"dup type bad then good", `{"type":"done","index":1,"process":1,"f":"read","time":1,"type":"fail"}`, true},
		{"dup key null", strings.TrimSuffix(base, "}") + `,"key":null}`, true},
		{"dup key", strings.TrimSuffix(base, "}") + `,"key":"other"}`, true},
		{"dup value null", strings.TrimSuffix(base, "}") + `,"value":null}`, true},
		{"dup value after null", `{"value":null,"index":1,"process":1,"type":"ok","f":"read","time":1,"value":4}`, true},
		{"dup fence null", strings.TrimSuffix(base, "}") + `,"fence":null}`, true},
		{"dup time null then value", `{"time":null,"index":1,"process":1,"type":"ok","f":"read","time":2}`, true},

		// Broken lines.
		{"empty object", `{}`, false},
		{"empty object spaces", `{ }`, false},
		{"array", `[]`, false},
		{"number", `1`, false},
		{"string", `"x"`, false},
		{"null", `null`, false},
		{"truncated end", base[:len(base)-1], false},
		{"truncated middle", base[:50], false},
		{"truncated after colon", `{"index":`, false},
		{"truncated after comma", `{"index":1,`, false},
		{"open brace", `{`, false},
		{"trailing comma", strings.TrimSuffix(base, "}") + `,}`, false},
		{"missing comma", strings.Replace(base, `,"process"`, ` "process"`, 1), false},
		{"missing colon", strings.Replace(base, `"index":`, `"index" `, 1), false},
		{"single quotes", strings.Replace(base, `"index"`, `'index'`, 1), false},
		{"unquoted name", strings.Replace(base, `"index"`, `index`, 1), false},
		{"trailing garbage", base + "x", false},
		{"trailing brace", base + "}", false},
		{"two objects", base + " " + base, false},
		{"trailing comma outside", base + ",", false},
		{"bom", "\ufeff" + base, false},
		{"form feed", "\f" + base, false},
		{"nbsp", "\u00a0" + base, false},
		{"nul", base + "\x00", false},

		// Several lines: blank ones are skipped, and errors name the line.
		{"blank lines", "\n\n   \n\t\r\n" + base + "\n\n", true},
		{"unicode blank line", "\u00a0\n\f\v\n" + base + "\n", true},
		{"error on line 3", base + "\n\n" + with("type", `"done"`) + "\n" + base, true},
		{"syntax on line 2", base + "\n{\n", true},
		{"no newline at end", base + "\n" + base, true},
		{"empty", "", true},
		{"only blank", "\n \n\n", true},
	}
	fastN := 0
	for _, tt := range tests {
		in := []byte(tt.in)
		sameAsStd(t, tt.name, in)
		// The first non-blank line decides whether the fast path applies.
		first := ""
		for l := range strings.Lines(tt.in) {
			if strings.TrimSpace(l) != "" {
				first = l
				break
			}
		}
		if first == "" {
			continue
		}
		e, ok := checker.DecodeFast([]byte(first))
		if ok != tt.fast {
			t.Errorf("%s: fast path decoded it = %v, want %v", tt.name, ok, tt.fast)
		}
		if ok {
			fastN++
			want, err := checker.ReadJSONLStd(strings.NewReader(first))
			if err != nil || len(want) != 1 || !reflect.DeepEqual(e, want[0]) {
				t.Errorf("%s: fast path = %+v, encoding/json: %+v, %v", tt.name, e, want, err)
			}
		}
	}
	if fastN == 0 || fastN == len(tests) {
		t.Errorf("the fast path decoded %d of %d cases; want a mix", fastN, len(tests))
	}
}

// render writes e as one JSON line with its fields in a random order, random
// whitespace, and random extras the fast path must handle: unknown scalar
// fields, nulls for absent optional fields, and fields given twice.
func render(rng *rand.Rand, e checker.Event) string {
	type field struct{ name, raw string }
	var units [][]field // fields that stay together, in order
	add := func(f ...field) { units = append(units, f) }
	q := strconv.Quote
	add(field{"index", strconv.Itoa(e.Index)})
	add(field{"process", strconv.Itoa(e.Process)})
	add(field{"type", q(string(e.Type))})
	add(field{"f", q(e.F)})
	add(field{"time", strconv.FormatInt(e.Time, 10)})
	opt := func(name, raw string, absent bool) {
		switch {
		case !absent && rng.IntN(4) == 0: // a null the later value overrides
			add(field{name, "null"}, field{name, raw})
		case !absent:
			add(field{name, raw})
		case rng.IntN(4) == 0:
			add(field{name, "null"})
		}
	}
	opt("key", q(e.Key), e.Key == "")
	opt("token", q(e.Token), e.Token == "")
	opt("grant", strconv.Itoa(e.Grant), e.Grant == 0)
	opt("fence", strconv.FormatInt(e.Fence, 10), e.Fence == 0)
	opt("valid_until", strconv.FormatInt(e.ValidUntil, 10), e.ValidUntil == 0)
	opt("value", string(e.Value), len(e.Value) == 0)
	opt("node", q(e.Node), e.Node == "")
	opt("error", q(e.Error), e.Error == "")
	extras := []string{`1`, `-2.5e-3`, `"x y"`, `true`, `false`, `null`, `""`, `0`}
	for range rng.IntN(3) {
		add(field{fmt.Sprint("extra", rng.IntN(5)), extras[rng.IntN(len(extras))]})
	}
	rng.Shuffle(len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })
	spaces := []string{"", "", "", " ", "\t", " \r"}
	sp := func() string { return spaces[rng.IntN(len(spaces))] }
	var b strings.Builder
	b.WriteString(sp() + "{")
	first := true
	for _, u := range units {
		for _, f := range u {
			if !first {
				b.WriteString(sp() + "," + sp())
			}
			first = false
			b.WriteString(sp() + q(f.name) + sp() + ":" + sp() + f.raw + sp())
		}
	}
	b.WriteString("}" + sp())
	return b.String()
}

func TestReadJSONL_SameAsStd_Generated(t *testing.T) {
	for seed := range uint64(40) {
		opt := checkertest.Options{Processes: 1 + int(seed%7), Keys: 1 + int(seed%3), Events: 500, Seed: seed,
			TTL: time.Duration(1+seed%5) * time.Millisecond, UnknownRate: 0.05 * float64(seed%3),
			BrokenRate: 0.05 * float64(seed%2), PauseRate: 0.1 * float64(seed%2), Fenced: seed%4 == 0, Grants: seed%3 == 1}
		h := checkertest.Generate(&opt)
		var buf bytes.Buffer
		if err := h.WriteJSONL(&buf); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("seed %d", seed)
		sameAsStd(t, name, buf.Bytes())
		back, err := checker.ReadJSONL(&buf)
		if err != nil || !reflect.DeepEqual(back, h) {
			t.Errorf("%s: round trip differs (err %v)", name, err)
		}

		// The same events, in lines of unusual shapes.
		rng := rand.New(rand.NewPCG(seed, 2))
		var odd strings.Builder
		for _, e := range h {
			line := render(rng, e)
			if _, ok := checker.DecodeFast([]byte(line)); !ok {
				t.Fatalf("%s: the fast path refused %s", name, line)
			}
			odd.WriteString(line)
			odd.WriteString([]string{"\n", "\r\n", "\n\n", "\n \n"}[rng.IntN(4)])
		}
		sameAsStd(t, name+" reshaped", []byte(odd.String()))
		back, err = checker.ReadJSONL(strings.NewReader(odd.String()))
		if err != nil || !reflect.DeepEqual(back, h) {
			t.Errorf("%s reshaped: differs from the history written (err %v)", name, err)
		}
	}
}

// failingSeeker fails every read from offset at on.
type failingSeeker struct {
	*strings.Reader
	at  int64
	err error
}

func (f failingSeeker) Read(p []byte) (int, error) {
	pos := f.Size() - int64(f.Len())
	if pos >= f.at {
		return 0, f.err
	}
	return f.Reader.Read(p[:min(int64(len(p)), f.at-pos)])
}

func TestReadJSONL_Seeker(t *testing.T) {
	boom := errors.New("boom")
	in := base + "\n" + with("index", "4") + "\n{\n" + base
	for _, at := range []int{0, 10, len(base), len(base) + 1, len(base) + 30, len(in) - 3, len(in)} {
		name := fmt.Sprintf("failing at %d", at)
		want, werr := checker.ReadJSONLStd(failingSeeker{strings.NewReader(in), int64(at), boom})
		got, gerr := checker.ReadJSONL(failingSeeker{strings.NewReader(in), int64(at), boom})
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d events, err %v; encoding/json: %d events, err %v", name, len(got), gerr, len(want), werr)
		}
	}
	// It reads from where the reader stands, not from the start.
	r := strings.NewReader("garbage\n" + base)
	if _, err := r.Seek(8, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	h, err := checker.ReadJSONL(r)
	if err != nil || len(h) != 1 || h[0].Index != 3 {
		t.Errorf("from offset 8: %+v, %v; want the event of index 3", h, err)
	}
}

func TestReadJSONL_ReadError(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name, in string
		want     error // nil: a *ParseError
	}{
		{"good lines", base + "\n" + base, boom},
		{"bad line first", base + "\n{\n" + base, nil},
		{"bad partial line", base + "\n{", nil},
	}
	for _, tt := range tests {
		for _, read := range []func(io.Reader) (checker.History, error){checker.ReadJSONL, checker.ReadJSONLStd} {
			h, err := read(io.MultiReader(strings.NewReader(tt.in), iotest.ErrReader(boom)))
			var pe *checker.ParseError
			switch {
			case h != nil:
				t.Errorf("%s: %d events with an error", tt.name, len(h))
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
			case tt.want == nil && (!errors.As(err, &pe) || pe.Line != 2):
				t.Errorf("%s: err = %v, want a *ParseError on line 2", tt.name, err)
			}
		}
	}
}
