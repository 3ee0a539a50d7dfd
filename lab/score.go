package lab

import (
	"fmt"

	"github.com/passbook-log/passbook/internal/thousands"
)

// Verdicts on a prediction. There is no "close enough": the lab's four
// answers are exact, and being one off is the very mistake P1 and P4 test.
const (
	SpotOn       = "spot on"
	OffByOne     = "off by one"
	TooLow       = "too low"
	TooHigh      = "too high"
	NoPrediction = "no prediction"
)

// Verdict is the judgement of one prediction: a word and, for a known
// mistake, what the prediction confused.
type Verdict struct {
	Word string
	Note string // empty when there is nothing more to say
}

func (v Verdict) String() string {
	if v.Note == "" {
		return v.Word
	}
	return v.Word + ": " + v.Note
}

// Actuals are the figures the four predictions are judged against: P1 the
// last offset, P2 duplicates after the crash, P3 records missed, P4
// records replayed.
func (r *Result) Actuals() [4]int64 {
	return [4]int64{r.LastOffset, int64(r.Duplicated), int64(r.Missed), int64(r.BReplayed)}
}

func score(r *Result) {
	for i := range r.Verdicts {
		v := Judge(i+1, r.Predictions[i], r)
		r.Verdicts[i], r.VerdictNotes[i] = v.Word, v.Note
	}
}

// Judge judges prediction p (1 to 4) against the run r: spot on when it
// equals the actual figure; off by one, with the mistake named, when it is
// the answer of a known off-by-one; else too low or too high, with a note
// when it is another commit order's answer.
func Judge(p int, predicted *int64, r *Result) Verdict {
	if predicted == nil {
		return Verdict{Word: NoPrediction}
	}
	actual := r.Actuals()[p-1]
	got := *predicted
	if got == actual {
		return Verdict{Word: SpotOn}
	}
	crash := thousands.Int(r.CrashedAt)
	before, tx := r.Commit == CommitBefore, r.Commit == CommitTx
	after := !before && !tx
	note := ""
	switch p {
	case 1: // the last offset: N − 1
		switch got {
		case actual + 1:
			return Verdict{OffByOne, "that is the count; the last offset is count − 1"}
		case actual - 1:
			return Verdict{OffByOne, "offsets start at 0, so the last is count − 1, not count − 2"}
		}
	case 2: // duplicates: 1 committing after, 0 before or in one transaction
		switch {
		case after && got == actual+1:
			why := "that is a consumer that commits the offset it processed instead of the next one to read (processed + 1)"
			if r.CrashedAt > 0 {
				why += ": it would redo offset " + thousands.Int(r.CrashedAt-1) + " too"
			}
			return Verdict{OffByOne, why}
		case after && got == 0:
			note = "that is commit-before's answer; committing after the work, the crash fell before the commit, so the restart redid offset " + crash
		case before && got == 1:
			note = "that is commit-after's answer; committing before the work, the bookmark had already moved past offset " + crash + ", so nothing ran twice"
		case tx && got == 1:
			note = "that is commit-after's answer; in one transaction the work of offset " + crash + " was rolled back with its offset, so the restart ran it again but only that run's work counts"
		}
	case 3: // missed: 0 committing after or in one transaction, 1 before
		switch {
		case after && got == 1:
			note = "that is commit-before's answer; committing after the work, the bookmark never moved past a record before it was processed, so nothing was missed"
		case before && got == 0:
			note = "that is commit-after's answer; committing before the work, the bookmark had moved past offset " + crash + " before it was processed, and the restart believed it"
		case tx && got == 1:
			note = "that is commit-before's answer; in one transaction the bookmark cannot move past a record without its work, so nothing was skipped"
		}
	case 4: // replayed: N
		switch got {
		case actual - 1:
			return Verdict{OffByOne, fmt.Sprintf("that is the last offset; offsets 0 to %s are %s records (count = last offset + 1)",
				thousands.Int(actual-1), thousands.Int(actual))}
		case actual + 1:
			return Verdict{OffByOne, "B reads each record once on its own bookmark; the record that ran twice ran on A's"}
		}
	}
	if got < actual {
		return Verdict{TooLow, note}
	}
	return Verdict{TooHigh, note}
}
