package protocol_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
	"github.com/orion-agent/orion/protocol"
)

func properties(t *testing.T, schema map[string]any) map[string]any {
	t.Helper()
	props, ok := schema["properties"].(map[string]any)
	if !ok {
		t.Fatalf("schema has no properties: %v", schema)
	}
	return props
}

func TestWritePlanToolBegin(t *testing.T) {
	def := protocol.WritePlanToolBegin()
	params := def.Function.Parameters
	props := properties(t, params)

	t.Run("NoContentParameter", func(t *testing.T) {
		b, err := json.Marshal(params)
		if err != nil {
			t.Fatal(err)
		}
		for name := range props {
			if strings.Contains(name, "content") {
				t.Fatalf("parameter %q: the tool must stay metadata-only", name)
			}
		}
		if strings.Contains(string(b), `"content"`) {
			t.Fatalf("schema mentions a content member: %s", b)
		}
	})

	t.Run("PublicNames", func(t *testing.T) {
		if got, want := def.Function.Name, "WritePlanTool_begin"; got != want {
			t.Fatalf("name %q, want %q", got, want)
		}
		if got, want := params["required"], []string{"intent", "target_file", "operation"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("required %v, want %v", got, want)
		}
	})

	t.Run("EveryOperation", func(t *testing.T) {
		op := props["operation"].(map[string]any)
		got := op["enum"].([]string)
		want := []string{"create", "overwrite", "append", "patch", "edit"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("operation enum %v, want %v", got, want)
		}
		desc := op["description"].(string)
		for _, s := range append(want, "<<<<<<< SEARCH", "@@", "*** Begin Patch", "several files", "all or nothing") {
			if !strings.Contains(desc, s) {
				t.Errorf("operation description does not mention %q", s)
			}
		}
	})

	// The schema of patch_spec names exactly the fields and types the
	// daemon decodes (internal/edit.PatchSpec).
	t.Run("PatchSpecMatchesEngine", func(t *testing.T) {
		spec := props["patch_spec"].(map[string]any)
		if spec["type"] != "object" {
			t.Fatalf("patch_spec type %v, want object", spec["type"])
		}
		fields := properties(t, spec)
		var tags []string
		st := reflect.TypeOf(edit.PatchSpec{})
		for i := range st.NumField() {
			tags = append(tags, strings.Split(st.Field(i).Tag.Get("json"), ",")[0])
		}
		var names []string
		for name := range fields {
			names = append(names, name)
		}
		slices.Sort(tags)
		slices.Sort(names)
		if !reflect.DeepEqual(names, tags) {
			t.Fatalf("patch_spec fields %v, edit.PatchSpec has %v", names, tags)
		}
		types := fields["type"].(map[string]any)["enum"].([]string)
		engine := []string{edit.PatchInsertBeforeLine, edit.PatchInsertAfterLine, edit.PatchReplaceLines, edit.PatchPrepend,
			edit.PatchInsertBeforeMarker, edit.PatchInsertAfterMarker, edit.PatchReplaceBlock, edit.PatchReplacePattern, edit.PatchReplaceAll}
		if !reflect.DeepEqual(types, engine) {
			t.Fatalf("patch_spec types %v, want %v", types, engine)
		}
	})

	t.Run("AnthropicIsTheSame", func(t *testing.T) {
		a := protocol.WritePlanToolBeginAnthropic()
		if a.Name != def.Function.Name || a.Description != def.Function.Description || !reflect.DeepEqual(a.InputSchema, params) {
			t.Fatalf("the Anthropic variant differs: %+v", a)
		}
	})
}
