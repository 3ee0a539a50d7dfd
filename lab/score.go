package lab

// Verdicts on a prediction.
const (
	SpotOn       = "spot on"
	CloseEnough  = "close enough"
	TooLow       = "too low"
	TooHigh      = "too high"
	NoPrediction = "no prediction"
)

// Actuals are the figures the four predictions are judged against: P1 the
// last offset, P2 duplicates after the crash, P3 records missed, P4
// records replayed.
func (r *Result) Actuals() [4]int64 {
	return [4]int64{r.LastOffset, int64(r.Duplicated), int64(r.Missed), int64(r.BReplayed)}
}

func score(r *Result) {
	for i, actual := range r.Actuals() {
		r.Verdicts[i] = Judge(r.Predictions[i], actual)
	}
}

// Judge compares a prediction with the actual figure: spot on when equal,
// close enough when the actual is within 0.6–1.7 times the prediction,
// else the prediction was too low or too high.
func Judge(predicted *int64, actual int64) string {
	switch {
	case predicted == nil:
		return NoPrediction
	case *predicted == actual:
		return SpotOn
	case *predicted > 0 && float64(actual) >= 0.6*float64(*predicted) && float64(actual) <= 1.7*float64(*predicted):
		return CloseEnough
	case *predicted < actual:
		return TooLow
	}
	return TooHigh
}
