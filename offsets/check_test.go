package offsets_test

import (
	"os"
	"slices"
	"testing"

	"github.com/passbook-log/passbook/offsets"
)

// TestVerify_Findings: Verify says what is wrong with each committed
// offset by kind, and Repair fixes exactly the rows it can (a checksum
// failure deleted, an offset past the head set to it); a second Verify
// then finds only the notes.
func TestVerify_Findings(t *testing.T) {
	path := tempPath(t)
	s := open(t, path, nil)
	keys := map[string]offsets.Key{
		"ok":        {Consumer: "c", Topic: "t", Partition: 0},
		"pastHead":  {Consumer: "c", Topic: "t", Partition: 1},
		"damaged":   {Consumer: "d", Topic: "t", Partition: 0},
		"noTopic":   {Consumer: "c", Topic: "gone", Partition: 0},
		"noPartion": {Consumer: "c", Topic: "t", Partition: 7},
	}
	for _, k := range keys {
		if err := s.Commit(ctx, k, 5); err != nil {
			t.Fatal(err)
		}
	}
	// A flipped offset: the row no longer holds its checksum.
	if _, err := s.DB().Exec(`UPDATE passbook_offsets SET next_offset = 6 WHERE consumer = 'd'`); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	heads := map[string][]int64{"t": {5, 3}}
	type found struct {
		kind offsets.FindingKind
		key  offsets.Key
	}
	kinds := func(r *offsets.CheckReport) []found {
		var out []found
		for _, f := range r.Findings {
			out = append(out, found{f.Kind, f.Key})
		}
		return out
	}
	r := offsets.Verify(path, &offsets.CheckOptions{Heads: heads})
	want := []found{
		{offsets.FindingNoTopic, keys["noTopic"]},
		{offsets.FindingChecksum, keys["damaged"]},
		{offsets.FindingPastHead, keys["pastHead"]},
		{offsets.FindingNoPartition, keys["noPartion"]},
	}
	if got := kinds(r); !slices.Equal(got, want) || r.Entries != 5 {
		t.Fatalf("Verify found %v in %d entries, want %v in 5", got, r.Entries, want)
	}
	if f := r.Findings[2]; f.Offset != 5 || f.Head != 3 || !f.Kind.Problem() || f.Kind.Damaged() {
		t.Fatalf("past-head finding %+v", f)
	}

	dry := offsets.Repair(path, &offsets.CheckOptions{Heads: heads, DryRun: true})
	if len(dry.Fixed) != 2 || len(dry.Errors) != 0 {
		t.Fatalf("dry Repair fixed %v, errors %v; want 2 fixes", dry.Fixed, dry.Errors)
	}
	if got := kinds(offsets.Verify(path, &offsets.CheckOptions{Heads: heads})); !slices.Equal(got, want) {
		t.Fatalf("after a dry run Verify found %v, want %v", got, want)
	}

	rep := offsets.Repair(path, &offsets.CheckOptions{Heads: heads})
	if len(rep.Errors) != 0 || len(rep.Fixed) != 2 || rep.Fixed[0].Kind != offsets.FindingChecksum || rep.Fixed[1].Kind != offsets.FindingPastHead {
		t.Fatalf("Repair fixed %v, errors %v; want the checksum failure deleted, then the past-head set", rep.Fixed, rep.Errors)
	}
	after := offsets.Verify(path, &offsets.CheckOptions{Heads: heads})
	for _, f := range after.Findings {
		if f.Kind.Problem() {
			t.Errorf("after Repair: %v", f)
		}
	}
	if after.Entries != 4 {
		t.Errorf("after Repair %d entries, want 4 (the damaged one deleted)", after.Entries)
	}
	s = open(t, path, nil)
	if got, err := s.Committed(ctx, keys["pastHead"]); err != nil || got != 3 {
		t.Errorf("past-head entry after Repair: %d, %v; want offset 3", got, err)
	}
}

// TestVerify_NotADatabase: a file that is not a database is a finding
// about the file, which Repair rebuilds (the damaged file moved aside).
func TestVerify_NotADatabase(t *testing.T) {
	path := tempPath(t)
	if err := os.WriteFile(path, []byte("not a database, not at all, not one page of it"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := offsets.Verify(path, nil)
	if len(r.Findings) != 1 || !r.Findings[0].Kind.Damaged() {
		t.Fatalf("Verify found %v, want one finding about the file", r.Findings)
	}
	if n, known := offsets.BoundTopics(nil, path); known {
		t.Errorf("BoundTopics of a non-database: %d, known", n)
	}
	rep := offsets.Repair(path, &offsets.CheckOptions{TopicIDs: map[string]offsets.TopicID{"t": offsets.NewTopicID()}})
	if rep.Rebuilt == nil || len(rep.Errors) != 0 {
		t.Fatalf("Repair: rebuilt %v, errors %v", rep.Rebuilt, rep.Errors)
	}
	if _, err := os.Stat(rep.Rebuilt.Aside); err != nil {
		t.Errorf("damaged file not moved aside: %v", err)
	}
	if n, known := offsets.BoundTopics(nil, path); !known || n != 1 {
		t.Errorf("BoundTopics of the rebuilt store: %d, %v; want 1 topic", n, known)
	}
}
