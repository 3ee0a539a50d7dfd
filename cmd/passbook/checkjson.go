package main

import (
	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
)

// The JSON of verify --json and repair --json: one object, snake_case
// keys (see each command's --help).

type problemJSON struct {
	Kind   string `json:"kind"`
	File   string `json:"file"`
	Pos    int64  `json:"pos"`  // -1: the whole file
	From   int64  `json:"from"` // offsets [from, to) affected; to -1: end unknown
	To     int64  `json:"to"`
	Detail string `json:"detail"`
	Text   string `json:"text"` // the line verify prints
}

type actionJSON struct {
	What   string `json:"what"`
	File   string `json:"file"`
	Detail string `json:"detail"`
	From   int64  `json:"from"` // offsets [from, to) taken out of the log
	To     int64  `json:"to"`
	Text   string `json:"text"`
}

type partitionJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Segments  int    `json:"segments"`
	Batches   int64  `json:"batches"`
	Records   int64  `json:"records"`
	Bytes     int64  `json:"bytes"`
	Start     int64  `json:"start"`
	Head      int64  `json:"head"`
	// Lost is the number of offsets repair took (or would take) out of
	// the log; only with repair.
	Lost int64 `json:"lost,omitempty"`
	// Fenced says why passbook serve cannot open the partition (and
	// answers KAFKA_STORAGE_ERROR for it); omitted when it can.
	Fenced string `json:"fenced,omitempty"`
}

type checkJSON struct {
	Dir        string          `json:"dir"`
	OK         bool            `json:"ok"`
	DryRun     bool            `json:"dry_run,omitempty"`
	Topics     int             `json:"topics"`
	Offsets    int             `json:"committed_offsets"`
	Partitions []partitionJSON `json:"partitions"`
	Problems   []problemJSON   `json:"problems"`
	Actions    []actionJSON    `json:"actions"`
	Notes      []string        `json:"notes"`
}

func problemsJSON(ps []storage.Problem) []problemJSON {
	out := make([]problemJSON, 0, len(ps))
	for _, p := range ps {
		out = append(out, problemJSON{string(p.Kind), p.File, p.Pos, p.From, p.To, p.Detail, p.String()})
	}
	return out
}

func actionsJSON(out []actionJSON, as []storage.RepairAction) []actionJSON {
	for _, a := range as {
		out = append(out, actionJSON{a.What, a.File, a.Detail, a.From, a.To, a.String()})
	}
	return out
}

// toCheckJSON is r as JSON; for a repair's report, the partitions'
// extents are after the repair and its actions are listed (a verify's
// report has none).
func toCheckJSON(r *passbook.CheckReport, dry bool) checkJSON {
	j := checkJSON{Dir: r.Dir, DryRun: dry, Topics: r.Topics, Offsets: r.Offsets,
		Partitions: []partitionJSON{}, Notes: append([]string{}, r.Notes...)}
	for _, p := range r.Partitions {
		rep := p.Report
		if p.Repair != nil && p.Repair.After != nil {
			rep = p.Repair.After
		}
		pj := partitionJSON{Topic: p.Topic, Partition: p.Partition, Segments: rep.Segments, Batches: rep.Batches,
			Records: rep.Records, Bytes: rep.Bytes, Start: rep.Start, Head: rep.Head, Fenced: rep.Fenced}
		if p.Repair != nil {
			pj.Lost = p.Repair.Lost
			j.Actions = actionsJSON(j.Actions, p.Repair.Actions)
		}
		j.Partitions = append(j.Partitions, pj)
		j.Notes = append(j.Notes, p.Report.Notes...)
	}
	j.Actions = actionsJSON(j.Actions, r.Actions)
	if j.Actions == nil {
		j.Actions = []actionJSON{}
	}
	ps := r.AllProblems()
	j.Problems = problemsJSON(ps)
	j.OK = len(ps) == 0
	return j
}
