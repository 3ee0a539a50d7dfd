"""confluent-kafka and kafka-python against passbook serve.

Usage: clients.py HOST:PORT

Prints "ok NAME" or "FAIL NAME: why" per check and, at the end,
"python: N passed, M failed". run.sh counts the lines.
"""

import sys
import time
import traceback

import confluent_kafka
import kafka
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    NewTopic,
    OffsetSpec,
)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic as KNewTopic

ADDR = sys.argv[1]
passed = failed = 0


def check(name):
    """Runs the decorated function as one check, now."""

    def run(fn):
        global passed, failed
        try:
            fn()
        except Exception as e:  # a failed check, whatever it raised
            failed += 1
            print(f"FAIL {name}: {e!r}")
            traceback.print_exc(limit=3, file=sys.stdout)
        else:
            passed += 1
            print(f"ok   {name}")
        sys.stdout.flush()
        return fn

    return run


def expect(cond, why):
    if not cond:
        raise AssertionError(why)


N = 500
admin = AdminClient({"bootstrap.servers": ADDR})


def ck_consume(topic, group, want, partitions=None):
    """Reads want records with a confluent-kafka group consumer, commits."""
    c = Consumer(
        {
            "bootstrap.servers": ADDR,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        c.subscribe([topic])
        got = []
        deadline = time.time() + 30
        while len(got) < want and time.time() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                raise RuntimeError(m.error())
            got.append(m)
        if got:
            c.commit(asynchronous=False)
        extra = c.poll(1.0) if want else None
        expect(extra is None, f"more than {want} records: {extra and extra.offset()}")
        return got
    finally:
        c.close()


print(f"confluent-kafka {confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]}), kafka-python {kafka.__version__}")


@check("confluent-kafka: AdminClient creates a topic of 3 partitions with configs")
def _():
    fs = admin.create_topics(
        [NewTopic("py-admin", num_partitions=3, replication_factor=1, config={"retention.ms": "3600000", "cleanup.policy": "delete"})]
    )
    for f in fs.values():
        f.result(timeout=15)
    md = admin.list_topics(timeout=10)
    expect("py-admin" in md.topics, "topic not in metadata")
    expect(len(md.topics["py-admin"].partitions) == 3, f"partitions: {len(md.topics['py-admin'].partitions)}")


@check("confluent-kafka: DescribeConfigs reports retention.ms as set")
def _():
    fs = admin.describe_configs([ConfigResource("topic", "py-admin")])
    for f in fs.values():
        cfg = f.result(timeout=15)
        expect(cfg["retention.ms"].value == "3600000", f"retention.ms = {cfg['retention.ms'].value}")


@check("confluent-kafka: describe_cluster names one broker and a cluster id")
def _():
    d = admin.describe_cluster().result(timeout=15)
    expect(len(d.nodes) == 1, f"nodes: {d.nodes}")
    expect(d.cluster_id, "no cluster id")


for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:

    @check(f"confluent-kafka: idempotent produce of {N} records with {codec}, read back once by a group")
    def _(codec=codec):
        topic = f"py-ck-{codec}"
        p = Producer({"bootstrap.servers": ADDR, "enable.idempotence": True, "compression.type": codec, "linger.ms": 5})
        errors = []
        for i in range(N):
            p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0, on_delivery=lambda err, msg: err and errors.append(err))
        left = p.flush(30)
        expect(left == 0 and not errors, f"{left} undelivered, errors {errors[:3]}")
        got = ck_consume(topic, f"g-{codec}", N)
        expect([m.offset() for m in got] == list(range(N)), "offsets not 0..N-1")
        expect([m.value() for m in got] == [f"v{i}".encode() for i in range(N)], "values differ")
        c = Consumer({"bootstrap.servers": ADDR, "group.id": f"g-{codec}"})
        try:
            committed = c.committed([TopicPartition(topic, 0)], timeout=10)
        finally:
            c.close()
        expect(committed[0].offset == N, f"committed {committed[0].offset}, want {N}")


@check("confluent-kafka: list_consumer_groups and list_consumer_group_offsets see the groups")
def _():
    groups = admin.list_consumer_groups().result(timeout=15)
    ids = {g.group_id for g in groups.valid}
    expect("g-zstd" in ids, f"groups: {sorted(ids)}")
    fs = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g-zstd")])
    for f in fs.values():
        tps = f.result(timeout=15).topic_partitions
        expect([(tp.topic, tp.partition, tp.offset) for tp in tps] == [("py-ck-zstd", 0, N)], f"offsets: {tps}")


@check("confluent-kafka: list_offsets latest and earliest")
def _():
    tp = TopicPartition("py-ck-none", 0)
    latest = admin.list_offsets({tp: OffsetSpec.latest()})[tp].result(timeout=15)
    earliest = admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(timeout=15)
    expect(latest.offset == N and earliest.offset == 0, f"latest {latest.offset}, earliest {earliest.offset}")


@check("confluent-kafka: incremental_alter_configs sets retention.ms; create_partitions grows a topic; delete_records moves its start")
def _():
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, NewPartitions

    r = ConfigResource("topic", "py-admin", incremental_configs=[ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([r]).values():
        f.result(timeout=15)
    for f in admin.describe_configs([ConfigResource("topic", "py-admin")]).values():
        v = f.result(timeout=15)["retention.ms"].value
        expect(v == "7200000", f"retention.ms = {v}")
    for f in admin.create_partitions([NewPartitions("py-admin", 5)]).values():
        f.result(timeout=15)
    md = admin.list_topics("py-admin", timeout=10)
    expect(len(md.topics["py-admin"].partitions) == 5, f"partitions: {len(md.topics['py-admin'].partitions)}")
    tp = TopicPartition("py-ck-gzip", 0, 100)
    for f in admin.delete_records([tp]).values():
        low = f.result(timeout=15).low_watermark
        expect(low == 100, f"low watermark {low}")
    earliest = admin.list_offsets({TopicPartition("py-ck-gzip", 0): OffsetSpec.earliest()})
    for f in earliest.values():
        expect(f.result(timeout=15).offset == 100, "earliest not 100")


@check("confluent-kafka: a transactional producer — read_committed sees the committed transaction, not the aborted one")
def _():
    p = Producer({"bootstrap.servers": ADDR, "transactional.id": "py-tx"})
    p.init_transactions(15)
    p.begin_transaction()
    for i in range(10):
        p.produce("py-txn", value=f"committed-{i}".encode(), partition=0)
    p.commit_transaction(15)
    p.begin_transaction()
    for i in range(5):
        p.produce("py-txn", value=f"aborted-{i}".encode(), partition=0)
    p.flush(15)
    p.abort_transaction(15)
    p.begin_transaction()
    p.produce("py-txn", value=b"last", partition=0)
    p.commit_transaction(15)
    for iso, want in (("read_committed", 11), ("read_uncommitted", 16)):
        c = Consumer({"bootstrap.servers": ADDR, "group.id": f"py-{iso}", "auto.offset.reset": "earliest", "isolation.level": iso, "enable.auto.commit": False})
        try:
            c.subscribe(["py-txn"])
            got, deadline = [], time.time() + 30
            while len(got) < want and time.time() < deadline:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    got.append(m.value().decode())
            extra = c.poll(1.0)
        finally:
            c.close()
        aborted = [v for v in got if v.startswith("aborted")]
        expect(len(got) == want and extra is None, f"{iso}: read {len(got)}, want {want}")
        expect(len(aborted) == (0 if iso == "read_committed" else 5), f"{iso}: {len(aborted)} aborted records")


@check("confluent-kafka: group.protocol=consumer (KIP-848) reads a topic once and commits")
def _():
    p = Producer({"bootstrap.servers": ADDR})
    for i in range(100):
        p.produce("py-848", value=f"v{i}".encode(), partition=0)
    expect(p.flush(30) == 0, "undelivered")
    c = Consumer({"bootstrap.servers": ADDR, "group.id": "py-848", "group.protocol": "consumer", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe(["py-848"])
        got, deadline = [], time.time() + 40
        while len(got) < 100 and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.offset())
        c.commit(asynchronous=False)
    finally:
        c.close()
    expect(got == list(range(100)), f"read {len(got)} records")
    fs = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("py-848")])
    for f in fs.values():
        tps = f.result(timeout=15).topic_partitions
        expect([(tp.partition, tp.offset) for tp in tps] == [(0, 100)], f"offsets: {tps}")


@check("kafka-python: KafkaAdminClient creates and lists topics")
def _():
    a = KafkaAdminClient(bootstrap_servers=ADDR)
    try:
        a.create_topics([KNewTopic("py-kp", num_partitions=2, replication_factor=1)])
        expect("py-kp" in a.list_topics(), "py-kp not listed")
    finally:
        a.close()


@check(f"kafka-python: idempotent gzip produce of {N} records to 2 partitions, offsets dense")
def _():
    p = KafkaProducer(bootstrap_servers=ADDR, acks="all", compression_type="gzip", enable_idempotence=True)
    try:
        futures = [p.send("py-kp", key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2) for i in range(N)]
        p.flush(30)
        offsets = {0: [], 1: []}
        for f in futures:
            md = f.get(timeout=30)
            offsets[md.partition].append(md.offset)
        expect(offsets[0] == list(range(N // 2)) and offsets[1] == list(range(N // 2)), "offsets not dense per partition")
    finally:
        p.close()


@check("kafka-python: a consumer group reads every record once and commits")
def _():
    c = KafkaConsumer(
        "py-kp",
        bootstrap_servers=ADDR,
        group_id="kp-group",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=5000,
    )
    try:
        seen = sorted((m.partition, m.offset) for m in c)
        expect(seen == sorted((p, o) for p in (0, 1) for o in range(N // 2)), f"read {len(seen)} records")
        c.commit()
    finally:
        c.close()
    a = KafkaAdminClient(bootstrap_servers=ADDR)
    try:
        offs = a.list_group_offsets("kp-group")["kp-group"]
        got = {tp.partition: om.offset for tp, om in offs.items()}
        expect(got == {0: N // 2, 1: N // 2}, f"committed {got}")
        desc = a.describe_groups(["kp-group"])
        expect("kp-group" in desc, f"describe: {desc}")
    finally:
        a.close()


@check("kafka-python: a restarted group member resumes after the commit")
def _():
    p = KafkaProducer(bootstrap_servers=ADDR, acks="all")
    p.send("py-kp", value=b"after", partition=0).get(timeout=30)
    p.close()
    c = KafkaConsumer("py-kp", bootstrap_servers=ADDR, group_id="kp-group", enable_auto_commit=False, consumer_timeout_ms=4000)
    try:
        got = [(m.partition, m.offset, m.value) for m in c]
    finally:
        c.close()
    expect(got == [(0, N // 2, b"after")], f"read {got}")


@check("kafka-python: create_partitions, delete_records and describe_configs take effect")
def _():
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import ConfigResource as KConfigResource, ConfigResourceType

    a = KafkaAdminClient(bootstrap_servers=ADDR)
    try:
        a.create_partitions({"py-kp": 3})
        parts = a.describe_topics(["py-kp"])[0]["partitions"]
        expect(len(parts) == 3, f"partitions: {len(parts)}")
        a.delete_records({KTopicPartition("py-kp", 1): 100})
        c = KafkaConsumer(bootstrap_servers=ADDR)
        try:
            low = c.beginning_offsets([KTopicPartition("py-kp", 1)])[KTopicPartition("py-kp", 1)]
        finally:
            c.close()
        expect(low == 100, f"beginning offset {low}")
        # Kafka-python shows only what differs from the defaults unless asked.
        modified = a.describe_configs([KConfigResource(ConfigResourceType.TOPIC, "py-kp")])["topic"]["py-kp"]
        expect(modified == {}, f"modified configs of a topic created without any: {modified}")
        every = a.describe_configs([KConfigResource(ConfigResourceType.TOPIC, "py-kp")], config_filter="all")["topic"]["py-kp"]
        expect("retention.ms" in every and "cleanup.policy" in every, f"describe_configs: {sorted(every)[:10]}")
    finally:
        a.close()


@check("confluent-kafka and kafka-python: delete_topics removes them")
def _():
    for f in admin.delete_topics(["py-admin"]).values():
        f.result(timeout=15)
    a = KafkaAdminClient(bootstrap_servers=ADDR)
    try:
        a.delete_topics(["py-kp"])
        deadline = time.time() + 10
        while time.time() < deadline:
            names = set(a.list_topics())
            if not names & {"py-admin", "py-kp"}:
                return
            time.sleep(0.2)
        raise AssertionError(f"still listed: {names & {'py-admin', 'py-kp'}}")
    finally:
        a.close()


print(f"python: {passed} passed, {failed} failed")
