package passbook;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A stateful Kafka Streams application, word count, against passbook serve.
 *
 * <pre>
 *   WordCount create HOST:PORT             creates wc-input and wc-output (3 partitions each)
 *   WordCount produce HOST:PORT LINES RATE writes the fixed input to wc-input, RATE lines/s
 *   WordCount run HOST:PORT GUARANTEE DIR  runs the topology (until SIGTERM) with its state in DIR
 *   WordCount verify HOST:PORT LINES       reads wc-output read_committed and compares
 * </pre>
 *
 * The topology splits lines into words, re-keys them by word (a
 * repartition topic), counts them in a state store (its changelog topic)
 * and writes every new count to wc-output, the cache off so that each
 * input word yields exactly one output record. So under exactly-once,
 * the counts written for a word are 1, 2, …, n with none missing and
 * none twice, whatever crashed in between.
 *
 * verify prints "done" and exits 0 when that holds for every word,
 * "progress: …" and exits 3 while output is still missing, and
 * "WRONG: …" and exits 1 when a count is duplicated, skipped or too high.
 */
public final class WordCount {
    static final String INPUT = "wc-input", OUTPUT = "wc-output";
    static final int VOCABULARY = 50, WORDS_PER_LINE = 5;

    static String line(int i) {
        StringBuilder b = new StringBuilder();
        for (int j = 0; j < WORDS_PER_LINE; j++) {
            if (j > 0) b.append(' ');
            b.append("w").append((i * 7 + j * 13 + i / 3) % VOCABULARY);
        }
        return b.toString();
    }

    static Map<String, Long> expected(int lines) {
        Map<String, Long> want = new TreeMap<>();
        for (int i = 0; i < lines; i++) {
            for (String w : line(i).split(" ")) want.merge(w, 1L, Long::sum);
        }
        return want;
    }

    public static void main(String[] args) throws Exception {
        String addr = args[1];
        switch (args[0]) {
            case "create" -> create(addr);
            case "produce" -> produce(addr, Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            case "run" -> run(addr, args[2], args[3]);
            case "verify" -> System.exit(verify(addr, Integer.parseInt(args[2])));
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static void create(String addr) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, addr);
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(INPUT, 3, (short) 1), new NewTopic(OUTPUT, 3, (short) 1)))
                    .all().get(30, TimeUnit.SECONDS);
        }
        System.out.println("created " + INPUT + " and " + OUTPUT);
    }

    /**
     * Writes the input at rate lines a second with the idempotent
     * producer, which rides out the broker's restarts: a line written
     * twice would show as a count too high.
     */
    static void produce(String addr, int lines, int rate) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, addr);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            long start = System.nanoTime();
            for (int i = 0; i < lines; i++) {
                fs.add(producer.send(new ProducerRecord<>(INPUT, i % 3, null, line(i))));
                long due = start + TimeUnit.SECONDS.toNanos(i + 1) / rate;
                long wait = due - System.nanoTime();
                if (wait > 0) TimeUnit.NANOSECONDS.sleep(wait);
            }
            for (Future<RecordMetadata> f : fs) f.get(60, TimeUnit.SECONDS);
        }
        System.out.println("produced " + lines + " lines");
    }

    static void run(String addr, String guarantee, String stateDir) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "wordcount");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, addr);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // A static member: restarted after a kill, it takes its tasks back
        // at once instead of waiting out the dead member's session.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), "wordcount-1");
        StreamsBuilder b = new StreamsBuilder();
        b.stream(INPUT, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(v -> List.of(v.split(" ")))
                .groupBy((k, w) -> w, Grouped.with(Serdes.String(), Serdes.String()))
                .count()
                .toStream()
                .to(OUTPUT, Produced.with(Serdes.String(), Serdes.Long()));
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        // A broker that goes away mid-transaction costs the thread its
        // task; Streams replaces the thread and the task resumes from its
        // last committed transaction.
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("stream thread failed, replacing it: " + e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            closed.countDown();
        }));
        streams.start();
        System.out.println("running with " + guarantee);
        closed.await();
    }

    static int verify(String addr, int lines) {
        Map<String, Long> want = expected(lines);
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, addr);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
        Map<String, List<Long>> got = new HashMap<>();
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(OUTPUT)) tps.add(new TopicPartition(OUTPUT, pi.partition()));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (System.nanoTime() < deadline) {
                boolean atEnd = true;
                for (TopicPartition tp : tps) atEnd &= c.position(tp) >= end.get(tp);
                if (atEnd) break;
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) {
                    got.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
                }
            }
        }
        int complete = 0;
        for (Map.Entry<String, List<Long>> e : got.entrySet()) {
            List<Long> counts = e.getValue();
            Long w = want.get(e.getKey());
            for (int i = 0; i < counts.size(); i++) {
                if (w == null || counts.get(i) != i + 1) {
                    System.out.println("WRONG: " + e.getKey() + " counted " + counts.subList(Math.max(0, i - 2), Math.min(counts.size(), i + 3))
                            + " around update " + (i + 1) + (w == null ? " (not an input word)" : ", want 1 … " + w));
                    return 1;
                }
            }
            if (counts.size() == w) complete++;
        }
        if (complete == want.size()) {
            System.out.println("done: " + want.size() + " words counted exactly, " + lines * WORDS_PER_LINE + " updates");
            return 0;
        }
        long updates = got.values().stream().mapToLong(List::size).sum();
        System.out.println("progress: " + complete + " of " + want.size() + " words complete, " + updates + " of " + lines * WORDS_PER_LINE + " updates");
        return 3;
    }
}
