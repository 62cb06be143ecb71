// Kafka's own Java client (the protocol's reference implementation) against one cluster: an
// admin round trip, an idempotent producer at acks=all, a consumer group that commits, a second
// member that resumes from the commit, and the topic deleted. Run by
// tests/contract/test_contract_java_client.py in the JVM's source-file mode (no build step),
// on the class path of a Kafka release `make setup` resolved. Each step prints one JSON line;
// a failure prints {"error": ...} and exits 1.
//
// Usage: java -cp '<lib>/*' JavaClientRoundTrip.java BOOTSTRAP TOPIC GROUP RECORDS

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
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
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaClientRoundTrip {
    static final int PARTITIONS = 2;
    static final Duration DEADLINE = Duration.ofSeconds(60);

    static void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    public static void main(String[] args) {
        try {
            run(args[0], args[1], args[2], Integer.parseInt(args[3]));
        } catch (Throwable e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            emit("{\"error\": \"" + (cause.getClass().getName() + ": " + cause.getMessage())
                    .replace("\\", "\\\\").replace("\"", "'") + "\"}");
            System.exit(1);
        }
    }

    static void run(String bootstrap, String topic, String group, int records) throws Exception {
        Properties common = new Properties();
        common.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
            TopicDescription described = waitForTopic(admin, topic);
            emit("{\"step\": \"create\", \"partitions\": " + described.partitions().size()
                    + ", \"listed\": " + admin.listTopics().names().get().contains(topic) + "}");

            produce(bootstrap, topic, records);

            int consumed = consume(bootstrap, topic, group, records);
            Map<TopicPartition, OffsetAndMetadata> committed =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            long sum = committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
            ConsumerGroupDescription description =
                    admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
            emit("{\"step\": \"consume\", \"records\": " + consumed + ", \"committed\": " + sum
                    + ", \"group_state\": \"" + description.state() + "\"}");

            int again = resume(bootstrap, topic, group);
            emit("{\"step\": \"resume\", \"records\": " + again + "}");

            admin.deleteTopics(List.of(topic)).all().get();
            boolean gone = false;
            for (int i = 0; i < 100 && !gone; i++) {
                gone = !admin.listTopics().names().get().contains(topic);
                if (!gone) Thread.sleep(100);
            }
            emit("{\"step\": \"delete\", \"gone\": " + gone + "}");
        }
    }

    static TopicDescription waitForTopic(Admin admin, String topic) throws Exception {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (true) {
            try {
                return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            } catch (Exception e) {
                if (System.nanoTime() > deadline) throw e;
                Thread.sleep(100);
            }
        }
    }

    static void produce(String bootstrap, String topic, int records) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < records; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i % PARTITIONS, "k-" + i,
                        "v-" + i)));
            }
            producer.flush();
        }
        long[] next = new long[PARTITIONS];
        boolean dense = true;
        for (Future<RecordMetadata> f : sent) {
            RecordMetadata m = f.get();
            dense &= m.offset() == next[m.partition()]++;
        }
        emit("{\"step\": \"produce\", \"acked\": " + sent.size() + ", \"dense_offsets\": "
                + dense + "}");
    }

    static Properties consumerProps(String bootstrap, String group) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return c;
    }

    /** Reads every record once, in order per partition, then commits synchronously. */
    static int consume(String bootstrap, String topic, String group, int records) {
        Map<Integer, Integer> nextIndex = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) nextIndex.put(p, p);
        int count = 0;
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        try (KafkaConsumer<String, String> consumer =
                     new KafkaConsumer<>(consumerProps(bootstrap, group))) {
            consumer.subscribe(List.of(topic));
            while (count < records && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    int want = nextIndex.get(r.partition());
                    if (!r.value().equals("v-" + want) || !r.key().equals("k-" + want)) {
                        throw new IllegalStateException("partition " + r.partition() + " offset "
                                + r.offset() + ": got " + r.value() + ", expected v-" + want);
                    }
                    nextIndex.put(r.partition(), want + PARTITIONS);
                    count++;
                }
            }
            consumer.commitSync();
        }
        return count;
    }

    /** A new member of the group starts from the committed offsets: nothing is left to read. */
    static int resume(String bootstrap, String topic, String group) {
        int count = 0;
        try (KafkaConsumer<String, String> consumer =
                     new KafkaConsumer<>(consumerProps(bootstrap, group))) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            // Until the member holds its assignment and has looked at every partition's end.
            while (System.nanoTime() < deadline) {
                count += consumer.poll(Duration.ofMillis(200)).count();
                Set<TopicPartition> assigned = consumer.assignment();
                if (assigned.size() == PARTITIONS) {
                    Map<TopicPartition, Long> ends = consumer.endOffsets(assigned);
                    boolean atEnd = true;
                    for (TopicPartition tp : assigned) {
                        atEnd &= consumer.position(tp) == ends.get(tp);
                    }
                    if (atEnd) break;
                }
            }
        }
        return count;
    }
}
