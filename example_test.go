package passbook_test

import (
	"fmt"
	"log"
	"os"

	"github.com/passbook-log/passbook"
)

// Open a data directory, create a topic, append records and read them
// back by offset.
func Example() {
	dir, _ := os.MkdirTemp("", "passbook-example-*")
	defer os.RemoveAll(dir)

	db, err := passbook.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	orders, err := db.CreateTopic("orders", passbook.TopicConfig{})
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range []string{"espresso", "flat white", "cortado"} {
		pos, err := orders.Append(passbook.Record{Value: []byte(v)})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("appended %q at offset %d\n", v, pos.Offset)
	}
	for rec, err := range orders.Records(0, 1) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("offset %d: %s\n", rec.Offset, rec.Value)
	}
	// Output:
	// appended "espresso" at offset 0
	// appended "flat white" at offset 1
	// appended "cortado" at offset 2
	// offset 1: flat white
	// offset 2: cortado
}

// Keyed records go to the partition Kafka's default partitioner picks, so
// the same key lands in the same place through any Kafka client too.
func ExampleTopic_Append_keyed() {
	dir, _ := os.MkdirTemp("", "passbook-example-*")
	defer os.RemoveAll(dir)
	db, _ := passbook.Open(dir, nil)
	defer db.Close()
	users, _ := db.CreateTopic("users", passbook.TopicConfig{Partitions: 3})

	for _, k := range []string{"alice", "bob", "alice"} {
		pos, _ := users.Append(passbook.Record{Key: []byte(k), Value: []byte("login")})
		fmt.Printf("%s -> partition %d offset %d\n", k, pos.Partition, pos.Offset)
	}
	// Output:
	// alice -> partition 0 offset 0
	// bob -> partition 0 offset 1
	// alice -> partition 0 offset 2
}
