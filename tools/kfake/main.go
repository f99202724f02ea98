// Command kfake runs franz-go's in-memory fake Kafka cluster on loopback, so
// that the e2e suite can run the two-tier Kafka deployment of
// deploy/collector (kafka-ingest.yaml, kafka-turn-state.yaml) with the real
// kafka exporter and receiver. It speaks the Kafka protocol, consumer groups
// included; it keeps everything in memory and stops on SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 29092, "port of the single broker, on 127.0.0.1")
	partitions := flag.Int("partitions", 4, "partitions of each seeded topic (and of auto-created ones)")
	topics := flag.String("topics", "dsh-session-events", "comma-separated topics to create at start")
	flag.Parse()

	c, err := kfake.NewCluster(
		kfake.Ports(*port),
		kfake.DefaultNumPartitions(*partitions),
		kfake.SeedTopics(int32(*partitions), strings.Split(*topics, ",")...),
		kfake.AllowAutoTopicCreation(),
	)
	if err != nil {
		log.Fatalf("kfake: %v", err)
	}
	fmt.Printf("kfake: broker on %s, topics %s with %d partitions\n", strings.Join(c.ListenAddrs(), ","), *topics, *partitions)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	c.Close()
}
