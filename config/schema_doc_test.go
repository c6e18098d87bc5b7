package config

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// schemaSections returns every section of the schema, top level first.
func schemaSections() []*section {
	var out []*section
	seen := map[*section]bool{}
	var walk func(*section)
	walk = func(s *section) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
		for _, k := range s.keys {
			walk(k.sub)
		}
	}
	walk(topSection)
	return out
}

// TestSchemaTable checks that every row of the schema fits its struct.
func TestSchemaTable(t *testing.T) {
	for _, s := range schemaSections() {
		names := map[string]bool{}
		for _, k := range s.keys {
			if names[k.name] {
				t.Errorf("%s: key %q twice", s.doc, k.name)
			}
			names[k.name] = true
			if k.dec == nil && k.sub == nil {
				t.Errorf("%s: key %q has neither dec nor sub", s.doc, k.name)
			}
			if k.field == "" {
				continue
			}
			f, ok := s.typ.FieldByName(k.field)
			if !ok {
				t.Errorf("%s: key %q: %v has no field %s", s.doc, k.name, s.typ, k.field)
				continue
			}
			if k.def != nil && !reflect.TypeOf(k.def).ConvertibleTo(f.Type) {
				t.Errorf("%s: key %q: default %v does not fit %v", s.doc, k.name, k.def, f.Type)
			}
			if ft := f.Type; k.sub != nil && ft != k.sub.typ && (ft.Kind() != reflect.Slice && ft.Kind() != reflect.Pointer || ft.Elem() != k.sub.typ) {
				t.Errorf("%s: key %q: field %s is a %v, its section is for %v", s.doc, k.name, k.field, ft, k.sub.typ)
			}
		}
	}
}

// docDefault is the default column that docs/config.md must show for k.
func docDefault(s *section, k key) string {
	switch {
	case k.doc != "":
		return k.doc
	case k.req:
		return "required"
	case k.field == "":
		return ""
	}
	f := reflect.New(s.typ).Elem().FieldByName(k.field)
	f.Set(k.defValue(f.Type()))
	if str, ok := f.Interface().(fmt.Stringer); ok {
		return "`" + str.String() + "`"
	}
	switch f.Kind() {
	case reflect.Struct:
		return "" // a mapping
	case reflect.String, reflect.Slice, reflect.Map:
		if f.Len() == 0 {
			return "empty"
		}
	}
	return fmt.Sprintf("`%v`", f.Interface())
}

// docTables returns the key tables of docs/config.md, by the heading above
// them: for each key of the first column, the default column.
func docTables(t *testing.T, md string) map[string]map[string]string {
	tables := map[string]map[string]string{}
	heading, code := "", false
	for _, line := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			code = !code
		case code:
		case strings.HasPrefix(line, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
		case strings.HasPrefix(line, "| key |"):
			if tables[heading] != nil {
				t.Errorf("docs/config.md: two key tables under %q", heading)
			}
			tables[heading] = map[string]string{}
		case strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "|---"):
			cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
			if tables[heading] == nil || len(cells) != 6 {
				t.Errorf("docs/config.md: table row outside a key table, or not 4 columns: %s", line)
				continue
			}
			for _, k := range strings.Split(strings.TrimSpace(cells[1]), ", ") {
				tables[heading][strings.Trim(k, "`")] = strings.ReplaceAll(strings.TrimSpace(cells[3]), "\x00", `\|`)
			}
		}
	}
	return tables
}

// TestSchemaDocs checks that the key tables of docs/config.md list exactly
// the keys of the schema, section by section, with the same defaults.
func TestSchemaDocs(t *testing.T) {
	data, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	tables := docTables(t, string(data))
	for _, s := range schemaSections() {
		doc, ok := tables[s.doc]
		if !ok {
			t.Errorf("docs/config.md: no key table under the heading %q", s.doc)
			continue
		}
		delete(tables, s.doc)
		for _, k := range s.keys[:s.own] { // the others are in the inherited section's table
			if got, ok := doc[k.name]; !ok {
				t.Errorf("docs/config.md, %s: key %q of the schema is missing", s.doc, k.name)
			} else if want := docDefault(s, k); got != want {
				t.Errorf("docs/config.md, %s: key %q has default %q, the schema %q", s.doc, k.name, got, want)
			}
			delete(doc, k.name)
		}
		for name := range doc {
			t.Errorf("docs/config.md, %s: key %q is not in the schema", s.doc, name)
		}
	}
	for heading := range tables {
		t.Errorf("docs/config.md: the key table under %q is no section of the schema", heading)
	}
}
