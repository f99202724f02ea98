// Command kfake runs franz-go's in-memory fake Kafka cluster on loopback, so
// that the e2e suite can run the two-tier Kafka deployment of
// deploy/collector (kafka-ingest.yaml, kafka-turn-state.yaml) with the real
// kafka exporter and receiver. It speaks the Kafka protocol, consumer groups
// included; it keeps everything in memory and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	port := flag.Int("port", 29092, "port of the single broker, on 127.0.0.1")
	partitions := flag.Int("partitions", 4, "partitions of each seeded topic (and of auto-created ones)")
	topics := flag.String("topics", "dsh-session-events", "comma-separated topics to create at start")
	dataDir := flag.String("data-dir", "", "keep the cluster's state (topics, records, groups, offsets) in this directory, reloaded at start: a broker restart keeps its data")
	deleteTopics := flag.String("delete-topics", "", "comma-separated topics to delete once started (with -data-dir: a restart that lost them)")
	latency := flag.Duration("latency", 0, "answer every request this much late, as a broker across a network does (each request waits on its own)")
	flag.Parse()

	opts := []kfake.Opt{
		kfake.Ports(*port),
		kfake.DefaultNumPartitions(*partitions),
		kfake.SeedTopics(int32(*partitions), strings.Split(*topics, ",")...),
		kfake.AllowAutoTopicCreation(),
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir), kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		log.Fatalf("kfake: %v", err)
	}
	if *deleteTopics != "" {
		if err := deleteAll(c, strings.Split(*deleteTopics, ",")); err != nil {
			log.Fatalf("kfake: delete topics: %v", err)
		}
	}
	if *latency > 0 {
		delay(c, *latency)
	}
	fmt.Printf("kfake: broker on %s, topics %s with %d partitions, latency %s\n", strings.Join(c.ListenAddrs(), ","), *topics, *partitions, *latency)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	c.Close()
}

// delay makes the cluster answer every request d late. The control
// function sleeps each request on its own (SleepControl lets the cluster
// handle the others meanwhile), then hands it to the cluster.
func delay(c *kfake.Cluster, d time.Duration) {
	var waiting sync.Map
	c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if _, again := waiting.Load(req); again {
			return nil, nil, false
		}
		waiting.Store(req, struct{}{})
		wake := time.Now().Add(d)
		c.SleepControl(func() { time.Sleep(time.Until(wake)) })
		waiting.Delete(req)
		return nil, nil, false
	})
}

// deleteAll deletes topics from the cluster, as an administrator would,
// through a client of its own.
func deleteAll(c *kfake.Cluster, topics []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 10000
	for _, t := range topics {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
		req.TopicNames = append(req.TopicNames, t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		if t.ErrorCode != 0 {
			return fmt.Errorf("%s: error code %d", name, t.ErrorCode)
		}
		fmt.Printf("kfake: deleted topic %s\n", name)
	}
	return nil
}
