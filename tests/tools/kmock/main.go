// SPDX-License-Identifier: Apache-2.0
//
// kmock: sarama's MockBroker (Debian golang-github-shopify-sarama-dev 1.22.1) as a v0 Kafka
// broker for recordings and tests, on 127.0.0.1. It has no ApiVersions handler and answers
// v0 bodies: clients must not ask (kcat -X api.version.request=false -X
// broker.version.fallback=0.8.2; kafka-python api_version=(0,8,2)). Topic "t" has one
// partition holding "hello-kafka"; producing to topic "bad" fails with MESSAGE_TOO_LARGE (10).
//
// Build (GOPATH mode, the Debian library, no network):
//
//	cd tests/tools/kmock && GO111MODULE=off GOPATH=/usr/share/gocode go build -o /tmp/kmock .
//
// Run: /tmp/kmock -port 19092 -ready-file FILE [-advertise 127.0.0.1:19093] (until SIGTERM).
// On SIGTERM it writes to stderr one line per kind of request it answered, as
// tests/tools/kafka_broker.py does: "counted API TOPIC CODE N" (TOPIC the first topic, "-" for
// none; CODE the first non-zero error code of the answer).
package main

import (
	"flag"
	"fmt"
	"io/ioutil"
	"os"
	"os/signal"
	"reflect"
	"sort"
	"syscall"

	"github.com/Shopify/sarama"
)

type reporter struct{}

func (reporter) Error(args ...interface{}) { fmt.Fprintln(os.Stderr, args...) }
func (reporter) Errorf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}
func (reporter) Fatal(args ...interface{}) { fmt.Fprintln(os.Stderr, args...); os.Exit(1) }
func (reporter) Fatalf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	port := flag.Int("port", 19092, "port on 127.0.0.1")
	ready := flag.String("ready-file", "", "written once listening")
	advertise := flag.String("advertise", "", "host:port in metadata (a recording proxy's), default its own")
	flag.Parse()
	t := reporter{}
	addr := fmt.Sprintf("127.0.0.1:%d", *port)
	b := sarama.NewMockBrokerAddr(t, 1, addr)
	if *advertise == "" {
		*advertise = addr
	}
	b.SetHandlerByMap(map[string]sarama.MockResponse{
		"MetadataRequest": sarama.NewMockMetadataResponse(t).
			SetBroker(*advertise, 1).SetLeader("t", 0, 1).SetLeader("bad", 0, 1),
		"ProduceRequest": sarama.NewMockProduceResponse(t).
			SetError("bad", 0, sarama.ErrMessageSizeTooLarge),
		"OffsetRequest": sarama.NewMockOffsetResponse(t).
			SetOffset("t", 0, sarama.OffsetOldest, 0).
			SetOffset("t", 0, sarama.OffsetNewest, 1),
		"FetchRequest": sarama.NewMockFetchResponse(t, 1).
			SetMessage("t", 0, 0, sarama.StringEncoder("hello-kafka")).
			SetHighWaterMark("t", 0, 1),
	})
	if *ready != "" {
		ioutil.WriteFile(*ready, []byte(addr+"\n"), 0644)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	history := b.History()
	b.Close()
	report(history)
}

// Kafka's names of the API keys the handlers above answer.
var apiNames = map[string]string{"ProduceRequest": "Produce", "MetadataRequest": "Metadata",
	"OffsetRequest": "ListOffsets", "FetchRequest": "Fetch"}

func report(history []sarama.RequestResponse) {
	counts := map[string]int{}
	for _, rr := range history {
		name := reflect.TypeOf(rr.Request).Elem().Name()
		if api, ok := apiNames[name]; ok {
			name = api
		}
		topic, code := "-", sarama.ErrNoError
		switch res := rr.Response.(type) {
		case *sarama.ProduceResponse:
			for t, parts := range res.Blocks {
				topic = t
				for _, blk := range parts {
					if code == sarama.ErrNoError {
						code = blk.Err
					}
				}
			}
		case *sarama.MetadataResponse:
			if req, ok := rr.Request.(*sarama.MetadataRequest); ok && len(req.Topics) > 0 {
				topic = req.Topics[0]
			}
			for _, t := range res.Topics {
				if code == sarama.ErrNoError {
					code = t.Err
				}
			}
		}
		counts[fmt.Sprintf("%s %s %d", name, topic, int16(code))]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(os.Stderr, "counted %s %d\n", k, counts[k])
	}
}
