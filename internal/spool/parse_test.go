package spool_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/spool"
)

func TestParse(t *testing.T) {
	mtime := time.Date(2026, 1, 4, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		meta    string
		state   string // "" leaves state.json out
		check   func(t *testing.T, e spool.Entry)
		warning string // a substring of the one expected warning, or "" for none
	}{
		{"Complete", validMeta, `{"buffer_size":6,"last_save":"2026-01-04T10:00:05Z","line_count":1}`, func(t *testing.T, e spool.Entry) {
			if e.State == nil || e.State.BufferSize != 6 || e.State.LineCount != 1 ||
				!e.State.LastSave.Equal(time.Date(2026, 1, 4, 10, 0, 5, 0, time.UTC)) {
				t.Errorf("State = %+v", e.State)
			}
		}, ""},
		{"NoState", validMeta, "", func(t *testing.T, e spool.Entry) {
			if e.State != nil {
				t.Errorf("State = %+v, want nil", e.State)
			}
		}, ""},
		{"TornState", validMeta, `{"buffer_size":6,"last_sa`, func(t *testing.T, e spool.Entry) {
			if e.State != nil {
				t.Errorf("State = %+v, want nil for a torn state.json", e.State)
			}
		}, "state.json"},
		{"FloatCountsInState", validMeta, `{"buffer_size":6.0,"line_count":"3"}`, func(t *testing.T, e spool.Entry) {
			if e.State == nil || e.State.BufferSize != 6 || e.State.LineCount != 3 {
				t.Errorf("State = %+v", e.State)
			}
		}, ""},
		{"RelativeTargetWithRoot", `{"target_file":"src/a.go","workspace_root":"/home/me/proj","operation":"overwrite","created_at":"2026-01-04T10:00:00Z"}`, "", func(t *testing.T, e spool.Entry) {
			if e.TargetFile != "src/a.go" || e.WorkspaceRoot != "/home/me/proj" {
				t.Errorf("TargetFile %q WorkspaceRoot %q", e.TargetFile, e.WorkspaceRoot)
			}
			if got, want := e.Target(), "/home/me/proj/src/a.go"; got != want {
				t.Errorf("Target() = %q, want %q", got, want)
			}
		}, ""},
		{"CreatedAtMillis", `{"target_file":"/x","operation":"append","created_at":1767520800000}`, "", func(t *testing.T, e spool.Entry) {
			if want := time.Date(2026, 1, 4, 10, 0, 0, 0, time.UTC); !e.CreatedAt.Equal(want) {
				t.Errorf("CreatedAt = %v, want %v", e.CreatedAt, want)
			}
		}, ""},
		{"CreatedAtSeconds", `{"target_file":"/x","operation":"append","created_at":1767520800.5}`, "", func(t *testing.T, e spool.Entry) {
			if want := time.Date(2026, 1, 4, 10, 0, 0, 5e8, time.UTC); !e.CreatedAt.Equal(want) {
				t.Errorf("CreatedAt = %v, want %v", e.CreatedAt, want)
			}
		}, ""},
		{"CreatedAtMissing", `{"target_file":"/x","operation":"create","intent":""}`, "", func(t *testing.T, e spool.Entry) {
			if !e.CreatedAt.Equal(mtime) {
				t.Errorf("CreatedAt = %v, want metadata.json's mtime %v", e.CreatedAt, mtime)
			}
		}, "no created_at"},
		{"CreatedAtGarbage", `{"target_file":"/x","operation":"create","created_at":"yesterday"}`, "", func(t *testing.T, e spool.Entry) {
			if !e.CreatedAt.Equal(mtime) {
				t.Errorf("CreatedAt = %v, want metadata.json's mtime %v", e.CreatedAt, mtime)
			}
		}, "not a time"},
		{"UnknownFieldsIgnored", `{"target_file":"/x","operation":"create","created_at":null,"client":"orion-cli 3"}`, "", nil, "no created_at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeEntry(t, t.TempDir(), "id1", tc.meta, "hello\n")
			if err := os.Chtimes(filepath.Join(dir, spool.MetadataFile), mtime, mtime); err != nil {
				t.Fatal(err)
			}
			if tc.state != "" {
				writeFile(t, filepath.Join(dir, spool.StateFile), tc.state)
			}
			e, p := spool.Parse(dir)
			if p != nil {
				t.Fatalf("Parse: %v", p)
			}
			if e.Dir != dir || e.ID != "id1" || e.ContentPath != filepath.Join(dir, spool.ContentFile) || e.ContentSize != 6 {
				t.Errorf("Dir %q ID %q ContentPath %q ContentSize %d", e.Dir, e.ID, e.ContentPath, e.ContentSize)
			}
			switch {
			case tc.warning == "" && len(e.Warnings) != 0:
				t.Errorf("Warnings = %q, want none", e.Warnings)
			case tc.warning != "" && (len(e.Warnings) != 1 || !strings.Contains(e.Warnings[0], tc.warning)):
				t.Errorf("Warnings = %q, want one mentioning %q", e.Warnings, tc.warning)
			}
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
}

func TestParseProblems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		make   func(t *testing.T) string
		reason string
	}{
		{"Missing", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, spool.ReasonNotADirectory},
		{"SymlinkedEntry", func(t *testing.T) string {
			real := writeEntry(t, t.TempDir(), "real", validMeta, "c")
			link := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, spool.ReasonNotADirectory},
		{"NullMetadata", func(t *testing.T) string { return writeEntry(t, t.TempDir(), "e", "null", "c") }, spool.ReasonBadMetadataJSON},
		{"EmptyMetadata", func(t *testing.T) string { return writeEntry(t, t.TempDir(), "e", " ", "c") }, spool.ReasonBadMetadataJSON},
		{"RelativeWorkspaceRoot", func(t *testing.T) string {
			return writeEntry(t, t.TempDir(), "e", `{"target_file":"a","workspace_root":"proj","operation":"create"}`, "c")
		}, spool.ReasonBadPath},
		{"NULInTarget", func(t *testing.T) string {
			return writeEntry(t, t.TempDir(), "e", `{"target_file":"/a\u0000b","operation":"create"}`, "c")
		}, spool.ReasonBadPath},
		{"OperationCase", func(t *testing.T) string {
			return writeEntry(t, t.TempDir(), "e", `{"target_file":"/a","operation":"Create"}`, "c")
		}, spool.ReasonUnknownOperation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := spool.Parse(tc.make(t))
			if p == nil || p.Reason != tc.reason {
				t.Fatalf("Parse problem = %v, want %s", p, tc.reason)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	t.Run("ReadsTheParsedSize", func(t *testing.T) {
		dir := writeEntry(t, t.TempDir(), "e", validMeta, "12345")
		e, p := spool.Parse(dir)
		if p != nil {
			t.Fatal(p)
		}
		f, err := os.OpenFile(e.ContentPath, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("678") // appended after Parse: not part of this import
		f.Close()
		r, err := e.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		if err != nil || string(b) != "12345" {
			t.Fatalf("read %q, %v; want the 5 bytes parsed", b, err)
		}
	})
	t.Run("ShrunkIsAnError", func(t *testing.T) {
		dir := writeEntry(t, t.TempDir(), "e", validMeta, "12345")
		e, p := spool.Parse(dir)
		if p != nil {
			t.Fatal(p)
		}
		if err := os.Truncate(e.ContentPath, 2); err != nil {
			t.Fatal(err)
		}
		r, err := e.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := io.ReadAll(r); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("reading a shrunk content.txt: %v, want io.ErrUnexpectedEOF", err)
		}
	})
}
