package passbook;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java Kafka client against passbook serve.
 *
 * <pre>
 *   ClientsCheck HOST:PORT                          the plain checks
 *   ClientsCheck HOST:PORT secure CA.pem USER PASS  TLS + SCRAM-SHA-256 + ACLs
 * </pre>
 *
 * Prints "ok NAME" or "FAIL NAME: why" per check, then "java: N passed, M failed".
 */
public final class ClientsCheck {
    static final int N = 500;
    static int passed, failed;
    static Properties base = new Properties();

    interface Check {
        void run() throws Exception;
    }

    static void check(String name, Check c) {
        try {
            c.run();
            passed++;
            System.out.println("ok   " + name);
        } catch (Throwable e) {
            failed++;
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            System.out.println("FAIL " + name + ": " + cause);
        }
        System.out.flush();
    }

    static void expect(boolean cond, String why) {
        if (!cond) throw new AssertionError(why);
    }

    static Properties props(Object... kv) {
        Properties p = new Properties();
        p.putAll(base);
        for (int i = 0; i < kv.length; i += 2) p.put(kv[i], kv[i + 1]);
        return p;
    }

    static KafkaProducer<String, String> producer(Object... kv) {
        Properties p = props(kv);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String group, Object... kv) {
        Properties p = props(kv);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    /** Produces n records "v0" … to partition 0 of topic and returns their offsets. */
    static List<Long> produce(KafkaProducer<String, String> p, String topic, int n) throws Exception {
        List<Future<RecordMetadata>> fs = new ArrayList<>();
        for (int i = 0; i < n; i++) fs.add(p.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)));
        List<Long> offsets = new ArrayList<>();
        for (Future<RecordMetadata> f : fs) offsets.add(f.get(30, TimeUnit.SECONDS).offset());
        return offsets;
    }

    /**
     * Reads want records of topic in group, in order, then commits them.
     * With want 0 it polls for three seconds and returns what came.
     */
    static List<ConsumerRecord<String, String>> consume(String group, String topic, int want, Object... kv) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(group, kv)) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(want == 0 ? 3 : 40);
            while ((want == 0 || got.size() < want) && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(250))) got.add(r);
            }
            c.commitSync();
        }
        return got;
    }

    static void expectDense(List<ConsumerRecord<String, String>> got, int n) {
        expect(got.size() == n, "read " + got.size() + " records, want " + n);
        for (int i = 0; i < n; i++) {
            ConsumerRecord<String, String> r = got.get(i);
            expect(r.offset() == i && r.value().equals("v" + i), "record " + i + ": offset " + r.offset() + " value " + r.value());
        }
    }

    /**
     * Two members of group (with the consumer settings kv) wait until they
     * share topic's three partitions, then read the 300 records produced
     * after that, 100 a partition, each once, and commit; the group then
     * reads nothing again.
     */
    static void twoMembersSplit(String group, String topic, Object... kv) throws Exception {
        Map<Integer, Integer> perPartition = new HashMap<>();
        try (KafkaConsumer<String, String> a = consumer(group, kv); KafkaConsumer<String, String> b = consumer(group, kv)) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            // Both members poll until the group has settled with a share
            // for each, before anything is produced.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while ((a.assignment().isEmpty() || b.assignment().isEmpty()
                    || a.assignment().size() + b.assignment().size() != 3) && System.nanoTime() < deadline) {
                a.poll(Duration.ofMillis(100));
                b.poll(Duration.ofMillis(100));
            }
            expect(!a.assignment().isEmpty() && !b.assignment().isEmpty() && a.assignment().size() + b.assignment().size() == 3,
                    "assignments " + a.assignment() + " / " + b.assignment());
            try (KafkaProducer<String, String> p = producer()) {
                List<Future<RecordMetadata>> fs = new ArrayList<>();
                for (int i = 0; i < 300; i++) fs.add(p.send(new ProducerRecord<>(topic, i % 3, null, "v" + i)));
                for (Future<RecordMetadata> f : fs) f.get(30, TimeUnit.SECONDS);
            }
            int total = 0;
            while (total < 300 && System.nanoTime() < deadline) {
                for (KafkaConsumer<String, String> c : List.of(a, b)) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                        perPartition.merge(r.partition(), 1, Integer::sum);
                        total++;
                    }
                }
            }
            a.commitSync();
            b.commitSync();
            expect(total == 300, "read " + total + " of 300: " + perPartition);
        }
        expect(perPartition.equals(Map.of(0, 100, 1, 100, 2, 100)), "per partition " + perPartition);
        expect(consume(group, topic, 0, kv).isEmpty(), "the group read records again after committing them");
    }

    public static void main(String[] args) throws Exception {
        String addr = args[0];
        base.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, addr);
        if (args.length > 1 && args[1].equals("secure")) {
            secure(args[2], args[3], args[4]);
        } else {
            plain();
        }
        System.out.println("java: " + passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }

    static void plain() throws Exception {
        System.out.println("kafka-clients " + org.apache.kafka.common.utils.internals.AppInfoParser.getVersion());
        try (Admin admin = Admin.create(props())) {
            check("AdminClient creates a topic of 3 partitions with configs; describeTopics sees them and a topic id", () -> {
                admin.createTopics(List.of(new NewTopic("java-admin", 3, (short) 1)
                        .configs(Map.of("retention.ms", "3600000", "cleanup.policy", "delete")))).all().get(15, TimeUnit.SECONDS);
                TopicDescription d = admin.describeTopics(List.of("java-admin")).allTopicNames().get().get("java-admin");
                expect(d.partitions().size() == 3, "partitions: " + d.partitions().size());
                expect(d.topicId() != null && !d.topicId().equals(Uuid.ZERO_UUID), "topic id: " + d.topicId());
            });
            check("describeConfigs reports retention.ms as set", () -> {
                ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, "java-admin");
                Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
                expect("3600000".equals(c.get("retention.ms").value()), "retention.ms = " + c.get("retention.ms").value());
            });
            check("describeCluster names one broker, the controller and a cluster id", () -> {
                DescribeClusterResult d = admin.describeCluster();
                expect(d.nodes().get().size() == 1, "nodes: " + d.nodes().get());
                expect(d.clusterId().get() != null, "no cluster id");
                expect(d.controller().get() != null, "no controller");
            });

            for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) {
                String topic = "java-" + codec;
                check("idempotent produce of " + N + " records with " + codec + ", read back once by a classic group, committed", () -> {
                    try (KafkaProducer<String, String> p = producer(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                            ProducerConfig.LINGER_MS_CONFIG, "5")) {
                        List<Long> offsets = produce(p, topic, N);
                        for (int i = 0; i < N; i++) expect(offsets.get(i) == i, "offset " + i + " = " + offsets.get(i));
                    }
                    expectDense(consume("g-" + codec, topic, N), N);
                    Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets("g-" + codec)
                            .partitionsToOffsetAndMetadata().get();
                    OffsetAndMetadata om = committed.get(new TopicPartition(topic, 0));
                    expect(om != null && om.offset() == N, "committed " + committed);
                });
            }

            check("listOffsets earliest and latest", () -> {
                TopicPartition tp = new TopicPartition("java-none", 0);
                ListOffsetsResult latest = admin.listOffsets(Map.of(tp, OffsetSpec.latest()));
                ListOffsetsResult earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest()));
                expect(latest.partitionResult(tp).get().offset() == N, "latest " + latest.partitionResult(tp).get().offset());
                expect(earliest.partitionResult(tp).get().offset() == 0, "earliest " + earliest.partitionResult(tp).get().offset());
            });

            check("listConsumerGroups lists the groups", () -> {
                Set<String> ids = new java.util.HashSet<>();
                admin.listConsumerGroups().all().get().forEach(g -> ids.add(g.groupId()));
                expect(ids.containsAll(List.of("g-none", "g-zstd")), "groups: " + ids);
            });

            check("two classic members of one group split 3 partitions; the group resumes after its commit",
                    () -> twoMembersSplit("g-split", "java-admin"));

            check("incrementalAlterConfigs sets retention.ms live; describeConfigs shows it set dynamically", () -> {
                ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, "java-admin");
                admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                        new AlterConfigOp(new ConfigEntry("max.message.bytes", "2000000"), AlterConfigOp.OpType.SET)))).all().get(15, TimeUnit.SECONDS);
                Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
                expect("7200000".equals(c.get("retention.ms").value()), "retention.ms = " + c.get("retention.ms").value());
                expect(c.get("retention.ms").source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, "source " + c.get("retention.ms").source());
                expect("2000000".equals(c.get("max.message.bytes").value()), "max.message.bytes = " + c.get("max.message.bytes").value());
            });
            check("incrementalAlterConfigs with an invalid value is refused and changes nothing", () -> {
                ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, "java-admin");
                try {
                    admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                            new AlterConfigOp(new ConfigEntry("cleanup.policy", "sometimes"), AlterConfigOp.OpType.SET)))).all().get(15, TimeUnit.SECONDS);
                    throw new AssertionError("accepted cleanup.policy=sometimes");
                } catch (ExecutionException e) {
                    expect(e.getCause() instanceof org.apache.kafka.common.errors.InvalidConfigurationException
                            || e.getCause() instanceof org.apache.kafka.common.errors.InvalidRequestException, "got " + e.getCause());
                }
                Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
                expect("7200000".equals(c.get("retention.ms").value()), "retention.ms = " + c.get("retention.ms").value());
            });
            check("createPartitions grows java-admin to 5; the new partitions take records", () -> {
                admin.createPartitions(Map.of("java-admin", NewPartitions.increaseTo(5))).all().get(15, TimeUnit.SECONDS);
                TopicDescription d = admin.describeTopics(List.of("java-admin")).allTopicNames().get().get("java-admin");
                expect(d.partitions().size() == 5, "partitions: " + d.partitions().size());
                try (KafkaProducer<String, String> p = producer()) {
                    RecordMetadata m = p.send(new ProducerRecord<>("java-admin", 4, "k", "v")).get(30, TimeUnit.SECONDS);
                    expect(m.partition() == 4 && m.offset() == 0, "partition " + m.partition() + " offset " + m.offset());
                }
            });
            check("deleteRecords moves the log start; listOffsets earliest follows; a consumer from the start begins there", () -> {
                TopicPartition tp = new TopicPartition("java-gzip", 0);
                long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(200))).lowWatermarks().get(tp).get(15, TimeUnit.SECONDS).lowWatermark();
                expect(low == 200, "low watermark " + low);
                long earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get().offset();
                expect(earliest == 200, "earliest " + earliest);
                List<ConsumerRecord<String, String>> got = consume("g-after-trim", "java-gzip", N - 200);
                expect(got.size() == N - 200 && got.get(0).offset() == 200, "read " + got.size() + " from " + (got.isEmpty() ? -1 : got.get(0).offset()));
            });
            check("a transactional producer: a committed transaction is read by read_committed, an aborted one only by read_uncommitted", () -> {
                admin.createTopics(List.of(new NewTopic("java-txn", 1, (short) 1))).all().get(15, TimeUnit.SECONDS);
                try (KafkaProducer<String, String> p = producer(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "java-tx")) {
                    p.initTransactions();
                    p.beginTransaction();
                    for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>("java-txn", 0, null, "committed-" + i));
                    p.commitTransaction();
                    p.beginTransaction();
                    for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>("java-txn", 0, null, "aborted-" + i));
                    p.flush();
                    p.abortTransaction();
                    p.beginTransaction();
                    p.send(new ProducerRecord<>("java-txn", 0, null, "last"));
                    p.commitTransaction();
                }
                List<String> committed = new ArrayList<>(), everything = new ArrayList<>();
                for (ConsumerRecord<String, String> r : consume("g-rc", "java-txn", 11, ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")) committed.add(r.value());
                for (ConsumerRecord<String, String> r : consume("g-ru", "java-txn", 16, ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted")) everything.add(r.value());
                expect(committed.size() == 11 && committed.get(10).equals("last") && committed.stream().noneMatch(v -> v.startsWith("aborted")), "read_committed: " + committed);
                expect(everything.size() == 16 && everything.stream().filter(v -> v.startsWith("aborted")).count() == 5, "read_uncommitted: " + everything);
                ListOffsetsResult rc = admin.listOffsets(Map.of(new TopicPartition("java-txn", 0), OffsetSpec.latest()),
                        new ListOffsetsOptions(org.apache.kafka.common.IsolationLevel.READ_COMMITTED));
                // 16 records and 3 markers: the last stable offset is the end.
                expect(rc.partitionResult(new TopicPartition("java-txn", 0)).get().offset() == 19, "LSO " + rc.partitionResult(new TopicPartition("java-txn", 0)).get().offset());
            });
            check("a second producer with the same transactional.id fences the first (ProducerFencedException)", () -> {
                try (KafkaProducer<String, String> a = producer(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "java-fence");
                     KafkaProducer<String, String> b = producer(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "java-fence")) {
                    a.initTransactions();
                    a.beginTransaction();
                    a.send(new ProducerRecord<>("java-txn", 0, null, "zombie")).get(30, TimeUnit.SECONDS);
                    b.initTransactions();
                    try {
                        a.commitTransaction();
                        throw new AssertionError("the fenced producer committed");
                    } catch (org.apache.kafka.common.errors.ProducerFencedException | org.apache.kafka.common.errors.InvalidProducerEpochException e) {
                        // as Kafka
                    }
                }
            });
            check("group.protocol=consumer (KIP-848): two members split 3 partitions, read every record once, commit", () -> {
                admin.createTopics(List.of(new NewTopic("java-848", 3, (short) 1))).all().get(15, TimeUnit.SECONDS);
                twoMembersSplit("g-848", "java-848", ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets("g-848").partitionsToOffsetAndMetadata().get();
                for (int i = 0; i < 3; i++) {
                    OffsetAndMetadata om = committed.get(new TopicPartition("java-848", i));
                    expect(om != null && om.offset() == 100, "committed " + committed);
                }
            });

            check("deleteTopics removes the topics", () -> {
                admin.deleteTopics(List.of("java-admin", "java-none")).all().get(15, TimeUnit.SECONDS);
                Set<String> names = admin.listTopics().names().get();
                expect(!names.contains("java-admin") && !names.contains("java-none"), "still listed: " + names);
            });
        }
    }

    static void secure(String caFile, String user, String password) throws Exception {
        base.put("security.protocol", "SASL_SSL");
        base.put("ssl.truststore.type", "PEM");
        base.put("ssl.truststore.location", caFile);
        base.put("sasl.mechanism", "SCRAM-SHA-256");
        base.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + user + "\" password=\"" + password + "\";");
        check("TLS + SCRAM-SHA-256: " + user + " produces to and reads back the topic its ACLs allow", () -> {
            try (KafkaProducer<String, String> p = producer()) {
                List<Long> offsets = produce(p, "secure", 10);
                expect(offsets.get(9) - offsets.get(0) == 9, "offsets " + offsets);
            }
            List<ConsumerRecord<String, String>> got = consume("secure-readers", "secure", 10);
            expect(got.size() >= 10, "read " + got.size());
        });
        check("TLS + SCRAM-SHA-256: producing to a topic without an ACL is TopicAuthorizationException", () -> {
            try (KafkaProducer<String, String> p = producer(ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000")) {
                p.send(new ProducerRecord<>("forbidden", "x")).get(15, TimeUnit.SECONDS);
                throw new AssertionError("the produce was accepted");
            } catch (ExecutionException e) {
                expect(e.getCause() instanceof TopicAuthorizationException, "got " + e.getCause());
            }
        });
        check("TLS + SCRAM-SHA-256 with a wrong password fails authentication", () -> {
            Properties p = props("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                    + user + "\" password=\"wrong\";", AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000",
                    AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
            try (Admin a = Admin.create(p)) {
                a.describeCluster().nodes().get(15, TimeUnit.SECONDS);
                throw new AssertionError("describeCluster succeeded");
            } catch (ExecutionException e) {
                expect(e.getCause() instanceof org.apache.kafka.common.errors.SaslAuthenticationException, "got " + e.getCause());
            }
        });
    }
}
