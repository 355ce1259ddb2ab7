package scenario

import (
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/lockpick/lockpick/internal/suggest"
)

// yamlUnknownField is yaml.v3's message for a field a struct lacks.
var yamlUnknownField = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)

// unknownField rewrites yaml.v3's "field tll not found in type
// scenario.Lock" in the file's own words: `unknown field "tll" in lock
// (did you mean "ttl"?)`. Other messages pass unchanged.
func unknownField(msg string) string {
	m := yamlUnknownField.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	sec, ok := yamlSections()[m[2]]
	if !ok {
		return `unknown field "` + m[1] + `"`
	}
	return `unknown field "` + m[1] + `" in ` + sec.where + suggest.Hint(m[1], sec.fields)
}

// A yamlSection is a struct of the scenario file: where it appears and the
// fields it takes.
type yamlSection struct {
	where  string
	fields []string
}

// yamlSections maps each struct type reachable from [Scenario] (by its Go
// name, as yaml.v3 prints it) to its section; found once, by reflection.
var yamlSections = sync.OnceValue(func() map[string]yamlSection {
	out := map[string]yamlSection{}
	var walk func(t reflect.Type, where string)
	walk = func(t reflect.Type, where string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		if _, seen := out[t.String()]; seen {
			return
		}
		sec := yamlSection{where: where}
		out[t.String()] = sec
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			sec.fields = append(sec.fields, name)
			walk(f.Type, name)
		}
		out[t.String()] = sec
	}
	walk(reflect.TypeFor[Scenario](), "the scenario")
	return out
})
