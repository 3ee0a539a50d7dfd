package kafka

// What newer ListOffsets versions add, for a server without tiered
// storage, done before and after the handler (02_list_offsets.go) as the
// topic IDs are (topicids.go):
//
//   - v8 (KIP-405): timestamp −4, the local log start offset: with every
//     segment local, the log start offset, as −2 asks.
//   - v9 (KIP-1005): −5, the last offset in remote storage, and v11
//     (KIP-1023): −6, the earliest offset not yet uploaded there: with no
//     remote storage, offset −1 with timestamp −1 and leader epoch −1,
//     as Kafka answers for a topic without remote storage.
//   - v10 (KIP-1075): timeout_ms bounds a remote lookup, and there is
//     none.
//
// Below the version that brings it, such a timestamp is left to the
// handler, which refuses it (INVALID_REQUEST).

import "github.com/twmb/franz-go/pkg/kmsg"

const (
	earliestLocalTimestamp         = -4
	latestTieredTimestamp          = -5
	earliestPendingUploadTimestamp = -6
)

// listOffsetsIn rewrites the timestamps of a ListOffsets request that
// this server answers the same as an older one, and records which
// partitions are answered "none" afterwards.
func listOffsetsIn(req *kmsg.ListOffsetsRequest, rw *idRewrite) {
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			p := &req.Topics[i].Partitions[j]
			switch {
			case p.Timestamp == earliestLocalTimestamp && req.Version >= 8:
				p.Timestamp = earliestTimestamp
			case p.Timestamp == latestTieredTimestamp && req.Version >= 9,
				p.Timestamp == earliestPendingUploadTimestamp && req.Version >= 11:
				p.Timestamp = latestTimestamp // any offset the handler can answer; replaced after
				rw.none = append(rw.none, [2]int{i, j})
			}
		}
	}
}

// listOffsetsOut answers "none" for the partitions listOffsetsIn marked.
func listOffsetsOut(resp *kmsg.ListOffsetsResponse, rw *idRewrite) {
	for _, at := range rw.none {
		if at[0] >= len(resp.Topics) || at[1] >= len(resp.Topics[at[0]].Partitions) {
			continue
		}
		if p := &resp.Topics[at[0]].Partitions[at[1]]; p.ErrorCode == 0 {
			p.Offset, p.Timestamp, p.LeaderEpoch = -1, -1, -1
		}
	}
}
