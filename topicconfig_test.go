package passbook_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
)

func TestDB_AlterTopicConfig_LiveAndDurable(t *testing.T) {
	dir := t.TempDir()
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := db.CreateTopic("t", passbook.TopicConfig{SegmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if _, err := tp.Append(passbook.Record{Value: make([]byte, 100)}); err != nil {
			t.Fatal(err)
		}
	}
	l, _ := tp.Partition(0)
	ctx := context.Background()
	_, err = db.AlterTopicConfig(ctx, "t", false, func(c *passbook.TopicConfig) error {
		c.RetentionBytes, c.TimestampType = 1, passbook.LogAppendTime
		c.Other = map[string]string{"min.insync.replicas": "2"}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.Retain(); err != nil || n == 0 || l.SegmentCount() != 1 {
		t.Fatalf("retention with the new retention bytes: %d deleted, %d left, %v", n, l.SegmentCount(), err)
	}
	for _, bad := range []func(*passbook.TopicConfig) error{
		func(c *passbook.TopicConfig) error { c.Partitions = 3; return nil },
		func(c *passbook.TopicConfig) error { c.MinCleanableDirtyRatio = 2; return nil },
		func(c *passbook.TopicConfig) error { c.RetentionBytes = 5; return errors.New("refused by alter") },
	} {
		if _, err := db.AlterTopicConfig(ctx, "t", false, bad); err == nil {
			t.Fatal("a bad change accepted")
		}
	}
	if _, err := db.AlterTopicConfig(ctx, "t", true, func(c *passbook.TopicConfig) error { c.RetentionBytes = 7; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetDefaultTopicConfig(ctx, false, func(c *passbook.TopicConfig) error { c.RetentionAge = time.Hour; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tp, err = db.Topic("t")
	if err != nil {
		t.Fatal(err)
	}
	if c := tp.Config(); c.RetentionBytes != 1 || c.TimestampType != passbook.LogAppendTime || c.Other["min.insync.replicas"] != "2" {
		t.Fatalf("after reopen: %+v (refused and validate-only changes must change nothing)", c)
	}
	if d := db.DefaultTopicConfig(); d.RetentionAge != time.Hour {
		t.Fatalf("topic defaults after reopen: %+v", d)
	}
	nt, err := db.CreateTopic("new", passbook.TopicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if nt.Config().RetentionAge != time.Hour {
		t.Fatalf("a new topic's retention %v, want the default set", nt.Config().RetentionAge)
	}
	if _, err := db.AlterTopicConfig(ctx, "nosuch", false, func(*passbook.TopicConfig) error { return nil }); !errors.Is(err, passbook.ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
}
