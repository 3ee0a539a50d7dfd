package passbook

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// rebuildAction says what offsets.Repair's rebuild of the damaged store at
// path did (or, dry, would do), naming every consumer whose committed
// offset could not be kept: it starts where its reset policy says, as
// after a retention gap.
func rebuildAction(path string, s *offsets.Salvage) storage.RepairAction {
	var lost []string
	for _, k := range s.Bad {
		lost = append(lost, k.String()+" (fails its checksum)")
	}
	detail := fmt.Sprintf("a new offset store with the %s committed offsets that read back with a valid checksum; the damaged file moved to %s",
		thousands.Int(len(s.Entries)), filepath.Base(s.Aside))
	if len(lost) > 0 {
		detail += "; lost, starting where their reset policy says: " + strings.Join(lost, ", ")
	}
	if s.ReadErr != nil {
		detail += fmt.Sprintf("; SQLite could not read the whole table (%v), so %s of them were read from the file's pages directly (each the row committed last found there, with a valid checksum: check them with passbook offsets list)",
			s.ReadErr, thousands.Int(len(s.FromPages)))
		if len(s.FromPages) > 0 && len(s.FromPages) <= 20 {
			var names []string
			for _, k := range s.FromPages {
				names = append(names, k.String())
			}
			detail += ": " + strings.Join(names, ", ")
		}
		detail += "; rows on pages lost entirely cannot be named: a consumer with no committed offset on a topic it had read starts where its reset policy says"
	}
	var seqs []string
	for name, next := range s.Sequences {
		seqs = append(seqs, fmt.Sprintf("%s at %s", name, thousands.Int(next)))
	}
	slices.Sort(seqs)
	if len(seqs) > 0 {
		detail += "; sequences kept: " + strings.Join(seqs, ", ")
	}
	if s.SeqErr != nil {
		detail += fmt.Sprintf("; the sequences could not be read (%v): the Kafka producer id sequence starts again past the current time in microseconds, above any it can have handed out at less than one a microsecond", s.SeqErr)
	}
	return storage.RepairAction{What: "rebuild offset store", File: path, Detail: detail}
}
